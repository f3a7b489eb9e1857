package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk/protocol"
)

// rulesWorld: each brand has storage accounts — Brand A one on TLS 1.0
// and one on TLS 1.2, Brand B one on TLS 1.0 — a policy state, and users:
// Brand A two, one with MFA (50 %), Brand B one with MFA (100 %); and
// the extra resources.
func rulesWorld(t *testing.T, extra ...world.Resource) string {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	on := true
	today := time.Now().UTC().Format(time.DateOnly)
	mfa := []string{"microsoftAuthenticator"}
	account := func(sub, name, tls string) world.Resource {
		return world.Resource{SubscriptionID: sub, ID: "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + name,
			Name: name, Type: "Microsoft.Storage/storageAccounts", Location: "eastus", Properties: map[string]any{"minimumTlsVersion": tls}}
	}
	state := func(sub, res string) world.PolicyState {
		return world.PolicyState{SubscriptionID: sub, PolicyDefinitionID: "/providers/Microsoft.Authorization/policyDefinitions/private-link",
			PolicyName: "Storage accounts should use private link", Category: "Storage", Severity: "High",
			ResourceID:      "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/" + res,
			ComplianceState: "Compliant", Timestamp: time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}
	}
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}, Domains: []string{"brand-b.example"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true, Domains: []string{"brand-a.example"}},
		},
		Resources:    append([]world.Resource{account(subA, "sa-old-tls", "TLS1_0"), account(subA, "sa-tls12", "TLS1_2"), account(subB, "sb-old-tls", "TLS1_0")}, extra...),
		PolicyStates: []world.PolicyState{state(subA, "sa-tls12"), state(subB, "sb-old-tls")},
		Users: []world.User{
			{Email: "ada@brand-a.example", Name: "Ada A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on,
				MFARegistered: true, MFAMethods: mfa, LastSignIn: today},
			{Email: "abe@brand-a.example", Name: "Abe A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on, LastSignIn: today},
			{Email: "bob@brand-b.example", Name: "Bob B", DirectoryTenantID: identityDirB, UserType: "Member", AccountEnabled: &on,
				MFARegistered: true, MFAMethods: mfa, LastSignIn: today},
		},
	})
}

type ruleView struct {
	ID             int64      `json:"id"`
	TenantID       string     `json:"tenant_id"`
	RuleName       string     `json:"rule_name"`
	EvaluatedAt    *time.Time `json:"evaluated_at"`
	ViolationCount int        `json:"violation_count"`
}

type ruleFinding struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Name   string `json:"policy_name"`
	Count  int    `json:"non_compliant_count"`
}

type ruleSummary struct {
	Sources []struct {
		Source   string `json:"source"`
		Findings int    `json:"findings"`
	} `json:"sources"`
}

func (s ruleSummary) customRules() int {
	for _, src := range s.Sources {
		if src.Source == "custom_rule" {
			return src.Findings
		}
	}
	return -1
}

// TestComplianceRulesThroughTheHost: a user of Brand A writes custom
// rules over the resources plugin's inventory and the identity plugin's
// MFA figures, both read through the host and only of Brand A; a dry run
// lists the violations with their paths, the compliance sync stores them
// and they join the summary and the non-compliant list as custom_rule
// findings. A handler reading those datasets for a tenant outside its
// caller's gets nothing of it. Dry runs draw on the host's costly budget,
// which the compliance page's Dry run button shares, while ordinary
// requests go on. Brand B's user finds neither the rules nor their violations;
// markup never comes back; every schema guard is a 422 naming it; a
// deleted rule is gone with its violations. On both databases, every
// answer checked against the OpenAPI document.
func TestComplianceRulesThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceRules(t, dialect) })
	}
}

func testComplianceRules(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: resourcesPlugins() + identityPlugins("") + compliancePlugins("") + defaultPlugins(),
		env: map[string]string{"STEWARD_SIM_WORLD": rulesWorld(t), "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE": "2"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	for _, job := range []string{"resources", "identity", "compliance"} {
		waitStartupSync(t, h, admin, job)
	}
	user := func(brand, group string) string {
		u := tenancy.User{DirectoryTenantID: brand + "-directory", Subject: "oid-rules-" + brand, Email: "rules@" + brand + ".example", Name: brand + " user", Groups: []string{group}}
		if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
			t.Fatal(err)
		}
		return h.tokenFor(u)
	}
	tokA, tokB := user("brand-a", "grp-a"), user("brand-b", "grp-b")
	checkDatasetsKeptToTheRequest(t, h, admin, tokA)
	send := func(method, path, token string, body any) response {
		if body == nil {
			return h.do(method, path, token, nil)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return h.do(method, path, token, strings.NewReader(string(raw)), "Content-Type", "application/json")
	}
	create := func(body map[string]any) ruleView {
		r := send(http.MethodPost, "/api/v1/compliance/rules", tokA, body)
		if r.status != http.StatusCreated {
			t.Fatalf("create %v: %d %s", body["rule_name"], r.status, r.body)
		}
		var v ruleView
		r.json(t, &v)
		return v
	}
	tlsSchema := map[string]any{"properties": map[string]any{"properties": map[string]any{
		"required": []string{"minimumTlsVersion"}, "properties": map[string]any{"minimumTlsVersion": map[string]any{"const": "TLS1_2"}}}}}
	tls := create(map[string]any{"rule_name": "<script>alert(1)</script>Storage on TLS 1.2", "category": "resource_property",
		"resource_type": "Microsoft.Storage/storageAccounts", "severity": "High", "schema": tlsSchema})
	if tls.RuleName != "Storage on TLS 1.2" || strings.Contains(tls.RuleName, "script") {
		t.Fatalf("the created rule's name is %q", tls.RuleName)
	}
	mfa := create(map[string]any{"rule_name": "MFA for nine in ten", "category": "mfa_coverage",
		"schema": map[string]any{"properties": map[string]any{"mfa_coverage_percentage": map[string]any{"minimum": 90}}}})
	var got ruleView
	h.get(fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), tokA).json(t, &got)
	if got.RuleName != "Storage on TLS 1.2" || got.TenantID != tls.TenantID || got.EvaluatedAt != nil {
		t.Fatalf("the rule reads back as %+v", got)
	}

	// Dry runs read the other plugins' datasets of Brand A only.
	type dryRun struct {
		Subjects   int `json:"subjects_evaluated"`
		Violations []struct {
			SubjectName  string `json:"subject_name"`
			InstancePath string `json:"instance_path"`
			Keyword      string `json:"keyword"`
		} `json:"violations"`
	}
	var dr dryRun
	r := h.do(http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", tls.ID), tokA, nil)
	if r.header.Get("X-Ratelimit-Limit") != "2" || r.header.Get("X-Ratelimit-Remaining") != "1" {
		t.Errorf("the first dry run's headers describe another budget than the costly one: %v", r.header)
	}
	r.json(t, &dr)
	if dr.Subjects != 2 || len(dr.Violations) != 1 || dr.Violations[0].SubjectName != "sa-old-tls" ||
		dr.Violations[0].InstancePath != "/properties/minimumTlsVersion" || dr.Violations[0].Keyword != "const" {
		t.Fatalf("dry run of the TLS rule %+v", dr)
	}
	h.do(http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", mfa.ID), tokA, nil).json(t, &dr)
	if dr.Subjects != 1 || len(dr.Violations) != 1 || dr.Violations[0].InstancePath != "/mfa_coverage_percentage" || dr.Violations[0].Keyword != "minimum" {
		t.Fatalf("dry run of the MFA rule %+v", dr)
	}
	// The costly budget of 2 is spent, for the API and the page's button
	// alike; an ordinary request still passes.
	expectLimited(t, h.do(http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", tls.ID), tokA, nil))
	expectLimited(t, h.do(http.MethodPost, fmt.Sprintf("/partials/compliance-rules/%d/dry-run?tenant_id=%s", tls.ID, tls.TenantID), tokA, nil, "HX-Request", "true"))
	if r := h.get(fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), tokA); r.status != http.StatusOK {
		t.Fatalf("an ordinary request once the costly budget is spent: %d %s", r.status, r.body)
	}

	// The sync evaluates the rules and stores what they find.
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "compliance")); r.Status != "completed" {
		t.Fatalf("compliance sync %+v", r)
	}
	h.get(fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), tokA).json(t, &got)
	if got.EvaluatedAt == nil || got.ViolationCount != 1 {
		t.Fatalf("the TLS rule after the sync %+v", got)
	}
	findings := func(token string) []string {
		var nc []ruleFinding
		h.get("/api/v1/compliance/non-compliant", token).json(t, &nc)
		out := []string{}
		for _, it := range nc {
			if it.Source == "custom_rule" {
				out = append(out, fmt.Sprintf("%s %s %d", it.ID, it.Name, it.Count))
			}
		}
		return out
	}
	want := []string{fmt.Sprintf("%d Storage on TLS 1.2 1", tls.ID), fmt.Sprintf("%d MFA for nine in ten 1", mfa.ID)}
	if got := findings(tokA); !slices.Equal(got, want) {
		t.Fatalf("Brand A's custom rule findings %v, want %v", got, want)
	}
	var sum ruleSummary
	h.get("/api/v1/compliance/summary", tokA).json(t, &sum)
	if sum.customRules() != 2 {
		t.Fatalf("Brand A's summary %+v", sum)
	}
	// The compliance page counts and lists them as custom rules.
	page := h.do(http.MethodGet, "/compliance", tokA, nil, "HX-Request", "true")
	expectHTML(t, "Brand A's compliance page", page)
	for _, want := range []string{"Violated custom rules", "Storage on TLS 1.2", "Custom rule · resource_property"} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("Brand A's compliance page lacks %q", want)
		}
	}

	// Brand B's user finds nothing of Brand A's rules.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), nil},
		{http.MethodPut, fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), map[string]any{"rule_name": "Taken", "category": "mfa_coverage", "schema": map[string]any{}}},
		{http.MethodDelete, fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), nil},
		{http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", tls.ID), nil},
	} {
		if r := send(c.method, c.path, tokB, c.body); r.status != http.StatusNotFound || strings.Contains(string(r.body), "TLS") {
			t.Errorf("%s %s by Brand B's user: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	var listB []ruleView
	h.get("/api/v1/compliance/rules", tokB).json(t, &listB)
	h.get("/api/v1/compliance/summary", tokB).json(t, &sum)
	if got := findings(tokB); len(got) != 0 || sum.customRules() != 0 || len(listB) != 0 {
		t.Fatalf("Brand B's user sees rules %v, findings %v, summary %+v", listB, got, sum)
	}

	// A rule whose body names no tenant is created in the one picked with
	// the tenant picker (query tenant_id), which the caller must be able to
	// see; a caller of several tenants that picks none is told to name one.
	tenantB := tenantID(t, h, identityDirB)
	noTenant := map[string]any{"rule_name": "Picked", "category": "mfa_coverage", "schema": map[string]any{}}
	expectInvalid(t, send(http.MethodPost, "/api/v1/compliance/rules", admin, noTenant), "body.tenant_id")
	r = send(http.MethodPost, "/api/v1/compliance/rules?tenant_id="+tenantB, admin, noTenant)
	var picked ruleView
	expectStatus(t, "admin picked Brand B", r, http.StatusCreated)
	r.json(t, &picked)
	if picked.TenantID != tenantB {
		t.Errorf("the rule of the tenant picked is in %s", picked.TenantID)
	}
	r = send(http.MethodPost, "/api/v1/compliance/rules?tenant_id="+tls.TenantID, tokB, noTenant)
	expectStatus(t, "Brand B's user picked Brand A", r, http.StatusForbidden)
	if !strings.Contains(string(r.body), protocol.MsgNoTenantAccess) || strings.Contains(string(r.body), tls.TenantID) {
		t.Errorf("the refused pick answers %s", r.body)
	}
	if got := findings(tokA); !slices.Equal(got, want) {
		t.Fatalf("Brand A's custom rule findings after the picks %v, want %v", got, want)
	}

	// Every schema guard refuses the rule, naming it.
	nested := map[string]any{"type": "object"}
	for range 5 {
		nested = map[string]any{"properties": map[string]any{"a": nested}}
	}
	ref := func(target string) map[string]any {
		return map[string]any{"properties": map[string]any{"tags": map[string]any{"$ref": target}}}
	}
	for _, c := range []struct {
		name   string
		schema map[string]any
		loc    string
	}{
		{"65 KB", map[string]any{"description": strings.Repeat("x", 65*1024)}, "body.schema"},
		{"501-character pattern", map[string]any{"properties": map[string]any{"name": map[string]any{"pattern": strings.Repeat("a", 501)}}}, "body.schema/properties/name/pattern"},
		{"depth 11", nested, "body.schema"},
		{"https $ref", ref("https://schemas.example.com/tags.json"), "body.schema/properties/tags/$ref"},
		{"file $ref", ref("file:///etc/passwd"), "body.schema/properties/tags/$ref"},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectInvalid(t, send(http.MethodPost, "/api/v1/compliance/rules", tokA, map[string]any{"rule_name": c.name, "category": "mfa_coverage", "schema": c.schema}), c.loc)
		})
	}

	// A deleted rule is gone, and so are its violations from the reads.
	if r := h.do(http.MethodDelete, fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), tokA, nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := h.get(fmt.Sprintf("/api/v1/compliance/rules/%d", tls.ID), tokA); r.status != http.StatusNotFound {
		t.Fatalf("a deleted rule reads %d %s", r.status, r.body)
	}
	if got := findings(tokA); !slices.Equal(got, want[1:]) {
		t.Fatalf("Brand A's custom rule findings after the delete %v", got)
	}
	h.get("/api/v1/compliance/summary", tokA).json(t, &sum)
	if sum.customRules() != 1 {
		t.Fatalf("Brand A's summary after the delete %+v", sum)
	}
}
