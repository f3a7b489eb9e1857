package reports

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// The ledger of BenchmarkFocusExport, one tenant's: focusBenchSubs
// subscriptions × focusBenchResources resources × 2 services ×
// focusBenchDays days, 144,000 resource rows, each resource with three
// tags.
const (
	focusBenchSubs      = 10
	focusBenchResources = 40
	focusBenchDays      = 180
)

// BenchmarkFocusExport times the FOCUS export of 144,000 rows, as CSV and
// as Parquet written to a response that discards them, beside the raw SQL
// read of the same rows (without their tags) from a cursor and the
// export's own query (with the tags) read without writing, on SQLite and
// PostgreSQL; the formats and the raw read are checked to hold every row
// first. It reports rows per second and how many times the raw read's
// time each variant takes.
func BenchmarkFocusExport(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, ledger.Migrations(), "cost_migrations"); err != nil {
				b.Fatal(err)
			}
			last := ledger.DayOf(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC))
			rng := Range{From: last - focusBenchDays + 1, To: last}
			rows := loadFocusBench(b, db, dialect, rng)
			h := &Handlers{Store: &Store{DB: db}}
			tenants, names := []string{"t-bench"}, map[string]string{"t-bench": "Bench"}
			req := httptest.NewRequest(http.MethodGet, "/api/v1/costs/focus", nil)
			raw := func() int {
				rs, err := db.QueryContext(ctx, `SELECT tenant_id, subscription_id, day, resource_id, service, currency,
					resource_group, cost_cents, amortized_cents FROM cost_resource_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
					ORDER BY tenant_id, subscription_id, day, resource_id, service, currency`, bun.List(tenants), rng.From, rng.To)
				if err != nil {
					b.Fatal(err)
				}
				defer rs.Close()
				n := 0
				var c FocusCost
				for rs.Next() {
					if err := rs.Scan(&c.TenantID, &c.SubscriptionID, &c.Day, &c.ResourceID, &c.Service, &c.Currency, &c.ResourceGroup,
						&c.Cost, &c.Amortized); err != nil {
						b.Fatal(err)
					}
					n++
				}
				if err := rs.Err(); err != nil {
					b.Fatal(err)
				}
				return n
			}
			export := func(out io.Writer, contentType string, newWriter func(io.Writer) (focusWriter, error)) {
				w := &benchResponse{header: http.Header{}, body: out}
				h.streamFocus(w, req, contentType, tenants, names, rng, newWriter)
				if w.status != 0 && w.status != http.StatusOK {
					b.Fatalf("%s: %d", contentType, w.status)
				}
			}
			var csvOut, parquetOut bytes.Buffer
			export(&csvOut, "text/csv", newCSVFocus)
			export(&parquetOut, ParquetType, newParquetFocus)
			records, err := csv.NewReader(&csvOut).ReadAll()
			if err != nil {
				b.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(parquetOut.Bytes()), int64(parquetOut.Len()))
			if err != nil {
				b.Fatal(err)
			}
			if n := raw(); n != rows || len(records)-1 != rows || f.NumRows() != int64(rows) {
				b.Fatalf("raw %d rows, csv %d, parquet %d; want %d", n, len(records)-1, f.NumRows(), rows)
			}
			var rawPerRow float64
			for _, v := range []struct {
				name string
				run  func()
			}{
				{"raw-sql", func() { raw() }},
				{"query", func() {
					if err := h.Store.EachFocusCost(ctx, tenants, rng, func(FocusCost) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}},
				{"csv", func() { export(io.Discard, "text/csv", newCSVFocus) }},
				{"parquet", func() { export(io.Discard, ParquetType, newParquetFocus) }},
			} {
				b.Run(v.name, func(b *testing.B) {
					b.ReportAllocs()
					start := time.Now()
					for b.Loop() {
						v.run()
					}
					perRow := float64(time.Since(start).Nanoseconds()) / float64(b.N*rows)
					b.ReportMetric(1e9/perRow, "rows/s")
					if v.name == "raw-sql" {
						rawPerRow = perRow
					} else if rawPerRow > 0 {
						b.ReportMetric(perRow/rawPerRow, "x-raw")
					}
				})
			}
		})
	}
}

// benchResponse is a response whose body goes to an io.Writer.
type benchResponse struct {
	header http.Header
	body   io.Writer
	status int
}

func (r *benchResponse) Header() http.Header         { return r.header }
func (r *benchResponse) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *benchResponse) WriteHeader(status int)      { r.status = status }

// loadFocusBench writes the benchmark's resource rows over rng and their
// tags, and returns how many rows it wrote.
func loadFocusBench(b *testing.B, db *bun.DB, dialect string, rng Range) int {
	b.Helper()
	ctx := context.Background()
	var tags []ledger.ResourceTag
	batch := make([]ledger.ResourceDay, 0, 4000)
	n := 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := db.NewInsert().Model(&batch).Exec(ctx); err != nil {
			b.Fatal(err)
		}
		n += len(batch)
		batch = batch[:0]
	}
	for s := range focusBenchSubs {
		sub := fmt.Sprintf("bench-%02d", s)
		for r := range focusBenchResources {
			group := fmt.Sprintf("rg-%d", r%4)
			id := fmt.Sprintf("/subscriptions/%s/resourcegroups/%s/providers/microsoft.compute/virtualmachines/vm-%03d", sub, group, r)
			tags = append(tags,
				ledger.ResourceTag{SubscriptionID: sub, ResourceID: id, Key: "env", Value: []string{"prod", "dev"}[r%2], TenantID: "t-bench"},
				ledger.ResourceTag{SubscriptionID: sub, ResourceID: id, Key: "cost-center", Value: fmt.Sprintf("CC-%d", r%7), TenantID: "t-bench"},
				ledger.ResourceTag{SubscriptionID: sub, ResourceID: id, Key: "owner", Value: fmt.Sprintf("team-%d", r%5), TenantID: "t-bench"})
			for d := rng.From; d <= rng.To; d++ {
				for i, service := range []string{"Virtual Machines", "Storage"} {
					cents := ledger.Amount((int(d)*31+r*17+s*7+i)%4999 + 1)
					batch = append(batch, ledger.ResourceDay{SubscriptionID: sub, Day: d, ResourceID: id, Service: service, Currency: "USD",
						TenantID: "t-bench", ResourceGroup: group, Month: d.Month(), Cost: cents, Amortized: cents})
					if len(batch) == cap(batch) {
						flush()
					}
				}
			}
		}
	}
	flush()
	if _, err := db.NewInsert().Model(&tags).Exec(ctx); err != nil {
		b.Fatal(err)
	}
	if dialect == store.DialectPostgres {
		for _, table := range []string{"cost_resource_daily", "cost_resource_tags"} {
			if _, err := db.ExecContext(ctx, "ANALYZE "+table); err != nil {
				b.Fatal(err)
			}
		}
	}
	return n
}
