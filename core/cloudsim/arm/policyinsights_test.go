package arm_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	tlsPolicy  = "/providers/Microsoft.Authorization/policyDefinitions/fe83a0eb-a853-422d-aac2-1bffd182c5d0"
	jitPolicy  = "/providers/Microsoft.Authorization/policyDefinitions/b0f33259-77d7-4c9e-aac6-3aabcfae693c"
	storageID  = "/subscriptions/" + subA + "/resourceGroups/rg-data/providers/Microsoft.Storage/storageAccounts/stdata"
	vmID       = "/subscriptions/" + subA + "/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/vm-web"
	policyBase = "/subscriptions/" + subA + "/providers/Microsoft.PolicyInsights/policyStates/"
)

// policyEnv serves five states: TLS (grouped) on the storage account, a
// just-in-time policy (no groups) on two machines and the subscription.
func policyEnv(t *testing.T) *env {
	w := testWorld()
	w.Resources = []world.Resource{
		{SubscriptionID: subA, ID: storageID, Name: "stdata", Type: "microsoft.storage/storageaccounts", Location: "westeurope"},
		{SubscriptionID: subA, ID: vmID, Name: "vm-web", Type: "microsoft.compute/virtualmachines", Location: "northeurope"},
	}
	tls := world.PolicyState{SubscriptionID: subA, PolicyDefinitionID: tlsPolicy, PolicyName: "Storage accounts should have the specified minimum TLS version",
		Category: "Storage", GroupNames: []string{"SOC_2_CC6.7", "NIST_CSF_v2.0_PR.DS_02"}, ComplianceState: "NonCompliant",
		ResourceID: storageID, Severity: "Medium", Timestamp: "2026-10-15T02:30:00+00:00"}
	jit := world.PolicyState{SubscriptionID: subA, PolicyDefinitionID: jitPolicy, PolicyName: "Management ports should be protected",
		Category: "Security Center", ComplianceState: "Compliant", ResourceID: vmID, Severity: "High", Timestamp: "2026-10-15T03:00:00Z"}
	jit2, jitSub := jit, jit
	jit2.ResourceID, jit2.ComplianceState = strings.Replace(vmID, "vm-web", "vm-gone", 1), "NonCompliant"
	jitSub.ResourceID = "/subscriptions/" + subA
	other := tls
	other.SubscriptionID, other.ResourceID = subB, "/subscriptions/"+subB
	w.PolicyStates = []world.PolicyState{tls, jit, jit2, jitSub, other}
	return startWorld(t, w)
}

func records(body map[string]any) []map[string]any {
	var out []map[string]any
	for _, v := range body["value"].([]any) {
		out = append(out, v.(map[string]any))
	}
	return out
}

func TestPolicyStateRecords(t *testing.T) {
	e := policyEnv(t)
	resp, body := e.do("POST", policyBase+"latest/queryResults?api-version=2024-10-01&$top=2", nil)
	if resp.StatusCode != 200 || body["@odata.count"] != 2.0 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	recs := records(body)
	tls := recs[0]
	meta := tls["policyDefinitionMetadata"].(map[string]any)
	groups := tls["policyDefinitionGroupNames"].([]any)
	if tls["policyDefinitionId"] != tlsPolicy || tls["policyDefinitionName"] != "fe83a0eb-a853-422d-aac2-1bffd182c5d0" ||
		tls["policyAssignmentId"] != "/subscriptions/"+subA+"/providers/Microsoft.Authorization/policyAssignments/regulatory-compliance" ||
		tls["policyDefinitionCategory"] != "Storage" || tls["policySetDefinitionCategory"] != "Regulatory Compliance" ||
		!strings.HasPrefix(tls["policySetDefinitionId"].(string), "/providers/Microsoft.Authorization/policySetDefinitions/") ||
		len(groups) != 2 || groups[0] != "SOC_2_CC6.7" || tls["complianceState"] != "NonCompliant" || tls["isCompliant"] != false ||
		tls["resourceId"] != storageID || tls["resourceType"] != "Microsoft.Storage/storageAccounts" || tls["resourceGroup"] != "rg-data" ||
		tls["resourceLocation"] != "westeurope" || tls["timestamp"] != "2026-10-15T02:30:00Z" || tls["subscriptionId"] != subA ||
		meta["securityCenter"].(map[string]any)["Severity"] != "Medium" || meta["category"] != "Storage" ||
		tls["policyDefinitionDisplayName"] != "Storage accounts should have the specified minimum TLS version" {
		t.Fatalf("grouped record %v", tls)
	}
	jit := recs[1]
	if jit["policySetDefinitionId"] != nil || jit["policySetDefinitionCategory"] != nil || jit["policyDefinitionCategory"] != "Security Center" ||
		jit["policyAssignmentId"] != arm.PolicyAssignmentID(subA, world.PolicyState{PolicyDefinitionID: jitPolicy}) ||
		len(jit["policyDefinitionGroupNames"].([]any)) != 0 || jit["resourceLocation"] != "northeurope" {
		t.Fatalf("ungrouped record %v", jit)
	}

	// The next link is POSTed, as Azure requires; a GET is refused.
	next := body["@odata.nextLink"].(string)
	if resp, body := e.do("GET", next, nil); resp.StatusCode != 405 || errorCode(body) != "HttpMethodNotSupported" {
		t.Fatalf("GET next link: %d %v", resp.StatusCode, body)
	}
	n, pages := len(recs), 1
	for next != "" {
		_, body = e.do("POST", next, nil)
		n += len(records(body))
		next, _ = body["@odata.nextLink"].(string)
		pages++
	}
	if n != 4 || pages != 2 {
		t.Fatalf("%d records in %d pages, want 4 in 2", n, pages)
	}
	_, body = e.do("POST", policyBase+"latest/queryResults?api-version=2024-10-01&$top=1", nil)
	for pages = 1; body["@odata.nextLink"] != nil; pages++ {
		_, body = e.do("POST", body["@odata.nextLink"].(string), nil)
	}
	if pages != 4 {
		t.Fatalf("%d pages of one, want 4", pages)
	}
	sub := records(func() map[string]any {
		_, b := e.do("POST", policyBase+"default/queryResults?api-version=2024-10-01", nil)
		return b
	}())[3]
	if sub["resourceType"] != "Microsoft.Resources/subscriptions" || sub["resourceGroup"] != "" || sub["resourceLocation"] != "" {
		t.Fatalf("subscription-level record %v", sub)
	}
}

func TestPolicyStateFilters(t *testing.T) {
	e := policyEnv(t)
	count := func(query string) int {
		t.Helper()
		resp, body := e.do("POST", policyBase+"latest/queryResults?api-version=2024-10-01&"+query, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", query, resp.StatusCode, body)
		}
		return len(records(body))
	}
	for filter, want := range map[string]int{
		"complianceState eq 'NonCompliant'": 2,
		"ComplianceState ne 'noncompliant'": 2,
		"IsCompliant eq false":              2,
		"complianceState eq 'NonCompliant' and resourceType eq 'Microsoft.Compute/virtualMachines'": 1,
		"'soc_2_cc6.7' in policyDefinitionGroupNames":                                               1,
		"policyDefinitionId eq '" + jitPolicy + "' and resourceGroup eq 'rg-web'":                   2,
	} {
		if got := count("$filter=" + url.QueryEscape(filter)); got != want {
			t.Errorf("%s: %d records, want %d", filter, got, want)
		}
	}
	if got := count("$from=2026-10-15T02:45:00Z"); got != 3 {
		t.Errorf("$from: %d records, want 3", got)
	}
	for _, query := range []string{
		"$filter=" + url.QueryEscape("severity eq 'High'"),
		"$filter=" + url.QueryEscape("complianceState gt 'A'"),
		"$filter=" + url.QueryEscape("complianceState eq NonCompliant"),
		"$apply=" + url.QueryEscape("groupby((resourceId))"),
		"$orderby=timestamp",
		"$to=yesterday",
	} {
		if resp, body := e.do("POST", policyBase+"latest/queryResults?api-version=2024-10-01&"+query, nil); resp.StatusCode != 400 {
			t.Errorf("%s: %d %v, want 400", query, resp.StatusCode, body)
		}
	}
	if resp, _ := e.do("POST", policyBase+"earliest/queryResults?api-version=2024-10-01", nil); resp.StatusCode != 400 {
		t.Errorf("unknown states resource: %d", resp.StatusCode)
	}
	if resp, body := e.do("POST", "/subscriptions/nope/providers/Microsoft.PolicyInsights/policyStates/latest/queryResults?api-version=2024-10-01", nil); resp.StatusCode != 404 || errorCode(body) != "SubscriptionNotFound" {
		t.Errorf("unknown subscription: %d %v", resp.StatusCode, body)
	}
}

func TestPolicySummarize(t *testing.T) {
	e := policyEnv(t)
	resp, body := e.do("POST", policyBase+"latest/summarize?api-version=2024-10-01", nil)
	if resp.StatusCode != 200 || body["@odata.count"] != 1.0 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	sum := body["value"].([]any)[0].(map[string]any)
	res := sum["results"].(map[string]any)
	// Non-compliant: the storage account (TLS) and vm-gone (JIT); both
	// policies have a non-compliant resource.
	if res["nonCompliantResources"] != 2.0 || res["nonCompliantPolicies"] != 2.0 {
		t.Fatalf("results %v", res)
	}
	details := map[string]float64{}
	for _, d := range res["resourceDetails"].([]any) {
		details[d.(map[string]any)["complianceState"].(string)] = d.(map[string]any)["count"].(float64)
	}
	if details["noncompliant"] != 2 || details["compliant"] != 2 {
		t.Fatalf("resource details %v", details)
	}
	assignments := sum["policyAssignments"].([]any)
	if len(assignments) != 2 {
		t.Fatalf("assignments %v", assignments)
	}
	var regulatory map[string]any
	for _, a := range assignments {
		if a := a.(map[string]any); strings.HasSuffix(a["policyAssignmentId"].(string), "/regulatory-compliance") {
			regulatory = a
		}
	}
	defs := regulatory["policyDefinitions"].([]any)
	def := defs[0].(map[string]any)
	groups := regulatory["policyGroups"].([]any)
	if regulatory["policySetDefinitionId"] == "" || len(defs) != 1 || def["policyDefinitionId"] != tlsPolicy || def["effect"] != "audit" ||
		def["results"].(map[string]any)["nonCompliantResources"] != 1.0 || len(groups) != 2 ||
		groups[0].(map[string]any)["policyGroupName"] != "NIST_CSF_v2.0_PR.DS_02" {
		t.Fatalf("regulatory assignment %v", regulatory)
	}

	// A summary's query link lists its non-compliant records.
	resp, body = e.do("POST", def["results"].(map[string]any)["queryResultsUri"].(string), nil)
	if recs := records(body); resp.StatusCode != 200 || len(recs) != 1 || recs[0]["resourceId"] != storageID {
		t.Fatalf("query link: %d %v", resp.StatusCode, body)
	}
	resp, body = e.do("POST", groups[0].(map[string]any)["results"].(map[string]any)["queryResultsUri"].(string), nil)
	if resp.StatusCode != 200 || len(records(body)) != 1 {
		t.Fatalf("group query link: %d %v", resp.StatusCode, body)
	}

	_, body = e.do("POST", policyBase+"latest/summarize?api-version=2024-10-01&$top=1", nil)
	if a := body["value"].([]any)[0].(map[string]any)["policyAssignments"].([]any); len(a) != 1 {
		t.Fatalf("$top=1: %d assignments", len(a))
	}
	if resp, _ := e.do("POST", policyBase+"default/summarize?api-version=2024-10-01", nil); resp.StatusCode != 400 {
		t.Fatalf("summarize default: %d, want 400", resp.StatusCode)
	}
}
