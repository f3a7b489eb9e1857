package bench

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// startupRuns is how many starts the ready time is averaged over.
	startupRuns = 5
	// idleSettle is how long a started host sits idle before its RSS is read.
	idleSettle = time.Second
)

// BenchmarkStartup times `steward serve` of the real binary with the
// plugins the repository's plugins.hcl declares, on an existing database:
// from exec to the first 200 on /health (the host listens only once its
// plugins have started). It then reads the idle resident memory of the host
// and of each plugin process.
func BenchmarkStartup(b *testing.B) {
	bin := binDir(b)
	base, env := repoEnv(b, bin)

	// The first start creates and migrates the database; it is not counted.
	s, err := serve(filepath.Join(bin, "steward"), env, base)
	if err != nil {
		b.Fatal(err)
	}
	s.stop()

	var ready, hostRSS []float64
	pluginRSS := map[string][]float64{}
	for range startupRuns {
		s, err := serve(filepath.Join(bin, "steward"), env, base)
		if err != nil {
			b.Fatal(err)
		}
		h, plugins, err := s.idleRSS(base)
		s.stop()
		if err != nil {
			b.Fatalf("%v\nhost log:\n%s", err, s.log.String())
		}
		ready = append(ready, float64(s.ready)/float64(time.Millisecond))
		hostRSS = append(hostRSS, mib(h))
		for name, rss := range plugins {
			pluginRSS[name] = append(pluginRSS[name], mib(rss))
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(mean(ready), "ready-ms")
	b.ReportMetric(slices.Max(ready), "ready-max-ms")
	b.ReportMetric(mean(hostRSS), "host-rss-MiB")
	b.Logf("ready after exec (ms): %s", formatAll(ready))
	b.Logf("idle RSS after %s (MiB): host %s", idleSettle, formatAll(hostRSS))
	for _, name := range slices.Sorted(maps.Keys(pluginRSS)) {
		b.ReportMetric(mean(pluginRSS[name]), name+"-rss-MiB")
		b.Logf("idle RSS after %s (MiB): plugin %s %s", idleSettle, name, formatAll(pluginRSS[name]))
	}
}

// repoEnv prepares a host as `make run` starts it: the repository's
// plugins.hcl beside a link to the built binaries, a fresh data directory,
// SQLite, no Redis, and a free address; extra settings follow the others.
// It returns the host's base URL and environment.
func repoEnv(b *testing.B, bin string, extra ...string) (string, []string) {
	dir := b.TempDir()
	// The declaration names its binaries relative to its own folder
	// (bin/plugins/…): beside a copy of it, bin leads to the built ones.
	decl, err := os.ReadFile(filepath.Join("..", "plugins.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	hcl := filepath.Join(dir, "plugins.hcl")
	if err := os.WriteFile(hcl, decl, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		b.Fatal(err)
	}
	addr, err := freeAddr()
	if err != nil {
		b.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	env := append(os.Environ(),
		"STEWARD_ENV=development", "STEWARD_HTTP_ADDR="+addr, "STEWARD_DATA_DIR="+data,
		"STEWARD_DATABASE_URL=sqlite://"+filepath.Join(data, "steward.db"), "STEWARD_PLUGINS_FILE="+hcl,
		"STEWARD_REDIS_URL=", "STEWARD_LOG_LEVEL=warn")
	return "http://" + addr, append(env, extra...)
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

type served struct {
	cmd    *exec.Cmd
	log    strings.Builder
	ready  time.Duration
	exited chan struct{}
}

// serve execs the host and waits for its first 200 on /health.
func serve(binary string, env []string, base string) (*served, error) {
	s := &served{cmd: exec.Command(binary, "serve"), exited: make(chan struct{})}
	s.cmd.Env = env
	// From the repository's root, as `make run` starts it: plugins.hcl
	// names the partner catalogue relative to it.
	s.cmd.Dir = ".."
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	// A fresh connection per poll: a kept-alive one could outlive a host.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	t0 := time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	for time.Since(t0) < 15*time.Second {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("host exited during start-up:\n%s", s.log.String())
		default:
		}
		if resp, err := client.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.ready = time.Since(t0)
				return s, nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("host not ready after 15s:\n%s", s.log.String())
}

// idleRSS lets the host sit idle, then reads its resident memory and that
// of each plugin, whose pids the host reports to an admin. Every declared
// plugin that is not disabled must be running.
func (s *served) idleRSS(base string) (host int64, plugins map[string]int64, err error) {
	token, err := login(base)
	if err != nil {
		return 0, nil, err
	}
	list, err := pluginStatuses(base, token)
	if err != nil {
		return 0, nil, err
	}
	time.Sleep(idleSettle)
	if host, err = vmRSS(s.cmd.Process.Pid); err != nil {
		return 0, nil, err
	}
	plugins = map[string]int64{}
	for _, p := range list {
		switch p.State {
		case "disabled":
			continue
		case "running":
		default:
			return 0, nil, fmt.Errorf("plugin %s is %s: %s", p.Name, p.State, p.LastError)
		}
		if plugins[p.Name], err = vmRSS(p.PID); err != nil {
			return 0, nil, err
		}
	}
	return host, plugins, nil
}

func (s *served) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func formatAll(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, " ")
}
