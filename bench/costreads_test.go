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

	"github.com/stewardhq/steward/bench/stat"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/cost/exchange"
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
	// costDataVersion names the cached ledger; change it with the data or
	// the way it is rolled up.
	costDataVersion = "v3"
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
// by-tenant reads through its store functions (reports.Store, a new one
// for every request, so each read misses the store's revision cache and
// runs its SQL; a repeat on one store is answered from memory after a
// lookup of the revision) against the
// same figures computed by the plainest SQL on the daily rollups and, for
// the summary, by the store's own SQL on the running totals run bare, on
// SQLite and PostgreSQL, for an admin who sees all 100 tenants. The
// variants must give the same figures; they alternate request by request,
// so drift of the machine lands on each.
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
			converter := costRates(b, db)
			fresh := func() *reports.Store { return &reports.Store{DB: db, Exchange: converter} }
			var rows []costResult
			for _, w := range costWorkloads(fresh, db, tenants) {
				r := timeCostRead(b, w)
				rows = append(rows, r)
				b.ReportMetric(ms(r.store.p95), w.name+"-p95-ms")
				b.ReportMetric(ms(r.raw.p95), w.name+"-raw-p95-ms")
				if w.running != nil {
					b.ReportMetric(ms(r.running.p95), w.name+"-running-p95-ms")
				}
			}
			printCostResults(d, rows)
		})
	}
}

// costWorkload is one read: through the store, as the plainest SQL on the
// daily rollups and, for the summary, as the store's own SQL on the
// running totals without the store around it. Each returns its figures
// rendered alike, so the variants are checked to agree before they are
// timed.
type costWorkload struct {
	name     string
	requests int
	store    func(context.Context) (string, error)
	raw      func(context.Context) (string, error)
	// running is nil for the reads that do not use the running totals.
	running func(context.Context) (string, error)
}

func costWorkloads(fresh func() *reports.Store, db *bun.DB, tenants []string) []costWorkload {
	month := reports.Range{From: costLastDay - 29, To: costLastDay}
	year := reports.Range{From: costLastDay - 364, To: costLastDay}
	in := bun.List(tenants)
	// rows reads every row of a query, rendering each as its columns.
	rows := func(ctx context.Context, b *strings.Builder, query string, args ...any) error {
		rs, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		cols, err := rs.Columns()
		if err != nil {
			return err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rs.Next() {
			if err := rs.Scan(ptrs...); err != nil {
				return err
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprint(b, v, " ")
			}
			b.WriteByte('\n')
			n++
		}
		if n == 0 {
			return fmt.Errorf("no rows from %s", query)
		}
		return rs.Err()
	}
	render := func(ctx context.Context, parts ...func(context.Context, *strings.Builder) error) (string, error) {
		var b strings.Builder
		for _, p := range parts {
			if err := p(ctx, &b); err != nil {
				return "", err
			}
		}
		return b.String(), nil
	}
	query := func(q string, args ...any) func(context.Context, *strings.Builder) error {
		return func(ctx context.Context, b *strings.Builder) error { return rows(ctx, b, q, args...) }
	}

	// The summary's figures: per currency the total, the previous range's
	// total and the tenants with costs; the top ten services of each.
	storeSummary := func(r reports.Range) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			sum, err := fresh().Summary(ctx, tenants, r, reports.Actual)
			if err != nil {
				return "", err
			}
			if len(sum.Totals) != 2 {
				return "", fmt.Errorf("summary in %d currencies", len(sum.Totals))
			}
			var b strings.Builder
			for _, t := range sum.Totals {
				fmt.Fprintf(&b, "%s %d %d %d \n", t.Currency, int64(t.TotalCost), int64(t.PreviousTotalCost), t.TenantsWithCosts)
			}
			for _, sv := range sum.TopServices {
				fmt.Fprintf(&b, "%s %s %d \n", sv.Service, sv.Currency, int64(sv.TotalCost))
			}
			return b.String(), nil
		}
	}
	rawSummary := func(r reports.Range) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			return render(ctx,
				query(`SELECT currency, SUM(CASE WHEN day >= ? THEN cost_cents ELSE 0 END), SUM(CASE WHEN day < ? THEN cost_cents ELSE 0 END),
					COUNT(DISTINCT CASE WHEN day >= ? THEN tenant_id END)
					FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
					GROUP BY currency HAVING COUNT(CASE WHEN day >= ? THEN 1 END) > 0 ORDER BY currency`,
					r.From, r.From, r.From, in, r.Previous().From, r.To, r.From),
				query(`SELECT service, currency, total FROM (
					SELECT service, currency, SUM(cost_cents) AS total, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY SUM(cost_cents) DESC, service) AS pos
					FROM cost_service_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ? GROUP BY service, currency) ranked
					WHERE pos <= 10 ORDER BY currency, total DESC, service`, in, r.From, r.To))
		}
	}
	runningSummary := func(r reports.Range) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			return render(ctx,
				query(`WITH bounds AS (SELECT tenant_id, CASE WHEN last_day < ? THEN last_day ELSE ? END AS hi,
						CASE WHEN last_day < ? THEN last_day ELSE ? END AS mid
						FROM cost_cumulative_extent WHERE tenant_id IN (?) AND last_day >= ?)
					SELECT currency, SUM(total), SUM(previous), SUM(CASE WHEN days > 0 THEN 1 ELSE 0 END)
					FROM (SELECT tenant_id, currency, SUM(cur) AS total, SUM(prev) AS previous, SUM(days) AS days FROM (
						SELECT c.tenant_id, c.currency, c.cost_cents AS cur, 0 AS prev, c.days FROM bounds b
							JOIN cost_tenant_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.hi
						UNION ALL SELECT c.tenant_id, c.currency, -c.cost_cents, c.cost_cents, -c.days FROM bounds b
							JOIN cost_tenant_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.mid
						UNION ALL SELECT c.tenant_id, c.currency, 0, -c.cost_cents, 0 FROM bounds b
							JOIN cost_tenant_cumulative c ON c.tenant_id = b.tenant_id AND c.day = ?) probes
						GROUP BY tenant_id, currency) per_tenant
					GROUP BY currency HAVING SUM(days) > 0 ORDER BY currency`,
					r.To, r.To, r.From-1, r.From-1, in, r.Previous().From, r.Previous().From-1),
				query(`WITH bounds AS (SELECT tenant_id, CASE WHEN last_day < ? THEN last_day ELSE ? END AS hi
						FROM cost_cumulative_extent WHERE tenant_id IN (?) AND last_day >= ?)
					SELECT service, currency, total FROM (
						SELECT service, currency, SUM(cost_cents) AS total, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY SUM(cost_cents) DESC, service) AS pos
						FROM (SELECT c.service, c.currency, c.cost_cents, c.days FROM bounds b
								JOIN cost_service_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.hi
							UNION ALL SELECT c.service, c.currency, -c.cost_cents, -c.days FROM bounds b
								JOIN cost_service_cumulative c ON c.tenant_id = b.tenant_id AND c.day = ?) probes
						GROUP BY service, currency HAVING SUM(days) > 0) ranked
					WHERE pos <= 10 ORDER BY currency, total DESC, service`, r.To, r.To, in, r.From, r.From-1))
		}
	}
	storeTrends := func(r reports.Range) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			days, err := fresh().Trends(ctx, tenants, r, reports.Actual)
			if err != nil {
				return "", err
			}
			if len(days) != 2*r.Days() {
				return "", fmt.Errorf("%d trend records", len(days))
			}
			var b strings.Builder
			for _, d := range days {
				fmt.Fprintf(&b, "%d %s %d \n", d.Date, *d.Currency, int64(d.TotalCost))
			}
			return b.String(), nil
		}
	}
	rawTrends := func(r reports.Range) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			return render(ctx, query(`SELECT day, currency, SUM(cost_cents) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
				GROUP BY day, currency ORDER BY day, currency`, in, r.From, r.To))
		}
	}
	return []costWorkload{
		{name: "summary-30d", requests: costRequests, store: storeSummary(month), raw: rawSummary(month), running: runningSummary(month)},
		{name: "trends-30d", requests: costRequests, store: storeTrends(month), raw: rawTrends(month)},
		{name: "by-tenant-30d", requests: costRequests, store: func(ctx context.Context) (string, error) {
			totals, err := fresh().ByTenant(ctx, tenants, month, reports.Actual)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			for _, t := range totals {
				fmt.Fprintf(&b, "%s %s %d %d \n", t.TenantID, t.Currency, int64(t.Total), t.Days)
			}
			return b.String(), nil
		}, raw: func(ctx context.Context) (string, error) {
			return render(ctx, query(`SELECT tenant_id, currency, SUM(cost_cents) AS total, COUNT(*) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
				GROUP BY tenant_id, currency ORDER BY currency, total DESC, tenant_id`, in, month.From, month.To))
		}},
		{name: "summary-365d", requests: costYearRequests, store: storeSummary(year), raw: rawSummary(year), running: runningSummary(year)},
		{name: "trends-365d", requests: costYearRequests, store: storeTrends(year), raw: rawTrends(year)},
	}
}

type costTimes struct{ p50, p95, max time.Duration }

type costResult struct {
	name     string
	requests int
	store    costTimes
	raw      costTimes
	// running is zero for a read without that variant.
	running costTimes
}

// timeCostRead checks that the variants of a read give the same figures,
// then times them, alternating request by request after ten warm-up
// rounds.
func timeCostRead(b *testing.B, w costWorkload) costResult {
	ctx := context.Background()
	variants := []func(context.Context) (string, error){w.store, w.raw}
	if w.running != nil {
		variants = append(variants, w.running)
	}
	times := make([][]time.Duration, len(variants))
	for i := range w.requests + 10 {
		var first string
		for v, fn := range variants {
			start := time.Now()
			got, err := fn(ctx)
			if err != nil {
				b.Fatalf("%s: %v", w.name, err)
			}
			if i >= 10 {
				times[v] = append(times[v], time.Since(start))
			}
			if i == 0 && v == 0 {
				first = got
			} else if i == 0 && got != first {
				b.Fatalf("%s: variant %d computes\n%s\nthe store\n%s", w.name, v, got, first)
			}
		}
	}
	r := costResult{name: w.name, requests: w.requests, store: percentiles(times[0]), raw: percentiles(times[1])}
	if w.running != nil {
		r.running = percentiles(times[2])
	}
	return r
}

// percentiles are nearest-rank, as the other benchmarks'.
func percentiles(d []time.Duration) costTimes {
	slices.Sort(d)
	return costTimes{p50: stat.Percentile(d, 0.5), p95: stat.Percentile(d, 0.95), max: d[len(d)-1]}
}

func printCostResults(dialectName string, rows []costResult) {
	fmt.Printf("\nCost reads on %s, %d tenants × 2 subscriptions × %d services × %d days (ms; raw: plain SQL on the daily rollups; "+
		"running: the store's SQL on the running totals, without the store)\n", dialectName, costTenants, costServices, costDays)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "read\trequests\tstore p50\tstore p95\tstore max\traw p50\traw p95\traw max\tstore/raw p95\trunning p50\trunning p95\tstore/running p95\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2fx\t", r.name, r.requests, ms(r.store.p50), ms(r.store.p95), ms(r.store.max),
			ms(r.raw.p50), ms(r.raw.p95), ms(r.raw.max), float64(r.store.p95)/float64(r.raw.p95))
		if r.running.p95 > 0 {
			fmt.Fprintf(tw, "%.2f\t%.2f\t%.2fx\t\n", ms(r.running.p50), ms(r.running.p95), float64(r.store.p95)/float64(r.running.p95))
		} else {
			fmt.Fprint(tw, "\t\t\t\n")
		}
	}
	_ = tw.Flush()
}

// costRates writes a EUR rate against USD, the reporting currency, for
// every weekday of the ledger's year (a weekend takes Friday's), and
// returns the converter the reads convert their EUR costs with, as the
// plugin's does.
func costRates(b *testing.B, db *bun.DB) *exchange.Converter {
	rates := &exchange.Store{DB: db}
	var quotes []exchange.Quote
	for d := costLastDay - costDays + 1; d <= costLastDay; d++ {
		if wd := d.Time().Weekday(); wd == time.Saturday || wd == time.Sunday {
			continue
		}
		rate, err := exchange.ParseRate(fmt.Sprintf("0.9%03d", int(d)%1000))
		if err != nil {
			b.Fatal(err)
		}
		quotes = append(quotes, exchange.Quote{Day: d, Base: "USD", Quote: "EUR", Rate: rate})
	}
	if err := rates.Upsert(context.Background(), quotes, "bench", time.Now()); err != nil {
		b.Fatal(err)
	}
	return &exchange.Converter{Store: rates, Currency: "USD", Source: "bench"}
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
	for _, t := range []string{"bench_cost_loaded", "cost_reservations", "cost_sync_state", "cost_cumulative_extent", "cost_tenant_cumulative", "cost_service_cumulative",
		"cost_tenant_daily", "cost_service_daily", "cost_daily", "plugin_cost_migrations", "plugin_cost_migrations_lock"} {
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
