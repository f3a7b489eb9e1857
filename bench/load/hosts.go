package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/bench/stat"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/pluginstore"
)

// setup is one way of deploying the host.
type setup struct {
	name     string
	about    string
	postgres bool // PostgreSQL and Redis; SQLite and in-memory state otherwise
	replicas int
}

var setups = []setup{
	{"sqlite", "SQLite, one replica", false, 1},
	{"pg", "PostgreSQL + Redis, one replica", true, 1},
	{"pg2", "PostgreSQL + Redis, two replicas behind the tool's round-robin balancer", true, 2},
}

// deployment is a setup's running hosts and what was made for them: a
// folder, a PostgreSQL database and a Redis key prefix, all removed by
// close.
type deployment struct {
	opts     *options
	setup    setup
	world    string
	dir      string
	dbName   string // the PostgreSQL database made for the run
	prefix   string // the Redis key prefix of the run
	replicas []*replica
	proxy    *http.Server
	// base is where the load goes: the one host, or the balancer.
	base string
}

// replica is one `steward serve` process.
type replica struct {
	cmd     *exec.Cmd
	logPath string
	base    string
	// debug is the host's runtime profiles' address, with -host-profiles.
	debug  string
	exited chan struct{}
	// plugins are the processes the host started, read before it stops,
	// so none can outlive it.
	plugins []stat.Proc
}

// readyLine is the host's log line once it serves, naming its address.
var readyLine = regexp.MustCompile(`steward ready: addr=(\S+)`)

// debugLine names the address of the host's runtime profiles, logged
// before the ready line.
var debugLine = regexp.MustCompile(`serving runtime profiles: addr=(\S+)`)

// deploy starts a setup's hosts on a world file (empty: the demo world).
// Only the first replica registers the world's tenants and queues the
// first syncs; every replica works them.
func deploy(ctx context.Context, o *options, s setup, worldName, worldFile string) (_ *deployment, err error) {
	d := &deployment{opts: o, setup: s, world: worldName}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.dir, err = os.MkdirTemp("", "steward-load-"); err != nil {
		return nil, err
	}
	hcl, err := pluginsFile(o, d.dir)
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	tag := fmt.Sprintf("steward_load_%d_%s_%s", os.Getpid(), s.name, worldName)
	env := map[string]string{
		"STEWARD_ENV":          "development",
		"STEWARD_CLOUD":        "sim",
		"STEWARD_HTTP_ADDR":    "127.0.0.1:0",
		"STEWARD_PLUGINS_FILE": hcl,
		"STEWARD_SIM_WORLD":    worldFile,
		// Replicas share the signing secret: a token one issues verifies
		// on the other, and plugins' database passwords derive from it.
		"STEWARD_JWT_SECRET": hex.EncodeToString(secret),
		// Budgets are not what is measured: nothing may be refused.
		"STEWARD_RATE_LIMIT_PER_MINUTE":      "1000000000",
		"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000000000",
		"STEWARD_ACCESS_LOG":                 "false",
		// Info, for the ready line.
		"STEWARD_LOG_LEVEL": "info",
		"STEWARD_REDIS_URL": "",
	}
	if o.profileDir != "" {
		env["STEWARD_PLUGIN_PROFILE_DIR"] = o.profileDir
	}
	if o.hostProfileDir != "" {
		env["STEWARD_DEBUG_ADDR"] = "127.0.0.1:0"
	}
	if s.postgres {
		if env["STEWARD_DATABASE_URL"], err = d.createDatabase(ctx, tag); err != nil {
			return nil, err
		}
		// Sized as the README says for replicas sharing PostgreSQL's
		// default 100 connections (seven processes a replica, six each
		// with two), and opened whole at start as the README says for a
		// steady load, so that no pool grows in a window.
		u, err := url.Parse(env["STEWARD_DATABASE_URL"])
		if err != nil {
			return nil, err
		}
		q := u.Query()
		pool := "10"
		if s.replicas > 1 {
			pool = "6"
		}
		q.Set("pool_max_conns", pool)
		if o.prefill {
			q.Set("pool_min_conns", pool)
		}
		u.RawQuery = q.Encode()
		env["STEWARD_DATABASE_URL"] = u.String()
		d.prefix = strings.ReplaceAll(tag, "_", "-")
		env["STEWARD_REDIS_URL"] = o.redisURL
		env["STEWARD_REDIS_PREFIX"] = d.prefix
	} else {
		env["STEWARD_DATABASE_URL"] = "sqlite://" + filepath.Join(d.dir, "r0", "steward.db")
	}
	for i := range s.replicas {
		env["STEWARD_DATA_DIR"] = filepath.Join(d.dir, "r"+strconv.Itoa(i))
		env["STEWARD_SIM_BOOTSTRAP"] = strconv.FormatBool(i == 0)
		r, err := startReplica(ctx, o.binDir, env, filepath.Join(d.dir, fmt.Sprintf("r%d.log", i)))
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		d.replicas = append(d.replicas, r)
	}
	if s.replicas == 1 {
		d.base = d.replicas[0].base
		return d, nil
	}
	d.base, err = d.balance(o.maxConns())
	return d, err
}

// pluginsFile writes the repository's plugins.hcl beside a link to the
// built binaries, as BenchmarkPages does: the declaration names them
// relative to its own folder (bin/plugins/…).
func pluginsFile(o *options, dir string) (string, error) {
	decl, err := os.ReadFile(o.pluginsFile)
	if err != nil {
		return "", err
	}
	bin, err := filepath.Abs(o.binDir)
	if err != nil {
		return "", err
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		return "", err
	}
	hcl := filepath.Join(dir, "plugins.hcl")
	return hcl, os.WriteFile(hcl, decl, 0o600)
}

// startReplica execs `steward serve` from the working directory (the
// repository's root, which plugins.hcl's relative paths are resolved
// against) and waits for its ready line.
func startReplica(ctx context.Context, binDir string, env map[string]string, logPath string) (*replica, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(binDir, "steward"), "serve")
	// The tool's own STEWARD_ settings would leak into the host.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STEWARD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Its own process group: an interrupt of the terminal reaches the
	// tool, which stops the hosts in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout = logFile
	stderr, err := cmd.StderrPipe()
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	r := &replica{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	ready := make(chan string, 1)
	debug := make(chan string, 1)
	copied := make(chan struct{})
	// The host's standard error goes to the log through the tool, which
	// looks for the ready line on the way.
	go func() {
		defer close(copied)
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(logFile, line+"\n")
			if m := debugLine.FindStringSubmatch(line); m != nil {
				debug <- m[1]
			}
			if m := readyLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		<-copied
		_ = cmd.Wait()
		close(r.exited)
	}()
	select {
	case r.base = <-ready:
		select {
		case r.debug = <-debug:
		default:
		}
		return r, nil
	case <-r.exited:
		return nil, fmt.Errorf("the host exited during start-up; its log:\n%s", tail(logPath, 30))
	case <-time.After(2 * time.Minute):
		r.stop()
		return nil, fmt.Errorf("the host was not ready after 2 minutes; its log:\n%s", tail(logPath, 30))
	case <-ctx.Done():
		r.stop()
		return nil, ctx.Err()
	}
}

// children are pid's child processes.
func children(pid int) []stat.Proc {
	var out []stat.Proc
	for _, p := range stat.Procs() {
		if p.PPID == pid {
			out = append(out, p)
		}
	}
	return out
}

// stop ends the host as an orchestrator would (SIGTERM, then SIGKILL after
// a minute), then any plugin process it left.
func (r *replica) stop() {
	r.plugins = children(r.cmd.Process.Pid)
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(time.Minute):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	// A plugin still there (the same pid and command) was left behind.
	for _, p := range r.plugins {
		if now, ok := stat.ReadProc(p.PID); ok && now.Comm == p.Comm {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}

// balance serves a round-robin reverse proxy over the replicas on a
// loopback port and returns its URL; it keeps up to conns idle connections
// to each replica, so it opens no new ones in a steady run.
func (d *deployment) balance(conns int) (string, error) {
	targets := make([]*url.URL, len(d.replicas))
	for i, r := range d.replicas {
		u, err := url.Parse(r.base)
		if err != nil {
			return "", err
		}
		targets[i] = u
	}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(targets[(next.Add(1)-1)%uint64(len(targets))])
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	d.proxy = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = d.proxy.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// createDatabase makes the run's database on the PostgreSQL server of
// -postgres and returns its URL.
func (d *deployment) createDatabase(ctx context.Context, name string) (string, error) {
	admin, err := store.Open(ctx, d.opts.postgresURL, store.Options{MaxOpenConns: 1})
	if err != nil {
		return "", fmt.Errorf("PostgreSQL: %w", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE ?", bun.Ident(name)); err != nil {
		return "", fmt.Errorf("PostgreSQL: %w", err)
	}
	d.dbName = name
	return databaseURL(d.opts.postgresURL, name)
}

// databaseURL is the URL of database name on the server of base.
func databaseURL(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// close stops the hosts and the balancer and removes what the run made:
// the plugins' PostgreSQL roles and schemas (roles outlive a database),
// the database, the Redis keys under the run's prefix and the folder.
func (d *deployment) close() {
	if d.proxy != nil {
		_ = d.proxy.Close()
	}
	var errs []error
	for i, r := range d.replicas {
		r.stop()
		if d.opts.logDir != "" {
			errs = append(errs, copyFile(r.logPath, filepath.Join(d.opts.logDir, fmt.Sprintf("%s-%s-r%d.log", d.setup.name, d.world, i))))
		}
	}
	ctx := context.Background()
	if d.dbName != "" {
		errs = append(errs, d.dropDatabase(ctx))
	}
	if d.prefix != "" {
		errs = append(errs, d.dropRedisKeys(ctx))
	}
	if d.dir != "" {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "clean-up:", err)
	}
}

func (d *deployment) dropDatabase(ctx context.Context) error {
	u, err := databaseURL(d.opts.postgresURL, d.dbName)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, u, store.Options{MaxOpenConns: 1})
	if err != nil {
		return err
	}
	err = pluginstore.Drop(ctx, db)
	_ = db.Close()
	if err != nil {
		return err
	}
	admin, err := store.Open(ctx, d.opts.postgresURL, store.Options{MaxOpenConns: 1})
	if err != nil {
		return err
	}
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS ? WITH (FORCE)", bun.Ident(d.dbName))
	return err
}

func (d *deployment) dropRedisKeys(ctx context.Context) error {
	opts, err := redis.ParseURL(d.opts.redisURL)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	iter := c.Scan(ctx, 0, d.prefix+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	keys = append(keys, d.prefix)
	for chunk := range slices.Chunk(keys, 500) {
		if err := c.Del(ctx, chunk...).Err(); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// tail is the last n lines of a log file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
