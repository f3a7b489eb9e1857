package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/rules"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// nested is a schema nesting levels deep: {"not": {"not": ... {}}}.
func nested(levels int) map[string]any {
	s := map[string]any{}
	for range levels - 1 {
		s = map[string]any{"not": s}
	}
	return s
}

// TestRuleLifecycle: create (201) with defaults, read, list, PUT (the
// whole definition, updated_at moves, violations cleared), soft delete
// (204, then 404 everywhere, the row kept), each change audited.
func TestRuleLifecycle(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, diskRule("Disks use customer keys", func(b map[string]any) { delete(b, "tenant_id"); delete(b, "severity") }))
		if v.ID == 0 || v.TenantID != tenantA || v.RuleName != "Disks use customer keys" || v.Severity != "Medium" || v.Effect != "audit" ||
			!v.IsActive || v.Category != "resource_property" || v.ResourceType == nil || *v.ResourceType != "microsoft.compute/disks" ||
			v.CreatedBy != userA.ID || !v.CreatedAt.Equal(v.UpdatedAt) || v.EvaluatedAt != nil || v.RuleDescription != nil {
			t.Fatalf("created %+v", v)
		}
		got := f.get(userA, v.ID)
		if got.ID != v.ID || !got.UpdatedAt.Equal(v.UpdatedAt) || !strings.Contains(string(got.Schema), `"EncryptionAtRestWithCustomerKey"`) {
			t.Errorf("read back %+v", got)
		}

		// A stored evaluation, then a change: the evaluation is cleared.
		if _, err := f.eval.EvaluateTenant(context.Background(), tenantA); err != nil {
			t.Fatal(err)
		}
		if got := f.get(userA, v.ID); got.EvaluatedAt == nil || got.ViolationCount == 0 {
			t.Fatalf("after the sync's evaluation %+v", got)
		}
		f.clock.Advance(time.Hour)
		var put rules.View
		f.do(userA, http.MethodPut, ruleAt(v.ID), diskRule("Disks use customer keys", func(b map[string]any) {
			b["severity"] = "Critical"
			b["rule_description"] = "Platform keys are not enough"
			b["is_active"] = false
		})).want(t, "put", http.StatusOK).decode(t, &put)
		if put.Severity != "Critical" || put.IsActive || put.RuleDescription == nil || *put.RuleDescription != "Platform keys are not enough" ||
			!put.UpdatedAt.After(v.UpdatedAt) || !put.CreatedAt.Equal(v.CreatedAt) || put.EvaluatedAt != nil || put.ViolationCount != 0 {
			t.Errorf("after PUT %+v (created %v)", put, v.UpdatedAt)
		}
		if got := f.get(userA, v.ID); !got.UpdatedAt.Equal(put.UpdatedAt) || got.Severity != "Critical" || got.IsActive {
			t.Errorf("PUT read back %+v", got)
		}
		if vs, err := f.store.Violations(context.Background(), []string{tenantA}, v.ID); err != nil || len(vs) != 0 {
			t.Errorf("violations after the change: %d, %v", len(vs), err)
		}
		// The PUT replaces the whole definition: left out, severity is Medium again.
		f.do(userA, http.MethodPut, ruleAt(v.ID), diskRule("Disks", func(b map[string]any) { delete(b, "severity") })).want(t, "put", http.StatusOK).decode(t, &put)
		if put.Severity != "Medium" || !put.IsActive || put.RuleDescription != nil {
			t.Errorf("after the second PUT %+v", put)
		}
		f.do(userA, http.MethodPut, ruleAt(v.ID), diskRule("Disks", func(b map[string]any) { b["tenant_id"] = tenantB })).
			wantInvalid(t, "moving a rule", "body.tenant_id", "cannot be changed")

		other := f.create(userA, diskRule("MFA", func(b map[string]any) {
			b["category"], b["resource_type"] = "mfa_coverage", nil
			b["schema"] = map[string]any{"properties": map[string]any{"mfa_coverage_percentage": map[string]any{"minimum": 90}}}
		}))
		var list []rules.View
		r := f.do(userA, http.MethodGet, rulesAt, nil).want(t, "list", http.StatusOK)
		r.decode(t, &list)
		if len(list) != 2 || list[0].ID != v.ID || list[1].ID != other.ID || r.header.Get("X-Total-Count") != "2" {
			t.Errorf("list %+v (total %s)", list, r.header.Get("X-Total-Count"))
		}
		f.do(userA, http.MethodGet, rulesAt+"?category=mfa_coverage&limit=1", nil).want(t, "list mfa", http.StatusOK).decode(t, &list)
		if len(list) != 1 || list[0].ID != other.ID {
			t.Errorf("mfa rules %+v", list)
		}
		f.do(userA, http.MethodGet, rulesAt+"?category=cost", nil).wantInvalid(t, "unknown category", "query.category")
		// is_active filters only when given.
		mfa := func(active bool) map[string]any {
			return diskRule("MFA", func(b map[string]any) {
				b["category"], b["resource_type"], b["is_active"] = "mfa_coverage", nil, active
				b["schema"] = map[string]any{}
			})
		}
		f.do(userA, http.MethodPut, ruleAt(other.ID), mfa(false)).want(t, "deactivate", http.StatusOK)
		for query, ids := range map[string][]int64{"?is_active=false": {other.ID}, "?is_active=true": {v.ID}, "": {v.ID, other.ID}} {
			f.do(userA, http.MethodGet, rulesAt+query, nil).want(t, "list "+query, http.StatusOK).decode(t, &list)
			var got []int64
			for _, r := range list {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, ids) {
				t.Errorf("list%s: %v, want %v", query, got, ids)
			}
		}
		f.do(userA, http.MethodGet, rulesAt+"?is_active=maybe", nil).wantInvalid(t, "is_active not a boolean", "query.is_active")
		f.do(userA, http.MethodPut, ruleAt(other.ID), mfa(true)).want(t, "reactivate", http.StatusOK)

		// Soft delete: 204, then 404 on every route and not listed; the row stays.
		f.clock.Advance(time.Minute)
		f.do(userA, http.MethodDelete, ruleAt(v.ID), nil).want(t, "delete", http.StatusNoContent)
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			f.do(userA, m, ruleAt(v.ID), nil).want(t, m+" a deleted rule", http.StatusNotFound)
		}
		f.do(userA, http.MethodPut, ruleAt(v.ID), diskRule("again")).want(t, "PUT a deleted rule", http.StatusNotFound)
		f.do(userA, http.MethodPost, ruleAt(v.ID)+"/evaluate", nil).want(t, "evaluate a deleted rule", http.StatusNotFound)
		f.do(userA, http.MethodGet, rulesAt, nil).want(t, "list", http.StatusOK).decode(t, &list)
		if len(list) != 1 || list[0].ID != other.ID {
			t.Errorf("list after delete %+v", list)
		}
		var kept rules.Rule
		if err := f.db.NewSelect().Model(&kept).Where("id = ?", v.ID).Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !kept.Deleted || kept.IsActive || kept.DeletedAt == nil || kept.Name != "Disks" {
			t.Errorf("deleted row %+v", kept)
		}
		if active, err := f.store.Active(context.Background(), tenantA); err != nil || len(active) != 1 || active[0].ID != other.ID {
			t.Errorf("active rules after delete %+v, %v", active, err)
		}

		id := fmt.Sprint(v.ID)
		want := []string{"compliance_rule.create.success " + id, "compliance_rule.update.success " + id, "compliance_rule.update.success " + id,
			"compliance_rule.create.success " + fmt.Sprint(other.ID), "compliance_rule.update.success " + fmt.Sprint(other.ID),
			"compliance_rule.update.success " + fmt.Sprint(other.ID), "compliance_rule.delete.success " + id}
		var audited []string
		for _, e := range f.h.AuditEntries() {
			if e.TenantID != tenantA || e.ResourceType != "compliance_rule" {
				t.Errorf("audit entry %+v", e)
			}
			audited = append(audited, e.Action+" "+e.ResourceID)
		}
		if !slices.Equal(audited, want) {
			t.Errorf("audited %q, want %q", audited, want)
		}
	})
}

// TestRuleTenantScope: a rule of tenant A is 404 to a user of tenant B on
// every route, without its contents; tenant_id may be left out only by a
// caller with one tenant, and must name one the caller may see.
func TestRuleTenantScope(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		a := f.create(userA, diskRule("Secret rule of A"))
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, ruleAt(a.ID), nil},
			{http.MethodPut, ruleAt(a.ID), diskRule("Taken over")},
			{http.MethodDelete, ruleAt(a.ID), nil},
			{http.MethodPost, ruleAt(a.ID) + "/evaluate", nil},
		} {
			r := f.do(userB, c.method, c.path, c.body).want(t, c.method+" "+c.path+" as B", http.StatusNotFound)
			if strings.Contains(string(r.body), "Secret") || strings.Contains(string(r.body), tenantA) {
				t.Errorf("the 404 carries the rule: %s", r.body)
			}
		}
		var list []rules.View
		f.do(userB, http.MethodGet, rulesAt, nil).want(t, "B lists", http.StatusOK).decode(t, &list)
		if len(list) != 0 {
			t.Errorf("B lists %+v", list)
		}
		f.do(userB, http.MethodGet, rulesAt+"?tenant_ids="+tenantA, nil).want(t, "B lists A's", http.StatusForbidden)
		if got := f.get(userA, a.ID); got.RuleName != "Secret rule of A" || got.Severity != "High" {
			t.Errorf("A's rule after B's attempts %+v", got)
		}

		f.do(userB, http.MethodPost, rulesAt, diskRule("In A")).want(t, "B creates in A", http.StatusForbidden)
		f.do(admin, http.MethodPost, rulesAt, diskRule("No tenant", func(b map[string]any) { delete(b, "tenant_id") })).
			wantInvalid(t, "admin without tenant_id", "body.tenant_id", "required")
		f.do(userA, http.MethodPost, rulesAt, diskRule("Empty tenant", func(b map[string]any) { b["tenant_id"] = "" })).
			wantInvalid(t, "an empty tenant_id", "body.tenant_id")
		b := f.create(admin, diskRule("Admin's in B", func(b map[string]any) { b["tenant_id"] = tenantB }))
		if b.TenantID != tenantB || b.CreatedBy != admin.ID {
			t.Errorf("admin's rule %+v", b)
		}
		f.do(userA, http.MethodGet, ruleAt(b.ID), nil).want(t, "A reads B's", http.StatusNotFound)
		f.get(admin, a.ID)
		f.do(userA, http.MethodGet, rulesAt+"/999999", nil).want(t, "missing rule", http.StatusNotFound)
		f.do(userA, http.MethodGet, rulesAt+"/abc", nil).wantInvalid(t, "non-integer id", "path.id")
	})
}

// TestRuleTenantFromContext: a rule whose body names no tenant is created
// in the one the caller picked with the tenant picker (query tenant_id),
// which must be one the caller may see (403 in the host's wording
// otherwise, nothing created) and, when the body names one too, the same
// (422); with nothing named or picked, a caller of one tenant creates in
// it and a caller of several is answered 422 naming body.tenant_id.
func TestRuleTenantFromContext(t *testing.T) {
	noTenant := func(b map[string]any) { delete(b, "tenant_id") }
	eachDialect(t, func(t *testing.T, f *fixture) {
		var v rules.View
		f.do(admin, http.MethodPost, rulesAt+"?tenant_id="+tenantB, diskRule("Picked B", noTenant)).want(t, "admin picked B", http.StatusCreated).decode(t, &v)
		if v.TenantID != tenantB {
			t.Errorf("the rule of the tenant picked is in %s", v.TenantID)
		}
		f.do(admin, http.MethodPost, rulesAt+"?tenant_id="+tenantB, diskRule("Named and picked B", func(b map[string]any) { b["tenant_id"] = tenantB })).
			want(t, "admin named and picked B", http.StatusCreated)
		f.do(admin, http.MethodPost, rulesAt+"?tenant_id="+tenantA, diskRule("Named B, picked A", func(b map[string]any) { b["tenant_id"] = tenantB })).
			wantInvalid(t, "admin named B and picked A", "body.tenant_id", "picked")
		f.do(userA, http.MethodPost, rulesAt+"?tenant_id="+tenantA, diskRule("Picked A", noTenant)).want(t, "A picked A", http.StatusCreated).decode(t, &v)
		if v.TenantID != tenantA {
			t.Errorf("user A's rule of the tenant picked is in %s", v.TenantID)
		}
		for _, c := range []struct {
			what string
			p    sdk.Principal
			body map[string]any
		}{
			{"B picked A", userB, diskRule("B's pick of A", noTenant)},
			{"B named itself and picked A", userB, diskRule("B's pick of A", func(b map[string]any) { b["tenant_id"] = tenantB })},
			{"A picked an unknown tenant", userA, diskRule("Nowhere", noTenant)},
		} {
			path := rulesAt + "?tenant_id=" + tenantA
			if c.what == "A picked an unknown tenant" {
				path = rulesAt + "?tenant_id=cccccccc-0000-4000-8000-00000000000c"
			}
			r := f.do(c.p, http.MethodPost, path, c.body).want(t, c.what, http.StatusForbidden)
			var p sdk.Problem
			r.decode(t, &p)
			if p.Detail != protocol.MsgNoTenantAccess {
				t.Errorf("%s: the 403 is %s", c.what, r.body)
			}
		}
		var list []rules.View
		f.do(admin, http.MethodGet, rulesAt+"?tenant_ids="+tenantA, nil).want(t, "A's rules", http.StatusOK).decode(t, &list)
		if len(list) != 1 || list[0].RuleName != "Picked A" {
			t.Errorf("A's rules after the refused picks %+v", list)
		}

		f.do(userB, http.MethodPost, rulesAt, diskRule("B's only tenant", noTenant)).want(t, "B without a tenant", http.StatusCreated).decode(t, &v)
		if v.TenantID != tenantB {
			t.Errorf("user B's rule is in %s", v.TenantID)
		}
		for _, path := range []string{rulesAt, rulesAt + "?tenant_id="} {
			f.do(admin, http.MethodPost, path, diskRule("Unplaced", noTenant)).wantInvalid(t, "admin naming and picking none at "+path, "body.tenant_id", "picked none")
		}
	})
}

// TestRuleValidation: each bad field is a 422 naming it; nothing is
// stored.
func TestRuleValidation(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		cases := []struct {
			name   string
			change func(map[string]any)
			loc    string
			words  []string
		}{
			{"no name", func(b map[string]any) { delete(b, "rule_name") }, "body.rule_name", []string{"required"}},
			{"name only markup", func(b map[string]any) { b["rule_name"] = "<script>alert(1)</script>" }, "body.rule_name", []string{"empty"}},
			{"name too long", func(b map[string]any) { b["rule_name"] = strings.Repeat("n", 256) }, "body.rule_name", []string{"255"}},
			{"name not a string", func(b map[string]any) { b["rule_name"] = 5 }, "body.rule_name", []string{"string"}},
			{"description too long", func(b map[string]any) { b["rule_description"] = strings.Repeat("d", 4001) }, "body.rule_description", []string{"4000"}},
			{"unknown category", func(b map[string]any) { b["category"] = "cost" }, "body.category", []string{"resource_property"}},
			{"no resource type", func(b map[string]any) { delete(b, "resource_type") }, "body.resource_type", []string{"required"}},
			{"bad resource type", func(b map[string]any) { b["resource_type"] = "disks" }, "body.resource_type", []string{"Microsoft.Compute/disks"}},
			{"resource type of mfa", func(b map[string]any) { b["category"] = "mfa_coverage" }, "body.resource_type", []string{"only"}},
			{"severity", func(b map[string]any) { b["severity"] = "Urgent" }, "body.severity", []string{"Low, Medium, High, Critical"}},
			{"effect", func(b map[string]any) { b["effect"] = "deny" }, "body.effect", []string{"audit, disabled"}},
			{"is_active", func(b map[string]any) { b["is_active"] = "yes" }, "body.is_active", nil},
			{"no schema", func(b map[string]any) { delete(b, "schema") }, "body.schema", []string{"required"}},
			{"schema not an object", func(b map[string]any) { b["schema"] = []int{1} }, "body.schema", []string{"object"}},
			{"schema invalid", func(b map[string]any) { b["schema"] = map[string]any{"type": 5} }, "body.schema", []string{"draft 2020-12"}},
			{"unknown field", func(b map[string]any) { b["owner"] = "me" }, "body.owner", []string{"unexpected property"}},
			{"service field", func(b map[string]any) { b["created_by"] = "me" }, "body.created_by", []string{"unexpected property"}},
		}
		for _, c := range cases {
			f.do(userA, http.MethodPost, rulesAt, diskRule("Rule", c.change)).wantInvalid(t, c.name, c.loc, c.words...)
		}
		f.do(userA, http.MethodPost, rulesAt, `[1]`).wantInvalid(t, "array body", "body")
		f.do(userA, http.MethodPost, rulesAt, `{"rule_name":`).wantInvalid(t, "broken JSON", "body")
		n, err := f.db.NewSelect().Model((*rules.Rule)(nil)).Count(context.Background())
		if err != nil || n != 0 {
			t.Errorf("%d rules stored after refusals, %v", n, err)
		}
	})
}

// TestSchemaGuardsOverHTTP: each guard of the spec refuses a rule with a
// 422 naming the guard, on create and on PUT.
func TestSchemaGuardsOverHTTP(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, diskRule("Guarded"))
		ref := func(target string) map[string]any {
			return map[string]any{"properties": map[string]any{"tags": map[string]any{"$ref": target}}}
		}
		cases := []struct {
			name   string
			schema any
			loc    string
			words  []string
		}{
			{"65 KB", map[string]any{"description": strings.Repeat("x", 65*1024)}, "body.schema", []string{"size", "65536"}},
			{"501-character pattern", map[string]any{"properties": map[string]any{"name": map[string]any{"pattern": strings.Repeat("a", 501)}}},
				"body.schema/properties/name/pattern", []string{"pattern length", "501", "500"}},
			{"501-character patternProperties", map[string]any{"patternProperties": map[string]any{strings.Repeat("b", 501): true}},
				"body.schema/patternProperties", []string{"pattern length", "501"}},
			{"depth 11", nested(11), "body.schema", []string{"depth", "11", "10"}},
			{"https $ref", ref("https://schemas.example.com/tags.json"), "body.schema/properties/tags/$ref",
				[]string{"remote reference", "https://schemas.example.com/tags.json"}},
			{"file $ref", ref("file:///etc/passwd"), "body.schema/properties/tags/$ref", []string{"remote reference", "file:///etc/passwd"}},
			{"relative $ref", ref("tags.json"), "body.schema/properties/tags/$ref", []string{"remote reference", "tags.json"}},
		}
		for _, c := range cases {
			body := diskRule("Guarded", func(b map[string]any) { b["schema"] = c.schema })
			f.do(userA, http.MethodPost, rulesAt, body).wantInvalid(t, "create: "+c.name, c.loc, c.words...)
			f.do(userA, http.MethodPut, ruleAt(v.ID), body).wantInvalid(t, "PUT: "+c.name, c.loc, c.words...)
		}
		if got := f.get(userA, v.ID); !got.UpdatedAt.Equal(v.UpdatedAt) {
			t.Errorf("a refused PUT changed the rule: %+v", got)
		}
		// At the limits, accepted.
		f.create(userA, diskRule("Deep", func(b map[string]any) { b["schema"] = nested(10) }))
		f.create(userA, diskRule("Long pattern", func(b map[string]any) {
			b["schema"] = map[string]any{"properties": map[string]any{"name": map[string]any{"pattern": strings.Repeat("a", 500)}}}
		}))
		f.create(userA, diskRule("Local ref", func(b map[string]any) {
			b["schema"] = map[string]any{"$defs": map[string]any{"owned": map[string]any{"required": []string{"owner"}}},
				"properties": map[string]any{"tags": map[string]any{"$ref": "#/$defs/owned"}}}
		}))
	})
}

// TestMarkupStripped: markup in a name or description is removed before
// storing, encoded markup too; a <script> never comes back.
func TestMarkupStripped(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, diskRule(`Disks <script>alert("x")</script><b>encrypted</b>`, func(b map[string]any) {
			b["rule_description"] = "R&D disks &lt;script&gt;alert(1)&lt;/script&gt; <img src=x onerror=alert(1)>must use CMK, 3 < 5"
		}))
		if v.RuleName != "Disks encrypted" {
			t.Errorf("name %q", v.RuleName)
		}
		if v.RuleDescription == nil || *v.RuleDescription != "R&D disks  must use CMK, 3 < 5" {
			t.Errorf("description %v", *v.RuleDescription)
		}
		for _, r := range []response{f.do(userA, http.MethodGet, ruleAt(v.ID), nil), f.do(userA, http.MethodGet, rulesAt, nil)} {
			if s := strings.ToLower(string(r.body)); strings.Contains(s, "alert") || strings.Contains(s, "<script") || strings.Contains(s, "onerror") ||
				strings.Contains(s, `\u003cscript`) || strings.Contains(s, `\u003cb`) {
				t.Errorf("markup came back: %s", r.body)
			}
		}
		var put rules.View
		f.do(userA, http.MethodPut, ruleAt(v.ID), diskRule("<svg/onload=alert(1)>Renamed")).want(t, "put", http.StatusOK).decode(t, &put)
		if put.RuleName != "Renamed" {
			t.Errorf("renamed to %q", put.RuleName)
		}
	})
}

// TestRoutesDeclared: the routes pass the SDK's checks, and each documents
// its operation, its success, the errors its handler answers and its
// tenant input; the dry run alone draws on the host's costly budget,
// which is its only rate limit.
func TestRoutesDeclared(t *testing.T) {
	if err := (&sdk.Plugin{Routes: (&rules.Handlers{}).Routes()}).Validate(); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "sqlite")
	want := map[string][]string{
		"GET " + rulesAt:                     {"200"},
		"POST " + rulesAt:                    {"201", "403", "422"},
		"GET " + rulesAt + "/{id}":           {"200", "404"},
		"PUT " + rulesAt + "/{id}":           {"200", "404", "422"},
		"DELETE " + rulesAt + "/{id}":        {"204", "404"},
		"POST " + rulesAt + "/{id}/evaluate": {"200", "404", "422", "429", "503"},
	}
	// The list and the create name tenants, which the host checks; the
	// others act on a rule, whose tenant is the stored one.
	tenants := map[string]string{"GET " + rulesAt: "query.tenant_ids", "POST " + rulesAt: "body.tenant_id"}
	for _, r := range f.h.Describe().Routes {
		key := r.Method + " " + r.Path
		var op struct {
			OperationID string                     `json:"operationId"`
			Summary     string                     `json:"summary"`
			Responses   map[string]json.RawMessage `json:"responses"`
		}
		statuses, ok := want[key]
		if err := json.Unmarshal(r.OpenapiOperation, &op); !ok || err != nil || op.OperationID == "" || op.Summary == "" {
			t.Errorf("%s: undocumented or unexpected route (%v)", key, err)
			continue
		}
		wantClass := pluginv1.RateClass_RATE_CLASS_DEFAULT
		if strings.HasSuffix(key, "/evaluate") {
			wantClass = pluginv1.RateClass_RATE_CLASS_COSTLY
		}
		if r.RateClass != wantClass {
			t.Errorf("%s: rate class %v, want %v", key, r.RateClass, wantClass)
		}
		tenant := ""
		if in := r.GetTenantInput(); in != nil {
			tenant = in.In + "." + in.Name
		}
		if tenant != tenants[key] {
			t.Errorf("%s: tenant input %q, want %q", key, tenant, tenants[key])
		}
		for _, s := range statuses {
			if op.Responses[s] == nil {
				t.Errorf("%s: no %s response", key, s)
			}
		}
		delete(want, key)
	}
	if len(want) > 0 {
		t.Errorf("routes missing: %v", want)
	}
}
