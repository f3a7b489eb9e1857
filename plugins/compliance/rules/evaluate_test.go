package rules_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/rules"
	"github.com/stewardhq/steward/plugins/resources/inventory"
)

// violationKeys lists each violation as subject-name instance-path keyword.
func violationKeys[T any](vs []T, key func(T) string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = key(v)
	}
	slices.Sort(out)
	return out
}

// TestEvaluateCollectsAll: every failed keyword of every record is a
// violation with its instance path, not only the first.
func TestEvaluateCollectsAll(t *testing.T) {
	rule := &rules.Rule{ID: 7, TenantID: tenantA, Schema: `{
		"type": "object",
		"required": ["owner", "size"],
		"properties": {
			"size": {"type": "integer", "maximum": 100},
			"location": {"enum": ["westeurope", "northeurope"]},
			"tags": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
			"disks": {"type": "array", "items": {"properties": {"encrypted": {"const": true}}}}
		}
	}`}
	record := func(subject, raw string) rules.Record {
		var data any
		d := json.NewDecoder(strings.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&data); err != nil {
			t.Fatal(err)
		}
		return rules.Record{Subject: subject, Name: subject, Data: data}
	}
	vs, err := rules.Evaluate(context.Background(), rule, []rules.Record{
		record("good", `{"owner": "ops", "size": 100, "location": "westeurope", "tags": {"env": "dev"}, "disks": [{"encrypted": true}]}`),
		record("bad", `{"size": 100.5, "location": "eastus", "tags": {"env": "production", "cc": 12}, "disks": [{"encrypted": true}, {"encrypted": false}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := violationKeys(vs, func(v rules.Violation) string { return v.Subject + " " + v.InstancePath + " " + v.Keyword })
	want := []string{
		"bad  required",
		"bad /disks/1/encrypted const",
		"bad /location enum",
		"bad /size type",
		"bad /tags/cc type",
		"bad /tags/env maxLength",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%q\nwant\n%q", got, want)
	}
	for _, v := range vs {
		if v.RuleID != 7 || v.TenantID != tenantA || v.Message == "" || !strings.HasSuffix(v.SchemaPath, "/"+v.Keyword) {
			t.Errorf("violation %+v", v)
		}
	}
	// A rule whose schema the guards refuse is not evaluated.
	if _, err := rules.Evaluate(context.Background(), &rules.Rule{Schema: `{"$ref": "https://example.com/s.json"}`}, nil); err == nil {
		t.Error("evaluated a rule with a remote reference")
	}
}

// TestDryRun: the dry run reads the category's current data through the
// host (resources of the rule's type, the tenant's MFA figures, the latest
// compliance snapshot), lists every violation, and stores nothing.
func TestDryRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		disks := f.create(userA, diskRule("Disks"))
		var run rules.DryRun
		f.do(userA, http.MethodPost, ruleAt(disks.ID)+"/evaluate", nil).want(t, "dry run", http.StatusOK).decode(t, &run)
		got := violationKeys(run.Violations, func(v rules.DryRunViolation) string { return v.SubjectName + " " + v.InstancePath + " " + v.Keyword })
		want := []string{
			"disk-bad /properties/encryption/type const",
			"disk-bad /tags required",
			"disk-untagged /properties/encryption/type const",
			"disk-untagged /tags required",
		}
		// Tenant A's three disks, not its VM nor tenant B's disk.
		if !slices.Equal(got, want) || run.SubjectsEvaluated != 3 || run.NonCompliantSubjects != 2 || run.ViolationCount != 4 || run.Truncated ||
			run.RuleID != disks.ID || run.TenantID != tenantA {
			t.Errorf("dry run %+v\n%q", run, got)
		}
		for _, v := range run.Violations {
			if !strings.HasPrefix(v.Subject, "/subscriptions/s1/") {
				t.Errorf("subject %q", v.Subject)
			}
		}
		if got := f.get(userA, disks.ID); got.EvaluatedAt != nil || got.ViolationCount != 0 {
			t.Errorf("the dry run stored its findings: %+v", got)
		}

		mfa := f.create(userA, diskRule("MFA", func(b map[string]any) {
			b["category"], b["resource_type"] = "mfa_coverage", nil
			b["schema"] = map[string]any{"properties": map[string]any{
				"mfa_coverage_percentage": map[string]any{"minimum": 90}, "admin_mfa_percentage": map[string]any{"const": 100}}}
		}))
		f.do(userA, http.MethodPost, ruleAt(mfa.ID)+"/evaluate", nil).want(t, "mfa dry run", http.StatusOK).decode(t, &run)
		if run.SubjectsEvaluated != 1 || len(run.Violations) != 1 || run.Violations[0].InstancePath != "/mfa_coverage_percentage" ||
			run.Violations[0].Keyword != "minimum" || run.Violations[0].Subject != tenantA {
			t.Errorf("mfa dry run %+v", run)
		}

		score := f.create(admin, diskRule("Score", func(b map[string]any) {
			b["category"], b["resource_type"] = "compliance_score", nil
			b["schema"] = map[string]any{"properties": map[string]any{
				"overall_compliance_percent": map[string]any{"minimum": 90}, "non_compliant_resources": map[string]any{"maximum": 0}}}
		}))
		f.do(admin, http.MethodPost, ruleAt(score.ID)+"/evaluate", nil).want(t, "score dry run", http.StatusOK).decode(t, &run)
		if got := violationKeys(run.Violations, func(v rules.DryRunViolation) string { return v.InstancePath + " " + v.Keyword }); run.SubjectsEvaluated != 1 ||
			!slices.Equal(got, []string{"/non_compliant_resources maximum", "/overall_compliance_percent minimum"}) {
			t.Errorf("score dry run %+v", run)
		}
		// Tenant B has no snapshot: nothing to evaluate, nothing found.
		scoreB := f.create(admin, diskRule("Score B", func(b map[string]any) {
			b["tenant_id"], b["category"], b["resource_type"] = tenantB, "compliance_score", nil
		}))
		f.do(admin, http.MethodPost, ruleAt(scoreB.ID)+"/evaluate", nil).want(t, "score dry run of B", http.StatusOK).decode(t, &run)
		if run.SubjectsEvaluated != 0 || len(run.Violations) != 0 {
			t.Errorf("dry run without a snapshot %+v", run)
		}
	})
}

// TestDryRunWithoutData: a category whose dataset no plugin publishes is
// a 503 for the dry run and an error for the sync, which stores nothing.
func TestDryRunWithoutData(t *testing.T) {
	f := newFixtureWith(t, "sqlite", map[string][]json.RawMessage{rules.MFADataset: datasets()[rules.MFADataset]})
	v := f.create(userA, diskRule("Disks"))
	r := f.do(userA, http.MethodPost, ruleAt(v.ID)+"/evaluate", nil).want(t, "dry run without the resources dataset", http.StatusServiceUnavailable)
	if !strings.Contains(string(r.body), rules.ResourcesDataset) {
		t.Errorf("the 503 does not name the dataset: %s", r.body)
	}
	if _, err := f.eval.EvaluateTenant(context.Background(), tenantA); !errors.Is(err, rules.ErrSource) {
		t.Errorf("sync without the resources dataset: %v", err)
	}
	if got := f.get(userA, v.ID); got.EvaluatedAt != nil {
		t.Errorf("a failed evaluation was stored: %+v", got)
	}
}

// TestEvaluateTenant: the sync's evaluation stores each active audit
// rule's violations with evaluated_at, replaces them on the next run
// (the same data gives the same rows), skips inactive, disabled and
// deleted rules, and the reads for the compliance views see them.
func TestEvaluateTenant(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		disks := f.create(userA, diskRule("Disks"))
		f.create(userA, diskRule("Disabled", func(b map[string]any) { b["effect"] = "disabled" }))
		f.create(userA, diskRule("Inactive", func(b map[string]any) { b["is_active"] = false }))
		deleted := f.create(userA, diskRule("Deleted"))
		f.do(userA, http.MethodDelete, ruleAt(deleted.ID), nil).want(t, "delete", http.StatusNoContent)
		mfa := f.create(userA, diskRule("MFA", func(b map[string]any) {
			b["category"], b["resource_type"] = "mfa_coverage", nil
			b["schema"] = map[string]any{"properties": map[string]any{"mfa_coverage_percentage": map[string]any{"minimum": 50}}}
		}))
		other := f.create(admin, diskRule("B's disks", func(b map[string]any) { b["tenant_id"] = tenantB }))

		f.clock.Advance(time.Hour)
		res, err := f.eval.EvaluateTenant(ctx, tenantA)
		if err != nil {
			t.Fatal(err)
		}
		at := f.clock.Now()
		if res.Rules != 2 || res.Violations != 4 || !res.EvaluatedAt.Equal(at) {
			t.Errorf("evaluation %+v", res)
		}
		first, err := f.store.Violations(ctx, []string{tenantA}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 4 {
			t.Fatalf("stored %+v", first)
		}
		for _, v := range first {
			if v.RuleID != disks.ID || v.TenantID != tenantA || !v.EvaluatedAt.Equal(at) || v.InstancePath == "" {
				t.Errorf("stored violation %+v", v)
			}
		}
		if got := f.get(userA, disks.ID); got.EvaluatedAt == nil || !got.EvaluatedAt.Equal(at) || got.SubjectsEvaluated != 3 || got.ViolationCount != 4 {
			t.Errorf("rule after evaluation %+v", got)
		}
		if got := f.get(userA, mfa.ID); got.EvaluatedAt == nil || got.SubjectsEvaluated != 1 || got.ViolationCount != 0 {
			t.Errorf("compliant mfa rule after evaluation %+v", got)
		}
		if got := f.get(admin, other.ID); got.EvaluatedAt != nil {
			t.Errorf("tenant B's rule was evaluated with A's: %+v", got)
		}

		// Again on the same data: the same violations, at the new time,
		// replacing the old rows.
		f.clock.Advance(time.Hour)
		if _, err := f.eval.EvaluateTenant(ctx, tenantA); err != nil {
			t.Fatal(err)
		}
		second, err := f.store.Violations(ctx, []string{tenantA}, disks.ID)
		if err != nil {
			t.Fatal(err)
		}
		key := func(v rules.Violation) string { return v.Subject + v.InstancePath + v.Keyword + v.Message }
		if !slices.Equal(violationKeys(first, key), violationKeys(second, key)) || !second[0].EvaluatedAt.Equal(f.clock.Now()) {
			t.Errorf("second run stored %+v", second)
		}
		rows, err := f.db.NewSelect().Model((*rules.Violation)(nil)).Count(ctx)
		if err != nil || rows != 4 {
			t.Errorf("%d violation rows after two runs, %v", rows, err)
		}

		findings, err := f.store.Findings(ctx, []string{tenantA, tenantB})
		if err != nil {
			t.Fatal(err)
		}
		if len(findings) != 2 || findings[0].ID != disks.ID || findings[0].NonCompliantSubjects != 2 || findings[0].ViolationCount != 4 ||
			findings[1].ID != mfa.ID || findings[1].NonCompliantSubjects != 0 {
			t.Errorf("findings %+v", findings)
		}
		if vs, err := f.store.Violations(ctx, []string{tenantB}, 0); err != nil || len(vs) != 0 {
			t.Errorf("tenant B's violations %+v, %v", vs, err)
		}

		// A deleted rule's violations stay in the table but leave the views.
		f.do(userA, http.MethodDelete, ruleAt(disks.ID), nil).want(t, "delete", http.StatusNoContent)
		if vs, err := f.store.Violations(ctx, []string{tenantA}, 0); err != nil || len(vs) != 0 {
			t.Errorf("violations of a deleted rule are read: %d, %v", len(vs), err)
		}
		if findings, err := f.store.Findings(ctx, []string{tenantA}); err != nil || len(findings) != 1 {
			t.Errorf("findings after delete %+v, %v", findings, err)
		}
	})
}

// TestEvaluationOfAChangedRule: an evaluation of a rule that was changed
// or deleted after the sync read it stores nothing for it, so the change
// keeps the state it gave the rule.
func TestEvaluationOfAChangedRule(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		changed := f.create(userA, diskRule("Changed"))
		deleted := f.create(userA, diskRule("Deleted"))
		kept := f.create(userA, diskRule("Kept"))
		read, err := f.store.Active(ctx, tenantA)
		if err != nil || len(read) != 3 {
			t.Fatalf("active %+v, %v", read, err)
		}
		f.clock.Advance(time.Minute)
		f.do(userA, http.MethodPut, ruleAt(changed.ID), diskRule("Changed again")).want(t, "put", http.StatusOK)
		f.do(userA, http.MethodDelete, ruleAt(deleted.ID), nil).want(t, "delete", http.StatusNoContent)

		found := []rules.Violation{{Subject: "s", SubjectName: "s", InstancePath: "/tags", Keyword: "required", SchemaPath: "/required", Message: "m"}}
		results := make([]rules.Result, len(read))
		for i := range read {
			results[i] = rules.Result{Rule: &read[i], SubjectsEvaluated: 1, Violations: found}
		}
		if err := f.store.ReplaceViolations(ctx, tenantA, results, f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		vs, err := f.store.Violations(ctx, []string{tenantA}, 0)
		if err != nil || len(vs) != 1 || vs[0].RuleID != kept.ID {
			t.Errorf("stored %+v, %v; want only rule %d's", vs, err, kept.ID)
		}
		if got := f.get(userA, changed.ID); got.EvaluatedAt != nil || got.RuleName != "Changed again" {
			t.Errorf("changed rule %+v", got)
		}
		if got := f.get(userA, kept.ID); got.EvaluatedAt == nil || got.ViolationCount != 1 {
			t.Errorf("kept rule %+v", got)
		}
	})
}

// TestFindingRows: the rows the compliance reads take in are the counting
// rules with violations, each with its subjects split by compliance, its
// severity's rank and when it was evaluated; other tenants' rules and
// rules without violations are not among them.
func TestFindingRows(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		disks := f.create(userA, diskRule("Disks", func(b map[string]any) { b["severity"] = "Critical" }))
		f.create(userA, diskRule("Compliant MFA", func(b map[string]any) {
			b["category"], b["resource_type"] = "mfa_coverage", nil
			b["schema"] = map[string]any{"properties": map[string]any{"mfa_coverage_percentage": map[string]any{"minimum": 50}}}
		}))
		mfa := f.create(userA, diskRule("MFA", func(b map[string]any) {
			b["category"], b["resource_type"], b["severity"] = "mfa_coverage", nil, "Low"
			b["schema"] = map[string]any{"properties": map[string]any{"mfa_coverage_percentage": map[string]any{"minimum": 90}}}
		}))
		f.create(admin, diskRule("B's disks", func(b map[string]any) { b["tenant_id"] = tenantB }))
		f.clock.Advance(time.Hour)
		for _, tenant := range []string{tenantA, tenantB} {
			if _, err := f.eval.EvaluateTenant(ctx, tenant); err != nil {
				t.Fatal(err)
			}
		}
		type row struct {
			FindingID         string `bun:"finding_id"`
			Name              string `bun:"name"`
			Category          string `bun:"category"`
			SeverityRank      int    `bun:"severity_rank"`
			NonCompliantCount int64  `bun:"non_compliant_count"`
			CompliantCount    int64  `bun:"compliant_count"`
			TenantCount       int64  `bun:"tenant_count"`
			GroupNames        string `bun:"group_names"`
			LastEvaluatedUnix int64  `bun:"last_evaluated_unix"`
		}
		var rows []row
		if err := rules.FindingRows(f.db, []string{tenantA}).OrderExpr("finding_id").Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		at := f.clock.Now().Unix()
		want := []row{
			{FindingID: strconv.FormatInt(disks.ID, 10), Name: "Disks", Category: "resource_property", SeverityRank: 3,
				NonCompliantCount: 2, CompliantCount: 1, TenantCount: 1, GroupNames: "[]", LastEvaluatedUnix: at},
			{FindingID: strconv.FormatInt(mfa.ID, 10), Name: "MFA", Category: "mfa_coverage", SeverityRank: 1,
				NonCompliantCount: 1, CompliantCount: 0, TenantCount: 1, GroupNames: "[]", LastEvaluatedUnix: at},
		}
		if !slices.Equal(rows, want) {
			t.Errorf("finding rows\n%+v, want\n%+v", rows, want)
		}
	})
}

// deepDisk is a disk of tenant A whose properties nest "a" depth levels
// deep.
func deepDisk(depth int) json.RawMessage {
	props := strings.Repeat(`{"a":`, depth) + "{}" + strings.Repeat("}", depth)
	raw, err := json.Marshal(inventory.Record{TenantID: tenantA, ResourceID: diskArm + "disk-deep", Name: "disk-deep", Type: "microsoft.compute/disks",
		Tags: json.RawMessage(`{"owner":"ops"}`), Properties: json.RawMessage(props)})
	if err != nil {
		panic(err)
	}
	return raw
}

// storeRule stores a rule of tenant A straight into the store, past the
// API's guards, as an installation of an older version may hold it.
func (f *fixture) storeRule(name, schema string) *rules.Rule {
	f.t.Helper()
	disks := "microsoft.compute/disks"
	now := f.clock.Now()
	r := &rules.Rule{TenantID: tenantA, Name: name, Category: rules.CategoryResourceProperty, ResourceType: &disks, Severity: "High",
		Effect: rules.EffectAudit, Schema: schema, IsActive: true, CreatedBy: "old-version", CreatedAt: now, UpdatedAt: now}
	if err := f.store.Create(context.Background(), r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

// TestRuleOverBudgetFailsAlone: the reviewed fan-out schema is refused at
// create; stored anyway (an older installation's), it is an error naming
// the rule at evaluation, and so is a rule the guards let through whose
// evaluation visits 2^30 objects on a deep resource, both within two
// seconds. The tenant's other rule is evaluated and stored all the same,
// and each dry run answers 422 naming the guard or the budget.
func TestRuleOverBudgetFailsAlone(t *testing.T) {
	fan, err := os.ReadFile("testdata/fanout.json")
	if err != nil {
		t.Fatal(err)
	}
	chain := `{"properties":{"properties":{"$ref":"#/$defs/n"}},"$defs":{"n":{"properties":{"a":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}}}`
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			sets := datasets()
			sets[rules.ResourcesDataset] = append(sets[rules.ResourcesDataset], deepDisk(30))
			f := newFixtureWith(t, dialect, sets)
			f.do(userA, http.MethodPost, rulesAt, diskRule("Fan-out", func(b map[string]any) {
				b["schema"] = json.RawMessage(fan)
			})).wantInvalid(t, "create with the fan-out", "body.schema", "reference fan-out")

			good := f.create(userA, diskRule("Disks"))
			var deep rules.View
			f.do(userA, http.MethodPost, rulesAt, diskRule("Deep", func(b map[string]any) {
				b["schema"] = json.RawMessage(chain)
			})).want(t, "create the deep rule, within every guard", http.StatusCreated).decode(t, &deep)
			old := f.storeRule("Fan-out of old", string(fan))

			started := time.Now()
			ev, err := f.eval.EvaluateTenant(context.Background(), tenantA)
			// Stopped by steps, not by the clock: only a hang takes this
			// long. BENCHMARKS.md has the time.
			if d := time.Since(started); d > 30*time.Second {
				t.Errorf("the evaluation took %s", d)
			}
			for _, want := range []string{fmt.Sprintf("rule %d %q", old.ID, "Fan-out of old"), "reference fan-out",
				fmt.Sprintf("rule %d %q", deep.ID, "Deep"), "evaluation budget: validating disk-deep visited more than 100000"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("evaluation error %v does not say %q", err, want)
				}
			}
			// The deep disk has an owner and names no encryption, which
			// the disk rule does not require: its four disks, two bad.
			if ev.Rules != 1 || ev.Violations != 4 {
				t.Errorf("evaluation %+v, want the disk rule's 4 violations", ev)
			}
			if g := f.get(userA, good.ID); g.EvaluatedAt == nil || g.SubjectsEvaluated != 4 || g.ViolationCount != 4 {
				t.Errorf("the good rule was not stored: %+v", g)
			}
			if d := f.get(userA, deep.ID); d.EvaluatedAt != nil {
				t.Errorf("the rule over budget was stored as evaluated: %+v", d)
			}

			started = time.Now()
			f.do(userA, http.MethodPost, ruleAt(deep.ID)+"/evaluate", nil).wantInvalid(t, "dry run of the deep rule", "path.id", "evaluation budget", "disk-deep")
			f.do(userA, http.MethodPost, ruleAt(old.ID)+"/evaluate", nil).wantInvalid(t, "dry run of the stored fan-out", "body.schema", "reference fan-out")
			if d := time.Since(started); d > 30*time.Second {
				t.Errorf("the dry runs took %s", d)
			}
		})
	}
}
