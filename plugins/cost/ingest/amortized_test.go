package ingest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestAmortizedCost: a reservation bought three days before the clock's
// day for 365.00 costs that much that day as billed and nothing
// amortised; the machine it covers costs nothing as billed and 1.00 a day
// amortised, with 0.25 a day of it unused; Storage costs 10.00 a day
// either way. The ledger holds both, to the cent, per day at both grains
// and in the tenant's rollup.
func TestAmortizedCost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := &world.World{Tenants: []world.Tenant{{Name: "Contoso", DirectoryTenantID: contosoDir,
				Subscriptions: []world.Subscription{{ID: subC1, Name: "Contoso prod"}}}}}
			vm := "/subscriptions/" + subC1 + "/resourceGroups/rg-app/providers/Microsoft.Compute/virtualMachines/vm-1"
			zero, share, unused := 0.0, 1.0, 0.25
			today := day(simNow)
			for d := today - 9; d <= today; d++ {
				date := d.String()
				w.Costs = append(w.Costs, world.Cost{SubscriptionID: subC1, Date: date, Service: "Storage", ResourceGroup: "rg-data", Cost: 10, Currency: "USD"})
				if d < today-3 {
					continue
				}
				w.Costs = append(w.Costs,
					world.Cost{SubscriptionID: subC1, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-app", ResourceID: vm, Cost: 0, AmortizedCost: &share, Currency: "USD"},
					world.Cost{SubscriptionID: subC1, Date: date, Service: "Virtual Machines", ResourceGroup: "", Cost: 0, AmortizedCost: &unused, Currency: "USD"})
				if d == today-3 {
					w.Costs = append(w.Costs, world.Cost{SubscriptionID: subC1, Date: date, Service: "Virtual Machines", ResourceGroup: "", Cost: 365, AmortizedCost: &zero, Currency: "USD"})
				}
			}
			f := start(t, dialect, w)
			f.syncer.BackfillDays = 10
			f.mustRun(t)

			var tenantDays []struct {
				Day       ledger.Day    `bun:"day"`
				Cost      ledger.Amount `bun:"cost_cents"`
				Amortized ledger.Amount `bun:"amortized_cents"`
			}
			if err := f.ledger.DB.NewRaw(`SELECT day, cost_cents, amortized_cents FROM cost_tenant_daily ORDER BY day`).Scan(ctx, &tenantDays); err != nil {
				t.Fatal(err)
			}
			if len(tenantDays) != 10 {
				t.Fatalf("%d days in the rollup, want 10", len(tenantDays))
			}
			for _, r := range tenantDays {
				actual, amortized := ledger.Amount(1000), ledger.Amount(1000)
				switch {
				case r.Day == today-3:
					actual, amortized = 1000+36500, 1000+125
				case r.Day > today-3:
					amortized = 1000 + 125
				}
				if r.Cost != actual || r.Amortized != amortized {
					t.Errorf("%s: actual %s, amortised %s; want %s and %s", r.Day, r.Cost, r.Amortized, actual, amortized)
				}
			}
			var machine []ledger.ResourceDay
			if err := f.ledger.DB.NewSelect().Model(&machine).Where("resource_id <> ''").Order("day").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(machine) != 4 || machine[0].Day != today-3 || machine[0].Cost != 0 || machine[0].Amortized != 100 || machine[0].ResourceGroup != "rg-app" {
				t.Errorf("the covered machine by day: %+v", machine)
			}
			var vmDays []ledger.Cost
			if err := f.ledger.DB.NewSelect().Model(&vmDays).Where("service = 'Virtual Machines' AND resource_group = ''").Order("day").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(amounts(vmDays)); got != "[365.00/0.25 0.00/0.25 0.00/0.25 0.00/0.25]" {
				t.Errorf("the purchase and unused hours by day (actual/amortised): %s", got)
			}
		})
	}
}

// amounts are the rows' actual and amortised costs, as "actual/amortised".
func amounts(rows []ledger.Cost) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Cost.String() + "/" + r.Amortized.String()
	}
	return out
}
