package directory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/sdk"
)

func postureOf(t *testing.T, list []directory.AccessPosture, tenant string) directory.AccessPosture {
	t.Helper()
	for _, p := range list {
		if p.TenantID == tenant {
			return p
		}
	}
	t.Fatalf("no posture of %s in %+v", tenant, list)
	return directory.AccessPosture{}
}

// TestConditionalAccess: against the known world, Contoso's MFA for all
// users and for admins are enforced by its enabled MFA policy (the
// admins' own policy offers a compliant device instead of MFA, so it
// carries nothing), its legacy authentication block is report-only and
// not enforced; Fabrikam has no policy, and security defaults enforce all
// three. The dataset carries the same; a contoso user is shown Contoso
// only and refused Fabrikam.
func TestConditionalAccess(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		var list []directory.AccessPosture
		f.get(t, "/api/v1/identity/conditional-access", admin, &list)
		if len(list) != 0 {
			t.Fatalf("before any sync: %+v", list)
		}
		f.mustRun(t)
		f.get(t, "/api/v1/identity/conditional-access", admin, &list)
		if len(list) != 2 {
			t.Fatalf("postures %+v", list)
		}
		c := postureOf(t, list, contoso.ID)
		if c.TenantName != "Contoso" || c.SecurityDefaults ||
			c.MFAAllUsers.State != "enabled" || !c.MFAAllUsers.Enforced || !slices.Equal(c.MFAAllUsers.Policies, []string{"MFA for everyone"}) ||
			c.MFAAdmins.State != "enabled" || !c.MFAAdmins.Enforced || !slices.Equal(c.MFAAdmins.Policies, []string{"MFA for everyone"}) ||
			c.LegacyAuthBlocked.State != "enabledForReportingButNotEnforced" || c.LegacyAuthBlocked.Enforced ||
			!slices.Equal(c.LegacyAuthBlocked.Policies, []string{"Block legacy authentication"}) {
			t.Fatalf("contoso's posture %+v", c)
		}
		got := names(c.Policies, func(p directory.PolicyItem) string { return p.Name })
		if want := []string{"Admins: MFA or a compliant device", "Block legacy authentication", "MFA for everyone"}; !slices.Equal(got, want) {
			t.Fatalf("contoso's policies %v, want %v by name", got, want)
		}
		admins, mfa := c.Policies[0], c.Policies[2]
		if admins.MFAAdmins || admins.MFAAllUsers || admins.GrantOperator != "OR" || !slices.Equal(admins.GrantControls, []string{"mfa", "compliantDevice"}) ||
			!slices.Equal(admins.IncludeRoles, []string{"62e90394-69f5-4237-9190-012177145e10"}) || len(admins.IncludeUsers) != 0 {
			t.Fatalf("the admins' policy %+v", admins)
		}
		if !mfa.MFAAllUsers || !mfa.MFAAdmins || mfa.BlocksLegacyAuth || mfa.Exclusions != 1 || !slices.Equal(mfa.IncludeUsers, []string{"All"}) ||
			!slices.Equal(mfa.ClientAppTypes, []string{"all"}) || mfa.State != "enabled" {
			t.Fatalf("the MFA policy %+v", mfa)
		}
		fb := postureOf(t, list, fabrikam.ID)
		if !fb.SecurityDefaults || len(fb.Policies) != 0 {
			t.Fatalf("fabrikam's posture %+v", fb)
		}
		for _, ctl := range []directory.ControlItem{fb.MFAAllUsers, fb.MFAAdmins, fb.LegacyAuthBlocked} {
			if ctl.State != "none" || !ctl.Enforced || len(ctl.Policies) != 0 {
				t.Fatalf("fabrikam's control %+v, want no policy, enforced by security defaults", ctl)
			}
		}

		raw, err := f.harness.ReadDataset(context.Background(), directory.DatasetName, []string{contoso.ID, fabrikam.ID}, nil)
		if err != nil || len(raw) != 2 {
			t.Fatalf("dataset %d records (%v)", len(raw), err)
		}
		var rc, rf directory.MFARecord
		if json.Unmarshal(raw[0], &rc) != nil || json.Unmarshal(raw[1], &rf) != nil {
			t.Fatalf("records %s", raw)
		}
		if *rc.SecurityDefaults || *rc.CAMFAAllUsers != "enabled" || *rc.CAMFAAdmins != "enabled" || *rc.CALegacyAuthBlocked != "enabledForReportingButNotEnforced" ||
			!*rc.MFAEnforcedAll || !*rc.MFAEnforcedAdmins || *rc.LegacyAuthBlocked {
			t.Fatalf("contoso's record %s", raw[0])
		}
		if !*rf.SecurityDefaults || *rf.CAMFAAllUsers != "none" || !*rf.MFAEnforcedAll || !*rf.MFAEnforcedAdmins || !*rf.LegacyAuthBlocked {
			t.Fatalf("fabrikam's record %s", raw[1])
		}

		f.get(t, "/api/v1/identity/conditional-access", contosoer, &list)
		if len(list) != 1 || list[0].TenantID != contoso.ID {
			t.Fatalf("contoso user's postures %+v", list)
		}
		if code, body := f.do(t, "/api/v1/identity/conditional-access?tenant_ids="+fabrikam.ID, contosoer); code != http.StatusForbidden {
			t.Fatalf("fabrikam's posture to a contoso user: %d %s", code, body)
		}
	})
}

// TestConditionalAccessFailureKeepsPrevious: a tenant whose policies
// Graph refuses fails its sync, naming the listing, and keeps the posture
// and policies of its previous sync; the other tenant is stored.
func TestConditionalAccessFailureKeepsPrevious(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		marks := len(f.harness.FreshMarks())
		f.nextDay(t)
		w := identityWorld()
		w.ConditionalAccessPolicies = w.ConditionalAccessPolicies[:1]
		f.sim.SetWorld(w)
		f.sim.Faults.Set(cloudsim.Graph, "/v1.0/policies/identitySecurityDefaultsEnforcementPolicy", cloudsim.Fault{Status: http.StatusForbidden, Times: 1})
		if _, _, err := f.harness.RunJob(context.Background(), "identity"); err == nil {
			t.Fatal("a refused security defaults policy did not fail the run")
		}
		// Contoso is synced first and meets the refusal.
		failed := f.failedTenants(marks)
		if len(failed) != 1 || !strings.Contains(failed[contoso.ID], "security defaults") {
			t.Fatalf("failed tenants %v, want contoso's refused security defaults", failed)
		}
		if fresh := f.freshTenants(marks); !slices.Equal(fresh, []string{fabrikam.ID}) {
			t.Fatalf("fresh tenants %v", fresh)
		}
		var list []directory.AccessPosture
		f.get(t, "/api/v1/identity/conditional-access", admin, &list)
		if c := postureOf(t, list, contoso.ID); len(c.Policies) != 3 || c.LegacyAuthBlocked.State != "enabledForReportingButNotEnforced" {
			t.Fatalf("contoso's posture after its failed sync %+v, want the previous one", c)
		}
		f.mustRun(t)
		f.get(t, "/api/v1/identity/conditional-access", admin, &list)
		if c := postureOf(t, list, contoso.ID); len(c.Policies) != 1 || c.LegacyAuthBlocked.State != "none" || c.LegacyAuthBlocked.Enforced {
			t.Fatalf("contoso's posture after the next sync %+v, want its one policy left", c)
		}
	})
}

// TestGlobalAdmins: Contoso's five Global Administrators — three holding
// the role, bea eligible, and eve eligible through grp-ops, whose other
// member ada holds it already and counts once — are too many; Fabrikam's
// one is too few. The dataset and the page say the same; a contoso user
// is refused Fabrikam's.
func TestGlobalAdmins(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		var list []directory.GlobalAdminsItem
		f.get(t, "/api/v1/identity/global-admins", admin, &list)
		if len(list) != 2 || list[0].TenantID != contoso.ID || list[1].TenantID != fabrikam.ID {
			t.Fatalf("global admins %+v", list)
		}
		c, fb := list[0], list[1]
		if c.TenantName != "Contoso" || c.GlobalAdmins != 5 || c.Active != 3 || c.EligibleOnly != 2 || c.Status != "too_many" {
			t.Fatalf("contoso's count %+v", c)
		}
		got := map[string]string{}
		for _, a := range c.Admins {
			got[a.DisplayName] = fmt.Sprintf("%s active=%v eligible=%v via=%v", a.PrincipalType, a.Active, a.Eligible, a.ViaGroups)
		}
		want := map[string]string{
			"Ada Admin":  "user active=true eligible=true via=[grp-ops]",
			"Rory Root":  "user active=true eligible=false via=[]",
			"Dee Gone":   "user active=true eligible=false via=[]",
			"Bea Old":    "user active=false eligible=true via=[]",
			"Eve Member": "user active=false eligible=true via=[grp-ops]",
		}
		if !maps.Equal(got, want) {
			t.Fatalf("contoso's admins %v, want %v", got, want)
		}
		if fb.GlobalAdmins != 1 || fb.Active != 1 || fb.EligibleOnly != 0 || fb.Status != "too_few" || len(fb.Admins) != 1 || fb.Admins[0].UserPrincipalName != "fay@fabrikam.example" {
			t.Fatalf("fabrikam's count %+v", fb)
		}

		raw, err := f.harness.ReadDataset(context.Background(), directory.DatasetName, []string{contoso.ID, fabrikam.ID}, nil)
		if err != nil || len(raw) != 2 {
			t.Fatalf("dataset %d records (%v)", len(raw), err)
		}
		var rc, rf directory.MFARecord
		if json.Unmarshal(raw[0], &rc) != nil || json.Unmarshal(raw[1], &rf) != nil || *rc.GlobalAdmins != 5 || *rc.GlobalAdminsStatus != "too_many" ||
			*rf.GlobalAdmins != 1 || *rf.GlobalAdminsStatus != "too_few" {
			t.Fatalf("records %s", raw)
		}

		code, body := f.do(t, directory.PagePath, contosoer)
		section := string(body)
		if _, rest, ok := strings.Cut(section, "Global Administrators of each tenant"); ok {
			section = rest
		}
		if code != http.StatusOK || !strings.Contains(section, ">More than 4<") || !strings.Contains(section, "through grp-ops") ||
			!strings.Contains(section, "Eve Member") || strings.Contains(section, "Fay") {
			t.Fatalf("contoso's page: %d %s", code, section)
		}
		f.get(t, "/api/v1/identity/global-admins", contosoer, &list)
		if len(list) != 1 || list[0].TenantID != contoso.ID {
			t.Fatalf("contoso user's counts %+v", list)
		}
		if code, body := f.do(t, "/api/v1/identity/global-admins?tenant_ids="+fabrikam.ID, contosoer); code != http.StatusForbidden {
			t.Fatalf("fabrikam's count to a contoso user: %d %s", code, body)
		}
	})
}

// TestGlobalAdminsGroupFailure: a group holding the role whose members
// Graph refuses fails the tenant's sync, naming the group.
func TestGlobalAdminsGroupFailure(t *testing.T) {
	f := start(t, "sqlite", identityWorld(), nil)
	f.sim.Faults.Set(cloudsim.Graph, "/v1.0/groups/", cloudsim.Fault{Status: http.StatusForbidden})
	if _, _, err := f.harness.RunJob(context.Background(), "identity"); err == nil || !strings.Contains(err.Error(), "group grp-ops holding Global Administrator") {
		t.Fatalf("a refused group: %v", err)
	}
	if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{fabrikam.ID}) {
		t.Fatalf("fresh tenants %v", fresh)
	}
}

// TestRiskyUsers: the users Identity Protection judged, each tenant's, at
// risk or not, highest risk first, filtered by risk, level and state; the
// snapshot counts those at risk and the dataset carries the counts; the
// page lists Contoso's one user at risk; a contoso user sees Contoso's
// only.
func TestRiskyUsers(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		var list directory.RiskyUserList
		f.get(t, "/api/v1/identity/risky-users", admin, &list)
		got := names(list.Items, func(u directory.RiskyUserItem) string {
			return fmt.Sprintf("%s %s/%s %v", u.DisplayName, u.RiskLevel, u.RiskState, u.AtRisk)
		})
		if want := []string{"Rory Root high/atRisk true", "Hal Nomfa medium/confirmedCompromised true", "Eve Member low/dismissed false"}; !slices.Equal(got, want) || list.Total != 3 {
			t.Fatalf("risky users %v (%d), want %v", got, list.Total, want)
		}
		rory := list.Items[0]
		if rory.TenantID != contoso.ID || rory.UserPrincipalName != "rory@contoso.example" || rory.RiskDetail != "none" ||
			rory.RiskUpdatedAt == nil || !rory.RiskUpdatedAt.Equal(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)) {
			t.Fatalf("rory %+v", rory)
		}
		for target, want := range map[string][]string{
			"/api/v1/identity/risky-users?at_risk=true&sort_order=desc":                              {"Hal Nomfa", "Rory Root"},
			"/api/v1/identity/risky-users?risk_level=low":                                            {"Eve Member"},
			"/api/v1/identity/risky-users?risk_state=confirmedCompromised&tenant_ids=" + fabrikam.ID: {"Hal Nomfa"},
			"/api/v1/identity/risky-users?sort_by=display_name&limit=1&offset=1":                     {"Hal Nomfa"},
		} {
			f.get(t, target, admin, &list)
			if got := names(list.Items, func(u directory.RiskyUserItem) string { return u.DisplayName }); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", target, got, want)
			}
		}
		raw, err := f.harness.ReadDataset(context.Background(), directory.DatasetName, []string{contoso.ID, fabrikam.ID}, nil)
		var rc, rf directory.MFARecord
		if err != nil || len(raw) != 2 || json.Unmarshal(raw[0], &rc) != nil || json.Unmarshal(raw[1], &rf) != nil ||
			*rc.RiskyUsers != 1 || *rc.HighRiskUsers != 1 || *rf.RiskyUsers != 1 || *rf.HighRiskUsers != 0 {
			t.Fatalf("records %s (%v)", raw, err)
		}
		code, body := f.do(t, directory.PagePath, contosoer)
		if _, section, ok := strings.Cut(string(body), "Users at risk, highest risk first"); code != http.StatusOK || !ok ||
			!strings.Contains(section, "Rory Root") || strings.Contains(section, "Eve Member") || strings.Contains(section, "Hal") {
			t.Fatalf("contoso's page: %d %s", code, body)
		}
		f.get(t, "/api/v1/identity/risky-users", contosoer, &list)
		if got := names(list.Items, func(u directory.RiskyUserItem) string { return u.DisplayName }); !slices.Equal(got, []string{"Rory Root", "Eve Member"}) {
			t.Fatalf("contoso user's risky users %v", got)
		}
	})
}

// TestAppCredentials: the credentials ended or ending within the window,
// soonest first, with the days left rounded up; the window and the type
// narrow them; the snapshot counts those ended and those ending within 30
// days of the sync, and the page lists them; a contoso user sees
// Contoso's only.
func TestAppCredentials(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		var list directory.CredentialList
		show := func(target string, p sdk.Principal) string {
			t.Helper()
			f.get(t, target, p, &list)
			out := fmt.Sprint(list.Total)
			for _, c := range list.Items {
				out += fmt.Sprintf(" | %s %s %s/%s %d %s", c.AppName, c.ObjectKind, c.CredentialType, c.CredentialName, c.DaysLeft, c.Status)
			}
			return out
		}
		for target, want := range map[string]string{
			"/api/v1/identity/app-credentials": "3 | Vendor CRM servicePrincipal password/sso -44 expired | Payroll application password/ci 5 expiring" +
				" | Ledger application password/prod 26 expiring",
			"/api/v1/identity/app-credentials?within_days=0":                               "1 | Vendor CRM servicePrincipal password/sso -44 expired",
			"/api/v1/identity/app-credentials?within_days=365&credential_type=certificate": "1 | Payroll application certificate/CN=payroll.contoso.example 168 expiring",
			"/api/v1/identity/app-credentials?sort_by=app_name&limit=1&offset=1":           "3 | Payroll application password/ci 5 expiring",
		} {
			if got := show(target, admin); got != want {
				t.Errorf("%s:\n%s\nwant\n%s", target, got, want)
			}
		}
		f.get(t, "/api/v1/identity/app-credentials?within_days=0", admin, &list)
		if c := list.Items[0]; c.TenantID != contoso.ID || c.AppID == "" || c.ObjectID == "" || c.KeyID == "" || c.StartsAt == nil ||
			!c.EndsAt.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("the ended secret %+v", c)
		}
		if got := show("/api/v1/identity/app-credentials", contosoer); got != "2 | Vendor CRM servicePrincipal password/sso -44 expired | Payroll application password/ci 5 expiring" {
			t.Errorf("contoso user's credentials %s", got)
		}
		raw, err := f.harness.ReadDataset(context.Background(), directory.DatasetName, []string{contoso.ID, fabrikam.ID}, nil)
		var rc, rf directory.MFARecord
		if err != nil || len(raw) != 2 || json.Unmarshal(raw[0], &rc) != nil || json.Unmarshal(raw[1], &rf) != nil ||
			*rc.ExpiredCredentials != 1 || *rc.ExpiringCredentials != 1 || *rf.ExpiredCredentials != 0 || *rf.ExpiringCredentials != 1 {
			t.Fatalf("records %s (%v)", raw, err)
		}
		code, body := f.do(t, directory.PagePath, contosoer)
		if _, section, ok := strings.Cut(string(body), "Client secrets and certificates ended or ending within 30 days"); code != http.StatusOK || !ok ||
			!strings.Contains(section, "Vendor CRM") || !strings.Contains(section, "ended 44 days ago") || !strings.Contains(section, "in 5 days") ||
			strings.Contains(section, "Ledger") || strings.Contains(section, "payroll.contoso.example") {
			t.Fatalf("contoso's page: %d %s", code, body)
		}
	})
}
