package testbin

import (
	"os"
	"strings"
	"testing"
)

// TestPluginBinary: a plugin's binary is make's when STEWARD_TEST_BIN names its
// directory, else one built now that runs.
func TestPluginBinary(t *testing.T) {
	t.Setenv("STEWARD_TEST_BIN", "/opt/steward/bin")
	if got := Plugin(t, "cost"); got != "/opt/steward/bin/plugins/cost" {
		t.Errorf("with STEWARD_TEST_BIN: %s", got)
	}
	if testing.Short() {
		t.Skip("builds a plugin")
	}
	t.Setenv("STEWARD_TEST_BIN", "")
	binary := Plugin(t, "testplugin")
	if info, err := os.Stat(binary); err != nil || info.Mode()&0o111 == 0 || !strings.HasPrefix(binary, os.TempDir()) {
		t.Errorf("built %s: %v, %v", binary, info, err)
	}
}
