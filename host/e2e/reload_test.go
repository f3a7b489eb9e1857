package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
)

// buildTestPlugin builds the test plugin reporting version.
func buildTestPlugin(t *testing.T, out, version string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/stewardhq/steward/plugins/testplugin/testplugin.Version="+version, "-o", out, "./plugins/testplugin")
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", version, err, b)
	}
}

// replaceBinary puts src's bytes at dst by a rename, as a deployment
// does: dst may be the image of a running process.
func replaceBinary(t *testing.T, src []byte, dst string) {
	t.Helper()
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// load is clients calling a plugin route in a loop, counting every answer
// that is not a 200.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	firstFail  string
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

func startLoad(h *host, token, path string, clients int) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 10 * time.Second}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url+path, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if ctx.Err() != nil {
					return
				}
				status, body := 0, ""
				if err == nil {
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					status, body = resp.StatusCode, string(b)
					if rerr != nil {
						err = rerr
					}
				}
				if err == nil && status == http.StatusOK {
					l.ok.Add(1)
					continue
				}
				l.failed.Add(1)
				l.mu.Lock()
				if l.firstFail == "" {
					l.firstFail = fmt.Sprintf("%d %v %s", status, err, body)
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// stop ends the load and fails t if any request failed.
func (l *load) stop(t *testing.T, what string) {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	t.Logf("%s: %d requests answered 200, %d failed", what, l.ok.Load(), l.failed.Load())
	if l.failed.Load() > 0 {
		t.Errorf("%s: %d failed requests; first: %s", what, l.failed.Load(), l.firstFail)
	}
	if l.ok.Load() == 0 {
		t.Errorf("%s: no request answered", what)
	}
}

type reloadAnswer struct {
	OldVersion string `json:"old_version"`
	NewVersion string `json:"new_version"`
	OldPID     int    `json:"old_pid"`
	NewPID     int    `json:"new_pid"`
	Drained    bool   `json:"drained"`
}

func (h *host) pluginVersion(t *testing.T, admin string) string {
	t.Helper()
	r := h.get("/api/v1/testplugin/whoami", admin)
	var who struct {
		Version string `json:"version"`
	}
	r.json(t, &who)
	return who.Version
}

// TestPluginReloadUnderLoad upgrades the test plugin twice in place while
// 64 clients call one of its routes, then tries binaries that cannot
// serve: no request fails, the new version answers after each upgrade, and
// a failed reload leaves the old process serving and says why.
func TestPluginReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	v2, v3 := filepath.Join(dir, "testplugin-v2"), filepath.Join(dir, "testplugin-v3")
	buildTestPlugin(t, v2, "2.0.0")
	buildTestPlugin(t, v3, "3.0.0")
	bin := filepath.Join(dir, "testplugin")
	replaceBinary(t, readFile(t, filepath.Join(binDir, "plugins", "testplugin")), bin)
	h := startHost(t, hostOpts{
		pluginsHCL: fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n}\n", bin),
		env:        map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000000"},
	})
	admin := h.login()
	if v := h.pluginVersion(t, admin); v != "1.0.0" {
		t.Fatalf("before any reload the plugin reports %q", v)
	}

	l := startLoad(h, admin, "/api/v1/testplugin/whoami", 64)
	t0 := time.Now()
	reload := func(want string) {
		t.Helper()
		time.Sleep(3 * time.Second)
		start := time.Now()
		r := h.do(http.MethodPost, "/api/v1/plugins/testplugin/reload", admin, nil)
		took := time.Since(start)
		if r.status != http.StatusOK {
			t.Fatalf("reload to %s: %d %s", want, r.status, r.body)
		}
		var a reloadAnswer
		r.json(t, &a)
		if a.NewVersion != want || a.NewPID == a.OldPID || !a.Drained {
			t.Fatalf("reload to %s answered %+v", want, a)
		}
		t.Logf("reload %s -> %s took %s under load", a.OldVersion, a.NewVersion, took.Round(time.Millisecond))
		if testbin.Alive(a.OldPID) {
			h.waitFor("old process stopped", 5*time.Second, func() bool { return !testbin.Alive(a.OldPID) })
		}
	}
	replaceBinary(t, readFile(t, v2), bin)
	reload("2.0.0")
	replaceBinary(t, readFile(t, v3), bin)
	reload("3.0.0")
	time.Sleep(time.Until(t0.Add(10 * time.Second)))
	l.stop(t, "two reloads")
	if v := h.pluginVersion(t, admin); v != "3.0.0" {
		t.Fatalf("after the reloads the plugin reports %q", v)
	}

	l = startLoad(h, admin, "/api/v1/testplugin/whoami", 64)
	pid := h.pluginPID(admin, "testplugin")
	good := readFile(t, v3)
	for _, broken := range []struct {
		name string
		body []byte
		want string
	}{
		{"a shell script", []byte("#!/bin/sh\necho not a plugin\nexit 1\n"), "start"},
		{"a truncated binary", good[:len(good)/2], "start"},
	} {
		replaceBinary(t, broken.body, bin)
		r := h.do(http.MethodPost, "/api/v1/plugins/testplugin/reload", admin, nil)
		var problem struct {
			Detail string `json:"detail"`
		}
		r.json(t, &problem)
		if r.status != http.StatusBadGateway || !strings.Contains(problem.Detail, broken.want) || !strings.Contains(problem.Detail, "goes on serving") {
			t.Fatalf("reload to %s: %d %s", broken.name, r.status, r.body)
		}
	}
	time.Sleep(time.Second)
	l.stop(t, "failed reloads")
	if v := h.pluginVersion(t, admin); v != "3.0.0" {
		t.Fatalf("after the failed reloads the plugin reports %q", v)
	}
	if h.pluginPID(admin, "testplugin") != pid {
		t.Fatal("a failed reload replaced the running process")
	}

	// The command line reloads through the running host's API with an
	// admin API key.
	replaceBinary(t, readFile(t, v2), bin)
	r := h.do(http.MethodPost, "/api/v1/api-keys", admin, strings.NewReader(`{"name":"deploy","role":"admin"}`), "Content-Type", "application/json")
	var key struct {
		Key string `json:"key"`
	}
	r.json(t, &key)
	steward := func(apiKey string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "steward"), "plugins", "reload", "testplugin")
		cmd.Env = append(os.Environ(), "STEWARD_HTTP_ADDR="+h.url, "STEWARD_API_KEY="+apiKey)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := steward(""); err == nil || !strings.Contains(out, "STEWARD_API_KEY") {
		t.Fatalf("steward plugins reload without a key: %v %s", err, out)
	}
	if out, err := steward(key.Key); err != nil || !strings.Contains(out, "testplugin reloaded: 3.0.0") || !strings.Contains(out, "-> 2.0.0") {
		t.Fatalf("steward plugins reload: %v %s", err, out)
	}
	if v := h.pluginVersion(t, admin); v != "2.0.0" {
		t.Fatalf("after steward plugins reload the plugin reports %q", v)
	}
	var list []struct {
		Name      string   `json:"name"`
		Version   string   `json:"version"`
		State     string   `json:"state"`
		PID       int      `json:"pid"`
		Restarts  int      `json:"restarts"`
		LastError string   `json:"last_error"`
		Endpoints []string `json:"endpoints"`
		Jobs      []string `json:"jobs"`
	}
	h.get("/api/v1/plugins", admin).json(t, &list)
	if len(list) != 1 || list[0].Version != "2.0.0" || list[0].State != "running" || list[0].PID == pid || list[0].Restarts != 0 ||
		!slices.Contains(list[0].Endpoints, "GET /api/v1/testplugin/whoami") || !slices.Contains(list[0].Jobs, "sync") {
		t.Fatalf("GET /api/v1/plugins after the reloads: %+v", list)
	}

	// Audit entries are written after the answer; wait for them.
	for action, want := range map[string]int64{"plugin.reload.success": 3, "plugin.reload.failure": 2} {
		h.waitFor(action+" audited", 5*time.Second, func() bool {
			n, err := h.db().NewSelect().Table("audit_logs").Where("action = ?", action).Where("resource_id = ?", "testplugin").Count(context.Background())
			return err == nil && n == want
		})
	}
}
