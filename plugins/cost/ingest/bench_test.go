package ingest_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/testbin"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// BenchmarkCostIngest syncs a tenant-year (1 tenant × 2 subscriptions ×
// 40 services × 365 days = 29,200 cost rows) from the simulated cloud
// through the built cost plugin, run as a subprocess the way the host
// runs it, into SQLite and into PostgreSQL. It reports rows per second of
// the whole job (Cost Management pages over HTTPS, staging, the move into
// the ledger, rollups) and the plugin process's peak resident set
// (VmHWM), with its resident set before the first sync for comparison;
// the simulator runs in the benchmark's process, outside those figures.
// A first sync warms up (token, the simulator's cost index); each
// measured sync starts from an empty ledger, so it is a year's backfill.
//
// The plugin binary is $STEWARD_TEST_BIN/plugins/cost (make bench), or
// built here.
func BenchmarkCostIngest(b *testing.B) {
	binary := testbin.Plugin(b, "cost")
	w := tenantYear(time.Now().UTC())
	sim, idp := simtest.Start(b, w, cloudsim.Options{}, simtest.Client(clientID, clientSecret))
	arm.Register(sim, idp)
	cloudJSON, err := json.Marshal(cloudConfig(sim))
	if err != nil {
		b.Fatal(err)
	}
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			url := "sqlite://" + filepath.Join(b.TempDir(), "steward.db")
			if dialect == store.DialectPostgres {
				url = storetest.PostgresURL(b)
			}
			db, err := store.Open(ctx, url, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			h := plugintest.Start(b, binary, plugintest.Options{
				Config: json.RawMessage(`{"backfill_days": 365}`), DatabaseURL: url, Cloud: cloudJSON,
				Migrate: func(ctx context.Context, fsys fs.FS) error {
					_, err := store.Migrate(ctx, db, fsys, "cost_migrations")
					return err
				},
				Tenants: []sdk.Tenant{{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, IsActive: true}},
			})
			pid := testbin.ChildPID(b, binary)
			idle := testbin.ProcStatus(b, pid, "VmRSS")
			backfill := func() int64 {
				n, _, err := h.RunJob(ctx, "costs")
				if err != nil || n != 4*29200 {
					b.Fatalf("costs sync: %d records, %v; want 29,200 at each grain, actual and amortised", n, err)
				}
				return n
			}
			backfill()
			var rows int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				emptyLedger(b, db)
				b.StartTimer()
				rows += backfill()
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(testbin.ProcStatus(b, pid, "VmHWM")/(1<<20), "plugin-peak-rss-MB")
			b.ReportMetric(idle/(1<<20), "plugin-idle-rss-MB")
		})
	}
}

func emptyLedger(b *testing.B, db *bun.DB) {
	for _, table := range []string{"cost_daily", "cost_service_daily", "cost_tenant_daily", "cost_service_cumulative", "cost_tenant_cumulative", "cost_cumulative_extent", "cost_sync_state"} {
		if _, err := db.ExecContext(context.Background(), "DELETE FROM "+table); err != nil {
			b.Fatal(err)
		}
	}
}
