package plugins

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// testpluginBinary is the test plugin binary, built once if need be.
func testpluginBinary(t *testing.T) string { return testbin.TestPlugin(t) }

// testDecl declares binary as the plugin "testplugin" with quick restarts.
func testDecl(binary, dataPlane string) Decl {
	return Decl{
		Name: "testplugin", Binary: binary, Enabled: true, DataPlane: dataPlane, StartTimeout: 20 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes,
		Restart: RestartPolicy{MaxCrashes: 5, Window: time.Minute, BackoffInitial: 10 * time.Millisecond, BackoffMax: 10 * time.Millisecond},
		Config:  []byte("{}"), Schedules: map[string]string{},
	}
}

// amend changes the declaration the plugin's next start or reload uses.
func amend(inst *Instance, change func(*Decl)) {
	d := inst.Decl()
	change(&d)
	inst.setDecl(&d)
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

// sqliteStorage gives every plugin the same fresh SQLite file.
func sqliteStorage(t *testing.T) func(context.Context, string, string) (string, error) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "plugin.db")
	return func(context.Context, string, string) (string, error) { return url, nil }
}

// startOnSQLite starts a supervisor of decl on a fresh SQLite database,
// stopped when the test ends.
func startOnSQLite(t *testing.T, decl Decl) *Supervisor {
	t.Helper()
	sup, err := New([]Decl{decl}, Options{Storage: sqliteStorage(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sup
}
