package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
	"github.com/stewardhq/steward/sdk/protocol"
)

// hostSecrets are settings of the host that no plugin may read.
var hostSecrets = map[string]string{
	"STEWARD_JWT_SECRET":                 "e2e-jwt-secret-of-at-least-32-bytes-long",
	"STEWARD_JWT_PREVIOUS_SECRETS":       "e2e-previous-jwt-secret-of-32-bytes-or-more",
	"STEWARD_OIDC_CLIENT_SECRET":         "e2e-oidc-client-secret",
	"STEWARD_AZURE_CLIENT_SECRET":        "e2e-azure-client-secret",
	"STEWARD_AZURE_CERTIFICATE_PASSWORD": "e2e-certificate-password",
}

// goPluginEnv is what go-plugin itself hands a plugin for its handshake.
var goPluginEnv = map[string]bool{"STEWARD_PLUGIN": true, "PLUGIN_MIN_PORT": true, "PLUGIN_MAX_PORT": true,
	"PLUGIN_PROTOCOL_VERSIONS": true, "PLUGIN_UNIX_SOCKET_DIR": true}

// TestPluginEnvironmentHoldsNoHostSecret: with the host's secrets set, the
// plugin's environment holds none of them nor any other of the host's
// settings, only the allow-listed variables, and the cloud credential
// reaches it only when plugins.hcl grants it.
func TestPluginEnvironmentHoldsNoHostSecret(t *testing.T) {
	for _, granted := range []bool{false, true} {
		t.Run(fmt.Sprintf("cloud_credential=%t", granted), func(t *testing.T) {
			hcl := fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n  cloud_credential = %t\n}\n", filepath.Join(binDir, "plugins", "testplugin"), granted)
			env := map[string]string{"PATH": "/usr/bin:/bin", "TZ": "UTC"}
			for k, v := range hostSecrets {
				env[k] = v
			}
			h := startHost(t, hostOpts{pluginsHCL: hcl, env: env})
			var got struct {
				Names            []string `json:"names"`
				CloudCredential  bool     `json:"cloud_credential"`
				HostCapabilities []string `json:"host_capabilities"`
			}
			r := h.get("/api/v1/testplugin/env", h.login())
			if r.status != 200 {
				t.Fatalf("env: %d %s", r.status, r.body)
			}
			r.json(t, &got)
			have := map[string]bool{}
			for _, name := range got.Names {
				have[name] = true
				if strings.HasPrefix(name, "STEWARD_") && !goPluginEnv[name] && name != protocol.EnvProfileDir {
					t.Errorf("the plugin's environment holds the host's %s", name)
				}
				if !goPluginEnv[name] && !inherited(name, granted) {
					t.Errorf("the plugin's environment holds %s, which is not allow-listed", name)
				}
			}
			if !have["PATH"] || !have["TZ"] || !have["STEWARD_PLUGIN"] || !have["GOMEMLIMIT"] {
				t.Errorf("the plugin's environment lacks PATH, TZ, the handshake cookie or its soft memory limit: %v", got.Names)
			}
			if want := protocol.HostCapabilities(); !slices.Equal(got.HostCapabilities, want) {
				t.Errorf("host capabilities the plugin was told: %q, want %q", got.HostCapabilities, want)
			}
			if got.CloudCredential != granted {
				t.Errorf("the plugin holds the cloud credential: %t, want %t", got.CloudCredential, granted)
			}
		})
	}
}

// inherited reports whether a plugin may inherit the host's variable name;
// one granted the cloud credential also inherits the Azure SDK's ambient
// credential variables.
func inherited(name string, cloudCredential bool) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "SSL_CERT_FILE", "SSL_CERT_DIR",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
		"GOMAXPROCS", "GODEBUG", "GOTRACEBACK", "GOGC", "GOMEMLIMIT", protocol.EnvProfileDir:
		return true
	}
	for _, p := range []string{"AZURE_", "IDENTITY_", "MSI_", "IMDS_"} {
		if cloudCredential && strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.HasPrefix(name, "LC_")
}

// TestPluginRequestTimeout: a plugin route that does not answer within the
// plugin's request_timeout gets a 504 at the timeout, logged with its
// request id and counted, while the plugin's other routes keep answering.
func TestPluginRequestTimeout(t *testing.T) {
	const timeout = time.Second
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			hcl := fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n  data_plane = %q\n  request_timeout = %q\n}\n",
				filepath.Join(binDir, "plugins", "testplugin"), plane, timeout)
			h := startHost(t, hostOpts{pluginsHCL: hcl})
			admin := h.login()

			stop := make(chan struct{})
			pings := make(chan int, 1)
			go func() {
				answered := 0
				defer func() { pings <- answered }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := http.Get(h.url + "/api/v1/testplugin/ping")
					if err != nil {
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						return
					}
					answered++
					time.Sleep(50 * time.Millisecond)
				}
			}()

			id := "slow-" + plane
			t0 := time.Now()
			r := h.do(http.MethodGet, "/api/v1/testplugin/hang", admin, nil, "X-Request-Id", id)
			elapsed := time.Since(t0)
			close(stop)
			if r.status != http.StatusGatewayTimeout || elapsed < timeout || elapsed > timeout+3*time.Second {
				t.Fatalf("a route that never answers: %d after %s %s, want 504 after %s", r.status, elapsed, r.body, timeout)
			}
			if n := <-pings; n < 3 {
				t.Errorf("ping answered %d times while the slow route waited; a failed ping stops the count", n)
			}
			if r := h.get("/api/v1/testplugin/whoami", admin); r.status != http.StatusOK {
				t.Errorf("after the timeout: %d", r.status)
			}
			h.waitFor("the 504 logged with its request id", 2*time.Second, func() bool {
				for _, line := range strings.Split(h.logs.String(), "\n") {
					if strings.Contains(line, "answered 504") && strings.Contains(line, "request_id="+id) && strings.Contains(line, "plugin=testplugin") {
						return true
					}
				}
				return false
			})
			if !strings.Contains(h.get("/metrics", "").String(), `steward_plugin_request_timeouts_total{plugin="testplugin"} 1`) {
				t.Errorf("the timeout is not counted in /metrics")
			}
		})
	}
}

// TestPluginOverItsMemoryLimitIsRestarted: a plugin that holds more memory
// than its memory_limit is killed and restarted, reported in GET
// /api/v1/plugins, the log and /metrics, while the host keeps serving.
func TestPluginOverItsMemoryLimitIsRestarted(t *testing.T) {
	hcl := fmt.Sprintf(`plugin "testplugin" {
  binary       = %q
  memory_limit = "96MiB"
  restart {
    backoff_initial = "100ms"
    backoff_max     = "500ms"
  }
}
`, filepath.Join(binDir, "plugins", "testplugin"))
	h := startHost(t, hostOpts{pluginsHCL: hcl})
	admin := h.login()
	pid := h.pluginPID(admin, "testplugin")
	var held struct {
		HeldMiB int `json:"held_mib"`
	}
	r := h.do(http.MethodPost, "/api/v1/testplugin/allocate?mib=32", admin, nil)
	if r.status != http.StatusOK {
		t.Fatalf("allocating under the limit: %d %s", r.status, r.body)
	}
	if r.json(t, &held); held.HeldMiB != 32 {
		t.Fatalf("held %d MiB, want 32", held.HeldMiB)
	}
	// Past a check of its memory, the plugin under its limit still runs.
	time.Sleep(1500 * time.Millisecond)
	if got := h.pluginPID(admin, "testplugin"); got != pid {
		t.Fatalf("a plugin under its memory limit was restarted: pid %d, then %d", pid, got)
	}

	// The answer may or may not beat the check that kills the plugin.
	if r := h.do(http.MethodPost, "/api/v1/testplugin/allocate?mib=128", admin, nil); r.status != http.StatusOK && r.status != http.StatusServiceUnavailable {
		t.Fatalf("allocating over the limit: %d %s", r.status, r.body)
	}
	h.waitFor("the plugin killed", 5*time.Second, func() bool { return !testbin.Alive(pid) })
	type status struct {
		State     string `json:"state"`
		PID       int    `json:"pid"`
		Restarts  int    `json:"restarts"`
		LastError string `json:"last_error"`
	}
	var list []status
	h.waitFor("the plugin restarted", 10*time.Second, func() bool {
		h.get("/api/v1/plugins", admin).json(t, &list)
		return len(list) == 1 && list[0].State == "running" && list[0].PID != pid
	})
	if p := list[0]; p.Restarts != 1 || !strings.Contains(p.LastError, "over its memory_limit of 96 MiB") {
		t.Errorf("after the kill: %+v, want one restart and the memory limit as its last error", p)
	}
	if r := h.get("/api/v1/testplugin/whoami", admin); r.status != http.StatusOK {
		t.Errorf("the restarted plugin: %d", r.status)
	}
	if r := h.get("/health", ""); r.status != http.StatusOK {
		t.Errorf("host health after the kill: %d", r.status)
	}
	if r := h.get("/api/v1/audit-logs", admin); r.status != http.StatusOK {
		t.Errorf("a host route after the kill: %d", r.status)
	}
	if !strings.Contains(h.logs.String(), "plugin over its memory limit; restarting it") {
		t.Error("the kill is not logged")
	}
	if !strings.Contains(h.get("/metrics", "").String(), `steward_plugin_memory_limit_kills_total{plugin="testplugin"} 1`) {
		t.Error("the kill is not counted in /metrics")
	}
}
