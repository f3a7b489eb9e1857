package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// identityPlugins declares the identity plugin, with config (HCL
// attributes, may be empty) in its config block.
func identityPlugins(config string) string {
	return fmt.Sprintf("plugin \"identity\" {\n  binary = %q\n  cloud_credential = true\n  config {\n%s\n  }\n}\n", filepath.Join(binDir, "plugins", "identity"), config)
}

const (
	identityDirA = "11111111-1111-1111-1111-111111111111"
	identityDirB = "22222222-2222-2222-2222-222222222222"
)

// identityWorld: Brand A has three users, two with MFA (66.67 %), its one
// admin among them (100 %), and one who last signed in in 2020; Brand B
// has an admin without MFA and a guest with it (0 %: its one enabled
// member has no MFA, and guests are not counted; admins 0 %).
func identityWorld(t *testing.T) string {
	on := true
	today := time.Now().UTC().Format(time.DateOnly)
	mfa := []string{"microsoftAuthenticator"}
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}}, AccessGroups: []string{"grp-b"}, Domains: []string{"brand-b.example"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true, Domains: []string{"brand-a.example"}},
		},
		Users: []world.User{
			{Email: "ada@brand-a.example", Name: "Ada A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on,
				IsPrivileged: true, MFARegistered: true, MFAMethods: mfa, LastSignIn: today},
			{Email: "abe@brand-a.example", Name: "Abe A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on, LastSignIn: today},
			{Email: "old@brand-a.example", Name: "Old A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on,
				MFARegistered: true, MFAMethods: mfa, LastSignIn: "2020-01-01"},
			{Email: "bob@brand-b.example", Name: "Bob B", DirectoryTenantID: identityDirB, UserType: "Member", AccountEnabled: &on,
				IsPrivileged: true, LastSignIn: today},
			{Email: "gia@partner.example", Name: "Gia Guest", DirectoryTenantID: identityDirB, UserType: "Guest", AccountEnabled: &on,
				MFARegistered: true, MFAMethods: mfa, LastSignIn: today},
		},
	})
}

type identitySummary struct {
	TenantID    string   `json:"tenant_id"`
	TenantName  string   `json:"tenant_name"`
	TotalUsers  int      `json:"total_users"`
	AdminUsers  int      `json:"admin_users"`
	Unprotected int      `json:"unprotected_users"`
	MFACoverage *float64 `json:"mfa_coverage_percentage"`
	AdminMFA    *float64 `json:"admin_mfa_percentage"`
}

type identityUsers struct {
	Items []struct {
		TenantID    string `json:"tenant_id"`
		DisplayName string `json:"display_name"`
	} `json:"items"`
	Total int `json:"total"`
}

func (l identityUsers) names() []string {
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.DisplayName)
	}
	return out
}

// TestIdentityThroughTheHost: the world's directories reach the identity
// routes through Graph, the plugin's sync job and its tables, on both
// databases; a standard user of Brand A sees only Brand A, on the API and
// on the identity page, and is refused Brand B; the bounds answer 422.
func TestIdentityThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testIdentityThroughTheHost(t, dialect) })
	}
}

func testIdentityThroughTheHost(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: identityPlugins(""), env: map[string]string{"STEWARD_SIM_WORLD": identityWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "identity")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "identity")); r.Status != "completed" || r.RecordsProcessed == 0 {
		t.Fatalf("identity sync %+v", r)
	}
	if n, err := h.pluginDB("identity").NewSelect().Table("identity_users").Count(context.Background()); err != nil || n != 5 {
		t.Fatalf("the plugin's users table on %s holds %d rows (%v), want 5", dialect, n, err)
	}

	var sum []identitySummary
	h.get("/api/v1/identity/summary", admin).json(t, &sum)
	byName := map[string]identitySummary{}
	for _, s := range sum {
		byName[s.TenantName] = s
	}
	a, b := byName["Brand A"], byName["Brand B"]
	if len(sum) != 2 || a.TotalUsers != 3 || a.AdminUsers != 1 || a.Unprotected != 1 || *a.MFACoverage != 66.67 || *a.AdminMFA != 100 {
		t.Fatalf("summary %+v", sum)
	}
	if b.TotalUsers != 2 || *b.MFACoverage != 0 || *b.AdminMFA != 0 {
		t.Fatalf("brand B's summary %+v", b)
	}

	var users identityUsers
	h.get("/api/v1/identity/stale?tenant_ids="+a.TenantID, admin).json(t, &users)
	if !slices.Equal(users.names(), []string{"Old A"}) {
		t.Errorf("stale accounts of brand A %v", users.names())
	}
	h.get("/api/v1/identity/users/without-mfa?admins_only=true", admin).json(t, &users)
	if !slices.Equal(users.names(), []string{"Bob B"}) {
		t.Errorf("admins without MFA %v", users.names())
	}
	h.get("/api/v1/identity/guests", admin).json(t, &users)
	if !slices.Equal(users.names(), []string{"Gia Guest"}) {
		t.Errorf("guests %v", users.names())
	}

	expectInvalid(t, h.get("/api/v1/identity/stale?days=0", admin), "query.days")
	expectInvalid(t, h.get("/api/v1/identity/mfa-trend?days=366", admin), "query.days")
	expectInvalid(t, h.get("/api/v1/identity/privileged?limit=501", admin), "query.limit")

	// A standard user of Brand A sees Brand A only.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/identity/summary", tokA).json(t, &sum)
	if len(sum) != 1 || sum[0].TenantID != a.TenantID {
		t.Fatalf("brand A's user sees the summary %+v", sum)
	}
	// The dashboard's card is the plugin's, of Brand A only.
	if r := h.get("/partials/identity-stats", tokA); r.status != http.StatusOK || !strings.Contains(string(r.body), "MFA coverage, 2 of 3 enabled members") {
		t.Errorf("identity card for brand A's user: %d %s", r.status, r.body)
	}
	// So is the identity page, in the navigation; Brand B's is refused.
	htmx := []string{"HX-Request", "true"}
	if r := h.do(http.MethodGet, "/identity", tokA, nil, htmx...); r.status != http.StatusOK || !strings.Contains(string(r.body), "MFA coverage, 2 of 3 enabled members") ||
		!strings.Contains(string(r.body), "Abe A") || strings.Contains(string(r.body), "Brand B") || strings.Contains(string(r.body), "Bob B") ||
		strings.Contains(string(r.body), "Gia") {
		t.Errorf("identity page for brand A's user: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodGet, "/dashboard", tokA, nil, "Accept", "text/html"); !strings.Contains(string(r.body), `href="/identity"`) {
		t.Errorf("the navigation has no identity page: %d", r.status)
	}
	if r := h.do(http.MethodGet, "/identity?tenant_id="+b.TenantID, tokA, nil, htmx...); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Bob B") {
		t.Errorf("identity page of brand B for brand A's user: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/api/v1/identity/users/without-mfa", "/api/v1/identity/privileged", "/api/v1/identity/guests", "/api/v1/identity/stale"} {
		r := h.get(path, tokA)
		if r.status != http.StatusOK || strings.Contains(string(r.body), b.TenantID) || strings.Contains(string(r.body), "Bob B") || strings.Contains(string(r.body), "Gia") {
			t.Errorf("%s for brand A's user: %d %s", path, r.status, r.body)
		}
		if r := h.get(path+"?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Bob B") {
			t.Errorf("%s naming brand B: %d %s", path, r.status, r.body)
		}
	}
}

// TestIdentityDatasetReadByAnotherPlugin: the example plugin's job reads
// identity_mfa through the host one tenant at a time, and gets that
// tenant's one record each time, never the other's.
func TestIdentityDatasetReadByAnotherPlugin(t *testing.T) {
	bin := buildExample(t)
	hcl := identityPlugins("") + fmt.Sprintf("plugin \"acme_evidence\" {\n  binary = %q\n  config {\n    inventory = \"identity_mfa\"\n  }\n}\n", bin)
	h := startHost(t, hostOpts{pluginsHCL: hcl, env: map[string]string{"STEWARD_SIM_WORLD": identityWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}})
	admin := h.login()
	waitStartupSync(t, h, admin, "identity")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "acme-evidence")); r.Status != "completed" || r.RecordsProcessed != 2 {
		t.Fatalf("evidence run %+v, want completed for 2 tenants", r)
	}
	var rows []struct {
		TenantID  string `bun:"tenant_id"`
		Resources int64  `bun:"resources"`
	}
	if err := h.pluginDB("acme_evidence").NewSelect().Table("acme_evidence").Column("tenant_id", "resources").Order("tenant_id").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	// The start-up run of the evidence job may have read before the first
	// identity sync, and found nothing; a read never finds another
	// tenant's record.
	read := map[string]bool{}
	for _, r := range rows {
		if r.Resources > 1 {
			t.Fatalf("evidence rows %+v: a tenant's read found more than its own record", rows)
		}
		if r.Resources == 1 {
			read[r.TenantID] = true
		}
	}
	if len(read) != 2 {
		t.Fatalf("evidence rows %+v, want one identity_mfa record read for each of the 2 tenants", rows)
	}
}
