// Package apptest starts a host in process for the tests of its routes: the
// host app.Start assembles — store, middleware, validation, error mapping
// and every domain's handlers — served through fiber's in-memory Test, with
// no listener and no plugin, on a SQLite file (or the test PostgreSQL
// server) and the simulated cloud. Each domain tests its handlers with it
// beside them, against the real stores.
package apptest

import (
	"context"
	"encoding/json"
	"io"
	"maps"
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
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/tenancy"
)

// Development sign-in of every host Start starts.
const (
	AdminEmail    = "admin@steward.local"
	AdminPassword = "steward-dev"
)

// Options tune Start.
type Options struct {
	// Dialect is store.DialectSQLite (the default) or store.DialectPostgres.
	Dialect string
	// Env adds to or overrides the host's environment.
	Env map[string]string
}

// Host is a host started for one test.
type Host struct {
	*app.Host
	t   testing.TB
	dir string
}

// Start starts a development host, stopped when t ends. Its rate limits
// are high enough for a test's requests unless Env sets them.
func Start(t testing.TB, o Options) *Host {
	t.Helper()
	dir := t.TempDir()
	hcl := filepath.Join(dir, "plugins.hcl")
	if err := os.WriteFile(hcl, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dbURL := "sqlite://" + filepath.Join(dir, "steward.db")
	if o.Dialect == store.DialectPostgres {
		dbURL = storetest.PostgresURL(t)
	}
	env := map[string]string{
		"STEWARD_ENV": config.Development, "STEWARD_DATA_DIR": dir, "STEWARD_DATABASE_URL": dbURL,
		"STEWARD_PLUGINS_FILE": hcl, "STEWARD_SIM_BOOTSTRAP": "false", "STEWARD_ACCESS_LOG": "false",
		"STEWARD_RATE_LIMIT_PER_MINUTE": "10000", "STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "10000", "STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE": "10000", "STEWARD_UI_RATE_LIMIT_PER_MINUTE": "10000",
	}
	maps.Copy(env, o.Env)
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	h, err := app.Start(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return &Host{Host: h, t: t, dir: dir}
}

// Answer is a response, read whole.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a request, with a bearer token unless token is empty and a
// Content-Type unless contentType is.
func (h *Host) Do(method, path, token, contentType, body string) Answer {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return h.Send(req)
}

// Send sends a request as it is.
func (h *Host) Send(req *http.Request) Answer {
	h.t.Helper()
	resp, err := h.Server.App.Test(req, -1)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// JSON sends a JSON body.
func (h *Host) JSON(method, path, token, body string) Answer {
	h.t.Helper()
	return h.Do(method, path, token, "application/json", body)
}

// Form sends a form.
func (h *Host) Form(path, token string, form url.Values) Answer {
	h.t.Helper()
	return h.Do(http.MethodPost, path, token, "application/x-www-form-urlencoded", form.Encode())
}

// Login signs in as the development admin and returns its access token.
func (h *Host) Login() string {
	h.t.Helper()
	a := h.Form("/api/v1/auth/login", "", url.Values{"username": {AdminEmail}, "password": {AdminPassword}})
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &tok) != nil || tok.AccessToken == "" {
		h.t.Fatalf("login: %d %s", a.Status, a.Body)
	}
	return tok.AccessToken
}

// Token signs an access token for u with the host's signing secret, as
// its sign-in does.
func (h *Host) Token(u tenancy.User) string {
	h.t.Helper()
	secret, err := os.ReadFile(filepath.Join(h.dir, auth.DevSecretFile))
	if err != nil {
		h.t.Fatal(err)
	}
	keys, err := app.SigningKeys(secret, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	iss, err := auth.NewIssuer(keys, time.Hour, time.Hour, "steward")
	if err != nil {
		h.t.Fatal(err)
	}
	tok, _, err := iss.IssueAccess(api.Principal{ID: u.ID, Email: u.Email, Name: u.Name, Roles: u.Roles, IsAdmin: u.IsAdmin, Kind: api.KindUser})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// Tenant creates an active tenant whose access group is its directory id,
// so that a user in that group sees it.
func (h *Host) Tenant(name, directory string) tenancy.Tenant {
	h.t.Helper()
	t := tenancy.Tenant{Name: name, DirectoryTenantID: directory, AccessGroups: []string{"grp-" + directory}, IsActive: true}
	if err := tenancy.New(h.DB).CreateTenant(context.Background(), &t); err != nil {
		h.t.Fatal(err)
	}
	return t
}

// User creates a standard user who sees the tenants given, through their
// access groups, and returns it with an access token.
func (h *Host) User(email string, sees ...tenancy.Tenant) (tenancy.User, string) {
	h.t.Helper()
	u := tenancy.User{DirectoryTenantID: "dir-users", Subject: "oid-" + email, Email: email, Name: email, Roles: []string{}}
	for _, t := range sees {
		u.Groups = append(u.Groups, t.AccessGroups...)
	}
	if err := tenancy.New(h.DB).UpsertUser(context.Background(), &u); err != nil {
		h.t.Fatal(err)
	}
	return u, h.Token(u)
}

// Audit lists the audit entries with the action given, newest first.
func (h *Host) Audit(action string) []audit.Entry {
	h.t.Helper()
	es, _, err := audit.NewStore(h.DB).List(context.Background(), audit.Filter{Action: action, Limit: audit.MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	return es
}

// Problem is an RFC 9457 problem document.
type Problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Location string `json:"location"`
		Message  string `json:"message"`
	} `json:"errors"`
}

// Problem decodes a problem document answered with a, failing t unless a
// is one with a's status.
func (a Answer) Problem(t testing.TB) Problem {
	t.Helper()
	var p Problem
	if a.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(a.Body, &p) != nil || p.Status != a.Status {
		t.Fatalf("want a problem document with status %d: %v %s", a.Status, a.Header, a.Body)
	}
	return p
}

// Names reports whether the problem names the location given among its
// errors ("body.name", "query.limit").
func (p Problem) Names(location string) bool {
	for _, e := range p.Errors {
		if e.Location == location {
			return true
		}
	}
	return false
}

// Decode decodes a JSON body into v, failing t when it is not one.
func (a Answer) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Body, v); err != nil {
		t.Fatalf("%d %s: %v", a.Status, a.Body, err)
	}
}

// Expect fails t unless a has the status given, and says what came instead.
func (a Answer) Expect(t testing.TB, what string, status int) bool {
	t.Helper()
	if a.Status != status {
		t.Errorf("%s: %d %s, want %d", what, a.Status, a.Body, status)
		return false
	}
	return true
}
