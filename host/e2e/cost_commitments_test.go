package e2e

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestCostCommitments: the demo world's reservations and savings plans,
// synced at start-up with their purchases and the provider's
// recommendations, read back through the host: the last 30 days'
// reservation utilisation by hours, by normalised size and by cost and
// the unused money, and the savings plans' committed, used and unused
// money, per commitment and day and in total, to the cent of the sums the
// test makes from the world; the savings plan expiring in 12 days, the
// reservation in 20 and the one in 75 with their alert thresholds; the
// three recommendations. A user of another tenant sees none of it and is
// refused Contoso Retail's.
func TestCostCommitments(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostCommitments(t, dialect) })
	}
}

// demoReservationDay is what the test expects of one reservation day.
type demoReservationDay struct {
	reserved, used, ratio float64
	cost, unused          ledger.Amount
}

// demoReservationDays prices the demo world's reservation days from
// through to as the provider's figures say they cost: each purchase's
// cents spread over the days of its term so that they add up to it, and
// the unused hours' share of a day's cost rounded to the cent.
func demoReservationDays(t *testing.T, w *world.World, from, to ledger.Day) map[string]map[ledger.Day]demoReservationDay {
	t.Helper()
	purchases := map[string]world.ReservationPurchase{}
	for _, p := range w.ReservationPurchases {
		purchases[p.ReservationID] = p
	}
	out := map[string]map[ledger.Day]demoReservationDay{}
	for _, r := range w.Reservations {
		d, err := ledger.ParseDay(r.Date)
		if err != nil {
			t.Fatal(err)
		}
		if d < from || d > to {
			continue
		}
		p, ok := purchases[r.ReservationID]
		if !ok {
			t.Fatalf("the demo's reservation %s has no purchase", r.ReservationID)
		}
		bought, _ := ledger.ParseDay(p.PurchaseDate)
		ends, _ := ledger.ParseDay(p.ExpiryDate())
		cents, days, i := int64(math.Round(p.Amount*100)), int64(ends-bought), int64(d-bought)
		cost := ledger.Amount(cents*(i+1)/days - cents*i/days)
		if out[r.ReservationID] == nil {
			out[r.ReservationID] = map[ledger.Day]demoReservationDay{}
		}
		out[r.ReservationID][d] = demoReservationDay{reserved: r.ReservedHours, used: r.UsedHours, ratio: p.InstanceFlexibilityRatio,
			cost: cost, unused: ledger.Amount(math.Round(float64(cost) * (r.ReservedHours - r.UsedHours) / r.ReservedHours))}
	}
	return out
}

// demoSavingsPlanDay is what the test expects of one savings plan day.
type demoSavingsPlanDay struct {
	committed, used, unused ledger.Amount
}

// demoSavingsPlanDays prices the demo world's savings plan days from
// through to: each day commits the hourly commitment times 24 in cents,
// uses that times the day's mean utilisation rounded to the cent, and
// leaves the rest unused.
func demoSavingsPlanDays(t *testing.T, w *world.World, from, to ledger.Day) map[string]map[ledger.Day]demoSavingsPlanDay {
	t.Helper()
	out := map[string]map[ledger.Day]demoSavingsPlanDay{}
	for _, p := range w.SavingsPlans {
		committed := ledger.Amount(math.Round(p.HourlyCommitment * 2400))
		for _, u := range p.Utilization {
			d, err := ledger.ParseDay(u.Date)
			if err != nil {
				t.Fatal(err)
			}
			if d < from || d > to {
				continue
			}
			used := ledger.Amount(math.Round(float64(committed) * u.AvgUtilization / 100))
			if out[p.SavingsPlanID] == nil {
				out[p.SavingsPlanID] = map[ledger.Day]demoSavingsPlanDay{}
			}
			out[p.SavingsPlanID][d] = demoSavingsPlanDay{committed: committed, used: used, unused: committed - used}
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.011 }

func testCostCommitments(t *testing.T, dialect string) {
	ctx := context.Background()
	h, admin, idOf := startDemoCosts(t, dialect)
	contoso := idOf["Contoso Retail"]

	now := time.Now().UTC()
	w := world.Demo(stack.DemoSeed, now)
	today := ledger.DayOf(now)
	want := demoReservationDays(t, w, today-29, today)
	if len(want) != 5 {
		t.Fatalf("the demo world has %d reservations, want 5", len(want))
	}
	wantPlans := demoSavingsPlanDays(t, w, today-29, today)
	if len(wantPlans) != 2 || len(w.SavingsPlans) != 2 {
		t.Fatalf("the demo world has %d savings plans with days, want 2", len(wantPlans))
	}

	users := map[string]string{}
	for _, tn := range w.Tenants {
		if tn.Name != "Contoso Retail" && users["other"] != "" {
			continue
		}
		u := tenancy.User{DirectoryTenantID: tn.DirectoryTenantID, Subject: "oid-commitments-" + tn.Name, Email: "commitments@" + strings.ReplaceAll(strings.ToLower(tn.Name), " ", "-") + ".example",
			Name: tn.Name + " user", Groups: tn.AccessGroups}
		if err := tenancy.New(h.db()).UpsertUser(ctx, &u); err != nil {
			t.Fatal(err)
		}
		key := "other"
		if tn.Name == "Contoso Retail" {
			key = "contoso"
		}
		users[key] = h.tokenFor(u)
	}

	// Utilisation per reservation and day, and in total.
	var rsv struct {
		Available bool `json:"available"`
		Summary   struct {
			Reservations                 int     `json:"reservations"`
			ReservedHours                float64 `json:"reserved_hours"`
			UsedHours                    float64 `json:"used_hours"`
			UtilizationPercent           float64 `json:"utilization_percent"`
			NormalizedReservedHours      float64 `json:"normalized_reserved_hours"`
			NormalizedUsedHours          float64 `json:"normalized_used_hours"`
			NormalizedUtilizationPercent float64 `json:"normalized_utilization_percent"`
			Costs                        []struct {
				Currency               string        `json:"currency"`
				Cost                   ledger.Amount `json:"cost"`
				UnusedCost             ledger.Amount `json:"unused_cost"`
				CostUtilizationPercent float64       `json:"cost_utilization_percent"`
			} `json:"costs"`
		} `json:"summary"`
		Items []struct {
			ReservationID   string         `json:"reservation_id"`
			Period          string         `json:"period"`
			NormalizedRatio float64        `json:"normalized_size_ratio"`
			Currency        *string        `json:"currency"`
			Cost            *ledger.Amount `json:"cost"`
			UnusedCost      *ledger.Amount `json:"unused_cost"`
		} `json:"items"`
		SavingsPlans struct {
			Summary struct {
				SavingsPlans int `json:"savings_plans"`
				Costs        []struct {
					Currency               string        `json:"currency"`
					Committed              ledger.Amount `json:"committed"`
					Used                   ledger.Amount `json:"used"`
					UnusedCost             ledger.Amount `json:"unused_cost"`
					CostUtilizationPercent float64       `json:"cost_utilization_percent"`
				} `json:"costs"`
			} `json:"summary"`
			Items []struct {
				SavingsPlanID          string        `json:"savings_plan_id"`
				Period                 string        `json:"period"`
				Currency               string        `json:"currency"`
				Committed              ledger.Amount `json:"committed"`
				Used                   ledger.Amount `json:"used"`
				UnusedCost             ledger.Amount `json:"unused_cost"`
				CostUtilizationPercent float64       `json:"cost_utilization_percent"`
			} `json:"items"`
		} `json:"savings_plans"`
	}
	h.get("/api/v1/costs/reservations?grain=daily&tenant_id="+contoso, users["contoso"]).json(t, &rsv)
	var reserved, used, nReserved, nUsed float64
	var cost, unused ledger.Amount
	for _, days := range want {
		for _, d := range days {
			reserved, used, nReserved, nUsed = reserved+d.reserved, used+d.used, nReserved+d.reserved*d.ratio, nUsed+d.used*d.ratio
			cost, unused = cost+d.cost, unused+d.unused
		}
	}
	s := rsv.Summary
	if !rsv.Available || s.Reservations != 5 || !near(s.ReservedHours, reserved) || !near(s.UsedHours, used) || !near(s.UtilizationPercent, 100*used/reserved) ||
		!near(s.NormalizedReservedHours, nReserved) || !near(s.NormalizedUsedHours, nUsed) || !near(s.NormalizedUtilizationPercent, 100*nUsed/nReserved) {
		t.Errorf("summary %+v; want hours %.2f of %.2f, normalised %.2f of %.2f", s, used, reserved, nUsed, nReserved)
	}
	if len(s.Costs) != 1 || s.Costs[0].Currency != "USD" || s.Costs[0].Cost != cost || s.Costs[0].UnusedCost != unused ||
		!near(s.Costs[0].CostUtilizationPercent, 100*float64(cost-unused)/float64(cost)) {
		t.Errorf("costs %+v; want %s USD of which %s unused", s.Costs, cost, unused)
	}
	if len(rsv.Items) != 150 {
		t.Fatalf("%d daily items, want 30 days of 5 reservations", len(rsv.Items))
	}
	for _, it := range rsv.Items {
		d, _ := ledger.ParseDay(it.Period)
		wd, ok := want[it.ReservationID][d]
		if !ok || it.Currency == nil || *it.Currency != "USD" || *it.Cost != wd.cost || *it.UnusedCost != wd.unused || it.NormalizedRatio != wd.ratio {
			t.Errorf("item %+v, want %+v", it, wd)
		}
	}

	// The savings plans' money per plan and day, and in total.
	var committed, planUsed, planUnused ledger.Amount
	for _, days := range wantPlans {
		for _, d := range days {
			committed, planUsed, planUnused = committed+d.committed, planUsed+d.used, planUnused+d.unused
		}
	}
	sp := rsv.SavingsPlans
	if sp.Summary.SavingsPlans != 2 || len(sp.Summary.Costs) != 1 || sp.Summary.Costs[0].Currency != "USD" || sp.Summary.Costs[0].Committed != committed ||
		sp.Summary.Costs[0].Used != planUsed || sp.Summary.Costs[0].UnusedCost != planUnused || committed != 30*(6000+4200) ||
		!near(sp.Summary.Costs[0].CostUtilizationPercent, 100*float64(planUsed)/float64(committed)) {
		t.Errorf("savings plans %+v; want %s USD committed, %s used, %s unused", sp.Summary, committed, planUsed, planUnused)
	}
	if len(sp.Items) != 60 {
		t.Fatalf("%d daily savings plan items, want 30 days of 2 plans", len(sp.Items))
	}
	for _, it := range sp.Items {
		d, _ := ledger.ParseDay(it.Period)
		wd, ok := wantPlans[it.SavingsPlanID][d]
		if !ok || it.Currency != "USD" || it.Committed != wd.committed || it.Used != wd.used || it.UnusedCost != wd.unused ||
			!near(it.CostUtilizationPercent, 100*float64(wd.used)/float64(wd.committed)) {
			t.Errorf("savings plan item %+v, want %+v", it, wd)
		}
	}

	// Expiring: the savings plan 12 days from today, the reservations 20
	// and 75; thresholds 30, 30 and 90.
	type expiring struct {
		Items []struct {
			TenantID         string        `json:"tenant_id"`
			Kind             string        `json:"kind"`
			Name             string        `json:"name"`
			SKU              string        `json:"sku"`
			SavingsPlanID    *string       `json:"savings_plan_id"`
			HourlyCommitment *float64      `json:"hourly_commitment"`
			ExpiryDate       string        `json:"expiry_date"`
			DaysLeft         int           `json:"days_left"`
			AlertThreshold   *int          `json:"alert_threshold"`
			Amount           ledger.Amount `json:"amount"`
		} `json:"items"`
	}
	plan := w.SavingsPlans[0]
	bought, _ := ledger.ParseDay(plan.PurchaseDate)
	var exp expiring
	h.get("/api/v1/costs/commitments/expiring", users["contoso"]).json(t, &exp)
	if len(exp.Items) != 3 {
		t.Fatalf("expiring within 90 days: %+v", exp.Items)
	}
	if e := exp.Items[0]; e.Kind != "savings_plan" || e.Name != plan.Name || e.SavingsPlanID == nil || *e.SavingsPlanID != plan.SavingsPlanID ||
		e.HourlyCommitment == nil || *e.HourlyCommitment != 2.5 || e.DaysLeft != 12 || e.ExpiryDate != (today+12).String() ||
		e.AlertThreshold == nil || *e.AlertThreshold != 30 || e.Amount != 6000*ledger.Amount(today+12-bought) {
		t.Errorf("the savings plan expiring in 12 days: %+v", e)
	}
	if exp.Items[1].Kind != "reservation" || exp.Items[1].SKU != "Standard_D4s_v5" || exp.Items[1].DaysLeft != 20 || exp.Items[1].ExpiryDate != (today+20).String() ||
		exp.Items[1].AlertThreshold == nil || *exp.Items[1].AlertThreshold != 30 || exp.Items[1].Amount != 1215720 || exp.Items[1].SavingsPlanID != nil ||
		exp.Items[2].SKU != "Standard_E8s_v5" || exp.Items[2].DaysLeft != 75 || exp.Items[2].AlertThreshold == nil || *exp.Items[2].AlertThreshold != 90 {
		t.Errorf("the reservations expiring within 90 days: %+v", exp.Items[1:])
	}
	h.get("/api/v1/costs/commitments/expiring?within_days=1826", admin).json(t, &exp)
	if len(exp.Items) != 7 || exp.Items[6].TenantID != contoso {
		t.Errorf("every commitment: %+v", exp.Items)
	}

	// Recommendations, the largest savings first: the savings plan's.
	var recs struct {
		Items []struct {
			TenantID                  string        `json:"tenant_id"`
			Kind                      string        `json:"kind"`
			SKU                       string        `json:"sku"`
			Term                      string        `json:"term"`
			NetSavings                ledger.Amount `json:"net_savings"`
			CostWithout               ledger.Amount `json:"cost_without_reservations"`
			CostWith                  ledger.Amount `json:"cost_with_reservations"`
			Currency                  string        `json:"currency"`
			CommitmentAmount          *float64      `json:"commitment_amount"`
			AverageUtilizationPercent *float64      `json:"average_utilization_percent"`
			CoveragePercent           *float64      `json:"coverage_percent"`
		} `json:"items"`
	}
	h.get("/api/v1/costs/commitments/recommendations", users["contoso"]).json(t, &recs)
	if len(recs.Items) != 3 {
		t.Fatalf("recommendations: %+v", recs.Items)
	}
	if r := recs.Items[0]; r.Kind != "savings_plan" || r.Term != "P3Y" || r.NetSavings != 41256 || r.CostWithout != 215040 || r.CostWith != 173784 ||
		r.Currency != "USD" || r.CommitmentAmount == nil || *r.CommitmentAmount != 1.2 || r.AverageUtilizationPercent == nil ||
		*r.AverageUtilizationPercent != 98.6 || r.CoveragePercent == nil || *r.CoveragePercent != 71.2 {
		t.Errorf("the savings plan recommendation: %+v", r)
	}
	if recs.Items[1].Kind != "reservation" || recs.Items[1].SKU != "Standard_D4s_v5" || recs.Items[1].NetSavings != 25134 || recs.Items[1].Currency != "USD" ||
		recs.Items[1].CommitmentAmount != nil || recs.Items[2].SKU != "Standard_E4s_v5" || recs.Items[2].NetSavings != 22686 || recs.Items[2].TenantID != contoso {
		t.Errorf("the reservation recommendations: %+v", recs.Items[1:])
	}

	// Another tenant's user: nothing of Contoso Retail's, and refused when
	// naming it.
	other := users["other"]
	h.get("/api/v1/costs/commitments/expiring?within_days=1826", other).json(t, &exp)
	h.get("/api/v1/costs/commitments/recommendations", other).json(t, &recs)
	if len(exp.Items) != 0 || len(recs.Items) != 0 {
		t.Errorf("another tenant's user sees %+v and %+v", exp.Items, recs.Items)
	}
	for _, path := range []string{
		"/api/v1/costs/reservations?tenant_id=" + contoso,
		"/api/v1/costs/commitments/expiring?tenant_ids=" + contoso,
		"/api/v1/costs/commitments/recommendations?tenant_ids=" + contoso,
	} {
		if r := h.get(path, other); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Standard_") || strings.Contains(string(r.body), "Compute_Savings_Plan") {
			t.Errorf("%s as another tenant's user: %d %s", path, r.status, r.body)
		}
		expectUnauthorized(t, path+" anonymous", h.get(path, ""))
	}
	expectInvalid(t, h.get("/api/v1/costs/commitments/expiring?within_days=0", admin), "query.within_days")

	// The cost page's card shows the same.
	page := h.do(http.MethodGet, "/costs?tenant_id="+contoso, users["contoso"], nil, "HX-Request", "true")
	for _, s := range []string{"Commitments", "Utilisation by normalised size", "Within 30 days", "Within 90 days", "Standard_E4s_v5",
		"Savings plans by cost (USD)", "Savings plans unused (USD)", plan.Name, "1.2 USD an hour"} {
		if page.status != http.StatusOK || !strings.Contains(string(page.body), s) {
			t.Errorf("the cost page's commitments card lacks %q: %d", s, page.status)
		}
	}
}
