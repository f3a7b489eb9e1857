package coverage

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// knownFinding is a non-compliant key vault of a SOC 2 and NIST CSF
// policy, evaluated under two assignments, with its definition's
// remediation.
func knownFinding() Finding {
	return Finding{Source: "policy", TenantID: "t-1", SubscriptionID: "sub-1",
		ResourceID:   "/subscriptions/sub-1/resourceGroups/rg-data/providers/Microsoft.KeyVault/vaults/kv1",
		ResourceType: "Microsoft.KeyVault/vaults", ResourceName: "kv1", Link: ResourceLink("/subscriptions/sub-1/resourceGroups/rg-data/providers/Microsoft.KeyVault/vaults/kv1"),
		PolicyDefinitionID: "/providers/Microsoft.Authorization/policyDefinitions/kv-purge", PolicyName: "Key vaults should have deletion protection enabled",
		Category: "Key Vault", Severity: "High", ComplianceState: "NonCompliant",
		Assignments: []string{"/subscriptions/sub-1/providers/Microsoft.Authorization/policyAssignments/a1", "/subscriptions/sub-1/providers/Microsoft.Authorization/policyAssignments/a2"},
		EvaluatedAt: time.Date(2026, 11, 25, 8, 30, 0, 0, time.UTC), Remediation: "Enable purge protection on the vault.",
		Controls: []ControlRef{{FrameworkID: "soc2", ControlID: "CC6.1"}, {FrameworkID: "soc2", ControlID: "CC6.7"}, {FrameworkID: "nist_csf", ControlID: "PR.DS-01"}}}
}

var knownStandards = map[string]string{"soc2": "SOC 2 2017", "nist_csf": "NIST Cybersecurity Framework 2.0"}

// TestCSVRecord: the header and a known finding's row, cell for cell, as
// encoding/csv writes them.
func TestCSVRecord(t *testing.T) {
	f := knownFinding()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(exportHeader); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(csvRecord(nil, &f)); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	want := "tenant_id,subscription_id,resource_id,resource_type,resource_name,policy_definition_id,policy_name,category,severity," +
		"compliance_state,policy_assignment_ids,evaluated_at,controls,source,assessment_id,remediation\n" +
		"t-1,sub-1,/subscriptions/sub-1/resourceGroups/rg-data/providers/Microsoft.KeyVault/vaults/kv1,Microsoft.KeyVault/vaults,kv1," +
		"/providers/Microsoft.Authorization/policyDefinitions/kv-purge,Key vaults should have deletion protection enabled,Key Vault,High," +
		"NonCompliant,/subscriptions/sub-1/providers/Microsoft.Authorization/policyAssignments/a1 /subscriptions/sub-1/providers/Microsoft.Authorization/policyAssignments/a2," +
		"2026-11-25T08:30:00Z,soc2:CC6.1 soc2:CC6.7 nist_csf:PR.DS-01,policy,,Enable purge protection on the vault.\n"
	if b.String() != want {
		t.Errorf("CSV\n%s\nwant\n%s", b.String(), want)
	}

	// A name a spreadsheet would run as a formula is guarded, a comma or
	// quote is quoted as RFC 4180 says, and no control is an empty cell.
	f.PolicyName, f.Category, f.Controls = `=HYPERLINK("x"),1`, "@risk", nil
	rec := csvRecord(nil, &f)
	if rec[6] != `'=HYPERLINK("x"),1` || rec[7] != "'@risk" || rec[12] != "" || len(rec) != len(exportHeader) {
		t.Errorf("guarded record %q", rec)
	}
	b.Reset()
	w = csv.NewWriter(&b)
	_ = w.Write(rec[5:8])
	w.Flush()
	if got := b.String(); got != `/providers/Microsoft.Authorization/policyDefinitions/kv-purge,"'=HYPERLINK(""x""),1",'@risk`+"\n" {
		t.Errorf("quoted %s", got)
	}
}

// TestOCSFFinding: a known finding as an OCSF 1.4.0 Compliance Finding,
// byte for byte, and each Azure Policy state's statuses.
func TestOCSFFinding(t *testing.T) {
	f := knownFinding()
	got, err := json.Marshal(ocsfOf(&f, knownStandards))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"activity_id":1,"activity_name":"Create","category_uid":2,"category_name":"Findings","class_uid":2003,"class_name":"Compliance Finding",` +
		`"type_uid":200301,"type_name":"Compliance Finding: Create","severity_id":4,"severity":"High","status_id":1,"status":"New",` +
		`"time":1795595400000,"message":"Key vaults should have deletion protection enabled: NonCompliant on kv1",` +
		`"metadata":{"version":"1.4.0","product":{"name":"Steward","vendor_name":"Steward","feature":{"name":"Compliance"}},"profiles":["cloud"],"tenant_uid":"t-1"},` +
		`"finding_info":{"uid":"t-1|/subscriptions/sub-1/resourceGroups/rg-data/providers/Microsoft.KeyVault/vaults/kv1|/providers/Microsoft.Authorization/policyDefinitions/kv-purge",` +
		`"title":"Key vaults should have deletion protection enabled",` +
		`"desc":"Azure Policy evaluated /subscriptions/sub-1/resourceGroups/rg-data/providers/Microsoft.KeyVault/vaults/kv1 as NonCompliant under the policy definition /providers/Microsoft.Authorization/policyDefinitions/kv-purge.",` +
		`"types":["Key Vault"],"last_seen_time":1795595400000,` +
		`"analytic":{"uid":"/providers/Microsoft.Authorization/policyDefinitions/kv-purge","name":"Key vaults should have deletion protection enabled","type_id":1,"type":"Rule"}},` +
		`"compliance":{"control":"/providers/Microsoft.Authorization/policyDefinitions/kv-purge","standards":["SOC 2 2017","NIST Cybersecurity Framework 2.0"],` +
		`"requirements":["soc2:CC6.1","soc2:CC6.7","nist_csf:PR.DS-01"],"status_id":3,"status":"Fail","status_code":"NonCompliant"},` +
		`"resources":[{"uid":"/subscriptions/sub-1/resourceGroups/rg-data/providers/Microsoft.KeyVault/vaults/kv1","name":"kv1","type":"Microsoft.KeyVault/vaults","group":{"name":"rg-data"}}],` +
		`"cloud":{"provider":"Azure","account":{"uid":"sub-1","type_id":13,"type":"Azure Subscription"}},` +
		`"remediation":{"desc":"Enable purge protection on the vault."},` +
		`"unmapped":{"source":"policy","policy_assignment_ids":["/subscriptions/sub-1/providers/Microsoft.Authorization/policyAssignments/a1","/subscriptions/sub-1/providers/Microsoft.Authorization/policyAssignments/a2"]}}`
	if string(got) != want {
		t.Errorf("OCSF\n%s\nwant\n%s", got, want)
	}

	// A Defender assessment is told apart by its assessment, in the uid too.
	d := knownFinding()
	d.Source, d.AssessmentID, d.Assignments, d.Remediation = "defender", "/subscriptions/sub-1/providers/Microsoft.Security/assessments/a-9", nil, ""
	o := ocsfOf(&d, knownStandards)
	if o.FindingInfo.UID != FindingUID(&f)+"|"+d.AssessmentID || !strings.HasPrefix(o.FindingInfo.Desc, "Defender for Cloud assessed ") ||
		o.Remediation != nil || o.Unmapped.Source != "defender" || o.Unmapped.AssessmentID != d.AssessmentID {
		t.Errorf("Defender finding: %+v", o)
	}

	for _, c := range []struct {
		state, severity              string
		checkID, findingID, severID  int
		check, finding, severityName string
	}{
		{"Compliant", "Low", 1, 4, 2, "Pass", "Resolved", "Low"},
		{"Exempt", "Medium", 99, 3, 3, "Exempt", "Suppressed", "Medium"},
		{"Conflict", "High", 2, 1, 4, "Warning", "New", "High"},
		{"Unknown", "", 2, 1, 0, "Warning", "New", "Unknown"},
	} {
		f := knownFinding()
		f.ComplianceState, f.Severity = c.state, c.severity
		o := ocsfOf(&f, knownStandards)
		if o.Compliance.StatusID != c.checkID || o.Compliance.Status != c.check || o.Compliance.StatusCode != c.state ||
			o.StatusID != c.findingID || o.Status != c.finding || o.SeverityID != c.severID || o.Severity != c.severityName {
			t.Errorf("%s %q: compliance %d %s, finding %d %s, severity %d %s", c.state, c.severity, o.Compliance.StatusID, o.Compliance.Status,
				o.StatusID, o.Status, o.SeverityID, o.Severity)
		}
	}

	// A resource outside a resource group has none; a policy mapped to
	// no control names no standard, as empty lists.
	f.ResourceID, f.Controls, f.Category = "/subscriptions/sub-1", nil, ""
	got, _ = json.Marshal(ocsfOf(&f, knownStandards))
	for _, part := range []string{`"standards":[]`, `"requirements":[]`, `"resources":[{"uid":"/subscriptions/sub-1","name":"kv1","type":"Microsoft.KeyVault/vaults"}]`} {
		if !strings.Contains(string(got), part) {
			t.Errorf("no %s in %s", part, got)
		}
	}
	if strings.Contains(string(got), `"types"`) {
		t.Errorf("a finding without a category has types: %s", got)
	}
	if !slices.Equal(controlNames(nil), []string{}) {
		t.Error("controlNames(nil)")
	}
}
