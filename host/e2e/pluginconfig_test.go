package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testpluginWithConfig declares the test plugin with the config block's
// lines, the first of them on line 4 of the file.
func testpluginWithConfig(lines ...string) string {
	return fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n  config {\n    %s\n  }\n}\n",
		filepath.Join(binDir, "plugins", "testplugin"), strings.Join(lines, "\n    "))
}

// TestConfigKeyStopsTheHost: a config block the plugin's schema refuses
// stops the host before it serves, with a line on stderr naming the file
// as declared, the line and column of the key, the plugin and the key.
func TestConfigKeyStopsTheHost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"unknown key", []string{"hold_job_seconds = 1", "hold_job_secs    = 2"},
			`plugins.hcl:5,5: plugin "testplugin" config.hold_job_secs: unknown key; the keys are hold_job_seconds, mirror`},
		{"mistyped value", []string{`hold_job_seconds = "long"`},
			`plugins.hcl:4,5: plugin "testplugin" config.hold_job_seconds: expected number, but got string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			if err := os.WriteFile(filepath.Join(data, "plugins.hcl"), []byte(testpluginWithConfig(tc.lines...)), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "steward"), "serve")
			cmd.Dir = data
			cmd.Env = append(os.Environ(), "STEWARD_ENV=development", "STEWARD_HTTP_ADDR="+anyPort, "STEWARD_DATA_DIR="+data,
				"STEWARD_PLUGINS_FILE=plugins.hcl", "STEWARD_SIM_BOOTSTRAP=false")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 || ctx.Err() != nil {
				t.Fatalf("host ended with %v (context %v), want a non-zero exit:\n%s%s", err, ctx.Err(), stdout.String(), stderr.String())
			}
			if !slices.Contains(strings.Split(stderr.String(), "\n"), tc.want) {
				t.Errorf("stderr has no line %q:\n%s", tc.want, stderr.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), "steward ready") {
				t.Error("the host served before it stopped")
			}
		})
	}
}

// TestReloadRefusesAConfigKey: plugins.hcl edited under a running host with
// a key the plugin's schema refuses is not applied to it: SIGHUP logs and
// audits the line naming the key, and the process started from the old
// block goes on serving.
func TestReloadRefusesAConfigKey(t *testing.T) {
	h := startHost(t, hostOpts{pluginsHCL: testpluginWithConfig("hold_job_seconds = 1")})
	admin := h.login()
	pid := h.pluginPID(admin, "testplugin")
	if err := os.WriteFile(filepath.Join(h.dataDir, "plugins.hcl"), []byte(testpluginWithConfig("hold_job_seconds = 1", "hold_job_secs    = 2")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	h.waitFor("plugins.hcl applied", 30*time.Second, func() bool { return strings.Contains(h.logs.String(), "plugins.hcl applied") })
	const want = `plugins.hcl:5,5: plugin "testplugin" config.hold_job_secs: unknown key; the keys are hold_job_seconds, mirror`
	if logged := strconv.Quote(want); !strings.Contains(h.logs.String(), logged[1:len(logged)-1]) {
		t.Errorf("the log does not say %s", logged)
	}
	if p := h.plugins(t, admin)["testplugin"]; p.State != "running" || p.PID != pid {
		t.Errorf("after the refused block: %+v, want pid %d running", p, pid)
	}
	if r := h.get("/api/v1/testplugin/ping", ""); r.status != 200 {
		t.Errorf("the plugin's route: %d", r.status)
	}
	var details []string
	err := h.db().NewSelect().Table("audit_logs").Column("details").Where("action = ?", "plugin.apply.failure").
		Where("resource_id = ?", "testplugin").Scan(context.Background(), &details)
	var entry struct {
		Error string `json:"error"`
	}
	if err != nil || len(details) != 1 || json.Unmarshal([]byte(details[0]), &entry) != nil || !strings.Contains(entry.Error, want) {
		t.Errorf("audit entries of the refused block: %q, %v", details, err)
	}
}
