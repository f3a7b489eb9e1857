package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runSteward runs a one-shot steward command and returns its output.
func runSteward(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "steward"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("steward %v did not finish:\n%s", args, out.String())
		return "", nil
	}
}

// TestStartupRefusals: conditions that must stop the host with a one-line
// reason instead of serving.
func TestStartupRefusals(t *testing.T) {
	plugin := filepath.Join(binDir, "plugins", "testplugin")
	cases := []struct {
		name string
		hcl  string
		env  []string
		want string
	}{
		{"production without a secret", "", []string{"STEWARD_ENV=production"}, "STEWARD_JWT_SECRET must be set"},
		{"production on the simulated cloud", "", []string{"STEWARD_ENV=production", "STEWARD_JWT_SECRET=" + strings.Repeat("s", 32), "STEWARD_CLOUD=sim"}, "simulated cloud"},
		{"a plugin claiming the host's route", fmt.Sprintf("plugin \"testplugin\" {\n binary = %q\n config {\n  mirror = \"/api/v1/sync/status\"\n }\n}\n", plugin), nil,
			`route GET /api/v1/sync/status of plugin "testplugin" conflicts with a route of the host`},
		{"azure without credentials", "", []string{"STEWARD_CLOUD=azure"}, "STEWARD_CLOUD=azure: cloud: the client secret credential needs the tenant id, client id and client secret"},
		{"azure certificate file missing", "", []string{"STEWARD_CLOUD=azure", "STEWARD_AZURE_CREDENTIAL=certificate", "STEWARD_AZURE_TENANT_ID=t", "STEWARD_AZURE_CLIENT_ID=c", "STEWARD_AZURE_CERTIFICATE_PATH=/nonexistent/cert.pem"}, "/nonexistent/cert.pem"},
		{"bad plugins.hcl", "plugin \"x\" {\n data_plane = \"carrier-pigeon\"\n binary = \"x\"\n}\n", nil, "data_plane must be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			hcl := filepath.Join(data, "plugins.hcl")
			if err := os.WriteFile(hcl, []byte(c.hcl), 0o600); err != nil {
				t.Fatal(err)
			}
			env := append([]string{"STEWARD_DATA_DIR=" + data, "STEWARD_PLUGINS_FILE=" + hcl, "STEWARD_HTTP_ADDR=" + anyPort, "STEWARD_ENV=development"}, c.env...)
			out, err := runSteward(t, env, "serve")
			if err == nil {
				t.Fatalf("host started; want refusal containing %q:\n%s", c.want, out)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("want %q in:\n%s", c.want, out)
			}
		})
	}
}

// TestChecksumMismatch: a plugin whose binary differs from its declared
// sha256 is not started; the host serves and reports the plugin failed.
func TestChecksumMismatch(t *testing.T) {
	hcl := fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n  sha256 = %q\n}\n", filepath.Join(binDir, "plugins", "testplugin"), strings.Repeat("0", 64))
	h := startHost(t, hostOpts{pluginsHCL: hcl})
	admin := h.login()
	r := h.get("/api/v1/plugins", admin)
	if !strings.Contains(string(r.body), `"state":"failed"`) || !strings.Contains(string(r.body), "checksum mismatch") {
		t.Fatalf("plugins: %s", r.body)
	}
	if r := h.get("/api/v1/testplugin/ping", ""); r.status != 404 {
		t.Errorf("a plugin that never started has no routes: %d", r.status)
	}
}

// TestCommands: migrate, plugins list and version work on their own.
func TestCommands(t *testing.T) {
	data := t.TempDir()
	hcl := filepath.Join(data, "plugins.hcl")
	if err := os.WriteFile(hcl, []byte(defaultPlugins()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"STEWARD_DATA_DIR=" + data, "STEWARD_PLUGINS_FILE=" + hcl, "STEWARD_ENV=development"}
	steps := []struct {
		args []string
		want []string
	}{
		{[]string{"migrate", "status"}, []string{"0001_core", "pending"}},
		{[]string{"migrate", "up"}, []string{"applied 0001_core", "applied 0002_jobs"}},
		{[]string{"migrate", "up"}, []string{"database is up to date"}},
		{[]string{"migrate", "down"}, []string{"rolled back"}},
		{[]string{"migrate", "up"}, []string{"applied"}},
		{[]string{"migrate", "status"}, []string{"0002_jobs", "applied"}},
		{[]string{"plugins", "list"}, []string{"testplugin", "true", "socket"}},
		{[]string{"version"}, []string{"steward "}},
	}
	for _, s := range steps {
		out, err := runSteward(t, env, s.args...)
		if err != nil {
			t.Fatalf("steward %v: %v\n%s", s.args, err, out)
		}
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Errorf("steward %v: want %q in\n%s", s.args, w, out)
			}
		}
	}
	if out, err := runSteward(t, env, "migrate", "sideways"); err == nil || !strings.Contains(out, "unknown subcommand") {
		t.Errorf("bad subcommand: %v %s", err, out)
	}
	if out, err := runSteward(t, env, "frobnicate"); err == nil || !strings.Contains(out, "unknown command") {
		t.Errorf("bad command: %v %s", err, out)
	}
}

// TestAuditRetention: with a retention set, entries older than it are
// pruned and the pruning is itself audited.
func TestAuditRetention(t *testing.T) {
	data := t.TempDir()
	first := startHost(t, hostOpts{dataDir: data})
	first.login()
	first.stop(syscall.SIGTERM)
	time.Sleep(1100 * time.Millisecond)
	second := startHost(t, hostOpts{dataDir: data, env: map[string]string{"STEWARD_AUDIT_RETENTION": "1s"}})
	admin := second.login()
	var page struct {
		Items []struct {
			Action  string         `json:"action"`
			Details map[string]any `json:"details"`
		} `json:"items"`
	}
	second.get("/api/v1/audit-logs", admin).json(t, &page)
	var actions []string
	for _, e := range page.Items {
		actions = append(actions, e.Action)
	}
	if len(page.Items) != 2 || page.Items[0].Action != "auth.login.success" || page.Items[1].Action != "audit.prune.success" {
		t.Fatalf("after pruning: %v", actions)
	}
	if deleted, _ := page.Items[1].Details["deleted"].(float64); deleted < 1 {
		t.Errorf("prune entry %+v", page.Items[1].Details)
	}
}

// TestPasswordLoginRefusedOutsideDevelopment: a staging host serves, but the
// development sign-in answers 403 with the reason and is audited.
func TestPasswordLoginRefusedOutsideDevelopment(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{
		"STEWARD_ENV": "staging", "STEWARD_JWT_SECRET": strings.Repeat("s", 40), "STEWARD_CLOUD": "azure",
		"STEWARD_AZURE_TENANT_ID": "00000000-0000-0000-0000-000000000001", "STEWARD_AZURE_CLIENT_ID": "steward", "STEWARD_AZURE_CLIENT_SECRET": "not-used-here",
	}})
	r := formLogin(h, "steward-dev")
	if r.status != 403 || !strings.Contains(string(r.body), "disabled outside development") {
		t.Fatalf("staging password login: %d %s", r.status, r.body)
	}
	var health struct {
		DevLoginEnabled bool `json:"dev_login_enabled"`
		JWTConfigured   bool `json:"jwt_configured"`
	}
	h.get("/api/v1/auth/health", "").json(t, &health)
	if health.DevLoginEnabled || !health.JWTConfigured {
		t.Fatalf("auth health %+v", health)
	}
}
