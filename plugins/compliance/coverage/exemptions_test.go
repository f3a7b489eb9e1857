package coverage_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
)

// withExemptions gives the fixture's service Steward's exemptions, on its
// database, at the time *now says.
func withExemptions(t *testing.T, f *fixture, now *time.Time) *exemptions.Store {
	t.Helper()
	db := f.svc.Store.DB
	if _, err := store.Migrate(context.Background(), db, exemptions.Migrations(), "compliance_exemption_migrations"); err != nil {
		t.Fatal(err)
	}
	ex := &exemptions.Store{DB: db}
	f.svc.Exemptions, f.svc.Now = ex, func() time.Time { return *now }
	return ex
}

func exempt(t *testing.T, ex *exemptions.Store, e exemptions.Exemption, now time.Time) {
	t.Helper()
	e.Reason, e.Owner, e.CreatedBy, e.CreatedAt, e.UpdatedAt = "accepted", "ops@contoso.example", "admin", now, now
	if err := ex.Create(context.Background(), &e, now); err != nil {
		t.Fatal(err)
	}
}

// acmeControl is an acme control's figures in the admin's framework detail.
func acmeControl(t *testing.T, f *fixture, id string) mapping.ControlCoverage {
	t.Helper()
	var d mapping.Detail
	f.get(t, "/api/v1/compliance/frameworks/acme", admin, &d)
	return control(t, &d, id)
}

// TestExemptions: Steward's active exemptions hide the findings they
// cover (total and page alike) unless include_exempted, which names them;
// the failing resources they cover pass as exempted in the framework
// detail and the control's resources, apart from Azure's Exempt; a
// control exemption covers only its control and only its tenant's
// resources; a policy exemption matches ids whatever their case, of its
// tenant only; and at expiry it all comes back with no other change,
// though the coverage was kept.
func TestExemptions(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, findingStates())
		now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
		ex := withExemptions(t, f, &now)

		// Kept before any exemption exists: a change must drop it.
		if c := acmeControl(t, f, "AC.1"); c.NonCompliantCount != 1 || c.ExemptedCount != 0 {
			t.Fatalf("AC.1 before %+v", c)
		}
		exempt(t, ex, exemptions.Exemption{TenantID: contoso.ID, Scope: exemptions.ScopeFinding, ResourceID: strings.ToLower(r1),
			PolicyDefinitionID: strings.ToLower(pMFA.id), ExpiresAt: now.Add(time.Hour)}, now)
		exempt(t, ex, exemptions.Exemption{TenantID: fabrikam.ID, Scope: exemptions.ScopeControl, FrameworkID: "acme", ControlID: "OP.2",
			ExpiresAt: now.Add(2 * time.Hour)}, now)

		c := acmeControl(t, f, "AC.1")
		if c.Result != mapping.ResultPassed || c.CompliantCount != 3 || c.NonCompliantCount != 0 || c.ExemptCount != 1 || c.ExemptedCount != 1 {
			t.Errorf("AC.1 with r1 exempted under pMFA %+v, want passed 3/0, Azure's exempt 1, exempted 1", c)
		}
		if c := acmeControl(t, f, "OP.2"); c.Result != mapping.ResultPassed || c.CompliantCount != 2 || c.ExemptedCount != 2 {
			t.Errorf("OP.2 exempted as a control %+v, want r6 and r7 passing as exempted", c)
		}
		var cr coverage.Control
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/AC.1", admin, &cr)
		if cr.Failed != 0 || cr.Passed != 3 || cr.Exempted != 1 || cr.Exempt != 1 || cr.Result != mapping.ResultPassed {
			t.Errorf("AC.1's resources %+v", cr)
		}
		for _, r := range cr.Passing {
			if exempted := r.ResourceID == r1; r.Exempted != exempted || (r.StewardExemption != nil) != exempted {
				t.Errorf("passing %s: exempted %v, exemption %+v", r.ResourceID, r.Exempted, r.StewardExemption)
			}
			if r.ResourceID == r1 && (r.StewardExemption.Reason != "accepted" || r.Policies[0].ComplianceState != "NonCompliant") {
				t.Errorf("r1 %+v: Azure's state stays NonCompliant, the exemption is named", r)
			}
		}
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/OP.2", admin, &cr)
		if cr.Failed != 0 || cr.Exempted != 2 {
			t.Errorf("OP.2's resources %+v", cr)
		}

		var page coverage.Findings
		f.get(t, "/api/v1/compliance/findings?sort_by=resource&sort_order=asc&limit=2&offset=1", admin, &page)
		if got := findingKeys(page.Items); page.Total != 8 || !slices.Equal(got, []string{"r1|tls", "r2|mfa"}) {
			t.Errorf("findings with r1|mfa and OP.2's r6|patch, r7|patch hidden: %d %v", page.Total, got)
		}
		f.get(t, "/api/v1/compliance/findings?state=non_compliant", admin, &page)
		if page.Total != 0 {
			t.Errorf("non-compliant findings left: %v", findingKeys(page.Items))
		}
		f.get(t, "/api/v1/compliance/findings?include_exempted=true&sort_by=resource&sort_order=asc", admin, &page)
		if page.Total != 11 {
			t.Errorf("include_exempted lists %d, want 11", page.Total)
		}
		for _, it := range page.Items {
			key := findingKeys([]coverage.Finding{it})[0]
			if want := key == "r1|mfa" || key == "r6|patch" || key == "r7|patch"; (it.StewardExemption != nil) != want {
				t.Errorf("%s: steward_exemption %+v", key, it.StewardExemption)
			}
		}

		// A policy exemption, its id in another case, is its tenant's
		// only: Fabrikam's r6 under pMFA stays.
		exempt(t, ex, exemptions.Exemption{TenantID: contoso.ID, Scope: exemptions.ScopePolicy, PolicyDefinitionID: strings.ToLower(strings.ToUpper(pMFA.id)),
			ExpiresAt: now.Add(3 * time.Hour)}, now)
		f.get(t, "/api/v1/compliance/findings?policy="+pMFA.id, admin, &page)
		if got := findingKeys(page.Items); !slices.Equal(got, []string{"r6|mfa"}) {
			t.Errorf("pMFA's findings with Contoso's policy exemption: %v", got)
		}
		// Contoso's user counts its own tenant only.
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/AC.1", contosoer, &cr)
		if cr.Failed != 0 || cr.Exempted != 1 || len(cr.Passing) != 2 {
			t.Errorf("AC.1 for Contoso's user %+v", cr)
		}

		// The finding exemption lapses: r1 fails again, with no other
		// change; the control and policy exemptions still hold.
		now = now.Add(time.Hour)
		if c := acmeControl(t, f, "AC.1"); c.NonCompliantCount != 0 || c.ExemptedCount != 1 {
			t.Errorf("AC.1 with the policy exemption still active %+v", c)
		}
		now = now.Add(2 * time.Hour)
		if c := acmeControl(t, f, "AC.1"); c.Result != mapping.ResultFailed || c.NonCompliantCount != 1 || c.ExemptedCount != 0 {
			t.Errorf("AC.1 after every exemption lapsed %+v", c)
		}
		if c := acmeControl(t, f, "OP.2"); c.NonCompliantCount != 2 || c.ExemptedCount != 0 {
			t.Errorf("OP.2 after its exemption lapsed %+v", c)
		}
		f.get(t, "/api/v1/compliance/findings", admin, &page)
		if page.Total != 11 {
			t.Errorf("findings after every exemption lapsed: %d, want 11", page.Total)
		}
	})
}
