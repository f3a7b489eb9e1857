package protocol

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
)

// TestNewRunnerTiesPluginToParent starts a host that starts a plugin with
// NewRunner, SIGKILLs the host, and checks the plugin died with it. The
// plugin also runs in its own process group.
func TestNewRunnerTiesPluginToParent(t *testing.T) {
	parent := exec.Command(os.Args[0])
	parent.Env = roleEnviron("parent")
	parent.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })

	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil || pid <= 0 {
		t.Fatalf("the host reported plugin %q, %v", line, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !testbin.Alive(pid) {
		t.Fatalf("plugin %d is not running", pid)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("plugin %d is in process group %d (%v), want its own", pid, pgid, err)
	}

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for testbin.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin %d outlived its SIGKILLed host", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
