package arm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	definitionsPath  = "/providers/Microsoft.Authorization/policyDefinitions"
	customDefinition = "/subscriptions/" + subA + definitionsPath + "/require-owner-tag"
	definitionsAPI   = "api-version=2023-04-01"
)

// definitionsEnv serves policyEnv's states (TLS and just-in-time), the TLS
// definition listed with its guidance, a custom definition of subscription
// A, and 120 more built-in ones, so the lists take two pages.
func definitionsEnv(t *testing.T) *env {
	e := policyEnv(t)
	w := *e.sim.World()
	w.PolicyDefinitions = []world.PolicyDefinition{
		{ID: tlsPolicy, DisplayName: "Storage accounts should have the specified minimum TLS version", Description: "Configure a minimum TLS version.",
			Category: "Storage", Severity: "Medium", Remediation: "Set Minimum TLS version to 1.2."},
		{ID: customDefinition, DisplayName: "Require an owner tag", Category: "Tags", Remediation: "Add the owner tag."},
	}
	for i := range 120 {
		w.PolicyDefinitions = append(w.PolicyDefinitions, world.PolicyDefinition{
			ID: fmt.Sprintf("%s/00000000-0000-4000-8000-%012d", definitionsPath, i), DisplayName: fmt.Sprintf("Policy %d", i), Category: "General"})
	}
	e.sim.SetWorld(&w)
	return e
}

// TestPolicyDefinitionGet: a built-in definition in Azure's shape with its
// guidance in the metadata; one only a state names, from the state; a
// custom one at its subscription only; unknown names and old api-versions
// refused.
func TestPolicyDefinitionGet(t *testing.T) {
	e := definitionsEnv(t)
	resp, body := e.do("GET", tlsPolicy+"?"+definitionsAPI, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	props := body["properties"].(map[string]any)
	meta := props["metadata"].(map[string]any)
	security := meta["securityCenter"].(map[string]any)
	if body["id"] != tlsPolicy || body["name"] != "fe83a0eb-a853-422d-aac2-1bffd182c5d0" || body["type"] != "Microsoft.Authorization/policyDefinitions" ||
		props["displayName"] != "Storage accounts should have the specified minimum TLS version" || props["policyType"] != "BuiltIn" ||
		props["description"] != "Configure a minimum TLS version." || meta["category"] != "Storage" || security["Severity"] != "Medium" ||
		security["RemediationDescription"] != "Set Minimum TLS version to 1.2." || props["policyRule"] == nil {
		t.Errorf("definition %v", body)
	}
	_, body = e.do("GET", jitPolicy+"?"+definitionsAPI, nil)
	props = body["properties"].(map[string]any)
	meta = props["metadata"].(map[string]any)
	if props["displayName"] != "Management ports should be protected" || meta["category"] != "Security Center" ||
		meta["securityCenter"].(map[string]any)["RemediationDescription"] != nil || props["description"] != nil {
		t.Errorf("a definition only a state names: %v", body)
	}
	_, body = e.do("GET", strings.Replace(customDefinition, "require-owner-tag", "Require-Owner-Tag", 1)+"?"+definitionsAPI, nil)
	if props := body["properties"].(map[string]any); body["id"] != customDefinition || props["policyType"] != "Custom" {
		t.Errorf("custom definition %v", body)
	}
	for path, want := range map[string]int{
		definitionsPath + "/require-owner-tag?" + definitionsAPI:                                                             404, // not built in
		"/subscriptions/" + subB + definitionsPath + "/require-owner-tag?" + definitionsAPI:                                  404, // another subscription's
		"/subscriptions/" + subA + definitionsPath + "/fe83a0eb-a853-422d-aac2-1bffd182c5d0?" + definitionsAPI:               404, // built in
		definitionsPath + "/nope?" + definitionsAPI:                                                                          404,
		tlsPolicy + "?api-version=2020-09-01":                                                                                400,
		"/subscriptions/" + strings.Repeat("9", 8) + "-0000-4000-8000-000000000000" + definitionsPath + "?" + definitionsAPI: 404,
	} {
		if resp, body := e.do("GET", path, nil); resp.StatusCode != want || (want == 404 && !strings.HasSuffix(errorCode(body), "NotFound")) {
			t.Errorf("GET %s: %d %s, want %d", path, resp.StatusCode, errorCode(body), want)
		}
	}
}

// TestPolicyDefinitionList: the built-in list pages by nextLink through
// every built-in definition, sorted by name; a subscription's list adds
// its custom ones after them.
func TestPolicyDefinitionList(t *testing.T) {
	e := definitionsEnv(t)
	list := func(path string) []string {
		var names []string
		pages := 0
		for path != "" {
			resp, body := e.do("GET", path, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %v", path, resp.StatusCode, body)
			}
			for _, r := range records(body) {
				names = append(names, r["name"].(string))
			}
			next, _ := body["nextLink"].(string)
			path = strings.TrimPrefix(next, e.sim.URLs[cloudsim.ARM])
			pages++
		}
		if pages != 2 {
			t.Errorf("%d pages, want 2", pages)
		}
		return names
	}
	// 120 listed, TLS and the just-in-time policy.
	builtIn := list(definitionsPath + "?" + definitionsAPI)
	if len(builtIn) != 122 || builtIn[0] != "00000000-0000-4000-8000-000000000000" || builtIn[121] != "fe83a0eb-a853-422d-aac2-1bffd182c5d0" {
		t.Errorf("built-in %d: %v", len(builtIn), builtIn)
	}
	sub := list("/subscriptions/" + subA + definitionsPath + "?" + definitionsAPI)
	if len(sub) != 123 || sub[122] != "require-owner-tag" {
		t.Errorf("subscription %d: %v", len(sub), sub[120:])
	}
}
