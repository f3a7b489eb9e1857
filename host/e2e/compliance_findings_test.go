package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// purgeStates: a policy assigned through SOC 2's CC6.1 group name on 55
// key vaults of Brand A, 18 of them (kv00–kv17) compliant and 37
// (kv18–kv54) not, and on Brand B's kvb, not compliant.
func purgeStates() []world.PolicyState {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	const name = "Key vaults should have deletion protection enabled"
	out := []world.PolicyState{policyState(subB, "kv-purge", name, "Key Vault", "High", "Microsoft.KeyVault/vaults/kvb", "NonCompliant", "SOC_2_CC6.1")}
	for i := range 55 {
		state := "NonCompliant"
		if i < 18 {
			state = "Compliant"
		}
		out = append(out, policyState(subA, "kv-purge", name, "Key Vault", "High", fmt.Sprintf("Microsoft.KeyVault/vaults/kv%02d", i), state, "SOC_2_CC6.1"))
	}
	return out
}

type controlResources struct {
	Result  string   `json:"result"`
	Passed  int      `json:"passed_resources"`
	Failed  int      `json:"failed_resources"`
	Percent *float64 `json:"compliance_percent"`
	Failing []struct {
		ResourceID string `json:"resource_id"`
		Link       string `json:"link"`
		Policies   []struct {
			ID    string `json:"policy_definition_id"`
			State string `json:"compliance_state"`
		} `json:"policies"`
	} `json:"failing_resources"`
	Passing []struct {
		ResourceID string `json:"resource_id"`
	} `json:"passing_resources"`
	Policies []struct {
		ID        string `json:"policy_definition_id"`
		Tier      int    `json:"tier"`
		GroupName string `json:"group_name"`
	} `json:"policies"`
}

type findingsPage struct {
	Items []struct {
		TenantID   string `json:"tenant_id"`
		ResourceID string `json:"resource_id"`
		PolicyID   string `json:"policy_definition_id"`
		State      string `json:"compliance_state"`
		Severity   string `json:"severity"`
		Link       string `json:"link"`
		Controls   []struct {
			FrameworkID string `json:"framework_id"`
			ControlID   string `json:"control_id"`
		} `json:"controls"`
	} `json:"items"`
	Total int `json:"total"`
}

// TestComplianceFindingsThroughTheHost: on a world with known states, on
// both databases, every answer checked against the OpenAPI document, a
// control's status and percentage count resources (Brand A's 18 of 55
// compliant key vaults read 32.73 %, not 0), its failing resources are
// exactly the world's, the findings filter, sort and page, and Brand A's
// user is refused Brand B and never sees its findings.
func TestComplianceFindingsThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceFindingsThroughTheHost(t, dialect) })
	}
}

func testComplianceFindingsThroughTheHost(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: compliancePlugins(""),
		env: map[string]string{"STEWARD_SIM_WORLD": complianceWorld(t, purgeStates()...), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "compliance")); r.Status != "completed" || r.RecordsProcessed != 60 {
		t.Fatalf("compliance sync %+v", r)
	}
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	var scores []complianceScore
	h.get("/api/v1/compliance/scores", admin).json(t, &scores)
	if len(scores) != 2 || scores[0].TenantName != "Brand A" {
		t.Fatalf("scores %+v", scores)
	}
	b := scores[1].TenantID

	vault := func(i int) string {
		return fmt.Sprintf("/subscriptions/aaaaaaaa-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv%02d", i)
	}
	var wantFailing []string
	for i := 18; i < 55; i++ {
		wantFailing = append(wantFailing, vault(i))
	}
	var c controlResources
	h.get("/api/v1/compliance/frameworks/soc2/controls/CC6.1?limit=500", tokA).json(t, &c)
	var failing []string
	for _, r := range c.Failing {
		failing = append(failing, r.ResourceID)
		if len(r.Policies) != 1 || !strings.HasSuffix(r.Policies[0].ID, "/kv-purge") || r.Policies[0].State != "NonCompliant" ||
			r.Link != "/resources/item?resource_id="+url.QueryEscape(r.ResourceID) {
			t.Errorf("failing %+v", r)
		}
	}
	if !slices.Equal(failing, wantFailing) || len(c.Passing) != 18 || c.Passing[0].ResourceID != vault(0) {
		t.Errorf("CC6.1's failing resources %v, want %v; %d passing", failing, wantFailing, len(c.Passing))
	}
	if c.Result != "failed" || c.Passed != 18 || c.Failed != 37 || c.Percent == nil || *c.Percent != 32.73 {
		t.Errorf("CC6.1 for Brand A's user: %s %d/%d %v, want failed 18/37 32.73 %%", c.Result, c.Passed, c.Failed, c.Percent)
	}
	if len(c.Policies) != 1 || c.Policies[0].Tier != 1 || c.Policies[0].GroupName != "SOC_2_CC6.1" {
		t.Errorf("CC6.1's policies %+v", c.Policies)
	}
	// The framework detail counts the same resources: 18 of 55, 32.7 %.
	var d frameworkDetail
	h.get("/api/v1/compliance/frameworks/soc2", tokA).json(t, &d)
	for _, cat := range d.Categories {
		for _, ctl := range cat.Controls {
			if ctl.ID == "CC6.1" && (ctl.Status != "partial" || ctl.Compliant != 18 || ctl.NonCompliant != 37 || ctl.Percent != 32.7) {
				t.Errorf("the detail's CC6.1 for Brand A's user %+v", ctl)
			}
		}
	}
	// The admin counts Brand B's kvb too: 18 of 56, 32.14 %.
	h.get("/api/v1/compliance/frameworks/soc2/controls/CC6.1?limit=1", admin).json(t, &c)
	if c.Failed != 38 || *c.Percent != 32.14 || len(c.Failing) != 1 {
		t.Errorf("CC6.1 for the admin: %d failing (%d listed), %v %%", c.Failed, len(c.Failing), *c.Percent)
	}

	var page findingsPage
	h.get("/api/v1/compliance/findings?framework=soc2&control=CC6.1&state=non_compliant&sort_by=resource&sort_order=asc&limit=5&offset=2", tokA).json(t, &page)
	var got []string
	for _, it := range page.Items {
		got = append(got, it.ResourceID)
		if it.Severity != "High" || it.State != "NonCompliant" || len(it.Controls) != 1 || it.Controls[0].ControlID != "CC6.1" {
			t.Errorf("finding %+v", it)
		}
	}
	if page.Total != 37 || !slices.Equal(got, wantFailing[2:7]) {
		t.Errorf("CC6.1's non-compliant findings: %d %v, want 37 %v", page.Total, got, wantFailing[2:7])
	}
	h.get("/api/v1/compliance/findings?framework=soc2&control=CC6.1&state=compliant&sort_by=resource&sort_order=desc&limit=1", tokA).json(t, &page)
	if page.Total != 18 || len(page.Items) != 1 || page.Items[0].ResourceID != vault(17) {
		t.Errorf("CC6.1's compliant findings, last first: %+v", page)
	}
	// Brand A has 57 findings: 55 key vaults, sa and vm; High first.
	h.get("/api/v1/compliance/findings?limit=500", tokA).json(t, &page)
	if page.Total != 57 || len(page.Items) != 57 || page.Items[0].Severity != "High" || page.Items[56].Severity != "Medium" {
		t.Errorf("Brand A's findings: %d, first %+v", page.Total, page.Items[0])
	}
	for _, it := range page.Items {
		if it.TenantID == b || strings.Contains(it.ResourceID, "bbbbbbbb") {
			t.Errorf("Brand A's user sees Brand B's finding %+v", it)
		}
	}
	h.get("/api/v1/compliance/findings?resource_type=Microsoft.Compute/virtualMachines", admin).json(t, &page)
	if page.Total != 2 {
		t.Errorf("the admin's virtual machine findings: %d, want vm and vb", page.Total)
	}
	expectInvalid(t, h.get("/api/v1/compliance/findings?control=CC6.1", admin), "query.control")
	expectInvalid(t, h.get("/api/v1/compliance/findings?sort_order=up", admin), "query.sort_order")
	for _, target := range []string{"/api/v1/compliance/findings?tenant_ids=" + b, "/api/v1/compliance/frameworks/soc2/controls/CC6.1?tenant_ids=" + b} {
		if r := h.get(target, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "kvb") {
			t.Errorf("%s for Brand A's user: %d %s", target, r.status, r.body)
		}
	}
	if r := h.get("/api/v1/compliance/frameworks/soc2/controls/ZZ", admin); r.status != http.StatusNotFound {
		t.Errorf("an unknown control: %d %s", r.status, r.body)
	}
}
