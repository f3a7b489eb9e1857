package inventory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/testbin"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
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
// SQLite and PostgreSQL through the built resources plugin, run as a
// subprocess the way the host runs it. It reports rows per second of the
// first sync (every resource created) and of a second (every resource
// seen again, none changed), the plugin process's peak resident set
// (VmHWM) and its resident set before the first sync; the simulator runs
// in the benchmark's process, outside those figures. Then it reports the
// p95 of inventory pages (100 rows and the exact total) over the synced
// rows, read from the benchmark's process: filtered by type and tag and
// sorted by last seen (query-p95-ms, the figure), filtered by tag
// alone and sorted by last seen, and filtered by text. Each page is read
// after the tenant's revision was raised, so from the database, then
// again, kept by the Store under that revision (the -cached figures).
//
// The plugin binary is $STEWARD_TEST_BIN/plugins/resources (make bench),
// or built here.
func BenchmarkInventorySync(b *testing.B) {
	n := benchResources(b)
	binary := testbin.Plugin(b, "resources")
	sim, idp := simtest.Start(b, bulkWorld(n), cloudsim.Options{}, simtest.Client(clientID, clientSecret))
	arm.Register(sim, idp)
	cloudJSON, err := json.Marshal(cloud.Config{
		Provider: cloud.ProviderSim, TenantID: contosoDir, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints:  cloud.Endpoints{Authority: sim.URLs[cloudsim.IdP], ResourceManager: sim.URLs[cloudsim.ARM], Graph: sim.URLs[cloudsim.Graph]},
		CAPEM:      sim.CAPEM,
		Retry:      cloud.Retry{MaxRetries: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second},
	})
	if err != nil {
		b.Fatal(err)
	}
	// The text filter matches anywhere in names and ARM ids, which no
	// index serves: each page reads every row, so it is sampled less.
	queries := []struct {
		metric  string
		samples int
		q       inventory.ListQuery
	}{
		{"query", 200, inventory.ListQuery{Type: "microsoft.compute/disks", TagKey: "env", TagValue: "prod", SortBy: "last_seen", Desc: true}},
		{"query-tag", 200, inventory.ListQuery{TagKey: "env", TagValue: "prod", SortBy: "last_seen", Desc: true}},
		{"query-text", 20, inventory.ListQuery{Text: "r-00123"}},
	}
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				url := "sqlite://" + filepath.Join(b.TempDir(), "steward.db")
				if dialect == store.DialectPostgres {
					url = storetest.PostgresURL(b)
				}
				db, err := store.Open(ctx, url, store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				h := plugintest.Start(b, binary, plugintest.Options{
					DatabaseURL: url, Cloud: cloudJSON, Tenants: []sdk.Tenant{contoso, fabrikam},
					Migrate: func(ctx context.Context, fsys fs.FS) error {
						_, err := store.Migrate(ctx, db, fsys, "resources_migrations")
						return err
					},
				})
				pid := testbin.ChildPID(b, binary)
				idle := testbin.ProcStatus(b, pid, "VmRSS")
				sync := func() time.Duration {
					began := time.Now()
					if got, _, err := h.RunJob(ctx, "inventory"); err != nil || got != int64(n) {
						b.Fatalf("inventory job: synced %d, %v; want %d", got, err, n)
					}
					return time.Since(began)
				}
				first := sync()
				second := sync()
				b.ReportMetric(float64(n)/first.Seconds(), "rows/s-first")
				b.ReportMetric(float64(n)/second.Seconds(), "rows/s-unchanged")
				b.ReportMetric(testbin.ProcStatus(b, pid, "VmHWM")/(1<<20), "plugin-peak-rss-MB")
				b.ReportMetric(idle/(1<<20), "plugin-idle-rss-MB")

				s := &inventory.Store{DB: db}
				measure := func(suffix string) {
					for _, m := range queries {
						q := m.q
						q.TenantIDs, q.Limit = []string{contoso.ID}, 100
						var took, kept []time.Duration
						for range m.samples {
							if err := revcache.Bump(ctx, db, inventory.RevisionTable, contoso.ID); err != nil {
								b.Fatal(err)
							}
							for _, d := range []*[]time.Duration{&took, &kept} {
								began := time.Now()
								if _, _, err := s.List(ctx, q); err != nil {
									b.Fatal(err)
								}
								*d = append(*d, time.Since(began))
							}
						}
						p95 := func(d []time.Duration) float64 {
							slices.Sort(d)
							return float64(d[len(d)*95/100].Microseconds()) / 1000
						}
						b.ReportMetric(p95(took), m.metric+suffix)
						b.ReportMetric(p95(kept), m.metric+"-cached"+suffix)
					}
				}
				if dialect != store.DialectPostgres {
					measure("-p95-ms")
					continue
				}
				// On PostgreSQL the queries are measured twice. Right after
				// the sync, analysed (without statistics the planner
				// guesses the tables' sizes) but not vacuumed: an
				// index-only scan still visits the table for every row.
				// Then vacuumed, as autovacuum leaves the tables soon after
				// a sync that inserted or rewrote many rows: the steady
				// state between syncs.
				for _, cmd := range []string{"ANALYZE", "VACUUM"} {
					for _, tbl := range []string{"resources_inventory", "resources_inventory_tags"} {
						if _, err := db.ExecContext(ctx, cmd+" "+tbl); err != nil {
							b.Fatal(err)
						}
					}
					if cmd == "ANALYZE" {
						measure("-fresh-p95-ms")
					}
				}
				measure("-p95-ms")
			}
		})
	}
}
