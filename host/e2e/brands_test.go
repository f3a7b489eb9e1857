package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// brandsWorld: Retail Prod and Retail Dev are of brand Retail (named in
// two cases), Foods of brand Foods; each tenant has one subscription with
// a day of costs (Retail 100.00 + 10.50, Foods 1,000.00 USD) and one
// policy state (Retail Prod's non-compliant).
func brandsWorld(t *testing.T) string {
	subRP, subRD, subF := "aaaaaaaa-0000-0000-0000-0000000000a1", "aaaaaaaa-0000-0000-0000-0000000000a2", "ffffffff-0000-0000-0000-0000000000f1"
	day := time.Now().UTC().AddDate(0, 0, -2).Format(world.DateLayout)
	cost := func(sub string, amount float64) world.Cost {
		return world.Cost{SubscriptionID: sub, Date: day, Service: "Storage", ResourceGroup: "rg-data", Cost: amount, Currency: "USD"}
	}
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Retail Prod", Brand: "Retail", DirectoryTenantID: "33333333-3333-3333-3333-333333333333", AccessGroups: []string{"grp-retail-prod"},
				Subscriptions: []world.Subscription{{ID: subRP, Name: "retail prod"}}, Delegated: true},
			{Name: "Retail Dev", Brand: "RETAIL", DirectoryTenantID: "44444444-4444-4444-4444-444444444444", AccessGroups: []string{"grp-retail-dev"},
				Subscriptions: []world.Subscription{{ID: subRD, Name: "retail dev"}}, Delegated: true},
			{Name: "Foods", Brand: "Foods", DirectoryTenantID: "55555555-5555-5555-5555-555555555555", AccessGroups: []string{"grp-foods"},
				Subscriptions: []world.Subscription{{ID: subF, Name: "foods"}}, Delegated: true},
		},
		Costs: []world.Cost{cost(subRP, 100), cost(subRD, 10.5), cost(subF, 1000)},
		PolicyStates: []world.PolicyState{
			policyState(subRP, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/rp", "NonCompliant"),
			policyState(subRD, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/rd", "Compliant"),
			policyState(subF, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/f", "Compliant"),
		},
	})
}

// TestBrandScope: a development host registers the world's brands with
// its tenants; brand_id narrows the cost summary, the cost analysis and
// the compliance summary to the brand's tenants the caller may see —
// each answer the same as the one naming those tenants — on both
// databases; a tenant outside the brand is a 403, a brand the caller
// cannot see (a user of another tenant's) or that does not exist a 404,
// a malformed one a 422; and the OpenAPI document declares brand_id.
func TestBrandScope(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testBrandScope(t, dialect) })
	}
}

func testBrandScope(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: costPlugins("") + compliancePlugins(""), env: map[string]string{
		"STEWARD_SIM_WORLD": brandsWorld(t), "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	ids := h.tenantIDs(t, admin)
	rp, rd, foods := ids["Retail Prod"], ids["Retail Dev"], ids["Foods"]
	waitStartupSync(t, h, admin, "costs")
	waitStartupSync(t, h, admin, "compliance")

	var brands []tenancy.Brand
	if r := h.get("/api/v1/brands", admin); r.status != http.StatusOK {
		t.Fatalf("brands: %d %s", r.status, r.body)
	} else {
		r.json(t, &brands)
	}
	byName := map[string]tenancy.Brand{}
	for _, b := range brands {
		byName[b.Name] = b
	}
	retail, foodsBrand := byName["Retail"], byName["Foods"]
	if len(brands) != 2 || !slices.Equal(retail.TenantIDs, []string{rd, rp}) || !slices.Equal(foodsBrand.TenantIDs, []string{foods}) {
		t.Fatalf("the world's brands registered as %+v (tenants %v)", brands, ids)
	}

	user := func(email, group string) string {
		u := tenancy.User{DirectoryTenantID: "brands-directory", Subject: "oid-" + email, Email: email, Name: email, Groups: []string{group}}
		if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
			t.Fatal(err)
		}
		return h.tokenFor(u)
	}
	prodUser, foodsUser := user("prod@retail.example", "grp-retail-prod"), user("cook@foods.example", "grp-foods")

	// body reads an answer, failing unless it is 200.
	body := func(path, token string) string {
		t.Helper()
		r := h.get(path, token)
		if r.status != http.StatusOK {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
		return string(r.body)
	}
	withBrand := func(path, brand string) string {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return path + sep + "brand_id=" + url.QueryEscape(brand)
	}
	withTenants := func(path string, tenants ...string) string {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return path + sep + "tenant_ids=" + url.QueryEscape(strings.Join(tenants, ","))
	}
	now := time.Now().UTC()
	reads := []string{"/api/v1/costs/summary?period_days=7", "/api/v1/costs/analysis?group_by=tenant", "/api/v1/compliance/summary",
		"/api/v1/costs/focus?start_date=" + now.AddDate(0, 0, -6).Format(time.DateOnly) + "&end_date=" + now.Format(time.DateOnly)}

	t.Run("a brand reads as its tenants", func(t *testing.T) {
		for _, path := range reads {
			got := body(withBrand(path, retail.ID), admin)
			if want := body(withTenants(path, rd, rp), admin); got != want {
				t.Errorf("%s of brand Retail:\n%s\nwant that of its tenants:\n%s", path, got, want)
			}
			if all := body(path, admin); got == all {
				t.Errorf("%s of brand Retail reads as every tenant: %s", path, got)
			}
			// Within the brand, tenant_ids narrows further.
			if got, want := body(withTenants(withBrand(path, retail.ID), rp), admin), body(withTenants(path, rp), admin); got != want {
				t.Errorf("%s of Retail Prod within brand Retail:\n%s\nwant:\n%s", path, got, want)
			}
		}
		var sum struct {
			TenantCount int             `json:"tenant_count"`
			TotalCost   json.RawMessage `json:"total_cost"`
		}
		h.get(withBrand(reads[0], retail.ID), admin).json(t, &sum)
		if sum.TenantCount != 2 || string(sum.TotalCost) != "110.50" {
			t.Errorf("brand Retail's cost summary: %+v %s", sum, sum.TotalCost)
		}
		var compliance struct {
			TenantCount  int `json:"tenant_count"`
			NonCompliant int `json:"non_compliant_resources"`
			Compliant    int `json:"compliant_resources"`
		}
		h.get(withBrand(reads[2], retail.ID), admin).json(t, &compliance)
		if compliance.TenantCount != 2 || compliance.NonCompliant != 1 || compliance.Compliant != 1 {
			t.Errorf("brand Retail's compliance summary: %+v", compliance)
		}
	})

	t.Run("a brand outside the caller's tenants", func(t *testing.T) {
		for _, path := range reads {
			// A tenant outside the brand is refused as one outside the
			// caller's scope is, without naming it.
			if r := h.get(withTenants(withBrand(path, retail.ID), foods), admin); r.status != http.StatusForbidden || strings.Contains(string(r.body), foods) {
				t.Errorf("%s, brand Retail with Foods' tenant: %d %s", path, r.status, r.body)
			}
			// A user of Foods cannot see brand Retail: a 404, as for a
			// brand that does not exist, and nothing of it.
			for what, token := range map[string]string{"Foods' user": foodsUser, "admin": admin} {
				brand := retail.ID
				if token == admin {
					brand = "00000000-0000-4000-8000-00000000b0b0"
				}
				if r := h.get(withBrand(path, brand), token); r.status != http.StatusNotFound || strings.Contains(string(r.body), "Retail") {
					t.Errorf("%s, a brand %s cannot see: %d %s", path, what, r.status, r.body)
				}
			}
			expectInvalid(t, h.get(withBrand(path, "retail"), admin), "query.brand_id")
			expectInvalid(t, h.get(withBrand(withBrand(path, retail.ID), foodsBrand.ID), admin), "query.brand_id")
			// Foods' user reads its own brand as its own tenant.
			if got, want := body(withBrand(path, foodsBrand.ID), foodsUser), body(path, foodsUser); got != want {
				t.Errorf("%s of brand Foods for its user:\n%s\nwant:\n%s", path, got, want)
			}
			// A user of one of Retail's tenants sees the brand as that
			// tenant alone.
			if got, want := body(withBrand(path, retail.ID), prodUser), body(path, prodUser); got != want {
				t.Errorf("%s of brand Retail for Retail Prod's user:\n%s\nwant:\n%s", path, got, want)
			}
			if r := h.get(withTenants(withBrand(path, retail.ID), rd), prodUser); r.status != http.StatusForbidden {
				t.Errorf("%s, Retail Dev within brand Retail for Retail Prod's user: %d %s", path, r.status, r.body)
			}
		}
	})

	t.Run("pages of a brand", func(t *testing.T) {
		// A page of a brand the caller cannot see is the error page, a
		// 404 that does not name it; a fragment's is a problem.
		for what, token := range map[string]string{"Foods' user": foodsUser, "admin": admin} {
			brand := retail.ID
			if token == admin {
				brand = "00000000-0000-4000-8000-00000000b0b0"
			}
			r := h.do(http.MethodGet, "/dashboard?brand_id="+brand, token, nil, "Accept", "text/html")
			if r.status != http.StatusNotFound || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || strings.Contains(string(r.body), "Retail") {
				t.Errorf("the dashboard of a brand %s cannot see: %d %s", what, r.status, r.body)
			}
			if r := h.get("/partials/tenant-sync-status?brand_id="+brand, token); r.status != http.StatusNotFound {
				t.Errorf("the freshness fragment of a brand %s cannot see: %d %s", what, r.status, r.body)
			}
		}
		// Retail Prod's user sees brand Retail as Retail Prod alone.
		if r := h.get("/partials/tenant-sync-status?brand_id="+retail.ID, prodUser); r.status != http.StatusOK ||
			!strings.Contains(string(r.body), "Retail Prod") || strings.Contains(string(r.body), "Retail Dev") || strings.Contains(string(r.body), "Foods") {
			t.Errorf("the freshness fragment of brand Retail for Retail Prod's user: %d %s", r.status, r.body)
		}
		if r := h.get("/partials/tenant-sync-status?brand_id="+retail.ID, admin); r.status != http.StatusOK ||
			!strings.Contains(string(r.body), "Retail Dev") || strings.Contains(string(r.body), "Foods") {
			t.Errorf("the freshness fragment of brand Retail for the admin: %d %s", r.status, r.body)
		}
		// The picker's tenant_id=brand:<id> is sent to brand_id.
		b := newBrowser(h)
		r := b.do(http.MethodGet, "/dashboard?x=1&tenant_id=brand:"+retail.ID, nil, "Authorization", "Bearer "+admin)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/dashboard?brand_id="+retail.ID+"&x=1" {
			t.Errorf("a brand picked: %d Location %q", r.status, r.header.Get("Location"))
		}
	})

	t.Run("the OpenAPI document declares brand_id", func(t *testing.T) {
		type param struct {
			Name string `json:"name"`
			In   string `json:"in"`
		}
		var doc struct {
			Paths map[string]map[string]struct {
				Parameters []param                    `json:"parameters"`
				Responses  map[string]json.RawMessage `json:"responses"`
			} `json:"paths"`
		}
		h.get("/openapi.json", "").json(t, &doc)
		for _, path := range []string{"/api/v1/costs/summary", "/api/v1/costs/analysis", "/api/v1/compliance/summary", "/api/v1/costs/trends", "/api/v1/costs/focus"} {
			op := doc.Paths[path]["get"]
			declared := slices.Contains(op.Parameters, param{Name: "brand_id", In: "query"})
			if _, notFound := op.Responses["404"]; !declared || !notFound {
				t.Errorf("%s: brand_id declared %v, 404 declared %v", path, declared, notFound)
			}
		}
		// A route that names its tenant in the path takes no brand.
		for _, p := range doc.Paths["/api/v1/costs/chargeback/{tenant_id}"]["get"].Parameters {
			if p.Name == "brand_id" {
				t.Errorf("the chargeback of one tenant declares brand_id")
			}
		}
	})
}
