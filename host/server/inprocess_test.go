package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/app"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/tenancy"
)

// inProcess is a host assembled by app.Start and served through fiber's
// in-memory Test, with no listener and no plugin: the server's own
// routing, middleware, validation and error mapping, fast enough to test
// case by case on both databases.
type inProcess struct {
	t    *testing.T
	host *app.Host
	dir  string
}

func startInProcess(t *testing.T, dialect string) *inProcess {
	t.Helper()
	dir := t.TempDir()
	hcl := filepath.Join(dir, "plugins.hcl")
	if err := os.WriteFile(hcl, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dbURL := "sqlite://" + filepath.Join(dir, "steward.db")
	if dialect == store.DialectPostgres {
		dbURL = storetest.PostgresURL(t)
	}
	env := map[string]string{
		"STEWARD_ENV": config.Development, "STEWARD_DATA_DIR": dir, "STEWARD_DATABASE_URL": dbURL,
		"STEWARD_PLUGINS_FILE": hcl, "STEWARD_SIM_BOOTSTRAP": "false", "STEWARD_ACCESS_LOG": "false",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	h, err := app.Start(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return &inProcess{t: t, host: h, dir: dir}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (p *inProcess) do(method, path, token, contentType, body string) answer {
	p.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := p.host.Server.App.Test(req, -1)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func (p *inProcess) login() string {
	p.t.Helper()
	form := url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}}.Encode()
	a := p.do(http.MethodPost, "/api/v1/auth/login", "", "application/x-www-form-urlencoded", form)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &tok) != nil || tok.AccessToken == "" {
		p.t.Fatalf("login: %d %s", a.status, a.body)
	}
	return tok.AccessToken
}

type problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Location string `json:"location"`
	} `json:"errors"`
}

func (a answer) problem(t *testing.T) problem {
	t.Helper()
	var p problem
	if a.header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(a.body, &p) != nil || p.Status != a.status {
		t.Fatalf("want a problem document with status %d: %v %s", a.status, a.header, a.body)
	}
	return p
}

// TestServerInProcess runs the host's own routes through the assembled
// middleware without a network, on each database.
func TestServerInProcess(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			p := startInProcess(t, dialect)
			admin := p.login()

			if a := p.do(http.MethodGet, "/health", "", "", ""); a.status != http.StatusOK || a.header.Get("X-Ratelimit-Limit") == "" || a.header.Get("X-Request-Id") == "" {
				t.Errorf("/health: %d %v", a.status, a.header)
			}
			var me struct {
				Email   string `json:"email"`
				IsAdmin bool   `json:"is_admin"`
			}
			if a := p.do(http.MethodGet, "/api/v1/auth/me", admin, "", ""); a.status != http.StatusOK || json.Unmarshal(a.body, &me) != nil || !me.IsAdmin || me.Email != "admin@steward.local" {
				t.Errorf("/api/v1/auth/me: %d %s", a.status, a.body)
			}
			if a := p.do(http.MethodGet, "/api/v1/auth/me", "", "", ""); a.status != http.StatusUnauthorized || a.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("/api/v1/auth/me without a token: %d %v", a.status, a.header)
			}

			// Validation: every failure is a 422 naming what is wrong.
			for _, c := range []struct{ method, path, ct, body, location string }{
				{http.MethodGet, "/api/v1/audit-logs?limit=0", "", "", "query.limit"},
				{http.MethodGet, "/api/v1/audit-logs?actor_email=a%00b", "", "", "query.actor_email"},
				{http.MethodPost, "/api/v1/auth/refresh", "application/json", "", "body"},
				{http.MethodPost, "/api/v1/api-keys", "application/json", `{"name":"k","role":"owner"}`, "body.role"},
			} {
				a := p.do(c.method, c.path, admin, c.ct, c.body)
				if a.status != http.StatusUnprocessableEntity {
					t.Errorf("%s %s: %d %s, want 422", c.method, c.path, a.status, a.body)
					continue
				}
				found := false
				for _, e := range a.problem(t).Errors {
					found = found || e.Location == c.location
				}
				if !found {
					t.Errorf("%s %s: %s does not name %s", c.method, c.path, a.body, c.location)
				}
			}

			// Routing is exact, and what is not routed is a problem 404.
			for _, path := range []string{"/API/v1/health", "/api/v1/health/", "/no/such/route"} {
				if a := p.do(http.MethodGet, path, "", "", ""); a.status != http.StatusNotFound {
					t.Errorf("GET %s: %d, want 404", path, a.status)
				} else {
					a.problem(t)
				}
			}

			// A standard user sees its own tenant and is refused another.
			ts := tenancy.New(p.host.DB)
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
			user := issue(t, p, u)
			if a := p.do(http.MethodGet, "/api/v1/tenants/"+own.ID, user, "", ""); a.status != http.StatusOK || !strings.Contains(string(a.body), own.ID) {
				t.Errorf("own tenant: %d %s", a.status, a.body)
			}
			a := p.do(http.MethodGet, "/api/v1/tenants/"+other.ID, user, "", "")
			if a.status != http.StatusForbidden || strings.Contains(string(a.body), other.ID) || strings.Contains(string(a.body), "Other") {
				t.Errorf("another tenant: %d %s, want 403 without a trace of it", a.status, a.body)
			}
			if a := p.do(http.MethodPost, "/api/v1/api-keys", user, "application/json", `{"name":"k","role":"admin"}`); a.status != http.StatusForbidden {
				t.Errorf("a standard user creating an API key: %d, want 403", a.status)
			}
		})
	}
}

// issue signs an access token for u with the host's development secret,
// as its sign-in does.
func issue(t *testing.T, p *inProcess, u tenancy.User) string {
	t.Helper()
	secret, err := os.ReadFile(filepath.Join(p.dir, auth.DevSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := app.SigningKeys(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := auth.NewIssuer(keys, time.Hour, time.Hour, "steward")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := iss.IssueAccess(api.Principal{ID: u.ID, Email: u.Email, Name: u.Name, Kind: api.KindUser})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
