package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
)

// TestPluginCrashAndRestart kills the plugin behind a route: the route
// answers 503 with Retry-After at once, and serves again after the
// supervisor restarts the plugin, without a host restart.
func TestPluginCrashAndRestart(t *testing.T) {
	h := startHost(t, hostOpts{})
	admin := h.login()
	pid := h.pluginPID(admin, "testplugin")
	if r := h.get("/api/v1/testplugin/whoami", admin); r.status != 200 {
		t.Fatalf("before the kill: %d", r.status)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitFor("plugin process gone", 2*time.Second, func() bool { return !testbin.Alive(pid) })

	t0 := time.Now()
	r := h.get("/api/v1/testplugin/whoami", admin)
	elapsed := time.Since(t0)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("right after the kill: %d Retry-After=%q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if elapsed > time.Second {
		t.Fatalf("503 took %s; a down plugin must answer at once", elapsed)
	}
	if r.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("503 content type %q", r.header.Get("Content-Type"))
	}
	// The log says why, under the request id the caller was given.
	id := r.header.Get("X-Request-Id")
	if id == "" {
		t.Fatal("the 503 carries no X-Request-Id")
	}
	h.waitFor("the 503 logged with its cause and request id "+id, 2*time.Second, func() bool {
		for _, line := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(line, "answered 503") && strings.Contains(line, "request_id="+id) &&
				strings.Contains(line, "plugin=testplugin") && strings.Contains(line, "cause=") {
				return true
			}
		}
		return false
	})

	h.waitFor("plugin served again", 5*time.Second, func() bool {
		return h.get("/api/v1/testplugin/whoami", admin).status == 200
	})
	if newPID := h.pluginPID(admin, "testplugin"); newPID == pid || parentPID(newPID) != h.cmd.Process.Pid {
		t.Fatalf("restarted plugin pid %d (old %d), parent %d", newPID, pid, parentPID(newPID))
	}
	if !strings.Contains(h.get("/metrics", "").String(), `steward_plugin_restarts_total{plugin="testplugin"} 1`) {
		t.Errorf("restart not counted in /metrics")
	}
}

// TestPluginCrashLoop: a plugin that keeps crashing is given up on after
// max_crashes within the window, and its routes answer 503 at once.
func TestPluginCrashLoop(t *testing.T) {
	h := startHost(t, hostOpts{})
	admin := h.login()
	for i := 0; i < 3; i++ {
		h.waitFor("plugin running", 5*time.Second, func() bool { return h.get("/api/v1/testplugin/whoami", admin).status == 200 })
		if r := h.do(http.MethodPost, "/api/v1/testplugin/crash", admin, nil); r.status != http.StatusAccepted {
			t.Fatalf("crash %d: %d %s", i, r.status, r.body)
		}
		h.waitFor("plugin down", 3*time.Second, func() bool { return h.get("/api/v1/testplugin/whoami", admin).status == 503 })
	}
	var list []struct {
		State     string `json:"state"`
		LastError string `json:"last_error"`
	}
	h.waitFor("plugin given up", 3*time.Second, func() bool {
		h.get("/api/v1/plugins", admin).json(t, &list)
		return len(list) == 1 && list[0].State == "failed"
	})
	if !strings.Contains(list[0].LastError, "gave up after 3 crashes") {
		t.Errorf("last error %q", list[0].LastError)
	}
	var health struct {
		Status string `json:"status"`
	}
	h.get("/api/v1/health", admin).json(t, &health)
	if health.Status != "degraded" {
		t.Errorf("health with a failed plugin: %s", health.Status)
	}
	time.Sleep(700 * time.Millisecond)
	r := h.get("/api/v1/testplugin/whoami", admin)
	if r.status != 503 {
		t.Errorf("a given-up plugin must stay down: %d", r.status)
	}
	// Down for good: no retry is promised, and the caller is told why.
	if ra := r.header.Get("Retry-After"); ra != "" {
		t.Errorf("a given-up plugin answers Retry-After: %s", ra)
	}
	var p struct {
		Detail string `json:"detail"`
	}
	r.json(t, &p)
	if want := "plugin testplugin is down (given up after 3 crashes)"; p.Detail != want {
		t.Errorf("detail %q, want %q", p.Detail, want)
	}
}

// TestNoPluginOutlivesHost stops the host with SIGTERM, SIGINT and SIGKILL
// and checks the plugin process is gone each time.
func TestNoPluginOutlivesHost(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			h := startHost(t, hostOpts{})
			pid := h.pluginPID(h.login(), "testplugin")
			h.stop(sig)
			h.waitFor("plugin to exit after "+sig.String(), 5*time.Second, func() bool { return !testbin.Alive(pid) })
		})
	}
}

// TestNoStaleRuntimeDirAfterSIGKILL: a SIGKILLed host cannot remove its
// plugins' socket dir; the next host to start removes it, and a host
// stopped normally leaves none.
func TestNoStaleRuntimeDirAfterSIGKILL(t *testing.T) {
	tmp := t.TempDir()
	env := map[string]string{"TMPDIR": tmp}
	dirs := func() []string {
		m, err := filepath.Glob(filepath.Join(tmp, "steward-plugins*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	killed := startHost(t, hostOpts{env: env})
	first := dirs()
	if len(first) != 1 {
		t.Fatalf("runtime dirs of a running host: %v, want one", first)
	}
	killed.stop(syscall.SIGKILL)
	if got := dirs(); len(got) != 1 || got[0] != first[0] {
		t.Fatalf("runtime dirs after SIGKILL: %v, want %s left behind", got, first[0])
	}

	next := startHost(t, hostOpts{env: env})
	if got := dirs(); len(got) != 1 || got[0] == first[0] {
		t.Fatalf("runtime dirs after the next start: %v, want only the new host's (%s is stale)", got, first[0])
	}
	if r := next.get("/api/v1/testplugin/ping", ""); r.status != http.StatusOK {
		t.Fatalf("ping through the new host's socket: %d", r.status)
	}
	next.stop(syscall.SIGTERM)
	if got := dirs(); len(got) != 0 {
		t.Fatalf("runtime dirs after SIGTERM: %v, want none", got)
	}
}

// TestLargeBodies streams bodies far above gRPC's 4 MB message limit
// through both data planes, and cuts off a response body at the plugin's
// max_response_bytes.
func TestLargeBodies(t *testing.T) {
	const maxResponse = 16 << 20
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			hcl := fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n  data_plane = %q\n  max_response_bytes = %d\n}\n",
				filepath.Join(binDir, "plugins", "testplugin"), plane, maxResponse)
			h := startHost(t, hostOpts{pluginsHCL: hcl, env: map[string]string{"STEWARD_MAX_BODY_BYTES": "33554432"}})
			admin := h.login()
			var list []struct {
				DataPlane string `json:"data_plane"`
			}
			h.get("/api/v1/plugins", admin).json(t, &list)
			if len(list) != 1 || list[0].DataPlane != plane {
				t.Fatalf("data plane %+v, want %s", list, plane)
			}
			const size = 12 << 20
			r := h.get(fmt.Sprintf("/api/v1/testplugin/large?size=%d", size), admin)
			if r.status != 200 || len(r.body) != size {
				t.Fatalf("download: %d, %d bytes", r.status, len(r.body))
			}
			req, err := http.NewRequest(http.MethodGet, h.url+fmt.Sprintf("/api/v1/testplugin/large?size=%d", maxResponse+1), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("X-Request-Id", "over-the-cap-"+plane)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || err == nil || len(got) > maxResponse {
				t.Fatalf("over max_response_bytes: %d, %d bytes, error %v; want the body cut off", resp.StatusCode, len(got), err)
			}
			h.waitFor("the cut-off logged", 2*time.Second, func() bool {
				return strings.Contains(h.logs.String(), "exceeds max_response_bytes; response cut off: request_id=over-the-cap-"+plane)
			})
			payload := make([]byte, 10<<20)
			_, _ = rand.Read(payload)
			e := h.do(http.MethodPost, "/api/v1/testplugin/echo", admin, bytes.NewReader(payload), "Content-Type", "application/octet-stream")
			if e.status != 200 || !bytes.Equal(e.body, payload) {
				t.Fatalf("echo: %d, %d bytes back, equal=%t", e.status, len(e.body), bytes.Equal(e.body, payload))
			}
			who := h.get("/api/v1/testplugin/whoami", admin)
			if who.status != 200 || !strings.Contains(string(who.body), `"is_admin":true`) {
				t.Fatalf("principal over %s: %d %s", plane, who.status, who.body)
			}
		})
	}
}

func (r response) String() string { return string(r.body) }
