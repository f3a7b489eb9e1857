// Package testbin is what tests that run plugin subprocesses share: the
// repository's test plugin binary (the one `make test` built, named by
// STEWARD_TEST_BIN, or else one built once per test binary when a test asks
// for it), the binaries of the repository's plugins, whether a process
// still runs, and which child runs a plugin binary and how much memory it
// holds, which benchmarks report.
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

// Plugin is the binary of the repository's plugin name (the package
// plugins/<name>), for a benchmark that runs it as the host does: the one
// `make bench` built, in STEWARD_TEST_BIN, or else one built now into the
// test's temporary directory.
func Plugin(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv("STEWARD_TEST_BIN"); dir != "" {
		return filepath.Join(dir, "plugins", name)
	}
	binary := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/stewardhq/steward/plugins/"+name).CombinedOutput(); err != nil {
		t.Fatalf("build the %s plugin: %v\n%s", name, err, out)
	}
	return binary
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
