package protocol

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// roleEnv makes the test binary play a process the tests start, instead of
// running the tests.
const roleEnv = "STEWARD_PROTOCOL_TEST_ROLE"

// handshakeOut is what the stand-in plugin prints as its handshake.
const handshakeOut = "1|1|unix|/tmp/stand-in.sock|grpc"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "plugin":
		// A plugin with a careless library: a stray line, then the
		// handshake, then serving until it is killed.
		fmt.Println("stray line before the handshake")
		fmt.Println(handshakeOut)
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	case "parent":
		// A host: starts a plugin with NewRunner, reads its handshake,
		// says which plugin it runs, and waits to be killed. Once the
		// plugin has printed, only its parent's death can end it.
		r, err := NewRunner(hclog.NewNullLogger(), &exec.Cmd{Env: roleEnviron("plugin")}, os.Args[0], nil, nil)
		if err == nil {
			err = r.Start(context.Background())
		}
		if err == nil {
			_, err = bufio.NewReader(r.Stdout()).ReadString('\n')
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(r.ID())
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func roleEnviron(role string) []string { return append(os.Environ(), roleEnv+"="+role) }

// lockedBuffer is a log destination the filter's goroutine writes to while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestNewRunner(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info, JSONFormat: true})
	exited := make(chan struct{})
	var started int
	r, err := NewRunner(logger, &exec.Cmd{Env: roleEnviron("plugin")}, exe, exited, func(pid int) { started = pid })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r.ID() != "" {
		t.Errorf("ID before Start = %q", r.ID())
	}
	if err := r.Kill(ctx); err != nil {
		t.Errorf("Kill before Start: %v", err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill(ctx) })
	if started <= 0 || strconv.Itoa(started) != r.ID() {
		t.Errorf("onStart got pid %d, ID is %q", started, r.ID())
	}
	if r.Name() != exe {
		t.Errorf("Name = %q, want %q", r.Name(), exe)
	}
	if d := r.Diagnose(ctx); !strings.Contains(d, exe) || !strings.Contains(d, "handshake") {
		t.Errorf("Diagnose = %q", d)
	}
	if n, a, err := r.PluginToHost("unix", "/x.sock"); n != "unix" || a != "/x.sock" || err != nil {
		t.Errorf("PluginToHost = %q %q %v", n, a, err)
	}

	// go-plugin reads the handshake from Stdout; the stray line before it
	// goes to the log.
	stdout := bufio.NewReader(r.Stdout())
	line, err := stdout.ReadString('\n')
	if err != nil || line != handshakeOut+"\n" {
		t.Fatalf("first line on Stdout = %q, %v; want the handshake", line, err)
	}
	select {
	case <-exited:
		t.Fatal("exited closed while the plugin runs")
	default:
	}

	if err := r.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if rest, err := io.ReadAll(stdout); len(rest) != 0 {
		t.Errorf("after the handshake Stdout passed %q (%v)", rest, err)
	}
	if err := r.Wait(ctx); err == nil {
		t.Error("Wait of a killed plugin returned no error")
	}
	select {
	case <-exited:
	default:
		t.Error("exited still open after Wait")
	}
	if err := r.Kill(ctx); err != nil {
		t.Errorf("Kill after exit: %v", err)
	}
	if !strings.Contains(logs.String(), `"line":"stray line before the handshake"`) {
		t.Errorf("the stray line was not logged: %s", logs.String())
	}
}

func TestNewRunnerWithoutHooks(t *testing.T) {
	r, err := NewRunner(hclog.NewNullLogger(), &exec.Cmd{Env: roleEnviron("plugin")}, os.Args[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = r.Kill(ctx)
	_, _ = io.Copy(io.Discard, r.Stdout())
	var exitErr *exec.ExitError
	if err := r.Wait(ctx); !errors.As(err, &exitErr) {
		t.Errorf("Wait = %v, want the exit of the killed plugin", err)
	}
}

func TestNewRunnerMissingBinary(t *testing.T) {
	r, err := NewRunner(hclog.NewNullLogger(), &exec.Cmd{}, filepath.Join(t.TempDir(), "no-such-plugin"), nil, func(int) { t.Error("onStart called") })
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err == nil {
		t.Error("Start of a missing binary succeeded")
	}
}
