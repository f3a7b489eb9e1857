package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestAmortizedCostThroughTheHost: a world where Brand A bought a
// one-year reservation five days ago for 1,095.00, which covers a machine
// that costs 3.00 a day amortised of which 0.50 goes unused, beside
// Storage at 10.00 a day. Through the host, each day's actual and
// amortised cost is exact to the cent: the purchase day costs 1,105.00 as
// billed and 13.00 amortised, the days of the term 10.00 and 13.00, the
// days before 10.00 and 10.00 (the machine then paid as it went, 3.00 a
// day either way); the summary and chargeback agree.
func TestAmortizedCostThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testAmortizedCost(t, dialect) })
	}
}

func testAmortizedCost(t *testing.T, dialect string) {
	const sub = "aaaaaaaa-0000-0000-0000-0000000a3071"
	today := time.Now().UTC()
	vm := "/subscriptions/" + sub + "/resourceGroups/rg-app/providers/Microsoft.Compute/virtualMachines/vm-app-1"
	zero, covered, unused := 0.0, 2.5, 0.5
	var costs []world.Cost
	for d := -9; d <= 0; d++ {
		date := today.AddDate(0, 0, d).Format(time.DateOnly)
		costs = append(costs, world.Cost{SubscriptionID: sub, Date: date, Service: "Storage", ResourceGroup: "rg-data", Cost: 10, Currency: "USD"})
		switch {
		case d < -4:
			costs = append(costs, world.Cost{SubscriptionID: sub, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-app", ResourceID: vm, Cost: 3, Currency: "USD"})
		default:
			costs = append(costs,
				world.Cost{SubscriptionID: sub, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-app", ResourceID: vm, Cost: 0, AmortizedCost: &covered, Currency: "USD"},
				world.Cost{SubscriptionID: sub, Date: date, Service: "Virtual Machines", Cost: 0, AmortizedCost: &unused, Currency: "USD"})
		}
		if d == -4 {
			costs = append(costs, world.Cost{SubscriptionID: sub, Date: date, Service: "Virtual Machines", Cost: 1095, AmortizedCost: &zero, Currency: "USD"})
		}
	}
	path := writeWorld(t, world.World{
		Tenants: []world.Tenant{{Name: "Brand A", DirectoryTenantID: "11111111-1111-1111-1111-1111111a3071", Delegated: true,
			Subscriptions: []world.Subscription{{ID: sub, Name: "A prod"}}, AccessGroups: []string{"grp-a"}}},
		Costs: costs,
	})
	o := hostOpts{pluginsHCL: costPlugins("    backfill_days = 10"),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "costs")
	a := h.tenantIDs(t, admin)["Brand A"]

	first, last := ledger.DayOf(today)-9, ledger.DayOf(today)
	q := fmt.Sprintf("start_date=%s&end_date=%s&tenant_ids=%s", first, last, a)
	var days = map[string][]struct {
		Date      ledger.Day    `json:"date"`
		TotalCost ledger.Amount `json:"total_cost"`
	}{}
	for _, m := range []string{"actual", "amortized"} {
		var got []struct {
			Date      ledger.Day    `json:"date"`
			TotalCost ledger.Amount `json:"total_cost"`
		}
		h.get("/api/v1/costs/trends?metric="+m+"&"+q, admin).json(t, &got)
		days[m] = got
	}
	var wantActual, wantAmortized ledger.Amount
	for i, d := 0, first; d <= last; i, d = i+1, d+1 {
		actual, amortized := ledger.Amount(1300), ledger.Amount(1300)
		switch {
		case d == last-4:
			actual = 1000 + 109500
		case d > last-4:
			actual = 1000
		}
		wantActual += actual
		wantAmortized += amortized
		if len(days["actual"]) != 10 || len(days["amortized"]) != 10 || days["actual"][i].Date != d ||
			days["actual"][i].TotalCost != actual || days["amortized"][i].TotalCost != amortized {
			t.Fatalf("day %s: actual %+v, amortised %+v; want %s and %s", d, days["actual"], days["amortized"], actual, amortized)
		}
	}
	for m, want := range map[string]ledger.Amount{"actual": wantActual, "amortized": wantAmortized} {
		var s struct {
			Metric    string        `json:"metric"`
			TotalCost ledger.Amount `json:"total_cost"`
		}
		h.get("/api/v1/costs/summary?metric="+m+"&"+q, admin).json(t, &s)
		var report struct {
			TotalCost ledger.Amount `json:"total_cost"`
		}
		h.get(fmt.Sprintf("/api/v1/costs/chargeback/%s?metric=%s&start_date=%s&end_date=%s", a, m, first, last), admin).json(t, &report)
		if s.Metric != m || s.TotalCost != want || report.TotalCost != want {
			t.Errorf("%s: summary %+v, chargeback %s; want %s", m, s, report.TotalCost, want)
		}
	}
}
