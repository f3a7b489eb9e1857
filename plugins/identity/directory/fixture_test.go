package directory_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	contosoDir   = "11111111-1111-4111-8111-111111111111"
	fabrikamDir  = "22222222-2222-4222-8222-222222222222"
	clientID     = "steward-test"
	clientSecret = "s3cret"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", DirectoryTenantID: fabrikamDir, UseDelegation: true, IsActive: true}
)

// simNow is the simulator's clock at the start of a test.
var simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// identityWorld gives Contoso seven users and Fabrikam three, with known
// figures:
//
//	Contoso: 7 users, 1 guest, 3 admins (ada, rory, and the disabled dee),
//	4 registered for MFA, 3 of the 5 enabled members (60 %), 2 of the 3
//	admins (66.67 %); stale at
//	90 days: bea (2026-08-01), dee (2026-05-01) and cal, who never signed in.
//	Fabrikam: 3 users, 1 admin, 2 registered (66.67 %), admins 100 %.
//
// Contoso requires MFA of everyone but Ada (enabled), blocks legacy
// authentication in report-only, and lets its Global Administrators in
// with MFA or a compliant device, which requires no MFA; Fabrikam has no
// policy and enforces security defaults.
//
// Contoso has five Global Administrators: ada, rory and dee hold the role,
// bea is eligible for it, and so is the group grp-ops of ada and eve (cal
// is eligible for another role); Fabrikam has one, fay.
//
// Identity Protection has Contoso's rory at high risk and eve's low risk
// dismissed, and Fabrikam's hal confirmed compromised at medium risk.
//
// At simNow Contoso's Payroll secret ends in 4½ days and its certificate
// in 167½, its Vendor CRM service principal's secret ended 44½ days ago;
// Fabrikam's Ledger secret ends in 25½ days.
func identityWorld() *world.World {
	on, off := true, false
	w := &world.World{Tenants: []world.Tenant{
		{Name: "Contoso", DirectoryTenantID: contosoDir, Domains: []string{"contoso.example"}},
		{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Delegated: true, Domains: []string{"fabrikam.example"}, SecurityDefaults: true},
	}}
	mfa := []string{"microsoftAuthenticator"}
	w.Users = []world.User{
		{Email: "ada@contoso.example", Name: "Ada Admin", DirectoryTenantID: contosoDir, UserType: "Member", AccountEnabled: &on,
			IsPrivileged: true, MFARegistered: true, MFAMethods: mfa, LastSignIn: "2026-12-14"},
		{Email: "rory@contoso.example", Name: "Rory Root", DirectoryTenantID: contosoDir, UserType: "Member", AccountEnabled: &on,
			IsPrivileged: true, LastSignIn: "2026-12-01"},
		{Email: "bea@contoso.example", Name: "Bea Old", DirectoryTenantID: contosoDir, UserType: "Member", AccountEnabled: &on,
			MFARegistered: true, MFAMethods: mfa, LastSignIn: "2026-08-01"},
		{Email: "cal@contoso.example", Name: "Cal Never", DirectoryTenantID: contosoDir, UserType: "Member", AccountEnabled: &on},
		{Email: "gus@partner.example", Name: "Gus Guest", DirectoryTenantID: contosoDir, UserType: "Guest", AccountEnabled: &on,
			LastSignIn: "2026-12-10"},
		{Email: "dee@contoso.example", Name: "Dee Gone", DirectoryTenantID: contosoDir, UserType: "Member", AccountEnabled: &off,
			IsPrivileged: true, MFARegistered: true, MFAMethods: mfa, LastSignIn: "2026-05-01"},
		{Email: "eve@contoso.example", Name: "Eve Member", DirectoryTenantID: contosoDir, UserType: "Member", AccountEnabled: &on,
			MFARegistered: true, MFAMethods: []string{"fido2"}, LastSignIn: "2026-12-12"},
		{Email: "fay@fabrikam.example", Name: "Fay Admin", DirectoryTenantID: fabrikamDir, UserType: "Member", AccountEnabled: &on,
			IsPrivileged: true, MFARegistered: true, MFAMethods: mfa, LastSignIn: "2026-12-13"},
		{Email: "gil@fabrikam.example", Name: "Gil Member", DirectoryTenantID: fabrikamDir, UserType: "Member", AccountEnabled: &on,
			MFARegistered: true, MFAMethods: mfa, LastSignIn: "2026-12-11"},
		{Email: "hal@fabrikam.example", Name: "Hal Nomfa", DirectoryTenantID: fabrikamDir, UserType: "Member", AccountEnabled: &on,
			LastSignIn: "2026-12-09"},
	}
	w.ConditionalAccessPolicies = []world.ConditionalAccessPolicy{
		{DirectoryTenantID: contosoDir, ID: "ca-mfa", Name: "MFA for everyone", State: "enabled", IncludeUsers: []string{"All"},
			ExcludeUsers: []string{"ada@contoso.example"}, GrantControls: []string{"mfa"}},
		{DirectoryTenantID: contosoDir, ID: "ca-legacy", Name: "Block legacy authentication", State: "enabledForReportingButNotEnforced",
			IncludeUsers: []string{"All"}, ClientAppTypes: []string{"exchangeActiveSync", "other"}, GrantControls: []string{"block"}},
		{DirectoryTenantID: contosoDir, ID: "ca-admins", Name: "Admins: MFA or a compliant device", State: "enabled",
			IncludeRoles: []string{simgraph.GlobalAdministrator}, GrantControls: []string{"mfa", "compliantDevice"}},
	}
	for i := range w.Users {
		u := &w.Users[i]
		switch u.Email {
		case "ada@contoso.example", "eve@contoso.example":
			u.Groups = []string{"grp-ops"}
		}
		switch u.Email {
		case "rory@contoso.example":
			u.RiskLevel, u.RiskState = "high", "atRisk"
		case "eve@contoso.example":
			u.RiskLevel, u.RiskState = "low", "dismissed"
		case "hal@fabrikam.example":
			u.RiskLevel, u.RiskState = "medium", "confirmedCompromised"
		}
	}
	w.RoleAssignments = []world.RoleAssignment{
		{DirectoryTenantID: contosoDir, Principal: "bea@contoso.example", Kind: "eligible"},
		{DirectoryTenantID: contosoDir, Principal: "group:grp-ops", Kind: "eligible"},
		{DirectoryTenantID: contosoDir, Principal: "cal@contoso.example", Kind: "eligible", RoleTemplateID: simgraph.SecurityReader},
	}
	w.Applications = []world.Application{
		{DirectoryTenantID: contosoDir, Name: "Payroll", Credentials: []world.AppCredential{{Type: "password", Name: "ci", EndDate: "2026-12-20"},
			{Type: "certificate", Name: "payroll.contoso.example", EndDate: "2027-06-01"}}},
		{DirectoryTenantID: contosoDir, Name: "Vendor CRM", ServicePrincipal: true, Credentials: []world.AppCredential{{Type: "password", Name: "sso", EndDate: "2026-11-01"}}},
		{DirectoryTenantID: fabrikamDir, Name: "Ledger", Credentials: []world.AppCredential{{Type: "password", Name: "prod", EndDate: "2027-01-10"}}},
	}
	w.AccessReviews = []world.AccessReview{{DirectoryTenantID: contosoDir, ID: "ar-1", Name: "Quarterly review", Status: "InProgress", EndDate: "2026-11-01",
		Decisions: []world.Decision{{User: "bea@contoso.example", Decision: "Approve"}, {User: "gus@partner.example", Decision: "Deny"},
			{User: "rory@contoso.example", Decision: "Approve"}}}}
	return w
}

// fixture is a simulated cloud serving a world, a migrated store on a real
// database and a syncer whose host is the plugin test harness's Host.
type fixture struct {
	sim      *cloudsim.Sim
	clock    *simtest.Clock
	db       *bun.DB
	store    *directory.Store
	syncer   *directory.Syncer
	handlers *directory.Handlers
	harness  *plugintest.Harness
}

func start(tb testing.TB, dialect string, w *world.World, plugin func(*sdk.Plugin)) *fixture {
	tb.Helper()
	clock := simtest.NewClock(simNow)
	s, p := simtest.Start(tb, w, cloudsim.Options{Now: clock.Now}, simtest.Client(clientID, clientSecret))
	simgraph.Register(s, p)
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(context.Background(), db, directory.Migrations(), "identity_migrations"); err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: s, clock: clock, db: db, store: directory.NewStore(db)}
	f.syncer = &directory.Syncer{Store: f.store, Now: clock.Now}
	f.handlers = &directory.Handlers{Store: f.store, Now: clock.Now}
	f.connect(tb)
	fragments, pages, nav := f.handlers.Views()
	pl := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.syncer.Host, f.handlers.Host = env.Host, env.Host
		p := &sdk.Plugin{Routes: f.handlers.Routes(),
			Datasets: []sdk.Dataset{f.handlers.Dataset()}, Fragments: fragments, Pages: pages, Nav: nav,
			Jobs: []sdk.Job{{Name: "identity", JobType: "identity", DataDomain: "identity", Run: f.syncer.Run}}}
		if plugin != nil {
			plugin(p)
		}
		return p, nil
	}
	// The harness's directory holds the Steward tenants of the world's
	// directories.
	var tenants []sdk.Tenant
	for _, wt := range w.Tenants {
		for _, t := range []sdk.Tenant{contoso, fabrikam} {
			if t.DirectoryTenantID == wt.DirectoryTenantID {
				tenants = append(tenants, t)
			}
		}
	}
	f.harness = plugintest.New(tb, sdk.Definition{Name: "identity"}, pl, plugintest.Options{Tenants: tenants})
	return f
}

// connect builds the Graph clients, as the plugin does when configured;
// after the clock moves a day the cached tokens would be expired on the
// simulator's clock, so they are built again.
func (f *fixture) connect(tb testing.TB) {
	tb.Helper()
	clients, err := cloud.New(cloud.Config{
		Provider: cloud.ProviderSim, TenantID: contosoDir, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints:  cloud.Endpoints{Authority: f.sim.URLs[cloudsim.IdP], ResourceManager: f.sim.URLs[cloudsim.ARM], Graph: f.sim.URLs[cloudsim.Graph]},
		CAPEM:      f.sim.CAPEM,
		Retry:      cloud.Retry{MaxRetries: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second},
	})
	if err != nil {
		tb.Fatal(err)
	}
	f.syncer.Graph = func(dir string) directory.Graph { return clients.Graph(dir) }
}

func (f *fixture) nextDay(tb testing.TB) {
	tb.Helper()
	f.clock.Advance(24 * time.Hour)
	f.connect(tb)
}

func (f *fixture) mustRun(tb testing.TB) (int64, []plugintest.Progress) {
	tb.Helper()
	n, progress, err := f.harness.RunJob(context.Background(), "identity")
	if err != nil {
		tb.Fatalf("identity job: %v", err)
	}
	return n, progress
}

func (f *fixture) freshTenants(from int) []string {
	var out []string
	for _, m := range f.harness.FreshMarks()[from:] {
		if m.Domain == "identity" && m.Failure == "" {
			out = append(out, m.TenantID)
		}
	}
	return out
}

// failedTenants is the tenants whose identity sync was reported failed
// since the from-th mark, with the reasons.
func (f *fixture) failedTenants(from int) map[string]string {
	out := map[string]string{}
	for _, m := range f.harness.FreshMarks()[from:] {
		if m.Domain == "identity" && m.Failure != "" {
			out[m.TenantID] = m.Failure
		}
	}
	return out
}

func each(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}
