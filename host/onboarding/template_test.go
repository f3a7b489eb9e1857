package onboarding

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

const managing = "22222222-2222-2222-2222-222222222222"

// decoded renders a template and reads it back as plain JSON, as Resource
// Manager would.
func decoded(t *testing.T, org string) map[string]any {
	t.Helper()
	b, err := NewTemplate(org, managing).JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("template is not JSON: %v\n%s", err, b)
	}
	return doc
}

func TestTemplateIsADeploymentTemplate(t *testing.T) {
	doc := decoded(t, "Contoso")
	for _, k := range []string{"$schema", "contentVersion", "parameters", "resources", "outputs"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("missing top-level %s", k)
		}
	}
	if doc["$schema"] != SchemaURL {
		t.Errorf("$schema %v", doc["$schema"])
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`).MatchString(doc["contentVersion"].(string)) {
		t.Errorf("contentVersion %v", doc["contentVersion"])
	}
	types := map[string]map[string]any{}
	for _, r := range doc["resources"].([]any) {
		res := r.(map[string]any)
		api, _ := res["apiVersion"].(string)
		if _, err := time.Parse("2006-01-02", api); err != nil {
			t.Errorf("%v: apiVersion %q is not a date", res["type"], api)
		}
		if res["name"] == "" || res["properties"] == nil {
			t.Errorf("%v lacks a name or properties", res["type"])
		}
		types[res["type"].(string)] = res
	}
	def, assign := types[TypeRegistrationDefinition], types[TypeRegistrationAssignment]
	if def == nil || assign == nil || len(types) != 2 {
		t.Fatalf("resource types %v", types)
	}
	if def["name"] != "[variables('mspRegistrationName')]" || doc["variables"].(map[string]any)["mspRegistrationName"] != "[guid(parameters('mspOfferName'))]" {
		t.Errorf("definition name %v", def["name"])
	}
	ref := "[resourceId('Microsoft.ManagedServices/registrationDefinitions', variables('mspRegistrationName'))]"
	if deps, _ := assign["dependsOn"].([]any); len(deps) != 1 || deps[0] != ref {
		t.Errorf("assignment dependsOn %v", assign["dependsOn"])
	}
	if assign["properties"].(map[string]any)["registrationDefinitionId"] != ref {
		t.Errorf("assignment properties %v", assign["properties"])
	}
	params := doc["parameters"].(map[string]any)
	if got := params["managedByTenantId"].(map[string]any)["defaultValue"]; got != managing {
		t.Errorf("managedByTenantId default %v", got)
	}
	auths := params["authorizations"].(map[string]any)["defaultValue"].([]any)
	want := []string{RoleReader, RoleCostManagementReader, RoleSecurityReader}
	if len(auths) != len(want) {
		t.Fatalf("authorizations %v", auths)
	}
	for i, a := range auths {
		a := a.(map[string]any)
		if a["roleDefinitionId"] != want[i] || a["principalId"] != "[parameters('stewardPrincipalId')]" {
			t.Errorf("authorization %d: %v", i, a)
		}
	}
}

// TestTemplateReferencesResolve: every parameters('x') and variables('x')
// anywhere in the template names one the template declares, and every
// parameter is used.
func TestTemplateReferencesResolve(t *testing.T) {
	doc := decoded(t, "Contoso")
	params := doc["parameters"].(map[string]any)
	vars := doc["variables"].(map[string]any)
	ref := regexp.MustCompile(`(parameters|variables)\('([^']*)'\)`)
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			for _, m := range ref.FindAllStringSubmatch(v, -1) {
				decl := params
				if m[1] == "variables" {
					decl = vars
				}
				if _, ok := decl[m[2]]; !ok {
					t.Errorf("%s references undeclared %s %q", v, m[1], m[2])
				}
				used[m[2]] = true
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	for name := range params {
		if !used[name] {
			t.Errorf("parameter %s is never used", name)
		}
	}
}

func TestOrgName(t *testing.T) {
	for _, bad := range []string{strings.Repeat("x", MaxOrgNameLen+1), "line\nbreak", "tab\there", "nul\x00", "\xff"} {
		if _, err := CleanOrgName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	got, err := CleanOrgName("  " + strings.Repeat("é", MaxOrgNameLen) + " ")
	if err != nil || got != strings.Repeat("é", MaxOrgNameLen) {
		t.Errorf("100 characters: %q %v", got, err)
	}
	// Quotes, markup and brackets survive as text: JSON escapes what it
	// must, and the name never starts a string Resource Manager would read
	// as an expression.
	org := `"Acme" <script>alert(1)</script> [parameters('x')]`
	doc := decoded(t, org)
	offer := doc["parameters"].(map[string]any)["mspOfferName"].(map[string]any)["defaultValue"].(string)
	if offer != "Steward governance — "+org || strings.HasPrefix(offer, "[") {
		t.Errorf("offer name %q", offer)
	}
	desc := doc["parameters"].(map[string]any)["mspOfferDescription"].(map[string]any)["defaultValue"].(string)
	if !strings.HasSuffix(desc, " for "+org) || strings.HasPrefix(desc, "[") {
		t.Errorf("description %q", desc)
	}
	if got := decoded(t, "")["parameters"].(map[string]any)["mspOfferName"].(map[string]any)["defaultValue"]; got != "Steward governance" {
		t.Errorf("no org: %v", got)
	}
}
