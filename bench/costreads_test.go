package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// The cost ledger of BenchmarkCostReads: costTenants tenants × 2
// subscriptions × costServices services × costDays days up to costLastDay,
// one resource group: 2.92 million raw rows, 1.46 million service rollup
// rows. Every tenth tenant pays in EUR, the others in USD.
const (
	costTenants  = 100
	costServices = 40
	costDays     = 365
	// costDataVersion names the cached ledger; change it with the data.
	costDataVersion = "v1"
)

var costLastDay = ledger.DayOf(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC))

// costRequests is how many times each read of 30 days is timed, per
// variant; a year's summary takes seconds on SQLite, so the reads of 365
// days are timed costYearRequests times.
const (
	costRequests     = 200
	costYearRequests = 30
)

// BenchmarkCostReads times the cost plugin's summary, trends and
// by-tenant reads through its store functions (reports.Store) against the
// same figures computed by the plainest SQL on the same tables, on SQLite
// and PostgreSQL, for an admin who sees all 100 tenants. The two variants
// alternate request by request, so drift of the machine lands on both.
//
// The ledger is built once and kept: SQLite in the user's cache directory,
// PostgreSQL in the schema bench_cost_<version> of the test database
// (STEWARD_TEST_POSTGRES_URL). Loading it takes a few minutes.
func BenchmarkCostReads(b *testing.B) {
	for _, d := range []string{store.DialectPostgres, store.DialectSQLite} {
		b.Run(d, func(b *testing.B) {
			db := costLedger(b, d)
			tenants := make([]string, costTenants)
			for i := range tenants {
				tenants[i] = costTenantID(i + 1)
			}
			s := &reports.Store{DB: db}
			var rows []costResult
			for _, w := range costWorkloads(s, db, tenants) {
				r := timeCostRead(b, w)
				rows = append(rows, r)
				b.ReportMetric(ms(r.store.p95), w.name+"-p95-ms")
				b.ReportMetric(ms(r.raw.p95), w.name+"-raw-p95-ms")
			}
			printCostResults(d, rows)
		})
	}
}

// costWorkload is one read: through the store, and as plain SQL.
type costWorkload struct {
	name       string
	requests   int
	store, raw func(context.Context) error
}

func costWorkloads(s *reports.Store, db *bun.DB, tenants []string) []costWorkload {
	month := reports.Range{From: costLastDay - 29, To: costLastDay}
	year := reports.Range{From: costLastDay - 364, To: costLastDay}
	in := bun.List(tenants)
	scan := func(ctx context.Context, query string, args ...any) error {
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		if n == 0 {
			return fmt.Errorf("no rows from %s", query)
		}
		return rows.Err()
	}
	rawSummary := func(r reports.Range) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := scan(ctx, `SELECT currency, SUM(cost_cents) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ? GROUP BY currency`,
				in, r.Previous().From, r.To); err != nil {
				return err
			}
			return scan(ctx, `SELECT service, currency, SUM(cost_cents) AS total FROM cost_service_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
				GROUP BY service, currency ORDER BY total DESC LIMIT 20`, in, r.From, r.To)
		}
	}
	storeSummary := func(r reports.Range) func(context.Context) error {
		return func(ctx context.Context) error {
			sum, err := s.Summary(ctx, tenants, r)
			if err == nil && len(sum.Totals) != 2 {
				err = fmt.Errorf("summary in %d currencies", len(sum.Totals))
			}
			return err
		}
	}
	trends := func(r reports.Range) func(context.Context) error {
		return func(ctx context.Context) error {
			days, err := s.Trends(ctx, tenants, r)
			if err == nil && len(days) != 2*r.Days() {
				err = fmt.Errorf("%d trend records", len(days))
			}
			return err
		}
	}
	return []costWorkload{
		{name: "summary-30d", requests: costRequests, store: storeSummary(month), raw: rawSummary(month)},
		{name: "trends-30d", requests: costRequests, store: trends(month), raw: func(ctx context.Context) error {
			return scan(ctx, `SELECT day, currency, SUM(cost_cents) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ? GROUP BY day, currency`,
				in, month.From, month.To)
		}},
		{name: "by-tenant-30d", requests: costRequests, store: func(ctx context.Context) error {
			_, err := s.ByTenant(ctx, tenants, month)
			return err
		}, raw: func(ctx context.Context) error {
			return scan(ctx, `SELECT tenant_id, currency, SUM(cost_cents) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ? GROUP BY tenant_id, currency`,
				in, month.From, month.To)
		}},
		{name: "summary-365d", requests: costYearRequests, store: storeSummary(year), raw: rawSummary(year)},
		{name: "trends-365d", requests: costYearRequests, store: trends(year), raw: func(ctx context.Context) error {
			return scan(ctx, `SELECT day, currency, SUM(cost_cents) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ? GROUP BY day, currency`,
				in, year.From, year.To)
		}},
	}
}

type costTimes struct{ p50, p95, max time.Duration }

type costResult struct {
	name       string
	requests   int
	store, raw costTimes
}

func timeCostRead(b *testing.B, w costWorkload) costResult {
	ctx := context.Background()
	var st, raw []time.Duration
	for i := range w.requests + 10 {
		for _, v := range []struct {
			fn  func(context.Context) error
			out *[]time.Duration
		}{{w.store, &st}, {w.raw, &raw}} {
			start := time.Now()
			if err := v.fn(ctx); err != nil {
				b.Fatalf("%s: %v", w.name, err)
			}
			if i >= 10 {
				*v.out = append(*v.out, time.Since(start))
			}
		}
	}
	return costResult{name: w.name, requests: w.requests, store: percentiles(st), raw: percentiles(raw)}
}

// percentiles are nearest-rank, as the other benchmarks'.
func percentiles(d []time.Duration) costTimes {
	slices.Sort(d)
	return costTimes{p50: percentile(d, 0.5), p95: percentile(d, 0.95), max: d[len(d)-1]}
}

func printCostResults(dialectName string, rows []costResult) {
	fmt.Printf("\nCost reads on %s, %d tenants × 2 subscriptions × %d services × %d days (ms)\n",
		dialectName, costTenants, costServices, costDays)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "read\trequests\tstore p50\tstore p95\tstore max\traw SQL p50\traw SQL p95\traw SQL max\tp95 ratio\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2fx\t\n", r.name, r.requests, ms(r.store.p50), ms(r.store.p95), ms(r.store.max),
			ms(r.raw.p50), ms(r.raw.p95), ms(r.raw.max), float64(r.store.p95)/float64(r.raw.p95))
	}
	_ = tw.Flush()
}

func costTenantID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// costLedger opens the cached ledger of the dialect, building it first
// when it is missing or incomplete.
func costLedger(b *testing.B, d string) *bun.DB {
	ctx := context.Background()
	var db *bun.DB
	var err error
	if d == store.DialectSQLite {
		dir, cerr := os.UserCacheDir()
		if cerr != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "steward-bench")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		db, err = store.Open(ctx, "sqlite://"+filepath.Join(dir, "cost-ledger-"+costDataVersion+".db"), store.Options{})
	} else {
		db, err = openPostgresSchema(ctx, "bench_cost_"+costDataVersion)
	}
	if err != nil {
		b.Skipf("%s: %v", d, err)
	}
	b.Cleanup(func() { db.Close() })
	var loaded int
	if err := db.NewRaw("SELECT COUNT(*) FROM bench_cost_loaded").Scan(ctx, &loaded); err == nil && loaded == 1 {
		// A kept ledger takes the plugin's migrations added since.
		if _, err := store.Migrate(ctx, db, ledger.Migrations(), "plugin_cost_migrations"); err != nil {
			b.Fatal(err)
		}
		return db
	}
	start := time.Now()
	if err := loadCostLedger(ctx, db); err != nil {
		b.Fatalf("load the %s ledger: %v", d, err)
	}
	b.Logf("loaded the %s ledger in %s", d, time.Since(start).Round(time.Second))
	return db
}

func openPostgresSchema(ctx context.Context, schema string) (*bun.DB, error) {
	raw := os.Getenv("STEWARD_TEST_POSTGRES_URL")
	if raw == "" {
		raw = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	admin, err := store.Open(ctx, raw, store.Options{MaxOpenConns: 1})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS ?", bun.Ident(schema)); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, u.String(), store.Options{SearchPath: schema})
}

// loadCostLedger empties the cost tables, migrates them, writes the raw
// rows tenant by tenant with one INSERT … SELECT each, rebuilds each
// tenant's rollups with ledger.Store.Rollup, as the sync does, and marks
// the ledger complete.
func loadCostLedger(ctx context.Context, db *bun.DB) error {
	for _, t := range []string{"bench_cost_loaded", "cost_reservations", "cost_sync_state", "cost_tenant_daily", "cost_service_daily", "cost_daily", "plugin_cost_migrations", "plugin_cost_migrations_lock"} {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS ?", bun.Ident(t)); err != nil {
			return err
		}
	}
	if _, err := store.Migrate(ctx, db, ledger.Migrations(), "plugin_cost_migrations"); err != nil {
		return err
	}
	series, month := `WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 2),
		v(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM v WHERE n < ?),
		d(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM d WHERE n < ?)`,
		"CAST(strftime('%Y%m', d.n * 86400, 'unixepoch') AS INTEGER)"
	if db.Dialect().Name() == dialect.PG {
		series = `WITH s(n) AS (SELECT generate_series(1, 2)), v(n) AS (SELECT generate_series(1, ?)), d(n) AS (SELECT generate_series(?, ?))`
		month = "CAST(to_char(to_timestamp(d.n * 86400) AT TIME ZONE 'UTC', 'YYYYMM') AS INTEGER)"
	}
	first := costLastDay - costDays + 1
	led := &ledger.Store{DB: db}
	for t := 1; t <= costTenants; t++ {
		currency := "USD"
		if t%10 == 0 {
			currency = "EUR"
		}
		id := costTenantID(t)
		_, err := db.ExecContext(ctx, series+`
			INSERT INTO cost_daily (subscription_id, day, service, resource_group, currency, tenant_id, month, cost_cents)
			SELECT ? || '-sub-' || s.n, d.n, 'Service ' || v.n, 'rg', ?, ?, `+month+`, (? * 7919 + s.n * 104729 + v.n * 31 + d.n * 13) % 5000 + 100
			FROM s, v, d`, costServices, first, costLastDay, id, currency, id, t)
		if err != nil {
			return fmt.Errorf("tenant %d: %w", t, err)
		}
		if err := led.Rollup(ctx, id, first, costLastDay); err != nil {
			return err
		}
	}
	analyze := "ANALYZE"
	if db.Dialect().Name() == dialect.PG {
		analyze = "VACUUM ANALYZE"
	}
	for _, q := range []string{analyze, "CREATE TABLE bench_cost_loaded (done INTEGER)", "INSERT INTO bench_cost_loaded VALUES (1)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(q)[0], err)
		}
	}
	return nil
}
