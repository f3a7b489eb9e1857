package apikeys_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/apikeys"
	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/tenancy"
)

type created struct {
	apikeys.Key
	Secret string `json:"key"`
}

func TestAPIKeyRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	admin := h.Login()
	own := h.Tenant("Own", "dir-own")
	h.Tenant("Other", "dir-other")
	_, user := h.User("user@own.example", own)

	// as sends a request with an API key.
	as := func(key, method, path, body string) apptest.Answer {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return h.Send(req)
	}
	create := func(token, body string) created {
		t.Helper()
		var k created
		if a := h.JSON(http.MethodPost, "/api/v1/api-keys", token, body); a.Expect(t, "create "+body, http.StatusCreated) {
			a.Decode(t, &k)
		}
		return k
	}
	tenantNames := func(key string) []string {
		t.Helper()
		var ts []tenancy.Tenant
		if a := as(key, http.MethodGet, "/api/v1/tenants", ""); a.Expect(t, "tenants with a key", http.StatusOK) {
			a.Decode(t, &ts)
		}
		var out []string
		for _, tn := range ts {
			out = append(out, tn.Name)
		}
		return out
	}

	adminKey := create(admin, `{"name":"ci","role":"admin"}`)
	if !strings.HasPrefix(adminKey.Secret, "stw_"+adminKey.ID+"_") || adminKey.Role != apikeys.RoleAdmin || adminKey.CreatedBy == "" {
		t.Fatalf("admin key: %+v", adminKey)
	}
	if es := h.Audit("apikey.create.success"); len(es) != 1 || es[0].ResourceID != adminKey.ID || es[0].ActorEmail != apptest.AdminEmail || es[0].Details["role"] != "admin" {
		t.Errorf("create audit: %+v", es)
	}

	t.Run("a key acts with its role and scope", func(t *testing.T) {
		if got := tenantNames(adminKey.Secret); len(got) != 2 {
			t.Errorf("an admin key sees %v", got)
		}
		// A key an admin key creates names it as its creator, as its audit
		// entry does.
		var std created
		if a := as(adminKey.Secret, http.MethodPost, "/api/v1/api-keys", `{"name":"reader","role":"standard","tenant_ids":["`+own.ID+`"]}`); a.Expect(t, "create with a key", http.StatusCreated) {
			a.Decode(t, &std)
		}
		if std.CreatedBy != "apikey:"+adminKey.ID {
			t.Errorf("created by %q, want apikey:%s", std.CreatedBy, adminKey.ID)
		}
		if es := h.Audit("apikey.create.success"); len(es) != 2 || es[0].ActorID != "apikey:"+adminKey.ID {
			t.Errorf("create audit by a key: %+v", es)
		}
		if got := tenantNames(std.Secret); len(got) != 1 || got[0] != "Own" {
			t.Errorf("a standard key sees %v", got)
		}
		as(std.Secret, http.MethodGet, "/api/v1/api-keys", "").Expect(t, "list with a standard key", http.StatusForbidden)
	})

	t.Run("list shows no secret", func(t *testing.T) {
		a := h.Do(http.MethodGet, "/api/v1/api-keys", admin, "", "")
		var keys []apikeys.Key
		if a.Expect(t, "list", http.StatusOK) {
			a.Decode(t, &keys)
		}
		if len(keys) != 2 || strings.Contains(string(a.Body), adminKey.Secret) || strings.Contains(string(a.Body), "secret") {
			t.Errorf("list: %s", a.Body)
		}
	})

	t.Run("invalid keys are refused with the field named", func(t *testing.T) {
		for body, location := range map[string]string{
			`{"name":"k","role":"standard"}`:                                  "body.tenant_ids",
			`{"name":"k","role":"admin","tenant_ids":["` + own.ID + `"]}`:     "body.tenant_ids",
			`{"name":"k","role":"standard","tenant_ids":["no-such-tenant"]}`:  "body.tenant_ids[0]",
			`{"name":"k","role":"admin","expires_at":"2001-01-01T00:00:00Z"}`: "body.expires_at",
			`{"name":"k","role":"owner"}`:                                     "body.role",
			`{"name":"","role":"admin"}`:                                      "body.name",
		} {
			if a := h.JSON(http.MethodPost, "/api/v1/api-keys", admin, body); a.Expect(t, body, http.StatusUnprocessableEntity) && !a.Problem(t).Names(location) {
				t.Errorf("%s: %s does not name %s", body, a.Body, location)
			}
		}
	})

	t.Run("only admins manage keys", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{http.MethodPost, "/api/v1/api-keys", `{"name":"k","role":"admin"}`},
			{http.MethodGet, "/api/v1/api-keys", ""},
			{http.MethodDelete, "/api/v1/api-keys/" + adminKey.ID, ""},
		} {
			h.JSON(r.method, r.path, user, r.body).Expect(t, r.method+" "+r.path+" as a standard user", http.StatusForbidden)
			h.JSON(r.method, r.path, "", r.body).Expect(t, r.method+" "+r.path+" anonymous", http.StatusUnauthorized)
		}
	})

	t.Run("a revoked key is refused", func(t *testing.T) {
		h.Do(http.MethodDelete, "/api/v1/api-keys/"+adminKey.ID, admin, "", "").Expect(t, "revoke", http.StatusNoContent)
		a := as(adminKey.Secret, http.MethodGet, "/api/v1/tenants", "")
		if a.Expect(t, "a revoked key", http.StatusUnauthorized) && a.Problem(t).Detail != apikeys.ErrRevoked.Error() {
			t.Errorf("a revoked key: %s", a.Body)
		}
		h.Do(http.MethodDelete, "/api/v1/api-keys/"+adminKey.ID, admin, "", "").Expect(t, "revoke again", http.StatusNoContent)
		if es := h.Audit("apikey.revoke.success"); len(es) != 2 || es[0].ResourceID != adminKey.ID {
			t.Errorf("revoke audit: %+v", es)
		}
		h.Do(http.MethodDelete, "/api/v1/api-keys/no-such-key", admin, "", "").Expect(t, "revoke an unknown key", http.StatusNotFound)
	})
}
