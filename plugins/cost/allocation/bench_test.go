package allocation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// BenchmarkChargeback allocates a month of two tenants' costs by 5,000
// resources (150,000 days by resource), half of them tagged, by a rule of
// each kind: the three reads and the allocation of one chargeback.
func BenchmarkChargeback(b *testing.B) {
	const resources, days = 5_000, 30
	var rows []ledger.ResourceDay
	var tags []ledger.ResourceTag
	for i := range resources {
		tenant, sub := "t1", fmt.Sprintf("s%d", i%4)
		if i%4 >= 2 {
			tenant = "t2"
		}
		id := fmt.Sprintf("/subscriptions/%s/resourcegroups/rg-%d/providers/microsoft.compute/disks/disk-%05d", sub, i%20, i)
		for d := range days {
			rows = append(rows, ledger.ResourceDay{SubscriptionID: sub, Day: nov1 + ledger.Day(d), ResourceID: id, Service: "Storage", Currency: "USD",
				TenantID: tenant, ResourceGroup: fmt.Sprintf("rg-%d", i%20), Month: nov1.Month(), Cost: ledger.Amount(100 + i), Amortized: ledger.Amount(100 + i)})
		}
		if i%2 == 0 {
			tags = append(tags, ledger.ResourceTag{SubscriptionID: sub, ResourceID: id, Key: "costcenter", Value: fmt.Sprintf("cc-%d", i%7), TenantID: tenant})
		}
	}
	rules := []allocation.Rule{
		{Kind: allocation.KindResourceGroup, SubscriptionID: "s0", ResourceGroup: "rg-0", Shared: &allocation.Shared{Split: allocation.SplitProportional,
			CostCentres: []allocation.Share{{Name: "cc-1"}, {Name: "cc-2"}, {Name: "cc-3"}}}},
		{Kind: allocation.KindTag, TagKey: "costcenter", TagValue: "cc-0", CostCentre: "Platform"},
		{Kind: allocation.KindCostCentreTag, TagKey: "costcenter"},
		{Kind: allocation.KindSubscription, SubscriptionID: "s3", CostCentre: "Data"},
	}
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, ledger.Migrations(), "cost_migrations"); err != nil {
				b.Fatal(err)
			}
			for start := 0; start < len(rows); start += 1000 {
				batch := rows[start:min(start+1000, len(rows))]
				if _, err := db.NewInsert().Model(&batch).Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := db.NewInsert().Model(&tags).Exec(ctx); err != nil {
				b.Fatal(err)
			}
			s := &allocation.Store{DB: db}
			if err := s.Replace(ctx, brand, rules, "admin", time.Now()); err != nil {
				b.Fatal(err)
			}
			rng := reports.Range{From: nov1, To: nov1 + days - 1}
			for b.Loop() {
				cb, err := s.Chargeback(ctx, brand, []string{"t1", "t2"}, rng, reports.Actual)
				if err != nil || len(cb.CostCentres) == 0 {
					b.Fatalf("%+v, %v", cb, err)
				}
			}
		})
	}
}
