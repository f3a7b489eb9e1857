package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// accessWorld: Brand A requires MFA of everyone but its break-glass
// account (enabled), of its Global Administrators (report-only), and
// blocks legacy authentication in a disabled policy; Brand B has no
// policy and enforces security defaults. Brand A has three Global
// Administrators: Ada and the break-glass account hold the role, and the
// group grp-a-ops of the break-glass account and Cy is eligible for it;
// Brand B has none. Identity Protection has Cy at high risk and Brand B's
// Bob at a low risk it dismissed. Brand A's payroll application has a
// secret ending in 10 days (at midnight, so with 10 days left rounded up)
// and a certificate in 200; Brand B's gateway's secret ended 3 days ago.
func accessWorld(t *testing.T) string {
	on := true
	today := time.Now().UTC().Format(time.DateOnly)
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}},
				AccessGroups: []string{"grp-a"}, Delegated: true, Domains: []string{"brand-a.example"}},
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}},
				AccessGroups: []string{"grp-b"}, Domains: []string{"brand-b.example"}, SecurityDefaults: true},
		},
		Users: []world.User{
			{Email: "ada@brand-a.example", Name: "Ada A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on, IsPrivileged: true,
				MFARegistered: true, MFAMethods: []string{"fido2"}, LastSignIn: today},
			{Email: "glass@brand-a.example", Name: "Break Glass", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on, IsPrivileged: true,
				Groups: []string{"grp-a-ops"}},
			{Email: "cy@brand-a.example", Name: "Cy A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on, LastSignIn: today,
				Groups: []string{"grp-a", "grp-a-ops"}, RiskLevel: "high", RiskState: "atRisk"},
			{Email: "bob@brand-b.example", Name: "Bob B", DirectoryTenantID: identityDirB, UserType: "Member", AccountEnabled: &on, LastSignIn: today,
				RiskLevel: "low", RiskState: "dismissed"},
		},
		RoleAssignments: []world.RoleAssignment{{DirectoryTenantID: identityDirA, Principal: "group:grp-a-ops", Kind: "eligible"}},
		// Brand A's review approves Break Glass, a role holder without MFA:
		// the one finding. Ada has MFA, Cy is denied, Bob holds no role.
		// Brand B's review is still in progress ten days after its end:
		// overdue.
		AccessReviews: []world.AccessReview{
			{DirectoryTenantID: identityDirA, ID: "a1000000-0000-4000-8000-000000000001", Name: "A admins, quarterly", Status: "Completed",
				Decisions: []world.Decision{{User: "glass@brand-a.example", Decision: "Approve"}, {User: "ada@brand-a.example", Decision: "Approve"},
					{User: "cy@brand-a.example", Decision: "Deny"}}},
			{DirectoryTenantID: identityDirB, ID: "b1000000-0000-4000-8000-000000000001", Name: "B users", Status: "InProgress",
				EndDate:   time.Now().UTC().AddDate(0, 0, -10).Format(time.DateOnly),
				Decisions: []world.Decision{{User: "bob@brand-b.example", Decision: "Approve"}}},
		},
		Applications: []world.Application{
			{DirectoryTenantID: identityDirA, Name: "A payroll", Credentials: []world.AppCredential{
				{Type: "password", Name: "ci", EndDate: time.Now().UTC().AddDate(0, 0, 10).Format(time.DateOnly)},
				{Type: "certificate", Name: "payroll.brand-a.example", EndDate: time.Now().UTC().AddDate(0, 0, 200).Format(time.DateOnly)}}},
			{DirectoryTenantID: identityDirB, Name: "B gateway", ServicePrincipal: true, Credentials: []world.AppCredential{
				{Type: "password", Name: "sso", EndDate: time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly)}}},
		},
		ConditionalAccessPolicies: []world.ConditionalAccessPolicy{
			{DirectoryTenantID: identityDirA, ID: "a0000000-0000-4000-8000-000000000001", Name: "A: MFA for everyone", State: "enabled",
				IncludeUsers: []string{"All"}, ExcludeUsers: []string{"glass@brand-a.example"}, GrantControls: []string{"mfa"}},
			{DirectoryTenantID: identityDirA, ID: "a0000000-0000-4000-8000-000000000002", Name: "A: MFA for admins", State: "enabledForReportingButNotEnforced",
				IncludeRoles: []string{"62e90394-69f5-4237-9190-012177145e10"}, GrantControls: []string{"mfa"}},
			{DirectoryTenantID: identityDirA, ID: "a0000000-0000-4000-8000-000000000003", Name: "A: block legacy authentication", State: "disabled",
				IncludeUsers: []string{"All"}, ClientAppTypes: []string{"exchangeActiveSync", "other"}, GrantControls: []string{"block"}},
		},
	})
}

type accessControl struct {
	State    string   `json:"state"`
	Enforced bool     `json:"enforced"`
	Policies []string `json:"policies"`
}

type accessPosture struct {
	TenantID          string        `json:"tenant_id"`
	TenantName        string        `json:"tenant_name"`
	SecurityDefaults  bool          `json:"security_defaults_enabled"`
	MFAAllUsers       accessControl `json:"mfa_all_users"`
	MFAAdmins         accessControl `json:"mfa_admins"`
	LegacyAuthBlocked accessControl `json:"legacy_auth_blocked"`
	Policies          []struct {
		Name       string   `json:"name"`
		State      string   `json:"state"`
		Exclusions int      `json:"exclusions"`
		Controls   []string `json:"grant_controls"`
	} `json:"policies"`
}

// TestIdentityPostureThroughTheHost: the world's Conditional Access
// policies, security defaults, Global Administrators, risky users and
// applications' credentials reach their routes and the identity page through Graph, the sync and
// the plugin's tables, on both databases, each figure exact; a standard
// user of Brand A sees Brand A's alone and is refused Brand B's. A
// compliance rule on identity_mfa finds Brand A's access review finding
// and Brand B's overdue review.
func TestIdentityPostureThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testIdentityPosture(t, dialect) })
	}
}

func testIdentityPosture(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: identityPlugins("") + compliancePlugins(""), env: map[string]string{"STEWARD_SIM_WORLD": accessWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "identity")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "identity")); r.Status != "completed" {
		t.Fatalf("identity sync %+v", r)
	}
	for table, want := range map[string]int64{"identity_ca_policies": 3, "identity_global_admins": 3, "identity_risky_users": 2, "identity_app_credentials": 3} {
		if n, err := h.pluginDB("identity").NewSelect().Table(table).Count(context.Background()); err != nil || n != want {
			t.Fatalf("the plugin's %s on %s holds %d rows (%v), want %d", table, dialect, n, err, want)
		}
	}

	var list []accessPosture
	h.get("/api/v1/identity/conditional-access", admin).json(t, &list)
	byName := map[string]accessPosture{}
	for _, p := range list {
		byName[p.TenantName] = p
	}
	a, b := byName["Brand A"], byName["Brand B"]
	// Names sort as each database collates them: compare them as sets.
	sorted := func(names []string) []string { return slices.Sorted(slices.Values(names)) }
	if len(list) != 2 || a.SecurityDefaults ||
		a.MFAAllUsers.State != "enabled" || !a.MFAAllUsers.Enforced || !slices.Equal(a.MFAAllUsers.Policies, []string{"A: MFA for everyone"}) ||
		a.MFAAdmins.State != "enabled" || !a.MFAAdmins.Enforced || !slices.Equal(sorted(a.MFAAdmins.Policies), []string{"A: MFA for admins", "A: MFA for everyone"}) ||
		a.LegacyAuthBlocked.State != "disabled" || a.LegacyAuthBlocked.Enforced || !slices.Equal(a.LegacyAuthBlocked.Policies, []string{"A: block legacy authentication"}) {
		t.Fatalf("brand A's posture %+v", a)
	}
	policies := map[string]string{}
	for _, p := range a.Policies {
		policies[p.Name] = fmt.Sprintf("%s %v %d", p.State, p.Controls, p.Exclusions)
	}
	if want := map[string]string{"A: MFA for everyone": "enabled [mfa] 1", "A: MFA for admins": "enabledForReportingButNotEnforced [mfa] 0",
		"A: block legacy authentication": "disabled [block] 0"}; !maps.Equal(policies, want) {
		t.Fatalf("brand A's policies %v, want %v", policies, want)
	}
	if !b.SecurityDefaults || len(b.Policies) != 0 || b.MFAAllUsers.State != "none" || !b.MFAAllUsers.Enforced || b.MFAAdmins.State != "none" ||
		!b.MFAAdmins.Enforced || b.LegacyAuthBlocked.State != "none" || !b.LegacyAuthBlocked.Enforced {
		t.Fatalf("brand B's posture %+v", b)
	}
	expectInvalid(t, h.get("/api/v1/identity/conditional-access?tenant_ids="+strings.Repeat("t", 65), admin), "query.tenant_ids[0]")

	// A standard user of Brand A: Brand A's posture, on the API and the
	// page, and a 403 for Brand B's.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/identity/conditional-access", tokA).json(t, &list)
	if len(list) != 1 || list[0].TenantID != a.TenantID {
		t.Fatalf("brand A's user sees the postures %+v", list)
	}
	if r := h.get("/api/v1/identity/conditional-access?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("brand B's posture for brand A's user: %d %s", r.status, r.body)
	}
	r := h.do(http.MethodGet, "/identity", tokA, nil, "HX-Request", "true")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "A: MFA for everyone") || !strings.Contains(string(r.body), "through grp-a-ops") ||
		strings.Contains(string(r.body), "Brand B") {
		t.Errorf("identity page for brand A's user: %d %s", r.status, r.body)
	}

	var admins []struct {
		TenantID     string `json:"tenant_id"`
		TenantName   string `json:"tenant_name"`
		GlobalAdmins int    `json:"global_admins"`
		Active       int    `json:"active"`
		EligibleOnly int    `json:"eligible_only"`
		Status       string `json:"status"`
		Admins       []struct {
			Name      string   `json:"display_name"`
			Active    bool     `json:"active"`
			Eligible  bool     `json:"eligible"`
			ViaGroups []string `json:"via_groups"`
		} `json:"admins"`
	}
	h.get("/api/v1/identity/global-admins", admin).json(t, &admins)
	got := map[string]string{}
	for _, ta := range admins {
		got[ta.TenantName] = fmt.Sprintf("%d %d/%d %s", ta.GlobalAdmins, ta.Active, ta.EligibleOnly, ta.Status)
		for _, ad := range ta.Admins {
			got[ad.Name] = fmt.Sprintf("%v %v %v", ad.Active, ad.Eligible, ad.ViaGroups)
		}
	}
	if want := map[string]string{"Brand A": "3 2/1 ok", "Brand B": "0 0/0 too_few", "Ada A": "true false []", "Break Glass": "true true [grp-a-ops]",
		"Cy A": "false true [grp-a-ops]"}; !maps.Equal(got, want) {
		t.Fatalf("global admins %v, want %v", got, want)
	}
	h.get("/api/v1/identity/global-admins", tokA).json(t, &admins)
	if len(admins) != 1 || admins[0].TenantID != a.TenantID {
		t.Fatalf("brand A's user sees the global admins %+v", admins)
	}
	if r := h.get("/api/v1/identity/global-admins?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("brand B's global admins for brand A's user: %d %s", r.status, r.body)
	}
	expectInvalid(t, h.get("/api/v1/identity/global-admins?tenant_ids="+strings.Repeat("t", 65), admin), "query.tenant_ids[0]")

	var risky struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
			Name     string `json:"display_name"`
			Level    string `json:"risk_level"`
			State    string `json:"risk_state"`
			AtRisk   bool   `json:"at_risk"`
		} `json:"items"`
		Total int `json:"total"`
	}
	riskyOf := func(path, token string) string {
		t.Helper()
		h.get(path, token).json(t, &risky)
		out := fmt.Sprint(risky.Total)
		for _, it := range risky.Items {
			out += fmt.Sprintf(" %s %s/%s %v", it.Name, it.Level, it.State, it.AtRisk)
		}
		return out
	}
	if got := riskyOf("/api/v1/identity/risky-users", admin); got != "2 Cy A high/atRisk true Bob B low/dismissed false" {
		t.Errorf("risky users %q", got)
	}
	if got := riskyOf("/api/v1/identity/risky-users?at_risk=true", admin); got != "1 Cy A high/atRisk true" {
		t.Errorf("users at risk %q", got)
	}
	if got := riskyOf("/api/v1/identity/risky-users", tokA); got != "1 Cy A high/atRisk true" {
		t.Errorf("risky users for brand A's user %q", got)
	}
	if r := h.get("/api/v1/identity/risky-users?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Bob") {
		t.Errorf("brand B's risky users for brand A's user: %d %s", r.status, r.body)
	}
	expectInvalid(t, h.get("/api/v1/identity/risky-users?risk_level=severe", admin), "query.risk_level")

	var approvals struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
			Review   string `json:"review_name"`
			Finding  string `json:"finding"`
			Name     string `json:"display_name"`
			UPN      string `json:"user_principal_name"`
			Enabled  bool   `json:"account_enabled"`
		} `json:"items"`
		Total int `json:"total"`
	}
	for _, token := range []string{admin, tokA} {
		h.get("/api/v1/identity/access-review-findings", token).json(t, &approvals)
		if approvals.Total != 1 || len(approvals.Items) != 1 || approvals.Items[0].TenantID != a.TenantID || approvals.Items[0].Review != "A admins, quarterly" ||
			approvals.Items[0].Finding != "approved_privileged_without_mfa" || approvals.Items[0].UPN != "glass@brand-a.example" || !approvals.Items[0].Enabled {
			t.Errorf("access review findings: %+v", approvals)
		}
	}
	h.get("/api/v1/identity/access-review-findings?tenant_ids="+b.TenantID, admin).json(t, &approvals)
	if approvals.Total != 0 || len(approvals.Items) != 0 {
		t.Errorf("brand B's access review findings: %+v", approvals)
	}
	if r := h.get("/api/v1/identity/access-review-findings?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden {
		t.Errorf("brand B's access review findings for brand A's user: %d %s", r.status, r.body)
	}
	expectInvalid(t, h.get("/api/v1/identity/access-review-findings?sort_by=risk", admin), "query.sort_by")

	var reviews struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
			Name     string `json:"name"`
			Overdue  bool   `json:"overdue"`
		} `json:"items"`
		Total int `json:"total"`
	}
	h.get("/api/v1/identity/access-reviews?overdue=true", admin).json(t, &reviews)
	if reviews.Total != 1 || len(reviews.Items) != 1 || reviews.Items[0].Name != "B users" || !reviews.Items[0].Overdue || reviews.Items[0].TenantID != b.TenantID {
		t.Errorf("overdue reviews: %+v", reviews)
	}
	h.get("/api/v1/identity/access-reviews?overdue=true", tokA).json(t, &reviews)
	if reviews.Total != 0 || len(reviews.Items) != 0 {
		t.Errorf("overdue reviews for brand A's user: %+v", reviews)
	}

	// A compliance rule on each tenant's identity_mfa record reads the
	// access review figures through the host: Brand A's one finding, Brand
	// B's one overdue review.
	ruleOn := func(tenantID string) string {
		t.Helper()
		body := fmt.Sprintf(`{"rule_name": "Access reviews in order", "category": "mfa_coverage", "tenant_id": %q, "schema": {"properties": `+
			`{"access_review_findings": {"maximum": 0}, "overdue_access_reviews": {"maximum": 0}}}}`, tenantID)
		r := h.do(http.MethodPost, "/api/v1/compliance/rules", admin, strings.NewReader(body), "Content-Type", "application/json")
		if r.status != http.StatusCreated {
			t.Fatalf("create the access review rule: %d %s", r.status, r.body)
		}
		var rule struct {
			ID int64 `json:"id"`
		}
		r.json(t, &rule)
		var run struct {
			Subjects   int `json:"subjects_evaluated"`
			Violations []struct {
				InstancePath string `json:"instance_path"`
				Keyword      string `json:"keyword"`
			} `json:"violations"`
		}
		h.do(http.MethodPost, fmt.Sprintf("/api/v1/compliance/rules/%d/evaluate", rule.ID), admin, nil).json(t, &run)
		out := fmt.Sprint(run.Subjects)
		for _, v := range run.Violations {
			out += " " + v.InstancePath + " " + v.Keyword
		}
		return out
	}
	if got := ruleOn(a.TenantID); got != "1 /access_review_findings maximum" {
		t.Errorf("the access review rule's dry run on brand A: %q", got)
	}
	if got := ruleOn(b.TenantID); got != "1 /overdue_access_reviews maximum" {
		t.Errorf("the access review rule's dry run on brand B: %q", got)
	}

	var creds struct {
		Items []struct {
			AppName  string `json:"app_name"`
			Name     string `json:"credential_name"`
			DaysLeft int    `json:"days_left"`
			Status   string `json:"status"`
		} `json:"items"`
		Total int `json:"total"`
	}
	credsOf := func(path, token string) string {
		t.Helper()
		h.get(path, token).json(t, &creds)
		out := fmt.Sprint(creds.Total)
		for _, it := range creds.Items {
			out += fmt.Sprintf(" %s/%s %d %s", it.AppName, it.Name, it.DaysLeft, it.Status)
		}
		return out
	}
	if got := credsOf("/api/v1/identity/app-credentials", admin); got != "2 B gateway/sso -3 expired A payroll/ci 10 expiring" {
		t.Errorf("credentials ending within 30 days %q", got)
	}
	if got := credsOf("/api/v1/identity/app-credentials?within_days=365&credential_type=certificate", tokA); got != "1 A payroll/CN=payroll.brand-a.example 200 expiring" {
		t.Errorf("brand A's certificates %q", got)
	}
	if r := h.get("/api/v1/identity/app-credentials?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "B gateway") {
		t.Errorf("brand B's credentials for brand A's user: %d %s", r.status, r.body)
	}
	expectInvalid(t, h.get("/api/v1/identity/app-credentials?within_days=366", admin), "query.within_days")
}
