package reports_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// dailyTotals is Store.Totals as the plainest SQL on the daily tenant
// rollup: what reading the running totals must give.
func dailyTotals(t *testing.T, db *bun.DB, tenants []string, r reports.Range) []reports.CurrencyTotal {
	t.Helper()
	out := []reports.CurrencyTotal{}
	if err := db.NewRaw(`SELECT currency,
		SUM(CASE WHEN day >= ? THEN cost_cents ELSE 0 END) AS total,
		SUM(CASE WHEN day < ? THEN cost_cents ELSE 0 END) AS previous,
		COUNT(DISTINCT CASE WHEN day >= ? THEN tenant_id END) AS tenants
		FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY currency HAVING COUNT(CASE WHEN day >= ? THEN 1 END) > 0 ORDER BY currency`,
		r.From, r.From, r.From, bun.List(tenants), r.Previous().From, r.To, r.From).Scan(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// dailyTopServices is Store.TopServices as plain SQL on the daily service
// rollup.
func dailyTopServices(t *testing.T, db *bun.DB, tenants []string, r reports.Range, n int) []reports.ServiceTotal {
	t.Helper()
	out := []reports.ServiceTotal{}
	if err := db.NewRaw(`SELECT service, currency, total FROM (
		SELECT service, currency, SUM(cost_cents) AS total,
			ROW_NUMBER() OVER (PARTITION BY currency ORDER BY SUM(cost_cents) DESC, service) AS pos
		FROM cost_service_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY service, currency) ranked
		WHERE pos <= ? ORDER BY currency, total DESC, service`,
		bun.List(tenants), r.From, r.To, n).Scan(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSummaryFromRunningTotals: the summary's totals and top services,
// read from the running totals, equal the plain sums of the daily rollups
// for every range — before the first cost, across it, within, across the
// last day and after it, with the range before each — as a ledger is
// synced, restated (costs changed, services gone and new, credits, ties),
// partly emptied and synced again, for every set of tenants.
func TestSummaryFromRunningTotals(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, ledger.Migrations(), "cost_migrations"); err != nil {
				t.Fatal(err)
			}
			led := &ledger.Store{DB: db}
			s := &reports.Store{DB: db}
			d0 := mustDay("2026-10-20")
			rnd := rand.New(rand.NewPCG(3, 4))
			at := time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)
			sync := func(tenant, sub, currency string, from, to ledger.Day, services int) {
				t.Helper()
				var rows []ledger.Cost
				for d := from; d <= to; d++ {
					for v := range services {
						if rnd.IntN(4) == 0 {
							continue
						}
						// Few distinct amounts, so services tie.
						rows = append(rows, ledger.Cost{Day: d, Service: fmt.Sprintf("Service %02d", (v*7+int(d))%services), ResourceGroup: "rg",
							Currency: currency, Cost: ledger.Amount(rnd.IntN(8)*250 - 250)})
					}
				}
				if _, err := led.Replace(ctx, ledger.Window{TenantID: tenant, SubscriptionID: sub, From: from, To: to}, at, ledger.Streams{Costs: emitAll(rows)}); err != nil {
					t.Fatal(err)
				}
			}
			check := func(step string) {
				t.Helper()
				for _, tenants := range [][]string{{"a"}, {"b"}, {"a", "b", "c"}, {"c"}} {
					for from := d0 - 12; from <= d0+30; from += 5 {
						for _, days := range []int{1, 3, 10, 30} {
							r := reports.Range{From: from, To: from + ledger.Day(days) - 1}
							totals, err := s.Totals(ctx, tenants, r)
							if err != nil {
								t.Fatal(err)
							}
							if want := dailyTotals(t, db, tenants, r); fmt.Sprint(totals) != fmt.Sprint(want) {
								t.Fatalf("%s: totals of %v over %s..%s: %+v, want %+v", step, tenants, r.From, r.To, totals, want)
							}
							top, err := s.TopServices(ctx, tenants, r, 4)
							if err != nil {
								t.Fatal(err)
							}
							if want := dailyTopServices(t, db, tenants, r, 4); fmt.Sprint(top) != fmt.Sprint(want) {
								t.Fatalf("%s: top services of %v over %s..%s: %+v, want %+v", step, tenants, r.From, r.To, top, want)
							}
						}
					}
				}
			}
			sync("a", "a1", "USD", d0, d0+14, 6)
			sync("a", "a2", "EUR", d0+2, d0+14, 3)
			sync("b", "b1", "USD", d0+4, d0+10, 5)
			check("the first syncs")
			sync("a", "a1", "USD", d0+10, d0+16, 9)
			sync("b", "b1", "USD", d0+8, d0+12, 2)
			check("restated days")
			sync("a", "a2", "EUR", d0+2, d0+14, 0)
			sync("b", "b1", "USD", d0+12, d0+20, 4)
			check("EUR gone from a, b's days moved on")
		})
	}
}

// emitAll streams rows to Replace.
func emitAll(rows []ledger.Cost) func(func(ledger.Cost) error) error {
	return func(emit func(ledger.Cost) error) error {
		for _, r := range rows {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
}
