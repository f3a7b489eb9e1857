package arm_test

import (
	"net/url"
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
