package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
)

// handshakeLine is go-plugin's handshake: core|app|network|address|protocol.
var handshakeLine = regexp.MustCompile(`^\d+\|\d+\|(tcp|unix)\|[^|]+\|grpc`)

// NewRunner starts a plugin binary for go-plugin; it is what a
// plugin.ClientConfig's RunnerFunc returns, with spec the command go-plugin
// prepared. It differs from go-plugin's own runner in three ways: stray
// stdout before the handshake is logged instead of breaking it, exit is
// reported at once, and on Linux the plugin dies with the process that
// started it even when that process is SIGKILLed (Pdeathsig) and runs in
// its own process group, so a signal to its parent's group is its parent's
// to pass on.
//
// exited, if not nil, is closed once the process has exited and been
// waited for; onStart, if not nil, receives the process id when it starts.
func NewRunner(logger hclog.Logger, spec *exec.Cmd, binary string, exited chan<- struct{}, onStart func(pid int)) (runner.Runner, error) {
	cmd := exec.Command(binary)
	cmd.Env = spec.Env
	cmd.Stdin = nil
	cmd.SysProcAttr = sysProcAttr()
	rawOut, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &procRunner{cmd: cmd, stdout: filterStdout(rawOut, logger), stderr: stderr, exited: exited, onStart: onStart}, nil
}

type procRunner struct {
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  io.ReadCloser
	exited  chan<- struct{}
	onStart func(pid int)
}

// maxStdoutLine is how much of one stdout line is kept; the rest of a
// longer line is dropped.
const maxStdoutLine = 1 << 20

// filterStdout passes the handshake line to go-plugin and logs every other
// line: a plugin (or a library it imports) printing to stdout must not break
// the protocol.
func filterStdout(raw io.ReadCloser, logger hclog.Logger) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(raw)
		sc.Buffer(make([]byte, 64<<10), maxStdoutLine)
		sc.Split(truncateLines(maxStdoutLine))
		for sc.Scan() {
			line := sc.Text()
			if handshakeLine.MatchString(line) {
				if _, err := pw.Write([]byte(line + "\n")); err != nil {
					logger.Debug("handshake reader gone", "error", err)
				}
				continue
			}
			logger.Info("plugin stdout", "line", line)
		}
		_ = pw.CloseWithError(sc.Err())
	}()
	return pr
}

// truncateLines splits like bufio.ScanLines but cuts a line longer than
// limit to its first limit bytes, where ScanLines would stop the scanner
// with bufio.ErrTooLong and so lose the handshake and every line after.
func truncateLines(limit int) bufio.SplitFunc {
	dropping := false
	return func(data []byte, atEOF bool) (int, []byte, error) {
		advance, token, err := bufio.ScanLines(data, atEOF)
		switch {
		case advance > 0 || token != nil || err != nil:
			if dropping {
				// The end of a cut line.
				dropping = false
				return advance, nil, nil
			}
			return advance, token, err
		case len(data) < limit:
			return 0, nil, nil
		case dropping:
			return len(data), nil, nil
		default:
			dropping = true
			return len(data), data[:limit], nil
		}
	}
}

func (r *procRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	if r.onStart != nil {
		r.onStart(r.cmd.Process.Pid)
	}
	return nil
}

func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	if r.exited != nil {
		close(r.exited)
	}
	return err
}

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

// The plugin shares the host's network namespace: addresses need no
// translation.
func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// LogWriter logs each line a running plugin writes to one of its output
// streams ("stdout" or "stderr"), for a plugin.ClientConfig's SyncStdout
// and SyncStderr.
func LogWriter(logger hclog.Logger, stream string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
			if line != "" {
				logger.Info("plugin "+stream, "line", line)
			}
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
