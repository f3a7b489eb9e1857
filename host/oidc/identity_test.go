package oidc

import (
	"context"
	"net/http"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	managingDir = "11111111-1111-1111-1111-111111111111"
	brandDir    = "22222222-2222-2222-2222-222222222222"
	adminRole   = "Governance.Admin"
)

func TestIdentityKey(t *testing.T) {
	cases := []struct {
		id           Identity
		dir, userID  string
		adminManaged bool
	}{
		// Entra ID: tid and oid, whatever the pairwise sub.
		{Identity{Issuer: "https://idp/" + managingDir + "/v2.0", Subject: "pairwise", TenantID: managingDir, ObjectID: "oid-1", Roles: []string{adminRole}},
			managingDir, "oid-1", true},
		// The role granted by another directory to its own user.
		{Identity{Issuer: "https://idp/" + brandDir + "/v2.0", Subject: "pairwise", TenantID: brandDir, ObjectID: "oid-1", Roles: []string{adminRole}},
			brandDir, "oid-1", false},
		// Directory ids are GUIDs: case does not matter.
		{Identity{Issuer: "https://idp/x/v2.0", Subject: "s", TenantID: "11111111-1111-1111-1111-11111111111A", Roles: []string{adminRole}},
			"11111111-1111-1111-1111-11111111111A", "s", true},
		// A managing directory's user without the role.
		{Identity{Issuer: "https://idp/x/v2.0", Subject: "s", TenantID: managingDir, Roles: []string{"Governance.Reader"}},
			managingDir, "s", false},
		// A provider without tenants: the issuer is the directory, sub the id.
		{Identity{Issuer: "https://accounts.example", Subject: "sub-9", Roles: []string{adminRole}},
			"https://accounts.example", "sub-9", false},
	}
	managing := []string{"", managingDir, "11111111-1111-1111-1111-11111111111a"}
	for _, c := range cases {
		if got := c.id.Directory(); got != c.dir {
			t.Errorf("%+v: Directory = %q, want %q", c.id, got, c.dir)
		}
		if got := c.id.UserID(); got != c.userID {
			t.Errorf("%+v: UserID = %q, want %q", c.id, got, c.userID)
		}
		if got := c.id.HasRoleIn(adminRole, managing); got != c.adminManaged {
			t.Errorf("%+v: HasRoleIn(managing) = %v, want %v", c.id, got, c.adminManaged)
		}
		if c.id.HasRoleIn(adminRole, nil) {
			t.Errorf("%+v: HasRoleIn(no directory) = true", c.id)
		}
	}
	// An empty directory in the list matches no one, not even a token
	// whose directory would be empty.
	if (Identity{Roles: []string{adminRole}}).HasRoleIn(adminRole, []string{""}) {
		t.Error("an empty managing directory made an admin")
	}
}

// TestFinishNamesUserByDirectoryAndObjectID signs users in at the simulated
// Entra ID's multi-tenant endpoint: each identity is its token's tid and
// oid, and two accounts of one address in two directories are two
// identities.
func TestFinishNamesUserByDirectoryAndObjectID(t *testing.T) {
	w := &world.World{
		Tenants: []world.Tenant{{Name: "Managing", DirectoryTenantID: managingDir}, {Name: "Brand", DirectoryTenantID: brandDir}},
		Users: []world.User{
			{Email: "ada@example.com", Name: "Ada", DirectoryTenantID: managingDir, Roles: []string{adminRole}},
			{Email: "ada@example.com", Name: "Ada elsewhere", DirectoryTenantID: brandDir, Roles: []string{adminRole}},
		},
	}
	sim, _ := simtest.Start(t, w, cloudsim.Options{}, idp.Options{})
	rp, err := New(Config{Issuer: sim.URLs[cloudsim.IdP] + "/organizations/v2.0", ClientID: "steward-dev",
		RedirectURL: "http://127.0.0.1:8400/login", HTTPClient: sim.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	browser := sim.HTTPClient()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, u := range w.Users {
		ctx := context.Background()
		req, err := rp.Begin(ctx, rp.cfg.RedirectURL, u.Email)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := browser.Get(req.AuthorizationURL + "&domain_hint=" + u.DirectoryTenantID)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("authorize answered %s: %v", resp.Status, err)
		}
		id, err := rp.Finish(ctx, loc.Query().Get("code"), req.CodeVerifier, req.RedirectURI, req.Nonce)
		if err != nil {
			t.Fatalf("Finish for %s of %s: %v", u.Email, u.DirectoryTenantID, err)
		}
		if id.Directory() != u.DirectoryTenantID || id.UserID() != idp.ObjectID(u) || id.UserID() == id.Subject || id.Email != u.Email || id.Name != u.Name {
			t.Errorf("%s of %s signed in as %+v (directory %s, user id %s), want tid %s and oid %s",
				u.Email, u.DirectoryTenantID, id, id.Directory(), id.UserID(), u.DirectoryTenantID, idp.ObjectID(u))
		}
		if admin := id.HasRoleIn(adminRole, []string{managingDir}); admin != (u.DirectoryTenantID == managingDir) {
			t.Errorf("%s of %s: admin %v", u.Email, u.DirectoryTenantID, admin)
		}
	}
}
