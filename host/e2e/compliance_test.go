package e2e

import (
	"context"
	"fmt"
	"net/http"
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
// resources comply (100 %).
func complianceWorld(t *testing.T) string {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	now := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	st := func(sub, def, name, category, severity, res, state string) world.PolicyState {
		return world.PolicyState{SubscriptionID: sub, PolicyDefinitionID: "/providers/Microsoft.Authorization/policyDefinitions/" + def, PolicyName: name,
			Category: category, Severity: severity, ResourceID: "/subscriptions/" + sub + "/resourceGroups/rg/providers/" + res,
			ComplianceState: state, Timestamp: now}
	}
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		PolicyStates: []world.PolicyState{
			st(subA, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sa", "NonCompliant"),
			st(subA, "vm-backup", "Azure Backup should be enabled for VMs", "Backup", "Medium", "Microsoft.Compute/virtualMachines/vm", "Compliant"),
			st(subB, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sb", "Compliant"),
			st(subB, "vm-backup", "Azure Backup should be enabled for VMs", "Backup", "Medium", "Microsoft.Compute/virtualMachines/vb", "Compliant"),
		},
	})
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
// deprecated tenant_id is answered with a Deprecation header.
func TestComplianceThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceThroughTheHost(t, dialect) })
	}
}

func testComplianceThroughTheHost(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: compliancePlugins(""), env: map[string]string{"STEWARD_SIM_WORLD": complianceWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "compliance")); r.Status != "completed" || r.RecordsProcessed != 4 {
		t.Fatalf("compliance sync %+v", r)
	}

	var sum struct {
		Percent      *float64 `json:"overall_compliance_percent"`
		NonCompliant int      `json:"non_compliant_resources"`
		Policies     int      `json:"total_policies"`
	}
	h.get("/api/v1/compliance/summary", admin).json(t, &sum)
	if sum.Percent == nil || *sum.Percent != 75 || sum.NonCompliant != 1 || sum.Policies != 2 {
		t.Fatalf("summary %+v", sum)
	}
	var scores []complianceScore
	r := h.get("/api/v1/compliance/scores", admin)
	r.json(t, &scores)
	if len(scores) != 2 || scores[0].TenantName != "Brand A" || *scores[0].Percent != 50 || *scores[1].Percent != 100 || r.header.Get("X-Total-Count") != "2" {
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
	if len(trend) != 7 || trend[6].Percent == nil || *trend[6].Percent != 75 {
		t.Fatalf("trend %+v", trend)
	}
	var status struct {
		Synced int `json:"synced_tenants"`
		Stale  int `json:"stale_tenants"`
		States int `json:"policy_states"`
	}
	h.get("/api/v1/compliance/status", admin).json(t, &status)
	if status.Synced != 2 || status.Stale != 0 || status.States != 4 {
		t.Fatalf("status %+v", status)
	}
	if r := h.get("/api/v1/compliance/scores?tenant_id="+b, admin); r.status != http.StatusOK || r.header.Get("Deprecation") == "" || !strings.Contains(string(r.body), "Brand B") {
		t.Fatalf("scores of the deprecated tenant_id: %d %v %s", r.status, r.header, r.body)
	}
	testFrameworksThroughTheHost(t, h, admin)
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
	for _, path := range []string{"/api/v1/compliance/summary?tenant_ids=" + b, "/api/v1/compliance/frameworks/soc2?tenant_ids=" + b, "/api/v1/compliance/scores?tenant_id=" + b, "/api/v1/compliance/non-compliant?tenant_ids=" + b} {
		if r := h.get(path, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
			t.Errorf("%s for brand A's user: %d %s", path, r.status, r.body)
		}
	}
}

// testFrameworksThroughTheHost: the framework list, a framework's coverage
// with its explained policies and its source. The world's two policies map
// to SOC 2 by keywords only: private link (non-compliant in Brand A) to
// CC6.6 and C1.1, backup to CC7.5, CC9.1 and A1.2 — 5 of its 61 controls.
func testFrameworksThroughTheHost(t *testing.T, h *host, admin string) {
	t.Helper()
	var list struct {
		Frameworks []struct {
			ID       string `json:"id"`
			Coverage struct {
				With int `json:"controls_with_coverage"`
			} `json:"coverage_summary"`
		} `json:"frameworks"`
		Disclaimer string `json:"disclaimer"`
	}
	h.get("/api/v1/compliance/frameworks", admin).json(t, &list)
	covered := -1
	for _, f := range list.Frameworks {
		if f.ID == "soc2" {
			covered = f.Coverage.With
		}
	}
	if covered != 5 || list.Disclaimer == "" {
		t.Fatalf("frameworks %+v", list)
	}
	var d struct {
		Categories []struct {
			Controls []struct {
				ID       string `json:"id"`
				Status   string `json:"status"`
				Policies []struct {
					Tier     int      `json:"tier"`
					Keywords []string `json:"keywords"`
				} `json:"matched_policies"`
			} `json:"controls"`
		} `json:"categories"`
		Disclaimer string `json:"disclaimer"`
	}
	h.get("/api/v1/compliance/frameworks/soc2?include_policies=true&explain=true", admin).json(t, &d)
	found := false
	for _, cat := range d.Categories {
		for _, c := range cat.Controls {
			if c.ID == "CC6.6" {
				found = c.Status == "non_compliant" && len(c.Policies) == 1 && c.Policies[0].Tier == 2 && slices.Equal(c.Policies[0].Keywords, []string{"private", "link"})
			}
		}
	}
	if !found || d.Disclaimer == "" {
		t.Fatalf("SOC 2 coverage: CC6.6 is not non-compliant through private link: %+v", d)
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
