package coverage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
)

// BenchmarkFindingsExport times the findings export through the plugin's
// handler over 100 tenants × 1,000 policy states (100,000 findings), as
// an admin of all of them, as CSV and as OCSF, and reports the size of
// the file. Read from one cursor, the findings are aggregated and sorted
// once; paged through a thousand at a time, the same export took 250 s on
// SQLite, each page aggregating and sorting them all again.
func BenchmarkFindingsExport(b *testing.B) {
	const tenants, perTenant, definitions = 100, 1000, 200
	byTenant := benchStates(b, tenants, perTenant, definitions)
	all := make([]string, 0, tenants)
	for t := range byTenant {
		all = append(all, t)
	}
	slices.Sort(all)
	principal := sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: all}
	ctx := context.Background()
	set := acmeSet(b)
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
				b.Fatal(err)
			}
			st := &states.Store{DB: db}
			for _, tenant := range all {
				put(b, st, tenant, byTenant[tenant])
			}
			mapper, err := mapping.New(ctx, set)
			if err != nil {
				b.Fatal(err)
			}
			h := (&sdk.Plugin{Routes: (&coverage.Service{Mapper: mapper, Store: st}).Routes()}).HTTPHandler()
			for _, format := range []string{"csv", "ocsf"} {
				b.Run(format, func(b *testing.B) {
					for range b.N {
						req := httptest.NewRequest(http.MethodGet, "/api/v1/compliance/findings/export?format="+format, nil)
						req = req.WithContext(sdk.WithRequestInfo(req.Context(), sdk.RequestInfo{Principal: principal}))
						w := httptest.NewRecorder()
						start := time.Now()
						h.ServeHTTP(w, req)
						if w.Code != http.StatusOK {
							b.Fatalf("%d %s", w.Code, w.Body)
						}
						b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms")
						b.ReportMetric(float64(w.Body.Len())/(1<<20), "MiB")
					}
				})
			}
		})
	}
}
