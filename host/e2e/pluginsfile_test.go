package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
)

// pluginState is a plugin as GET /api/v1/plugins lists it.
type pluginState struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	State   string `json:"state"`
	PID     int    `json:"pid"`
}

func (h *host) plugins(t *testing.T, admin string) map[string]pluginState {
	t.Helper()
	var list []pluginState
	h.get("/api/v1/plugins", admin).json(t, &list)
	out := map[string]pluginState{}
	for _, p := range list {
		out[p.Name] = p
	}
	return out
}

// TestSIGHUPAppliesPluginsFile edits plugins.hcl under a running host and
// sends it SIGHUP after each edit: a changed declaration is applied as a
// reload (no request fails), a disabled or removed plugin stops and its
// routes leave the API and its document, an enabled or added one starts,
// and a file that does not parse changes nothing. Each change is audited.
func TestSIGHUPAppliesPluginsFile(t *testing.T) {
	bin := filepath.Join(binDir, "plugins", "testplugin")
	declare := func(body string) string {
		return fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n%s}\n", bin, body)
	}
	h := startHost(t, hostOpts{
		pluginsHCL: declare(""),
		env:        map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000000"},
	})
	admin := h.login()
	hcl := filepath.Join(h.dataDir, "plugins.hcl")
	apply := func(content string) {
		t.Helper()
		if err := os.WriteFile(hcl, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	applied := func(n int) {
		t.Helper()
		h.waitFor(fmt.Sprintf("plugins.hcl applied %d times", n), 30*time.Second, func() bool {
			return strings.Count(h.logs.String(), "plugins.hcl applied") >= n
		})
	}
	// Straight to the host: the harness checks answers against the
	// document it read at start, which declared the route.
	pingStatus := func() int {
		t.Helper()
		r, err := http.Get(h.url + "/api/v1/testplugin/ping")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	inDocument := func() bool {
		return strings.Contains(string(h.get("/openapi.json", "").body), "/api/v1/testplugin/ping")
	}

	pid := h.pluginPID(admin, "testplugin")
	l := startLoad(h, admin, "/api/v1/testplugin/whoami", 16)
	time.Sleep(time.Second)
	apply(declare("  request_timeout = \"20s\"\n"))
	applied(1)
	time.Sleep(500 * time.Millisecond)
	l.stop(t, "a changed declaration applied by SIGHUP")
	if p := h.plugins(t, admin)["testplugin"]; p.State != "running" || p.PID == pid {
		t.Fatalf("after a changed declaration: %+v (pid was %d)", p, pid)
	}
	h.waitFor("the old process stopped", 5*time.Second, func() bool { return !testbin.Alive(pid) })

	pid = h.pluginPID(admin, "testplugin")
	apply(declare("  enabled = false\n"))
	applied(2)
	if p := h.plugins(t, admin)["testplugin"]; p.State != "disabled" || !h.gone(pid) {
		t.Fatalf("after disabling: %+v", p)
	}
	if code := pingStatus(); code != http.StatusNotFound || inDocument() {
		t.Fatalf("a disabled plugin's route: %d, in /openapi.json %t", code, inDocument())
	}

	apply(declare(""))
	applied(3)
	if p := h.plugins(t, admin)["testplugin"]; p.State != "running" || pingStatus() != http.StatusOK || !inDocument() {
		t.Fatalf("after enabling: %+v", p)
	}

	pid = h.pluginPID(admin, "testplugin")
	apply("")
	applied(4)
	if ps := h.plugins(t, admin); len(ps) != 0 || !h.gone(pid) || pingStatus() != http.StatusNotFound || inDocument() {
		t.Fatalf("after removing: %+v", ps)
	}

	apply("plugin \"testplugin\" {\n  binary = \n")
	h.waitFor("the broken file refused", 10*time.Second, func() bool {
		return strings.Contains(h.logs.String(), "plugins.hcl not applied")
	})
	if ps := h.plugins(t, admin); len(ps) != 0 {
		t.Fatalf("a file that does not parse changed the plugins: %+v", ps)
	}

	apply(declare(""))
	applied(5)
	if p := h.plugins(t, admin)["testplugin"]; p.State != "running" || pingStatus() != http.StatusOK {
		t.Fatalf("after adding: %+v", p)
	}

	for change, want := range map[string]int64{"changed": 1, "disabled": 1, "enabled": 1, "removed": 1, "added": 1} {
		n, err := h.db().NewSelect().Table("audit_logs").Where("action = ?", "plugin.apply.success").
			Where("resource_id = ?", "testplugin").Where("details LIKE ?", `%"change":"`+change+`"%`).Count(context.Background())
		if err != nil || n != want {
			t.Errorf("audit entries for %s: %d, %v", change, n, err)
		}
	}
}

// gone reports whether the process pid exits within five seconds.
func (h *host) gone(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for testbin.Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestJobInterruptedByAReloadRunsAgain: a job still running when a reload
// stops its process past drain_timeout is queued again and completes on
// the new process, its history saying it took two attempts.
func TestJobInterruptedByAReloadRunsAgain(t *testing.T) {
	h := startHost(t, hostOpts{pluginsHCL: fmt.Sprintf(`plugin "testplugin" {
  binary        = %q
  drain_timeout = "500ms"
  config {
    hold_job_seconds = 3
  }
}
`, filepath.Join(binDir, "plugins", "testplugin")),
		env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000000"}})
	f := &fixture{h: h, admin: h.login()}
	id := f.trigger(t, "testplugin-hold")
	h.waitFor("the hold job running", 10*time.Second, func() bool {
		var hist struct {
			Logs []run `json:"logs"`
		}
		h.get("/api/v1/sync/history?limit=5", f.admin).json(t, &hist)
		return len(hist.Logs) > 0 && hist.Logs[0].JobID == id && hist.Logs[0].Status == "running"
	})
	r := h.do(http.MethodPost, "/api/v1/plugins/testplugin/reload", f.admin, nil)
	var a reloadAnswer
	r.json(t, &a)
	if r.status != http.StatusOK || a.Drained {
		t.Fatalf("reload over the hold job: %d %s", r.status, r.body)
	}
	done := f.waitRun(t, id)
	if done.Status != "completed" || done.Attempts != 2 || done.RecordsProcessed != 1 {
		t.Fatalf("the interrupted run: %+v, want completed after 2 attempts", done)
	}
}
