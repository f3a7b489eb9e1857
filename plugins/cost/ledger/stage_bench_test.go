package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// BenchmarkStage compares the two ways of staging a subscription-year
// (40 services × 365 days = 14,600 rows) on PostgreSQL — COPY, which
// Replace uses there, and the multi-row inserts SQLite gets — and shows
// SQLite's for reference. Each Replace starts from an empty ledger, so it
// also moves every row; stage-rows/s isolates the staging, replace-rows/s
// is the whole call.
func BenchmarkStage(b *testing.B) {
	const services, days = 40, 365
	first := DayOf(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	stream := func(emit func(Cost) error) error {
		for d := Day(0); d < days; d++ {
			for s := 0; s < services; s++ {
				if err := emit(Cost{Day: first + d, Service: fmt.Sprintf("Service %02d", s), ResourceGroup: fmt.Sprintf("rg-%d", s%4),
					Currency: "USD", Cost: Amount(int(d)*100 + s)}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	w := Window{TenantID: "t1", SubscriptionID: "s1", From: first, To: first + days - 1}
	for _, c := range []struct {
		name, dialect string
		insert        bool
	}{
		{"postgres-copy", store.DialectPostgres, false},
		{"postgres-insert", store.DialectPostgres, true},
		{"sqlite-insert", store.DialectSQLite, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, c.dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "cost_migrations"); err != nil {
				b.Fatal(err)
			}
			s := &Store{DB: db, stageByInsert: c.insert}
			var staging, rows time.Duration
			var n int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, table := range []string{"cost_daily", "cost_service_daily", "cost_tenant_daily", "cost_service_cumulative", "cost_tenant_cumulative", "cost_cumulative_extent", "cost_sync_state"} {
					if _, err := db.ExecContext(ctx, "DELETE FROM "+table); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				var staged time.Time
				got, err := s.Replace(ctx, w, start, Streams{Costs: func(emit func(Cost) error) error {
					err := stream(emit)
					staged = time.Now()
					return err
				}})
				if err != nil || got.Rows != services*days {
					b.Fatalf("%+v %v", got, err)
				}
				// The last batch is staged after the stream returns; at
				// DefaultFlushRows it is a sixth of the rows, so staging
				// is measured up to the last full batch.
				staging += staged.Sub(start)
				rows += time.Since(start)
				n += got.Rows
			}
			full := float64(n) * float64(DefaultFlushRows*(services*days/DefaultFlushRows)) / float64(services*days)
			b.ReportMetric(full/staging.Seconds(), "stage-rows/s")
			b.ReportMetric(float64(n)/rows.Seconds(), "replace-rows/s")
		})
	}
}
