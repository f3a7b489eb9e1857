package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

type apiKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	TenantIDs  []string   `json:"tenant_ids"`
	CreatedBy  string     `json:"created_by"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	Key        string     `json:"key"`
}

func TestAPIKeys(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			t.Run("scope and roles", f.testAPIKeyScope)
			t.Run("refused keys", f.testAPIKeyRefused)
			t.Run("validation", f.testAPIKeyValidation)
			t.Run("command line", f.testAPIKeyCLI)
		})
	}
}

// createKey creates a key through the API with the given bearer token.
func (f *fixture) createKey(t *testing.T, token, body string) apiKey {
	t.Helper()
	r := f.h.do(http.MethodPost, "/api/v1/api-keys", token, strings.NewReader(body), "Content-Type", "application/json")
	if r.status != http.StatusCreated {
		t.Fatalf("create key %s: %d %s", body, r.status, r.body)
	}
	var k apiKey
	r.json(t, &k)
	if !strings.HasPrefix(k.Key, "stw_"+k.ID+"_") {
		t.Fatalf("created key %s", r.body)
	}
	return k
}

// withKey sends a request authenticated by an API key.
func (f *fixture) withKey(method, path, key string) response {
	return f.h.do(method, path, "", nil, "X-API-Key", key)
}

func tenantIDs(t *testing.T, r response) []string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("tenants: %d %s", r.status, r.body)
	}
	var ts []tenancy.Tenant
	r.json(t, &ts)
	var ids []string
	for _, tn := range ts {
		ids = append(ids, tn.ID)
	}
	return ids
}

func expectUnauthorized(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != http.StatusUnauthorized || r.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s: want a 401 problem, got %d %s %s", what, r.status, r.header.Get("Content-Type"), r.body)
	}
}

func (f *fixture) testAPIKeyScope(t *testing.T) {
	h := f.h
	std := f.createKey(t, f.admin, `{"name":"reporting","role":"standard","tenant_ids":["`+f.tenantA.ID+`"]}`)
	if std.Role != "standard" || !slices.Equal(std.TenantIDs, []string{f.tenantA.ID}) || std.CreatedBy == "" {
		t.Errorf("standard key %+v", std)
	}
	if ids := tenantIDs(t, f.withKey(http.MethodGet, "/api/v1/tenants", std.Key)); !slices.Equal(ids, []string{f.tenantA.ID}) {
		t.Errorf("standard key lists tenants %v, want only A", ids)
	}
	if r := f.withKey(http.MethodGet, "/api/v1/tenants/"+f.tenantB.ID, std.Key); r.status != http.StatusForbidden {
		t.Errorf("standard key reading tenant B: %d %s", r.status, r.body)
	}
	if r := f.withKey(http.MethodGet, "/api/v1/tenants/"+f.tenantA.ID, std.Key); r.status != http.StatusOK {
		t.Errorf("standard key reading tenant A: %d %s", r.status, r.body)
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if r := f.withKey(m, "/api/v1/api-keys", std.Key); r.status != http.StatusForbidden {
			t.Errorf("standard key %s /api/v1/api-keys: %d %s", m, r.status, r.body)
		}
	}
	if r := f.withKey(http.MethodPost, "/api/v1/sync/testplugin", std.Key); r.status != http.StatusForbidden {
		t.Errorf("standard key triggering a sync: %d %s", r.status, r.body)
	}

	adm := f.createKey(t, f.admin, `{"name":"automation","role":"admin"}`)
	ids := tenantIDs(t, f.withKey(http.MethodGet, "/api/v1/tenants", adm.Key))
	if !slices.Contains(ids, f.tenantA.ID) || !slices.Contains(ids, f.tenantB.ID) {
		t.Errorf("admin key lists tenants %v, want A and B", ids)
	}
	if r := f.withKey(http.MethodPost, "/api/v1/sync/testplugin", adm.Key); r.status != http.StatusAccepted {
		t.Fatalf("admin key triggering a sync: %d %s", r.status, r.body)
	}
	// An admin key may manage keys itself; what it creates is attributed to it.
	r := h.do(http.MethodPost, "/api/v1/api-keys", "", strings.NewReader(`{"name":"child","role":"admin"}`), "X-API-Key", adm.Key, "Content-Type", "application/json")
	if r.status != http.StatusCreated {
		t.Fatalf("admin key creating a key: %d %s", r.status, r.body)
	}
	var child apiKey
	r.json(t, &child)
	if child.CreatedBy != "apikey:"+adm.ID {
		t.Errorf("child key created_by %q, want apikey:%s", child.CreatedBy, adm.ID)
	}

	var page auditPage
	h.get("/api/v1/audit-logs?limit=500&actor_id=apikey:"+adm.ID, f.admin).json(t, &page)
	actions := map[string]bool{}
	for _, e := range page.Items {
		actions[e.Action] = true
	}
	if !actions["sync.trigger.success"] || !actions["apikey.create.success"] {
		t.Errorf("audit entries of the admin key: %+v", page.Items)
	}
	h.get("/api/v1/audit-logs?limit=500&action_prefix=apikey.", f.admin).json(t, &page)
	created := 0
	for _, e := range page.Items {
		if e.Action == "apikey.create.success" && e.ActorID != "apikey:"+adm.ID {
			created++
		}
	}
	if created < 2 {
		t.Errorf("want apikey.create.success entries by the signed-in admin: %+v", page.Items)
	}

	list := h.get("/api/v1/api-keys", f.admin)
	if list.status != http.StatusOK {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	for _, secret := range []string{std.Key, adm.Key, child.Key, strings.TrimPrefix(std.Key, "stw_"+std.ID+"_")} {
		if strings.Contains(string(list.body), secret) {
			t.Fatalf("list shows a secret: %s", list.body)
		}
	}
	if strings.Contains(string(list.body), `"key"`) || strings.Contains(string(list.body), "hash") {
		t.Errorf("list shows key material: %s", list.body)
	}
	var keys []apiKey
	list.json(t, &keys)
	byID := map[string]apiKey{}
	for _, k := range keys {
		byID[k.ID] = k
	}
	if _, ok := byID[std.ID]; !ok || byID[adm.ID].LastUsedAt == nil {
		t.Errorf("listed keys %+v", keys)
	}

	if r := h.do(http.MethodDelete, "/api/v1/api-keys/"+std.ID, f.admin, nil); r.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	expectUnauthorized(t, "revoked key", f.withKey(http.MethodGet, "/api/v1/tenants", std.Key))
	if r := h.do(http.MethodDelete, "/api/v1/api-keys/0123456789abcdef", f.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("revoking an unknown key: %d %s", r.status, r.body)
	}
	h.get("/api/v1/audit-logs?action=apikey.revoke.success", f.admin).json(t, &page)
	if len(page.Items) == 0 || page.Items[0].ActorID != f.adminID(t) {
		t.Errorf("revocation audit entries: %+v", page.Items)
	}
}

// adminID is the internal id of the development admin.
func (f *fixture) adminID(t *testing.T) string {
	t.Helper()
	var me struct {
		ID string `json:"id"`
	}
	f.h.get("/api/v1/auth/me", f.admin).json(t, &me)
	return me.ID
}

func (f *fixture) testAPIKeyRefused(t *testing.T) {
	expires := time.Now().Add(2 * time.Second)
	k := f.createKey(t, f.admin, `{"name":"soon expired","role":"admin","expires_at":"`+expires.UTC().Format(time.RFC3339Nano)+`"}`)
	if r := f.withKey(http.MethodGet, "/api/v1/tenants", k.Key); r.status != http.StatusOK {
		t.Fatalf("key before expiry: %d %s", r.status, r.body)
	}
	// Used until it expires, so that the host holds it in its cache then:
	// expiry must apply all the same.
	for time.Now().Before(expires) {
		f.withKey(http.MethodGet, "/api/v1/tenants", k.Key)
		time.Sleep(50 * time.Millisecond)
	}
	expectUnauthorized(t, "expired key", f.withKey(http.MethodGet, "/api/v1/tenants", k.Key))

	secret := strings.TrimPrefix(k.Key, "stw_"+k.ID+"_")
	for name, key := range map[string]string{
		"garbage":      "garbage",
		"unknown id":   "stw_0123456789abcdef_" + secret,
		"wrong secret": "stw_" + k.ID + "_" + strings.Repeat("A", len(secret)),
		"truncated":    k.Key[:len(k.Key)-3],
	} {
		expectUnauthorized(t, name, f.withKey(http.MethodGet, "/api/v1/tenants", key))
		expectUnauthorized(t, name+" on a plugin route", f.withKey(http.MethodGet, "/api/v1/testplugin/items", key))
	}
	// A bad key is not excused by a good bearer token alongside it.
	expectUnauthorized(t, "garbage key with a token", f.h.do(http.MethodGet, "/api/v1/tenants", f.admin, nil, "X-API-Key", "garbage"))
}

func (f *fixture) testAPIKeyValidation(t *testing.T) {
	post := func(body string) response {
		return f.h.do(http.MethodPost, "/api/v1/api-keys", f.admin, strings.NewReader(body), "Content-Type", "application/json")
	}
	a := f.tenantA.ID
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	expectInvalid(t, post(`{"role":"admin"}`), "body.name")
	expectInvalid(t, post(`{"name":"k","role":"owner"}`), "body.role")
	expectInvalid(t, post(`{"name":"k","role":"standard","tenant_ids":["nope"]}`), "body.tenant_ids[0]")
	expectInvalid(t, post(`{"name":"k","role":"standard","tenant_ids":["`+a+`","00000000-0000-0000-0000-000000000000"]}`), "body.tenant_ids[1]")
	expectInvalid(t, post(`{"name":"k","role":"standard"}`), "body.tenant_ids")
	expectInvalid(t, post(`{"name":"k","role":"admin","tenant_ids":["`+a+`"]}`), "body.tenant_ids")
	expectInvalid(t, post(`{"name":"k","role":"admin","expires_at":"`+past+`"}`), "body.expires_at")
	expectInvalid(t, post(`{"name":"k","role":"admin","expires_at":"tomorrow"}`), "body.expires_at")
}

func (f *fixture) testAPIKeyCLI(t *testing.T) {
	steward := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "steward"), args...)
		cmd.Env = append(os.Environ(), "STEWARD_ENV=development", "STEWARD_DATA_DIR="+f.h.dataDir, "STEWARD_DATABASE_URL="+f.h.dbURL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("steward %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := steward("apikey", "create", "--name", "from cli", "--role", "standard", "--tenant", f.tenantA.ID, "--expires", "720h")
	var key string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "stw_") {
			key = strings.TrimSpace(line)
		}
	}
	if key == "" {
		t.Fatalf("create printed no key:\n%s", out)
	}
	if ids := tenantIDs(t, f.withKey(http.MethodGet, "/api/v1/tenants", key)); !slices.Equal(ids, []string{f.tenantA.ID}) {
		t.Errorf("CLI key lists tenants %v, want only A", ids)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(key, "stw_"), "_")
	if list := steward("apikey", "list"); !strings.Contains(list, id) || !strings.Contains(list, "from cli") || strings.Contains(list, key) {
		t.Errorf("apikey list:\n%s", list)
	}
	steward("apikey", "revoke", id)
	// The running host has the key cached; without Redis nothing tells it
	// of the command's write, and the entry's short life bounds the wait.
	withinASecond(t, "key revoked from the command line is refused", func() bool {
		return f.withKey(http.MethodGet, "/api/v1/tenants", key).status == http.StatusUnauthorized
	})
	expectUnauthorized(t, "key revoked from the command line", f.withKey(http.MethodGet, "/api/v1/tenants", key))
}
