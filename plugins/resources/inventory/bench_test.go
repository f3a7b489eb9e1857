package inventory_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
)

// benchResources is how many resources BenchmarkInventorySync syncs:
// $STEWARD_BENCH_RESOURCES, or 200,000.
func benchResources(b *testing.B) int {
	if v := os.Getenv("STEWARD_BENCH_RESOURCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("STEWARD_BENCH_RESOURCES=%q", v)
		}
		return n
	}
	return 200_000
}

// bulkWorld spreads n resources of five types over Contoso's two
// subscriptions, in 50 resource groups and three regions, tagged and with
// properties of the size rules read.
func bulkWorld(n int) *world.World {
	w := inventoryWorld()
	types := []string{"Microsoft.Compute/disks", "Microsoft.Compute/virtualMachines", "Microsoft.Network/networkInterfaces",
		"Microsoft.Network/publicIPAddresses", "Microsoft.Storage/storageAccounts"}
	locations := []string{"eastus", "westeurope", "northeurope"}
	w.Resources = make([]world.Resource, 0, n)
	for i := range n {
		sub := subC1
		if i%2 == 1 {
			sub = subC2
		}
		w.Resources = append(w.Resources, res(sub, fmt.Sprintf("rg-%02d", i%50), types[i%len(types)], fmt.Sprintf("r-%07d", i), locations[i%len(locations)],
			map[string]string{"env": []string{"prod", "dev", "test"}[i%3], "owner": fmt.Sprintf("team-%d", i%20), "cost-center": fmt.Sprint(i % 7)},
			map[string]any{"provisioningState": "Succeeded", "diskState": []string{"Attached", "Unattached"}[i%2], "diskSizeGB": float64(int(32) << (i % 4))}))
	}
	return w
}

// BenchmarkInventorySync syncs a tenant of benchResources resources from
// the simulated cloud's Resource Graph (pages of 1,000 over HTTPS) into
// SQLite and PostgreSQL, in process, and reports rows per second of the
// first sync (every resource created) and of a second (every resource
// seen again, none changed), then the p95 of a filtered inventory page
// (type and tag filters, sorted by last seen, 100 rows and the total)
// over the synced rows.
func BenchmarkInventorySync(b *testing.B) {
	n := benchResources(b)
	w := bulkWorld(n)
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			for range b.N {
				f := start(b, dialect, w)
				began := time.Now()
				if got := f.mustRun(b); got != int64(n) {
					b.Fatalf("synced %d, want %d", got, n)
				}
				first := time.Since(began)
				f.clock.Advance(10 * time.Minute)
				began = time.Now()
				f.mustRun(b)
				second := time.Since(began)
				b.ReportMetric(float64(n)/first.Seconds(), "rows/s-first")
				b.ReportMetric(float64(n)/second.Seconds(), "rows/s-unchanged")

				q := inventory.ListQuery{TenantIDs: []string{contoso.ID}, Type: "microsoft.compute/disks", TagKey: "env", TagValue: "prod",
					SortBy: "last_seen", Desc: true, Limit: 100}
				// The query is measured in the steady state, once autovacuum
				// has analysed the freshly filled tables; without statistics
				// the planner guesses their sizes.
				if dialect == "postgres" {
					for _, tbl := range []string{"resources_inventory", "resources_inventory_tags"} {
						if _, err := f.store.DB.ExecContext(context.Background(), "ANALYZE "+tbl); err != nil {
							b.Fatal(err)
						}
					}
				}
				var took []time.Duration
				for range 200 {
					began = time.Now()
					if _, _, err := f.store.List(context.Background(), q); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(began))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "query-p95-ms")
			}
		})
	}
}
