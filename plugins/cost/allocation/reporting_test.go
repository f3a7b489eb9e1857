package allocation_test

import (
	"context"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// TestChargebackInTheReportingCurrency: a brand of a USD tenant, whose
// shared subscription splits 50/50, and a EUR tenant, whose resources
// name their cost centres, over two days of different rates. The EUR days
// convert as the summary converts them: 4.17 EUR at 0.8 is 5.2125 (5.21),
// at 0.9 4.6333 (4.63), 9.84 USD; Research's 8.00 EUR and marketing's
// 0.34 share it by their charges, 9.4388 and 0.4012, the odd cent to the
// larger remainder: 9.44 and 0.40. With the 2.02 USD split 1.01 and 1.01,
// the brand's 11.86 USD. Without the second day's rate, or any rate,
// nothing converts and every part is null.
func TestChargebackInTheReportingCurrency(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, ledger.Migrations(), "plugin_cost_migrations"); err != nil {
				t.Fatal(err)
			}
			rows := []struct {
				tenant, sub, id, currency string
				cost                      ledger.Amount
				tags                      map[string]string
			}{
				{"t1", "s1", "r1", "USD", 101, nil},
				{"t2", "s3", "r4", "EUR", 400, map[string]string{"costcenter": "Research"}},
				{"t2", "s3", "r5", "EUR", 17, map[string]string{"costcenter": "marketing"}},
			}
			var costs []ledger.Cost
			var days []ledger.ResourceDay
			var tags []ledger.ResourceTag
			for _, r := range rows {
				for _, d := range []ledger.Day{nov1, nov1 + 1} {
					costs = append(costs, ledger.Cost{SubscriptionID: r.sub, Day: d, Service: "VM", ResourceGroup: "rg" + r.id, Currency: r.currency, TenantID: r.tenant, Cost: r.cost, Amortized: r.cost})
					days = append(days, ledger.ResourceDay{SubscriptionID: r.sub, Day: d, ResourceID: r.id, Service: "VM", Currency: r.currency, TenantID: r.tenant,
						ResourceGroup: "rg", Month: d.Month(), Cost: r.cost, Amortized: r.cost})
				}
				for k, v := range r.tags {
					tags = append(tags, ledger.ResourceTag{SubscriptionID: r.sub, ResourceID: r.id, Key: k, Value: v, TenantID: r.tenant})
				}
			}
			led := &ledger.Store{DB: db}
			if err := led.Upsert(ctx, costs); err != nil {
				t.Fatal(err)
			}
			if _, err := db.NewInsert().Model(&days).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := db.NewInsert().Model(&tags).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for _, tn := range []string{"t1", "t2"} {
				if err := led.Rollup(ctx, tn, nov1, nov1+1); err != nil {
					t.Fatal(err)
				}
			}
			rates := &exchange.Store{DB: db}
			s := &allocation.Store{DB: db, Exchange: &exchange.Converter{Store: rates, Currency: "USD", Source: "test"}}
			half := 50.0
			rules := []allocation.Rule{
				{Kind: allocation.KindSubscription, SubscriptionID: "s1", Shared: &allocation.Shared{Split: "fixed",
					CostCentres: []allocation.Share{{Name: "Platform", Percent: &half}, {Name: "Data", Percent: &half}}}},
				{Kind: allocation.KindCostCentreTag, TagKey: "costcenter"},
			}
			if err := s.Replace(ctx, brand, rules, "admin", time.Now()); err != nil {
				t.Fatal(err)
			}
			read := func() allocation.Reporting {
				t.Helper()
				cb, err := s.Chargeback(ctx, brand, []string{"t1", "t2"}, reports.Range{From: nov1, To: nov1 + 1}, reports.Actual)
				if err != nil {
					t.Fatal(err)
				}
				return cb.Reporting
			}
			parts := func(r allocation.Reporting) map[string]string {
				out := map[string]string{}
				for _, c := range r.CostCentres {
					out[c.CostCentre] = "null"
					if c.TotalCost != nil {
						out[c.CostCentre] = c.TotalCost.String()
					}
				}
				return out
			}

			if r := read(); r.TotalCost != nil || len(r.Missing) != 1 || r.Missing[0].Currency != "EUR" || parts(r)["Research"] != "null" {
				t.Errorf("without rates: %+v, parts %v", r, parts(r))
			}
			q := func(date ledger.Day, rate string) exchange.Quote {
				r, err := exchange.ParseRate(rate)
				if err != nil {
					t.Fatal(err)
				}
				return exchange.Quote{Day: date, Base: "USD", Quote: "EUR", Rate: r}
			}
			if err := rates.Upsert(ctx, []exchange.Quote{q(nov1, "0.8"), q(nov1+1, "0.9")}, "test", time.Now()); err != nil {
				t.Fatal(err)
			}
			r := read()
			if r.TotalCost == nil || r.TotalCost.String() != "11.86" || !r.Converted || len(r.Rates) != 1 || r.Rates[0].ConvertedCost.String() != "9.84" {
				t.Errorf("reporting total: %+v", r.Reporting)
			}
			want := map[string]string{"Data": "1.01", "Platform": "1.01", "Research": "9.44", "marketing": "0.40"}
			got := parts(r)
			var sum ledger.Amount
			for _, c := range r.CostCentres {
				if c.TotalCost != nil {
					sum += *c.TotalCost
				}
			}
			for name, v := range want {
				if got[name] != v {
					t.Errorf("%s in USD: %s, want %s (all: %v)", name, got[name], v, got)
				}
			}
			if sum.String() != "11.86" {
				t.Errorf("the cost centres add up to %s, not the total 11.86: %v", sum, got)
			}
			if last := r.CostCentres[len(r.CostCentres)-1].CostCentre; last != allocation.Unallocated && got[allocation.Unallocated] != "" {
				t.Errorf("Unallocated is not last: %v", r.CostCentres)
			}
		})
	}
}
