package cloud_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

var (
	october1  = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	october30 = time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
)

func costPath(sub string) string {
	return "/subscriptions/" + sub + "/providers/Microsoft.CostManagement/query"
}

// costWorld has 30 days × 70 pairs = 2,100 rows in October for the first
// subscription (three pages of 1,000), and costs around it that a query
// of October on that subscription must leave out.
func costWorld() *world.World {
	w := baseWorld()
	addCosts(w, subID(0), october1.AddDate(0, 0, -3), 3, 5)
	addCosts(w, subID(0), october1, 30, 70)
	addCosts(w, subID(0), october30.AddDate(0, 0, 1), 2, 5)
	addCosts(w, subID(1), october1, 30, 4)
	return w
}

func collectCosts(c *cloud.Clients, sub string, from, to time.Time) ([]cloud.CostRow, error) {
	var rows []cloud.CostRow
	err := c.DailyCosts(context.Background(), sub, cloud.ActualCost, from, to, func(r cloud.CostRow) error {
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// checkCosts compares the rows with the world's costs of the subscription
// in the range, field by field.
func checkCosts(t *testing.T, w *world.World, sub string, from, to time.Time, rows []cloud.CostRow) {
	t.Helper()
	type key struct{ date, service, rg string }
	want := map[key]world.Cost{}
	for _, c := range w.Costs {
		if c.SubscriptionID == sub && c.Date >= from.Format(time.DateOnly) && c.Date <= to.Format(time.DateOnly) {
			want[key{c.Date, c.Service, c.ResourceGroup}] = c
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if r.Date.Location() != time.UTC || r.Date.Hour() != 0 || r.Date.Minute() != 0 {
			t.Fatalf("row date %v is not midnight UTC", r.Date)
		}
		k := key{r.Date.Format(time.DateOnly), r.Service, r.ResourceGroup}
		c, ok := want[k]
		if !ok {
			t.Fatalf("row %+v is not a cost of the world, or came twice", r)
		}
		delete(want, k)
		if r.Cost != c.Cost || r.Currency != c.Currency {
			t.Fatalf("row %+v, want cost %v %s", r, c.Cost, c.Currency)
		}
	}
}

func TestDailyCostsPagesFieldByField(t *testing.T) {
	w := costWorld()
	s, c := startSim(t, w)
	rows, err := collectCosts(c, subID(0), october1, october30)
	if err != nil {
		t.Fatal(err)
	}
	checkCosts(t, w, subID(0), october1, october30, rows)
	if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 3 {
		t.Fatalf("%d requests for 2,100 rows, want 3 pages", hits)
	}
	// A date in another location means that calendar day.
	tokyo := time.FixedZone("JST", 9*3600)
	rows, err = collectCosts(c, subID(1), time.Date(2026, 10, 2, 0, 0, 0, 0, tokyo), time.Date(2026, 10, 2, 0, 0, 0, 0, tokyo))
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 10, 2, 0, 0, 0, 0, time.UTC)
	checkCosts(t, w, subID(1), day, day, rows)
}

func TestDailyCostsReadsColumnsByName(t *testing.T) {
	for _, order := range [][]string{
		{"UsageDate", "Currency", "PreTaxCost", "ResourceGroupName", "ServiceName"},
		{"ResourceGroupName", "PreTaxCost", "ServiceName", "UsageDate", "Currency"},
	} {
		w := costWorld()
		_, c := startSim(t, w, arm.WithCostColumnOrder(order...))
		rows, err := collectCosts(c, subID(0), october1, october30)
		if err != nil {
			t.Fatalf("columns %v: %v", order, err)
		}
		checkCosts(t, w, subID(0), october1, october30, rows)
	}
}

func TestDailyCostsNoContent(t *testing.T) {
	s, c := startSim(t, costWorld())
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rows, err := collectCosts(c, subID(0), from, from.AddDate(0, 1, 0))
	if err != nil || len(rows) != 0 {
		t.Fatalf("%d rows, %v; want none", len(rows), err)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 1 {
		t.Fatalf("%d requests, want 1", hits)
	}
}

func TestDailyCostsLongRangeQueriedAYearAtATime(t *testing.T) {
	w := costWorld()
	s, c := startSim(t, w)
	// The API refuses periods over a year: this range takes two queries,
	// the first empty (204), the second three pages.
	from := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	rows, err := collectCosts(c, subID(0), from, october30)
	if err != nil {
		t.Fatal(err)
	}
	checkCosts(t, w, subID(0), from, october30, rows)
	if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 4 {
		t.Fatalf("%d requests, want 1 empty window and 3 pages", hits)
	}
	if _, err := collectCosts(c, subID(0), october30, october1); err == nil {
		t.Fatal("a range that ends before it starts was queried")
	}
}

func TestDailyCostsHonoursRetryAfter(t *testing.T) {
	w := costWorld()
	s, c := startSim(t, w)
	s.Faults.Set(cloudsim.ARM, costPath(subID(0)), cloudsim.Fault{Status: 429, RetryAfter: time.Second, Times: 1})
	start := time.Now()
	rows, err := collectCosts(c, subID(0), october1, october30)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("retried after %v, before the Retry-After of 1s", elapsed)
	}
	checkCosts(t, w, subID(0), october1, october30, rows)
	if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 4 {
		t.Fatalf("%d requests, want the throttled one and 3 pages", hits)
	}
}

func TestDailyCostsRetriesServerErrorBurst(t *testing.T) {
	w := costWorld()
	s, c := startSim(t, w)
	// Rules apply in the order set: two 503s, then a 500, then service.
	s.Faults.Set(cloudsim.ARM, "/subscriptions/"+subID(0), cloudsim.Fault{Status: 503, Times: 2})
	s.Faults.Set(cloudsim.ARM, costPath(subID(0)), cloudsim.Fault{Status: 500, Times: 1})
	rows, err := collectCosts(c, subID(0), october1, october30)
	if err != nil {
		t.Fatal(err)
	}
	checkCosts(t, w, subID(0), october1, october30, rows)
	if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 6 {
		t.Fatalf("%d requests, want 3 failed and 3 pages", hits)
	}
}

func TestDailyCostsThrottledAfterRetries(t *testing.T) {
	s, c := startSim(t, costWorld())
	path := costPath(subID(0))

	s.Faults.Set(cloudsim.ARM, path, cloudsim.Fault{Status: 429})
	_, err := collectCosts(c, subID(0), october1, october30)
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrThrottled) || !errors.As(err, &e) || e.StatusCode != 429 || e.Code != "SimulatedFault" {
		t.Fatalf("err %v, want ErrThrottled", err)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, path); hits != 1+testRetry.MaxRetries {
		t.Fatalf("%d requests, want 1 and %d retries", hits, testRetry.MaxRetries)
	}

	// A pause longer than MaxDelay is not waited for: the caller learns
	// how long the service asked for instead.
	s.Faults.Set(cloudsim.ARM, path, cloudsim.Fault{Status: 429, RetryAfter: time.Minute})
	start := time.Now()
	_, err = collectCosts(c, subID(0), october1, october30)
	if !errors.Is(err, cloud.ErrThrottled) || !errors.As(err, &e) || e.RetryAfter != time.Minute {
		t.Fatalf("err %v, want ErrThrottled with RetryAfter 1m", err)
	}
	if time.Since(start) > testRetry.MaxDelay {
		t.Fatal("waited for a Retry-After beyond MaxDelay")
	}
}

func TestDailyCostsTruncatedPageEnds(t *testing.T) {
	s, c := startSim(t, costWorld())
	s.Faults.Set(cloudsim.ARM, costPath(subID(0)), cloudsim.Fault{TruncatePages: true})
	rows, err := collectCosts(c, subID(0), october1, october30)
	if err != nil || len(rows) != arm.DefaultCostPageSize {
		t.Fatalf("%d rows, %v; want the first page alone", len(rows), err)
	}
}

func TestDailyCostsErrors(t *testing.T) {
	s, c := startSim(t, costWorld())
	s.Faults.Set(cloudsim.ARM, costPath(subID(0)), cloudsim.Fault{ExpireTokens: true})
	_, err := collectCosts(c, subID(0), october1, october30)
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrUnauthorized) || !errors.As(err, &e) || e.StatusCode != 401 || e.Code != "ExpiredAuthenticationToken" {
		t.Fatalf("err %v, want ErrUnauthorized (ExpiredAuthenticationToken)", err)
	}
	s.Faults.Clear()

	_, err = collectCosts(c, "99999999-0000-4000-8000-000000000000", october1, october30)
	if !errors.Is(err, cloud.ErrNotFound) || !errors.As(err, &e) || e.Code != "SubscriptionNotFound" {
		t.Fatalf("err %v, want ErrNotFound (SubscriptionNotFound)", err)
	}

	// The caller's own error stops the stream and comes back as is.
	stop := errors.New("stop")
	n := 0
	err = c.DailyCosts(context.Background(), subID(0), cloud.ActualCost, october1, october30, func(cloud.CostRow) error {
		n++
		if n == 1500 {
			return stop
		}
		return nil
	})
	if err != stop || n != 1500 {
		t.Fatalf("err %v after %d rows, want the callback's error after 1500", err, n)
	}
}

// TestDailyCostsByType: the same days summed as billed and amortised: a
// purchase that costs its price as billed and nothing amortised, covered
// usage that costs nothing as billed and its share amortised.
func TestDailyCostsByType(t *testing.T) {
	w := baseWorld()
	price, share := 0.0, 2.5
	w.Costs = append(w.Costs,
		world.Cost{SubscriptionID: subID(0), Date: "2026-10-01", Service: "Virtual Machines", Cost: 75, AmortizedCost: &price, Currency: "EUR"},
		world.Cost{SubscriptionID: subID(0), Date: "2026-10-01", Service: "Virtual Machines", ResourceGroup: "rg-0", Cost: 0, AmortizedCost: &share, Currency: "EUR"},
		world.Cost{SubscriptionID: subID(0), Date: "2026-10-01", Service: "Storage", ResourceGroup: "rg-0", Cost: 4, Currency: "EUR"})
	_, c := startSim(t, w)
	sum := func(typ cloud.CostType) map[string]float64 {
		out := map[string]float64{}
		err := c.DailyCosts(context.Background(), subID(0), typ, october1, october1, func(r cloud.CostRow) error {
			out[r.Service] += r.Cost
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := sum(cloud.ActualCost); got["Virtual Machines"] != 75 || got["Storage"] != 4 {
		t.Errorf("actual %v", got)
	}
	if got := sum(cloud.AmortizedCost); got["Virtual Machines"] != 2.5 || got["Storage"] != 4 {
		t.Errorf("amortised %v", got)
	}
}
