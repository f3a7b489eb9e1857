package graph_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	tenantA = "aaaaaaaa-0000-4000-8000-000000000001"
	tenantB = "bbbbbbbb-0000-4000-8000-000000000002"
)

var now = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func testWorld() *world.World {
	return &world.World{
		Tenants: []world.Tenant{
			{Name: "Alpha", DirectoryTenantID: tenantA, Domains: []string{"alpha.example", "alpha-mail.example"},
				Subscriptions: []world.Subscription{{ID: "sub-a", Name: "A"}}},
			{Name: "Beta", DirectoryTenantID: tenantB, Domains: []string{"beta.example"},
				Subscriptions: []world.Subscription{{ID: "sub-b", Name: "B"}}, SecurityDefaults: true},
		},
		ConditionalAccessPolicies: []world.ConditionalAccessPolicy{
			{DirectoryTenantID: tenantA, ID: "ca-mfa", Name: "MFA for all", State: "enabledForReportingButNotEnforced",
				IncludeUsers: []string{"All"}, ExcludeUsers: []string{"admin@alpha.example"}, GrantControls: []string{"mfa"}},
			{DirectoryTenantID: tenantA, ID: "ca-legacy", Name: "Block legacy", State: "enabled",
				IncludeUsers: []string{"All"}, ClientAppTypes: []string{"exchangeActiveSync", "other"}, GrantControls: []string{"block"}},
		},
		Users: []world.User{
			{Email: "admin@alpha.example", Name: "Ada Admin", DirectoryTenantID: tenantA, Roles: []string{"Governance.Admin"},
				UserType: "Member", AccountEnabled: ptr(true), IsPrivileged: true, MFARegistered: true,
				MFAMethods: []string{"fido2", "microsoftAuthenticator"}, LastSignIn: "2026-12-14"},
			{Email: "priv@alpha.example", Name: "Pat Priv", DirectoryTenantID: tenantA, UserType: "Member",
				IsPrivileged: true, LastSignIn: "2026-12-01"},
			{Email: "mo@alpha.example", Name: "Mo O'Member", DirectoryTenantID: tenantA, UserType: "Member", AccountEnabled: ptr(true),
				MFARegistered: true, MFAMethods: []string{"phoneAuthentication", "softwareOneTimePasscode"}, LastSignIn: "2026-10-01"},
			{Email: "gus@partner.example", Name: "Gus Guest", DirectoryTenantID: tenantA, UserType: "Guest", AccountEnabled: ptr(true)},
			{Email: "dee@alpha.example", Name: "Dee Disabled", DirectoryTenantID: tenantA, UserType: "Member", AccountEnabled: ptr(false),
				LastSignIn: "2026-03-01"},
			{Email: "bo@beta.example", Name: "Bo Beta", DirectoryTenantID: tenantB, UserType: "Member", AccountEnabled: ptr(true),
				LastSignIn: "2026-12-10", RiskLevel: "medium", RiskState: "remediated"},
		},
		AccessReviews: []world.AccessReview{
			{DirectoryTenantID: tenantA, ID: "rev-done", Name: "Quarterly", Status: "Completed", Decisions: []world.Decision{
				{User: "admin@alpha.example", Decision: "Approve"},
				{User: "dee@alpha.example", Decision: "Deny"},
				{User: "gone@alpha.example", Decision: "DontKnow"},
			}},
			{DirectoryTenantID: tenantA, ID: "rev-open", Name: "Guests", Status: "InProgress", Decisions: []world.Decision{
				{User: "gus@partner.example", Decision: "NotReviewed"},
			}},
			{DirectoryTenantID: tenantB, ID: "rev-b", Name: "Beta review", Status: "NotStarted"},
		},
	}
}

type env struct {
	t      *testing.T
	sim    *cloudsim.Sim
	tokens map[string]string
}

func start(t *testing.T) *env {
	t.Helper()
	s, p := simtest.Start(t, testWorld(), cloudsim.Options{Now: simtest.Fixed(now)}, simtest.Client(simtest.ClientID, simtest.ClientSecret))
	graph.Register(s, p)
	e := &env{t: t, sim: s, tokens: map[string]string{}}
	for _, tid := range []string{tenantA, tenantB} {
		e.tokens[tid] = e.token(tid, graph.Audience+"/.default")
	}
	return e
}

// token gets an app-only token of a tenant from the simulated identity
// provider.
func (e *env) token(tenant, scope string) string {
	e.t.Helper()
	return simtest.Token(e.t, e.sim, tenant, scope)
}

// get sends a GET to Graph with a token and decodes the JSON answer.
func (e *env) get(token, path string) (*http.Response, map[string]any) {
	e.t.Helper()
	resp, out := simtest.Do(e.t, e.sim, cloudsim.Graph, token, http.MethodGet, path, nil,
		http.Header{"Client-Request-Id": {"5d2c1a50-0000-4000-8000-000000000042"}})
	if out == nil {
		e.t.Fatalf("GET %s: %d, no JSON object", path, resp.StatusCode)
	}
	return resp, out
}

// all follows the next links of a listing and returns its items and the
// number of pages.
func (e *env) all(tenant, path string) ([]map[string]any, int) {
	e.t.Helper()
	var items []map[string]any
	pages := 0
	for path != "" {
		resp, body := e.get(e.tokens[tenant], path)
		if resp.StatusCode != 200 {
			e.t.Fatalf("GET %s: %d %v", path, resp.StatusCode, body)
		}
		for _, v := range body["value"].([]any) {
			items = append(items, v.(map[string]any))
		}
		path, _ = body["@odata.nextLink"].(string)
		pages++
	}
	return items, pages
}

func graphError(body map[string]any) (code, message string, inner map[string]any) {
	e, _ := body["error"].(map[string]any)
	code, _ = e["code"].(string)
	message, _ = e["message"].(string)
	inner, _ = e["innerError"].(map[string]any)
	return code, message, inner
}

func TestAuthentication(t *testing.T) {
	e := start(t)
	armToken := e.token(tenantA, arm.Audience+"/.default")
	for _, c := range []struct{ name, token, message string }{
		{"no token", "", "Access token is empty."},
		{"not a token", "garbage", "Access token validation failure."},
		{"token for ARM", armToken, "Access token validation failure. Invalid audience."},
	} {
		resp, body := e.get(c.token, "/v1.0/users")
		code, msg, inner := graphError(body)
		if resp.StatusCode != 401 || code != "InvalidAuthenticationToken" || msg != c.message ||
			!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer realm=") {
			t.Errorf("%s: %d %v", c.name, resp.StatusCode, body)
		}
		if inner["date"] != "2026-12-15T12:00:00Z" || inner["request-id"] == "" || inner["request-id"] != resp.Header.Get("request-id") ||
			inner["client-request-id"] != "5d2c1a50-0000-4000-8000-000000000042" {
			t.Errorf("%s: innerError %v", c.name, inner)
		}
	}
	e.sim.Faults.Set(cloudsim.Graph, "/v1.0/users", cloudsim.Fault{ExpireTokens: true})
	resp, body := e.get(e.tokens[tenantA], "/v1.0/users")
	if code, msg, _ := graphError(body); resp.StatusCode != 401 || code != "InvalidAuthenticationToken" || msg != "Access token has expired or is not yet valid." {
		t.Errorf("expired: %d %v", resp.StatusCode, body)
	}
	e.sim.Faults.Clear()
	// An unknown path is checked for a token first, then answered in
	// Graph's envelope.
	if resp, _ := e.get("", "/v1.0/nothing"); resp.StatusCode != 401 {
		t.Errorf("unknown path without token: %d", resp.StatusCode)
	}
	resp, body = e.get(e.tokens[tenantA], "/v1.0/nothing/here")
	if code, msg, _ := graphError(body); resp.StatusCode != 400 || code != "BadRequest" || msg != "Resource not found for the segment 'here'." {
		t.Errorf("unknown path: %d %v", resp.StatusCode, body)
	}
}

func TestUsersAndTenantIsolation(t *testing.T) {
	e := start(t)
	users, pages := e.all(tenantA, "/v1.0/users?$top=2&$select=id,signInActivity")
	if len(users) != 5 || pages != 3 {
		t.Fatalf("%d users in %d pages, want 5 in 3", len(users), pages)
	}
	w := testWorld()
	for i, u := range users {
		wu := w.Users[i]
		if u["id"] != idp.ObjectID(wu) || u["displayName"] != wu.Name || u["mail"] != wu.Email {
			t.Errorf("user %d: %v", i, u)
		}
	}
	admin, priv, guest, disabled := users[0], users[1], users[3], users[4]
	activity := admin["signInActivity"].(map[string]any)
	if admin["userPrincipalName"] != "admin@alpha.example" || admin["userType"] != "Member" || admin["accountEnabled"] != true ||
		admin["givenName"] != "Ada" || admin["surname"] != "Admin" || activity["lastSignInDateTime"] != "2026-12-14T00:00:00Z" ||
		admin["createdDateTime"] != graph.CreatedDateTime(w.Users[0], now).Format(time.RFC3339) {
		t.Errorf("admin %v", admin)
	}
	if priv["accountEnabled"] != true || priv["userType"] != "Member" {
		t.Errorf("unset enabled and type default to an enabled member: %v", priv)
	}
	if guest["userPrincipalName"] != "gus_partner.example#EXT#@alpha.example" || guest["userType"] != "Guest" || guest["signInActivity"] != nil {
		t.Errorf("guest %v", guest)
	}
	if disabled["accountEnabled"] != false {
		t.Errorf("disabled %v", disabled)
	}
	created, _ := time.Parse(time.RFC3339, guest["createdDateTime"].(string))
	if d := now.Sub(created); d < 30*24*time.Hour || d > 731*24*time.Hour {
		t.Errorf("a user who never signed in was created %s ago", d)
	}

	_, body := e.get(e.tokens[tenantA], "/v1.0/users?$top=2")
	if body["@odata.context"] != e.sim.URLs[cloudsim.Graph]+"/v1.0/$metadata#users" ||
		!strings.HasPrefix(body["@odata.nextLink"].(string), e.sim.URLs[cloudsim.Graph]+"/v1.0/users?") {
		t.Errorf("OData envelope %v", body)
	}
	_, body = e.get(e.tokens[tenantA], "/beta/users")
	if body["@odata.context"] != e.sim.URLs[cloudsim.Graph]+"/beta/$metadata#users" || len(body["value"].([]any)) != 5 {
		t.Errorf("beta %v", body)
	}

	other, _ := e.all(tenantB, "/v1.0/users")
	if len(other) != 1 || other[0]["mail"] != "bo@beta.example" {
		t.Fatalf("tenant B sees %v", other)
	}
}

func TestUserFilters(t *testing.T) {
	e := start(t)
	mails := func(filter string) []string {
		items, _ := e.all(tenantA, "/v1.0/users?$filter="+url.QueryEscape(filter))
		var out []string
		for _, u := range items {
			out = append(out, u["mail"].(string))
		}
		return out
	}
	for filter, want := range map[string][]string{
		"userType eq 'Guest'":                             {"gus@partner.example"},
		"usertype eq 'guest'":                             {"gus@partner.example"},
		"accountEnabled eq false":                         {"dee@alpha.example"},
		"userType eq 'Member' and accountEnabled eq true": {"admin@alpha.example", "priv@alpha.example", "mo@alpha.example"},
		"displayName eq 'Gus Guest'":                      {"gus@partner.example"},
		"displayName eq 'mo o''member'":                   {"mo@alpha.example"},
	} {
		if got := mails(filter); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", filter, got, want)
		}
	}
	for _, filter := range []string{
		"jobTitle eq 'CEO'", "accountEnabled eq 'false'", "userType eq Guest", "userType eq 'Guest' or accountEnabled eq false",
		"startswith(mail,'a')", "userType eq 'Guest", "userType eq",
	} {
		resp, body := e.get(e.tokens[tenantA], "/v1.0/users?$filter="+url.QueryEscape(filter))
		if code, _, _ := graphError(body); resp.StatusCode != 400 || code != "Request_UnsupportedQuery" {
			t.Errorf("%s: %d %v", filter, resp.StatusCode, body)
		}
	}
	for _, top := range []string{"0", "1000", "x"} {
		resp, body := e.get(e.tokens[tenantA], "/v1.0/users?$top="+top)
		if code, _, _ := graphError(body); resp.StatusCode != 400 || code != "Request_BadRequest" {
			t.Errorf("$top=%s: %d %v", top, resp.StatusCode, body)
		}
	}
	if resp, body := e.get(e.tokens[tenantA], "/v1.0/domains?$filter="+url.QueryEscape("isDefault eq true")); resp.StatusCode != 200 || len(body["value"].([]any)) != 1 {
		t.Errorf("domain filter: %d %v", resp.StatusCode, body)
	}
	if resp, _ := e.get(e.tokens[tenantA], "/v1.0/directoryRoles/x/members?$filter="+url.QueryEscape("id eq 'x'")); resp.StatusCode != 404 {
		t.Errorf("unknown role with filter: %d", resp.StatusCode)
	}
}

func TestRegistrationDetails(t *testing.T) {
	e := start(t)
	items, _ := e.all(tenantA, "/v1.0/reports/authenticationMethods/userRegistrationDetails")
	if len(items) != 5 {
		t.Fatalf("%d records", len(items))
	}
	type want struct {
		upn, userType, def             string
		admin, mfa, passwordless, sspr bool
		methods                        []string
		updated                        string
	}
	w := testWorld()
	for i, x := range []want{
		{"admin@alpha.example", "member", "microsoftAuthenticatorPush", true, true, true, true, []string{"fido2", "microsoftAuthenticatorPush"}, "2026-12-14T00:00:00Z"},
		{"priv@alpha.example", "member", "none", true, false, false, false, []string{}, "2026-12-01T00:00:00Z"},
		{"mo@alpha.example", "member", "mobilePhone", false, true, false, true, []string{"mobilePhone", "softwareOneTimePasscode"}, "2026-10-01T00:00:00Z"},
		{"gus_partner.example#EXT#@alpha.example", "guest", "none", false, false, false, false, []string{},
			graph.CreatedDateTime(w.Users[3], now).Format(time.RFC3339)},
	} {
		r := items[i]
		var methods []string
		for _, m := range r["methodsRegistered"].([]any) {
			methods = append(methods, m.(string))
		}
		if r["id"] != idp.ObjectID(w.Users[i]) || r["userDisplayName"] != w.Users[i].Name || r["userPrincipalName"] != x.upn ||
			r["userType"] != x.userType || r["defaultMfaMethod"] != x.def || r["isAdmin"] != x.admin || r["isMfaRegistered"] != x.mfa ||
			r["isMfaCapable"] != x.mfa || r["isPasswordlessCapable"] != x.passwordless || r["isSsprRegistered"] != x.sspr ||
			!slices.Equal(methods, x.methods) || r["lastUpdatedDateTime"] != x.updated {
			t.Errorf("record %d: %v, want %+v", i, r, x)
		}
	}
	admins, _ := e.all(tenantA, "/v1.0/reports/authenticationMethods/userRegistrationDetails?$filter="+url.QueryEscape("isAdmin eq true and isMfaRegistered eq false"))
	if len(admins) != 1 || admins[0]["userPrincipalName"] != "priv@alpha.example" {
		t.Errorf("admins without MFA: %v", admins)
	}
}

func TestDirectoryRoles(t *testing.T) {
	e := start(t)
	roles, _ := e.all(tenantA, "/v1.0/directoryRoles")
	rolesB, _ := e.all(tenantB, "/v1.0/directoryRoles")
	members := map[string][]string{}
	for i, r := range roles {
		if r["id"] == rolesB[i]["id"] || r["roleTemplateId"] != rolesB[i]["roleTemplateId"] {
			t.Errorf("role ids must differ between tenants and templates must not: %v, %v", r, rolesB[i])
		}
		items, _ := e.all(tenantA, "/v1.0/directoryRoles/"+r["id"].(string)+"/members")
		for _, m := range items {
			if m["@odata.type"] != "#microsoft.graph.user" {
				t.Errorf("member %v", m)
			}
			members[r["displayName"].(string)] = append(members[r["displayName"].(string)], m["userPrincipalName"].(string))
		}
	}
	if len(roles) != 3 || roles[0]["roleTemplateId"] != graph.GlobalAdministrator || roles[1]["roleTemplateId"] != graph.PrivilegedRoleAdministrator ||
		roles[2]["roleTemplateId"] != graph.SecurityReader {
		t.Fatalf("roles %v", roles)
	}
	if !slices.Equal(members["Global Administrator"], []string{"admin@alpha.example", "priv@alpha.example"}) ||
		!slices.Equal(members["Privileged Role Administrator"], []string{"admin@alpha.example"}) || len(members["Security Reader"]) != 0 {
		t.Errorf("members %v", members)
	}
	// Another tenant's role is not found, as an unknown one is.
	resp, body := e.get(e.tokens[tenantB], "/v1.0/directoryRoles/"+roles[0]["id"].(string)+"/members")
	if code, _, _ := graphError(body); resp.StatusCode != 404 || code != "Request_ResourceNotFound" {
		t.Errorf("tenant A's role from tenant B: %d %v", resp.StatusCode, body)
	}
}

func TestAccessReviews(t *testing.T) {
	e := start(t)
	defs, _ := e.all(tenantA, "/v1.0/identityGovernance/accessReviews/definitions")
	if len(defs) != 2 || defs[0]["id"] != "rev-done" || defs[0]["displayName"] != "Quarterly" || defs[0]["status"] != "Completed" ||
		defs[1]["status"] != "InProgress" {
		t.Fatalf("definitions %v", defs)
	}
	base := "/v1.0/identityGovernance/accessReviews/definitions/rev-done/instances"
	instances, _ := e.all(tenantA, base)
	if len(instances) != 1 || instances[0]["status"] != "Completed" || instances[0]["startDateTime"] != "2026-10-31T00:00:00Z" ||
		instances[0]["endDateTime"] != "2026-11-14T00:00:00Z" {
		t.Fatalf("instances %v", instances)
	}
	decisions, pages := e.all(tenantA, base+"/"+instances[0]["id"].(string)+"/decisions?$top=1")
	if len(decisions) != 3 || pages != 3 {
		t.Fatalf("%d decisions in %d pages", len(decisions), pages)
	}
	w := testWorld()
	admin := decisions[0]
	principal, reviewer := admin["principal"].(map[string]any), admin["reviewedBy"].(map[string]any)
	if admin["decision"] != "Approve" || admin["recommendation"] != "Approve" || admin["accessReviewId"] != instances[0]["id"] ||
		principal["id"] != idp.ObjectID(w.Users[0]) || principal["userPrincipalName"] != "admin@alpha.example" ||
		reviewer["userPrincipalName"] != "admin@alpha.example" || admin["reviewedDateTime"] != "2026-11-01T00:00:00Z" {
		t.Errorf("admin decision %v", admin)
	}
	if d := decisions[1]; d["decision"] != "Deny" || d["recommendation"] != "Deny" || d["reviewedDateTime"] != "2026-11-01T00:01:00Z" {
		t.Errorf("disabled decision %v", d)
	}
	if p := decisions[2]["principal"].(map[string]any); p["userPrincipalName"] != "gone@alpha.example" || decisions[2]["recommendation"] != "NotAvailable" {
		t.Errorf("decision about a user no longer in the directory %v", decisions[2])
	}

	openBase := "/v1.0/identityGovernance/accessReviews/definitions/rev-open/instances"
	instances, _ = e.all(tenantA, openBase)
	decisions, _ = e.all(tenantA, openBase+"/"+instances[0]["id"].(string)+"/decisions")
	if instances[0]["startDateTime"] != "2026-12-08T00:00:00Z" || len(decisions) != 1 || decisions[0]["reviewedDateTime"] != nil ||
		decisions[0]["reviewedBy"].(map[string]any)["id"] != "00000000-0000-0000-0000-000000000000" {
		t.Errorf("open review %v %v", instances, decisions)
	}

	for _, path := range []string{
		"/v1.0/identityGovernance/accessReviews/definitions/rev-b/instances",
		"/v1.0/identityGovernance/accessReviews/definitions/rev-done/instances/nope/decisions",
	} {
		resp, body := e.get(e.tokens[tenantA], path)
		if code, _, _ := graphError(body); resp.StatusCode != 404 || code != "NotFound" {
			t.Errorf("%s: %d %v", path, resp.StatusCode, body)
		}
	}
	defs, _ = e.all(tenantB, "/v1.0/identityGovernance/accessReviews/definitions")
	if len(defs) != 1 || defs[0]["id"] != "rev-b" {
		t.Errorf("tenant B's definitions %v", defs)
	}
}

func TestDomains(t *testing.T) {
	e := start(t)
	domains, _ := e.all(tenantA, "/v1.0/domains")
	if len(domains) != 2 || domains[0]["id"] != "alpha.example" || domains[0]["isDefault"] != true || domains[1]["isDefault"] != false ||
		domains[1]["isVerified"] != true || domains[1]["authenticationType"] != "Managed" {
		t.Errorf("domains %v", domains)
	}
}

func TestManagedDevices(t *testing.T) {
	e := start(t)
	w := world.Demo(1, now)
	for _, u := range w.Users {
		devices := graph.Devices(u)
		if len(devices) > 2 || (u.UserType == "Guest" || u.LastSignIn == "") && len(devices) > 0 {
			t.Fatalf("%s has %d devices", u.Email, len(devices))
		}
		signedIn, _ := time.Parse(time.DateOnly, u.LastSignIn)
		for _, d := range devices {
			if !d.Enrolled.After(graph.CreatedDateTime(u, now)) || !d.LastSync.After(d.Enrolled) || d.LastSync.After(signedIn) ||
				d.ComplianceState != "compliant" && d.ComplianceState != "noncompliant" || d.ComplianceState == "compliant" && !d.Encrypted {
				t.Fatalf("%s: device %+v", u.Email, d)
			}
		}
		if !slices.Equal(devices, graph.Devices(u)) {
			t.Fatalf("%s: devices differ between calls", u.Email)
		}
	}

	items, _ := e.all(tenantA, "/v1.0/deviceManagement/managedDevices")
	var want []graph.Device
	users := map[string]world.User{}
	for _, u := range testWorld().Users[:5] {
		for _, d := range graph.Devices(u) {
			want = append(want, d)
			users[d.ID] = u
		}
	}
	if len(items) != len(want) || len(want) == 0 {
		t.Fatalf("%d devices, want %d (and some)", len(items), len(want))
	}
	for i, d := range want {
		got, u := items[i], users[d.ID]
		if got["id"] != d.ID || got["deviceName"] != d.Name || got["userId"] != idp.ObjectID(u) || got["emailAddress"] != u.Email ||
			got["operatingSystem"] != d.OperatingSystem || got["complianceState"] != d.ComplianceState ||
			got["lastSyncDateTime"] != d.LastSync.Format(time.RFC3339) || got["isEncrypted"] != d.Encrypted {
			t.Errorf("device %d: %v, want %+v", i, got, d)
		}
	}
}

// TestReplacedWorld: a directory is served from the world the simulator
// serves at the time of the request, so a user and devices the new world
// adds are listed once the world is replaced, and those it removes are
// gone, on every page.
func TestReplacedWorld(t *testing.T) {
	e := start(t)
	before, _ := e.all(tenantA, "/v1.0/users?$top=2")
	devicesBefore, _ := e.all(tenantA, "/v1.0/deviceManagement/managedDevices?$top=1")
	w := testWorld()
	added := world.User{Email: "new@alpha.example", Name: "Nia New", DirectoryTenantID: tenantA, UserType: "Member",
		AccountEnabled: ptr(true), LastSignIn: "2026-12-14"}
	for i := 0; len(graph.Devices(added)) == 0; i++ {
		added.Email = fmt.Sprintf("new%d@alpha.example", i)
	}
	// The new world drops Ada and adds a user with devices.
	w.Users = append(w.Users[1:], added)
	e.sim.SetWorld(w)
	after, pages := e.all(tenantA, "/v1.0/users?$top=2")
	if len(after) != len(before) || pages != 3 || after[0]["mail"] != "priv@alpha.example" || after[len(after)-1]["mail"] != added.Email {
		t.Fatalf("users after the world was replaced: %d in %d pages, first %v last %v", len(after), pages, after[0]["mail"], after[len(after)-1]["mail"])
	}
	devices, _ := e.all(tenantA, "/v1.0/deviceManagement/managedDevices?$top=1")
	want := len(devicesBefore) - len(graph.Devices(testWorld().Users[0])) + len(graph.Devices(added))
	if len(devices) != want || devices[len(devices)-1]["emailAddress"] != added.Email {
		t.Fatalf("%d devices after the world was replaced, want %d, the last %v's", len(devices), want, added.Email)
	}
	filtered, _ := e.all(tenantA, "/v1.0/users?$filter=userType%20eq%20'Member'&$top=1")
	if len(filtered) != 4 || filtered[3]["mail"] != added.Email {
		t.Fatalf("filtered members after the world was replaced: %v", filtered)
	}
}

// TestConsentWithdrawn: a directory that withdraws its consent to the
// application refuses a token it issued before (403, Graph's
// Authorization_RequestDenied) and issues none after; another directory
// is unaffected.
func TestConsentWithdrawn(t *testing.T) {
	e := start(t)
	w := testWorld()
	w.Tenants[1].Consented = ptr(false)
	e.sim.SetWorld(w)
	resp, body := e.get(e.tokens[tenantB], "/v1.0/users")
	if code, msg, _ := graphError(body); resp.StatusCode != 403 || code != "Authorization_RequestDenied" || msg != "Insufficient privileges to complete the operation." {
		t.Errorf("withdrawn directory's token: %d %v", resp.StatusCode, body)
	}
	status, body := simtest.PostToken(t, e.sim, tenantB, url.Values{"grant_type": {"client_credentials"}, "client_id": {simtest.ClientID},
		"client_secret": {simtest.ClientSecret}, "scope": {graph.Audience + "/.default"}})
	if desc, _ := body["error_description"].(string); status != 400 || body["error"] != "unauthorized_client" || !strings.HasPrefix(desc, "AADSTS700016: ") ||
		!strings.Contains(desc, "consented") || !strings.Contains(desc, tenantB) {
		t.Errorf("token request in the withdrawn directory: %d %v", status, body)
	}
	if users, _ := e.all(tenantA, "/v1.0/users"); len(users) != 5 {
		t.Errorf("the consenting directory lists %d users, want 5", len(users))
	}
}

// TestConditionalAccessPolicies: a tenant's policies in Graph's form, a
// world user by object id, filtered by state, one by id (another
// tenant's is 404); the security defaults policy of each tenant.
func TestConditionalAccessPolicies(t *testing.T) {
	e := start(t)
	items, _ := e.all(tenantA, "/v1.0/identity/conditionalAccess/policies")
	if len(items) != 2 || items[0]["displayName"] != "MFA for all" || items[0]["state"] != "enabledForReportingButNotEnforced" {
		t.Fatalf("alpha's policies %v", items)
	}
	users := items[0]["conditions"].(map[string]any)["users"].(map[string]any)
	admin := idp.ObjectID(testWorld().Users[0])
	if fmt.Sprint(users["includeUsers"]) != "[All]" || fmt.Sprint(users["excludeUsers"]) != "["+admin+"]" {
		t.Fatalf("users condition %v", users)
	}
	legacy := items[1]
	if fmt.Sprint(legacy["conditions"].(map[string]any)["clientAppTypes"]) != "[exchangeActiveSync other]" ||
		fmt.Sprint(legacy["grantControls"].(map[string]any)["builtInControls"]) != "[block]" || legacy["grantControls"].(map[string]any)["operator"] != "OR" {
		t.Fatalf("legacy policy %v", legacy)
	}
	if items, _ := e.all(tenantA, "/v1.0/identity/conditionalAccess/policies?$filter=state%20eq%20'enabled'"); len(items) != 1 || items[0]["id"] != "ca-legacy" {
		t.Fatalf("enabled policies %v", items)
	}
	if items, _ := e.all(tenantB, "/beta/identity/conditionalAccess/policies"); len(items) != 0 {
		t.Fatalf("beta sees alpha's policies: %v", items)
	}
	resp, one := e.get(e.tokens[tenantA], "/v1.0/identity/conditionalAccess/policies/ca-legacy")
	if resp.StatusCode != 200 || one["id"] != "ca-legacy" || !strings.HasSuffix(one["@odata.context"].(string), "/v1.0/$metadata#identity/conditionalAccess/policies/$entity") {
		t.Fatalf("one policy: %d %v", resp.StatusCode, one)
	}
	if resp, body := e.get(e.tokens[tenantB], "/v1.0/identity/conditionalAccess/policies/ca-legacy"); resp.StatusCode != 404 {
		t.Fatalf("another tenant's policy: %d %v", resp.StatusCode, body)
	}
	for tenant, want := range map[string]bool{tenantA: false, tenantB: true} {
		resp, body := e.get(e.tokens[tenant], "/v1.0/policies/identitySecurityDefaultsEnforcementPolicy")
		if resp.StatusCode != 200 || body["isEnabled"] != want || body["id"] != "00000000-0000-0000-0000-000000000005" {
			t.Fatalf("security defaults of %s: %d %v", tenant, resp.StatusCode, body)
		}
	}
	if resp, _ := e.get("", "/v1.0/policies/identitySecurityDefaultsEnforcementPolicy"); resp.StatusCode != 401 {
		t.Fatalf("security defaults without a token: %d", resp.StatusCode)
	}
}

// TestPrivilegedIdentityManagement: every role holder has a direct active
// assignment and the world's assignments add theirs, filtered by role and
// with the principal only when expanded; a group's members are the users
// carrying it, and an active group assignment makes the group a holder of
// the role.
func TestPrivilegedIdentityManagement(t *testing.T) {
	e := start(t)
	w := testWorld()
	w.Users[2].Groups = []string{"grp-admins"}
	w.RoleAssignments = []world.RoleAssignment{
		{DirectoryTenantID: tenantA, Principal: "group:grp-admins", Kind: "active"},
		{DirectoryTenantID: tenantA, Principal: "gus@partner.example", Kind: "eligible"},
		{DirectoryTenantID: tenantA, Principal: "mo@alpha.example", Kind: "eligible", RoleTemplateID: graph.SecurityReader},
	}
	e.sim.SetWorld(w)
	const active = "/v1.0/roleManagement/directory/roleAssignmentScheduleInstances"
	filter := "?$filter=roleDefinitionId%20eq%20'" + graph.GlobalAdministrator + "'"
	items, _ := e.all(tenantA, active+filter+"&$expand=principal")
	var got []string
	for _, it := range items {
		p := it["principal"].(map[string]any)
		got = append(got, fmt.Sprint(p["@odata.type"], " ", p["displayName"], " ", it["assignmentType"], " ", it["memberType"]))
	}
	want := []string{"#microsoft.graph.user Ada Admin Assigned Direct", "#microsoft.graph.user Pat Priv Assigned Direct", "#microsoft.graph.group grp-admins Assigned Direct"}
	if !slices.Equal(got, want) {
		t.Fatalf("active Global Administrators %v, want %v", got, want)
	}
	if items, _ := e.all(tenantA, active); len(items) != 4 || items[0]["principal"] != nil {
		t.Fatalf("every active assignment, unexpanded: %v", items)
	}
	eligible, _ := e.all(tenantA, "/beta/roleManagement/directory/roleEligibilityScheduleInstances"+filter)
	if len(eligible) != 1 || eligible[0]["principalId"] != idp.ObjectID(w.Users[3]) || eligible[0]["assignmentType"] != nil {
		t.Fatalf("eligible Global Administrators %v", eligible)
	}
	if items, _ := e.all(tenantB, active); len(items) != 0 {
		t.Fatalf("beta's active assignments %v", items)
	}
	group := items[2]["principalId"].(string)
	members, _ := e.all(tenantA, "/v1.0/groups/"+group+"/transitiveMembers")
	if len(members) != 1 || members[0]["displayName"] != "Mo O'Member" {
		t.Fatalf("the group's members %v", members)
	}
	if resp, body := e.get(e.tokens[tenantB], "/v1.0/groups/"+group+"/transitiveMembers"); resp.StatusCode != 404 {
		t.Fatalf("another tenant's group: %d %v", resp.StatusCode, body)
	}
	roles, _ := e.all(tenantA, "/v1.0/directoryRoles?$filter=roleTemplateId%20eq%20'"+graph.GlobalAdministrator+"'")
	holders, _ := e.all(tenantA, "/v1.0/directoryRoles/"+roles[0]["id"].(string)+"/members")
	if len(holders) != 3 || holders[2]["@odata.type"] != "#microsoft.graph.group" || holders[2]["id"] != group {
		t.Fatalf("Global Administrators %v", holders)
	}
}

// TestRiskyUsers: the users the world gives a risk, each of its own
// tenant, with Graph's detail for the state, filtered by level.
func TestRiskyUsers(t *testing.T) {
	e := start(t)
	w := testWorld()
	w.Users[1].RiskLevel, w.Users[1].RiskState = "high", "atRisk"
	w.Users[3].RiskLevel, w.Users[3].RiskState = "low", "dismissed"
	e.sim.SetWorld(w)
	items, _ := e.all(tenantA, "/v1.0/identityProtection/riskyUsers")
	if len(items) != 2 || items[0]["userDisplayName"] != "Pat Priv" || items[0]["riskLevel"] != "high" || items[0]["riskState"] != "atRisk" ||
		items[0]["riskDetail"] != "none" || items[0]["id"] != idp.ObjectID(w.Users[1]) || items[0]["riskLastUpdatedDateTime"] != "2026-12-01T08:00:00Z" ||
		items[1]["riskDetail"] != "adminDismissedAllRiskForUser" {
		t.Fatalf("alpha's risky users %v", items)
	}
	if high, _ := e.all(tenantA, "/v1.0/identityProtection/riskyUsers?$filter=riskLevel%20eq%20'high'"); len(high) != 1 || high[0]["userDisplayName"] != "Pat Priv" {
		t.Fatalf("high-risk users %v", high)
	}
	if beta, _ := e.all(tenantB, "/beta/identityProtection/riskyUsers"); len(beta) != 1 || beta[0]["userDisplayName"] != "Bo Beta" || beta[0]["riskState"] != "remediated" {
		t.Fatalf("beta's risky users %v", beta)
	}
}

// TestApplications: a directory's registrations and service principals
// apart, each credential a secret or a certificate ending on its day.
func TestApplications(t *testing.T) {
	e := start(t)
	w := testWorld()
	w.Applications = []world.Application{
		{DirectoryTenantID: tenantA, Name: "Payroll", Credentials: []world.AppCredential{{Type: "password", Name: "ci", EndDate: "2026-12-20"},
			{Type: "certificate", Name: "payroll.alpha.example", EndDate: "2027-06-01"}}},
		{DirectoryTenantID: tenantA, Name: "Vendor CRM", ServicePrincipal: true, Credentials: []world.AppCredential{{Type: "password", Name: "sso", EndDate: "2026-11-01"}}},
		{DirectoryTenantID: tenantB, Name: "Beta app"},
	}
	e.sim.SetWorld(w)
	apps, _ := e.all(tenantA, "/v1.0/applications")
	if len(apps) != 1 || apps[0]["displayName"] != "Payroll" || apps[0]["appId"] == apps[0]["id"] {
		t.Fatalf("alpha's applications %v", apps)
	}
	secret := apps[0]["passwordCredentials"].([]any)[0].(map[string]any)
	cert := apps[0]["keyCredentials"].([]any)[0].(map[string]any)
	if secret["displayName"] != "ci" || secret["endDateTime"] != "2026-12-20T00:00:00Z" || secret["secretText"] != nil ||
		cert["displayName"] != "CN=payroll.alpha.example" || cert["endDateTime"] != "2027-06-01T00:00:00Z" || cert["type"] != "AsymmetricX509Cert" {
		t.Fatalf("payroll's credentials %v %v", secret, cert)
	}
	sps, _ := e.all(tenantA, "/beta/servicePrincipals")
	if len(sps) != 1 || sps[0]["displayName"] != "Vendor CRM" || sps[0]["servicePrincipalType"] != "Application" || len(sps[0]["passwordCredentials"].([]any)) != 1 {
		t.Fatalf("alpha's service principals %v", sps)
	}
	if beta, _ := e.all(tenantB, "/v1.0/applications"); len(beta) != 1 || beta[0]["displayName"] != "Beta app" {
		t.Fatalf("beta's applications %v", beta)
	}
}
