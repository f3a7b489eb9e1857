package plugintest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/internal/testbin"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// testpluginBinary is the test plugin binary, built once if need be.
func testpluginBinary(t *testing.T) string { return testbin.TestPlugin(t) }

// startTestplugin starts the testplugin on a fresh SQLite database,
// migrated from the files the plugin describes, as the host migrates it.
func startTestplugin(t *testing.T, dataSocket bool) *plugintest.Harness {
	t.Helper()
	bin := testpluginBinary(t)
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	return plugintest.Start(t, bin, plugintest.Options{
		DatabaseURL: dbURL,
		Tenants:     tenants,
		DataSocket:  dataSocket,
		Migrate: func(ctx context.Context, fsys fs.FS) error {
			db, err := store.Open(ctx, dbURL, store.Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = store.Migrate(ctx, db, fsys, "plugin_testplugin_migrations")
			return err
		},
	})
}

func TestSubprocessDescribe(t *testing.T) {
	desc := startTestplugin(t, false).Describe()
	if desc.Name != "testplugin" || desc.Version != "1.0.0" || desc.ProtocolVersion != protocol.Version || desc.SdkVersion != sdk.Version {
		t.Errorf("identity = %s %s protocol %d sdk %s", desc.Name, desc.Version, desc.ProtocolVersion, desc.SdkVersion)
	}
	routes := map[string]*pluginv1.Route{}
	for _, r := range desc.Routes {
		routes[r.Method+" "+r.Path] = r
		if r.RateClass != pluginv1.RateClass_RATE_CLASS_DEFAULT {
			t.Errorf("%s %s has rate class %v", r.Method, r.Path, r.RateClass)
		}
		var op map[string]any
		if err := json.Unmarshal(r.OpenapiOperation, &op); err != nil || op["operationId"] == "" {
			t.Errorf("%s %s operation %s: %v", r.Method, r.Path, r.OpenapiOperation, err)
		}
	}
	for key, want := range map[string]pluginv1.Auth{
		"GET /api/v1/testplugin/ping":   pluginv1.Auth_AUTH_NONE,
		"GET /api/v1/testplugin/whoami": pluginv1.Auth_AUTH_USER,
		"POST /api/v1/testplugin/crash": pluginv1.Auth_AUTH_ADMIN,
		"GET /api/v1/testplugin/hang":   pluginv1.Auth_AUTH_ADMIN,
	} {
		if r := routes[key]; r == nil || r.Auth != want {
			t.Errorf("%s: %v, want auth %v", key, r, want)
		}
	}
	items := routes["GET /api/v1/testplugin/items"]
	type param struct {
		Name   string `json:"name"`
		Schema struct {
			Minimum *float64 `json:"minimum"`
			Maximum *float64 `json:"maximum"`
		} `json:"schema"`
	}
	var op struct {
		Parameters []param `json:"parameters"`
	}
	err := json.Unmarshal(items.OpenapiOperation, &op)
	limit := slices.IndexFunc(op.Parameters, func(p param) bool { return p.Name == "limit" })
	if err != nil || len(op.Parameters) != 3 || limit < 0 ||
		op.Parameters[limit].Schema.Minimum == nil || *op.Parameters[limit].Schema.Minimum != 1 || *op.Parameters[limit].Schema.Maximum != 500 {
		t.Errorf("items operation = %s (%v)", items.OpenapiOperation, err)
	}
	if ti := items.TenantInput; ti == nil || ti.In != "query" || ti.Name != "tenant_ids" {
		t.Errorf("items tenant input = %v, want query tenant_ids", ti)
	}
	if !items.TenantScoped || !routes["GET /api/v1/testplugin/tenants/{tenant_id}/items"].TenantScoped || routes["GET /api/v1/testplugin/ping"].TenantScoped {
		t.Error("tenant_scoped flags are wrong")
	}
	jobs := map[string]*pluginv1.Job{}
	for _, j := range desc.Jobs {
		jobs[j.Name] = j
	}
	if j := jobs["sync"]; j == nil || j.JobType != "testplugin" || j.DataDomain != "testplugin" || jobs["fail"] == nil {
		t.Errorf("jobs = %v", desc.Jobs)
	}
	if !slices.ContainsFunc(desc.Datasets, func(d *pluginv1.Dataset) bool { return d.Name == "testplugin.items" }) {
		t.Errorf("datasets = %v", desc.Datasets)
	}
	var names []string
	for _, m := range desc.Migrations {
		if len(m.Content) == 0 {
			t.Errorf("migration %s is empty", m.Name)
		}
		names = append(names, m.Name)
	}
	for _, want := range []string{"0001_items.down.sql", "0001_items.postgres.up.sql", "0001_items.sqlite.up.sql"} {
		if !slices.Contains(names, want) {
			t.Errorf("migrations %v lack %s", names, want)
		}
	}
}

// TestSubprocessOverGRPC drives the testplugin through HandleHTTP only.
func TestSubprocessOverGRPC(t *testing.T) {
	h := startTestplugin(t, false)
	ctx := context.Background()

	n, progress, err := h.RunJob(ctx, "sync")
	if err != nil || n != 200 {
		t.Fatalf("sync = %d, %v", n, err)
	}
	if len(progress) != 2 || progress[1] != (plugintest.Progress{Done: 2, Total: 2, Message: "tenant Beta"}) {
		t.Errorf("progress = %v", progress)
	}
	if marks := h.FreshMarks(); len(marks) != 2 || marks[0].TenantID != "t1" || marks[1].Domain != "testplugin" || marks[0].SyncedAt.IsZero() {
		t.Errorf("fresh marks = %v", marks)
	}
	if _, _, err := h.RunJob(ctx, "fail"); !strings.HasPrefix(status.Convert(err).Message(), "failing on purpose: subscriptions ") {
		t.Errorf("failing job: %v", err)
	}

	whoami(t, h, "over gRPC")
	items := decode[struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
		} `json:"items"`
		Total int `json:"total"`
	}](t, h.Do(httptest.NewRequest("GET", "/api/v1/testplugin/items?tenant_ids=t2&limit=5", nil), alice))
	if items.Total != 100 || len(items.Items) != 5 || items.Items[0].TenantID != "t2" {
		t.Errorf("items = %+v", items)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/testplugin/tenants/t3/items", nil), alice); resp.StatusCode != http.StatusForbidden {
		t.Errorf("items of a tenant out of scope: %d", resp.StatusCode)
	}

	const size = 10 << 20
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	resp := h.Do(httptest.NewRequest("POST", "/api/v1/testplugin/echo", bytes.NewReader(body)), alice)
	if got, _ := io.ReadAll(resp.Body); !bytes.Equal(got, body) {
		t.Errorf("echo: %d of %d bytes back", len(got), size)
	}
	resp = h.Do(httptest.NewRequest("GET", fmt.Sprintf("/api/v1/testplugin/large?size=%d", size), nil), alice)
	if got, _ := io.ReadAll(resp.Body); len(got) != size {
		t.Errorf("large: %d bytes, want %d", len(got), size)
	}

	if resp := h.Do(httptest.NewRequest("POST", "/api/v1/testplugin/audit", nil), alice); resp.StatusCode != http.StatusCreated {
		t.Errorf("audit route: %d", resp.StatusCode)
	}
	if e := h.AuditEntries(); len(e) != 1 || e[0].Action != "testplugin_item.create.success" || e[0].Principal.ID != alice.ID || e[0].TenantID != "t1" {
		t.Errorf("audit entries = %+v", e)
	}

	records, err := h.ReadDataset(ctx, "testplugin.items", []string{"t1", "t2"}, nil)
	if err != nil || len(records) != 200 {
		t.Errorf("dataset: %d records, %v", len(records), err)
	}
	if got := h.Health(); got.Status != "ok" {
		t.Errorf("health = %+v", got)
	}
}

func whoami(t *testing.T, h *plugintest.Harness, plane string) {
	t.Helper()
	req := httptest.NewRequest("GET", "/api/v1/testplugin/whoami", nil)
	req.Header.Set("X-Request-Id", "req-"+plane)
	req.Header.Set("Authorization", "Bearer secret")
	got := decode[struct {
		Principal      sdk.Principal `json:"principal"`
		RequestID      string        `json:"request_id"`
		Route          string        `json:"route"`
		SawAuthHeader  bool          `json:"saw_auth_header"`
		SawPluginToken bool          `json:"saw_plugin_token"`
	}](t, h.Do(req, admin))
	if got.Principal.ID != admin.ID || !got.Principal.IsAdmin || got.Principal.Kind != "apikey" || !slices.Equal(got.Principal.TenantIDs, admin.TenantIDs) {
		t.Errorf("%s: principal = %+v", plane, got.Principal)
	}
	if got.RequestID != "req-"+plane || got.Route != "/api/v1/testplugin/whoami" || got.SawAuthHeader || got.SawPluginToken {
		t.Errorf("%s: whoami = %+v", plane, got)
	}
}

// TestSubprocessDataSocket drives the testplugin through its data socket,
// as the host does by default.
func TestSubprocessDataSocket(t *testing.T) {
	h := startTestplugin(t, true)
	path, token := h.DataSocket()
	if path == "" || len(token) < 16 {
		t.Fatalf("data socket %q, token %q", path, token)
	}
	whoami(t, h, "over the socket")
	resp := h.Do(httptest.NewRequest("GET", "/api/v1/testplugin/items?tenant_ids=t3", nil), alice)
	if p := decode[sdk.Problem](t, resp); resp.StatusCode != http.StatusForbidden || strings.Contains(p.Detail, "t3") {
		t.Errorf("tenant out of scope over the socket: %d %+v", resp.StatusCode, p)
	}

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	t.Cleanup(client.CloseIdleConnections)
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"missing token", "", http.StatusUnauthorized},
		{"wrong token", strings.Repeat("0", len(token)), http.StatusUnauthorized},
		{"token prefix", token[:len(token)-1], http.StatusUnauthorized},
		{"right token", token, http.StatusOK},
	} {
		req, _ := http.NewRequest("GET", "http://plugin/api/v1/testplugin/ping", nil)
		if tc.token != "" {
			req.Header.Set(protocol.HeaderToken, tc.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		if tc.status == http.StatusOK && string(body) != "pong" {
			t.Errorf("%s: body %q", tc.name, body)
		}
	}
}

func TestStartFailures(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-plugin")
	if msg := fatalOf(t, func(tb testing.TB) { plugintest.Start(tb, missing, plugintest.Options{}) }); !strings.Contains(msg, "start "+missing) {
		t.Errorf("a missing binary reported %q", msg)
	}
	bin := testpluginBinary(t)
	if msg := fatalOf(t, func(tb testing.TB) {
		plugintest.Start(tb, bin, plugintest.Options{DatabaseURL: "nosuchscheme://x", Migrate: func(context.Context, fs.FS) error { return nil }})
	}); !strings.Contains(msg, "configure") || !strings.Contains(msg, "unsupported database scheme") {
		t.Errorf("a failing Configure reported %q", msg)
	}
	// Without a Migrate of the test's, the harness migrates as the host
	// does, and says so when it cannot.
	if msg := fatalOf(t, func(tb testing.TB) {
		plugintest.Start(tb, bin, plugintest.Options{DatabaseURL: "nosuchscheme://x"})
	}); !strings.Contains(msg, "migrations: store: unsupported database scheme") {
		t.Errorf("a database the harness cannot migrate reported %q", msg)
	}
}

// With protocol.EnvProfileDir set, a plugin that the host stops writes a CPU
// profile of its run and an allocation profile there, each named by the
// plugin and its process id; without it, nothing (every other test).
func TestSubprocessWritesProfilesWhenAsked(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(protocol.EnvProfileDir, dir)
	// Cleanups run last first: this one runs once the harness has stopped
	// the plugin.
	t.Cleanup(func() {
		for _, kind := range []string{"cpu", "allocs"} {
			paths, _ := filepath.Glob(filepath.Join(dir, "testplugin-*."+kind+".pprof"))
			if len(paths) != 1 {
				t.Errorf("%s profiles in %s: %q, want one", kind, dir, paths)
				continue
			}
			f, err := os.Open(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			// A profile is a gzip-compressed protocol buffer.
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Errorf("%s: %v", paths[0], err)
			} else if n, err := io.Copy(io.Discard, zr); err != nil || n == 0 {
				t.Errorf("%s: %d bytes of profile, %v", paths[0], n, err)
			}
			f.Close()
		}
	})
	h := startTestplugin(t, true)
	whoami(t, h, "over the socket")
}
