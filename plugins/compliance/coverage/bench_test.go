package coverage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/frameworks/frameworkstest"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
)

// benchNames are display names of Azure built-in policy definitions.
var benchNames = []string{
	"Accounts with owner permissions on Azure resources should be MFA enabled",
	"Secure transfer to storage accounts should be enabled",
	"Key Vault secrets should have an expiration date",
	"Azure Backup should be enabled for Virtual Machines",
	"Network Watcher should be enabled",
	"Allowed locations",
	"Storage accounts should restrict network access",
	"Function apps should only be accessible over HTTPS",
	"Latest TLS version should be used in your API App",
	"Transparent Data Encryption on SQL databases should be enabled",
	"Auditing on SQL server should be enabled",
	"Resource logs in Key Vault should be enabled",
	"Microsoft Defender for Storage should be enabled",
	"Subnets should be associated with a Network Security Group",
	"System updates should be installed on your machines",
	"Endpoint protection should be installed on your machines",
	"Guest accounts with owner permissions on Azure resources should be removed",
	"Key vaults should have soft delete enabled",
	"Disk encryption should be applied on virtual machines",
	"Activity log should be retained for at least one year",
	"Private endpoint should be enabled for PostgreSQL servers",
	"Web Application Firewall (WAF) should be enabled for Application Gateway",
	"Audit usage of custom RBAC roles",
	"Require a tag on resource groups",
	"Deprecated accounts should be removed from your subscription",
}

// benchStates returns tenants × perTenant states over definitions distinct
// policy definitions: each tenant has perTenant/5 resources under five
// definitions each, a fifth of the states non-compliant. Half the
// definitions carry one to six group names, split over two assignments.
func benchStates(tb testing.TB, tenants, perTenant, definitions int) map[string][]states.State {
	r := rand.New(rand.NewPCG(11, 25))
	groups := frameworkstest.AzureGroupNames(tb)
	type def struct {
		id, name string
		groups   [2][]string
	}
	defs := make([]def, definitions)
	for i := range defs {
		defs[i] = def{id: fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/%08x-0000-4000-8000-000000000000", i),
			name: fmt.Sprintf("%s (%d)", benchNames[i%len(benchNames)], i)}
		if i%2 == 0 {
			for range 1 + r.IntN(6) {
				a := r.IntN(2)
				defs[i].groups[a] = append(defs[i].groups[a], groups[r.IntN(len(groups))])
			}
		}
	}
	at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	out := map[string][]states.State{}
	for t := range tenants {
		tenant := fmt.Sprintf("t-%03d", t)
		for res := range perTenant / 5 {
			rid := fmt.Sprintf("/subscriptions/%s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa%04d", tenant, res)
			for _, i := range r.Perm(definitions)[:5] {
				a := r.IntN(2)
				compliance := "Compliant"
				if r.IntN(5) == 0 {
					compliance = "NonCompliant"
				}
				out[tenant] = append(out[tenant], states.State{ResourceID: rid, ResourceType: "Microsoft.Storage/storageAccounts",
					PolicyAssignmentID: fmt.Sprintf("a%d", a), PolicyDefinitionID: defs[i].id, PolicyName: defs[i].name, Category: "General",
					GroupNames: defs[i].groups[a], ComplianceState: compliance, Severity: "Medium", EvaluatedAt: at})
			}
		}
	}
	return out
}

// BenchmarkCoverageStore times the framework routes through their handler
// (the plugin's HTTP handler, as the SDK serves it, with the JSON
// encoding) over 100 tenants × 1,000 policy states stored in the database,
// of 200 distinct definitions, as an admin of all 100 tenants:
//
//	detail-cold  the NIST CSF detail with include_policies and explain on a
//	             new Service with a prepared mapper that has not mapped the
//	             policy set: the aggregate queries (the definitions' counts
//	             and each resource's evidence), the Rego, the coverage
//	detail-warm  the same again: the tenants' revision is unchanged, so
//	             the definitions, their mapping and each control's
//	             resource counts are reused
//	list-warm    the framework list, warm
//	query        states.Store.DefinitionCounts alone: what a request reads
//	             again once a sync changed one of the tenants
func BenchmarkCoverageStore(b *testing.B) {
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
				list := byTenant[tenant]
				_, err := st.Replace(ctx, states.Target{TenantID: tenant, SubscriptionID: "sub-" + tenant, SyncedAt: time.Now()},
					func(emit func(states.State) error) error {
						for _, s := range list {
							if err := emit(s); err != nil {
								return err
							}
						}
						return nil
					})
				if err != nil {
					b.Fatal(err)
				}
			}
			if dialect == store.DialectPostgres {
				if _, err := db.ExecContext(ctx, "ANALYZE compliance_policy_states"); err != nil {
					b.Fatal(err)
				}
			}
			serve := func(h http.Handler, target string) {
				req := httptest.NewRequest(http.MethodGet, target, nil)
				req = req.WithContext(sdk.WithRequestInfo(req.Context(), sdk.RequestInfo{Principal: principal}))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", target, w.Code, w.Body)
				}
			}
			handler := func() http.Handler {
				mapper, err := mapping.New(ctx, set)
				if err != nil {
					b.Fatal(err)
				}
				svc := &coverage.Service{Mapper: mapper, Store: st}
				return (&sdk.Plugin{Routes: svc.Routes()}).HTTPHandler()
			}
			const detail = "/api/v1/compliance/frameworks/nist_csf?include_policies=true&explain=true"
			measure := func(b *testing.B, rounds int, fn func()) {
				took := make([]time.Duration, 0, rounds)
				for range rounds {
					start := time.Now()
					fn()
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				rank := func(p int) float64 { return float64(took[(len(took)*p+99)/100-1].Microseconds()) / 1000 }
				b.ReportMetric(rank(50), "p50-ms")
				b.ReportMetric(rank(95), "p95-ms")
			}
			b.Run("detail-cold", func(b *testing.B) {
				hs := make([]http.Handler, 10)
				for i := range hs {
					hs[i] = handler()
				}
				next := 0
				measure(b, len(hs), func() { serve(hs[next], detail); next++ })
			})
			h := handler()
			serve(h, detail)
			b.Run("detail-warm", func(b *testing.B) { measure(b, 200, func() { serve(h, detail) }) })
			b.Run("list-warm", func(b *testing.B) { measure(b, 200, func() { serve(h, "/api/v1/compliance/frameworks") }) })
			b.Run("query", func(b *testing.B) {
				measure(b, 200, func() {
					if _, err := st.DefinitionCounts(ctx, all); err != nil {
						b.Fatal(err)
					}
				})
			})
		})
	}
}
