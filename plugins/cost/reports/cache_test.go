package reports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// replicas opens two handles on one new database of the dialect, as two
// replicas of the plugin hold, with the cost plugin's schema.
func replicas(t *testing.T, dialect string) (*bun.DB, *bun.DB) {
	t.Helper()
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	if dialect == store.DialectPostgres {
		url = storetest.PostgresURL(t)
	}
	dbs := make([]*bun.DB, 2)
	for i := range dbs {
		db, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	if _, err := store.Migrate(ctx, dbs[0], ledger.Migrations(), "cost_migrations"); err != nil {
		t.Fatal(err)
	}
	return dbs[0], dbs[1]
}

// syncCosts replaces a subscription's days with one row per day and
// service, cost (cents) × (service + 1) plus the day's offset.
func syncCosts(t *testing.T, led *ledger.Store, tenant, sub, currency string, from, to ledger.Day, services int, cost ledger.Amount) {
	t.Helper()
	var rows []ledger.Cost
	for d := from; d <= to; d++ {
		for v := range services {
			rows = append(rows, ledger.Cost{Day: d, Service: fmt.Sprintf("Service %d", v), ResourceGroup: "rg", Currency: currency,
				Cost: cost*ledger.Amount(v+1) + ledger.Amount(d-from)})
		}
	}
	w := ledger.Window{TenantID: tenant, SubscriptionID: sub, From: from, To: to}
	if _, err := led.Replace(context.Background(), w, time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC), ledger.Streams{Costs: emitAll(rows)}); err != nil {
		t.Fatal(err)
	}
}

// readAll runs the four kept reads of the tenants over r and prints their
// results, to compare.
func readAll(t *testing.T, s *reports.Store, tenants []string, r reports.Range) string {
	t.Helper()
	ctx := context.Background()
	totals, err := s.Totals(ctx, tenants, r)
	if err != nil {
		t.Fatal(err)
	}
	top, err := s.TopServices(ctx, tenants, r, 3)
	if err != nil {
		t.Fatal(err)
	}
	byTenant, err := s.ByTenant(ctx, tenants, r)
	if err != nil {
		t.Fatal(err)
	}
	daily, err := s.Daily(ctx, tenants, r)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("totals %+v\ntop %+v\nby tenant %+v\ndaily %+v", totals, top, byTenant, daily)
}

// TestReadsKeptUntilTheRevisionRises: on both databases, a read repeated
// with the same tenants and range is answered from what the first read
// kept, not by the aggregate: ledger rows deleted behind the store's back,
// without raising the revision, leave the answer as it was, while the
// same tenants over another range, or another store, read them as they
// now are. Once any of the tenants' revision rises the next read is
// computed again, and equals a fresh store's.
func TestReadsKeptUntilTheRevisionRises(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db, _ := replicas(t, dialect)
			led := &ledger.Store{DB: db}
			d0 := mustDay("2026-10-01")
			syncCosts(t, led, "a", "a1", "USD", d0, d0+20, 4, 300)
			syncCosts(t, led, "a", "a2", "EUR", d0+5, d0+20, 2, 700)
			syncCosts(t, led, "b", "b1", "USD", d0, d0+20, 3, 500)

			s := &reports.Store{DB: db}
			tenants := []string{"a", "b"}
			r, other := reports.Range{From: d0 + 10, To: d0 + 19}, reports.Range{From: d0 + 9, To: d0 + 19}
			before := readAll(t, s, tenants, r)
			if want := readAll(t, &reports.Store{DB: db}, tenants, r); before != want {
				t.Fatalf("first read:\n%s\nwant, as a fresh store reads:\n%s", before, want)
			}
			// The tenants in another order and repeated are the same set.
			if got := readAll(t, s, []string{"b", "a", "b"}, r); got != before {
				t.Fatalf("the same tenants reordered:\n%s\nwant\n%s", got, before)
			}

			for _, table := range []string{"cost_tenant_daily", "cost_service_daily", "cost_tenant_cumulative", "cost_service_cumulative", "cost_cumulative_extent"} {
				if _, err := db.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ?`, "a"); err != nil {
					t.Fatal(err)
				}
			}
			now := readAll(t, &reports.Store{DB: db}, tenants, r)
			if now == before {
				t.Fatal("deleting a's rows changed no read; the test proves nothing")
			}
			if got := readAll(t, s, tenants, r); got != before {
				t.Fatalf("repeated read without a new revision ran the aggregates again:\n%s\nwant the kept\n%s", got, before)
			}
			if got, want := readAll(t, s, tenants, other), readAll(t, &reports.Store{DB: db}, tenants, other); got != want {
				t.Fatalf("another range, never read:\n%s\nwant\n%s", got, want)
			}
			if got, want := readAll(t, s, []string{"b"}, r), readAll(t, &reports.Store{DB: db}, []string{"b"}, r); got != want {
				t.Fatalf("b alone, never read:\n%s\nwant\n%s", got, want)
			}

			if err := revcache.Bump(ctx, db, ledger.RevisionTable, "a"); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, s, tenants, r); got != now {
				t.Fatalf("after a's revision rose:\n%s\nwant as stored now\n%s", got, now)
			}
		})
	}
}

// TestReadsSeeAnotherReplicasSync: on both databases, what a replica
// kept is not used once another replica, on its own handle of the same
// database, has synced one of the tenants — by Replace or by Upsert and
// Rollup — or a tenant's first costs: its next reads return the new
// figures, equal to the plain sums of the rollups. A sync of a tenant
// outside the set read keeps what was kept.
func TestReadsSeeAnotherReplicasSync(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db1, db2 := replicas(t, dialect)
			s1 := &reports.Store{DB: db1}
			other := &ledger.Store{DB: db2}
			d0 := mustDay("2026-10-01")
			tenants := []string{"a", "b", "new"}
			r := reports.Range{From: d0 + 5, To: d0 + 24}

			check := func(step string) string {
				t.Helper()
				got := readAll(t, s1, tenants, r)
				if want := readAll(t, &reports.Store{DB: db1}, tenants, r); got != want {
					t.Fatalf("%s: the first replica read\n%s\nwant, as stored\n%s", step, got, want)
				}
				totals, _ := s1.Totals(ctx, tenants, r)
				if want := dailyTotals(t, db1, tenants, r); fmt.Sprint(totals) != fmt.Sprint(want) {
					t.Fatalf("%s: totals %+v, want the rollups' %+v", step, totals, want)
				}
				top, _ := s1.TopServices(ctx, tenants, r, 3)
				if want := dailyTopServices(t, db1, tenants, r, 3); fmt.Sprint(top) != fmt.Sprint(want) {
					t.Fatalf("%s: top services %+v, want the rollups' %+v", step, top, want)
				}
				return got
			}

			syncCosts(t, &ledger.Store{DB: db1}, "a", "a1", "USD", d0, d0+20, 4, 300)
			syncCosts(t, &ledger.Store{DB: db1}, "b", "b1", "USD", d0, d0+20, 3, 500)
			first := check("the first syncs")

			syncCosts(t, other, "a", "a1", "USD", d0+15, d0+25, 5, 310)
			restated := check("a restated by the other replica")
			if restated == first {
				t.Fatal("the restatement changed no read; the test proves nothing")
			}

			if err := other.Upsert(ctx, []ledger.Cost{{SubscriptionID: "b1", Day: d0 + 7, Service: "Support", ResourceGroup: "rg", Currency: "EUR", TenantID: "b", Cost: 4321}}); err != nil {
				t.Fatal(err)
			}
			if err := other.Rollup(ctx, "b", d0+7, d0+7); err != nil {
				t.Fatal(err)
			}
			rolled := check("b rolled up by the other replica")
			if rolled == restated {
				t.Fatal("the rollup changed no read; the test proves nothing")
			}

			syncCosts(t, other, "new", "n1", "GBP", d0+20, d0+22, 1, 900)
			if check("new's first costs") == rolled {
				t.Fatal("new's first costs changed no read; the test proves nothing")
			}

			kept := readAll(t, s1, []string{"a"}, r)
			syncCosts(t, other, "b", "b1", "USD", d0, d0+20, 2, 100)
			if got := readAll(t, s1, []string{"a"}, r); got != kept {
				t.Fatalf("a's reads after b's sync:\n%s\nwant\n%s", got, kept)
			}
			check("b synced again")
		})
	}
}

// TestRoutesAfterAnotherReplicasSync: on both databases, the summary,
// trends and by-tenant routes, once read (and so kept), answer with the
// new figures to the cent after a sync written through another handle of
// the database, as another replica writes it: Alpha's USD subscription
// restated over the last ten days, one service gone from them.
func TestRoutesAfterAnotherReplicasSync(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			from := today - 29
			byTenant := func(step string) {
				t.Helper()
				var got []struct {
					TenantID  string        `json:"tenant_id"`
					Currency  *string       `json:"currency"`
					TotalCost ledger.Amount `json:"total_cost"`
				}
				w.json(t, "/api/v1/costs/by-tenant?period_days=30", admin, &got)
				want := expected(w.rows, admin.TenantIDs, from, today, func(c ledger.Cost) string { return c.TenantID })
				for _, r := range got {
					if r.Currency != nil && r.TotalCost != want[r.TenantID][*r.Currency] {
						t.Errorf("%s: by-tenant %s %s: %s, want %s", step, r.TenantID, *r.Currency, r.TotalCost, want[r.TenantID][*r.Currency])
					}
				}
			}
			var before summaryJSON
			w.json(t, "/api/v1/costs/summary?period_days=30", admin, &before)
			w.checkRange(t, admin, from, today)
			byTenant("before the sync")

			w2 := ledger.Window{TenantID: "t1", SubscriptionID: "s1", From: today - 9, To: today}
			var restated, rows []ledger.Cost
			for _, c := range w.rows {
				if c.SubscriptionID == w2.SubscriptionID && c.Day >= w2.From {
					if c.Service == "Storage" {
						continue
					}
					c.Cost = c.Cost*2 + 1
					restated = append(restated, c)
				}
				rows = append(rows, c)
			}
			w.rows = rows
			if _, err := (&ledger.Store{DB: w.db}).Replace(context.Background(), w2, today.Time(), ledger.Streams{Costs: emitAll(restated)}); err != nil {
				t.Fatal(err)
			}

			var after summaryJSON
			w.json(t, "/api/v1/costs/summary?period_days=30", admin, &after)
			if b, a := mustJSON(t, before), mustJSON(t, after); a == b {
				t.Fatalf("the summary after the sync is the one before: %s", a)
			}
			w.checkRange(t, admin, from, today)
			byTenant("after the sync")
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
