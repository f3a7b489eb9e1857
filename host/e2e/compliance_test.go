package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// compliancePlugins declares the compliance plugin, with config (HCL
// attributes, may be empty) in its config block.
func compliancePlugins(config string) string {
	return fmt.Sprintf("plugin \"compliance\" {\n  binary = %q\n  cloud_credential = true\n  config {\n%s\n  }\n}\n", filepath.Join(binDir, "plugins", "compliance"), config)
}

// complianceWorld: Brand A's storage account breaks a High policy and its
// VM complies with a Medium one (1 of 2 resources, 50 %); Brand B's two
// resources comply (100 %). extra states are added to these.
func complianceWorld(t *testing.T, extra ...world.PolicyState) string {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		PolicyStates: append([]world.PolicyState{
			policyState(subA, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sa", "NonCompliant"),
			policyState(subA, "vm-backup", "Azure Backup should be enabled for VMs", "Backup", "Medium", "Microsoft.Compute/virtualMachines/vm", "Compliant"),
			policyState(subB, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sb", "Compliant"),
			policyState(subB, "vm-backup", "Azure Backup should be enabled for VMs", "Backup", "Medium", "Microsoft.Compute/virtualMachines/vb", "Compliant"),
		}, extra...),
	})
}

// policyState is a world's policy state of the definition def on the
// resource res (a provider type and name) in resource group rg of the
// subscription, evaluated an hour ago, with the initiative group names.
func policyState(sub, def, name, category, severity, res, state string, groups ...string) world.PolicyState {
	return world.PolicyState{SubscriptionID: sub, PolicyDefinitionID: "/providers/Microsoft.Authorization/policyDefinitions/" + def, PolicyName: name,
		Category: category, Severity: severity, ResourceID: "/subscriptions/" + sub + "/resourceGroups/rg/providers/" + res,
		GroupNames: groups, ComplianceState: state, Timestamp: time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}
}

// frameworkPolicyStates are four more policies for the framework coverage,
// each assigned through a regulatory-compliance initiative (with its group
// names), on two key vaults, a web app and Brand A's VM:
//
//	certificate-validity     SOC_2_CC6.1, NIST_CSF_v2.0_PR.AA_01  kva (A) NonCompliant, kvb (B) Compliant
//	webapp-managed-identity  NIST_CSF_v2.0_PR_AA_05               appb (B) Compliant
//	keyvault-soft-delete     SOC_2_CC6.5,                         kva (A) Compliant, kvb (B) NonCompliant
//	                         Azure_Security_Benchmark_v3.0_DP-8,
//	                         CIS_Azure_Foundations_v3.0.0_3.3.5
//	cost-centre-label        NIST_CSF_v2.0_PR.AA (a category)     vm (A) Compliant
//
// With them Brand A has 1 compliant resource of 3 (vm; sa and kva are not),
// 33.33 %; Brand B 3 of 4 (sb, vb, appb; kvb is not), 75 %; together 4 of 7,
// 57.14 %; 10 states of 6 policies.
func frameworkPolicyStates() []world.PolicyState {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	kva, kvb := "Microsoft.KeyVault/vaults/kva", "Microsoft.KeyVault/vaults/kvb"
	certs, softDelete := "Certificates should have the specified maximum validity period", "Key vaults should have soft delete enabled"
	return []world.PolicyState{
		policyState(subA, "certificate-validity", certs, "Key Vault", "Medium", kva, "NonCompliant", "SOC_2_CC6.1", "NIST_CSF_v2.0_PR.AA_01"),
		policyState(subB, "certificate-validity", certs, "Key Vault", "Medium", kvb, "Compliant", "SOC_2_CC6.1", "NIST_CSF_v2.0_PR.AA_01"),
		policyState(subB, "webapp-managed-identity", "Managed identity should be used in web apps", "App Service", "Medium", "Microsoft.Web/sites/appb", "Compliant", "NIST_CSF_v2.0_PR_AA_05"),
		policyState(subA, "keyvault-soft-delete", softDelete, "Key Vault", "Medium", kva, "Compliant", "SOC_2_CC6.5", "Azure_Security_Benchmark_v3.0_DP-8", "CIS_Azure_Foundations_v3.0.0_3.3.5"),
		policyState(subB, "keyvault-soft-delete", softDelete, "Key Vault", "Medium", kvb, "NonCompliant", "SOC_2_CC6.5", "Azure_Security_Benchmark_v3.0_DP-8", "CIS_Azure_Foundations_v3.0.0_3.3.5"),
		policyState(subA, "cost-centre-label", "Virtual machines should carry a cost centre label", "Tags", "Low", "Microsoft.Compute/virtualMachines/vm", "Compliant", "NIST_CSF_v2.0_PR.AA"),
	}
}

type complianceScore struct {
	TenantID   string   `json:"tenant_id"`
	TenantName string   `json:"tenant_name"`
	Percent    *float64 `json:"overall_compliance_percent"`
}

// TestComplianceThroughTheHost: the world's policy states reach the
// compliance routes through Policy Insights, the plugin's job and tables,
// on both databases, every answer checked against the OpenAPI document; a
// standard user of Brand A sees only Brand A and is refused Brand B; the
// deprecated tenant_id is answered with a Deprecation header; the
// framework coverage of the admin and of Brand A's user is the one worked
// out by hand in testFrameworksThroughTheHost.
func TestComplianceThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceThroughTheHost(t, dialect) })
	}
}

func testComplianceThroughTheHost(t *testing.T, dialect string) {
	// A framework of the deployment's own, a data file in the folder its
	// plugins.hcl names, beside the built-in ones.
	frameworksDir := t.TempDir()
	acme, err := os.ReadFile(filepath.Join("..", "..", "plugins", "compliance", "coverage", "testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(frameworksDir, "acme.json"), acme, 0o600); err != nil {
		t.Fatal(err)
	}
	o := hostOpts{pluginsHCL: compliancePlugins(fmt.Sprintf("    frameworks_dir = %q", frameworksDir)),
		env: map[string]string{"STEWARD_SIM_WORLD": complianceWorld(t, frameworkPolicyStates()...), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "compliance")); r.Status != "completed" || r.RecordsProcessed != 10 {
		t.Fatalf("compliance sync %+v", r)
	}

	var sum struct {
		Percent      *float64 `json:"overall_compliance_percent"`
		NonCompliant int      `json:"non_compliant_resources"`
		Policies     int      `json:"total_policies"`
	}
	// 4 of 7 resources compliant; sa, kva and kvb not; 6 policies.
	h.get("/api/v1/compliance/summary", admin).json(t, &sum)
	if sum.Percent == nil || *sum.Percent != 57.14 || sum.NonCompliant != 3 || sum.Policies != 6 {
		t.Fatalf("summary %+v", sum)
	}
	var scores []complianceScore
	r := h.get("/api/v1/compliance/scores", admin)
	r.json(t, &scores)
	if len(scores) != 2 || scores[0].TenantName != "Brand A" || *scores[0].Percent != 33.33 || *scores[1].Percent != 75 || r.header.Get("X-Total-Count") != "2" {
		t.Fatalf("scores %s", r.body)
	}
	a, b := scores[0].TenantID, scores[1].TenantID
	var nc []struct {
		PolicyName string `json:"policy_name"`
		Severity   string `json:"severity"`
		Count      int    `json:"non_compliant_count"`
		Source     string `json:"source"`
	}
	h.get("/api/v1/compliance/non-compliant?severity=High", admin).json(t, &nc)
	if len(nc) != 1 || nc[0].PolicyName != "Storage accounts should use private link" || nc[0].Count != 1 || nc[0].Source != "policy" {
		t.Fatalf("non-compliant %+v", nc)
	}
	var trend []struct {
		Date    string   `json:"date"`
		Percent *float64 `json:"overall_compliance_percent"`
	}
	h.get("/api/v1/compliance/trends?days=7", admin).json(t, &trend)
	if len(trend) != 7 || trend[6].Percent == nil || *trend[6].Percent != 57.14 {
		t.Fatalf("trend %+v", trend)
	}
	var status struct {
		Synced int `json:"synced_tenants"`
		Stale  int `json:"stale_tenants"`
		States int `json:"policy_states"`
	}
	h.get("/api/v1/compliance/status", admin).json(t, &status)
	if status.Synced != 2 || status.Stale != 0 || status.States != 10 {
		t.Fatalf("status %+v", status)
	}
	if r := h.get("/api/v1/compliance/scores?tenant_id="+b, admin); r.status != http.StatusOK || r.header.Get("Deprecation") == "" || !strings.Contains(string(r.body), "Brand B") {
		t.Fatalf("scores of the deprecated tenant_id: %d %v %s", r.status, r.header, r.body)
	}
	expectInvalid(t, h.get("/api/v1/compliance/scores?limit=501", admin), "query.limit")
	expectInvalid(t, h.get("/api/v1/compliance/trends?days=6", admin), "query.days")
	expectInvalid(t, h.get("/api/v1/compliance/non-compliant?severity=Critical", admin), "query.severity")

	// A standard user of Brand A sees Brand A only.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/compliance/scores", tokA).json(t, &scores)
	if len(scores) != 1 || scores[0].TenantID != a {
		t.Fatalf("brand A's user sees the scores %+v", scores)
	}
	testFrameworksThroughTheHost(t, h, admin, tokA)
	testDeploymentFramework(t, h, tokA)
	for _, path := range []string{"/api/v1/compliance/summary?tenant_ids=" + b, "/api/v1/compliance/frameworks/soc2?tenant_ids=" + b, "/api/v1/compliance/scores?tenant_id=" + b, "/api/v1/compliance/non-compliant?tenant_ids=" + b} {
		if r := h.get(path, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
			t.Errorf("%s for brand A's user: %d %s", path, r.status, r.body)
		}
	}
}

// frameworkCoverage is a framework's coverage as a caller should see it:
// of its total controls, covered have a policy in scope (percent of total,
// in the framework list and the detail); categories holds the
// coverage_percent of each category above 0, controls each control with a
// policy as "status matched compliant/non_compliant compliance_percent%: "
// and its matched policies, non-compliant first, as "definition
// state(non_compliant_count) tier confidence" and the group name or the
// keyword set that matched.
type frameworkCoverage struct {
	total, covered int
	percent        float64
	categories     map[string]float64
	controls       map[string]string
}

type frameworkDetail struct {
	Framework struct {
		ID string `json:"id"`
	} `json:"framework"`
	Percent    float64 `json:"overall_coverage_percent"`
	Categories []struct {
		ID       string  `json:"id"`
		Percent  float64 `json:"coverage_percent"`
		Controls []struct {
			ID           string  `json:"id"`
			Status       string  `json:"status"`
			Matched      int     `json:"matched_policies_count"`
			Compliant    int     `json:"compliant_count"`
			NonCompliant int     `json:"non_compliant_count"`
			Percent      float64 `json:"compliance_percent"`
			Policies     []struct {
				ID           string   `json:"policy_definition_id"`
				State        string   `json:"compliance_state"`
				NonCompliant int      `json:"non_compliant_count"`
				Confidence   string   `json:"mapping_confidence"`
				Tier         int      `json:"tier"`
				GroupName    string   `json:"group_name"`
				Keywords     []string `json:"keywords"`
			} `json:"matched_policies"`
		} `json:"controls"`
	} `json:"categories"`
	Disclaimer string `json:"disclaimer"`
}

// coverage reads a detail as a frameworkCoverage (without total).
func (d frameworkDetail) coverage() frameworkCoverage {
	got := frameworkCoverage{percent: d.Percent, categories: map[string]float64{}, controls: map[string]string{}}
	for _, cat := range d.Categories {
		if cat.Percent != 0 {
			got.categories[cat.ID] = cat.Percent
		}
		for _, c := range cat.Controls {
			if c.Status == "not_covered" && c.Matched == 0 && len(c.Policies) == 0 {
				continue
			}
			got.covered++
			row := fmt.Sprintf("%s %d %d/%d %v%%:", c.Status, c.Matched, c.Compliant, c.NonCompliant, c.Percent)
			for i, p := range c.Policies {
				if i > 0 {
					row += ";"
				}
				row += fmt.Sprintf(" %s %s(%d) tier %d %s %s", path.Base(p.ID), p.State, p.NonCompliant, p.Tier, p.Confidence, p.GroupName)
				if p.Keywords != nil {
					row += fmt.Sprint(p.Keywords)
				}
			}
			got.controls[c.ID] = row
		}
	}
	return got
}

// testDeploymentFramework: the framework the deployment added as a data
// file (acme.json: 6 controls in 3 categories) is listed and served like a
// built-in one, its data among the source in force, with no rebuild.
func testDeploymentFramework(t *testing.T, h *host, token string) {
	t.Helper()
	type listed struct {
		ID    string `json:"id"`
		Total int    `json:"total_controls"`
	}
	var list struct {
		Frameworks []listed `json:"frameworks"`
	}
	h.get("/api/v1/compliance/frameworks", token).json(t, &list)
	if i := slices.IndexFunc(list.Frameworks, func(f listed) bool { return f.ID == "acme" }); i < 0 || list.Frameworks[i].Total != 6 {
		t.Errorf("the deployment's acme framework in the list %+v, want 6 controls", list.Frameworks)
	}
	var d frameworkDetail
	h.get("/api/v1/compliance/frameworks/acme", token).json(t, &d)
	var categories []string
	for _, c := range d.Categories {
		categories = append(categories, c.ID)
	}
	if d.Framework.ID != "acme" || d.Disclaimer == "" || !slices.Equal(categories, []string{"AC", "DP", "OP"}) {
		t.Errorf("the acme framework's detail: %q, categories %v, disclaimer %q", d.Framework.ID, categories, d.Disclaimer)
	}
	r := h.get("/api/v1/compliance/frameworks/acme/source", token)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "Acme cloud baseline") {
		t.Errorf("the acme framework's source: %d %.200s", r.status, r.body)
	}
}

// testFrameworksThroughTheHost: the framework list and the coverage of
// SOC 2 and the NIST CSF, explained, as the admin (both brands) and as
// Brand A's user see them, worked out by hand from
// plugins/compliance/policies/frameworks and the rules in its README and
// the mapping package's doc; then a framework's source.
//
// The six policies map as follows (tier 2 only in a framework where no
// group name of the policy maps it):
//
//	private-link             tier 2 [private link] (medium): SOC 2 CC6.6, C1.1; nothing in the CSF
//	vm-backup                tier 2 [backup] (low): SOC 2 A1.2; nothing in the CSF
//	certificate-validity     tier 1: SOC 2 CC6.1 (SOC_2_CC6.1); CSF PR.AA-01 (dotted NIST_CSF_v2.0_PR.AA_01)
//	webapp-managed-identity  tier 1: CSF PR.AA-05 (underscore NIST_CSF_v2.0_PR_AA_05), not PR.AA-01
//	                         as its keywords [managed identity] would; nothing in SOC 2
//	keyvault-soft-delete     tier 1: SOC 2 CC6.5 (SOC_2_CC6.5), not A1.2, C1.2 or P4.3 as its keywords
//	                         [soft delete] would; tier 2 [soft delete] (medium): CSF PR.DS-11, RC.RP-03;
//	                         tier 1: MCSB DP-8 (Azure_Security_Benchmark_v3.0_DP-8), CIS v3.0.0 3.3.5
//	cost-centre-label        nothing: its group names a CSF category, its words no keyword set
//
// A policy's state is over the resources in scope: for the admin
// private-link, certificate-validity and keyvault-soft-delete are
// NonCompliant (one resource each), the others Compliant; for Brand A's
// user keyvault-soft-delete is Compliant (kva) and webapp-managed-identity
// (Brand B's only) is out of scope. A control's counts are of resources: a
// resource fails it when a mapped policy found it non-compliant, passes it
// when none did and one found it compliant; its compliance percent is
// passing resources over passing and failing ones. Coverage percents are
// covered controls over controls, to one decimal. MCSB, CIS v3.0.0, PCI
// DSS and NIS2 map by group names alone, and no policy here has PCI DSS's
// or NIS2's: none of their controls is covered.
func testFrameworksThroughTheHost(t *testing.T, h *host, admin, userA string) {
	t.Helper()
	const (
		privateLink = " private-link NonCompliant(1) tier 2 medium [private link]"
		backup      = " vm-backup Compliant(0) tier 2 low [backup]"
		certsCC61   = " certificate-validity NonCompliant(1) tier 1 high SOC_2_CC6.1"
		certsPRAA01 = " certificate-validity NonCompliant(1) tier 1 high NIST_CSF_v2.0_PR.AA_01"
	)
	// soc2 is SOC 2 with the rows of CC6.1, CC6.5, CC6.6 and C1.1, and of
	// the controls vm-backup maps to, which differ between the callers.
	soc2 := func(cc61, cc65, cc66, backupRow string) frameworkCoverage {
		return frameworkCoverage{
			// CC6.1, CC6.5, CC6.6, A1.2, C1.1: 5 of 61, 8.197 → 8.2 %.
			total: 61, covered: 5, percent: 8.2,
			// CC6: 3 of 8 = 37.5; A1: 1 of 3 = 33.33 → 33.3; C1: 1 of 2 = 50.
			categories: map[string]float64{"CC6": 37.5, "A1": 33.3, "C1": 50},
			controls: map[string]string{
				"CC6.1": cc61 + certsCC61,
				"CC6.5": cc65,
				"CC6.6": cc66 + privateLink,
				"C1.1":  cc66 + privateLink,
				// Only the backup: keyvault-soft-delete's group name keeps
				// its keywords off A1.2.
				"A1.2": backupRow + backup,
			},
		}
	}
	// mcsb is the Microsoft cloud security benchmark, where only DP-8 is
	// covered, by the key vaults' soft delete (1 of 85, 1.176 → 1.2 %; DP:
	// 1 of 8 = 12.5), and cisV3 CIS v3.0.0, where only 3.3.5 is (1 of 159,
	// 0.629 → 0.6 %; section 3: 1 of 34, 2.941 → 2.9).
	mcsb := func(softDelete string) frameworkCoverage {
		return frameworkCoverage{total: 85, covered: 1, percent: 1.2, categories: map[string]float64{"DP": 12.5},
			controls: map[string]string{"DP-8": softDelete + " tier 1 high Azure_Security_Benchmark_v3.0_DP-8"}}
	}
	cisV3 := func(softDelete string) frameworkCoverage {
		return frameworkCoverage{total: 159, covered: 1, percent: 0.6, categories: map[string]float64{"3": 2.9},
			controls: map[string]string{"3.3.5": softDelete + " tier 1 high CIS_Azure_Foundations_v3.0.0_3.3.5"}}
	}
	want := map[string]map[string]frameworkCoverage{
		"admin": {
			// kva fails CC6.1 and kvb passes it, sa fails CC6.6 and sb
			// passes it, kvb fails CC6.5 and kva passes it: 1 of 2, 50 %
			// each; vm and vb pass the backup's controls.
			"soc2": soc2("partial 1 1/1 50%:", "partial 1 1/1 50%: keyvault-soft-delete NonCompliant(1) tier 1 high SOC_2_CC6.5",
				"partial 1 1/1 50%:", "covered 1 2/0 100%:"),
			"nist_csf": {
				// PR.AA-01, PR.AA-05, PR.DS-11, RC.RP-03: 4 of 106, 3.774 → 3.8 %.
				total: 106, covered: 4, percent: 3.8,
				// PR.AA: 2 of 6 = 33.33 → 33.3; PR.DS: 1 of 4 = 25;
				// RC.RP: 1 of 6 = 16.67 → 16.7.
				categories: map[string]float64{"PR.AA": 33.3, "PR.DS": 25, "RC.RP": 16.7},
				controls: map[string]string{
					"PR.AA-01": "partial 1 1/1 50%:" + certsPRAA01,
					"PR.AA-05": "covered 1 1/0 100%: webapp-managed-identity Compliant(0) tier 1 high NIST_CSF_v2.0_PR_AA_05",
					// kvb fails and kva passes: 1 of 2, 50 %.
					"PR.DS-11": "partial 1 1/1 50%: keyvault-soft-delete NonCompliant(1) tier 2 medium [soft delete]",
					"RC.RP-03": "partial 1 1/1 50%: keyvault-soft-delete NonCompliant(1) tier 2 medium [soft delete]",
				},
			},
			"mcsb":         mcsb("partial 1 1/1 50%: keyvault-soft-delete NonCompliant(1)"),
			"cis_azure_v3": cisV3("partial 1 1/1 50%: keyvault-soft-delete NonCompliant(1)"),
			"pci_dss":      {total: 250, categories: map[string]float64{}, controls: map[string]string{}},
			"nis2":         {total: 10, categories: map[string]float64{}, controls: map[string]string{}},
		},
		"Brand A's user": {
			"soc2": soc2("non_compliant 1 0/1 0%:", "covered 1 1/0 100%: keyvault-soft-delete Compliant(0) tier 1 high SOC_2_CC6.5",
				"non_compliant 1 0/1 0%:", "covered 1 1/0 100%:"),
			"nist_csf": {
				// PR.AA-05 is not covered without Brand B: 3 of 106, 2.830 → 2.8 %.
				total: 106, covered: 3, percent: 2.8,
				// PR.AA: 1 of 6 = 16.67 → 16.7.
				categories: map[string]float64{"PR.AA": 16.7, "PR.DS": 25, "RC.RP": 16.7},
				controls: map[string]string{
					"PR.AA-01": "non_compliant 1 0/1 0%:" + certsPRAA01,
					"PR.DS-11": "covered 1 1/0 100%: keyvault-soft-delete Compliant(0) tier 2 medium [soft delete]",
					"RC.RP-03": "covered 1 1/0 100%: keyvault-soft-delete Compliant(0) tier 2 medium [soft delete]",
				},
			},
			"mcsb":         mcsb("covered 1 1/0 100%: keyvault-soft-delete Compliant(0)"),
			"cis_azure_v3": cisV3("covered 1 1/0 100%: keyvault-soft-delete Compliant(0)"),
			"pci_dss":      {total: 250, categories: map[string]float64{}, controls: map[string]string{}},
			"nis2":         {total: 10, categories: map[string]float64{}, controls: map[string]string{}},
		},
	}
	for who, token := range map[string]string{"admin": admin, "Brand A's user": userA} {
		var list struct {
			Frameworks []struct {
				ID       string `json:"id"`
				Total    int    `json:"total_controls"`
				Coverage struct {
					With    int     `json:"controls_with_coverage"`
					Without int     `json:"controls_without_coverage"`
					Percent float64 `json:"overall_coverage_percent"`
				} `json:"coverage_summary"`
			} `json:"frameworks"`
			Disclaimer string `json:"disclaimer"`
		}
		h.get("/api/v1/compliance/frameworks", token).json(t, &list)
		if list.Disclaimer == "" {
			t.Errorf("the framework list for %s has no disclaimer", who)
		}
		for id, w := range want[who] {
			listed := false
			for _, f := range list.Frameworks {
				if f.ID == id {
					listed = true
					if f.Total != w.total || f.Coverage.With != w.covered || f.Coverage.Without != w.total-w.covered || f.Coverage.Percent != w.percent {
						t.Errorf("%s in the framework list for %s: %+v, want %d of %d controls covered, %v %%", id, who, f, w.covered, w.total, w.percent)
					}
				}
			}
			if !listed {
				t.Errorf("%s is not in the framework list for %s: %+v", id, who, list.Frameworks)
			}
			var d frameworkDetail
			h.get("/api/v1/compliance/frameworks/"+id+"?include_policies=true&explain=true", token).json(t, &d)
			got := d.coverage()
			if d.Framework.ID != id || d.Disclaimer == "" || got.covered != w.covered || got.percent != w.percent {
				t.Errorf("%s for %s: framework %q, %d controls covered, %v %%, want %d, %v %%", id, who, d.Framework.ID, got.covered, got.percent, w.covered, w.percent)
			}
			if !maps.Equal(got.categories, w.categories) {
				t.Errorf("%s for %s: categories' coverage %v, want %v", id, who, got.categories, w.categories)
			}
			controls := slices.Sorted(maps.Keys(w.controls))
			for c := range got.controls {
				if _, ok := w.controls[c]; !ok {
					controls = append(controls, c)
				}
			}
			for _, c := range controls {
				if got.controls[c] != w.controls[c] {
					t.Errorf("%s %s for %s:\n got %q\nwant %q", id, c, who, got.controls[c], w.controls[c])
				}
			}
		}
	}
	var src struct {
		Hash string `json:"hash"`
		Rego []struct {
			Name string `json:"name"`
		} `json:"rego"`
	}
	h.get("/api/v1/compliance/frameworks/soc2/source", admin).json(t, &src)
	if len(src.Hash) != 64 || len(src.Rego) == 0 {
		t.Fatalf("SOC 2 source %+v", src)
	}
	if r := h.get("/api/v1/compliance/frameworks/nope", admin); r.status != http.StatusNotFound {
		t.Fatalf("an unknown framework: %d %s", r.status, r.body)
	}
	expectInvalid(t, h.get("/api/v1/compliance/frameworks/soc2?include_policies=maybe", admin), "query.include_policies")
}
