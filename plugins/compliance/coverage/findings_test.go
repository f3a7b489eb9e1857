package coverage_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
)

// findingStates are fixtureStates with a second assignment of pMFA finding
// Contoso's r1 compliant (the non-compliant one wins) and pMulti exempting
// r2. Against acme's AC.1 (pMFA, pMulti): r1 fails (pMFA), r2 passes by
// its exemption (pMFA compliant, pMulti exempt), r6 passes (pMFA): 2 of 3,
// 66.67 %. The tenants have 11 findings (resource × policy): Contoso 7
// (r1 and r2 under pMFA, pMulti and pTLS; r3 under pBackup), Fabrikam 4.
func findingStates() map[string][]states.State {
	return map[string][]states.State{
		contoso.ID: append(slices.Clone(fixtureStates[contoso.ID]),
			st(pMFA, "a4", r1, "Compliant"), st(pMulti, "a2", r2, "Exempt", "ACME_AC.1")),
		fabrikam.ID: fixtureStates[fabrikam.ID],
	}
}

func resourceIDs(list []coverage.ControlResource) []string {
	var out []string
	for _, r := range list {
		out = append(out, r.ResourceID)
	}
	return out
}

// TestControlResources: a control's failing and passing resources are
// the stored ones, each through its policies, and its counts are those of
// the framework detail; another tenant's user is refused.
func TestControlResources(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, findingStates())
		var c coverage.Control
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/AC.1", admin, &c)
		if c.Result != mapping.ResultFailed || c.Passed != 2 || c.Failed != 1 || c.Exempt != 1 || c.Percent == nil || *c.Percent != 66.67 {
			t.Errorf("AC.1 %s %d/%d exempt %d %v", c.Result, c.Passed, c.Failed, c.Exempt, c.Percent)
		}
		if got := resourceIDs(c.Failing); !slices.Equal(got, []string{r1}) {
			t.Errorf("failing %v, want r1", got)
		}
		if got := resourceIDs(c.Passing); !slices.Equal(got, []string{r2, r6}) {
			t.Errorf("passing %v, want r2 and r6", got)
		}
		fail := c.Failing[0]
		if fail.Policies[0].PolicyDefinitionID != pMFA.id || fail.Policies[0].ComplianceState != states.StateNonCompliant ||
			fail.Policies[1].ComplianceState != states.StateCompliant || fail.Exempt || fail.TenantID != contoso.ID ||
			fail.ResourceName != "r1" || fail.Link != "/resources/item?resource_id="+url.QueryEscape(r1) {
			t.Errorf("r1 %+v", fail)
		}
		if !c.Passing[0].Exempt || c.Passing[1].Exempt {
			t.Errorf("passing %+v: r2 is exempt, r6 not", c.Passing)
		}
		if len(c.Policies) != 2 || c.Policies[0].PolicyDefinitionID != pMFA.id || c.Policies[0].Tier != 2 || c.Policies[0].NonCompliant != 1 ||
			c.Policies[0].Compliant != 2 || c.Policies[1].Tier != 1 || c.Policies[1].GroupName != "ACME_AC.1" {
			t.Errorf("policies %+v", c.Policies)
		}
		var d mapping.Detail
		f.get(t, "/api/v1/compliance/frameworks/acme", admin, &d)
		for _, cat := range d.Categories {
			for _, ctl := range cat.Controls {
				if ctl.ID == "AC.1" && (ctl.CompliantCount != 2 || ctl.NonCompliantCount != 1 || ctl.ExemptCount != 1 || ctl.Result != mapping.ResultFailed) {
					t.Errorf("detail's AC.1 %+v", ctl)
				}
			}
		}
		// limit bounds each list; the counts stay whole.
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/AC.1?limit=1", admin, &c)
		if len(c.Passing) != 1 || c.Passed != 2 {
			t.Errorf("limit 1: %d passing listed of %d", len(c.Passing), c.Passed)
		}
		// Contoso's user: r1 fails, r2 passes; Fabrikam's r6 is not there.
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/AC.1", contosoer, &c)
		if got := resourceIDs(c.Passing); !slices.Equal(got, []string{r2}) || c.Failed != 1 {
			t.Errorf("Contoso's passing %v, failed %d", got, c.Failed)
		}
		for target, want := range map[string]string{
			"/api/v1/compliance/frameworks/acme/controls/OP.1": mapping.ResultManual,
			"/api/v1/compliance/frameworks/acme/controls/DP.2": mapping.ResultNotApplicable,
			"/api/v1/compliance/frameworks/acme/controls/DP.1": mapping.ResultPassed,
		} {
			f.get(t, target, admin, &c)
			if c.Result != want || len(c.Failing) != 0 {
				t.Errorf("%s: %s, want %s", target, c.Result, want)
			}
		}
		for _, bad := range []struct {
			target   string
			p        sdk.Principal
			status   int
			location string
		}{
			{"/api/v1/compliance/frameworks/acme/controls/ZZ.9", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/frameworks/nope/controls/AC.1", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/frameworks/acme/controls/AC.1?limit=0", admin, http.StatusUnprocessableEntity, "query.limit"},
			{"/api/v1/compliance/frameworks/acme/controls/AC.1?tenant_ids=" + fabrikam.ID, contosoer, http.StatusForbidden, ""},
			{"/api/v1/compliance/findings?tenant_ids=" + fabrikam.ID, contosoer, http.StatusForbidden, ""},
			{"/api/v1/compliance/findings?control=AC.1", admin, http.StatusUnprocessableEntity, "query.control"},
			{"/api/v1/compliance/findings?state=failed", admin, http.StatusUnprocessableEntity, "query.state"},
			{"/api/v1/compliance/findings?sort_by=name", admin, http.StatusUnprocessableEntity, "query.sort_by"},
			{"/api/v1/compliance/findings?framework=acme&control=ZZ.9", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/findings?framework=nope", admin, http.StatusNotFound, ""},
		} {
			resp, body := f.do(t, bad.target, bad.p)
			var p sdk.Problem
			if resp.StatusCode != bad.status || json.Unmarshal(body, &p) != nil {
				t.Errorf("%s: %d %s, want %d", bad.target, resp.StatusCode, body, bad.status)
				continue
			}
			if bad.location != "" && (len(p.Errors) != 1 || p.Errors[0].Location != bad.location) {
				t.Errorf("%s: errors %+v, want one at %s", bad.target, p.Errors, bad.location)
			}
			if strings.Contains(string(body), "r6") {
				t.Errorf("%s: the refusal names Fabrikam's resource: %s", bad.target, body)
			}
		}
	})
}

func findingKeys(items []coverage.Finding) []string {
	var out []string
	for _, it := range items {
		out = append(out, path(it.ResourceID)+"|"+path(it.PolicyDefinitionID))
	}
	return out
}

func path(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// TestFindings: one finding per resource and policy, the worst state of
// its assignments winning; filtered, sorted and paged; a user sees only
// its tenants' findings.
func TestFindings(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, findingStates())
		var page coverage.Findings
		f.get(t, "/api/v1/compliance/findings?sort_by=resource&sort_order=asc&limit=100", admin, &page)
		want := []string{"r1|mfa", "r1|multi", "r1|tls", "r2|mfa", "r2|multi", "r2|tls", "r3|backup", "r6|mfa", "r6|patch", "r6|transit", "r7|patch"}
		if got := findingKeys(page.Items); page.Total != 11 || !slices.Equal(got, want) {
			t.Fatalf("findings %d %v, want 11 %v", page.Total, got, want)
		}
		r1mfa := page.Items[0]
		if r1mfa.ComplianceState != states.StateNonCompliant || !slices.Equal(r1mfa.Assignments, []string{"a1", "a4"}) ||
			r1mfa.TenantID != contoso.ID || r1mfa.SubscriptionID != "sub-"+contoso.ID || r1mfa.ResourceName != "r1" ||
			r1mfa.Link != coverage.ResourceLink(r1) || r1mfa.Severity != "Medium" || r1mfa.EvaluatedAt.IsZero() {
			t.Errorf("r1 under pMFA %+v", r1mfa)
		}
		if !slices.Contains(r1mfa.Controls, coverage.ControlRef{FrameworkID: "acme", ControlID: "AC.1"}) {
			t.Errorf("r1 under pMFA maps to %+v, want acme AC.1 among them", r1mfa.Controls)
		}
		if page.Items[4].ComplianceState != states.StateExempt || page.Items[6].ComplianceState != states.StateUnknown {
			t.Errorf("r2 under pMulti %s, r3 under pBackup %s", page.Items[4].ComplianceState, page.Items[6].ComplianceState)
		}
		for target, want := range map[string][]string{
			// Paged: the second and third by resource.
			"/api/v1/compliance/findings?sort_by=resource&sort_order=asc&limit=2&offset=1": {"r1|multi", "r1|tls"},
			"/api/v1/compliance/findings?sort_by=resource&sort_order=desc&limit=2":         {"r7|patch", "r6|mfa"},
			// Non-compliant first, then by tenant, resource and policy.
			"/api/v1/compliance/findings?sort_by=state&limit=4":                                         {"r1|mfa", "r6|patch", "r7|patch", "r3|backup"},
			"/api/v1/compliance/findings?state=non_compliant&sort_by=resource&sort_order=asc":           {"r1|mfa", "r6|patch", "r7|patch"},
			"/api/v1/compliance/findings?state=exempt":                                                  {"r2|multi"},
			"/api/v1/compliance/findings?framework=acme&control=AC.1&sort_by=resource&sort_order=asc":   {"r1|mfa", "r1|multi", "r2|mfa", "r2|multi", "r6|mfa"},
			"/api/v1/compliance/findings?policy=" + pPatch.id + "&sort_by=resource&sort_order=asc":      {"r6|patch", "r7|patch"},
			"/api/v1/compliance/findings?framework=acme&control=AC.1&policy=" + pPatch.id:               nil,
			"/api/v1/compliance/findings?severity=High":                                                 nil,
			"/api/v1/compliance/findings?resource_type=microsoft.storage/storageaccounts&state=unknown": {"r3|backup"},
		} {
			f.get(t, target, admin, &page)
			if got := findingKeys(page.Items); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", target, got, want)
			}
		}
		f.get(t, "/api/v1/compliance/findings?framework=acme&control=AC.1&limit=1", admin, &page)
		if page.Total != 5 || len(page.Items) != 1 || !slices.Equal(page.Items[0].Controls, []coverage.ControlRef{{FrameworkID: "acme", ControlID: "AC.1"}}) {
			t.Errorf("AC.1's findings: total %d, %+v", page.Total, page.Items)
		}
		// Each user sees its own tenant's findings only.
		f.get(t, "/api/v1/compliance/findings?limit=500", contosoer, &page)
		for _, it := range page.Items {
			if it.TenantID != contoso.ID {
				t.Errorf("Contoso's user sees %+v", it)
			}
		}
		if page.Total != 7 {
			t.Errorf("Contoso's user sees %d findings, want 7", page.Total)
		}
	})
}
