// Package testbin is what tests that run plugin subprocesses share: the
// repository's test plugin binary (the one `make test` built, named by
// STEWARD_TEST_BIN, or else one built once per test binary when a test asks
// for it) and whether a process still runs.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Run runs the package's tests and then removes what TestPlugin built;
// call it from TestMain: os.Exit(testbin.Run(m)).
func Run(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	return code
}

// TestPlugin is the path of the test plugin binary.
func TestPlugin(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("STEWARD_TEST_BIN"); bin != "" {
		return filepath.Join(bin, "plugins", "testplugin")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "steward-testplugin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "testplugin")
		out, err := exec.Command("go", "build", "-o", built.path, "github.com/stewardhq/steward/plugins/testplugin").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("build testplugin: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// Alive reports whether the process pid runs (Linux). A zombie has exited;
// its parent just has not reaped it yet.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}
