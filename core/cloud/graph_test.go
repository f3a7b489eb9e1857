package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// startGraphSim serves w on a simulated cloud with the identity provider
// and Graph, and builds clients against it as Steward would.
func startGraphSim(t *testing.T, w *world.World) (*cloudsim.Sim, *cloud.Clients) {
	t.Helper()
	s, p := simtest.Start(t, w, cloudsim.Options{Now: simtest.Fixed(simNow)}, simtest.Client(clientID, clientSecret))
	simgraph.Register(s, p)
	cfg := simConfig(s)
	cfg.TenantID = w.Tenants[0].DirectoryTenantID
	c, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// brandUsers is how many users graphWorld gives the brand tenant: three
// pages at the simulator's page size.
const brandUsers = 250

// graphWorld gives the managing tenant two users and the brand tenant
// brandUsers: an administrator, a privileged user without MFA, a guest, a
// disabled and a never-signed-in user, and members with rotating MFA
// methods. Each tenant has domains and access reviews.
func graphWorld() *world.World {
	w := baseWorld()
	w.Tenants[0].Domains = []string{"managing.example"}
	w.Tenants[1].Domains = []string{"brand.example", "brand-shop.example"}
	on, off := true, false
	w.Users = []world.User{
		{Email: "ops@managing.example", Name: "Ops Lead", DirectoryTenantID: managingTenant, UserType: "Member", AccountEnabled: &on,
			IsPrivileged: true, MFARegistered: true, MFAMethods: []string{"fido2"}, LastSignIn: "2026-12-14"},
		{Email: "fin@managing.example", Name: "Fin Analyst", DirectoryTenantID: managingTenant, UserType: "Member", AccountEnabled: &on,
			MFARegistered: true, MFAMethods: []string{"microsoftAuthenticator"}, LastSignIn: "2026-12-10"},
		{Email: "admin@brand.example", Name: "Ada Admin", DirectoryTenantID: brandTenant, Roles: []string{"Governance.Admin"},
			UserType: "Member", AccountEnabled: &on, IsPrivileged: true, MFARegistered: true,
			MFAMethods: []string{"fido2", "microsoftAuthenticator"}, LastSignIn: "2026-12-14"},
		{Email: "root@brand.example", Name: "Rory Root", DirectoryTenantID: brandTenant, UserType: "Member", AccountEnabled: &on,
			IsPrivileged: true, MFAMethods: []string{}, LastSignIn: "2026-12-01"},
		{Email: "gia@partner.example", Name: "Gia Guest", DirectoryTenantID: brandTenant, UserType: "Guest", AccountEnabled: &on,
			MFARegistered: true, MFAMethods: []string{"phoneAuthentication"}, LastSignIn: "2026-11-20"},
		{Email: "dan@brand.example", Name: "Dan Gone", DirectoryTenantID: brandTenant, UserType: "Member", AccountEnabled: &off,
			MFAMethods: []string{}, LastSignIn: "2026-02-01"},
		{Email: "new@brand.example", Name: "Nia New", DirectoryTenantID: brandTenant, UserType: "Member", AccountEnabled: &on,
			MFAMethods: []string{}},
	}
	methods := [][]string{{"microsoftAuthenticator"}, {"softwareOneTimePasscode", "phoneAuthentication"}, {"fido2", "phoneAuthentication"}}
	for i := len(w.Users) - 2; i < brandUsers; i++ {
		w.Users = append(w.Users, world.User{
			Email: fmt.Sprintf("user%03d@brand.example", i), Name: fmt.Sprintf("User %03d", i), DirectoryTenantID: brandTenant,
			UserType: "Member", AccountEnabled: &on, MFARegistered: true, MFAMethods: methods[i%len(methods)],
			LastSignIn: simNow.AddDate(0, 0, -i%60).Format(time.DateOnly),
		})
	}
	w.AccessReviews = []world.AccessReview{
		{DirectoryTenantID: brandTenant, ID: "5b0f0c1e-0000-4000-8000-000000000001", Name: "Guest access review", Status: "Completed",
			Decisions: []world.Decision{{User: "gia@partner.example", Decision: "Approve"}, {User: "dan@brand.example", Decision: "Deny"}}},
		{DirectoryTenantID: brandTenant, ID: "5b0f0c1e-0000-4000-8000-000000000002", Name: "Privileged access review", Status: "InProgress",
			Decisions: []world.Decision{{User: "admin@brand.example", Decision: "DontKnow"}, {User: "root@brand.example", Decision: "NotReviewed"}}},
		{DirectoryTenantID: managingTenant, ID: "5b0f0c1e-0000-4000-8000-000000000003", Name: "Operators", Status: "NotStarted",
			Decisions: []world.Decision{{User: "ops@managing.example", Decision: "NotReviewed"}}},
	}
	return w
}

// collect gathers a streaming listing's records.
func collect[T any](t *testing.T, list func(context.Context, func(T) error) error) []T {
	t.Helper()
	var out []T
	if err := list(context.Background(), func(v T) error { out = append(out, v); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func tenantOf(w *world.World, id string) world.Tenant {
	for _, t := range w.Tenants {
		if t.DirectoryTenantID == id {
			return t
		}
	}
	panic("no tenant " + id)
}

// worldUsers are the users of a directory tenant, in the world's order,
// optionally only those keep accepts.
func worldUsers(w *world.World, tenant string, keep func(world.User) bool) []world.User {
	var out []world.User
	for _, u := range w.Users {
		if u.DirectoryTenantID == tenant && (keep == nil || keep(u)) {
			out = append(out, u)
		}
	}
	return out
}

// wantUPN is a user's sign-in name as Entra ID gives it: a guest's is its
// address in the external form under the tenant's default domain.
func wantUPN(t world.Tenant, u world.User) string {
	if u.UserType == "Guest" {
		return strings.ReplaceAll(u.Email, "@", "_") + "#EXT#@" + t.Domains[0]
	}
	return u.Email
}

func day(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

func wantGraphUser(t world.Tenant, u world.User) cloud.GraphUser {
	return cloud.GraphUser{
		ID: idp.ObjectID(u), DisplayName: u.Name, UserPrincipalName: wantUPN(t, u), Mail: u.Email, UserType: u.UserType,
		AccountEnabled: u.AccountEnabled == nil || *u.AccountEnabled,
		Created:        simgraph.CreatedDateTime(u, simNow), LastSignIn: day(u.LastSignIn),
	}
}

func sameUsers(t *testing.T, what string, got []cloud.GraphUser, tn world.Tenant, want []world.User) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d users, want %d", what, len(got), len(want))
	}
	for i, u := range want {
		w := wantGraphUser(tn, u)
		g := got[i]
		if g.ID != w.ID || g.DisplayName != w.DisplayName || g.UserPrincipalName != w.UserPrincipalName || g.Mail != w.Mail ||
			g.UserType != w.UserType || g.AccountEnabled != w.AccountEnabled || !g.Created.Equal(w.Created) || !g.LastSignIn.Equal(w.LastSignIn) {
			t.Fatalf("%s: user %d is %+v, want %+v", what, i, g, w)
		}
	}
}

func TestGraphUsersPageAndStayInTheirTenant(t *testing.T) {
	w := graphWorld()
	s, c := startGraphSim(t, w)
	brand := tenantOf(w, brandTenant)

	got := collect(t, c.Graph(brandTenant).Users)
	sameUsers(t, "brand", got, brand, worldUsers(w, brandTenant, nil))
	if hits := s.Faults.Hits(cloudsim.Graph, "/v1.0/users"); hits != 3 {
		t.Fatalf("%d requests for %d users, want 3 pages", hits, brandUsers)
	}
	if g := got[2]; g.UserPrincipalName != "gia_partner.example#EXT#@brand.example" || g.Mail != "gia@partner.example" {
		t.Fatalf("guest %+v", g)
	}
	if g := got[4]; !g.LastSignIn.IsZero() || g.Created.IsZero() {
		t.Fatalf("user who never signed in %+v", g)
	}

	// Each tenant's client gets its own tenant's token, which sees its
	// own directory only.
	managing := collect(t, c.Graph(managingTenant).Users)
	sameUsers(t, "managing", managing, tenantOf(w, managingTenant), worldUsers(w, managingTenant, nil))
	brandIDs := map[string]bool{}
	for _, u := range got {
		brandIDs[u.ID] = true
	}
	for _, u := range managing {
		if brandIDs[u.ID] {
			t.Fatalf("the managing tenant's token lists the brand's user %+v", u)
		}
	}
	if c.Graph(brandTenant) != c.Graph(strings.ToUpper(brandTenant)) {
		t.Fatal("a tenant's client is built again instead of reused")
	}
}

func TestGraphGuestsAndDisabledUsers(t *testing.T) {
	w := graphWorld()
	s, c := startGraphSim(t, w)
	g := c.Graph(brandTenant)
	brand := tenantOf(w, brandTenant)
	sameUsers(t, "guests", collect(t, g.Guests), brand,
		worldUsers(w, brandTenant, func(u world.User) bool { return u.UserType == "Guest" }))
	sameUsers(t, "disabled", collect(t, g.DisabledUsers), brand,
		worldUsers(w, brandTenant, func(u world.User) bool { return u.AccountEnabled != nil && !*u.AccountEnabled }))
	// Graph filters: each filtered listing is one page, not the three of
	// the whole directory.
	if hits := s.Faults.Hits(cloudsim.Graph, "/v1.0/users"); hits != 2 {
		t.Fatalf("%d requests, want one per filtered listing", hits)
	}
}

// graphMethodNames are the world's MFA method names as Graph's
// registration report names them.
var graphMethodNames = map[string]string{
	"microsoftAuthenticator":  "microsoftAuthenticatorPush",
	"phoneAuthentication":     "mobilePhone",
	"fido2":                   "fido2",
	"softwareOneTimePasscode": "softwareOneTimePasscode",
}

func TestGraphRegistrationDetails(t *testing.T) {
	w := graphWorld()
	s, c := startGraphSim(t, w)
	brand := tenantOf(w, brandTenant)
	got := collect(t, c.Graph(brandTenant).RegistrationDetails)
	want := worldUsers(w, brandTenant, nil)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	if hits := s.Faults.Hits(cloudsim.Graph, "/v1.0/reports/authenticationMethods/userRegistrationDetails"); hits != 3 {
		t.Fatalf("%d requests, want 3 pages", hits)
	}
	for i, u := range want {
		r := got[i]
		var methods []string
		for _, m := range u.MFAMethods {
			methods = append(methods, graphMethodNames[m])
		}
		def := "none"
		for _, m := range methods {
			if m != "fido2" {
				def = m
				break
			}
		}
		updated := day(u.LastSignIn)
		if updated.IsZero() {
			updated = simgraph.CreatedDateTime(u, simNow)
		}
		if r.ID != idp.ObjectID(u) || r.UserPrincipalName != wantUPN(brand, u) || r.UserDisplayName != u.Name ||
			r.UserType != strings.ToLower(u.UserType) || r.IsAdmin != u.IsPrivileged || r.IsMFARegistered != u.MFARegistered ||
			r.IsMFACapable != u.MFARegistered || r.IsSSPRRegistered != u.MFARegistered ||
			r.IsPasswordlessCapable != slices.Contains(u.MFAMethods, "fido2") || !slices.Equal(r.MethodsRegistered, methods) ||
			r.DefaultMFAMethod != def || !r.LastUpdated.Equal(updated) {
			t.Fatalf("record %d is %+v, want it from %+v", i, r, u)
		}
	}
}

func TestGraphDirectoryRoles(t *testing.T) {
	w := graphWorld()
	_, c := startGraphSim(t, w)
	g := c.Graph(brandTenant)
	roles := collect(t, g.DirectoryRoles)
	byTemplate := map[string]cloud.DirectoryRole{}
	for _, r := range roles {
		byTemplate[r.TemplateID] = r
	}
	privileged := worldUsers(w, brandTenant, func(u world.User) bool { return u.IsPrivileged })
	for _, want := range []struct {
		template, name string
		members        []world.User
	}{
		{simgraph.GlobalAdministrator, "Global Administrator", privileged},
		{simgraph.PrivilegedRoleAdministrator, "Privileged Role Administrator", privileged[:1]},
		{simgraph.SecurityReader, "Security Reader", nil},
	} {
		r, ok := byTemplate[want.template]
		if !ok || r.DisplayName != want.name || r.Description == "" || r.ID == "" {
			t.Fatalf("role %s: %+v", want.name, r)
		}
		members := collect(t, func(ctx context.Context, fn func(cloud.RoleMember) error) error { return g.RoleMembers(ctx, r.ID, fn) })
		if len(members) != len(want.members) {
			t.Fatalf("%s: %d members, want %d", want.name, len(members), len(want.members))
		}
		for i, u := range want.members {
			if m := members[i]; m != (cloud.RoleMember{ID: idp.ObjectID(u), Type: "user", DisplayName: u.Name, UserPrincipalName: u.Email}) {
				t.Fatalf("%s: member %d is %+v, want %s", want.name, i, m, u.Email)
			}
		}
	}
	if len(roles) != 3 {
		t.Fatalf("%d roles", len(roles))
	}

	err := g.RoleMembers(context.Background(), "00000000-0000-4000-8000-0000000000ff", func(cloud.RoleMember) error { return nil })
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrNotFound) || !errors.As(err, &e) || e.Code != "Request_ResourceNotFound" {
		t.Fatalf("unknown role: %v", err)
	}
	// A role's id is its tenant's: the managing tenant does not know the
	// brand's.
	err = c.Graph(managingTenant).RoleMembers(context.Background(), byTemplate[simgraph.GlobalAdministrator].ID, func(cloud.RoleMember) error { return nil })
	if !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("another tenant's role: %v", err)
	}
}

func TestGraphAccessReviews(t *testing.T) {
	w := graphWorld()
	_, c := startGraphSim(t, w)
	brand := tenantOf(w, brandTenant)
	today := simNow.Truncate(24 * time.Hour)
	for _, tenant := range []string{brandTenant, managingTenant} {
		got := collect(t, c.Graph(tenant).AccessReviews)
		var want []world.AccessReview
		for _, r := range w.AccessReviews {
			if r.DirectoryTenantID == tenant {
				want = append(want, r)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d reviews, want %d", len(got), len(want))
		}
		for i, wr := range want {
			r := got[i]
			if r.ID != wr.ID || r.DisplayName != wr.Name || r.Status != wr.Status || len(r.Instances) != 1 {
				t.Fatalf("review %d is %+v, want %+v", i, r, wr)
			}
			in := r.Instances[0]
			if in.ID == "" || in.Status != wr.Status || in.End.Sub(in.Start) != 14*24*time.Hour || !r.Created.Before(in.Start) {
				t.Fatalf("instance %+v", in)
			}
			switch wr.Status {
			case "Completed":
				if !in.End.Before(today) {
					t.Fatalf("a completed review ends %s", in.End)
				}
			case "InProgress":
				if in.Start.After(today) || !in.End.After(today) {
					t.Fatalf("a review in progress runs %s–%s", in.Start, in.End)
				}
			case "NotStarted":
				if !in.Start.After(today) {
					t.Fatalf("a review not started starts %s", in.Start)
				}
			}
			if len(in.Decisions) != len(wr.Decisions) {
				t.Fatalf("%d decisions, want %d", len(in.Decisions), len(wr.Decisions))
			}
			for j, wd := range wr.Decisions {
				d := in.Decisions[j]
				u, _ := idp.Users(w.Users).ByEmail(wd.User)
				if d.ID == "" || d.Decision != wd.Decision || d.PrincipalID != idp.ObjectID(u) || d.PrincipalDisplayName != u.Name ||
					d.PrincipalUserPrincipalName != wantUPN(tenantOf(w, tenant), u) {
					t.Fatalf("decision %d is %+v, want %+v", j, d, wd)
				}
				reviewed := wd.Decision != "NotReviewed"
				if reviewed == d.Reviewed.IsZero() || reviewed == (d.ReviewedBy == "") ||
					reviewed && (d.Reviewed.Before(in.Start) || d.Reviewed.After(in.End) || d.Reviewed.After(simNow)) {
					t.Fatalf("decision %d: reviewed by %q at %s", j, d.ReviewedBy, d.Reviewed)
				}
				wantRec := "Deny"
				if !day(u.LastSignIn).Before(in.Start.AddDate(0, 0, -30)) {
					wantRec = "Approve"
				}
				if d.Recommendation != wantRec {
					t.Fatalf("decision %d about %s recommends %s, want %s", j, wd.User, d.Recommendation, wantRec)
				}
			}
		}
		if tenant == brandTenant && got[0].Instances[0].Decisions[0].ReviewedBy != wantUPN(brand, w.Users[2]) {
			t.Fatalf("reviewer %q, want the tenant's first privileged user", got[0].Instances[0].Decisions[0].ReviewedBy)
		}
	}
}

func TestGraphDomains(t *testing.T) {
	w := graphWorld()
	_, c := startGraphSim(t, w)
	got := collect(t, c.Graph(brandTenant).Domains)
	want := []cloud.Domain{
		{Name: "brand.example", AuthenticationType: "Managed", IsDefault: true, IsVerified: true},
		{Name: "brand-shop.example", AuthenticationType: "Managed", IsVerified: true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("domains %+v, want %+v", got, want)
	}
}

func TestGraphManagedDevices(t *testing.T) {
	w := graphWorld()
	_, c := startGraphSim(t, w)
	brand := tenantOf(w, brandTenant)
	got := collect(t, c.Graph(brandTenant).ManagedDevices)
	var want []cloud.ManagedDevice
	for _, u := range worldUsers(w, brandTenant, nil) {
		for _, d := range simgraph.Devices(u) {
			want = append(want, cloud.ManagedDevice{ID: d.ID, Name: d.Name, UserID: idp.ObjectID(u), UserPrincipalName: wantUPN(brand, u),
				OperatingSystem: d.OperatingSystem, OSVersion: d.OSVersion, ComplianceState: d.ComplianceState, IsEncrypted: d.Encrypted,
				Model: d.Model, Manufacturer: d.Manufacturer, Enrolled: d.Enrolled, LastSync: d.LastSync})
		}
	}
	if len(want) <= cloudsim.DefaultPageSize || len(got) != len(want) {
		t.Fatalf("%d devices, want %d over more than a page", len(got), len(want))
	}
	for i := range want {
		g, d := got[i], want[i]
		if g.ID != d.ID || g.Name != d.Name || g.UserID != d.UserID || g.UserPrincipalName != d.UserPrincipalName ||
			g.OperatingSystem != d.OperatingSystem || g.OSVersion != d.OSVersion || g.ComplianceState != d.ComplianceState ||
			g.IsEncrypted != d.IsEncrypted || g.Model != d.Model || g.Manufacturer != d.Manufacturer ||
			!g.Enrolled.Equal(d.Enrolled) || !g.LastSync.Equal(d.LastSync) {
			t.Fatalf("device %d is %+v, want %+v", i, g, d)
		}
	}
}

func TestGraphRetriesThrottlingAndFailures(t *testing.T) {
	s, c := startGraphSim(t, graphWorld())
	g := c.Graph(brandTenant)
	const path = "/v1.0/domains"
	domains := func() error { return g.Domains(context.Background(), func(cloud.Domain) error { return nil }) }
	// The first call gets the token, so the timed calls time Graph alone.
	if err := domains(); err != nil {
		t.Fatal(err)
	}

	before := s.Faults.Hits(cloudsim.Graph, path)
	s.Faults.Set(cloudsim.Graph, path, cloudsim.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Times: 1})
	start := time.Now()
	if err := domains(); err != nil {
		t.Fatalf("throttled once: %v", err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("retried after %s, before the Retry-After of 1s", elapsed)
	}
	if hits := s.Faults.Hits(cloudsim.Graph, path) - before; hits != 2 {
		t.Fatalf("%d requests, want the throttled one and its retry", hits)
	}

	before = s.Faults.Hits(cloudsim.Graph, path)
	s.Faults.Set(cloudsim.Graph, path, cloudsim.Fault{Status: http.StatusServiceUnavailable, Times: 2})
	if err := domains(); err != nil {
		t.Fatalf("after two 503s: %v", err)
	}
	if hits := s.Faults.Hits(cloudsim.Graph, path) - before; hits != 3 {
		t.Fatalf("%d requests, want two 503s and a success", hits)
	}

	before = s.Faults.Hits(cloudsim.Graph, path)
	s.Faults.Set(cloudsim.Graph, path, cloudsim.Fault{Status: http.StatusServiceUnavailable})
	err := domains()
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrUnavailable) || !errors.As(err, &e) || e.StatusCode != 503 || !strings.Contains(e.Op, brandTenant) {
		t.Fatalf("persistent 503: %v", err)
	}
	if hits := s.Faults.Hits(cloudsim.Graph, path) - before; hits != 1+testRetry.MaxRetries {
		t.Fatalf("%d requests, want 1 and %d retries", hits, testRetry.MaxRetries)
	}

	// A pause longer than the client waits for ends the retries at once
	// and tells the caller how long the service asked for.
	s.Faults.Set(cloudsim.Graph, path, cloudsim.Fault{Status: http.StatusTooManyRequests, RetryAfter: 2 * testRetry.MaxDelay})
	start = time.Now()
	err = domains()
	if !errors.Is(err, cloud.ErrThrottled) || !errors.As(err, &e) || e.RetryAfter != 2*testRetry.MaxDelay || time.Since(start) >= testRetry.MaxDelay {
		t.Fatalf("long throttling: %v after %s", err, time.Since(start))
	}

	s.Faults.Set(cloudsim.Graph, path, cloudsim.Fault{ExpireTokens: true})
	err = domains()
	if !errors.Is(err, cloud.ErrUnauthorized) || !errors.As(err, &e) || e.StatusCode != 401 || e.Code != "InvalidAuthenticationToken" {
		t.Fatalf("expired token: %v", err)
	}
	s.Faults.Clear()

	// A listing the service cuts short ends with the pages it gave.
	s.Faults.Set(cloudsim.Graph, "/v1.0/users", cloudsim.Fault{TruncatePages: true})
	if users := collect(t, g.Users); len(users) != cloudsim.DefaultPageSize {
		t.Fatalf("a truncated listing gave %d users, want the first page", len(users))
	}
}

func TestGraphCallerErrorsAndBadClients(t *testing.T) {
	s, c := startGraphSim(t, graphWorld())
	stop := errors.New("stop")
	n := 0
	err := c.Graph(brandTenant).Users(context.Background(), func(cloud.GraphUser) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("fn's error: %v after %d users, want it as is after 1", err, n)
	}

	var authErr *azidentity.AuthenticationFailedError
	before := s.Faults.Hits(cloudsim.Graph, "/")
	if err := c.Graph("99999999-0000-4000-8000-000000000000").Domains(context.Background(), func(cloud.Domain) error { return nil }); !errors.As(err, &authErr) {
		t.Fatalf("unknown tenant: %v, want the credential's AuthenticationFailedError", err)
	}
	if hits := s.Faults.Hits(cloudsim.Graph, "/") - before; hits != 0 {
		t.Fatalf("%d requests reached Graph without a token", hits)
	}

	noGraph := simConfig(s)
	noGraph.Endpoints.Graph = ""
	mi := simConfig(s)
	mi.Credential = cloud.CredentialManagedIdentity
	for name, cfg := range map[string]cloud.Config{"no Graph endpoint": noGraph, "managed identity in another tenant": mi} {
		c, err := cloud.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Graph(brandTenant).Domains(context.Background(), func(cloud.Domain) error { return nil }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := c.Graph("").Domains(context.Background(), func(cloud.Domain) error { return nil }); err == nil {
		t.Error("no tenant: no error")
	}
}

// TestGraphNextLinkStaysOnGraph serves a Graph page whose next link points
// at another service: following it would hand that service the tenant's
// token.
func TestGraphNextLinkStaysOnGraph(t *testing.T) {
	s, _ := simtest.Start(t, graphWorld(), cloudsim.Options{Now: simtest.Fixed(simNow)}, simtest.Client(clientID, clientSecret))
	s.Handle(cloudsim.Graph, "GET /v1.0/domains", func(w http.ResponseWriter, _ *http.Request) {
		cloudsim.WriteJSON(w, map[string]any{"value": []any{map[string]any{"id": "brand.example"}},
			"@odata.nextLink": s.URLs[cloudsim.ARM] + "/v1.0/domains?$skiptoken=1"})
	})
	c, err := cloud.New(simConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = c.Graph(brandTenant).Domains(context.Background(), func(cloud.Domain) error { n++; return nil })
	if err == nil || n != 1 || s.Faults.Hits(cloudsim.ARM, "/") != 0 {
		t.Fatalf("next link to another host: %v after %d domains, %d requests there", err, n, s.Faults.Hits(cloudsim.ARM, "/"))
	}
}

// TestGraphDemoWorld reads every tenant of the demo world and checks the
// records against it.
func TestGraphDemoWorld(t *testing.T) {
	w := world.Demo(1, simNow)
	_, c := startGraphSim(t, w)
	ctx := context.Background()
	for _, tn := range w.Tenants {
		g := c.Graph(tn.DirectoryTenantID)
		users := worldUsers(w, tn.DirectoryTenantID, nil)
		sameUsers(t, tn.Name, collect(t, g.Users), tn, users)
		sameUsers(t, tn.Name+" guests", collect(t, g.Guests), tn,
			worldUsers(w, tn.DirectoryTenantID, func(u world.User) bool { return u.UserType == "Guest" }))
		sameUsers(t, tn.Name+" disabled", collect(t, g.DisabledUsers), tn,
			worldUsers(w, tn.DirectoryTenantID, func(u world.User) bool { return !*u.AccountEnabled }))

		regs := collect(t, g.RegistrationDetails)
		if len(regs) != len(users) {
			t.Fatalf("%s: %d registration records, want %d", tn.Name, len(regs), len(users))
		}
		privileged := map[string]bool{}
		for i, u := range users {
			if r := regs[i]; r.ID != idp.ObjectID(u) || r.IsAdmin != u.IsPrivileged || r.IsMFARegistered != u.MFARegistered ||
				len(r.MethodsRegistered) != len(u.MFAMethods) {
				t.Fatalf("%s: registration %+v of %+v", tn.Name, r, u)
			}
			if u.IsPrivileged {
				privileged[idp.ObjectID(u)] = true
			}
		}

		for _, r := range collect(t, g.DirectoryRoles) {
			if r.TemplateID != simgraph.GlobalAdministrator {
				continue
			}
			members := map[string]bool{}
			if err := g.RoleMembers(ctx, r.ID, func(m cloud.RoleMember) error { members[m.ID] = true; return nil }); err != nil {
				t.Fatal(err)
			}
			if len(members) == 0 || len(members) != len(privileged) {
				t.Fatalf("%s: %d Global Administrators, want the %d privileged users", tn.Name, len(members), len(privileged))
			}
			for id := range members {
				if !privileged[id] {
					t.Fatalf("%s: Global Administrator %s is not privileged", tn.Name, id)
				}
			}
		}

		reviews := collect(t, g.AccessReviews)
		var want []world.AccessReview
		for _, r := range w.AccessReviews {
			if r.DirectoryTenantID == tn.DirectoryTenantID {
				want = append(want, r)
			}
		}
		if len(reviews) != len(want) {
			t.Fatalf("%s: %d reviews, want %d", tn.Name, len(reviews), len(want))
		}
		for i, r := range reviews {
			decisions := r.Instances[0].Decisions
			if r.ID != want[i].ID || r.Status != want[i].Status || len(decisions) != len(want[i].Decisions) {
				t.Fatalf("%s: review %+v, want %+v", tn.Name, r, want[i])
			}
			for j, d := range decisions {
				if d.Decision != want[i].Decisions[j].Decision {
					t.Fatalf("%s: decision %+v, want %+v", tn.Name, d, want[i].Decisions[j])
				}
			}
		}

		var names []string
		for _, d := range collect(t, g.Domains) {
			names = append(names, d.Name)
		}
		if !slices.Equal(names, tn.Domains) {
			t.Fatalf("%s: domains %v, want %v", tn.Name, names, tn.Domains)
		}

		devices := 0
		for _, u := range users {
			devices += len(simgraph.Devices(u))
		}
		if got := collect(t, g.ManagedDevices); len(got) != devices {
			t.Fatalf("%s: %d devices, want %d", tn.Name, len(got), devices)
		}
	}
}

// TestGraphConditionalAccess: each tenant's Conditional Access policies
// arrive with their state, users (a world user by its object id), roles,
// client apps and grant controls, and only that tenant's; the security
// defaults policy says whether the tenant enforces them; a failure of
// either names the tenant.
func TestGraphConditionalAccess(t *testing.T) {
	w := graphWorld()
	w.Tenants[0].SecurityDefaults = true
	w.ConditionalAccessPolicies = []world.ConditionalAccessPolicy{
		{DirectoryTenantID: brandTenant, ID: "c0000000-0000-4000-8000-000000000001", Name: "Require MFA for all users", State: "enabled",
			IncludeUsers: []string{"All"}, ExcludeUsers: []string{"admin@brand.example"}, GrantControls: []string{"mfa"}},
		{DirectoryTenantID: brandTenant, ID: "c0000000-0000-4000-8000-000000000002", Name: "Block legacy authentication",
			State: "enabledForReportingButNotEnforced", IncludeUsers: []string{"All"}, ClientAppTypes: []string{"exchangeActiveSync", "other"},
			GrantControls: []string{"block"}},
		{DirectoryTenantID: brandTenant, ID: "c0000000-0000-4000-8000-000000000003", Name: "Admins on compliant devices", State: "disabled",
			IncludeRoles: []string{simgraph.GlobalAdministrator}, GrantControls: []string{"mfa", "compliantDevice"}, GrantOperator: "AND"},
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	s, c := startGraphSim(t, w)
	brand := c.Graph(brandTenant)
	got := collect(t, brand.ConditionalAccessPolicies)
	admin := worldUsers(w, brandTenant, func(u world.User) bool { return u.Email == "admin@brand.example" })[0]
	want := []cloud.ConditionalAccessPolicy{
		{ID: "c0000000-0000-4000-8000-000000000001", DisplayName: "Require MFA for all users", State: "enabled",
			IncludeUsers: []string{"All"}, ExcludeUsers: []string{idp.ObjectID(admin)}, IncludeGroups: []string{}, ExcludeGroups: []string{},
			IncludeRoles: []string{}, ExcludeRoles: []string{}, IncludeApplications: []string{"All"}, ClientAppTypes: []string{"all"},
			GrantOperator: "OR", BuiltInControls: []string{"mfa"}},
		{ID: "c0000000-0000-4000-8000-000000000002", DisplayName: "Block legacy authentication", State: "enabledForReportingButNotEnforced",
			IncludeUsers: []string{"All"}, ExcludeUsers: []string{}, IncludeGroups: []string{}, ExcludeGroups: []string{},
			IncludeRoles: []string{}, ExcludeRoles: []string{}, IncludeApplications: []string{"All"}, ClientAppTypes: []string{"exchangeActiveSync", "other"},
			GrantOperator: "OR", BuiltInControls: []string{"block"}},
		{ID: "c0000000-0000-4000-8000-000000000003", DisplayName: "Admins on compliant devices", State: "disabled",
			IncludeUsers: []string{}, ExcludeUsers: []string{}, IncludeGroups: []string{}, ExcludeGroups: []string{},
			IncludeRoles: []string{simgraph.GlobalAdministrator}, ExcludeRoles: []string{}, IncludeApplications: []string{"All"}, ClientAppTypes: []string{"all"},
			GrantOperator: "AND", BuiltInControls: []string{"mfa", "compliantDevice"}},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("brand policies\n%+v\nwant\n%+v", got, want)
	}
	if on, err := brand.SecurityDefaults(context.Background()); err != nil || on {
		t.Fatalf("brand's security defaults %v (%v), want off", on, err)
	}
	managing := c.Graph(managingTenant)
	if policies := collect(t, managing.ConditionalAccessPolicies); len(policies) != 0 {
		t.Fatalf("the managing tenant sees %d policies, want none of the brand's", len(policies))
	}
	if on, err := managing.SecurityDefaults(context.Background()); err != nil || !on {
		t.Fatalf("managing tenant's security defaults %v (%v), want on", on, err)
	}

	s.Faults.Set(cloudsim.Graph, "/v1.0/policies/identitySecurityDefaultsEnforcementPolicy", cloudsim.Fault{Status: http.StatusForbidden})
	_, err := brand.SecurityDefaults(context.Background())
	var e *cloud.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusForbidden || !strings.Contains(e.Op, "security defaults") || !strings.Contains(e.Op, brandTenant) {
		t.Fatalf("refused security defaults: %v", err)
	}
	s.Faults.Set(cloudsim.Graph, "/v1.0/identity/conditionalAccess/policies", cloudsim.Fault{Status: http.StatusForbidden})
	err = brand.ConditionalAccessPolicies(context.Background(), func(cloud.ConditionalAccessPolicy) error { return nil })
	if !errors.As(err, &e) || e.StatusCode != http.StatusForbidden || !strings.Contains(e.Op, "Conditional Access") {
		t.Fatalf("refused policies: %v", err)
	}
}

// TestGraphPrivilegedIdentityManagement: the Global Administrator role's
// active assignments are its holders', each with its principal expanded;
// its eligibilities are the world's, a user's and a group's, whose
// members are listed; another role's and another tenant's stay apart.
func TestGraphPrivilegedIdentityManagement(t *testing.T) {
	w := graphWorld()
	for i := range w.Users {
		if w.Users[i].Email == "user011@brand.example" || w.Users[i].Email == "user012@brand.example" {
			w.Users[i].Groups = []string{"grp-ops"}
		}
	}
	w.RoleAssignments = []world.RoleAssignment{
		{DirectoryTenantID: brandTenant, Principal: "user010@brand.example", Kind: "eligible"},
		{DirectoryTenantID: brandTenant, Principal: "group:grp-ops", Kind: "eligible"},
		{DirectoryTenantID: brandTenant, Principal: "user013@brand.example", Kind: "eligible", RoleTemplateID: simgraph.SecurityReader},
		{DirectoryTenantID: managingTenant, Principal: "fin@managing.example", Kind: "eligible"},
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	_, c := startGraphSim(t, w)
	g := c.Graph(brandTenant)
	list := func(fn func(context.Context, string, func(cloud.RoleScheduleInstance) error) error) []string {
		var out []string
		if err := fn(context.Background(), simgraph.GlobalAdministrator, func(in cloud.RoleScheduleInstance) error {
			if in.RoleTemplateID != simgraph.GlobalAdministrator || in.MemberType != "Direct" || in.ID == "" || in.PrincipalID == "" || in.Start.IsZero() || !in.End.IsZero() {
				t.Errorf("instance %+v", in)
			}
			out = append(out, in.PrincipalType+" "+in.PrincipalName+" "+in.PrincipalUPN+" "+in.AssignmentType)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := list(g.ActiveRoleAssignments), []string{"user Ada Admin admin@brand.example Assigned", "user Rory Root root@brand.example Assigned"}; !slices.Equal(got, want) {
		t.Fatalf("active Global Administrators %v, want %v", got, want)
	}
	if got, want := list(g.EligibleRoleAssignments), []string{"user User 010 user010@brand.example ", "group grp-ops  "}; !slices.Equal(got, want) {
		t.Fatalf("eligible Global Administrators %v, want %v", got, want)
	}
	var group string
	_ = g.EligibleRoleAssignments(context.Background(), simgraph.GlobalAdministrator, func(in cloud.RoleScheduleInstance) error {
		if in.PrincipalType == "group" {
			group = in.PrincipalID
		}
		return nil
	})
	members := collect(t, func(ctx context.Context, fn func(cloud.RoleMember) error) error {
		return g.GroupMembers(ctx, group, fn)
	})
	if got := names(members); !slices.Equal(got, []string{"User 011", "User 012"}) {
		t.Fatalf("the group's members %v", got)
	}
	err := g.GroupMembers(context.Background(), "00000000-0000-4000-8000-0000000000ff", func(cloud.RoleMember) error { return nil })
	if !errors.Is(err, cloud.ErrNotFound) || !strings.Contains(err.Error(), "list members of group") {
		t.Fatalf("unknown group: %v", err)
	}
	if err := c.Graph(managingTenant).GroupMembers(context.Background(), group, func(cloud.RoleMember) error { return nil }); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("another tenant's group: %v", err)
	}
	if got := list(c.Graph(managingTenant).EligibleRoleAssignments); !slices.Equal(got, []string{"user Fin Analyst fin@managing.example "}) {
		t.Fatalf("the managing tenant's eligible Global Administrators %v", got)
	}
}

func names(members []cloud.RoleMember) []string {
	var out []string
	for _, m := range members {
		out = append(out, m.DisplayName)
	}
	return out
}

// TestGraphRiskyUsers: each tenant's risky users with their level, state,
// detail and when their risk last changed, and only that tenant's.
func TestGraphRiskyUsers(t *testing.T) {
	w := graphWorld()
	w.Users[3].RiskLevel, w.Users[3].RiskState = "high", "atRisk"
	w.Users[1].RiskLevel, w.Users[1].RiskState = "medium", "confirmedSafe"
	_, c := startGraphSim(t, w)
	got := collect(t, c.Graph(brandTenant).RiskyUsers)
	want := []cloud.RiskyUser{{ID: idp.ObjectID(w.Users[3]), UserDisplayName: "Rory Root", UserPrincipalName: "root@brand.example", RiskLevel: "high",
		RiskState: "atRisk", RiskDetail: "none", LastUpdated: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}}
	if !slices.EqualFunc(got, want, func(a, b cloud.RiskyUser) bool { return a == b }) {
		t.Fatalf("brand's risky users %+v, want %+v", got, want)
	}
	managing := collect(t, c.Graph(managingTenant).RiskyUsers)
	if len(managing) != 1 || managing[0].UserDisplayName != "Fin Analyst" || managing[0].RiskDetail != "adminConfirmedUserSafe" {
		t.Fatalf("the managing tenant's risky users %+v", managing)
	}
}

// TestGraphApplications: a tenant's registrations and service principals,
// each with its secrets and certificates and when they end, and only that
// tenant's.
func TestGraphApplications(t *testing.T) {
	w := graphWorld()
	w.Applications = []world.Application{
		{DirectoryTenantID: brandTenant, Name: "Payroll", Credentials: []world.AppCredential{{Type: "password", Name: "ci", EndDate: "2026-12-20"},
			{Type: "certificate", Name: "payroll.brand.example", EndDate: "2027-06-01"}}},
		{DirectoryTenantID: brandTenant, Name: "Vendor CRM", ServicePrincipal: true, Credentials: []world.AppCredential{{Type: "password", Name: "sso", EndDate: "2026-11-01"}}},
		{DirectoryTenantID: managingTenant, Name: "Ops"},
	}
	_, c := startGraphSim(t, w)
	g := c.Graph(brandTenant)
	apps := collect(t, g.Applications)
	if len(apps) != 1 || apps[0].DisplayName != "Payroll" || apps[0].Kind != "application" || apps[0].AppID == "" || len(apps[0].Credentials) != 2 {
		t.Fatalf("brand's applications %+v", apps)
	}
	secret, cert := apps[0].Credentials[0], apps[0].Credentials[1]
	if secret.Type != "password" || secret.DisplayName != "ci" || !secret.End.Equal(day("2026-12-20")) || !secret.Start.Equal(day("2025-12-20")) ||
		cert.Type != "certificate" || cert.DisplayName != "CN=payroll.brand.example" || !cert.End.Equal(day("2027-06-01")) || secret.KeyID == cert.KeyID {
		t.Fatalf("payroll's credentials %+v", apps[0].Credentials)
	}
	sps := collect(t, g.ServicePrincipals)
	if len(sps) != 1 || sps[0].DisplayName != "Vendor CRM" || sps[0].Kind != "servicePrincipal" || !sps[0].Credentials[0].End.Equal(day("2026-11-01")) {
		t.Fatalf("brand's service principals %+v", sps)
	}
	if ops := collect(t, c.Graph(managingTenant).Applications); len(ops) != 1 || ops[0].DisplayName != "Ops" || len(ops[0].Credentials) != 0 {
		t.Fatalf("the managing tenant's applications %+v", ops)
	}
}
