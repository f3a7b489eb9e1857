package plugins

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func runtimeDirs(t *testing.T, parent string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(parent, "steward-plugins*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestRuntimeDirRemovesOnlyStaleDirs: a host removes the runtime dir of a
// host that is gone (its lock file unlocked), and never that of a host
// that runs (locked) or one it cannot tell (no lock file).
func TestRuntimeDirRemovesOnlyStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	logger := hclog.NewNullLogger()

	live, err := newRuntimeDir(logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.remove)
	if filepath.Dir(live.path) != tmp {
		t.Fatalf("runtime dir %s is not in %s", live.path, tmp)
	}
	dead := filepath.Join(tmp, runtimePrefix+"dead")
	unknown := filepath.Join(tmp, runtimePrefix+"unknown")
	for _, dir := range []string{dead, unknown} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "p.sock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dead, lockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	next, err := newRuntimeDir(logger)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{live.path, next.path, unknown}
	slices.Sort(want)
	if got := runtimeDirs(t, tmp); !slices.Equal(got, want) {
		t.Fatalf("runtime dirs after a second start: %v, want %v", got, want)
	}

	next.remove()
	live.remove()
	if got := runtimeDirs(t, tmp); !slices.Equal(got, []string{unknown}) {
		t.Fatalf("runtime dirs after both stopped: %v, want only %s", got, unknown)
	}
}
