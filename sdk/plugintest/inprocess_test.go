package plugintest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

var (
	alice = sdk.Principal{ID: "u1", Email: "alice@example.com", Name: "Alice", Roles: []string{"reader"}, Kind: "user", TenantIDs: []string{"t1", "t2"}}
	admin = sdk.Principal{ID: "u0", Email: "root@example.com", IsAdmin: true, Kind: "apikey", TenantIDs: []string{"t1", "t2", "t3"}}

	tenants = []sdk.Tenant{
		{ID: "t2", Name: "Beta", IsActive: true},
		{ID: "t1", Name: "Alpha", IsActive: true, SubscriptionID: "sub-1"},
		{ID: "t3", Name: "Gamma"},
	}
)

func startDemo(t *testing.T, opts plugintest.Options) (*plugintest.Harness, *demo) {
	t.Helper()
	d := &demo{}
	if opts.Tenants == nil {
		opts.Tenants = tenants
	}
	return plugintest.New(t, demoDefinition, d.build, opts), d
}

func decode[T any](t *testing.T, resp *http.Response) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode %s response: %v", resp.Status, err)
	}
	return v
}

func TestDescribe(t *testing.T) {
	var migrations []string
	h, _ := startDemo(t, plugintest.Options{Migrate: func(_ context.Context, fsys fs.FS) error {
		return fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				migrations = append(migrations, path)
			}
			return err
		})
	}})
	desc := h.Describe()
	if desc.Name != "demo" || desc.Version != "2.3.4" || desc.ProtocolVersion != protocol.Version || desc.SdkVersion != sdk.Version {
		t.Errorf("identity = %s %s protocol %d sdk %s", desc.Name, desc.Version, desc.ProtocolVersion, desc.SdkVersion)
	}
	for _, c := range []string{protocol.CapabilityHTTPSocket, protocol.CapabilityConfigureDeclarations} {
		if !slices.Contains(desc.Capabilities, c) {
			t.Errorf("capabilities %v lack %s", desc.Capabilities, c)
		}
	}
	routes := map[string]*pluginv1.Route{}
	for _, r := range desc.Routes {
		routes[r.Method+" "+r.Path] = r
	}
	for key, want := range map[string]struct {
		auth   pluginv1.Auth
		rate   pluginv1.RateClass
		scoped bool
	}{
		"GET /api/v1/demo/whoami":  {pluginv1.Auth_AUTH_USER, pluginv1.RateClass_RATE_CLASS_DEFAULT, false},
		"GET /api/v1/demo/items":   {pluginv1.Auth_AUTH_USER, pluginv1.RateClass_RATE_CLASS_DEFAULT, true},
		"GET /api/v1/demo/admin":   {pluginv1.Auth_AUTH_ADMIN, pluginv1.RateClass_RATE_CLASS_SYNC, false},
		"GET /api/v1/demo/public":  {pluginv1.Auth_AUTH_NONE, pluginv1.RateClass_RATE_CLASS_AUTH, false},
		"POST /api/v1/demo/export": {pluginv1.Auth_AUTH_USER, pluginv1.RateClass_RATE_CLASS_COSTLY, false},
	} {
		r := routes[key]
		if r == nil {
			t.Errorf("route %s missing (method names are upper-cased)", key)
			continue
		}
		if r.Auth != want.auth || r.RateClass != want.rate || r.TenantScoped != want.scoped {
			t.Errorf("%s = auth %v rate %v scoped %v, want %+v", key, r.Auth, r.RateClass, r.TenantScoped, want)
		}
	}
	if op := routes["GET /api/v1/demo/whoami"].OpenapiOperation; len(op) != 0 {
		t.Errorf("route without an operation carries %s", op)
	}
	var op struct {
		OperationID string `json:"operationId"`
		Parameters  []struct {
			Name   string `json:"name"`
			In     string `json:"in"`
			Schema struct {
				Minimum float64 `json:"minimum"`
				Maximum float64 `json:"maximum"`
			} `json:"schema"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(routes["GET /api/v1/demo/items"].OpenapiOperation, &op); err != nil {
		t.Fatalf("operation JSON: %v", err)
	}
	if op.OperationID != "demo-items" || len(op.Parameters) != 1 || op.Parameters[0].Name != "limit" || op.Parameters[0].In != "query" ||
		op.Parameters[0].Schema.Minimum != 1 || op.Parameters[0].Schema.Maximum != 500 {
		t.Errorf("operation = %+v", op)
	}
	if len(desc.Jobs) != 9 || desc.Jobs[0].Name != "sync" || desc.Jobs[0].JobType != "demo" || desc.Jobs[0].DataDomain != "evidence" || desc.Jobs[0].DefaultSchedule != "@every 1h" {
		t.Errorf("jobs = %v", desc.Jobs)
	}
	if len(desc.Datasets) != 2 || desc.Datasets[0].Name != "demo.records" || string(desc.Datasets[0].Schema) != `{"type":"object"}` {
		t.Errorf("datasets = %v", desc.Datasets)
	}
	var names []string
	for _, m := range desc.Migrations {
		names = append(names, m.Name)
		if len(m.Content) == 0 {
			t.Errorf("migration %s is empty", m.Name)
		}
	}
	want := []string{"0001_evidence.down.sql", "0001_evidence.up.sql", "0002_index.down.sql", "0002_index.postgres.up.sql", "0002_index.sqlite.up.sql"}
	if !slices.Equal(names, want) {
		t.Errorf("migrations = %v, want %v (only .sql files)", names, want)
	}
	if !slices.Equal(migrations, want) {
		t.Errorf("Migrate saw %v, want %v", migrations, want)
	}
}

func TestConfigure(t *testing.T) {
	h, d := startDemo(t, plugintest.Options{Config: json.RawMessage(`{"fail":false,"label":"north"}`), DatabaseURL: "sqlite:///x.db", Cloud: json.RawMessage(`{"provider":"sim"}`)})
	if d.cfg != (demoConfig{Label: "north"}) || d.env.DatabaseURL != "sqlite:///x.db" || string(d.env.Cloud) != `{"provider":"sim"}` {
		t.Errorf("config %+v, env db %s cloud %s", d.cfg, d.env.DatabaseURL, d.env.Cloud)
	}
	if d.env.Environment != "development" || d.env.DataDir == "" || d.env.Host == nil || d.env.Logger == nil {
		t.Errorf("defaults = environment %q data dir %q host %v logger %v", d.env.Environment, d.env.DataDir, d.env.Host, d.env.Logger)
	}
	if path, token := h.DataSocket(); path != "" || token != "" {
		t.Errorf("in-process plugin has a data socket %q", path)
	}
	if want := protocol.HostCapabilities(); !slices.Equal(d.env.HostCapabilities, want) {
		t.Errorf("host capabilities %q, want the host's %q", d.env.HostCapabilities, want)
	}

	d = &demo{}
	if msg := fatalOf(t, func(tb testing.TB) {
		plugintest.New(tb, demoDefinition, d.build, plugintest.Options{Config: json.RawMessage(`{"fail":true}`)})
	}); !strings.Contains(msg, "config says fail") {
		t.Errorf("a failing factory reported %q", msg)
	}
	// The harness holds the block to the plugin's schema as the host does,
	// before the plugin is migrated or configured.
	if msg := fatalOf(t, func(tb testing.TB) {
		plugintest.New(tb, demoDefinition, d.build, plugintest.Options{Config: json.RawMessage(`{"fial":true,"label":"far too long"}`),
			Migrate: func(context.Context, fs.FS) error { return errors.New("migrated") }})
	}); !strings.Contains(msg, "config.fial: unknown key; the keys are fail, label; config.label: length must be <= 8, but got 12") || strings.Contains(msg, "migrated") {
		t.Errorf("a block the schema refuses reported %q", msg)
	}
	if msg := fatalOf(t, func(tb testing.TB) {
		plugintest.New(tb, demoDefinition, d.build, plugintest.Options{Migrate: func(context.Context, fs.FS) error { return errors.New("disk full") }})
	}); !strings.Contains(msg, "disk full") {
		t.Errorf("a failing Migrate reported %q", msg)
	}
	if msg := fatalOf(t, func(tb testing.TB) {
		plugintest.New(tb, sdk.Definition{Name: "demo", Migrations: fstest.MapFS{"evidence.up.sql": {}}}, d.build, plugintest.Options{})
	}); !strings.Contains(msg, `plugin "demo" is not valid`) || !strings.Contains(msg, "migration evidence.up.sql: name must") {
		t.Errorf("a definition sdk.Serve refuses reported %q", msg)
	}
	for want, routes := range map[string][]sdk.Route{
		"route GET /api/v1/{area}/whoami: overlaps route GET /api/v1/demo/{id}": {{Method: "GET", Path: "/api/v1/demo/{id}"}, {Method: "GET", Path: "/api/v1/{area}/whoami"}},
		`route GET api/v1/demo: path "api/v1/demo" must start with /`:           {{Method: "GET", Path: "api/v1/demo"}},
		"route GET /api/v1/demo: Handler is nil":                                {{Method: "GET", Path: "/api/v1/demo"}},
	} {
		bad := &demo{change: func(p *sdk.Plugin) { p.Routes = routes }}
		if msg := fatalOf(t, func(tb testing.TB) { plugintest.New(tb, demoDefinition, bad.build, plugintest.Options{}) }); !strings.Contains(msg, want) {
			t.Errorf("routes %v reported %q, want %q", routes, msg, want)
		}
	}
}

// fatalTB records the test failure the harness reports instead of failing
// the test running it.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Fatal(args ...any) { f.fail(fmt.Sprint(args...)) }

func (f *fatalTB) Fatalf(format string, args ...any) { f.fail(fmt.Sprintf(format, args...)) }

func (f *fatalTB) fail(msg string) {
	f.mu.Lock()
	f.msg = msg
	f.mu.Unlock()
	runtime.Goexit()
}

// fatalOf runs fn with a TB whose Fatal ends fn, and returns the message.
func fatalOf(t *testing.T, fn func(testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg
}

func TestDoCarriesPrincipalAndRequestID(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	req := httptest.NewRequest("GET", "/api/v1/demo/whoami", nil)
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("X-Request-Id", "req-42")
	req.Header.Set("X-Custom", "kept")
	resp := h.Do(req, alice)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := decode[struct {
		Principal     sdk.Principal `json:"principal"`
		RequestID     string        `json:"request_id"`
		Route         string        `json:"route"`
		Authorization string        `json:"authorization"`
		Custom        string        `json:"custom"`
	}](t, resp)
	if got.Principal.ID != alice.ID || got.Principal.Email != alice.Email || !slices.Equal(got.Principal.TenantIDs, alice.TenantIDs) ||
		!slices.Equal(got.Principal.Roles, alice.Roles) || got.Principal.Kind != "user" {
		t.Errorf("principal = %+v", got.Principal)
	}
	if got.RequestID != "req-42" || got.Route != "/api/v1/demo/whoami" || got.Custom != "kept" {
		t.Errorf("request id %q route %q custom header %q", got.RequestID, got.Route, got.Custom)
	}
	if got.Authorization != "" {
		t.Error("the caller's Authorization header reached the plugin")
	}

	resp = h.Do(httptest.NewRequest("GET", "/api/v1/demo/tenants/t2/items", nil), alice)
	params := decode[map[string]string](t, resp)
	if params["tenant_id"] != "t2" || params["route"] != "/api/v1/demo/tenants/{tenant_id}/items" {
		t.Errorf("path route = %v", params)
	}

	fresh := decode[struct {
		RequestID string `json:"request_id"`
	}](t, h.Do(httptest.NewRequest("GET", "/api/v1/demo/whoami", nil), alice))
	if fresh.RequestID == "" {
		t.Error("no request id when the caller sent none")
	}
}

func TestDoEnforcesRoutesAndAuth(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	for _, tc := range []struct {
		path   string
		p      sdk.Principal
		status int
	}{
		{"/api/v1/demo/whoami", sdk.Principal{}, http.StatusUnauthorized},
		{"/api/v1/demo/admin", alice, http.StatusForbidden},
		{"/api/v1/demo/admin", admin, http.StatusNoContent},
		{"/api/v1/demo/undeclared", admin, http.StatusNotFound},
		{"/api/v1/demo/tenants//items", alice, http.StatusNotFound},
		{"/api/v1/demo/public", sdk.Principal{}, http.StatusOK},
	} {
		resp := h.Do(httptest.NewRequest("GET", tc.path, nil), tc.p)
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s as %q = %d, want %d", tc.path, tc.p.ID, resp.StatusCode, tc.status)
		}
		if tc.status >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: %d is not a problem", tc.path, resp.StatusCode)
		}
	}
	anon := decode[map[string]bool](t, h.Do(httptest.NewRequest("GET", "/api/v1/demo/public", nil), sdk.Principal{}))
	if !anon["anonymous"] {
		t.Error("an anonymous call reached the plugin with a principal")
	}
}

// TestDataSocketInProcess drives the in-process plugin through the data
// socket of the server sdk.Serve runs, as the host does by default, and
// checks the socket is closed once the test has ended.
func TestDataSocketInProcess(t *testing.T) {
	var path string
	var open net.Conn
	t.Run("serve", func(t *testing.T) {
		h, d := startDemo(t, plugintest.Options{DataSocket: true})
		var token string
		path, token = h.DataSocket()
		if path == "" || len(token) < 16 {
			t.Fatalf("data socket %q, token %q", path, token)
		}
		var err error
		if open, err = net.Dial("unix", path); err != nil {
			t.Fatal(err)
		}
		if d.env.Host == nil {
			t.Error("no Host service with a data socket")
		}
		req := httptest.NewRequest("GET", "/api/v1/demo/whoami", nil)
		req.Header.Set("Authorization", "Bearer secret")
		req.Header.Set("X-Request-Id", "req-7")
		got := decode[struct {
			Principal     sdk.Principal `json:"principal"`
			RequestID     string        `json:"request_id"`
			Route         string        `json:"route"`
			Authorization string        `json:"authorization"`
		}](t, h.Do(req, alice))
		if got.Principal.ID != alice.ID || !slices.Equal(got.Principal.TenantIDs, alice.TenantIDs) || got.RequestID != "req-7" ||
			got.Route != "/api/v1/demo/whoami" || got.Authorization != "" {
			t.Errorf("over the socket the handler saw %+v", got)
		}
		if resp := h.Do(httptest.NewRequest("GET", "/api/v1/demo/admin", nil), alice); resp.StatusCode != http.StatusForbidden {
			t.Errorf("admin route as a user over the socket: %d", resp.StatusCode)
		}
		body := pattern(10 << 20)
		resp := h.Do(httptest.NewRequest("POST", "/api/v1/demo/echo", bytes.NewReader(body)), alice)
		if got, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
			t.Errorf("echo over the socket: %d, %d bytes", resp.StatusCode, len(got))
		}
		// The harness's gRPC client is still there for jobs and datasets.
		if n, _, err := h.RunJob(context.Background(), "sync"); err != nil || n == 0 {
			t.Errorf("job next to the socket: %d, %v", n, err)
		}
	})
	if open == nil {
		return
	}
	defer open.Close()
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := open.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a connection to the data socket after the test: %v, want it closed", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the data socket %s is left behind: %v", path, err)
	}
}

func TestLargeBodies(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	const size = 10 << 20
	body := pattern(size)
	resp := h.Do(httptest.NewRequest("POST", "/api/v1/demo/echo", bytes.NewReader(body)), alice)
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Errorf("echo of %d bytes: status %d, %d bytes back, equal %v", size, resp.StatusCode, len(got), bytes.Equal(got, body))
	}
	if seen := resp.Header.Get("X-Request-Length"); seen != strconv.Itoa(size) {
		t.Errorf("the handler saw a request ContentLength of %s, want %d", seen, size)
	}
	resp = h.Do(httptest.NewRequest("GET", "/api/v1/demo/large?size=10485760", nil), alice)
	got, _ = io.ReadAll(resp.Body)
	if !bytes.Equal(got, body) || resp.ContentLength != size {
		t.Errorf("large: %d bytes, content length %d", len(got), resp.ContentLength)
	}
}

// TestEarlyAnswerToLargeBody sends a body far larger than gRPC's
// flow-control windows to a handler that refuses it unread: its answer must
// come back, not the failure to send the rest of the body. The host's proxy
// streams a body the same way.
func TestEarlyAnswerToLargeBody(t *testing.T) {
	body := pattern(10 << 20)
	for _, socket := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "socket"}[socket], func(t *testing.T) {
			h, _ := startDemo(t, plugintest.Options{DataSocket: socket})
			// Several times: whether the answer or the failed send comes
			// first is up to the scheduler.
			for i := range 5 {
				resp, err := h.RoundTrip(httptest.NewRequest("POST", "/api/v1/demo/upload", bytes.NewReader(body)), alice)
				if err != nil {
					t.Fatalf("try %d: %v", i, err)
				}
				p := decode[sdk.Problem](t, resp)
				if resp.StatusCode != http.StatusRequestEntityTooLarge || p.Detail != "uploads are limited to 1 MB" {
					t.Fatalf("try %d: %d %+v, want the plugin's 413", i, resp.StatusCode, p)
				}
			}
			// The exchange after it is unaffected.
			resp := h.Do(httptest.NewRequest("POST", "/api/v1/demo/echo", bytes.NewReader(body[:1<<20])), alice)
			if got, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !bytes.Equal(got, body[:1<<20]) {
				t.Errorf("echo after the refused upload: %d, %d bytes", resp.StatusCode, len(got))
			}
		})
	}
}

func TestWriteErrorThroughHandler(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	resp := h.Do(httptest.NewRequest("GET", "/api/v1/demo/conflict", nil), alice)
	if p := decode[sdk.Problem](t, resp); resp.StatusCode != http.StatusConflict || p.Status != http.StatusConflict || p.Detail != "evidence already filed" {
		t.Errorf("problem: %d %+v", resp.StatusCode, p)
	}
	resp = h.Do(httptest.NewRequest("GET", "/api/v1/demo/broken", nil), alice)
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("plain error: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if bytes.Contains(raw, []byte("password")) || bytes.Contains(raw, []byte("10.0.0.7")) {
		t.Errorf("plain error leaked its text: %s", raw)
	}
}

func TestPanicsFailOneCall(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	_, err := h.RoundTrip(httptest.NewRequest("GET", "/api/v1/demo/panic", nil), alice)
	if status.Code(err) != codes.Internal {
		t.Errorf("panicking handler: %v, want Internal", err)
	}
	if _, _, err := h.RunJob(context.Background(), "panic"); status.Code(err) != codes.Internal {
		t.Errorf("panicking job: %v, want Internal", err)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/demo/whoami", nil), alice); resp.StatusCode != http.StatusOK {
		t.Errorf("after the panics: %d", resp.StatusCode)
	}
	if _, _, err := h.RunJob(context.Background(), "sync"); err != nil {
		t.Errorf("job after the panics: %v", err)
	}
}

func TestJobs(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	n, progress, err := h.RunJob(context.Background(), "sync")
	if err != nil || n != 20 {
		t.Fatalf("sync = %d, %v", n, err)
	}
	// Inactive Gamma is not listed; Alpha comes before Beta by name.
	want := []plugintest.Progress{{Done: 1, Total: 2, Message: "tenant Alpha"}, {Done: 2, Total: 2, Message: "tenant Beta"}}
	if !slices.Equal(progress, want) {
		t.Errorf("progress = %v, want %v", progress, want)
	}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if marks := h.FreshMarks(); !slices.Equal(marks, []plugintest.FreshMark{{TenantID: "t1", Domain: "evidence", SyncedAt: at}, {TenantID: "t2", Domain: "evidence", SyncedAt: at}}) {
		t.Errorf("fresh marks = %v", marks)
	}

	_, _, err = h.RunJob(context.Background(), "fail")
	if st := status.Convert(err); err == nil || st.Message() != "upstream refused the export" {
		t.Errorf("failing job: %v", err)
	}
	if _, _, err := h.RunJob(context.Background(), "nope"); status.Code(err) != codes.NotFound {
		t.Errorf("unknown job: %v", err)
	}
	if _, _, err := h.RunJob(context.Background(), "alerts"); err != nil {
		t.Fatalf("alerts job: %v", err)
	}
	wantAlerts := []plugintest.Alert{{Severity: "critical", Title: "DKIM key removed: brand-a.example", Message: "selector1 no longer publishes a key"}}
	if got := h.Alerts(); !slices.Equal(got, wantAlerts) {
		t.Errorf("alerts = %v, want %v", got, wantAlerts)
	}
}

// A job of EachTenant runs every active tenant even when one fails, marks
// fresh those that succeeded and failed, with the reason, those that did
// not, and fails naming the tenant that did not.
func TestEachTenant(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	start := time.Now()
	n, progress, err := h.RunJob(context.Background(), "each")
	if st := status.Convert(err); err == nil || st.Message() != "tenant Alpha (t1): export refused" {
		t.Errorf("run error = %v, want Alpha's failure named", err)
	}
	if n != 0 {
		t.Errorf("a failed run reported %d records", n)
	}
	want := []plugintest.Progress{{Done: 1, Total: 2, Message: "Alpha"}, {Done: 2, Total: 2, Message: "Beta"}}
	if !slices.Equal(progress, want) {
		t.Errorf("progress = %v, want %v", progress, want)
	}
	// Alpha's failure is reported with its reason, Beta's success as a mark.
	marks := h.FreshMarks()
	if len(marks) != 2 || marks[0].TenantID != "t1" || marks[0].Failure != "export refused" ||
		marks[1].TenantID != "t2" || marks[1].Domain != "evidence" || marks[1].Failure != "" {
		t.Fatalf("fresh marks = %+v, want Alpha's failure, then Beta's success", marks)
	}
	for _, m := range marks {
		if m.SyncedAt.Before(start.Truncate(time.Millisecond)) || m.SyncedAt.After(time.Now()) {
			t.Errorf("mark %+v is not as of the tenant's run", m)
		}
	}
}

func TestDatasets(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{Datasets: map[string][]json.RawMessage{
		"other.controls": {
			mustJSON(map[string]string{"tenant_id": "t1", "control": "mfa"}),
			mustJSON(map[string]string{"tenant_id": "t2", "control": "mfa"}),
			mustJSON(map[string]string{"tenant_id": "t1", "control": "backup"}),
		},
	}})
	ctx := context.Background()
	records, err := h.ReadDataset(ctx, "demo.records", []string{"t1"}, map[string]string{"kind": "vm"})
	if err != nil || len(records) != demoRecords {
		t.Fatalf("read = %d records, %v", len(records), err)
	}
	var last struct {
		N        int      `json:"n"`
		TenantID []string `json:"tenant_id"`
		Kind     string   `json:"kind"`
	}
	if err := json.Unmarshal(records[demoRecords-1], &last); err != nil || last.N != demoRecords-1 || !slices.Equal(last.TenantID, []string{"t1"}) || last.Kind != "vm" {
		t.Errorf("last record = %s (%v)", records[demoRecords-1], err)
	}

	stream, err := h.Client().ReadDataset(ctx, &pluginv1.ReadDatasetRequest{Dataset: "demo.records"})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(chunk.Records))
	}
	if !slices.Equal(sizes, []int{256, 256, 88}) {
		t.Errorf("chunk sizes = %v, want batches of 256", sizes)
	}

	// A handler reading for a request sees its caller's tenants only,
	// whichever it asks for.
	brandA := sdk.Principal{ID: "u-a", Kind: "user", TenantIDs: []string{"t1"}}
	admin := sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{"t1", "t2"}}
	for _, c := range []struct {
		who  sdk.Principal
		ask  string
		want []string
	}{
		{brandA, "t2", nil},
		{brandA, "t1", []string{"t1", "t1"}},
		{brandA, "t2,t1", []string{"t1", "t1"}},
		{brandA, "", []string{"t1", "t1"}},
		{admin, "t2", []string{"t2"}},
		{admin, "", []string{"t1", "t2", "t1"}},
	} {
		resp := h.Do(httptest.NewRequest(http.MethodGet, "/api/v1/demo/controls?ask="+c.ask, nil), c.who)
		var got struct {
			Tenants []string `json:"tenants"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || !slices.Equal(got.Tenants, c.want) {
			t.Errorf("%s asking for %q read %d %v (%v), want %v", c.who.ID, c.ask, resp.StatusCode, got.Tenants, err, c.want)
		}
	}

	if _, err := h.ReadDataset(ctx, "demo.broken", nil, nil); err == nil || !strings.Contains(err.Error(), "table is gone") {
		t.Errorf("failing dataset: %v", err)
	}
	if _, err := h.ReadDataset(ctx, "demo.nope", nil, nil); status.Code(err) != codes.NotFound {
		t.Errorf("unknown dataset: %v", err)
	}

	for job, want := range map[string]int64{"import": 2, "import-all": 3, "reread": demoRecords} {
		if n, _, err := h.RunJob(ctx, job); err != nil || n != want {
			t.Errorf("%s read %d records through the host (%v), want %d", job, n, err, want)
		}
	}
	// The plugin's Host tells it the dataset is unavailable
	// (sdk.ErrDatasetUnavailable), naming it.
	if _, _, err := h.RunJob(ctx, "import-missing"); status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), "dataset nobody.publishes: dataset unavailable") {
		t.Errorf("reading an unpublished dataset: %v", err)
	}
}

func TestAudit(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	req := httptest.NewRequest("POST", "/api/v1/demo/evidence?action=evidence.upload.success", nil)
	req.Header.Set("X-Request-Id", "req-7")
	if resp := h.Do(req, alice); resp.StatusCode != http.StatusCreated {
		t.Fatalf("good action: %d", resp.StatusCode)
	}
	entries := h.AuditEntries()
	if len(entries) != 1 {
		t.Fatalf("entries = %v", entries)
	}
	e := entries[0]
	if e.Action != "evidence.upload.success" || e.Status != "success" || e.TenantID != "t1" || e.ResourceType != "evidence" ||
		e.ResourceID != "ev-1" || e.RequestID != "req-7" || e.Principal.ID != alice.ID || e.Details["files"] != 2.0 {
		t.Errorf("entry = %+v", e)
	}

	for _, action := range []string{"evidence.upload", "Evidence.upload.success", "evidence.up-load.success", "a.b.c.d"} {
		resp := h.Do(httptest.NewRequest("POST", "/api/v1/demo/evidence?action="+action, nil), alice)
		if p := decode[sdk.Problem](t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.Detail, "InvalidArgument") {
			t.Errorf("action %q: %d %+v", action, resp.StatusCode, p)
		}
	}
	if n := len(h.AuditEntries()); n != 1 {
		t.Errorf("%d entries after rejected ones, want 1", n)
	}
}

func TestHostRejectsWhatTheHostRejects(t *testing.T) {
	_, d := startDemo(t, plugintest.Options{})
	ctx := context.Background()
	if err := d.env.Host.Audit(ctx, sdk.AuditEntry{Action: "evidence.upload.success", Status: "done"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad status: %v", err)
	}
	if err := d.env.Host.MarkFresh(ctx, "", "evidence", time.Now()); status.Code(err) != codes.InvalidArgument {
		t.Errorf("fresh mark without tenant: %v", err)
	}
	all, err := d.env.Host.Tenants(ctx)
	if err != nil || len(all) != 2 || all[0].ID != "t1" || all[0].SubscriptionID != "sub-1" || all[1].ID != "t2" {
		t.Errorf("tenants = %+v, %v", all, err)
	}
	one, err := d.env.Host.Tenants(ctx, "t2", "t3")
	if err != nil || len(one) != 1 || one[0].ID != "t2" {
		t.Errorf("tenants t2, t3 = %+v, %v", one, err)
	}
}

// Events reach the harness once per kind and dedupe key, as on the host,
// and one of a kind the plugin did not declare, or out of bounds, is
// refused.
func TestEvents(t *testing.T) {
	h, d := startDemo(t, plugintest.Options{})
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	e := sdk.Event{Kind: "demo.item_found", Severity: "warning", TenantID: "t1", Title: "Item 7 found", Message: "It was under the desk.",
		Link: "/demo/items/7", Details: map[string]any{"item": 7.0}, Recipients: []string{"ops@example.com"}, DedupeKey: "item/7", OccurredAt: at}
	for i, want := range []bool{false, true} {
		if dup, err := d.env.Host.RaiseEvent(ctx, e); err != nil || dup != want {
			t.Fatalf("raise %d: duplicate %v, %v; want %v", i, dup, err, want)
		}
	}
	for name, bad := range map[string]sdk.Event{
		"undeclared kind": {Kind: "demo.other", Severity: "info", Title: "x", DedupeKey: "k"},
		"bad severity":    {Kind: "demo.item_found", Severity: "fatal", Title: "x", DedupeKey: "k"},
		"no title":        {Kind: "demo.item_found", Severity: "info", DedupeKey: "k"},
		"no dedupe key":   {Kind: "demo.item_found", Severity: "info", Title: "x"},
		"external link":   {Kind: "demo.item_found", Severity: "info", Title: "x", DedupeKey: "k", Link: "//evil.example"},
		"bad recipient":   {Kind: "demo.item_found", Severity: "info", Title: "x", DedupeKey: "k", Recipients: []string{"Ops <ops@example.com>"}},
	} {
		if _, err := d.env.Host.RaiseEvent(ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	got := h.Events()
	if len(got) != 1 {
		t.Fatalf("events = %+v, want the one", got)
	}
	if g := got[0]; g.Kind != e.Kind || g.Severity != e.Severity || g.TenantID != "t1" || g.Title != e.Title || g.Message != e.Message ||
		g.Link != e.Link || g.Details["item"] != 7.0 || !slices.Equal(g.Recipients, e.Recipients) || g.DedupeKey != e.DedupeKey || !g.OccurredAt.Equal(at) {
		t.Errorf("event = %+v, want %+v", g, e)
	}
	if types := h.Describe().EventTypes; len(types) != 1 || types[0].Name != "demo.item_found" {
		t.Errorf("declared event types = %v", types)
	}
}

func TestHealth(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	got := h.Health()
	if got.Status != "degraded" || got.Message != "export API slow" || got.Details["latency_ms"] != "900" {
		t.Errorf("health = %+v", got)
	}
}

// TestParametersValidatedAsOnTheHost sends parameters the route's operation
// refuses and expects the host's 422, naming each parameter, before the
// handler runs.
func TestParametersValidatedAsOnTheHost(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	for _, tc := range []struct {
		query, msg string
		value      any
	}{
		{"?limit=abc", "expected integer", "abc"},
		{"?limit=0", "expected number >= 1", 0.0},
		{"?limit=501", "expected number <= 500", 501.0},
	} {
		resp := h.Do(httptest.NewRequest("GET", "/api/v1/demo/items"+tc.query, nil), alice)
		p := decode[sdk.Problem](t, resp)
		if resp.StatusCode != http.StatusUnprocessableEntity || p.Status != http.StatusUnprocessableEntity || p.Detail != "validation failed" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%q: %d %+v", tc.query, resp.StatusCode, p)
			continue
		}
		if len(p.Errors) != 1 || p.Errors[0].Location != "query.limit" || p.Errors[0].Message != tc.msg || p.Errors[0].Value != tc.value {
			t.Errorf("%q: errors %+v", tc.query, p.Errors)
		}
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/demo/items?limit=500", nil), alice); resp.StatusCode != http.StatusOK {
		t.Errorf("limit=500: status %d", resp.StatusCode)
	}
}

// TestControlCharactersRefusedAsOnTheHost sends control characters in each
// kind of input and expects the host's 422 naming the field, before the
// handler runs; text that may span lines keeps its line breaks.
func TestControlCharactersRefusedAsOnTheHost(t *testing.T) {
	h, _ := startDemo(t, plugintest.Options{})
	for _, tc := range []struct {
		name, method, target, contentType, body string
		locations                               []string
	}{
		{"query value", "GET", "/api/v1/demo/items?q=a%00b", "", "", []string{"query.q"}},
		{"query name", "GET", "/api/v1/demo/items?a%07b=1", "", "", []string{"query.ab"}},
		{"path parameter", "GET", "/api/v1/demo/tenants/t1%1B/items", "", "", []string{"path.tenant_id"}},
		{"json field", "POST", "/api/v1/demo/echo", "application/json", `{"name":"ok","notes":["fine","bad\u0000"]}`, []string{"body.notes[1]"}},
		{"form field", "POST", "/api/v1/demo/echo", "application/x-www-form-urlencoded", "name=a%08b&notes=line%0Aline", []string{"body.name"}},
		{"invalid utf-8", "GET", "/api/v1/demo/items?q=%FF", "", "", []string{"query.q"}},
	} {
		req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		resp := h.Do(req, alice)
		p := decode[sdk.Problem](t, resp)
		if resp.StatusCode != http.StatusUnprocessableEntity || p.Detail != "validation failed" {
			t.Errorf("%s: %d %+v", tc.name, resp.StatusCode, p)
			continue
		}
		var got []string
		for _, e := range p.Errors {
			if e.Message != "must be UTF-8 text without control characters" {
				t.Errorf("%s: message %q", tc.name, e.Message)
			}
			got = append(got, e.Location)
		}
		if !slices.Equal(got, tc.locations) {
			t.Errorf("%s: locations %v, want %v", tc.name, got, tc.locations)
		}
	}
	req := httptest.NewRequest("POST", "/api/v1/demo/echo", strings.NewReader(`{"notes":"two\nlines\tand a tab"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp := h.Do(req, alice); resp.StatusCode != http.StatusOK {
		t.Errorf("multi-line JSON text: status %d", resp.StatusCode)
	} else if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `two\nlines`) {
		t.Errorf("the plugin did not get the body back whole: %s", b)
	}
}
