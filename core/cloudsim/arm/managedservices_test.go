package arm_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	delegatedTenant   = "22222222-2222-4222-8222-222222222222"
	independentTenant = "33333333-3333-4333-8333-333333333333"
	subDelegated      = "00000000-0000-4000-8000-0000000000dd"
	subIndependent    = "00000000-0000-4000-8000-0000000000ee"
)

// tokenIn gets an app-only Resource Manager token in another tenant.
func (e *env) tokenIn(tenant string) string {
	e.t.Helper()
	return simtest.Token(e.t, e.sim, tenant, arm.Audience+"/.default")
}

// lighthouseWorld is the test world's managing tenant, a tenant that
// delegates to it and one that does not.
func lighthouseWorld() *world.World {
	w := testWorld()
	w.Tenants = append(w.Tenants,
		world.Tenant{Name: "Fabrikam", DirectoryTenantID: delegatedTenant, Delegated: true,
			Subscriptions: []world.Subscription{{ID: subDelegated, Name: "Fabrikam Production"}}},
		world.Tenant{Name: "Northwind", DirectoryTenantID: independentTenant,
			Subscriptions: []world.Subscription{{ID: subIndependent, Name: "Northwind Production"}}})
	w.Quotas = append(w.Quotas, world.Quota{SubscriptionID: subIndependent, Location: "westeurope", Provider: "compute", Name: "cores", CurrentValue: 1, Limit: 5})
	return w
}

func subscriptionIDs(t *testing.T, body map[string]any) []string {
	t.Helper()
	var ids []string
	for _, v := range body["value"].([]any) {
		ids = append(ids, v.(map[string]any)["subscriptionId"].(string))
	}
	return ids
}

func TestDelegationDecidesAccess(t *testing.T) {
	e := startWorld(t, lighthouseWorld())
	if ids := subscriptionIDs(t, func() map[string]any { _, b := e.do("GET", "/subscriptions?"+apiVersion, nil); return b }()); strings.Join(ids, ",") != subA+","+subB+","+subDelegated {
		t.Fatalf("managing tenant lists %v", ids)
	}
	refused := map[string][2]string{
		"/subscriptions/" + subIndependent + "?" + apiVersion:                                                         {"GET", "Microsoft.Resources/subscriptions/read"},
		"/subscriptions/" + subIndependent + "/providers/Microsoft.Compute/locations/westeurope/usages?" + apiVersion: {"GET", "Microsoft.Compute/locations/read"},
		"/subscriptions/" + subIndependent + "/providers/Microsoft.Consumption/budgets/b?" + apiVersion:               {"PUT", "Microsoft.Consumption/budgets/write"},
		queryPath(subIndependent): {"POST", "Microsoft.CostManagement/query/action"},
		"/subscriptions/" + subIndependent + "/providers/Microsoft.PolicyInsights/policyStates/latest/queryResults?" + apiVersion: {"POST", "Microsoft.PolicyInsights/policyStates/latest/queryResults/action"},
		"/subscriptions/" + subIndependent + "/providers/Microsoft.ManagedServices/registrationAssignments?" + apiVersion:         {"GET", "Microsoft.ManagedServices/registrationAssignments/read"},
	}
	for path, want := range refused {
		resp, body := e.do(want[0], path, map[string]any{})
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if resp.StatusCode != 403 || errorCode(body) != "AuthorizationFailed" || !strings.Contains(msg, "'"+want[1]+"'") ||
			!strings.Contains(msg, "'/subscriptions/"+subIndependent+"'") {
			t.Errorf("%s %s: %d %v, want 403 AuthorizationFailed for %s", want[0], path, resp.StatusCode, body, want[1])
		}
	}
	if resp, _ := e.do("GET", "/subscriptions/"+subDelegated+"/providers/Microsoft.Compute/locations/westeurope/usages?"+apiVersion, nil); resp.StatusCode != 200 {
		t.Errorf("delegated subscription: %d", resp.StatusCode)
	}
	if resp, body := e.do("GET", "/subscriptions/nope?"+apiVersion, nil); resp.StatusCode != 404 || errorCode(body) != "SubscriptionNotFound" {
		t.Errorf("unknown subscription: %d %v", resp.StatusCode, body)
	}

	// A brand's own token reaches its own subscriptions only.
	own := e.tokenIn(independentTenant)
	if _, body := e.doWith(own, "GET", "/subscriptions?"+apiVersion, nil); strings.Join(subscriptionIDs(t, body), ",") != subIndependent {
		t.Fatalf("independent tenant lists %v", body)
	}
	if resp, _ := e.doWith(own, "GET", "/subscriptions/"+subIndependent+"/providers/Microsoft.Compute/locations/westeurope/usages?"+apiVersion, nil); resp.StatusCode != 200 {
		t.Errorf("own subscription: %d", resp.StatusCode)
	}
	if resp, body := e.doWith(e.tokenIn(delegatedTenant), "GET", "/subscriptions/"+subA+"?"+apiVersion, nil); resp.StatusCode != 403 || errorCode(body) != "AuthorizationFailed" {
		t.Errorf("delegated tenant reading the managing tenant's subscription: %d %v", resp.StatusCode, body)
	}
}

func TestRegistrationDefinitionsAndAssignments(t *testing.T) {
	e := startWorld(t, lighthouseWorld())
	base := "/subscriptions/" + subDelegated + "/providers/Microsoft.ManagedServices/"
	resp, body := e.do("GET", base+"registrationDefinitions?api-version=2022-01-01-preview", nil)
	defs := body["value"].([]any)
	if resp.StatusCode != 200 || len(defs) != 1 {
		t.Fatalf("definitions: %d %v", resp.StatusCode, body)
	}
	def := defs[0].(map[string]any)
	p := def["properties"].(map[string]any)
	if !strings.HasPrefix(def["id"].(string), base+"registrationDefinitions/") || def["type"] != "Microsoft.ManagedServices/registrationDefinitions" ||
		p["managedByTenantId"] != tenantID || p["managedByTenantName"] != "Contoso" || p["manageeTenantId"] != delegatedTenant ||
		p["manageeTenantName"] != "Fabrikam" || p["provisioningState"] != "Succeeded" || p["registrationDefinitionName"] == "" {
		t.Fatalf("definition %v", def)
	}
	var roles []string
	for _, a := range p["authorizations"].([]any) {
		auth := a.(map[string]any)
		if auth["principalId"] == "" {
			t.Fatalf("authorization %v", auth)
		}
		roles = append(roles, auth["roleDefinitionId"].(string))
	}
	if strings.Join(roles, ",") != arm.RoleReader+","+arm.RoleCostManagementReader+","+arm.RoleSecurityReader {
		t.Fatalf("roles %v", roles)
	}

	_, body = e.do("GET", base+"registrationAssignments?api-version=2022-01-01-preview", nil)
	asgs := body["value"].([]any)
	asg := asgs[0].(map[string]any)
	ap := asg["properties"].(map[string]any)
	if len(asgs) != 1 || !strings.HasPrefix(asg["id"].(string), base+"registrationAssignments/") || ap["registrationDefinitionId"] != def["id"] || ap["registrationDefinition"] != nil {
		t.Fatalf("assignments %v", body)
	}
	_, body = e.do("GET", base+"registrationAssignments?api-version=2022-01-01-preview&$expandRegistrationDefinition=true", nil)
	expanded := body["value"].([]any)[0].(map[string]any)["properties"].(map[string]any)["registrationDefinition"].(map[string]any)
	if expanded["id"] != def["id"] || expanded["properties"].(map[string]any)["manageeTenantId"] != delegatedTenant {
		t.Fatalf("expanded assignment %v", body)
	}
	if resp, body := e.do("GET", base+"registrationAssignments?api-version=2022-01-01-preview&$filter="+url.QueryEscape("managedByTenantId eq 'x'"), nil); resp.StatusCode != 400 {
		t.Fatalf("filter: %d %v", resp.StatusCode, body)
	}

	// The managing tenant's own subscription is not delegated to anyone.
	for _, kind := range []string{"registrationDefinitions", "registrationAssignments"} {
		if _, body := e.do("GET", "/subscriptions/"+subA+"/providers/Microsoft.ManagedServices/"+kind+"?api-version=2022-01-01-preview", nil); len(body["value"].([]any)) != 0 {
			t.Fatalf("own subscription's %s: %v", kind, body)
		}
	}
}

// TestDirectoryTokens: a tenant that is not delegated is read with a token
// of its own directory: that token lists its directory's subscriptions
// only, reads their data and its billing account, and is refused (403,
// AuthorizationFailed) another directory's subscription and billing
// account, as the managing tenant's token is refused its subscriptions.
// Once the directory withdraws its consent, it issues the application no
// token and a token it issued before reaches nothing.
func TestDirectoryTokens(t *testing.T) {
	w := lighthouseWorld()
	northwindBilling := "87654321"
	w.Tenants[2].BillingAccountID = &northwindBilling
	w.Reservations = append(w.Reservations, world.Reservation{BillingAccountID: northwindBilling, ReservationID: "res-n", SKU: "Standard_B2s",
		Date: "2026-10-01", ReservedHours: 24, UsedHours: 12})
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Tailspin", DirectoryTenantID: "44444444-4444-4444-8444-444444444444",
		Subscriptions: []world.Subscription{{ID: "00000000-0000-4000-8000-0000000000ff", Name: "Tailspin Production"}}})
	e := startWorld(t, w)
	own := e.tokenIn(independentTenant)
	usages := "/subscriptions/" + subIndependent + "/providers/Microsoft.Compute/locations/westeurope/usages?" + apiVersion
	if resp, body := e.doWith(own, "GET", usages, nil); resp.StatusCode != 200 || len(body["value"].([]any)) != 1 {
		t.Errorf("own subscription's usages: %d %v", resp.StatusCode, body)
	}
	if resp, body := e.doWith(own, "GET", summariesPath(northwindBilling, "grain=monthly"), nil); resp.StatusCode != 200 || len(body["value"].([]any)) != 1 {
		t.Errorf("own billing account: %d %v", resp.StatusCode, body)
	}
	for _, c := range []struct{ name, token, path string }{
		{"another directory's subscription", own, "/subscriptions/00000000-0000-4000-8000-0000000000ff?" + apiVersion},
		{"the managing tenant's subscription", own, "/subscriptions/" + subA + "/providers/Microsoft.Compute/locations/westeurope/usages?" + apiVersion},
		{"the managing tenant's billing account", own, summariesPath(billingAccount, "grain=monthly")},
		{"the managing token on a billing account not delegated", e.token, summariesPath(northwindBilling, "grain=monthly")},
	} {
		resp, body := e.doWith(c.token, "GET", c.path, nil)
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if resp.StatusCode != 403 || errorCode(body) != "AuthorizationFailed" || !strings.Contains(msg, "does not have authorization") {
			t.Errorf("%s: %d %v, want 403 AuthorizationFailed", c.name, resp.StatusCode, body)
		}
	}

	withdrawn := *w
	withdrawn.Tenants = slices.Clone(w.Tenants)
	no := false
	withdrawn.Tenants[2].Consented = &no
	e.sim.SetWorld(&withdrawn)
	if _, body := e.doWith(own, "GET", "/subscriptions?"+apiVersion, nil); len(body["value"].([]any)) != 0 {
		t.Errorf("a withdrawn directory's token lists %v", body)
	}
	if resp, body := e.doWith(own, "GET", usages, nil); resp.StatusCode != 403 || errorCode(body) != "AuthorizationFailed" {
		t.Errorf("a withdrawn directory's token on its subscription: %d %v", resp.StatusCode, body)
	}
	status, body := simtest.PostToken(t, e.sim, independentTenant, url.Values{"grant_type": {"client_credentials"}, "client_id": {simtest.ClientID},
		"client_secret": {simtest.ClientSecret}, "scope": {arm.Audience + "/.default"}})
	if desc, _ := body["error_description"].(string); status != 400 || body["error"] != "unauthorized_client" || !strings.HasPrefix(desc, "AADSTS700016: ") {
		t.Errorf("token request in a withdrawn directory: %d %v", status, body)
	}
	// Delegation does not depend on the delegating directory's consent.
	withdrawn.Tenants[1].Consented = &no
	if resp, _ := e.do("GET", "/subscriptions/"+subDelegated+"/providers/Microsoft.Compute/locations/westeurope/usages?"+apiVersion, nil); resp.StatusCode != 200 {
		t.Errorf("a delegated subscription without consent in its directory: %d", resp.StatusCode)
	}
}
