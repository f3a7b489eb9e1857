package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// BenchmarkReplaceResourceCosts replaces a subscription's costs of 10,000
// resources with the next day's, as the daily resource-cost sync does in
// its steady state: every stored row deleted and written again, in one
// transaction.
func BenchmarkReplaceResourceCosts(b *testing.B) {
	const resources = 10_000
	rows := make([]ResourceCost, resources)
	for i := range rows {
		rows[i] = ResourceCost{ResourceID: fmt.Sprintf("/subscriptions/s1/resourcegroups/rg-%d/providers/microsoft.compute/disks/disk-%05d", i%20, i),
			Currency: "USD", Cost: Amount(100 + i)}
	}
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "cost_migrations"); err != nil {
				b.Fatal(err)
			}
			s := &Store{DB: db}
			p := ResourcePeriod{SubscriptionID: "s1", TenantID: "t1", From: 20000, To: 20029, SyncedAt: time.Now()}
			if _, err := s.ReplaceResourceCosts(ctx, p, rows); err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				p.From, p.To = p.From+1, p.To+1
				got, err := s.ReplaceResourceCosts(ctx, p, rows)
				if err != nil || got != resources {
					b.Fatalf("%d rows, %v", got, err)
				}
				n += got
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
