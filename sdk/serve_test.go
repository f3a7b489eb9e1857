package sdk_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Serve refuses a definition with mistakes before any handshake, saying
// every mistake on stderr, where the host logs it, even when started by
// the host.
func TestServeRefusesAnInvalidDefinition(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "invalidplugin")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/invalidplugin").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(cmd.Environ(), protocol.Handshake.MagicCookieKey+"="+protocol.Handshake.MagicCookieValue)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("invalid plugin ran to %v, want exit status 1", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q: the plugin began a handshake", stdout.String())
	}
	for _, want := range []string{
		`plugin "invalid" is not valid`,
		"migration items.up.sql: name must look like 0001_name.up.sql",
		"config type main.config: days: a default tag is not applied; give defaults in a Defaults() method",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", stderr.String(), want)
		}
	}
}
