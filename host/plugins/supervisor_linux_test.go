package plugins

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// children lists the live processes this test process started from binary.
func children(t *testing.T, binary string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(binary)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// State and parent follow the parenthesised command name; a zombie
		// has exited, only not been reaped yet.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[0] == "Z" || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want {
			out = append(out, pid)
		}
	}
	return out
}

// stopWithin calls Stop and fails the test unless it returns in time.
func stopWithin(t *testing.T, sup *Supervisor, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	t0 := time.Now()
	go func() { sup.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("Stop still running after %s", limit)
	}
	t.Logf("Stop took %s", time.Since(t0).Round(time.Millisecond))
}

// TestStopDuringRestart stops the supervisor while a crashed plugin's
// restart is migrating: Stop must end the restart at once and leave no
// plugin process behind, where the restart used to run to its end after
// Stop and leave a plugin running that nothing would kill.
func TestStopDuringRestart(t *testing.T) {
	bin := testpluginBinary(t)
	var migrations atomic.Int32
	restarting := make(chan struct{})
	sup, err := New([]Decl{testDecl(bin, "socket")}, Options{
		Storage: sqliteStorage(t),
		Migrate: func(ctx context.Context, _, _ string, _ []*pluginv1.Migration) error {
			if migrations.Add(1) == 1 {
				return nil
			}
			close(restarting)
			// A slow migration, such as one waiting for a lock.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Second):
				return nil
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	inst, _ := sup.Instance("testplugin")
	first := inst.PID()
	if inst.Status().State != StateRunning || first == 0 {
		t.Fatalf("after Start: %+v", inst.Status())
	}
	inst.Kill()
	select {
	case <-restarting:
	case <-time.After(10 * time.Second):
		t.Fatalf("no restart began: %+v", inst.Status())
	}
	if len(children(t, bin)) != 1 {
		t.Fatalf("restarting plugin processes: %v, want one", children(t, bin))
	}

	stopWithin(t, sup, 2*time.Second)
	// Whatever the restart did after Stop returned would show by now.
	time.Sleep(200 * time.Millisecond)
	if left := children(t, bin); len(left) > 0 {
		t.Fatalf("plugin processes %v survived Stop", left)
	}
	if st := inst.Status().State; st != StateStopped {
		t.Errorf("state after Stop: %s, want %s", st, StateStopped)
	}
}

// TestStopDuringHandshake stops the supervisor while a plugin has started
// but not completed the handshake: Stop must kill that process too.
func TestStopDuringHandshake(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "silent")
	// A binary that never completes the handshake.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err == nil {
		sleep, err = filepath.EvalSymlinks(sleep)
	}
	if err != nil {
		t.Fatal(err)
	}
	sup, err := New([]Decl{testDecl(bin, "socket")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	started := make(chan error, 1)
	go func() { started <- sup.Start(context.Background()) }()
	waitFor(t, "the plugin process", 5*time.Second, func() bool { return len(children(t, sleep)) == 1 })

	stopWithin(t, sup, 2*time.Second)
	if left := children(t, sleep); len(left) > 0 {
		t.Fatalf("plugin processes %v survived Stop", left)
	}
	select {
	case <-started:
	case <-time.After(time.Second):
		t.Fatal("Start did not return after Stop")
	}
	inst, _ := sup.Instance("testplugin")
	if st := inst.Status().State; st != StateStopped {
		t.Errorf("state after Stop: %s, want %s", st, StateStopped)
	}
}

// TestPluginProcessEnvironment reads the environment a started plugin
// process really has: the allow-listed variables and its soft memory
// limit, none of the host's settings.
func TestPluginProcessEnvironment(t *testing.T) {
	t.Setenv("STEWARD_JWT_SECRET", "unit-jwt-secret")
	t.Setenv("STEWARD_AZURE_CLIENT_SECRET", "unit-azure-secret")
	t.Setenv("TZ", "Europe/Paris")
	decl := testDecl(testpluginBinary(t), "socket")
	decl.MemoryLimit = 512 << 20
	sup := startOnSQLite(t, decl)
	inst, _ := sup.Instance("testplugin")
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", inst.PID()))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	for _, kv := range env {
		if strings.HasPrefix(kv, "STEWARD_") && !strings.HasPrefix(kv, "STEWARD_PLUGIN=") {
			t.Errorf("the plugin process has the host's %s", kv)
		}
	}
	for _, want := range []string{"TZ=Europe/Paris", fmt.Sprintf("GOMEMLIMIT=%d", softMemoryLimit(512<<20))} {
		if !slices.Contains(env, want) {
			t.Errorf("the plugin process lacks %s: %q", want, env)
		}
	}
}

// TestMemoryLimitRestartsPlugin: a plugin whose resident memory is over its
// limit is killed and restarted, with the reason as its last error.
func TestMemoryLimitRestartsPlugin(t *testing.T) {
	decl := testDecl(testpluginBinary(t), "socket")
	// Below what any Go plugin holds once started: the first check kills it.
	decl.MemoryLimit = 4 << 20
	sup := startOnSQLite(t, decl)
	inst, _ := sup.Instance("testplugin")
	first := inst.PID()
	waitFor(t, "a restart after the memory limit", 10*time.Second, func() bool {
		st := inst.Status()
		return st.State == StateRunning && st.PID != first && st.PID != 0
	})
	if st := inst.Status(); st.Restarts < 1 || !strings.Contains(st.LastError, "over its memory_limit of 4 MiB") {
		t.Errorf("after the limit: %+v", st)
	}
	if testbin.Alive(first) {
		t.Errorf("the plugin over its limit (pid %d) still runs", first)
	}
}
