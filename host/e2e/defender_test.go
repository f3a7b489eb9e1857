package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// defenderWorld is complianceWorld's estate with Defender for Cloud's
// assessments and secure scores:
//
//	Brand A: the subscription's MFA recommendation (defender-mfa) and
//	sa's private link (the policy's own definition) Unhealthy and High;
//	vm's vulnerability assessment NotApplicable and Low; score 3.5 of 14
//	(MFA 0 of 10, encryption in transit 3.5 of 4), 25 %.
//	Brand B: sb's TLS recommendation (defender-tls) Healthy, Medium;
//	score 4 of 4, 100 %.
//	Both: 7.5 of 18, 41.67 %.
//
// The private-link policy's definition carries privateLinkRemediation;
// the others are served from their states, without guidance.
func defenderWorld(t *testing.T) string {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	res := func(sub, r string) string { return "/subscriptions/" + sub + "/resourceGroups/rg/providers/" + r }
	def := func(name string) string { return "/providers/Microsoft.Authorization/policyDefinitions/" + name }
	assess := func(sub, resource, key, name, status, severity, definition string) world.SecurityAssessment {
		return world.SecurityAssessment{SubscriptionID: sub, ResourceID: resource, Name: key, DisplayName: name, Status: status,
			Severity: severity, PolicyDefinitionID: definition, RemediationDescription: "Remediate: " + name, Category: "Data"}
	}
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		PolicyStates: []world.PolicyState{
			policyState(subA, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sa", "NonCompliant"),
			policyState(subB, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sb", "Compliant"),
		},
		PolicyDefinitions: []world.PolicyDefinition{{ID: def("private-link"), DisplayName: "Storage accounts should use private link",
			Description: "Private link keeps the storage account's traffic on the Microsoft backbone.", Category: "Storage", Severity: "High",
			Remediation: privateLinkRemediation}},
		SecurityAssessments: []world.SecurityAssessment{
			assess(subA, "/subscriptions/"+subA, "d0000000-0000-4000-8000-000000000001", "Accounts with owner permissions should have MFA enabled", "Unhealthy", "High", def("defender-mfa")),
			assess(subA, res(subA, "Microsoft.Storage/storageAccounts/sa"), "d0000000-0000-4000-8000-000000000002", "Storage accounts should use private link", "Unhealthy", "High", def("private-link")),
			assess(subA, res(subA, "Microsoft.Compute/virtualMachines/vm"), "d0000000-0000-4000-8000-000000000003", "Machines should have a vulnerability assessment solution", "NotApplicable", "Low", ""),
			assess(subB, res(subB, "Microsoft.Storage/storageAccounts/sb"), "d0000000-0000-4000-8000-000000000004", "Storage accounts should use TLS 1.2", "Healthy", "Medium", def("defender-tls")),
		},
		SecureScores: []world.SecureScore{
			{SubscriptionID: subA, Controls: []world.SecureScoreControl{
				{Name: "e0000000-0000-4000-8000-000000000001", DisplayName: "Enable MFA", Current: 0, Max: 10, UnhealthyResources: 1},
				{Name: "e0000000-0000-4000-8000-000000000002", DisplayName: "Encrypt data in transit", Current: 3.5, Max: 4, HealthyResources: 7, UnhealthyResources: 1},
			}},
			{SubscriptionID: subB, Controls: []world.SecureScoreControl{
				{Name: "e0000000-0000-4000-8000-000000000002", DisplayName: "Encrypt data in transit", Current: 4, Max: 4, HealthyResources: 1},
			}},
		},
	})
}

// privateLinkRemediation is the private-link policy definition's guidance
// in defenderWorld.
const privateLinkRemediation = "In the storage account's Networking, disable public network access and approve a private endpoint connection."

// sourcedFinding is a finding of either source as the tests read it.
type sourcedFinding struct {
	TenantID       string `json:"tenant_id"`
	ResourceID     string `json:"resource_id"`
	PolicyID       string `json:"policy_definition_id"`
	Source         string `json:"source"`
	State          string `json:"compliance_state"`
	AssessmentName string `json:"assessment_name"`
	Remediation    string `json:"remediation"`
}

// defenderAssessment is an assessment of the list as the tests read it.
type defenderAssessment struct {
	TenantID   string `json:"tenant_id"`
	ResourceID string `json:"resource_id"`
	Name       string `json:"display_name"`
	Status     string `json:"status"`
	Severity   string `json:"severity"`
	Definition string `json:"policy_definition_id"`
}

// deploymentFrameworks is a frameworks_dir holding the acme framework.
func deploymentFrameworks(t *testing.T) string {
	dir := t.TempDir()
	acme, err := os.ReadFile(filepath.Join("..", "..", "plugins", "compliance", "coverage", "testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme.json"), acme, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDefenderThroughTheHost: the world's Defender for Cloud assessments
// and secure scores reach the compliance plugin's routes through the
// simulated Microsoft.Security API and the defender job, on both
// databases, every answer checked against the OpenAPI document, with
// exact figures; the assessments count in the deployment framework's
// coverage beside the policy states; Brand A's user sees Brand A only and
// is refused Brand B.
func TestDefenderThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testDefenderThroughTheHost(t, dialect) })
	}
}

func testDefenderThroughTheHost(t *testing.T, dialect string) {
	frameworksDir := deploymentFrameworks(t)
	o := hostOpts{pluginsHCL: compliancePlugins(fmt.Sprintf("    frameworks_dir = %q", frameworksDir)),
		env: map[string]string{"STEWARD_SIM_WORLD": defenderWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	waitStartupSync(t, h, admin, "defender")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "defender")); r.Status != "completed" || r.RecordsProcessed != 4 {
		t.Fatalf("defender sync %+v", r)
	}

	var assessments []defenderAssessment
	r := h.get("/api/v1/compliance/defender/assessments", admin)
	r.json(t, &assessments)
	got := make([]string, len(assessments))
	for i, a := range assessments {
		got[i] = a.Severity + " " + a.Status + " " + a.Name + " " + path.Base(a.Definition)
	}
	want := []string{
		"High Unhealthy Accounts with owner permissions should have MFA enabled defender-mfa",
		"High Unhealthy Storage accounts should use private link private-link",
		"Medium Healthy Storage accounts should use TLS 1.2 defender-tls",
		"Low NotApplicable Machines should have a vulnerability assessment solution .",
	}
	if !slices.Equal(got, want) || r.header.Get("X-Total-Count") != "4" {
		t.Fatalf("assessments (total %s):\n got %q\nwant %q", r.header.Get("X-Total-Count"), got, want)
	}
	a, b := assessments[0].TenantID, assessments[2].TenantID
	r = h.get("/api/v1/compliance/defender/assessments?status=Unhealthy&resource_type=microsoft.storage/storageaccounts", admin)
	r.json(t, &assessments)
	if len(assessments) != 1 || !strings.HasSuffix(assessments[0].ResourceID, "/storageAccounts/sa") || r.header.Get("X-Total-Count") != "1" {
		t.Errorf("unhealthy storage accounts %s", r.body)
	}
	expectInvalid(t, h.get("/api/v1/compliance/defender/assessments?severity=Critical", admin), "query.severity")
	expectInvalid(t, h.get("/api/v1/compliance/defender/assessments?limit=501", admin), "query.limit")

	type score struct {
		Current    float64  `json:"current"`
		Max        int      `json:"max"`
		Percentage *float64 `json:"percentage"`
	}
	var ss struct {
		score
		Tenants []struct {
			score
			TenantName    string `json:"tenant_name"`
			Subscriptions []struct {
				score
				Controls []struct {
					score
					DisplayName string `json:"display_name"`
					Healthy     int    `json:"healthy_resources"`
					Unhealthy   int    `json:"unhealthy_resources"`
				} `json:"controls"`
			} `json:"subscriptions"`
		} `json:"tenants"`
	}
	h.get("/api/v1/compliance/secure-score", admin).json(t, &ss)
	if ss.Current != 7.5 || ss.Max != 18 || ss.Percentage == nil || *ss.Percentage != 41.67 || len(ss.Tenants) != 2 {
		t.Fatalf("secure score %+v", ss)
	}
	ta := ss.Tenants[0]
	if ta.TenantName != "Brand A" || ta.Current != 3.5 || ta.Max != 14 || *ta.Percentage != 25 || len(ta.Subscriptions) != 1 ||
		len(ta.Subscriptions[0].Controls) != 2 {
		t.Fatalf("brand A's secure score %+v", ta)
	}
	if c := ta.Subscriptions[0].Controls[0]; c.DisplayName != "Enable MFA" || c.Current != 0 || c.Max != 10 || *c.Percentage != 0 || c.Unhealthy != 1 {
		t.Errorf("brand A's first control %+v", c)
	}
	if c := ta.Subscriptions[0].Controls[1]; c.DisplayName != "Encrypt data in transit" || *c.Percentage != 87.5 || c.Healthy != 7 || c.Unhealthy != 1 {
		t.Errorf("brand A's second control %+v", c)
	}
	if tb := ss.Tenants[1]; tb.TenantName != "Brand B" || tb.Current != 4 || *tb.Percentage != 100 {
		t.Errorf("brand B's secure score %+v", tb)
	}

	// The assessments' policies map to the acme framework's controls by
	// their names: MFA to AC.1, non-compliant on one resource; TLS to
	// DP.1, covered. The policy states alone map none of its controls.
	var d frameworkDetail
	h.get("/api/v1/compliance/frameworks/acme?include_policies=true&explain=true", admin).json(t, &d)
	if got := d.coverage().controls; len(got) != 2 || got["AC.1"] != "non_compliant 1 0/1 0%: defender-mfa NonCompliant(1) tier 2 low [mfa]" ||
		got["DP.1"] != "covered 1 1/0 100%: defender-tls Compliant(0) tier 2 low [tls]" {
		t.Errorf("acme coverage with the assessments: %q", got)
	}

	// The findings list both sources, each with its remediation: the
	// policy definition's guidance, the assessment's.
	type findingsPage struct {
		Items []sourcedFinding `json:"items"`
		Total int              `json:"total"`
	}
	listFindings := func(target, token string) (findingsPage, []string) {
		var page findingsPage
		h.get(target, token).json(t, &page)
		rows := make([]string, len(page.Items))
		for i, it := range page.Items {
			rows[i] = path.Base(it.ResourceID) + " " + path.Base(it.PolicyID) + " " + it.Source + " " + it.State + " " + it.AssessmentName + " " + it.Remediation
		}
		return page, rows
	}
	findings, gotFindings := listFindings("/api/v1/compliance/findings?sort_by=resource&sort_order=asc", admin)
	wantFindings := []string{
		"aaaaaaaa-0000-0000-0000-000000000001 defender-mfa defender NonCompliant d0000000-0000-4000-8000-000000000001 Remediate: Accounts with owner permissions should have MFA enabled",
		"sa private-link defender NonCompliant d0000000-0000-4000-8000-000000000002 Remediate: Storage accounts should use private link",
		"sa private-link policy NonCompliant  " + privateLinkRemediation,
		"sb defender-tls defender Compliant d0000000-0000-4000-8000-000000000004 Remediate: Storage accounts should use TLS 1.2",
		"sb private-link policy Compliant  " + privateLinkRemediation,
	}
	if findings.Total != 5 || !slices.Equal(gotFindings, wantFindings) {
		t.Errorf("findings (total %d):\n got %q\nwant %q", findings.Total, gotFindings, wantFindings)
	}
	for source, want := range map[string][]string{"defender": {wantFindings[0], wantFindings[1], wantFindings[3]}, "policy": {wantFindings[2], wantFindings[4]}} {
		findings, gotFindings = listFindings("/api/v1/compliance/findings?sort_by=resource&sort_order=asc&limit=2&source="+source, admin)
		if findings.Total != len(want) || !slices.Equal(gotFindings, want[:2]) {
			t.Errorf("%s findings (total %d): %q", source, findings.Total, gotFindings)
		}
	}
	findings, _ = listFindings("/api/v1/compliance/findings?framework=acme&control=AC.1", admin)
	if findings.Total != 1 || findings.Items[0].Source != "defender" || path.Base(findings.Items[0].PolicyID) != "defender-mfa" {
		t.Errorf("acme AC.1's findings %+v", findings)
	}
	expectInvalid(t, h.get("/api/v1/compliance/findings?source=cloud", admin), "query.source")

	// A standard user of Brand A sees Brand A only.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/compliance/defender/assessments", tokA).json(t, &assessments)
	if len(assessments) != 3 || slices.ContainsFunc(assessments, func(x defenderAssessment) bool { return x.TenantID != a }) {
		t.Errorf("brand A's user sees the assessments %+v", assessments)
	}
	h.get("/api/v1/compliance/secure-score", tokA).json(t, &ss)
	if len(ss.Tenants) != 1 || ss.Current != 3.5 || *ss.Percentage != 25 {
		t.Errorf("brand A's user's secure score %+v", ss)
	}
	findings, _ = listFindings("/api/v1/compliance/findings?source=defender", tokA)
	if findings.Total != 2 || slices.ContainsFunc(findings.Items, func(x sourcedFinding) bool { return x.TenantID != a }) {
		t.Errorf("brand A's user sees the defender findings %+v", findings)
	}
	for _, p := range []string{"/api/v1/compliance/defender/assessments?tenant_ids=" + b, "/api/v1/compliance/secure-score?tenant_ids=" + b,
		"/api/v1/compliance/findings?source=defender&tenant_ids=" + b} {
		if r := h.get(p, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
			t.Errorf("%s for brand A's user: %d %s", p, r.status, r.body)
		}
	}
}
