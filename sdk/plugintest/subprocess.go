package plugintest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Start runs the plugin binary as the host does — go-plugin's client with
// the Steward handshake, gRPC only — and returns it described and
// configured. The process is killed when the test ends; on Linux it is also
// killed if the test binary dies first.
func Start(t testing.TB, binary string, opts Options) *Harness {
	t.Helper()
	opts = withDefaults(t, opts)
	var socketPath string
	if opts.DataSocket {
		// A unix socket path is limited to about a hundred bytes, which a
		// test's temporary directory, named after the test, can exceed.
		dir, err := os.MkdirTemp("", "plugintest-")
		if err != nil {
			t.Fatalf("plugintest: socket directory: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		socketPath = filepath.Join(dir, "data.sock")
	}
	name := filepath.Base(binary)
	logger := newLogger(t, name)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginMap(&protocol.GRPCPlugin{}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
		StartTimeout:     callTimeout,
		RunnerFunc: func(l hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			return newProcRunner(l, spec, binary)
		},
		SyncStdout: logLines(logger, "stdout"),
		SyncStderr: logLines(logger, "stderr"),
	})
	t.Cleanup(client.Kill)
	rpcClient, err := client.Client()
	if err != nil {
		t.Fatalf("plugintest: start %s: %v", binary, err)
	}
	raw, err := rpcClient.Dispense(protocol.PluginName)
	if err != nil {
		t.Fatalf("plugintest: dispense %s: %v", name, err)
	}
	h, err := configure(t, raw.(*protocol.Client), opts, socketPath)
	if err != nil {
		t.Fatalf("plugintest: %s: %v", name, err)
	}
	return h
}

// handshakeLine is go-plugin's handshake: core|app|network|address|protocol.
var handshakeLine = regexp.MustCompile(`^\d+\|\d+\|(tcp|unix)\|[^|]+\|grpc`)

// procRunner starts the plugin as the host's runner does: stray stdout
// before the handshake is logged instead of breaking it, which go-plugin's
// own runner would not allow.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
}

func newProcRunner(logger hclog.Logger, spec *exec.Cmd, binary string) (*procRunner, error) {
	cmd := exec.Command(binary)
	cmd.Env = spec.Env
	cmd.SysProcAttr = sysProcAttr()
	rawOut, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &procRunner{cmd: cmd, stdout: filterStdout(rawOut, logger), stderr: stderr}, nil
}

func filterStdout(raw io.ReadCloser, logger hclog.Logger) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(raw)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if handshakeLine.MatchString(line) {
				_, _ = pw.Write([]byte(line + "\n"))
				continue
			}
			logger.Info("plugin stdout", "line", line)
		}
		_ = pw.CloseWithError(sc.Err())
	}()
	return pr
}

func (r *procRunner) Start(context.Context) error { return r.cmd.Start() }
func (r *procRunner) Wait(context.Context) error  { return r.cmd.Wait() }

func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

func (r *procRunner) Diagnose(context.Context) string {
	return fmt.Sprintf("%s did not complete the plugin handshake; is it a Steward plugin that calls sdk.Serve?", r.cmd.Path)
}

func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// logLines logs what the plugin writes to stdout or stderr once it serves.
func logLines(l hclog.Logger, stream string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
			if line != "" {
				l.Info("plugin "+stream, "line", line)
			}
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// newSocketClient reaches the plugin's data socket; the request's context
// bounds each exchange, as the test chooses.
func newSocketClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}
