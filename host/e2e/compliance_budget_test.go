package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/rules"
)

// TestComplianceRuleOverBudget: the reviewed fan-out schema (2.6 KB,
// 2^40 objects) is refused at create. Stored anyway, as an older version
// may have stored it, it answers its dry run with the guard's 422 at
// once, and so does a rule the guards let through that would visit 2^30
// objects on a deeply nested resource, with the evaluation budget's. The
// compliance sync — two runs at once — fails Brand A naming both rules,
// while Brand A's other rule and Brand B's are evaluated and stored.
func TestComplianceRuleOverBudget(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceRuleOverBudget(t, dialect) })
	}
}

func testComplianceRuleOverBudget(t *testing.T, dialect string) {
	fan, err := os.ReadFile("../../plugins/compliance/rules/testdata/fanout.json")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]any{}
	for range 30 {
		props = map[string]any{"a": props}
	}
	subA := "aaaaaaaa-0000-0000-0000-000000000001"
	deepAccount := world.Resource{SubscriptionID: subA, Name: "sa-deep", Type: "Microsoft.Storage/storageAccounts", Location: "eastus",
		ID: "/subscriptions/" + subA + "/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa-deep", Properties: props}
	o := hostOpts{pluginsHCL: resourcesPlugins() + identityPlugins("") + compliancePlugins("") + defaultPlugins(),
		env: map[string]string{"STEWARD_SIM_WORLD": rulesWorld(t, deepAccount), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	for _, job := range []string{"resources", "identity", "compliance"} {
		waitStartupSync(t, h, admin, job)
	}
	ids := h.tenantIDs(t, admin)
	brandA, brandB := ids["Brand A"], ids["Brand B"]
	send := func(method, path string, body any) response {
		if body == nil {
			return h.do(method, path, admin, nil)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return h.do(method, path, admin, strings.NewReader(string(raw)), "Content-Type", "application/json")
	}
	storage := func(tenant, name string, schema any) map[string]any {
		return map[string]any{"tenant_id": tenant, "rule_name": name, "category": "resource_property",
			"resource_type": "Microsoft.Storage/storageAccounts", "schema": schema}
	}
	create := func(body map[string]any) ruleView {
		r := send(http.MethodPost, "/api/v1/compliance/rules", body)
		if r.status != http.StatusCreated {
			t.Fatalf("create %v: %d %s", body["rule_name"], r.status, r.body)
		}
		var v ruleView
		r.json(t, &v)
		return v
	}
	invalid := func(what string, r response, loc, words string) {
		t.Helper()
		expectInvalid(t, r, loc)
		if !strings.Contains(string(r.body), words) {
			t.Errorf("%s: the 422 does not say %q: %s", what, words, r.body)
		}
	}

	invalid("create with the fan-out", send(http.MethodPost, "/api/v1/compliance/rules", storage(brandA, "Fan-out", json.RawMessage(fan))),
		"body.schema", "reference fan-out")

	tls := map[string]any{"properties": map[string]any{"properties": map[string]any{
		"required": []string{"minimumTlsVersion"}, "properties": map[string]any{"minimumTlsVersion": map[string]any{"const": "TLS1_2"}}}}}
	tlsA, tlsB := create(storage(brandA, "TLS 1.2 in A", tls)), create(storage(brandB, "TLS 1.2 in B", tls))
	chain := json.RawMessage(`{"properties":{"properties":{"$ref":"#/$defs/n"}},"$defs":{"n":{"properties":{"a":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}}}`)
	deep := create(storage(brandA, "Deep", chain))
	storageType := "microsoft.storage/storageaccounts"
	now := time.Now().UTC().Truncate(time.Microsecond)
	old := &rules.Rule{TenantID: brandA, Name: "Fan-out of an older version", Category: rules.CategoryResourceProperty, ResourceType: &storageType,
		Severity: "High", Effect: rules.EffectAudit, Schema: string(fan), IsActive: true, CreatedBy: "older-version", CreatedAt: now, UpdatedAt: now}
	if _, err := h.pluginDB("compliance").NewInsert().Model(old).Returning("id").Exec(context.Background()); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	invalid("dry run of the deep rule", send(http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", deep.ID), nil),
		"path.id", "evaluation budget: validating sa-deep visited more than 100000 schema objects")
	invalid("dry run of the stored fan-out", send(http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", old.ID), nil),
		"body.schema", "reference fan-out")
	// The step budget stops them, not the clock; BENCHMARKS.md has how
	// long that takes. Only a hang reaches this.
	if d := time.Since(started); d > 30*time.Second {
		t.Errorf("the two dry runs took %s", d)
	}

	f := &fixture{h: h, admin: admin}
	first, second := f.trigger(t, "compliance"), f.trigger(t, "compliance")
	for _, id := range []string{first, second} {
		r := f.waitRun(t, id)
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.Status != "failed" || strings.Contains(msg, "Brand B") {
			t.Errorf("run %s: %s %q, want Brand A failed alone", id, r.Status, msg)
		}
		for _, want := range []string{"Brand A", fmt.Sprintf("rule %d", deep.ID), "evaluation budget", fmt.Sprintf("rule %d", old.ID), "reference fan-out"} {
			if !strings.Contains(msg, want) {
				t.Errorf("run %s's error %q does not say %q", id, msg, want)
			}
		}
	}
	for _, c := range []struct {
		rule       ruleView
		violations int
	}{{tlsA, 2}, {tlsB, 1}} {
		var got ruleView
		h.get(fmt.Sprintf("/api/v1/compliance/rules/%d", c.rule.ID), admin).json(t, &got)
		if got.EvaluatedAt == nil || got.ViolationCount != c.violations {
			t.Errorf("%s after the syncs: %+v, want evaluated with %d violations", c.rule.RuleName, got, c.violations)
		}
	}
	var got ruleView
	h.get(fmt.Sprintf("/api/v1/compliance/rules/%d", deep.ID), admin).json(t, &got)
	if got.EvaluatedAt != nil {
		t.Errorf("the rule over budget reads as evaluated: %+v", got)
	}
}
