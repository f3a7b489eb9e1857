package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/app"
	"github.com/stewardhq/steward/host/jobs"
	"github.com/stewardhq/steward/host/server"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/plugins/testplugin/testplugin"
	"github.com/stewardhq/steward/sdk"
)

// inHostPrefix is where the host serves the test plugin's own handler, so
// that a path with and without it differs only by the plugin hop.
const inHostPrefix = "/inhost"

// benchHost is a host started in this process with the test plugin as a
// subprocess on one data plane, serving on a loopback port, with one tenant
// of 100 items and an admin token whose scope is that tenant.
type benchHost struct {
	h         *app.Host
	url       string
	token     string
	pluginPID int
	dir       string
}

var hosts = struct {
	sync.Mutex
	m map[string]*benchHost
}{m: map[string]*benchHost{}}

// hostFor returns the host for a data plane, starting it on first use; every
// host lives until the end of the run so the benchmarks can run back to back.
func hostFor(tb testing.TB, plane string) *benchHost {
	tb.Helper()
	hosts.Lock()
	defer hosts.Unlock()
	if bh, ok := hosts.m[plane]; ok {
		return bh
	}
	bh, err := startHost(plane, binDir(tb))
	if err != nil {
		tb.Fatalf("start host (%s data plane): %v", plane, err)
	}
	hosts.m[plane] = bh
	return bh
}

func closeHosts() {
	hosts.Lock()
	defer hosts.Unlock()
	for plane, bh := range hosts.m {
		bh.close()
		delete(hosts.m, plane)
	}
}

func startHost(plane, bin string) (_ *benchHost, err error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "steward-bench-")
	if err != nil {
		return nil, err
	}
	bh := &benchHost{dir: dir}
	defer func() {
		if err != nil {
			bh.close()
		}
	}()
	hcl := filepath.Join(dir, "plugins.hcl")
	decl := fmt.Sprintf("plugin \"testplugin\" {\n  binary     = %q\n  data_plane = %q\n}\n", filepath.Join(bin, "plugins", "testplugin"), plane)
	if err := os.WriteFile(hcl, []byte(decl), 0o600); err != nil {
		return nil, err
	}
	dbURL := "sqlite://" + filepath.Join(dir, "steward.db")
	env := map[string]string{
		"STEWARD_ENV":          config.Development,
		"STEWARD_DATA_DIR":     dir,
		"STEWARD_DATABASE_URL": dbURL,
		"STEWARD_PLUGINS_FILE": hcl,
		// The budgets are not what is measured; they must never refuse.
		"STEWARD_RATE_LIMIT_PER_MINUTE":      "1000000000",
		"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000000000",
		"STEWARD_ACCESS_LOG":                 "false",
		// One tenant only: the simulated world's would widen the scope.
		"STEWARD_SIM_BOOTSTRAP": "false",
		"STEWARD_LOG_LEVEL":     "warn",
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}

	// The very handler the plugin process serves, with its own store pool
	// (opened as the SDK opens it) on the plugin's own database (the file the host gives the plugin),
	// as the plugin has. A block without config {} gives the plugin its
	// defaults.
	pluginDB := "sqlite://" + filepath.Join(dir, "plugins", "testplugin.db")
	db, err := store.Open(ctx, pluginDB, store.Options{})
	if err != nil {
		return nil, err
	}
	p, err := testplugin.New(ctx, testplugin.Config{}.Defaults(), &sdk.Env{DB: db, DatabaseURL: pluginDB, Environment: cfg.Env, DataDir: dir})
	if err != nil {
		return nil, fmt.Errorf("configure in-host plugin: %w", err)
	}
	inHost := http.StripPrefix(inHostPrefix, p.HTTPHandler())
	mount := func(a *fiber.App) {
		for _, r := range p.Routes {
			if r.Method == http.MethodGet && slices.ContainsFunc(workloads, func(w workload) bool { return w.route == r.Path }) {
				a.Get(inHostPrefix+r.Path, serveInHost(inHost, r))
			}
		}
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "steward", Level: hclog.Warn, Output: os.Stderr})
	if bh.h, err = app.Start(ctx, cfg, app.Options{Logger: logger, Mount: mount}); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = bh.h.Server.App.Listener(ln) }()
	bh.url = "http://" + ln.Addr().String()

	inst, ok := bh.h.Plugins.Instance("testplugin")
	if !ok || inst.PID() == 0 {
		return nil, errors.New("test plugin is not running")
	}
	if got := inst.Status().DataPlane; got != plane {
		return nil, fmt.Errorf("plugin runs on the %s data plane, want %s", got, plane)
	}
	bh.pluginPID = inst.PID()
	if bh.token, err = login(bh.url); err != nil {
		return nil, err
	}
	if err := seed(ctx, bh.h); err != nil {
		return nil, err
	}
	return bh, bh.check()
}

// serveInHost runs a plugin handler inside the host. The host middleware
// has already run; like the dispatcher, it enforces the route's auth
// requirement and hands the handler the principal through the SDK's
// request info, as the SDK's own transports do.
func serveInHost(h http.Handler, r sdk.Route) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := server.PrincipalOf(c)
		if r.Auth != sdk.AuthNone && p == nil {
			return fiber.NewError(fiber.StatusUnauthorized, "authentication required")
		}
		info := sdk.RequestInfo{RequestID: string(c.Response().Header.Peek(fiber.HeaderXRequestID)), Route: r.Path}
		if p != nil {
			info.Principal = sdk.Principal{ID: p.ID, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Kind: p.Kind, TenantIDs: p.TenantIDs}
		}
		return adaptor.HTTPHandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h.ServeHTTP(w, req.WithContext(sdk.WithRequestInfo(req.Context(), info)))
		})(c)
	}
}

// seed creates one tenant and runs the plugin's sync job, which gives it
// 100 items.
func seed(ctx context.Context, h *app.Host) error {
	t := &tenancy.Tenant{Name: "Bench", DirectoryTenantID: "dir-bench", IsActive: true}
	if err := tenancy.New(h.DB).CreateTenant(ctx, t); err != nil {
		return err
	}
	runs, err := h.Jobs.Trigger(ctx, "testplugin", "bench")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range runs {
		for {
			run, err := h.Jobs.Get(ctx, r.ID)
			if err != nil {
				return err
			}
			if run.Status == jobs.StatusCompleted {
				break
			}
			if run.Status == jobs.StatusFailed {
				msg := ""
				if run.ErrorMessage != nil {
					msg = *run.ErrorMessage
				}
				return fmt.Errorf("sync job failed: %s", msg)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("sync job still %s", run.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// check proves both paths answer the same before anything is timed.
func (bh *benchHost) check() error {
	for _, w := range workloads {
		proxied, err := bh.get(w.path(), w.auth)
		if err != nil {
			return err
		}
		inHost, err := bh.get(inHostPrefix+w.path(), w.auth)
		if err != nil {
			return err
		}
		if !bytes.Equal(proxied, inHost) {
			return fmt.Errorf("%s: proxied and in-host bodies differ:\n%.300s\n%.300s", w.route, proxied, inHost)
		}
		if w.items > 0 {
			var body struct {
				Items []json.RawMessage `json:"items"`
				Total int               `json:"total"`
			}
			if err := json.Unmarshal(proxied, &body); err != nil {
				return fmt.Errorf("%s: %w", w.route, err)
			}
			// The scope must hold exactly the one seeded tenant.
			if len(body.Items) != w.items || body.Total != w.items {
				return fmt.Errorf("%s: %d items of %d, want %d of %d", w.route, len(body.Items), body.Total, w.items, w.items)
			}
		}
	}
	return nil
}

func (bh *benchHost) get(path string, auth bool) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, bh.url+path, nil)
	if err != nil {
		return nil, err
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+bh.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return b, nil
}

func (bh *benchHost) close() {
	if bh.h != nil {
		_ = bh.h.Server.App.ShutdownWithTimeout(5 * time.Second)
		bh.h.Close()
	}
	_ = os.RemoveAll(bh.dir)
}

// login signs in with the development pair and returns the access token.
func login(base string) (string, error) {
	form := url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}}
	resp, err := http.PostForm(base+"/api/v1/auth/login", form)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("login: %d %s", resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// pluginStatus is a plugin as GET /api/v1/plugins reports it.
type pluginStatus struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	PID       int    `json:"pid"`
	LastError string `json:"last_error"`
}

// pluginStatuses asks a running host for its plugins, as an operator would.
func pluginStatuses(base, token string) ([]pluginStatus, error) {
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/plugins", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("plugins: %d %s", resp.StatusCode, b)
	}
	var list []pluginStatus
	err = json.NewDecoder(resp.Body).Decode(&list)
	return list, err
}

// vmRSS is a process's resident set size in bytes.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
