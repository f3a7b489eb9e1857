// Package e2e starts the real steward binary with real plugin subprocesses
// and talks to it over HTTP, on SQLite and on PostgreSQL.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/app"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/pluginstore"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/internal/logsink"
)

// Tests that spend most of their time waiting (an outage, a threshold, a
// scheduled slot) call t.Parallel: go test runs them together once the
// others are done, as many at once as -parallel allows (make test: 4).
// Each has its own host, database schema and Redis prefix.

// binDir holds bin/steward and bin/plugins/*: `make test` builds them once
// and passes STEWARD_TEST_BIN; a bare `go test` builds them here once.
var binDir string

func TestMain(m *testing.M) {
	binDir = os.Getenv("STEWARD_TEST_BIN")
	cleanup := func() {}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "steward-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cleanup = func() { os.RemoveAll(dir) }
		for target, pkg := range map[string]string{"steward": "./host/cmd/steward", "plugins/testplugin": "./plugins/testplugin", "plugins/resources": "./plugins/resources", "plugins/cost": "./plugins/cost", "plugins/identity": "./plugins/identity"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, target), pkg)
			cmd.Dir = "../.."
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "build", pkg, err)
				os.Exit(1)
			}
		}
		binDir = dir
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

type hostOpts struct {
	databaseURL string
	redisURL    string
	redisPrefix string
	pluginsHCL  string // replaces the default declaration
	env         map[string]string
	dataDir     string
	// client reaches the host; http.DefaultClient when nil (a host
	// serving TLS needs one trusting its certificate).
	client *http.Client
}

type host struct {
	t       testing.TB
	url     string
	dataDir string
	dbURL   string
	cmd     *exec.Cmd
	client  *http.Client
	logs    *logsink.Buffer
	exited  chan struct{}
}

func defaultPlugins() string {
	return fmt.Sprintf(`plugin "testplugin" {
  binary = %q
  restart {
    max_crashes     = 3
    window          = "1m"
    backoff_initial = "100ms"
    backoff_max     = "500ms"
  }
}
`, filepath.Join(binDir, "plugins", "testplugin"))
}

// anyPort lets a host under test bind a free port itself, so no other
// process can take it between choosing and binding; the host names it in
// its ready line.
const anyPort = "127.0.0.1:0"

// readyAddrRE finds the address in the ready line, logged as text in
// development and as JSON otherwise.
var readyAddrRE = regexp.MustCompile(`steward ready.*?"?addr"?[=:]"?(https?://[^\s"]+)`)

// startHost runs bin/steward serve and waits until /health answers.
func startHost(t testing.TB, o hostOpts) *host {
	t.Helper()
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	if o.pluginsHCL == "" {
		o.pluginsHCL = defaultPlugins()
	}
	hcl := filepath.Join(o.dataDir, "plugins.hcl")
	if err := os.WriteFile(hcl, []byte(o.pluginsHCL), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.databaseURL == "" {
		o.databaseURL = "sqlite://" + filepath.Join(o.dataDir, "steward.db")
	}
	cmd := exec.Command(filepath.Join(binDir, "steward"), "serve")
	cmd.Env = append(os.Environ(),
		"STEWARD_ENV=development", "STEWARD_HTTP_ADDR="+anyPort, "STEWARD_DATA_DIR="+o.dataDir,
		"STEWARD_DATABASE_URL="+o.databaseURL, "STEWARD_PLUGINS_FILE="+hcl, "STEWARD_REDIS_URL="+o.redisURL,
		"STEWARD_REDIS_PREFIX="+o.redisPrefix, "STEWARD_LOG_LEVEL=debug", "STEWARD_SIM_BOOTSTRAP=false")
	for k, v := range o.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if o.client == nil {
		o.client = http.DefaultClient
	}
	h := &host{t: t, dataDir: o.dataDir, dbURL: o.databaseURL, cmd: cmd, client: o.client, logs: &logsink.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.logs, h.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(h.exited)
	}()
	dropPluginRolesAtEnd(t, o.databaseURL)
	t.Cleanup(func() {
		h.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("host log:\n%s", h.logs.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-h.exited:
			t.Fatalf("host exited during start-up:\n%s", h.logs.String())
		default:
		}
		if h.url == "" {
			if m := readyAddrRE.FindStringSubmatch(h.logs.String()); m != nil {
				h.url = m[1]
			} else {
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		resp, err := h.client.Get(h.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("host did not become ready:\n%s", h.logs.String())
	return nil
}

// stop signals the host and waits for it to exit.
func (h *host) stop(sig syscall.Signal) {
	select {
	case <-h.exited:
		return
	default:
	}
	_ = h.cmd.Process.Signal(sig)
	select {
	case <-h.exited:
	case <-time.After(15 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (h *host) do(method, path, token string, body io.Reader, header ...string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// The document is fetched before the first request rather than after
	// it, so that its fetch is not counted by the rate limit between one
	// response's headers and the next request.
	_, _ = h.document()
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	h.conform(req, resp.StatusCode, resp.Header, b)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (h *host) get(path, token string) response { return h.do(http.MethodGet, path, token, nil) }

// tenantIDs lists the registered tenants' ids by name, as the admin sees
// them.
func (h *host) tenantIDs(t *testing.T, admin string) map[string]string {
	t.Helper()
	var tenants []tenancy.Tenant
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	ids := make(map[string]string, len(tenants))
	for _, tn := range tenants {
		ids[tn.Name] = tn.ID
	}
	return ids
}

// login signs in with the development pair and returns the access token.
func (h *host) login() string {
	h.t.Helper()
	form := neturl.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}}
	r := h.do(http.MethodPost, "/api/v1/auth/login", "", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	if r.status != http.StatusOK {
		h.t.Fatalf("login: %d %s", r.status, r.body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	r.json(h.t, &tok)
	if tok.AccessToken == "" || tok.TokenType != "bearer" {
		h.t.Fatalf("token response %s", r.body)
	}
	return tok.AccessToken
}

// db opens the host's database from the test, to arrange fixtures the API
// of this stage cannot create yet (tenants, standard users).
func (h *host) db() *bun.DB {
	h.t.Helper()
	db, err := store.Open(context.Background(), h.dbURL, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { db.Close() })
	return db
}

// pluginDB opens a plugin's own database from the test, with the rights of
// the test's database user: the plugin's file under the data directory on
// SQLite, its schema on PostgreSQL.
func (h *host) pluginDB(plugin string) *bun.DB {
	h.t.Helper()
	url := "sqlite://" + filepath.Join(h.dataDir, "plugins", plugin+".db")
	if strings.HasPrefix(h.dbURL, "postgres") {
		var database, schema string
		if err := h.db().NewRaw("SELECT current_database(), current_schema()").Scan(context.Background(), &database, &schema); err != nil {
			h.t.Fatal(err)
		}
		u, err := neturl.Parse(h.dbURL)
		if err != nil {
			h.t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", pluginstore.Name(database, schema, plugin))
		u.RawQuery = q.Encode()
		url = u.String()
	}
	db, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { db.Close() })
	return db
}

// dropping holds the PostgreSQL databases whose plugin roles a test's
// cleanup drops: the first host started on one drops them once every host
// on it has stopped, since roles outlive the test's schema.
var dropping sync.Map

func dropPluginRolesAtEnd(t testing.TB, databaseURL string) {
	if !strings.HasPrefix(databaseURL, "postgres") {
		return
	}
	if _, loaded := dropping.LoadOrStore(databaseURL, true); loaded {
		return
	}
	t.Cleanup(func() {
		defer dropping.Delete(databaseURL)
		ctx := context.Background()
		db, err := store.Open(ctx, databaseURL, store.Options{MaxOpenConns: 1})
		if err != nil {
			t.Errorf("drop plugin roles: %v", err)
			return
		}
		defer db.Close()
		if err := pluginstore.Drop(ctx, db); err != nil {
			t.Errorf("drop plugin roles: %v", err)
		}
	})
}

// tokenFor mints an access token for a user with the host's own secret, as
// the identity-provider sign-in of a later stage will.
func (h *host) tokenFor(u tenancy.User) string {
	h.t.Helper()
	secret, err := os.ReadFile(filepath.Join(h.dataDir, auth.DevSecretFile))
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

// pluginPID asks the host for the plugin's process id.
func (h *host) pluginPID(admin, name string) int {
	h.t.Helper()
	var list []struct {
		Name  string `json:"name"`
		State string `json:"state"`
		PID   int    `json:"pid"`
	}
	r := h.get("/api/v1/plugins", admin)
	r.json(h.t, &list)
	for _, p := range list {
		if p.Name == name && p.State == "running" {
			return p.PID
		}
	}
	h.t.Fatalf("plugin %s not running: %s", name, r.body)
	return 0
}

func (h *host) waitFor(what string, timeout time.Duration, cond func() bool) {
	h.t.Helper()
	// The pause grows from 25 ms to a quarter second: a condition that is
	// met at once is seen at once, and one that takes seconds (a sync run
	// waits up to a second for the queue's poll) costs a handful of
	// requests, not the caller's whole rate limit.
	deadline := time.Now().Add(timeout)
	for pause := 25 * time.Millisecond; time.Now().Before(deadline); pause = min(pause*3/2, 250*time.Millisecond) {
		if cond() {
			return
		}
		time.Sleep(pause)
	}
	h.t.Fatalf("timed out waiting for %s", what)
}

func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	var ppid int
	fmt.Sscanf(fields[1], "%d", &ppid)
	return ppid
}

// writeWorld saves a world file for STEWARD_SIM_WORLD.
func writeWorld(t *testing.T, w world.World) string {
	t.Helper()
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "world.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
