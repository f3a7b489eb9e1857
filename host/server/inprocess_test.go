package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/tenancy"
)

// TestServerInProcess runs the host's own routes through the assembled
// middleware without a network, on each database.
func TestServerInProcess(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			p := apptest.Start(t, apptest.Options{Dialect: dialect})
			admin := p.Login()

			if a := p.Do(http.MethodGet, "/health", "", "", ""); a.Status != http.StatusOK || a.Header.Get("X-Ratelimit-Limit") == "" || a.Header.Get("X-Request-Id") == "" {
				t.Errorf("/health: %d %v", a.Status, a.Header)
			}
			var me struct {
				Email   string `json:"email"`
				IsAdmin bool   `json:"is_admin"`
			}
			if a := p.Do(http.MethodGet, "/api/v1/auth/me", admin, "", ""); a.Status != http.StatusOK || json.Unmarshal(a.Body, &me) != nil || !me.IsAdmin || me.Email != "admin@steward.local" {
				t.Errorf("/api/v1/auth/me: %d %s", a.Status, a.Body)
			}
			if a := p.Do(http.MethodGet, "/api/v1/auth/me", "", "", ""); a.Status != http.StatusUnauthorized || a.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("/api/v1/auth/me without a token: %d %v", a.Status, a.Header)
			}

			// Validation: every failure is a 422 naming what is wrong.
			for _, c := range []struct{ method, path, ct, body, location string }{
				{http.MethodGet, "/api/v1/audit-logs?limit=0", "", "", "query.limit"},
				{http.MethodGet, "/api/v1/audit-logs?actor_email=a%00b", "", "", "query.actor_email"},
				{http.MethodPost, "/api/v1/auth/refresh", "application/json", "", "body"},
				{http.MethodPost, "/api/v1/api-keys", "application/json", `{"name":"k","role":"owner"}`, "body.role"},
				// A body that does not parse, as JSON or as a form, is no
				// 400 either, and is not repeated: it may hold a secret.
				{http.MethodPost, "/api/v1/auth/refresh", "application/json", `{"refresh_token":"s3cret-token"`, "body"},
				{http.MethodPost, "/api/v1/api-keys", "application/json", `{"name":"s3cret-token",]`, "body"},
				{http.MethodPost, "/api/v1/auth/login", "application/x-www-form-urlencoded", "username=a&password=s3cret-token%zz", "body"},
			} {
				a := p.Do(c.method, c.path, admin, c.ct, c.body)
				if a.Status != http.StatusUnprocessableEntity || a.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s %s: %d %s %s, want a 422 problem", c.method, c.path, a.Status, a.Header.Get("Content-Type"), a.Body)
					continue
				}
				if !a.Problem(t).Names(c.location) {
					t.Errorf("%s %s: %s does not name %s", c.method, c.path, a.Body, c.location)
				}
				if strings.Contains(string(a.Body), "s3cret-token") {
					t.Errorf("%s %s: %s repeats the body", c.method, c.path, a.Body)
				}
			}

			// A 204 has no body, so no Content-Type either.
			var key struct {
				ID string `json:"id"`
			}
			if a := p.Do(http.MethodPost, "/api/v1/api-keys", admin, "application/json", `{"name":"revoked","role":"admin"}`); a.Status != http.StatusCreated || json.Unmarshal(a.Body, &key) != nil {
				t.Fatalf("create an API key: %d %s", a.Status, a.Body)
			}
			if a := p.Do(http.MethodDelete, "/api/v1/api-keys/"+key.ID, admin, "", ""); a.Status != http.StatusNoContent || len(a.Body) != 0 || a.Header.Get("Content-Type") != "" {
				t.Errorf("revoke an API key: %d %q, Content-Type %q; want 204 without either", a.Status, a.Body, a.Header.Get("Content-Type"))
			}

			// Routing is exact, and what is not routed is a problem 404.
			for _, path := range []string{"/API/v1/health", "/api/v1/health/", "/no/such/route"} {
				if a := p.Do(http.MethodGet, path, "", "", ""); a.Status != http.StatusNotFound {
					t.Errorf("GET %s: %d, want 404", path, a.Status)
				} else {
					a.Problem(t)
				}
			}

			// A standard user sees its own tenant and is refused another.
			ts := tenancy.New(p.DB)
			ctx := context.Background()
			own := tenancy.Tenant{Name: "Own", DirectoryTenantID: "dir-own-" + dialect, AccessGroups: []string{"grp-own"}, IsActive: true}
			other := tenancy.Tenant{Name: "Other", DirectoryTenantID: "dir-other-" + dialect, AccessGroups: []string{"grp-other"}, IsActive: true}
			for _, tn := range []*tenancy.Tenant{&own, &other} {
				if err := ts.CreateTenant(ctx, tn); err != nil {
					t.Fatal(err)
				}
			}
			u := tenancy.User{DirectoryTenantID: own.DirectoryTenantID, Subject: "oid-user", Email: "user@own.example", Groups: []string{"grp-own"}}
			if err := ts.UpsertUser(ctx, &u); err != nil {
				t.Fatal(err)
			}
			user := p.Token(u)
			if a := p.Do(http.MethodGet, "/api/v1/tenants/"+own.ID, user, "", ""); a.Status != http.StatusOK || !strings.Contains(string(a.Body), own.ID) {
				t.Errorf("own tenant: %d %s", a.Status, a.Body)
			}
			a := p.Do(http.MethodGet, "/api/v1/tenants/"+other.ID, user, "", "")
			if a.Status != http.StatusForbidden || strings.Contains(string(a.Body), other.ID) || strings.Contains(string(a.Body), "Other") {
				t.Errorf("another tenant: %d %s, want 403 without a trace of it", a.Status, a.Body)
			}
			if a := p.Do(http.MethodPost, "/api/v1/api-keys", user, "application/json", `{"name":"k","role":"admin"}`); a.Status != http.StatusForbidden {
				t.Errorf("a standard user creating an API key: %d, want 403", a.Status)
			}
		})
	}
}
