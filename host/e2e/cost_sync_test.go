package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// The cost world's subscriptions: Brand B's (the managing tenant, with a
// billing account) bills in USD, Brand A's (delegated) in EUR.
const (
	costSubB = "bbbbbbbb-0000-0000-0000-0000000000c1"
	costSubA = "aaaaaaaa-0000-0000-0000-0000000000c1"
)

// costSyncDays is the backfill the test configures.
const costSyncDays = 30

// costWorld has each subscription's costs over the 40 days up to
// tomorrow — three services in two resource groups — and a reservation
// of Brand B's billing account over the same days. Its dates follow the
// real clock, which the host's simulated cloud keeps.
func costWorld(t *testing.T, today time.Time) (string, world.World) {
	billing := "BA-E2E"
	w := world.World{Tenants: []world.Tenant{
		{Name: "Brand B", DirectoryTenantID: "22222222-2222-2222-2222-222222222222", BillingAccountID: &billing,
			Subscriptions: []world.Subscription{{ID: costSubB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
		{Name: "Brand A", DirectoryTenantID: "11111111-1111-1111-1111-111111111111", Delegated: true,
			Subscriptions: []world.Subscription{{ID: costSubA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}},
	}}
	for d := -38; d <= 1; d++ {
		date := today.AddDate(0, 0, d).Format(time.DateOnly)
		for s := 0; s < 3; s++ {
			for rg := 0; rg < 2; rg++ {
				w.Costs = append(w.Costs,
					world.Cost{SubscriptionID: costSubB, Date: date, Service: fmt.Sprintf("Service %d", s), ResourceGroup: fmt.Sprintf("rg-%d", rg),
						Cost: float64((d+40)*(s+1)+rg) / 3, Currency: "USD"},
					world.Cost{SubscriptionID: costSubA, Date: date, Service: fmt.Sprintf("Service %d", s), ResourceGroup: fmt.Sprintf("rg-%d", rg),
						Cost: float64((d+40)*(s+2)+rg) / 7, Currency: "EUR"})
			}
		}
		w.Reservations = append(w.Reservations, world.Reservation{BillingAccountID: billing, ReservationID: "res-1", SKU: "Standard_D2s_v5",
			Date: date, ReservedHours: 24, UsedHours: 18})
	}
	return writeWorld(t, w), w
}

// TestCostSync: the cost plugin's costs job, run by the host at start-up
// and again through POST /api/v1/sync/costs, writes the world's costs of
// the backfill window into the host's database to the cent, fetches only
// the restated days the second time, and marks both tenants' costs fresh.
// A standard user may not trigger it, and a throttled Cost Management
// fails the run with an alert naming the subscription.
func TestCostSync(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostSync(t, dialect) })
	}
}

func testCostSync(t *testing.T, dialect string) {
	today := time.Now().UTC()
	path, w := costWorld(t, today)
	o := hostOpts{pluginsHCL: costPlugins(fmt.Sprintf("    backfill_days = %d", costSyncDays)),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	f := &fixture{h: h, admin: admin}

	// The start-up sync backfills; wait for it, so the manual run's work
	// is known.
	waitStartupSync(t, h, admin, "costs")
	r := f.waitRun(t, f.trigger(t, "costs"))
	// Five restated days of 6 rows in each subscription, and 3 by
	// resource (each service's costs, which name no resource), and five
	// days of the reservation.
	if r.Status != "completed" || r.RecordsProcessed != 2*5*(6+3)+5 {
		t.Fatalf("costs sync %+v, want completed with 95 records", r)
	}

	// The rows in the host's database are the world's, to the cent.
	first := today.AddDate(0, 0, 1-costSyncDays).Format(time.DateOnly)
	wantRows, wantSums := 0, map[string]int64{}
	for _, c := range w.Costs {
		if c.Date >= first && c.Date <= today.Format(time.DateOnly) {
			wantRows++
			wantSums[c.SubscriptionID+" "+c.Currency] += int64(math.Round(c.Cost * 100))
		}
	}
	ctx := context.Background()
	db := h.pluginDB("cost")
	var sums []struct {
		SubscriptionID string `bun:"subscription_id"`
		Currency       string `bun:"currency"`
		Rows           int    `bun:"rows"`
		Cents          int64  `bun:"cents"`
	}
	if err := db.NewRaw(`SELECT subscription_id, currency, COUNT(*) AS rows, SUM(cost_cents) AS cents FROM cost_daily GROUP BY subscription_id, currency`).Scan(ctx, &sums); err != nil {
		t.Fatal(err)
	}
	gotRows := 0
	for _, s := range sums {
		gotRows += s.Rows
		if want := wantSums[s.SubscriptionID+" "+s.Currency]; s.Cents != want {
			t.Errorf("%s %s: %d cents stored, want %d", s.SubscriptionID, s.Currency, s.Cents, want)
		}
	}
	if len(sums) != 2 || gotRows != wantRows {
		t.Fatalf("cost_daily holds %+v, want %d rows in 2 subscriptions", sums, wantRows)
	}
	var tenantCents int64
	if err := db.NewRaw(`SELECT SUM(cost_cents) FROM cost_tenant_daily WHERE currency = 'EUR'`).Scan(ctx, &tenantCents); err != nil || tenantCents != wantSums[costSubA+" EUR"] {
		t.Fatalf("tenant rollup EUR %d (%v), want %d", tenantCents, err, wantSums[costSubA+" EUR"])
	}
	var reservations int
	if err := db.NewRaw(`SELECT COUNT(*) FROM cost_reservations`).Scan(ctx, &reservations); err != nil || reservations != 39 {
		t.Fatalf("%d reservation days (%v), want the 39 of the last 90 days up to today", reservations, err)
	}
	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", admin).json(t, &fresh)
	if fresh["Brand A"]["costs"] == nil || fresh["Brand B"]["costs"] == nil {
		t.Errorf("costs freshness not marked for both tenants: %v", fresh)
	}

	// Only an admin triggers a sync.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if r := h.do(http.MethodPost, "/api/v1/sync/costs", h.tokenFor(u), nil); r.status != http.StatusForbidden {
		t.Fatalf("a standard user triggering the costs sync: %d %s", r.status, r.body)
	}

	// Cost Management throttles Brand A's subscription past the retries:
	// the run fails naming it, the host raises an alert, and the rows
	// stay.
	arm := regexp.MustCompile(`resource_manager=(https://\S+)`).FindStringSubmatch(h.logs.String())
	if arm == nil {
		t.Fatal("the host did not log the simulated Resource Manager's address")
	}
	sim := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the simulator's own CA, on loopback
	fault := fmt.Sprintf(`{"prefix": "/subscriptions/%s/providers/Microsoft.CostManagement/query", "status": 429}`, costSubA)
	resp, err := sim.Post(arm[1]+"/_sim/faults", "application/json", strings.NewReader(fault))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("injecting a fault: %v %v", resp, err)
	}
	resp.Body.Close()
	failed := f.waitRun(t, f.trigger(t, "costs"))
	if failed.Status != "failed" || failed.ErrorMessage == nil || !strings.Contains(*failed.ErrorMessage, "subscription "+costSubA) ||
		!strings.Contains(*failed.ErrorMessage, "429") {
		t.Fatalf("throttled costs sync %+v", failed)
	}
	var alerts struct {
		Alerts []struct {
			JobID   string `json:"job_id"`
			Message string `json:"message"`
		} `json:"alerts"`
	}
	h.get("/api/v1/sync/alerts", admin).json(t, &alerts)
	raised := false
	for _, a := range alerts.Alerts {
		raised = raised || (a.JobID == failed.JobID && strings.Contains(a.Message, costSubA))
	}
	if !raised {
		t.Fatalf("no alert names %s for the failed run: %+v", costSubA, alerts)
	}
	var n int
	if err := db.NewRaw(`SELECT COUNT(*) FROM cost_daily WHERE subscription_id = ?`, costSubA).Scan(ctx, &n); err != nil || n != wantRows/2 {
		t.Fatalf("%s holds %d rows after the failed sync (%v), want %d", costSubA, n, err, wantRows/2)
	}
}
