package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

type problemBody struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Location string `json:"location"`
		Message  string `json:"message"`
	} `json:"errors"`
}

// TestControlCharactersAre422: a NUL or other control character in a
// query, path or body value is refused with 422 naming the field, on host
// and plugin routes alike, and nothing is written.
func TestControlCharactersAre422(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			h := f.h
			cases := []struct {
				method, path, body, ct, token, location string
			}{
				{http.MethodGet, "/api/v1/audit-logs?actor_email=a%00b", "", "", f.admin, "query.actor_email"},
				{http.MethodGet, "/api/v1/audit-logs?tenant_id=" + f.tenantA.ID + "%00", "", "", f.admin, "query.tenant_id"},
				{http.MethodGet, "/api/v1/audit-logs?action=x%1b%5b31m", "", "", f.admin, "query.action"},
				{http.MethodGet, "/api/v1/tenants/" + f.tenantA.ID + "%00/members", "", "", f.admin, "path.tenant_id"},
				{http.MethodPost, "/api/v1/api-keys", `{"name":"ci\u0000key","role":"standard","tenant_ids":["` + f.tenantA.ID + `"]}`, "application/json", f.admin, "body.name"},
				{http.MethodPost, "/api/v1/api-keys", `{"name":"ok","role":"standard","tenant_ids":["` + f.tenantA.ID + `\u0007"]}`, "application/json", f.admin, "body.tenant_ids[0]"},
				{http.MethodPost, "/api/v1/auth/login", "username=admin%40steward.local%00&password=steward-dev", "application/x-www-form-urlencoded", "", "body.username"},
				{http.MethodGet, "/api/v1/testplugin/items?tenant_id=" + f.tenantA.ID + "%00", "", "", f.tokenA, "query.tenant_id"},
			}
			for _, c := range cases {
				var hdr []string
				if c.ct != "" {
					hdr = []string{"Content-Type", c.ct}
				}
				r := h.do(c.method, c.path, c.token, strings.NewReader(c.body), hdr...)
				if r.status != http.StatusUnprocessableEntity {
					t.Errorf("%s %s: %d %s, want 422", c.method, c.path, r.status, r.body)
					continue
				}
				var p problemBody
				r.json(t, &p)
				if !slices.ContainsFunc(p.Errors, func(e struct {
					Location string `json:"location"`
					Message  string `json:"message"`
				}) bool {
					return e.Location == c.location
				}) {
					t.Errorf("%s %s: errors %s do not name %s", c.method, c.path, r.body, c.location)
				}
			}
			var keys []json.RawMessage
			h.get("/api/v1/api-keys", f.admin).json(t, &keys)
			if len(keys) != 0 {
				t.Errorf("a refused key was stored: %s", keys)
			}
			// Line breaks and tabs are text, not control, in a body.
			r := h.do(http.MethodPost, "/api/v1/api-keys", f.admin, strings.NewReader(`{"name":"two\nlines\tand a tab","role":"standard","tenant_ids":["`+f.tenantA.ID+`"]}`), "Content-Type", "application/json")
			if r.status != http.StatusCreated {
				t.Errorf("a name with a line break: %d %s", r.status, r.body)
			}
		})
	}
}

// TestInternalErrorsStayInTheLog: an unexpected failure answers 500 with
// the request id and no internal text; the log has the cause beside the id.
func TestInternalErrorsStayInTheLog(t *testing.T) {
	h := startHost(t, hostOpts{databaseURL: storetest.PostgresURL(t)})
	admin := h.login()
	if _, err := h.db().ExecContext(context.Background(), "DROP TABLE api_keys"); err != nil {
		t.Fatal(err)
	}
	r := h.get("/api/v1/api-keys", admin)
	if r.status != http.StatusInternalServerError {
		t.Fatalf("listing from a dropped table: %d %s", r.status, r.body)
	}
	id := r.header.Get("X-Request-Id")
	var p problemBody
	r.json(t, &p)
	if id == "" || !strings.Contains(p.Detail, id) || len(p.Errors) != 0 {
		t.Errorf("500 body %s should name request id %q and nothing else", r.body, id)
	}
	for _, leak := range []string{"api_keys", "relation", "SQLSTATE", "does not exist"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("500 body leaks %q: %s", leak, r.body)
		}
	}
	h.waitFor("the cause in the log", 5e9, func() bool {
		for _, line := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(line, id) && strings.Contains(line, "api_keys") {
				return true
			}
		}
		return false
	})
}

// TestPluginPathParametersAre422: a plugin's path parameter is checked
// as the plugin would read it, decoded: a NUL, another control character
// or invalid UTF-8 sent percent-encoded is the host's 422 naming
// path.<parameter>, on every route and database, and never reaches the
// plugin (whose database refuses a NUL with a 500).
func TestPluginPathParametersAre422(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			o := hostOpts{pluginsHCL: dmarcPlugins("") + defaultPlugins()}
			if dialect == store.DialectPostgres {
				o.databaseURL = storetest.PostgresURL(t)
			}
			h := startHost(t, o)
			admin := h.login()
			for _, c := range []struct{ method, path string }{
				{http.MethodGet, "/api/v1/dmarc/domains/%00"},
				{http.MethodGet, "/api/v1/dmarc/domains/a%00b"},
				{http.MethodGet, "/api/v1/dmarc/domains/%1b%5b31m"},
				{http.MethodGet, "/api/v1/dmarc/domains/%ff%fe"},
				{http.MethodGet, "/api/v1/dmarc/domains/%00/history"},
				{http.MethodDelete, "/api/v1/dmarc/domains/%00"},
			} {
				r := h.do(c.method, c.path, admin, nil)
				expectInvalid(t, r, "path.domain_id")
				if !strings.Contains(string(r.body), "must be UTF-8 text without control characters") {
					t.Errorf("%s %s: %s", c.method, c.path, r.body)
				}
			}
			if r := h.get("/api/v1/dmarc/domains/no-such-domain", admin); r.status != http.StatusNotFound {
				t.Errorf("an unknown domain id: %d %s, want 404", r.status, r.body)
			}
		})
	}
}
