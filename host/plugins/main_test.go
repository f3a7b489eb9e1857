package plugins

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// buildDir holds the testplugin binary when the tests build it themselves.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plugins-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var testplugin struct {
	once sync.Once
	path string
	err  error
}

// testpluginBinary is the testplugin built by make (STEWARD_TEST_BIN), or
// else built once for this test binary, and only when a test needs it.
func testpluginBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("STEWARD_TEST_BIN"); bin != "" {
		return filepath.Join(bin, "plugins", "testplugin")
	}
	testplugin.once.Do(func() {
		path := filepath.Join(buildDir, "testplugin")
		out, err := exec.Command("go", "build", "-o", path, "github.com/stewardhq/steward/plugins/testplugin").CombinedOutput()
		if err != nil {
			testplugin.err = fmt.Errorf("build testplugin: %v\n%s", err, out)
		}
		testplugin.path = path
	})
	if testplugin.err != nil {
		t.Fatal(testplugin.err)
	}
	return testplugin.path
}

// testDecl declares binary as the plugin "testplugin" with quick restarts.
func testDecl(binary, dataPlane string) Decl {
	return Decl{
		Name: "testplugin", Binary: binary, Enabled: true, DataPlane: dataPlane, StartTimeout: 20 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes,
		Restart: RestartPolicy{MaxCrashes: 5, Window: time.Minute, BackoffInitial: 10 * time.Millisecond, BackoffMax: 10 * time.Millisecond},
		Config:  []byte("{}"), Schedules: map[string]string{},
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
