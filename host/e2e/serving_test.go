package e2e

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testcert"
)

type readiness struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// TestDrain: on SIGTERM readiness answers 503 at once, a request started
// before the signal still completes after the listener has closed, and the
// host exits cleanly.
func TestDrain(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_DRAIN_DELAY": "1s", "STEWARD_SHUTDOWN_GRACE": "20s"}})
	admin := h.login()
	var rd readiness
	r := h.get("/api/v1/health/ready", "")
	r.json(t, &rd)
	if r.status != http.StatusOK || rd.Status != "ready" || rd.Checks["database"] != "ok" || rd.Checks["migrations"] != "ok" || rd.Checks["plugins"] != "ok" {
		t.Fatalf("readiness before SIGTERM: %d %s", r.status, r.body)
	}

	type answer struct {
		status int
		body   string
		err    error
	}
	slow := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, h.url+"/api/v1/testplugin/slow?ms=2500", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			slow <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		slow <- answer{status: resp.StatusCode, body: string(b), err: err}
	}()
	// The request reaches the plugin, which holds it.
	time.Sleep(300 * time.Millisecond)
	signalled := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	h.waitFor("readiness to fail", time.Second, func() bool {
		resp, err := http.Get(h.url + "/api/v1/health/ready")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var got readiness
		_ = json.NewDecoder(resp.Body).Decode(&got)
		if resp.StatusCode == http.StatusServiceUnavailable && got.Status == "draining" {
			if !resp.Close {
				t.Errorf("a draining host's answer keeps its connection open; want Connection: close")
			}
			return true
		}
		return false
	})

	select {
	case a := <-slow:
		if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"done"`) {
			t.Fatalf("the request started before SIGTERM: %d %q %v; want 200 done", a.status, a.body, a.err)
		}
		if took := time.Since(signalled); took < 2*time.Second {
			t.Fatalf("the slow request answered %s after SIGTERM; want it held for its full 2.5s", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request started before SIGTERM never answered")
	}
	select {
	case <-h.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the host did not exit after draining")
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0\n%s", code, h.logs.String())
	}
	if !strings.Contains(h.logs.String(), "stopped serving") {
		t.Fatalf("no drain in the log:\n%s", h.logs.String())
	}
}

// TestTLS: with a key pair configured the host serves HTTPS itself, TLS 1.3
// only, with HSTS.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	pair := testcert.Write(t, dir, "steward-test")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pair.Pool}}}
	h := startHost(t, hostOpts{client: client, env: map[string]string{"STEWARD_TLS_CERT_FILE": pair.CertFile, "STEWARD_TLS_KEY_FILE": pair.KeyFile}})
	if !strings.HasPrefix(h.url, "https://") {
		t.Fatalf("ready line names %s; want an https address", h.url)
	}
	resp, err := client.Get(h.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
		t.Fatalf("/health over TLS: %d, %+v; want 200 over TLS 1.3", resp.StatusCode, resp.TLS)
	}
	if v := resp.Header.Get("Strict-Transport-Security"); !strings.Contains(v, "max-age=") {
		t.Fatalf("Strict-Transport-Security %q over TLS; want one with max-age", v)
	}

	addr := strings.TrimPrefix(h.url, "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pair.Pool, MaxVersion: tls.VersionTLS12})
	if err == nil {
		conn.Close()
		t.Fatal("a TLS 1.2 handshake succeeded; want it refused")
	}
	if !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("TLS 1.2 handshake: %v; want a protocol version alert", err)
	}
	if resp, err := http.Get("http://" + addr + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP served on the TLS port")
		}
	}
}

// TestDebugAddr: STEWARD_DEBUG_ADDR serves the runtime profiles on a
// loopback listener of its own, never on the service's port.
func TestDebugAddr(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_DEBUG_ADDR": "127.0.0.1:0"}})
	m := regexp.MustCompile(`serving runtime profiles: addr=(http://\S+)`).FindStringSubmatch(h.logs.String())
	if m == nil {
		t.Fatalf("no profiles address in the log:\n%s", h.logs.String())
	}
	resp, err := http.Get(m[1] + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine profile:") {
		t.Fatalf("goroutine profile: %d %.200s", resp.StatusCode, b)
	}
	if r := h.get("/debug/pprof/goroutine?debug=1", ""); r.status != http.StatusNotFound {
		t.Fatalf("the profiles on the service's port: %d; want 404", r.status)
	}
}
