package ledger_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// seriesSum is a series' cost and count of days with a row over a range.
type seriesSum struct {
	Cost ledger.Amount
	Days int
}

// dailySums sums the daily service rollup of a tenant over from..to per
// service and currency: what the running totals must reproduce.
func dailySums(t *testing.T, db bun.IDB, tenant string, from, to ledger.Day) map[string]seriesSum {
	t.Helper()
	var rows []struct {
		Service  string        `bun:"service"`
		Currency string        `bun:"currency"`
		Cost     ledger.Amount `bun:"cost"`
		Days     int           `bun:"days"`
	}
	if err := db.NewRaw(`SELECT service, currency, SUM(cost_cents) AS cost, COUNT(*) AS days FROM cost_service_daily
		WHERE tenant_id = ? AND day BETWEEN ? AND ? GROUP BY service, currency`, tenant, from, to).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]seriesSum{}
	for _, r := range rows {
		out[r.Service+"/"+r.Currency] = seriesSum{r.Cost, r.Days}
	}
	return out
}

// runningSums sums the same from the running totals, as a read does: the
// row of to (or of the tenant's last day, when earlier) minus the row of
// from − 1, a missing row counting nothing; a series without a day in the
// range is left out.
func runningSums(t *testing.T, db bun.IDB, tenant string, from, to ledger.Day) map[string]seriesSum {
	t.Helper()
	var rows []struct {
		Service  string        `bun:"service"`
		Currency string        `bun:"currency"`
		Cost     ledger.Amount `bun:"cost"`
		Days     int           `bun:"days"`
	}
	if err := db.NewRaw(`WITH bounds AS (SELECT tenant_id, CASE WHEN last_day < ? THEN last_day ELSE ? END AS hi
			FROM cost_cumulative_extent WHERE tenant_id = ? AND last_day >= ?)
		SELECT service, currency, SUM(cost_cents) AS cost, SUM(days) AS days FROM (
			SELECT c.service, c.currency, c.cost_cents, c.days FROM bounds b JOIN cost_service_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.hi
			UNION ALL SELECT c.service, c.currency, -c.cost_cents, -c.days FROM bounds b JOIN cost_service_cumulative c ON c.tenant_id = b.tenant_id AND c.day = ?) p
		GROUP BY service, currency HAVING SUM(days) > 0`, to, to, tenant, from, from-1).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]seriesSum{}
	for _, r := range rows {
		out[r.Service+"/"+r.Currency] = seriesSum{r.Cost, r.Days}
	}
	return out
}

// checkRunning fails the test unless the running totals of both tables
// agree with the daily rollups: every row with a day is the sum of the
// daily rows up to it, each series is dense from its first row to the
// tenant's extent and has nothing beyond it, the extent covers the last
// day with costs, and sums over every range within a few days of the
// tenant's costs agree.
func checkRunning(t *testing.T, db bun.IDB, tenants []string, step string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []struct{ name, query string }{
		{"a service running total differs from the daily rows up to its day", `SELECT COUNT(*) FROM cost_service_cumulative c
			WHERE c.cost_cents <> (SELECT COALESCE(SUM(d.cost_cents), 0) FROM cost_service_daily d
				WHERE d.tenant_id = c.tenant_id AND d.service = c.service AND d.currency = c.currency AND d.day <= c.day)
			OR c.days <> (SELECT COUNT(*) FROM cost_service_daily d
				WHERE d.tenant_id = c.tenant_id AND d.service = c.service AND d.currency = c.currency AND d.day <= c.day)`},
		{"a tenant running total differs from the daily rows up to its day", `SELECT COUNT(*) FROM cost_tenant_cumulative c
			WHERE c.cost_cents <> (SELECT COALESCE(SUM(d.cost_cents), 0) FROM cost_tenant_daily d
				WHERE d.tenant_id = c.tenant_id AND d.currency = c.currency AND d.day <= c.day)
			OR c.days <> (SELECT COUNT(*) FROM cost_tenant_daily d
				WHERE d.tenant_id = c.tenant_id AND d.currency = c.currency AND d.day <= c.day)`},
		{"a service series is not dense up to its tenant's extent", `SELECT COUNT(*) FROM (
			SELECT c.tenant_id, c.service, c.currency FROM cost_service_cumulative c
			LEFT JOIN cost_cumulative_extent e ON e.tenant_id = c.tenant_id
			GROUP BY c.tenant_id, c.service, c.currency
			HAVING MAX(e.last_day) IS NULL OR MAX(c.day) <> MAX(e.last_day) OR COUNT(*) <> MAX(c.day) - MIN(c.day) + 1) x`},
		{"a tenant series is not dense up to its tenant's extent", `SELECT COUNT(*) FROM (
			SELECT c.tenant_id, c.currency FROM cost_tenant_cumulative c
			LEFT JOIN cost_cumulative_extent e ON e.tenant_id = c.tenant_id
			GROUP BY c.tenant_id, c.currency
			HAVING MAX(e.last_day) IS NULL OR MAX(c.day) <> MAX(e.last_day) OR COUNT(*) <> MAX(c.day) - MIN(c.day) + 1) x`},
		{"a daily row has no running total from its day on", `SELECT COUNT(*) FROM cost_service_daily d
			WHERE NOT EXISTS (SELECT 1 FROM cost_service_cumulative c WHERE c.tenant_id = d.tenant_id AND c.service = d.service
				AND c.currency = d.currency AND c.day <= d.day)`},
		{"a tenant with costs has no extent covering them", `SELECT COUNT(*) FROM (SELECT tenant_id, MAX(day) AS last FROM cost_tenant_daily GROUP BY tenant_id) d
			LEFT JOIN cost_cumulative_extent e ON e.tenant_id = d.tenant_id WHERE e.last_day IS NULL OR e.last_day < d.last`},
	} {
		var n int
		if err := db.NewRaw(q.query).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("after %s: %s (%d)", step, q.name, n)
		}
	}
	for _, tenant := range tenants {
		var first, last []int64
		if err := db.NewRaw(`SELECT MIN(day) FROM cost_service_daily WHERE tenant_id = ? HAVING COUNT(*) > 0`, tenant).Scan(ctx, &first); err != nil {
			t.Fatal(err)
		}
		if err := db.NewRaw(`SELECT MAX(day) FROM cost_service_daily WHERE tenant_id = ? HAVING COUNT(*) > 0`, tenant).Scan(ctx, &last); err != nil {
			t.Fatal(err)
		}
		if len(first) == 0 {
			if got := runningSums(t, db, tenant, 0, 1<<30); len(got) != 0 {
				t.Fatalf("after %s: tenant %s has no costs but running sums %v", step, tenant, got)
			}
			continue
		}
		lo, hi := ledger.Day(first[0])-2, ledger.Day(last[0])+2
		for from := lo; from <= hi; from++ {
			for to := from; to <= hi; to++ {
				want, got := dailySums(t, db, tenant, from, to), runningSums(t, db, tenant, from, to)
				if fmt.Sprint(want) != fmt.Sprint(got) {
					t.Fatalf("after %s: tenant %s %s..%s: running %v, daily %v", step, tenant, from, to, got, want)
				}
			}
		}
	}
}

// TestRunningTotals: through a sequence of syncs — a backfill, restated
// days with changed, vanished and new services and currencies, credits, a
// second subscription, a window past a gap, rollups of days written
// directly, and all of a tenant's costs vanishing — the running totals
// agree with the daily rollups at every step, so a sum over any range
// read from them equals the daily rows' to the cent. The migration builds
// the same totals from rollups that were there before it.
func TestRunningTotals(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			d0, _ := ledger.ParseDay("2026-09-27")
			at := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
			rnd := rand.New(rand.NewPCG(7, 10))
			// gen makes a window's rows: services × resource groups on each
			// day, some days of some services missing, some costs negative
			// (credits) or zero.
			gen := func(from, to ledger.Day, services []string, currency string) []ledger.Cost {
				var rows []ledger.Cost
				for d := from; d <= to; d++ {
					for _, svc := range services {
						if rnd.IntN(5) == 0 {
							continue
						}
						for rg := range 2 {
							c := ledger.Amount(rnd.IntN(100000) - 5000)
							if rnd.IntN(10) == 0 {
								c = 0
							}
							rows = append(rows, ledger.Cost{Day: d, Service: svc, ResourceGroup: fmt.Sprintf("rg%d", rg), Currency: currency, Cost: c})
						}
					}
				}
				return rows
			}
			replace := func(step, tenant, sub string, from, to ledger.Day, rows []ledger.Cost) {
				t.Helper()
				if _, err := s.Replace(ctx, ledger.Window{TenantID: tenant, SubscriptionID: sub, From: from, To: to}, at, ledger.Streams{Costs: emitAll(rows)}); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				checkRunning(t, s.DB, []string{"t1", "t2"}, step)
			}
			replace("backfill of t1's s1", "t1", "s1", d0, d0+20, gen(d0, d0+20, []string{"VM", "SQL", "Storage"}, "USD"))
			replace("backfill of t2", "t2", "s3", d0+3, d0+20, gen(d0+3, d0+20, []string{"VM", "AKS"}, "EUR"))
			replace("restated days of s1, a new service and SQL gone", "t1", "s1", d0+16, d0+20, gen(d0+16, d0+20, []string{"VM", "Storage", "Bandwidth"}, "USD"))
			replace("backfill of t1's s2, in EUR, starting earlier", "t1", "s2", d0-4, d0+21, gen(d0-4, d0+21, []string{"VM", "Backup"}, "EUR"))
			replace("restated days in the middle of s1", "t1", "s1", d0+5, d0+9, gen(d0+5, d0+9, []string{"SQL"}, "USD"))
			replace("the last days of s2 vanish", "t1", "s2", d0+19, d0+21, nil)
			replace("s1 after a gap of days without costs", "t1", "s1", d0+30, d0+33, gen(d0+30, d0+33, []string{"VM"}, "USD"))
			replace("t2 restated with nothing in its window", "t2", "s3", d0+18, d0+20, nil)

			// Rows written directly, then rolled up for a window that ends
			// before the tenant's last day.
			if err := s.Upsert(ctx, []ledger.Cost{{SubscriptionID: "s1", Day: d0 + 2, Service: "Support", ResourceGroup: "rg", Currency: "USD", TenantID: "t1", Cost: 1234}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Rollup(ctx, "t1", d0+2, d0+2); err != nil {
				t.Fatal(err)
			}
			checkRunning(t, s.DB, []string{"t1", "t2"}, "a day rolled up in the middle")

			// The migration's own backfill, on the rollups as they are,
			// gives the same sums as the rollups maintained them.
			want := map[string]map[string]seriesSum{}
			for from := d0 - 6; from <= d0+35; from += 3 {
				for to := from; to <= d0+35; to += 4 {
					want[fmt.Sprint(from, to)] = runningSums(t, s.DB, "t1", from, to)
				}
			}
			migrate(t, s.DB)
			checkRunning(t, s.DB, []string{"t1", "t2"}, "the migration's backfill")
			for from := d0 - 6; from <= d0+35; from += 3 {
				for to := from; to <= d0+35; to += 4 {
					if got := runningSums(t, s.DB, "t1", from, to); fmt.Sprint(got) != fmt.Sprint(want[fmt.Sprint(from, to)]) {
						t.Fatalf("%s..%s: the migration's totals %v, the rollups' %v", from, to, got, want[fmt.Sprint(from, to)])
					}
				}
			}

			// All of t2's costs vanish: its running totals go with them.
			replace("t2's costs all vanish", "t2", "s3", d0, d0+20, nil)
			var n int
			if err := s.DB.NewRaw(`SELECT (SELECT COUNT(*) FROM cost_service_cumulative WHERE tenant_id = 't2') + (SELECT COUNT(*) FROM cost_tenant_cumulative WHERE tenant_id = 't2')
				+ (SELECT COUNT(*) FROM cost_cumulative_extent WHERE tenant_id = 't2')`).Scan(ctx, &n); err != nil || n != 0 {
				t.Fatalf("t2 keeps %d running total rows (%v) without costs", n, err)
			}
			// And new costs start them again.
			replace("t2 again", "t2", "s3", d0+25, d0+27, gen(d0+25, d0+27, []string{"VM"}, "EUR"))
		})
	}
}

// migrate empties the running totals and runs the inserts of the
// migration that made them, as it runs on a ledger synced before it.
func migrate(t *testing.T, db bun.IDB) {
	t.Helper()
	ctx := context.Background()
	b, err := fs.ReadFile(ledger.Migrations(), "0004_cumulative.tx.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"cost_service_cumulative", "cost_tenant_cumulative", "cost_cumulative_extent"} {
		if _, err := db.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			t.Fatal(err)
		}
	}
	inserts := 0
	for _, stmt := range strings.Split(string(b), "--bun:split") {
		var code []string
		for _, line := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				code = append(code, line)
			}
		}
		q := strings.TrimSpace(strings.Join(code, "\n"))
		if strings.HasPrefix(q, "INSERT") {
			inserts++
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if inserts != 3 {
		t.Fatalf("the migration has %d inserts, want 3", inserts)
	}
}
