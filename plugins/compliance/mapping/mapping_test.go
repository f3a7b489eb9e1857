package mapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stewardhq/steward/plugins/compliance/frameworks"
)

// withAcme is the built-in frameworks plus testdata/acme.json, loaded from
// a folder of its own as a deployment's framework would be.
func withAcme(t testing.TB) *frameworks.Set {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := frameworks.WithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func newMapper(t testing.TB, set *frameworks.Set) *Mapper {
	t.Helper()
	m, err := New(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// acmePolicies and acmeCounts give the coverage worked out by hand in
// TestCoverageKnownNumbers.
var acmePolicies = []Policy{
	{ID: "p1", Name: "Accounts with owner permissions should have MFA enabled"},
	{ID: "p2", Name: "Require multi-factor authentication", GroupNames: []string{"ACME_AC.1"}},
	{ID: "p3", Name: "Storage accounts should use TLS 1.2", GroupNames: []string{"ACME_DP.1", "ACME_DP"}},
	{ID: "p4", Name: "Enable encryption in transit for Redis"},
	{ID: "p5", Name: "Allowed locations", GroupNames: []string{"SOC_2_CC6.1"}},
	{ID: "p6", Name: "Vault backups should be enabled"},
	{ID: "p7", Name: "Diagnostic logs in Key Vault should be enabled"},
	{ID: "p8", Name: "Machines should have patches installed"},
}

var acmeCounts = map[string]Counts{
	"p1": {Compliant: 10, NonCompliant: 2}, // NonCompliant
	"p2": {Compliant: 5},                   // Compliant
	"p3": {Compliant: 3},                   // Compliant
	"p4": {Compliant: 6},                   // Compliant
	"p5": {Compliant: 7, NonCompliant: 1},  // NonCompliant
	"p6": {},                               // Unknown: nothing evaluated
	// p7 has no states in scope.
	"p8": {NonCompliant: 9}, // NonCompliant
}

// acmeResources are resources behind acmeCounts: p1 finds r01–r10
// compliant and r11, r12 not; p2 finds r11 and r13–r16 compliant; p3
// s1–s3 and p4 s1–s5 compliant and s6 exempt; p5 c1–c7 compliant and c8
// not; p8 m1–m9 non-compliant; p6 evaluated nothing.
func acmeResources() *Resources {
	r := NewResources()
	add := func(policy, prefix string, from, to int, e Evidence) {
		for i := from; i <= to; i++ {
			r.Add(policy, fmt.Sprintf("%s%02d", prefix, i), e)
		}
	}
	add("p1", "r", 1, 10, EvidenceCompliant)
	add("p1", "r", 11, 12, EvidenceNonCompliant)
	add("p2", "r", 11, 11, EvidenceCompliant)
	add("p2", "r", 13, 16, EvidenceCompliant)
	add("p3", "s", 1, 3, EvidenceCompliant)
	add("p4", "s", 1, 5, EvidenceCompliant)
	add("p4", "s", 6, 6, EvidenceExempt)
	add("p5", "c", 1, 7, EvidenceCompliant)
	add("p5", "c", 8, 8, EvidenceNonCompliant)
	add("p8", "m", 1, 9, EvidenceNonCompliant)
	return r
}

func TestMapExplainsEachMatch(t *testing.T) {
	m := newMapper(t, withAcme(t))
	mapping, err := m.Map(context.Background(), acmePolicies)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		framework, control string
		want               map[string]Match
	}{
		{"acme", "AC.1", map[string]Match{
			"p1": {Tier: 2, Confidence: ConfidenceLow, Keywords: []string{"mfa"}},
			"p2": {Tier: 1, Confidence: ConfidenceHigh, GroupName: "ACME_AC.1"},
		}},
		{"acme", "AC.2", nil},
		{"acme", "DP.1", map[string]Match{
			"p3": {Tier: 1, Confidence: ConfidenceHigh, GroupName: "ACME_DP.1"},
			"p4": {Tier: 2, Confidence: ConfidenceMedium, Keywords: []string{"encrypt", "transit"}},
		}},
		{"acme", "OP.1", map[string]Match{
			"p7": {Tier: 2, Confidence: ConfidenceMedium, Keywords: []string{"diagnostic", "logs"}},
		}},
	} {
		if got := mapping.Matches(tc.framework, tc.control); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %+v, want %+v", tc.framework, tc.control, got, tc.want)
		}
	}
	// p5's group name is SOC 2's: tier 1 there, keywords elsewhere.
	if got := mapping.Matches("soc2", "CC6.1")["p5"]; !reflect.DeepEqual(got, Match{Tier: 1, Confidence: ConfidenceHigh, GroupName: "SOC_2_CC6.1"}) {
		t.Errorf("p5 under SOC 2 CC6.1: %+v", got)
	}
	if got := mapping.Matches("nist_csf", "GV.OC-03")["p5"]; !reflect.DeepEqual(got, Match{Tier: 2, Confidence: ConfidenceMedium, Keywords: []string{"allowed", "locations"}}) {
		t.Errorf("p5 under NIST CSF GV.OC-03: %+v", got)
	}
	for _, ids := range mapping.matches["soc2"] {
		if match, ok := ids["p5"]; ok && match.Tier != 1 {
			t.Errorf("p5 maps to SOC 2 by keywords although its group name maps it: %+v", match)
		}
	}
}

// An override's reason reaches the explanation, and the coverage of a
// control it adds the policy to.
func TestMapOverride(t *testing.T) {
	dir := t.TempDir()
	def := `{"tuned": {"id": "tuned", "name": "Tuned", "version": "1", "description": "D.", "source": "S",
  "group_names": [{"prefix": "TUNED_", "example": "TUNED_T-1", "initiative": "Tuned"}],
  "categories": [{"id": "T", "name": "T"}],
  "controls": [{"id": "T-1", "name": "Review", "description": "Guests are reviewed.", "category": "T", "keywords": [],
    "overrides": [{"policy": "Review external users quarterly", "match": true, "reason": "A review of guests."}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "tuned.json"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := frameworks.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newMapper(t, set)
	got, err := m.Map(context.Background(), []Policy{{ID: "p1", Name: "review external users, quarterly"}, {ID: "p2", Name: "Review guest users"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Match{"p1": {Tier: 2, Confidence: ConfidenceMedium, Override: "A review of guests."}}
	if matches := got.Matches("tuned", "T-1"); !reflect.DeepEqual(matches, want) {
		t.Errorf("T-1 matches %+v, want %+v", matches, want)
	}
}

func TestMapNISTGroupNameForms(t *testing.T) {
	set, err := frameworks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m := newMapper(t, set)
	mapping, err := m.Map(context.Background(), []Policy{
		{ID: "dotted", Name: "Allowed virtual machine size SKUs", GroupNames: []string{"NIST_CSF_v2.0_PR.AA_01"}},
		{ID: "underscore", Name: "Allowed virtual machine size SKUs", GroupNames: []string{"NIST_CSF_v2.0_PR_AA_01"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := mapping.Matches("nist_csf", "PR.AA-01")
	if got["dotted"].Confidence != ConfidenceHigh || got["underscore"].Confidence != ConfidenceHigh {
		t.Errorf("PR.AA-01 matches %+v, want both forms with confidence high", got)
	}
	for control, ids := range mapping.matches["nist_csf"] {
		if control != "PR.AA-01" && len(ids) > 0 {
			t.Errorf("%s also matched: %+v", control, ids)
		}
	}
}

// The Rego and the Go reading of the README's rules (the frameworks
// package's ControlForGroup and Words) agree on a realistic policy set.
func TestMapAgreesWithFrameworkRules(t *testing.T) {
	set := withAcme(t)
	m := newMapper(t, set)
	list := benchPolicies(t, 200)
	mapping, err := m.Map(context.Background(), list)
	if err != nil {
		t.Fatal(err)
	}
	matched := 0
	for _, fw := range set.All() {
		for _, p := range list {
			want := expectedMatches(fw, p)
			for _, c := range fw.Controls {
				got, ok := mapping.Matches(fw.ID, c.ID)[p.ID]
				exp, expOK := want[c.ID]
				if ok != expOK || (ok && (got.Tier != exp.Tier || got.Confidence != exp.Confidence)) {
					t.Errorf("%s %s %q: got %+v (%v), want %+v (%v)", fw.ID, c.ID, p.Name, got, ok, exp, expOK)
				}
				if ok {
					matched++
				}
			}
		}
	}
	if matched < len(list) {
		t.Errorf("only %d matches for %d policies", matched, len(list))
	}
}

// expectedMatches applies the README's rules in Go.
func expectedMatches(fw *frameworks.Framework, p Policy) map[string]Match {
	out := map[string]Match{}
	for _, g := range p.GroupNames {
		if c, ok := fw.ControlForGroup(g); ok {
			out[c.ID] = Match{Tier: 1, Confidence: ConfidenceHigh}
		}
	}
	if len(out) > 0 {
		return out
	}
	for i := range fw.Controls {
		c := &fw.Controls[i]
		sets, added := fw.KeywordSets(c, p.Name)
		if added {
			out[c.ID] = Match{Tier: 2, Confidence: ConfidenceMedium}
			continue
		}
		for _, set := range sets {
			conf := ConfidenceLow
			if len(set) > 1 {
				conf = ConfidenceMedium
			}
			if out[c.ID].Confidence != ConfidenceMedium {
				out[c.ID] = Match{Tier: 2, Confidence: conf}
			}
		}
	}
	return out
}

func TestMapCache(t *testing.T) {
	ctx := context.Background()
	m := newMapper(t, withAcme(t))
	first, err := m.Map(ctx, acmePolicies)
	if err != nil {
		t.Fatal(err)
	}

	// The same set in another order, with a definition listed twice and
	// group names reordered, is a hit: the very same result.
	shuffled := make([]Policy, 0, len(acmePolicies)+1)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(acmePolicies)) {
		shuffled = append(shuffled, acmePolicies[i])
	}
	shuffled = append(shuffled, Policy{ID: "p3", Name: "Storage accounts should use TLS 1.2", GroupNames: []string{"ACME_DP", "ACME_DP.1"}})
	again, err := m.Map(ctx, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("an equal policy set in another order was evaluated again (hash %s, first %s)", again.Hash(), first.Hash())
	}

	// Any change is a miss.
	for name, change := range map[string]func([]Policy) []Policy{
		"name":       func(p []Policy) []Policy { p[0].Name += " (preview)"; return p },
		"group name": func(p []Policy) []Policy { p[0].GroupNames = []string{"ACME_AC.2"}; return p },
		"id":         func(p []Policy) []Policy { p[0].ID = "p1b"; return p },
		"fewer":      func(p []Policy) []Policy { return p[1:] },
		"more":       func(p []Policy) []Policy { return append(p, Policy{ID: "p9", Name: "Enable MFA"}) },
	} {
		changed, err := m.Map(ctx, change(clonePolicies(acmePolicies)))
		if err != nil {
			t.Fatal(err)
		}
		if changed == first || changed.Hash() == first.Hash() {
			t.Errorf("%s changed: the cached mapping was served", name)
		}
	}

	// A group-name change is evaluated, not only hashed differently.
	changed, err := m.Map(ctx, []Policy{{ID: "p1", Name: acmePolicies[0].Name, GroupNames: []string{"ACME_AC.2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := changed.Matches("acme", "AC.2")["p1"]; got.GroupName != "ACME_AC.2" {
		t.Errorf("after the change AC.2 has %+v", got)
	}

	// Other framework data is another key, even for the same policies.
	builtin, err := frameworks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	other, err := newMapper(t, builtin).Map(ctx, acmePolicies)
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash() == first.Hash() {
		t.Error("the hash does not cover the framework data")
	}
}

func clonePolicies(list []Policy) []Policy {
	out := make([]Policy, len(list))
	for i, p := range list {
		out[i] = Policy{ID: p.ID, Name: p.Name, GroupNames: append([]string(nil), p.GroupNames...)}
	}
	return out
}

func TestMapConcurrentCallersShareOneResult(t *testing.T) {
	m := newMapper(t, withAcme(t))
	results := make([]*Mapping, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			mapping, err := m.Map(context.Background(), acmePolicies)
			if err != nil {
				t.Error(err)
			}
			results[i] = mapping
		})
	}
	wg.Wait()
	for _, r := range results[1:] {
		if r != results[0] {
			t.Fatal("concurrent callers got different results for one policy set")
		}
	}
}

func TestMapEmptySet(t *testing.T) {
	m := newMapper(t, withAcme(t))
	mapping, err := m.Map(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Coverage("acme", mapping, nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.OverallCoveragePercent != 0 || d.Categories[0].Controls[0].Status != StatusNotCovered {
		t.Errorf("coverage of no policies: %+v", d)
	}
}

func TestCoverageKnownNumbers(t *testing.T) {
	m := newMapper(t, withAcme(t))
	mapping, err := m.Map(context.Background(), acmePolicies)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Coverage("acme", mapping, acmeCounts, acmeResources(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Framework != (FrameworkRef{ID: "acme", Name: "Acme cloud baseline", Version: "2026.1"}) || d.Disclaimer != Disclaimer {
		t.Errorf("framework %+v, disclaimer %q", d.Framework, d.Disclaimer)
	}
	// Covered: AC.1, DP.1, DP.2, OP.2. Not: AC.2 (no policy), OP.1 (p7 is
	// out of scope).
	if d.OverallCoveragePercent != 66.7 {
		t.Errorf("overall coverage %v, want 66.7 (4 of 6)", d.OverallCoveragePercent)
	}
	type row struct {
		status, result                       string
		matched, compliant, noncompl, exempt int
		percent                              float64
	}
	// The counts are of resources, over the control's policies.
	want := map[string]row{
		// r11 and r12 fail through p1 (r11 though p2 finds it
		// compliant); r01–r10 and r13–r16 pass: 14 of 16, 87.5 %.
		"AC.1": {StatusPartial, ResultFailed, 2, 14, 2, 0, 87.5},
		"AC.2": {StatusNotCovered, ResultManual, 0, 0, 0, 0, 0}, // nothing maps
		// s1–s6 pass, s6 by its exemption.
		"DP.1": {StatusCovered, ResultPassed, 2, 6, 0, 1, 100},
		"DP.2": {StatusNotEvaluated, ResultNotApplicable, 1, 0, 0, 0, 0}, // p6 evaluated nothing
		"OP.1": {StatusNotCovered, ResultManual, 0, 0, 0, 0, 0},          // p7 not in scope
		"OP.2": {StatusNonCompliant, ResultFailed, 1, 0, 9, 0, 0},        // m1–m9 fail
	}
	wantCategories := map[string]float64{"AC": 50, "DP": 100, "OP": 50}
	if len(d.Categories) != 3 {
		t.Fatalf("%d categories, want 3", len(d.Categories))
	}
	for _, cat := range d.Categories {
		if cat.CoveragePercent != wantCategories[cat.ID] {
			t.Errorf("category %s coverage %v, want %v", cat.ID, cat.CoveragePercent, wantCategories[cat.ID])
		}
		for _, c := range cat.Controls {
			got := row{c.Status, c.Result, c.MatchedPoliciesCount, c.CompliantCount, c.NonCompliantCount, c.ExemptCount, c.CompliancePercent}
			if got != want[c.ID] {
				t.Errorf("%s: %+v, want %+v", c.ID, got, want[c.ID])
			}
			if c.MatchedPolicies != nil {
				t.Errorf("%s lists policies without IncludePolicies", c.ID)
			}
		}
	}

	sums := m.Summaries(mapping, acmeCounts)
	var acme *Summary
	for i := range sums {
		if i > 0 && sums[i-1].ID >= sums[i].ID {
			t.Errorf("summaries out of order: %s before %s", sums[i-1].ID, sums[i].ID)
		}
		if sums[i].ID == "acme" {
			acme = &sums[i]
		}
	}
	if len(sums) != 9 || acme == nil {
		t.Fatalf("summaries %+v, want the 8 built-ins and acme", sums)
	}
	wantSum := Summary{ID: "acme", Name: "Acme cloud baseline", Version: "2026.1",
		Description:   "A deployment's own controls, small enough to compute coverage by hand.",
		TotalControls: 6, CategoriesCount: 3,
		CoverageSummary: CoverageSummary{ControlsWithCoverage: 4, ControlsWithoutCoverage: 2, OverallCoveragePercent: 66.7}}
	if *acme != wantSum {
		t.Errorf("acme summary %+v, want %+v", *acme, wantSum)
	}
}

// SOC 2 through its real group name and keywords: p5 maps to CC6.1 by its
// group name, and the other policies by keywords.
func TestCoverageBuiltinFramework(t *testing.T) {
	m := newMapper(t, withAcme(t))
	mapping, err := m.Map(context.Background(), acmePolicies)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Coverage("soc2", mapping, acmeCounts, acmeResources(), Options{IncludePolicies: true})
	if err != nil {
		t.Fatal(err)
	}
	c := control(t, d, "CC6.1")
	if c.Status != StatusPartial || c.MatchedPoliciesCount < 2 {
		t.Errorf("CC6.1: %+v", c)
	}
	var p5 *MatchedPolicy
	for i := range c.MatchedPolicies {
		if c.MatchedPolicies[i].PolicyDefinitionID == "p5" {
			p5 = &c.MatchedPolicies[i]
		}
	}
	if p5 == nil || p5.MappingConfidence != ConfidenceHigh || p5.ComplianceState != StateNonCompliant || p5.NonCompliantCount != 1 {
		t.Errorf("p5 under CC6.1: %+v", p5)
	}
	total := 0
	for _, cat := range d.Categories {
		total += len(cat.Controls)
	}
	if total != 61 || len(d.Categories) != 20 {
		t.Errorf("SOC 2 has %d controls in %d categories, want 61 in 20", total, len(d.Categories))
	}
}

func control(t *testing.T, d *Detail, id string) ControlCoverage {
	t.Helper()
	for _, cat := range d.Categories {
		for _, c := range cat.Controls {
			if c.ID == id {
				return c
			}
		}
	}
	t.Fatalf("no control %s", id)
	return ControlCoverage{}
}

func TestCoverageMatchedPoliciesAndExplanation(t *testing.T) {
	m := newMapper(t, withAcme(t))
	mapping, err := m.Map(context.Background(), acmePolicies)
	if err != nil {
		t.Fatal(err)
	}

	d, err := m.Coverage("acme", mapping, acmeCounts, acmeResources(), Options{IncludePolicies: true, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	got := control(t, d, "AC.1").MatchedPolicies
	want := []MatchedPolicy{
		// Non-compliant first.
		{PolicyDefinitionID: "p1", PolicyName: "Accounts with owner permissions should have MFA enabled",
			ComplianceState: StateNonCompliant, NonCompliantCount: 2, MappingConfidence: ConfidenceLow,
			Tier: 2, Keywords: []string{"mfa"}},
		{PolicyDefinitionID: "p2", PolicyName: "Require multi-factor authentication",
			ComplianceState: StateCompliant, MappingConfidence: ConfidenceHigh,
			Tier: 1, GroupName: "ACME_AC.1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AC.1 matched policies\n got %+v\nwant %+v", got, want)
	}
	if got := control(t, d, "DP.2").MatchedPolicies; len(got) != 1 || got[0].ComplianceState != StateUnknown {
		t.Errorf("DP.2 matched policies %+v, want p6 Unknown", got)
	}

	// The JSON shape: matched_policies present (even empty) only when asked
	// for, the explanation only with Explain.
	raw := marshal(t, d)
	if !strings.Contains(raw, `"matched_policies":[]`) || !strings.Contains(raw, `"group_name":"ACME_AC.1"`) ||
		!strings.Contains(raw, `"disclaimer":`) {
		t.Errorf("detail JSON lacks matched_policies, the explanation or the disclaimer: %s", raw)
	}
	d, err = m.Coverage("acme", mapping, acmeCounts, acmeResources(), Options{IncludePolicies: true})
	if err != nil {
		t.Fatal(err)
	}
	raw = marshal(t, d)
	if strings.Contains(raw, `"tier"`) || strings.Contains(raw, `"group_name"`) || strings.Contains(raw, `"keywords"`) {
		t.Errorf("explanation without Explain: %s", raw)
	}
	d, err = m.Coverage("acme", mapping, acmeCounts, acmeResources(), Options{Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if raw = marshal(t, d); strings.Contains(raw, "matched_policies\"") {
		t.Errorf("matched policies without IncludePolicies: %s", raw)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestUnknownFramework(t *testing.T) {
	m := newMapper(t, withAcme(t))
	mapping, err := m.Map(context.Background(), acmePolicies)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Coverage("soc3", mapping, acmeCounts, acmeResources(), Options{}); !errors.Is(err, ErrUnknownFramework) {
		t.Errorf("Coverage of an unknown framework: %v", err)
	}
	if _, err := m.Source("soc3"); !errors.Is(err, ErrUnknownFramework) {
		t.Errorf("Source of an unknown framework: %v", err)
	}
}

func TestSource(t *testing.T) {
	m := newMapper(t, withAcme(t))
	acme, err := m.Source("acme")
	if err != nil {
		t.Fatal(err)
	}
	soc2, err := m.Source("soc2")
	if err != nil {
		t.Fatal(err)
	}
	if len(acme.Hash) != 64 || acme.Hash == soc2.Hash {
		t.Errorf("hashes %q and %q", acme.Hash, soc2.Hash)
	}
	if len(acme.Rego) != 1 || acme.Rego[0].Name != "mapping.rego" ||
		!strings.Contains(acme.Rego[0].Text, "package steward.compliance.mapping") {
		t.Errorf("Rego in force: %+v", acme.Rego)
	}
	var data map[string]any
	if err := json.Unmarshal(acme.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["id"] != "acme" || len(data["controls"].([]any)) != 6 {
		t.Errorf("data %v", data)
	}
	again, err := newMapper(t, withAcme(t)).Source("acme")
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash != acme.Hash {
		t.Error("the source hash is not a content hash")
	}
}
