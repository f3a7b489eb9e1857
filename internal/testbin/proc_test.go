package testbin

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestChildPID: the child running a binary is found by its executable; a
// binary no child runs, or one that does not exist, is an error.
func TestChildPID(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep to run")
	}
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if pid := ChildPID(t, sleep); pid != cmd.Process.Pid {
		t.Errorf("child pid %d, want %d", pid, cmd.Process.Pid)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := childPID(self); err == nil || !strings.HasPrefix(err.Error(), "no child process runs") {
		t.Errorf("no child: %v", err)
	}
	if _, err := childPID(t.TempDir() + "/missing"); err == nil {
		t.Error("a binary that does not exist was found")
	}
}

// TestProcStatus: the resident set and its high-water mark are read in
// bytes; a field the status lacks or a process that is gone is an error.
func TestProcStatus(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	rss := ProcStatus(t, os.Getpid(), "VmRSS")
	hwm := ProcStatus(t, os.Getpid(), "VmHWM")
	if rss < 1<<20 || hwm < rss || int64(rss)%1024 != 0 {
		t.Errorf("VmRSS %.0f B, VmHWM %.0f B: want a resident set of at least 1 MiB in whole kB, under its high-water mark", rss, hwm)
	}
	if _, err := procStatus(os.Getpid(), "VmNothing"); err == nil || !strings.HasPrefix(err.Error(), "no VmNothing in /proc/") {
		t.Errorf("missing field: %v", err)
	}
	if _, err := procStatus(-1, "VmRSS"); err == nil {
		t.Error("a process that is not there was read")
	}
}
