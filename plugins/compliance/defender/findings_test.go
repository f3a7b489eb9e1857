package defender_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// tlsRemediation is the TLS definition's stored guidance.
const tlsRemediation = "In the storage account's Configuration, set Minimum TLS version to 1.2."

// findingsHarness stores policy states beside defenderWorld's synced
// assessments — Contoso's sa1 non-compliant under the TLS policy and kv1
// compliant under the vault policy, Fabrikam's sa4 compliant under the
// TLS policy, all evaluated two hours before the sync — and the TLS
// definition's guidance, and serves the findings route over both sources.
func findingsHarness(t *testing.T, f *fixture) *plugintest.Harness {
	t.Helper()
	ctx := context.Background()
	st := &states.Store{DB: f.store.DB}
	put := func(tenant, sub string, list ...states.State) {
		if _, err := st.Replace(ctx, states.Target{TenantID: tenant, SubscriptionID: sub, SyncedAt: simNow}, func(emit func(states.State) error) error {
			for _, s := range list {
				if err := emit(s); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	ps := func(res, typ, def, name, compliance string) states.State {
		return states.State{ResourceID: res, ResourceType: typ, PolicyAssignmentID: "/subscriptions/x/providers/Microsoft.Authorization/policyAssignments/a",
			PolicyDefinitionID: def, PolicyDefinitionName: def[strings.LastIndex(def, "/")+1:], PolicyName: name, Category: "Storage",
			ComplianceState: compliance, Severity: "Medium", EvaluatedAt: simNow.Add(-2 * time.Hour)}
	}
	put(contoso.ID, subC1, ps(sa1, "Microsoft.Storage/storageAccounts", defTLS, nameTLS, "NonCompliant"),
		ps(kv1, "Microsoft.KeyVault/vaults", defVault, nameVault, "Compliant"))
	put(fabrikam.ID, subF1, ps(sa4, "Microsoft.Storage/storageAccounts", defTLS, nameTLS, "Compliant"))
	if err := st.PutGuidance(ctx, []states.Guidance{{PolicyDefinitionID: defTLS, DisplayName: nameTLS, Remediation: tlsRemediation}}, simNow); err != nil {
		t.Fatal(err)
	}
	set, err := frameworks.WithDir("")
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := mapping.New(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, f.store.DB, exemptions.Migrations(), "compliance_migrations"); err != nil {
		t.Fatal(err)
	}
	cov := &coverage.Service{Mapper: mapper, Store: st, Sources: []coverage.Source{f.store.CoverageSource()}, Exemptions: &exemptions.Store{DB: f.store.DB},
		Now: func() time.Time { return simNow }}
	pl := func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
		return &sdk.Plugin{Routes: cov.Routes()}, nil
	}
	return plugintest.New(t, sdk.Definition{Name: "compliance"}, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}})
}

// findingKey is a finding's resource name, policy definition's last
// segment and source.
func findingKey(it coverage.Finding) string {
	last := func(id string) string { return id[strings.LastIndex(id, "/")+1:] }
	return last(it.ResourceID) + "|" + last(it.PolicyDefinitionID) + "|" + it.Source
}

// TestFindingsOfBothSources: the findings route lists the policy states'
// findings and the assessments (NotApplicable ones left out) as one list:
// each with its source, a defender one with its assessment and remediation,
// a policy one with its definition's stored guidance; every filter, the
// sort, paging and the total work over both; a user sees only its
// tenant's.
func TestFindingsOfBothSources(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, defenderWorld())
		f.sync(t)
		h := findingsHarness(t, f)
		get := func(target string, p sdk.Principal) coverage.Findings {
			t.Helper()
			resp := h.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
			defer resp.Body.Close()
			var page coverage.Findings
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&page) != nil {
				t.Fatalf("GET %s: %d", target, resp.StatusCode)
			}
			return page
		}
		keys := func(page coverage.Findings) []string {
			var out []string
			for _, it := range page.Items {
				out = append(out, findingKey(it))
			}
			return out
		}
		devVault, devTLS := defVault[strings.LastIndex(defVault, "/")+1:], defTLS[strings.LastIndex(defTLS, "/")+1:]
		all := get("/api/v1/compliance/findings?sort_by=resource&sort_order=asc", admin)
		want := []string{subC1 + "||defender", "kv1|" + devVault + "|defender", "kv1|" + devVault + "|policy", "sa1|" + devTLS + "|defender",
			"sa1|" + devTLS + "|policy", "sa2|" + devTLS + "|defender", "sa4|" + devTLS + "|defender", "sa4|" + devTLS + "|policy"}
		if got := keys(all); all.Total != 8 || !slices.Equal(got, want) {
			t.Fatalf("findings %d %v\nwant 8 %v", all.Total, got, want)
		}
		sa1Defender, sa1Policy := all.Items[3], all.Items[4]
		wantDefender := coverage.Finding{Source: "defender", TenantID: contoso.ID, SubscriptionID: subC1, ResourceID: sa1,
			ResourceType: "microsoft.storage/storageaccounts", ResourceName: "sa1", Link: coverage.ResourceLink(sa1), PolicyDefinitionID: defTLS,
			PolicyName: nameTLS, Category: "Data", Severity: "Medium", ComplianceState: states.StateNonCompliant, Assignments: []string{},
			EvaluatedAt: simNow, Controls: sa1Defender.Controls, AssessmentID: sa1 + "/providers/Microsoft.Security/assessments/" + keyTLS,
			AssessmentName: keyTLS, Remediation: "Fix " + nameTLS}
		if !reflect.DeepEqual(sa1Defender, wantDefender) {
			t.Errorf("sa1's assessment\n got %+v\nwant %+v", sa1Defender, wantDefender)
		}
		if sa1Policy.Source != "policy" || sa1Policy.Remediation != tlsRemediation || sa1Policy.AssessmentID != "" ||
			sa1Policy.ComplianceState != states.StateNonCompliant || !sa1Policy.EvaluatedAt.Equal(simNow.Add(-2*time.Hour)) ||
			!slices.Equal(sa1Policy.Assignments, []string{"/subscriptions/x/providers/Microsoft.Authorization/policyAssignments/a"}) ||
			!reflect.DeepEqual(sa1Policy.Controls, sa1Defender.Controls) {
			t.Errorf("sa1 under the TLS policy %+v", sa1Policy)
		}
		if kv := all.Items[2]; kv.Remediation != "" || kv.ComplianceState != states.StateCompliant {
			t.Errorf("kv1 under the vault policy, whose definition has no guidance stored: %+v", kv)
		}
		if mfa := all.Items[0]; mfa.PolicyDefinitionID != "" || mfa.Severity != "High" || mfa.Remediation != "Fix "+nameMFA {
			t.Errorf("the MFA assessment of no policy %+v", mfa)
		}
		for target, want := range map[string][]string{
			"?source=policy&sort_by=resource&sort_order=asc":                   {"kv1|" + devVault + "|policy", "sa1|" + devTLS + "|policy", "sa4|" + devTLS + "|policy"},
			"?source=defender&state=compliant&sort_by=resource&sort_order=asc": {"sa2|" + devTLS + "|defender", "sa4|" + devTLS + "|defender"},
			"?state=non_compliant&sort_by=resource&sort_order=asc": {subC1 + "||defender", "kv1|" + devVault + "|defender", "sa1|" + devTLS + "|defender",
				"sa1|" + devTLS + "|policy"},
			"?source=defender&state=exempt":                  {},
			"?severity=High&sort_by=resource&sort_order=asc": {subC1 + "||defender", "kv1|" + devVault + "|defender"},
			"?resource_type=Microsoft.KeyVault/vaults":       {"kv1|" + devVault + "|defender", "kv1|" + devVault + "|policy"},
			"?policy=" + defTLS + "&source=defender&sort_by=resource&sort_order=asc": {"sa1|" + devTLS + "|defender", "sa2|" + devTLS + "|defender",
				"sa4|" + devTLS + "|defender"},
			// Latest evaluated first: the assessments, synced after the
			// states were evaluated, by tenant, resource and policy.
			"?sort_by=evaluated&limit=5": {subC1 + "||defender", "kv1|" + devVault + "|defender", "sa1|" + devTLS + "|defender",
				"sa2|" + devTLS + "|defender", "sa4|" + devTLS + "|defender"},
			"?sort_by=resource&sort_order=asc&limit=3&offset=3": {"sa1|" + devTLS + "|defender", "sa1|" + devTLS + "|policy", "sa2|" + devTLS + "|defender"},
		} {
			page := get("/api/v1/compliance/findings"+target, admin)
			if got := keys(page); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", target, got, want)
			}
			if strings.Contains(target, "limit") == (page.Total == len(want)) {
				t.Errorf("%s: total %d", target, page.Total)
			}
		}
		// A framework keeps the findings of its mapped policies, of both
		// sources: never the MFA assessment, which has none.
		var mapped coverage.Findings
		for _, fw := range []string{"soc2", "nist_csf"} {
			mapped = get("/api/v1/compliance/findings?framework="+fw, admin)
			if mapped.Total > 0 {
				break
			}
		}
		sources := map[string]bool{}
		for _, it := range mapped.Items {
			sources[it.Source] = true
			if it.PolicyDefinitionID == "" || len(it.Controls) == 0 {
				t.Errorf("a framework's finding of no control %+v", it)
			}
		}
		if mapped.Total != len(mapped.Items) || !sources["policy"] || !sources["defender"] {
			t.Errorf("a framework's findings: total %d, sources %v", mapped.Total, sources)
		}
		// A Steward exemption of sa1 under the TLS policy covers both
		// sources' findings of them (the exemptions keep ids in lower case).
		ex := &exemptions.Exemption{TenantID: contoso.ID, Scope: exemptions.ScopeFinding, ResourceID: strings.ToLower(sa1), PolicyDefinitionID: strings.ToLower(defTLS),
			Reason: "Private network only", Owner: "ops", ExpiresAt: simNow.AddDate(0, 1, 0), CreatedBy: "admin", CreatedAt: simNow, UpdatedAt: simNow}
		if err := (&exemptions.Store{DB: f.store.DB}).Create(context.Background(), ex, simNow); err != nil {
			t.Fatal(err)
		}
		if page := get("/api/v1/compliance/findings?sort_by=resource&sort_order=asc", admin); page.Total != 6 ||
			slices.ContainsFunc(page.Items, func(it coverage.Finding) bool { return it.ResourceID == sa1 }) {
			t.Errorf("with sa1's TLS findings exempted: %d %v", page.Total, keys(page))
		}
		if page := get("/api/v1/compliance/findings?include_exempted=true&sort_by=resource&sort_order=asc", admin); page.Total != 8 ||
			page.Items[3].StewardExemption == nil || page.Items[4].StewardExemption == nil || page.Items[5].StewardExemption != nil {
			t.Errorf("exempted included: %d %+v", page.Total, page.Items)
		}
		own := get("/api/v1/compliance/findings?limit=500&include_exempted=true", contosoer)
		for _, it := range own.Items {
			if it.TenantID != contoso.ID {
				t.Errorf("Contoso's user sees %+v", it)
			}
		}
		if own.Total != 6 {
			t.Errorf("Contoso's user sees %d findings, want 6", own.Total)
		}
		for target, status := range map[string]int{
			"/api/v1/compliance/findings?source=cloud":              http.StatusUnprocessableEntity,
			"/api/v1/compliance/findings?tenant_ids=" + fabrikam.ID: http.StatusForbidden,
		} {
			resp := h.Do(httptest.NewRequest(http.MethodGet, target, nil), contosoer)
			var p sdk.Problem
			if resp.StatusCode != status || json.NewDecoder(resp.Body).Decode(&p) != nil ||
				(status == http.StatusUnprocessableEntity && (len(p.Errors) != 1 || p.Errors[0].Location != "query.source")) {
				t.Errorf("%s: %d %+v, want %d", target, resp.StatusCode, p, status)
			}
			resp.Body.Close()
		}
	})
}
