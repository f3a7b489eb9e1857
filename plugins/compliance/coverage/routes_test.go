package coverage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", IsActive: true}

	admin      = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer  = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}
	fabrikamer = sdk.Principal{ID: "uf", Kind: "user", TenantIDs: []string{fabrikam.ID}}
)

// The policies of the fixture, named so that the acme framework
// (testdata/acme.json) maps them as the comments say.
var (
	// pMFA maps to AC.1 by the keyword set [mfa] (tier 2, low).
	pMFA = policy{"/providers/Microsoft.Authorization/policyDefinitions/mfa", "Accounts with owner permissions should have MFA enabled"}
	// pMulti maps to AC.1 by its group name ACME_AC.1 (tier 1, high).
	pMulti = policy{"/providers/Microsoft.Authorization/policyDefinitions/multi", "Require multi-factor authentication"}
	// pTLS is assigned twice: under ACME_DP.1 (DP.1, tier 1) and under
	// SOC_2_CC6.1; only the union of its group names maps it both ways.
	pTLS = policy{"/providers/Microsoft.Authorization/policyDefinitions/tls", "Storage accounts should use TLS 1.2"}
	// pTransit maps to DP.1 by [encrypt, transit] (tier 2, medium).
	pTransit = policy{"/providers/Microsoft.Authorization/policyDefinitions/transit", "Enable encryption in transit for Redis"}
	// pBackup maps to DP.2 by [backup]; its one state is Unknown.
	pBackup = policy{"/providers/Microsoft.Authorization/policyDefinitions/backup", "Vault backups should be enabled"}
	// pPatch maps to OP.2 by [patch].
	pPatch = policy{"/providers/Microsoft.Authorization/policyDefinitions/patch", "Machines should have patches installed"}
)

type policy struct{ id, name string }

func st(p policy, assignment, res, compliance string, groups ...string) states.State {
	return states.State{ResourceID: res, ResourceType: "Microsoft.Storage/storageAccounts", PolicyAssignmentID: assignment,
		PolicyDefinitionID: p.id, PolicyDefinitionName: filepath.Base(p.id), PolicyName: p.name, Category: "General",
		GroupNames: groups, ComplianceState: compliance, Severity: "Medium", EvaluatedAt: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)}
}

const (
	r1 = "/subscriptions/c1/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/r1"
	r2 = "/subscriptions/c1/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/r2"
	r3 = "/subscriptions/c1/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/r3"
	r6 = "/subscriptions/f1/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/r6"
	r7 = "/subscriptions/f1/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/r7"
)

// fixtureStates are the two tenants' stored states. Worked out by hand
// against acme (six controls in three categories):
//
//	Both tenants: AC.1 partial (2 matched; r1 fails through pMFA though
//	pMulti finds it compliant, r2 and r6 pass: 2 of 3 resources, 66.7 %);
//	AC.2 not covered; DP.1 covered (pTLS, pTransit; r1, r2, r6 pass); DP.2
//	not evaluated (pBackup Unknown); OP.1 not covered; OP.2 non-compliant
//	(pPatch fails r6 and r7). 4 of 6 covered: 66.7 %; categories AC 50,
//	DP 100, OP 50.
//	Contoso: AC.1 partial (r1 fails, r2 passes: 50 %), DP.1 covered
//	(pTLS only; r1, r2), DP.2 not evaluated, OP.2 not covered: 3 of 6,
//	50 %.
//	Fabrikam: AC.1 covered (pMFA passes r6), DP.1 covered (pTransit, r6),
//	OP.2 non-compliant (r6, r7): 3 of 6, 50 %.
var fixtureStates = map[string][]states.State{
	contoso.ID: {
		st(pMFA, "a1", r1, "NonCompliant"), st(pMFA, "a1", r2, "Compliant"),
		st(pMulti, "a2", r1, "Compliant", "ACME_AC.1"),
		st(pTLS, "a2", r1, "Compliant", "ACME_DP.1"), st(pTLS, "a3", r2, "Compliant", "SOC_2_CC6.1"),
		st(pBackup, "a1", r3, "Unknown"),
	},
	fabrikam.ID: {
		st(pMFA, "a9", r6, "Compliant"),
		st(pTransit, "a9", r6, "Compliant"),
		st(pPatch, "a9", r6, "NonCompliant"), st(pPatch, "a9", r7, "NonCompliant"),
	},
}

// acmeSet is the built-in frameworks with testdata/acme.json loaded from a
// folder, as a deployment's frameworks_dir.
func acmeSet(tb testing.TB) *frameworks.Set {
	tb.Helper()
	dir := tb.TempDir()
	raw, err := os.ReadFile(filepath.Join("testdata", "acme.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme.json"), raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	set, err := frameworks.WithDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return set
}

type fixture struct {
	svc     *coverage.Service
	harness *plugintest.Harness
}

// start stores byTenant (one subscription each) in a migrated database of
// the dialect and serves the framework routes under the test harness.
func start(tb testing.TB, dialect string, set *frameworks.Set, byTenant map[string][]states.State) *fixture {
	tb.Helper()
	ctx := context.Background()
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
		tb.Fatal(err)
	}
	stStore := &states.Store{DB: db}
	for tenant, list := range byTenant {
		put(tb, stStore, tenant, list)
	}
	mapper, err := mapping.New(ctx, set)
	if err != nil {
		tb.Fatal(err)
	}
	svc := &coverage.Service{Mapper: mapper, Store: stStore}
	pl := func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
		return &sdk.Plugin{Routes: svc.Routes()}, nil
	}
	return &fixture{svc: svc, harness: plugintest.New(tb, sdk.Definition{Name: "compliance"}, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}})}
}

// put replaces the states of the tenant's one subscription with list.
func put(tb testing.TB, st *states.Store, tenant string, list []states.State) {
	tb.Helper()
	_, err := st.Replace(context.Background(), states.Target{TenantID: tenant, SubscriptionID: "sub-" + tenant, SyncedAt: time.Now()},
		func(emit func(states.State) error) error {
			for _, s := range list {
				if err := emit(s); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		tb.Fatal(err)
	}
}

func (f *fixture) do(t *testing.T, target string, p sdk.Principal) (*http.Response, []byte) {
	t.Helper()
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func (f *fixture) get(t *testing.T, target string, p sdk.Principal, v any) {
	t.Helper()
	resp, body := f.do(t, target, p)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}

func each(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}

// row is a control's figures.
type row struct {
	status                           string
	matched, compliant, nonCompliant int
	percent                          float64
}

func rows(d *mapping.Detail) map[string]row {
	out := map[string]row{}
	for _, cat := range d.Categories {
		for _, c := range cat.Controls {
			out[c.ID] = row{c.Status, c.MatchedPoliciesCount, c.CompliantCount, c.NonCompliantCount, c.CompliancePercent}
		}
	}
	return out
}

func summaryOf(t *testing.T, list coverage.List, id string) mapping.Summary {
	t.Helper()
	for _, s := range list.Frameworks {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("framework %s not listed", id)
	return mapping.Summary{}
}

// TestFrameworkCoverage: the known states give the hand-computed coverage
// through the routes, for all tenants and for each tenant's own user.
func TestFrameworkCoverage(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, fixtureStates)

		var list coverage.List
		f.get(t, "/api/v1/compliance/frameworks", admin, &list)
		if list.Disclaimer != mapping.Disclaimer {
			t.Errorf("list disclaimer %q", list.Disclaimer)
		}
		var ids []string
		for _, s := range list.Frameworks {
			ids = append(ids, s.ID)
		}
		want := []string{}
		for _, fw := range set.All() {
			want = append(want, fw.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("frameworks %v, want %v", ids, want)
		}
		acme := summaryOf(t, list, "acme")
		if acme.Name != "Acme cloud baseline" || acme.Version != "2026.1" || acme.TotalControls != 6 || acme.CategoriesCount != 3 ||
			acme.CoverageSummary != (mapping.CoverageSummary{ControlsWithCoverage: 4, ControlsWithoutCoverage: 2, OverallCoveragePercent: 66.7}) {
			t.Errorf("acme's entry %+v", acme)
		}

		var d mapping.Detail
		f.get(t, "/api/v1/compliance/frameworks/acme", admin, &d)
		if d.Framework != (mapping.FrameworkRef{ID: "acme", Name: "Acme cloud baseline", Version: "2026.1"}) ||
			d.OverallCoveragePercent != 66.7 || d.Disclaimer != mapping.Disclaimer {
			t.Errorf("detail %+v", d)
		}
		var cats []float64
		for _, c := range d.Categories {
			cats = append(cats, c.CoveragePercent)
			for _, ctl := range c.Controls {
				if ctl.MatchedPolicies != nil {
					t.Errorf("%s lists policies without include_policies", ctl.ID)
				}
			}
		}
		if !slices.Equal(cats, []float64{50, 100, 50}) {
			t.Errorf("category coverage %v, want [50 100 50]", cats)
		}
		wantRows := map[string]row{
			"AC.1": {mapping.StatusPartial, 2, 2, 1, 66.7},
			"AC.2": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"DP.1": {mapping.StatusCovered, 2, 3, 0, 100},
			"DP.2": {mapping.StatusNotEvaluated, 1, 0, 0, 0},
			"OP.1": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"OP.2": {mapping.StatusNonCompliant, 1, 0, 2, 0},
		}
		if got := rows(&d); !mapsEqual(got, wantRows) {
			t.Errorf("controls %+v, want %+v", got, wantRows)
		}

		// Each tenant's user sees its own tenant's coverage only.
		f.get(t, "/api/v1/compliance/frameworks", contosoer, &list)
		if got := summaryOf(t, list, "acme").CoverageSummary; got != (mapping.CoverageSummary{ControlsWithCoverage: 3, ControlsWithoutCoverage: 3, OverallCoveragePercent: 50}) {
			t.Errorf("Contoso's acme summary %+v", got)
		}
		f.get(t, "/api/v1/compliance/frameworks/acme", contosoer, &d)
		contosoRows := map[string]row{
			"AC.1": {mapping.StatusPartial, 2, 1, 1, 50},
			"AC.2": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"DP.1": {mapping.StatusCovered, 1, 2, 0, 100},
			"DP.2": {mapping.StatusNotEvaluated, 1, 0, 0, 0},
			"OP.1": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"OP.2": {mapping.StatusNotCovered, 0, 0, 0, 0},
		}
		if got := rows(&d); d.OverallCoveragePercent != 50 || !mapsEqual(got, contosoRows) {
			t.Errorf("Contoso's controls %+v (%v), want %+v", got, d.OverallCoveragePercent, contosoRows)
		}
		fabrikamRows := map[string]row{
			"AC.1": {mapping.StatusCovered, 1, 1, 0, 100},
			"AC.2": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"DP.1": {mapping.StatusCovered, 1, 1, 0, 100},
			"DP.2": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"OP.1": {mapping.StatusNotCovered, 0, 0, 0, 0},
			"OP.2": {mapping.StatusNonCompliant, 1, 0, 2, 0},
		}
		for _, c := range []struct {
			target string
			p      sdk.Principal
		}{
			{"/api/v1/compliance/frameworks/acme", fabrikamer},
			{"/api/v1/compliance/frameworks/acme?tenant_ids=" + fabrikam.ID, admin},
		} {
			f.get(t, c.target, c.p, &d)
			if got := rows(&d); d.OverallCoveragePercent != 50 || !mapsEqual(got, fabrikamRows) {
				t.Errorf("%s as %s: %+v (%v), want %+v", c.target, c.p.ID, got, d.OverallCoveragePercent, fabrikamRows)
			}
		}
	})
}

func mapsEqual(a, b map[string]row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func control(t *testing.T, d *mapping.Detail, id string) mapping.ControlCoverage {
	t.Helper()
	for _, cat := range d.Categories {
		for _, c := range cat.Controls {
			if c.ID == id {
				return c
			}
		}
	}
	t.Fatalf("control %s not in %s", id, d.Framework.ID)
	return mapping.ControlCoverage{}
}

// TestFrameworkPolicies: include_policies lists each control's matched
// policies, non-compliant first; explain adds why each matched, through a
// group name of any of a definition's assignments.
func TestFrameworkPolicies(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, fixtureStates)

		var d mapping.Detail
		f.get(t, "/api/v1/compliance/frameworks/acme?include_policies=true", admin, &d)
		got := control(t, &d, "AC.1").MatchedPolicies
		want := []mapping.MatchedPolicy{
			{PolicyDefinitionID: pMFA.id, PolicyName: pMFA.name, ComplianceState: mapping.StateNonCompliant, NonCompliantCount: 1, MappingConfidence: mapping.ConfidenceLow},
			{PolicyDefinitionID: pMulti.id, PolicyName: pMulti.name, ComplianceState: mapping.StateCompliant, MappingConfidence: mapping.ConfidenceHigh},
		}
		if !equalPolicies(got, want) {
			t.Errorf("AC.1 policies %+v, want %+v", got, want)
		}
		if c := control(t, &d, "AC.2"); c.MatchedPolicies == nil || len(c.MatchedPolicies) != 0 {
			t.Errorf("AC.2 policies %+v, want an empty list", c.MatchedPolicies)
		}
		resp, body := f.do(t, "/api/v1/compliance/frameworks/acme?include_policies=true", admin)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"matched_policies":[]`) || strings.Contains(string(body), `"tier"`) {
			t.Errorf("include_policies without explain: %s", body)
		}

		// explain lists the policies too, with the tier and what matched.
		f.get(t, "/api/v1/compliance/frameworks/acme?explain=true", admin, &d)
		want[0].Tier, want[0].Keywords = 2, []string{"mfa"}
		want[1].Tier, want[1].GroupName = 1, "ACME_AC.1"
		if got := control(t, &d, "AC.1").MatchedPolicies; !equalPolicies(got, want) {
			t.Errorf("AC.1 explained %+v, want %+v", got, want)
		}
		dp := control(t, &d, "DP.1").MatchedPolicies
		// Neither is non-compliant: by name.
		if len(dp) != 2 || dp[1].PolicyDefinitionID != pTLS.id || dp[1].Tier != 1 || dp[1].GroupName != "ACME_DP.1" ||
			dp[0].PolicyDefinitionID != pTransit.id || dp[0].Tier != 2 || dp[0].MappingConfidence != mapping.ConfidenceMedium ||
			!slices.Equal(dp[0].Keywords, []string{"encrypt", "transit"}) {
			t.Errorf("DP.1 explained %+v", dp)
		}
		// pTLS's other assignment names a SOC 2 control.
		f.get(t, "/api/v1/compliance/frameworks/soc2?include_policies=1&explain=true", admin, &d)
		found := false
		for _, p := range control(t, &d, "CC6.1").MatchedPolicies {
			if p.PolicyDefinitionID == pTLS.id {
				found = p.Tier == 1 && p.GroupName == "SOC_2_CC6.1" && p.MappingConfidence == mapping.ConfidenceHigh
			}
		}
		if !found || d.Disclaimer != mapping.Disclaimer {
			t.Errorf("SOC 2 CC6.1 %+v: want pTLS at tier 1 by SOC_2_CC6.1", control(t, &d, "CC6.1").MatchedPolicies)
		}
	})
}

func equalPolicies(a, b []mapping.MatchedPolicy) bool {
	return slices.EqualFunc(a, b, func(x, y mapping.MatchedPolicy) bool {
		return x.PolicyDefinitionID == y.PolicyDefinitionID && x.PolicyName == y.PolicyName && x.ComplianceState == y.ComplianceState &&
			x.NonCompliantCount == y.NonCompliantCount && x.MappingConfidence == y.MappingConfidence && x.Tier == y.Tier &&
			x.GroupName == y.GroupName && slices.Equal(x.Keywords, y.Keywords)
	})
}

// TestFrameworkSource: the source route gives the Rego and the framework's
// data in force with the mapper's content hash.
func TestFrameworkSource(t *testing.T) {
	set := acmeSet(t)
	f := start(t, storetest.Dialects()[0], set, nil)
	var src mapping.Source
	f.get(t, "/api/v1/compliance/frameworks/acme/source", contosoer, &src)
	want, err := f.svc.Mapper.Source("acme")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		ID       string `json:"id"`
		Controls []any  `json:"controls"`
	}
	if err := json.Unmarshal(src.Data, &data); err != nil {
		t.Fatal(err)
	}
	if src.FrameworkID != "acme" || src.Hash != want.Hash || len(src.Hash) != 64 || data.ID != "acme" || len(data.Controls) != 6 ||
		len(src.Rego) == 0 || src.Rego[0].Name != "mapping.rego" || !strings.Contains(src.Rego[0].Text, "package steward.compliance.mapping") {
		t.Errorf("source %s %s, %d Rego files, data %+v", src.FrameworkID, src.Hash, len(src.Rego), data)
	}
	for _, r := range src.Rego {
		if strings.HasSuffix(r.Name, "_test.rego") {
			t.Errorf("source carries the unit tests %s", r.Name)
		}
	}
}

// TestFrameworkErrors: an unknown framework is a 404 problem, a bad
// boolean a 422 naming it, a tenant the caller may not see a 403; none
// leaks another tenant's figures.
func TestFrameworkErrors(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, fixtureStates)
		for _, c := range []struct {
			target   string
			p        sdk.Principal
			status   int
			location string
		}{
			{"/api/v1/compliance/frameworks/nope", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/frameworks/nope/source", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/frameworks/SOC2", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/frameworks/acme?include_policies=yes", admin, http.StatusUnprocessableEntity, "query.include_policies"},
			{"/api/v1/compliance/frameworks/acme?explain=2", admin, http.StatusUnprocessableEntity, "query.explain"},
			{"/api/v1/compliance/frameworks/acme?tenant_ids=" + fabrikam.ID, contosoer, http.StatusForbidden, ""},
			{"/api/v1/compliance/frameworks?tenant_ids=" + contoso.ID + "," + fabrikam.ID, contosoer, http.StatusForbidden, ""},
			{"/api/v1/compliance/frameworks", sdk.Principal{}, http.StatusUnauthorized, ""},
		} {
			resp, body := f.do(t, c.target, c.p)
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s: %d %s %s, want %d problem", c.target, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status)
				continue
			}
			var p sdk.Problem
			if err := json.Unmarshal(body, &p); err != nil || p.Status != c.status {
				t.Errorf("%s: problem %s", c.target, body)
			}
			if c.location != "" && (len(p.Errors) != 1 || p.Errors[0].Location != c.location) {
				t.Errorf("%s: errors %+v, want one at %s", c.target, p.Errors, c.location)
			}
			if strings.Contains(string(body), fabrikam.ID) || strings.Contains(string(body), "compliant_count") {
				t.Errorf("%s: the refusal carries data: %s", c.target, body)
			}
		}
	})
}

// TestCoverageFollowsSync: a request after a sync changed a tenant's
// states answers from the new states, for every tenant selection that
// includes it, and not for those that do not.
func TestCoverageFollowsSync(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, fixtureStates)
		var d mapping.Detail
		f.get(t, "/api/v1/compliance/frameworks/acme", admin, &d)
		f.get(t, "/api/v1/compliance/frameworks/acme", contosoer, &d)
		if got := rows(&d)["OP.2"]; got.status != mapping.StatusNotCovered {
			t.Fatalf("Contoso's OP.2 before: %+v", got)
		}
		// Fabrikam's machines are patched now; Contoso gains a patch policy.
		put(t, f.svc.Store, fabrikam.ID, []states.State{st(pPatch, "a9", r6, "Compliant"), st(pPatch, "a9", r7, "Compliant")})
		put(t, f.svc.Store, contoso.ID, append(slices.Clone(fixtureStates[contoso.ID]), st(pPatch, "a1", r3, "NonCompliant")))
		f.get(t, "/api/v1/compliance/frameworks/acme", admin, &d)
		// pPatch fails Contoso's r3 and passes Fabrikam's r6 and r7;
		// pTransit is gone with Fabrikam's states.
		if got := rows(&d); got["OP.2"] != (row{mapping.StatusPartial, 1, 2, 1, 66.7}) || got["DP.1"] != (row{mapping.StatusCovered, 1, 2, 0, 100}) {
			t.Errorf("after the syncs: %+v", got)
		}
		f.get(t, "/api/v1/compliance/frameworks/acme", fabrikamer, &d)
		if got := rows(&d); got["OP.2"] != (row{mapping.StatusCovered, 1, 2, 0, 100}) || got["AC.1"].status != mapping.StatusNotCovered {
			t.Errorf("Fabrikam after its sync: %+v", got)
		}
		f.get(t, "/api/v1/compliance/frameworks/acme", contosoer, &d)
		if got := rows(&d)["OP.2"]; got != (row{mapping.StatusNonCompliant, 1, 0, 1, 0}) {
			t.Errorf("Contoso's OP.2 after its sync: %+v", got)
		}
	})
}
