package defender_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/defender"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
)

// BenchmarkFindings measures the findings route over both sources at
// scale: 100 tenants, each with 1000 policy states (200 resources under
// five of 200 definitions, a fifth non-compliant) and 200 assessments
// (the same resources under one of 20 definitions, a third unhealthy, a
// tenth not applicable), every definition with stored guidance; the
// first page by severity, each source's, and one state's.
func BenchmarkFindings(b *testing.B) {
	const tenants, resources, definitions = 100, 200, 200
	ctx := context.Background()
	var all []string
	for t := range tenants {
		all = append(all, fmt.Sprintf("t-%03d", t))
	}
	principal := sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: all}
	def := func(i int) string {
		return fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/d%03d", i%definitions)
	}
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, store.MergeMigrations(states.Migrations(), defender.Migrations()), "compliance_migrations"); err != nil {
				b.Fatal(err)
			}
			st, ds := &states.Store{DB: db}, &defender.Store{DB: db}
			guidance := make([]states.Guidance, definitions)
			for i := range guidance {
				guidance[i] = states.Guidance{PolicyDefinitionID: def(i), DisplayName: fmt.Sprintf("Policy %d", i), Remediation: fmt.Sprintf("Fix %d.", i)}
			}
			if err := st.PutGuidance(ctx, guidance, time.Now()); err != nil {
				b.Fatal(err)
			}
			for t, tenant := range all {
				sub := "sub-" + tenant
				var list []states.State
				snap := defender.Snapshot{TenantID: tenant, SubscriptionID: sub, SyncedAt: time.Now()}
				for r := range resources {
					res := fmt.Sprintf("/subscriptions/%s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa%03d", sub, r)
					for k := range 5 {
						compliance := "Compliant"
						if (r+k+t)%5 == 0 {
							compliance = "NonCompliant"
						}
						list = append(list, states.State{ResourceID: res, ResourceType: "Microsoft.Storage/storageAccounts", PolicyAssignmentID: "a",
							PolicyDefinitionID: def(r + 40*k), PolicyDefinitionName: "d", PolicyName: "Policy", Category: "Storage",
							ComplianceState: compliance, Severity: []string{"High", "Medium", "Low"}[k%3], EvaluatedAt: time.Now()})
					}
					status := []string{"Healthy", "Unhealthy", "Healthy"}[r%3]
					if r%10 == 0 {
						status = "NotApplicable"
					}
					snap.Assessments = append(snap.Assessments, defender.Assessment{AssessmentID: res + "/providers/Microsoft.Security/assessments/x",
						AssessmentName: "x", ResourceID: res, DisplayName: "Assessment", Status: status, Severity: "High", PolicyDefinitionID: def(r % 20),
						Remediation: "Fix it.", Category: "Data"})
				}
				put(b, st, tenant, sub, list)
				if err := ds.Replace(ctx, snap); err != nil {
					b.Fatal(err)
				}
			}
			if dialect == store.DialectPostgres {
				if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
					b.Fatal(err)
				}
			}
			set, err := frameworks.WithDir("")
			if err != nil {
				b.Fatal(err)
			}
			mapper, err := mapping.New(ctx, set)
			if err != nil {
				b.Fatal(err)
			}
			svc := &coverage.Service{Mapper: mapper, Store: st, Sources: []coverage.Source{ds.CoverageSource()}}
			h := (&sdk.Plugin{Routes: svc.Routes()}).HTTPHandler()
			for name, target := range map[string]string{
				"all":           "/api/v1/compliance/findings",
				"defender":      "/api/v1/compliance/findings?source=defender",
				"policy":        "/api/v1/compliance/findings?source=policy",
				"non-compliant": "/api/v1/compliance/findings?state=non_compliant&sort_by=resource",
			} {
				b.Run(name, func(b *testing.B) {
					took := make([]time.Duration, 0, 20)
					for range 20 {
						req := httptest.NewRequest(http.MethodGet, target, nil)
						req = req.WithContext(sdk.WithRequestInfo(req.Context(), sdk.RequestInfo{Principal: principal}))
						w := httptest.NewRecorder()
						start := time.Now()
						h.ServeHTTP(w, req)
						took = append(took, time.Since(start))
						if w.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", target, w.Code, w.Body)
						}
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[9].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(took[18].Microseconds())/1000, "p95-ms")
				})
			}
		})
	}
}

// put replaces the states of the tenant's subscription with list.
func put(tb testing.TB, st *states.Store, tenant, sub string, list []states.State) {
	tb.Helper()
	_, err := st.Replace(context.Background(), states.Target{TenantID: tenant, SubscriptionID: sub, SyncedAt: time.Now()},
		func(emit func(states.State) error) error {
			for _, s := range list {
				if err := emit(s); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		tb.Fatal(err)
	}
}
