package testbin

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ChildPID is the pid of the process of binary this process started, a
// plugin a benchmark measures (Linux). Without /proc the test is skipped;
// no such child fails it.
func ChildPID(t testing.TB, binary string) int {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc to measure the plugin's memory: %v", err)
	}
	pid, err := childPID(binary)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// ProcStatus reads a memory figure of /proc/<pid>/status, VmRSS or VmHWM
// for instance, in bytes (Linux). A missing process or field fails the
// test.
func ProcStatus(t testing.TB, pid int, field string) float64 {
	t.Helper()
	n, err := procStatus(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func childPID(binary string) (int, error) {
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses:
		// state, then the parent's pid.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == want {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child process runs %s", binary)
}

func procStatus(pid int, field string) (float64, error) {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				return 0, fmt.Errorf("%s in /proc/%d/status: %w", field, pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
