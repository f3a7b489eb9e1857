package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// Each replica caches what authenticating a request reads: verified
// tokens, revocation answers, tenant scopes. These tests hold it to the
// guarantee that a logout, a revoked refresh family or a membership change
// applies on every replica within a second.

// dirC is a third directory, beside idp_test.go's dirA and dirB.
const dirC = "33333333-3333-3333-3333-333333333333"

// changesWorld has ann in group grp-a and bob in bobGroup, both in Brand
// A's directory.
func changesWorld(t *testing.T, bobGroup string) string {
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand A", DirectoryTenantID: dirA, Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}}},
			{Name: "Brand B", DirectoryTenantID: dirB, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}}},
			{Name: "Brand C", DirectoryTenantID: dirC, Subscriptions: []world.Subscription{{ID: "cccccccc-0000-0000-0000-000000000001", Name: "C prod"}}},
		},
		Users: []world.User{
			{Email: "ann@brand-a.example", Name: "Ann Analyst", DirectoryTenantID: dirA, Groups: []string{"grp-a"}},
			{Email: "bob@brand-a.example", Name: "Bob Builder", DirectoryTenantID: dirA, Groups: []string{bobGroup}},
		},
	})
}

func changesEnv(worldFile string) map[string]string {
	env := tokenEnv()
	env["STEWARD_SIM_WORLD"] = worldFile
	// Waiting for a change polls; the budget must not end the wait.
	env["STEWARD_RATE_LIMIT_PER_MINUTE"] = "100000"
	return env
}

// waitFn checks cond as the setup under test promises: at once, or within
// a second.
type waitFn func(t *testing.T, what string, cond func() bool)

func atOnce(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !cond() {
		t.Fatalf("not on the next request: %s", what)
	}
}

func withinASecond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a second: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAuthChangesAcrossReplicas: two replicas on one PostgreSQL database
// and one Redis; every change is made on one and observed on the other,
// which has cached the state before it.
func TestAuthChangesAcrossReplicas(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	redisURL := storetest.RedisURL(t)
	o := hostOpts{databaseURL: dbURL, redisURL: redisURL, redisPrefix: storetest.RedisPrefix(t, redisURL)}
	// The replicas' simulated identity providers disagree on bob's group,
	// as a directory does before and after an administrator moves him.
	o.env = changesEnv(changesWorld(t, "grp-a"))
	a := startHost(t, o)
	o.env = changesEnv(changesWorld(t, "grp-b"))
	b := startHost(t, o)
	c := newChanges(t, a, b)

	t.Run("user change", func(t *testing.T) {
		bob := idpToken(t, a, "bob@brand-a.example")
		c.wantSees(t, a, "bob on the replica he signed in on", bob, "Brand A")
		c.wantSees(t, b, "bob on the other replica", bob, "Brand A")
		idpToken(t, b, "bob@brand-a.example")
		withinASecond(t, "bob's new group applies to his earlier token on the first replica", func() bool {
			return c.sees(t, a, bob, "Brand B")
		})
	})
	c.run(t, withinASecond)
}

// TestAuthChangesOnOneReplica: without Redis, a replica drops its caches on
// its own writes, so each change applies to the very next request.
func TestAuthChangesOnOneReplica(t *testing.T) {
	h := startHost(t, hostOpts{env: changesEnv(changesWorld(t, "grp-a"))})
	newChanges(t, h, h).run(t, atOnce)
}

// changes makes its changes on writer and observes them on reader.
type changes struct {
	writer, reader *host
	admin          string
	tenants        map[string]tenancy.Tenant
}

func newChanges(t *testing.T, writer, reader *host) *changes {
	c := &changes{writer: writer, reader: reader, admin: writer.login(), tenants: map[string]tenancy.Tenant{}}
	for name, spec := range map[string]struct {
		dir    string
		groups []string
	}{"Brand A": {dirA, []string{"grp-a"}}, "Brand B": {dirB, []string{"grp-b"}}, "Brand C": {dirC, []string{}}} {
		r := writer.do(http.MethodPost, "/api/v1/tenants", c.admin, strings.NewReader(mustJSON(t, map[string]any{
			"name": name, "directory_tenant_id": spec.dir, "subscription_id": uuid.NewString(), "access_groups": spec.groups,
		})), "Content-Type", "application/json")
		if r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.status, r.body)
		}
		var tn tenancy.Tenant
		r.json(t, &tn)
		c.tenants[name] = tn
	}
	return c
}

// sees reports whether token lists exactly the named tenants on h.
func (c *changes) sees(t *testing.T, h *host, token string, names ...string) bool {
	t.Helper()
	r := h.get("/api/v1/tenants", token)
	if r.status != http.StatusOK {
		t.Fatalf("list tenants on %s: %d %s", h.url, r.status, r.body)
	}
	var list []tenancy.Tenant
	r.json(t, &list)
	got := make([]string, 0, len(list))
	for _, tn := range list {
		got = append(got, tn.Name)
	}
	slices.Sort(got)
	slices.Sort(names)
	return slices.Equal(got, names)
}

func (c *changes) wantSees(t *testing.T, h *host, what, token string, names ...string) {
	t.Helper()
	if !c.sees(t, h, token, names...) {
		t.Fatalf("%s: does not see exactly %v", what, names)
	}
}

func (c *changes) accepted(t *testing.T, token string) bool {
	t.Helper()
	r := c.reader.get("/api/v1/audit-logs?limit=1", token)
	if r.status != http.StatusOK && r.status != http.StatusUnauthorized {
		t.Fatalf("audit log: %d %s", r.status, r.body)
	}
	return r.status == http.StatusOK
}

func (c *changes) send(t *testing.T, method, path string, body any, want int) {
	t.Helper()
	var r response
	if body == nil {
		r = c.writer.do(method, path, c.admin, nil)
	} else {
		r = c.writer.do(method, path, c.admin, strings.NewReader(mustJSON(t, body)), "Content-Type", "application/json")
	}
	if r.status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
}

// run checks each change with the reader's cache warm: before each change
// the reader is shown the state it changes.
func (c *changes) run(t *testing.T, wait waitFn) {
	ann := idpToken(t, c.writer, "ann@brand-a.example")
	var me struct {
		ID string `json:"id"`
	}
	c.writer.get("/api/v1/auth/me", ann).json(t, &me)
	tA, tB, tC := c.tenants["Brand A"], c.tenants["Brand B"], c.tenants["Brand C"]

	t.Run("tenant assignment", func(t *testing.T) {
		c.wantSees(t, c.reader, "ann by her group", ann, "Brand A")
		c.send(t, http.MethodPut, "/api/v1/tenants/"+tC.ID+"/members/"+me.ID, nil, http.StatusOK)
		wait(t, "ann sees the tenant she was assigned", func() bool { return c.sees(t, c.reader, ann, "Brand A", "Brand C") })
		c.send(t, http.MethodDelete, "/api/v1/tenants/"+tC.ID+"/members/"+me.ID, nil, http.StatusNoContent)
		wait(t, "ann no longer sees the tenant she was unassigned from", func() bool { return c.sees(t, c.reader, ann, "Brand A") })
	})
	t.Run("access groups", func(t *testing.T) {
		c.send(t, http.MethodPatch, "/api/v1/tenants/"+tB.ID, map[string]any{"access_groups": []string{"grp-b", "grp-a"}}, http.StatusOK)
		wait(t, "ann sees a tenant her group was given", func() bool { return c.sees(t, c.reader, ann, "Brand A", "Brand B") })
		c.send(t, http.MethodPatch, "/api/v1/tenants/"+tA.ID, map[string]any{"access_groups": []string{}}, http.StatusOK)
		wait(t, "ann loses a tenant her group was removed from", func() bool { return c.sees(t, c.reader, ann, "Brand B") })
	})
	t.Run("tenant deactivation", func(t *testing.T) {
		c.wantSees(t, c.reader, "the admin", c.admin, "Brand A", "Brand B", "Brand C")
		c.send(t, http.MethodDelete, "/api/v1/tenants/"+tB.ID, nil, http.StatusNoContent)
		wait(t, "ann loses the deactivated tenant", func() bool { return c.sees(t, c.reader, ann) })
		wait(t, "the admin loses the deactivated tenant", func() bool { return c.sees(t, c.reader, c.admin, "Brand A", "Brand C") })
	})
	t.Run("logout", func(t *testing.T) {
		session := c.writer.signIn()
		if !c.accepted(t, session.AccessToken) {
			t.Fatal("a fresh access token is refused")
		}
		r := c.writer.do(http.MethodPost, "/api/v1/auth/logout", session.AccessToken, nil)
		wantStatus(t, "logout", r, http.StatusOK)
		wait(t, "the logged-out access token is refused", func() bool { return !c.accepted(t, session.AccessToken) })
	})
	t.Run("revoked refresh family", func(t *testing.T) {
		first := c.writer.signIn()
		r := c.writer.refreshJSON(first.RefreshToken)
		wantStatus(t, "refresh", r, http.StatusOK)
		var second tokenPair
		r.json(t, &second)
		for _, tok := range []string{first.AccessToken, second.AccessToken} {
			if !c.accepted(t, tok) {
				t.Fatal("an access token of a live sign-in is refused")
			}
		}
		// A spent refresh token presented again revokes the whole family.
		wantStatus(t, "replayed refresh token", c.writer.refreshJSON(first.RefreshToken), http.StatusUnauthorized)
		wait(t, "the family's first access token is refused", func() bool { return !c.accepted(t, first.AccessToken) })
		wait(t, "the family's newest access token is refused", func() bool { return !c.accepted(t, second.AccessToken) })
	})
}

// idpToken signs in through the host's simulated identity provider and
// returns the access token.
func idpToken(t *testing.T, h *host, email string) string {
	t.Helper()
	_, cb := authorize(t, h, email)
	r := postCallback(t, h, cb)
	if r.status != http.StatusOK {
		t.Fatalf("callback for %s: %d %s", email, r.status, r.body)
	}
	var tok tokenPair
	r.json(t, &tok)
	return tok.AccessToken
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
