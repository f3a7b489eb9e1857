package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

type fixture struct {
	h                *host
	admin            string
	tenantA, tenantB tenancy.Tenant
	userA            tenancy.User
	tokenA           string
}

// newFixture starts a host on the dialect and arranges two tenants and a
// standard user who may see only tenant A.
func newFixture(t *testing.T, dialect string) *fixture {
	return newFixtureOn(t, dialect, hostOpts{})
}

// newFixtureOn is newFixture with the host's options, such as its plugins.
func newFixtureOn(t *testing.T, dialect string, o hostOpts) *fixture {
	if dialect == "postgres" {
		o.databaseURL = storetest.PostgresURL(t)
	}
	f := &fixture{h: startHost(t, o)}
	f.admin = f.h.login()
	db := f.h.db()
	ts := tenancy.New(db)
	ctx := context.Background()
	f.tenantA = tenancy.Tenant{Name: "Brand A", DirectoryTenantID: "dir-a-" + dialect, SubscriptionID: "sub-a", AccessGroups: []string{"grp-a"}, IsActive: true}
	f.tenantB = tenancy.Tenant{Name: "Brand B", DirectoryTenantID: "dir-b-" + dialect, SubscriptionID: "sub-b", AccessGroups: []string{"grp-b"}, IsActive: true}
	for _, tn := range []*tenancy.Tenant{&f.tenantA, &f.tenantB} {
		if err := ts.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	f.userA = tenancy.User{DirectoryTenantID: f.tenantA.DirectoryTenantID, Subject: "oid-alice", Email: "alice@brand-a.example", Name: "Alice", Groups: []string{"grp-a"}}
	if err := ts.UpsertUser(ctx, &f.userA); err != nil {
		t.Fatal(err)
	}
	f.tokenA = f.h.tokenFor(f.userA)
	return f
}

func TestHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			// The walks below call every operation twice; the budget is
			// raised so the rate limit does not answer them in place.
			f := newFixtureOn(t, dialect, hostOpts{env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
			t.Run("health openapi metrics", f.testBasics)
			t.Run("plugin is a child and sees the principal", f.testPrincipal)
			t.Run("validation", f.testValidation)
			t.Run("protected routes need a token", f.testUnauthenticated)
			t.Run("admin routes refuse a standard user", f.testAdminOnly)
			t.Run("tenant isolation", f.testIsolation)
			t.Run("sync jobs and alerts", f.testSync)
			t.Run("audit log", f.testAudit)
		})
	}
}

func (f *fixture) testBasics(t *testing.T) {
	h := f.h
	r := h.get("/health", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"healthy"`) {
		t.Fatalf("/health: %d %s", r.status, r.body)
	}
	for _, hdr := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy", "X-Request-Id"} {
		if r.header.Get(hdr) == "" {
			t.Errorf("/health lacks %s", hdr)
		}
	}
	// HSTS only where the client reached Steward over TLS: plain HTTP here,
	// HTTPS as a proxy in front reports it (the host's own TLS is
	// TestTLS's).
	if v := r.header.Get("Strict-Transport-Security"); v != "" {
		t.Errorf("Strict-Transport-Security %q over plain HTTP", v)
	}
	if v := h.do(http.MethodGet, "/health", "", nil, "X-Forwarded-Proto", "https").header.Get("Strict-Transport-Security"); !strings.Contains(v, "max-age=") {
		t.Errorf("Strict-Transport-Security %q behind a proxy that says https; want one with max-age", v)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	h.get("/openapi.json", "").json(t, &doc)
	if doc.Info.Version != "2.5.0" || !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %s version %s", doc.OpenAPI, doc.Info.Version)
	}
	for _, p := range []string{"/api/v1/audit-logs", "/api/v1/sync/history", "/api/v1/testplugin/items"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("openapi lacks %s (plugin operations must be merged)", p)
		}
	}
	docs := h.get("/docs", "")
	if docs.status != 200 || !strings.Contains(string(docs.body), `apiDescriptionUrl="/openapi.json"`) {
		t.Errorf("/docs: %d", docs.status)
	}
	m := h.get("/metrics", "")
	for _, name := range []string{"steward_http_requests_total", "steward_plugin_state", "steward_plugin_rpc_duration_seconds", "steward_cache_hit_rate_percent", "go_sql_open_connections"} {
		if !strings.Contains(string(m.body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	var api struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}
	h.get("/api/v1/health", "").json(t, &api)
	if api.Status != "healthy" || api.Version != "" {
		t.Errorf("anonymous /api/v1/health must say healthy and hide the version: %+v", api)
	}
	h.get("/api/v1/health", f.admin).json(t, &api)
	if api.Version == "" {
		t.Errorf("authenticated /api/v1/health must show the version")
	}
	d := h.get("/health/detailed", "")
	if strings.Contains(string(d.body), "go_version") || strings.Contains(string(d.body), "plugins") {
		t.Errorf("anonymous detailed health leaks internals: %s", d.body)
	}
	for _, key := range []string{"components", "cache_metrics", "database_pool", "token_blacklist"} {
		if !strings.Contains(string(d.body), key) {
			t.Errorf("/health/detailed lacks %s: %s", key, d.body)
		}
	}
	ad := h.get("/api/v1/health/detailed", f.admin)
	if !strings.Contains(string(ad.body), `"plugin_health":{"testplugin":{"status":"ok"}}`) || !strings.Contains(string(ad.body), `"go_version"`) {
		t.Errorf("authenticated detailed health: %s", ad.body)
	}
	nf := h.get("/no/such/route", "")
	if nf.status != 404 || nf.header.Get("Content-Type") != "application/problem+json" || nf.header.Get("X-Ratelimit-Limit") == "" {
		t.Errorf("404: %d %v %s", nf.status, nf.header, nf.body)
	}
}

func (f *fixture) testPrincipal(t *testing.T) {
	h := f.h
	pid := h.pluginPID(f.admin, "testplugin")
	if ppid := parentPID(pid); ppid != h.cmd.Process.Pid {
		t.Fatalf("plugin %d has parent %d, want steward %d", pid, ppid, h.cmd.Process.Pid)
	}
	r := h.do(http.MethodGet, "/api/v1/testplugin/whoami", f.tokenA, nil, "Cookie", "session=secret", "X-Steward-Principal", "forged")
	if r.status != 200 {
		t.Fatalf("whoami: %d %s", r.status, r.body)
	}
	var who struct {
		Principal struct {
			ID        string   `json:"id"`
			Email     string   `json:"email"`
			IsAdmin   bool     `json:"is_admin"`
			TenantIDs []string `json:"tenant_ids"`
		} `json:"principal"`
		RequestID      string `json:"request_id"`
		Route          string `json:"route"`
		SawAuthHeader  bool   `json:"saw_auth_header"`
		SawCookie      bool   `json:"saw_cookie"`
		SawPluginToken bool   `json:"saw_plugin_token"`
	}
	r.json(t, &who)
	if who.Principal.ID != f.userA.ID || who.Principal.Email != f.userA.Email || who.Principal.IsAdmin {
		t.Errorf("principal %+v, want %s", who.Principal, f.userA.ID)
	}
	if len(who.Principal.TenantIDs) != 1 || who.Principal.TenantIDs[0] != f.tenantA.ID {
		t.Errorf("tenant scope %v, want [%s]", who.Principal.TenantIDs, f.tenantA.ID)
	}
	if who.SawAuthHeader || who.SawCookie || who.SawPluginToken {
		t.Errorf("credentials reached the plugin: %+v", who)
	}
	if who.RequestID == "" || who.RequestID != r.header.Get("X-Request-Id") || who.Route != "/api/v1/testplugin/whoami" {
		t.Errorf("request id %q (header %q), route %q", who.RequestID, r.header.Get("X-Request-Id"), who.Route)
	}
	noisy := h.get("/api/v1/testplugin/noise", f.tokenA)
	if noisy.status != 200 {
		t.Fatalf("noise: %d %s", noisy.status, noisy.body)
	}
	h.waitFor("stray plugin output in the host log", 3*time.Second, func() bool {
		logs := h.logs.String()
		return strings.Contains(logs, "stray stdout while serving") && strings.Contains(logs, "stray stderr while serving") &&
			strings.Contains(logs, "hello from init on stdout")
	})
}

type problem struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Errors []struct {
		Location string `json:"location"`
		Message  string `json:"message"`
	} `json:"errors"`
}

func expectInvalid(t *testing.T, r response, location string) {
	t.Helper()
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("want 422, got %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("content type %q", ct)
	}
	var p problem
	r.json(t, &p)
	// A missing body property is reported at its parent with the property
	// named in the message, e.g. location "body", "expected required
	// property password to be present".
	for _, e := range p.Errors {
		if e.Location == location {
			return
		}
		if base, prop, ok := strings.Cut(location, "."); ok && base == "body" && e.Location == "body" && strings.Contains(e.Message, "property "+prop+" ") {
			return
		}
	}
	t.Fatalf("422 does not name %s: %s", location, r.body)
}

func (f *fixture) testValidation(t *testing.T) {
	h := f.h
	expectInvalid(t, h.get("/api/v1/testplugin/items?limit=501", f.tokenA), "query.limit")
	expectInvalid(t, h.get("/api/v1/testplugin/items?limit=0", f.tokenA), "query.limit")
	expectInvalid(t, h.get("/api/v1/testplugin/items?limit=ten", f.tokenA), "query.limit")
	expectInvalid(t, h.get("/api/v1/testplugin/items?offset=-1", f.tokenA), "query.offset")
	expectInvalid(t, h.get("/api/v1/audit-logs?limit=501", f.admin), "query.limit")
	expectInvalid(t, h.get("/api/v1/audit-logs?status=maybe", f.admin), "query.status")
	expectInvalid(t, h.get("/api/v1/audit-logs?since=yesterday", f.admin), "query.since")
	expectInvalid(t, h.get("/api/v1/sync/history?limit=501", f.admin), "query.limit")
	if r := h.get("/api/v1/testplugin/items?limit=500", f.tokenA); r.status != 200 {
		t.Fatalf("limit=500 must pass: %d %s", r.status, r.body)
	}
	login := h.do(http.MethodPost, "/api/v1/auth/login", "", strings.NewReader("username=admin%40steward.local"), "Content-Type", "application/x-www-form-urlencoded")
	expectInvalid(t, login, "body.password")
}

// testUnauthenticated walks every operation of the OpenAPI document — host
// and plugin routes alike — and calls each protected one without a token.
func (f *fixture) testUnauthenticated(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	f.h.get("/openapi.json", "").json(t, &doc)
	checked := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if len(op.Security) == 0 {
				continue
			}
			concrete := strings.NewReplacer("{tenant_id}", f.tenantA.ID, "{alert_id}", "1", "{job_type}", "testplugin").Replace(path)
			r := f.h.do(strings.ToUpper(method), concrete, "", nil)
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: %d %s", method, path, r.status, r.body)
			}
			bad := f.h.do(strings.ToUpper(method), concrete, "not-a-jwt", nil)
			if bad.status != http.StatusUnauthorized {
				t.Errorf("%s %s with a bad token: %d", method, path, bad.status)
			}
			checked++
		}
	}
	if checked < 15 {
		t.Fatalf("only %d protected operations found", checked)
	}
}

// testAdminOnly calls every operation marked x-steward-admin, host and
// plugin alike, as the standard user of tenant A: each is refused with 403
// before it validates or does anything.
func (f *fixture) testAdminOnly(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Admin bool `json:"x-steward-admin"`
		} `json:"paths"`
	}
	f.h.get("/openapi.json", "").json(t, &doc)
	checked := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if !op.Admin {
				continue
			}
			concrete := strings.NewReplacer("{tenant_id}", f.tenantA.ID, "{alert_id}", "1", "{job_type}", "testplugin", "{name}", "testplugin").Replace(path)
			concrete = pathParamRE.ReplaceAllString(concrete, "0")
			r := f.h.do(strings.ToUpper(method), concrete, f.tokenA, strings.NewReader("{}"), "Content-Type", "application/json")
			if r.status != http.StatusForbidden {
				t.Errorf("%s %s as a standard user: %d %s, want 403", method, path, r.status, r.body)
			}
			checked[strings.ToUpper(method)+" "+path] = true
		}
	}
	for _, must := range []string{"POST /api/v1/sync/{job_type}", "POST /api/v1/api-keys", "POST /api/v1/plugins/{name}/reload", "POST /api/v1/testplugin/crash"} {
		if !checked[must] {
			t.Errorf("%s is not marked x-steward-admin", must)
		}
	}
}

func (f *fixture) testIsolation(t *testing.T) {
	h := f.h
	a, b := f.tenantA.ID, f.tenantB.ID
	cases := []struct {
		path string
		want int
	}{
		{"/api/v1/testplugin/tenants/" + b + "/items", http.StatusForbidden},
		{"/api/v1/testplugin/items?tenant_ids=" + b, http.StatusForbidden},
		{"/api/v1/testplugin/items?tenant_ids=" + a + "," + b, http.StatusForbidden},
		{"/api/v1/tenants/" + b, http.StatusForbidden},
		{"/api/v1/audit-logs/summary?tenant_id=" + b, http.StatusForbidden},
		{"/api/v1/testplugin/tenants/" + a + "/items", http.StatusOK},
		{"/api/v1/tenants/" + a, http.StatusOK},
	}
	for _, c := range cases {
		r := h.get(c.path, f.tokenA)
		if r.status != c.want {
			t.Errorf("%s: %d, want %d: %s", c.path, r.status, c.want, r.body)
		}
		if c.want != http.StatusOK && strings.Contains(string(r.body), "Brand B") {
			t.Errorf("%s leaks tenant B: %s", c.path, r.body)
		}
	}
	var list []tenancy.Tenant
	h.get("/api/v1/tenants", f.tokenA).json(t, &list)
	if len(list) != 1 || list[0].ID != a {
		t.Errorf("standard user sees tenants %+v", list)
	}
	h.get("/api/v1/tenants", f.admin).json(t, &list)
	if len(list) != 2 {
		t.Errorf("admin sees %d tenants, want 2", len(list))
	}
	var me struct {
		Tenants []struct{ ID, Name string } `json:"tenants"`
	}
	h.get("/api/v1/auth/me", f.tokenA).json(t, &me)
	if len(me.Tenants) != 1 || me.Tenants[0].Name != "Brand A" {
		t.Errorf("/auth/me tenants %+v", me.Tenants)
	}
	if r := h.do(http.MethodPost, "/api/v1/testplugin/crash", f.tokenA, nil); r.status != http.StatusForbidden {
		t.Errorf("standard user on an admin plugin route: %d", r.status)
	}
	if r := h.do(http.MethodPost, "/api/v1/sync/testplugin", f.tokenA, nil); r.status != http.StatusForbidden {
		t.Errorf("standard user triggering a sync: %d", r.status)
	}
}

type run struct {
	JobID            string  `json:"job_id"`
	JobType          string  `json:"job_type"`
	Status           string  `json:"status"`
	ErrorMessage     *string `json:"error_message"`
	RecordsProcessed int64   `json:"records_processed"`
	Attempts         int     `json:"attempts"`
	// StartedAt and CompletedAt are null until the run starts and ends.
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// waitRun waits up to 15 s for the run to finish and returns it.
func (f *fixture) waitRun(t *testing.T, id string) run {
	t.Helper()
	return f.waitRunWithin(t, id, 15*time.Second)
}

// waitRunWithin waits up to timeout for the run to finish and returns it.
func (f *fixture) waitRunWithin(t *testing.T, id string, timeout time.Duration) run {
	t.Helper()
	var found run
	f.h.waitFor("run "+id, timeout, func() bool {
		var hist struct {
			Logs []run `json:"logs"`
		}
		f.h.get("/api/v1/sync/history?limit=50", f.admin).json(t, &hist)
		for _, r := range hist.Logs {
			if r.JobID == id && (r.Status == "completed" || r.Status == "failed") {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

func (f *fixture) trigger(t *testing.T, jobType string) string {
	t.Helper()
	r := f.h.do(http.MethodPost, "/api/v1/sync/"+jobType, f.admin, nil)
	if r.status != http.StatusAccepted {
		t.Fatalf("trigger %s: %d %s", jobType, r.status, r.body)
	}
	var acc struct {
		JobID   string `json:"job_id"`
		JobType string `json:"job_type"`
		Status  string `json:"status"`
	}
	r.json(t, &acc)
	if acc.JobID == "" || acc.JobType != jobType || acc.Status != "queued" {
		t.Fatalf("accepted %s", r.body)
	}
	return acc.JobID
}

func (f *fixture) testSync(t *testing.T) {
	h := f.h
	done := f.waitRun(t, f.trigger(t, "testplugin"))
	if done.Status != "completed" || done.RecordsProcessed != 200 {
		t.Fatalf("sync run %+v, want completed with 200 records", done)
	}
	var page struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
		} `json:"items"`
		Total int `json:"total"`
	}
	h.get("/api/v1/testplugin/items?limit=500", f.tokenA).json(t, &page)
	if page.Total != 100 || len(page.Items) != 100 {
		t.Fatalf("tenant A sees %d of %d items, want 100", len(page.Items), page.Total)
	}
	for _, it := range page.Items {
		if it.TenantID != f.tenantA.ID {
			t.Fatalf("tenant A sees an item of %s", it.TenantID)
		}
	}
	var relay struct {
		Records  int            `json:"records"`
		ByTenant map[string]int `json:"by_tenant"`
	}
	h.get("/api/v1/testplugin/relay", f.tokenA).json(t, &relay)
	if relay.Records != 100 || relay.ByTenant[f.tenantA.ID] != 100 || len(relay.ByTenant) != 1 {
		t.Errorf("dataset read through the host: %+v", relay)
	}
	h.get("/api/v1/testplugin/relay", f.admin).json(t, &relay)
	if relay.Records != 200 {
		t.Errorf("admin dataset read: %+v", relay)
	}
	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", f.tokenA).json(t, &fresh)
	if _, ok := fresh["Brand A"]; !ok || len(fresh) != 1 {
		t.Errorf("freshness for a standard user: %v", fresh)
	}
	if r := h.do(http.MethodPost, "/api/v1/sync/costs", f.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("sync of a domain no plugin provides: %d %s", r.status, r.body)
	}

	failed := f.waitRun(t, f.trigger(t, "testplugin-fail"))
	if failed.Status != "failed" || failed.ErrorMessage == nil || !strings.Contains(*failed.ErrorMessage, "failing on purpose") {
		t.Fatalf("failing run %+v", failed)
	}
	// A run spans every tenant: a standard user sees that it failed, not
	// the text that names other tenants' subscriptions and names.
	for _, path := range []string{"/api/v1/sync/history", "/api/v1/sync/alerts", "/api/v1/sync/status"} {
		own := h.get(path, f.tokenA)
		for _, leak := range []string{f.tenantB.SubscriptionID, f.tenantB.Name, "failing on purpose"} {
			if own.status != http.StatusOK || strings.Contains(string(own.body), leak) {
				t.Errorf("%s for a standard user of tenant A: %d, shows %q: %s", path, own.status, leak, own.body)
			}
		}
		if !strings.Contains(string(own.body), "details are visible to administrators") {
			t.Errorf("%s for a standard user does not say the failure is redacted: %s", path, own.body)
		}
		if all := h.get(path, f.admin); !strings.Contains(string(all.body), f.tenantB.SubscriptionID) {
			t.Errorf("%s for an admin lacks the failure's text: %s", path, all.body)
		}
	}
	var alerts struct {
		Alerts []struct {
			AlertID  int64  `json:"alert_id"`
			JobID    string `json:"job_id"`
			Resolved bool   `json:"resolved"`
		} `json:"alerts"`
	}
	h.get("/api/v1/sync/alerts", f.admin).json(t, &alerts)
	var alertID int64
	for _, a := range alerts.Alerts {
		if a.JobID == failed.JobID {
			alertID = a.AlertID
		}
	}
	if alertID == 0 {
		t.Fatalf("no alert for the failed run: %+v", alerts)
	}
	var status struct {
		ActiveCount int `json:"active_count"`
	}
	var st struct {
		Alerts json.RawMessage `json:"alerts"`
	}
	h.get("/api/v1/status", "").json(t, &st)
	_ = json.Unmarshal(st.Alerts, &status)
	if status.ActiveCount < 1 {
		t.Errorf("/api/v1/status alerts %s", st.Alerts)
	}
	path := "/api/v1/sync/alerts/" + strconv.FormatInt(alertID, 10) + "/resolve"
	body := `{"resolved_by":"ops","resolution_notes":"expected in the test"}`
	if r := h.do(http.MethodPost, path, f.tokenA, strings.NewReader(body), "Content-Type", "application/json"); r.status != http.StatusForbidden {
		t.Errorf("standard user resolving: %d", r.status)
	}
	if r := h.do(http.MethodPost, path, f.admin, strings.NewReader(body), "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPost, path, f.admin, strings.NewReader(body), "Content-Type", "application/json"); r.status != http.StatusConflict {
		t.Errorf("second resolve: %d", r.status)
	}
	if r := h.do(http.MethodPost, "/api/v1/sync/alerts/999999/resolve", f.admin, strings.NewReader(body), "Content-Type", "application/json"); r.status != http.StatusNotFound {
		t.Errorf("unknown alert: %d", r.status)
	}
	expectInvalid(t, h.do(http.MethodPost, path, f.admin, strings.NewReader(`{"resolved_by":""}`), "Content-Type", "application/json"), "body.resolved_by")
	var jobs struct {
		Jobs []struct {
			Plugin   string `json:"plugin"`
			Name     string `json:"name"`
			Schedule string `json:"schedule"`
		} `json:"jobs"`
	}
	h.get("/api/v1/sync/status", f.tokenA).json(t, &jobs)
	if len(jobs.Jobs) != 4 {
		t.Errorf("sync status jobs %+v", jobs.Jobs)
	}
	if m := h.get("/api/v1/sync/metrics", f.admin); m.status != 200 || !strings.Contains(string(m.body), "testplugin") {
		t.Errorf("sync metrics %d %s", m.status, m.body)
	}
}

type entry struct {
	ActorID      string         `json:"actor_id"`
	Action       string         `json:"action"`
	Status       string         `json:"status"`
	TenantID     *string        `json:"tenant_id"`
	ResourceType string         `json:"resource_type"`
	ClientAddr   string         `json:"client_addr"`
	RequestID    string         `json:"request_id"`
	Details      map[string]any `json:"details"`
}

type auditPage struct {
	Items  []entry `json:"items"`
	Total  int     `json:"total"`
	Limit  int     `json:"limit"`
	Offset int     `json:"offset"`
}

func (f *fixture) testAudit(t *testing.T) {
	h := f.h
	bad := h.do(http.MethodPost, "/api/v1/auth/login", "", strings.NewReader("username=admin%40steward.local&password=wrong"), "Content-Type", "application/x-www-form-urlencoded")
	if bad.status != http.StatusUnauthorized {
		t.Fatalf("bad password: %d", bad.status)
	}
	if r := h.do(http.MethodPost, "/api/v1/testplugin/audit", f.tokenA, nil); r.status != http.StatusCreated {
		t.Fatalf("plugin audit: %d %s", r.status, r.body)
	}
	var all auditPage
	h.get("/api/v1/audit-logs?limit=500", f.admin).json(t, &all)
	seen := map[string]entry{}
	for _, e := range all.Items {
		if _, ok := seen[e.Action]; !ok {
			seen[e.Action] = e
		}
	}
	for _, action := range []string{"auth.login.success", "auth.login.failure", "sync.trigger.success", "sync.alert_resolve.success", "testplugin_item.create.success"} {
		if _, ok := seen[action]; !ok {
			t.Errorf("no audit entry %s in %d entries", action, all.Total)
		}
	}
	pe := seen["testplugin_item.create.success"]
	if pe.ActorID != f.userA.ID || pe.Details["plugin"] != "testplugin" || pe.TenantID == nil || *pe.TenantID != f.tenantA.ID || pe.RequestID == "" {
		t.Errorf("plugin audit entry %+v", pe)
	}
	if le := seen["auth.login.success"]; le.ClientAddr == "" || le.RequestID == "" {
		t.Errorf("login entry lacks client address or request id: %+v", le)
	}

	var mine auditPage
	h.get("/api/v1/audit-logs", f.tokenA).json(t, &mine)
	if mine.Total != 1 || len(mine.Items) != 1 || mine.Items[0].ActorID != f.userA.ID {
		t.Errorf("standard user sees %d entries: %+v", mine.Total, mine.Items)
	}
	if r := h.get("/api/v1/audit-logs?actor_id=someone-else", f.tokenA); r.status != http.StatusForbidden {
		t.Errorf("standard user asking for another actor: %d", r.status)
	}

	var page auditPage
	h.get("/api/v1/audit-logs?action_prefix=auth.&limit=1&offset=1", f.admin).json(t, &page)
	if page.Limit != 1 || page.Offset != 1 || len(page.Items) != 1 || page.Total < 2 {
		t.Errorf("paging %+v", page)
	}
	h.get("/api/v1/audit-logs?status=failure", f.admin).json(t, &page)
	if len(page.Items) == 0 {
		t.Error("status=failure finds no entry, though the suite made failures")
	}
	for _, e := range page.Items {
		if e.Status != "failure" {
			t.Errorf("status filter returned %+v", e)
		}
	}
	since := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	h.get("/api/v1/audit-logs?since="+since, f.admin).json(t, &page)
	if page.Total != 0 {
		t.Errorf("future since returned %d", page.Total)
	}
	var sum struct {
		Total      int            `json:"total"`
		ByCategory map[string]int `json:"by_category"`
	}
	h.get("/api/v1/audit-logs/summary", f.admin).json(t, &sum)
	if sum.ByCategory["auth"] < 2 || sum.ByCategory["sync"] < 1 {
		t.Errorf("summary %+v", sum)
	}
	h.get(fmt.Sprintf("/api/v1/audit-logs/summary?tenant_id=%s", f.tenantA.ID), f.tokenA).json(t, &sum)
	if sum.Total != 1 {
		t.Errorf("standard user's tenant summary %+v", sum)
	}
}
