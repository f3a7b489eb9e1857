package plugins

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// State is where a plugin is in its life.
type State string

const (
	StateStarting   State = "starting"
	StateRunning    State = "running"
	StateRestarting State = "restarting"
	// StateFailed: crashed too often within the restart window; the
	// supervisor gave up until the host restarts.
	StateFailed   State = "failed"
	StateStopped  State = "stopped"
	StateDisabled State = "disabled"
)

// ErrUnavailable is returned when a plugin is not running.
var ErrUnavailable = errors.New("plugin unavailable")

// permanentError is a start failure that a restart cannot cure (a wrong
// checksum, a protocol or name mismatch); the plugin is marked failed.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// isPermanent reports whether retrying the start is pointless.
func isPermanent(err error) bool {
	var p *permanentError
	var c *ConflictError
	return errors.As(err, &p) || errors.As(err, &c)
}

// Options configure a Supervisor.
type Options struct {
	Logger      hclog.Logger
	DatabaseURL string
	Environment string
	DataDir     string
	Cloud       json.RawMessage
	// Backend serves the Host service's directory, audit and freshness calls.
	Backend Backend
	// Reserved reports whether the host itself serves a route, so a plugin
	// declaring it is a start-up error.
	Reserved func(method, path string) bool
	// OnDescribe is called whenever a plugin (re)starts with its description,
	// so the host can refresh OpenAPI and job specs.
	OnDescribe func(name string, desc *pluginv1.DescribeResponse)
	// Migrate applies a plugin's migrations before it is configured.
	Migrate    func(ctx context.Context, plugin string, files []*pluginv1.Migration) error
	Registerer prometheus.Registerer
}

// Supervisor starts, watches and restarts plugins.
type Supervisor struct {
	opts      Options
	runtime   *runtimeDir
	instances map[string]*Instance
	order     []string
	routes    *RouteTable
	metrics   *metrics
	// ctx ends when Stop begins; every start, restart and watcher runs
	// under it, so none of them outlives Stop.
	ctx    context.Context
	cancel context.CancelFunc
	// mu guards stopped, so that no goroutine joins wg once Stop waits.
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// Instance is one declared plugin and, while it runs, its process.
type Instance struct {
	Decl Decl
	sup  *Supervisor
	log  hclog.Logger

	mu        sync.RWMutex
	state     State
	client    *plugin.Client
	rpc       *protocol.Client
	desc      *pluginv1.DescribeResponse
	dataPlane dataPlane
	pid       int
	startedAt time.Time
	retryAt   time.Time
	// down says why the supervisor gave up, as callers are told.
	down      string
	lastError string
	crashes   []time.Time
	restarts  int
	// exitCause, when set, is why the supervisor killed the running
	// process, which watch then reports instead of a crash.
	exitCause error
	hostSrv   *grpc.Server
	// gen counts the requests and jobs in flight on the current process.
	gen *generation
	// reloading serialises reloads of the plugin.
	reloading sync.Mutex
}

// New builds a supervisor for the declared plugins; Start runs them.
func New(decls []Decl, opts Options) (*Supervisor, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	runtime, err := newRuntimeDir(opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("plugin runtime dir: %w", err)
	}
	s := &Supervisor{opts: opts, runtime: runtime, instances: map[string]*Instance{}, routes: newRouteTable(),
		metrics: newMetrics(opts.Registerer)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, d := range decls {
		inst := &Instance{Decl: d, sup: s, log: opts.Logger.Named(d.Name), state: StateStopped}
		if !d.Enabled {
			inst.state = StateDisabled
		}
		s.instances[d.Name] = inst
		s.order = append(s.order, d.Name)
	}
	return s, nil
}

// Start starts every enabled plugin in parallel and waits until each has
// started or failed its first start. A plugin that fails is retried in the
// background; a route conflict is returned as an error because serving with
// an ambiguous route table would be wrong.
func (s *Supervisor) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	var wg sync.WaitGroup
	errs := make([]error, len(s.order))
	for i, name := range s.order {
		inst := s.instances[name]
		if !inst.Decl.Enabled || !s.begin() {
			continue
		}
		wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer wg.Done()
			err := inst.start(ctx)
			var conflict *ConflictError
			if errors.As(err, &conflict) {
				errs[i] = err
				return
			}
			if isPermanent(err) {
				inst.log.Error("plugin cannot start", "error", err)
				return
			}
			if err != nil && s.ctx.Err() != nil {
				return
			}
			if err != nil {
				inst.log.Error("plugin failed to start", "error", err)
				s.scheduleRestart(inst, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stop kills every plugin, ends the starts and restarts in flight (each
// kills the process it was starting) and waits for all of them.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	for _, name := range s.order {
		s.instances[name].kill(StateStopped)
	}
	s.wg.Wait()
	s.runtime.remove()
}

// begin counts a goroutine that Stop must wait for, or reports false once
// Stop has begun.
func (s *Supervisor) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.wg.Add(1)
	return true
}

// Instance returns a plugin by name.
func (s *Supervisor) Instance(name string) (*Instance, bool) {
	inst, ok := s.instances[name]
	return inst, ok
}

// Routes is the table of plugin routes.
func (s *Supervisor) Routes() *RouteTable { return s.routes }

// Status is a plugin's state as health and `steward plugins list` show it.
type Status struct {
	Name      string     `json:"name"`
	Version   string     `json:"version,omitempty"`
	State     State      `json:"state"`
	PID       int        `json:"pid,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	Restarts  int        `json:"restarts"`
	// LastError is the plugin's latest failure (a crash, a failed start, a
	// kill over its memory limit), kept after it recovers.
	LastError string `json:"last_error,omitempty"`
	DataPlane string `json:"data_plane"`
	Routes    int    `json:"routes"`
	// Endpoints are the plugin's routes as "METHOD /path", and Jobs its
	// jobs' names, as its process last described them.
	Endpoints []string `json:"endpoints"`
	Jobs      []string `json:"jobs"`
}

// Statuses lists every declared plugin in declaration order.
func (s *Supervisor) Statuses() []Status {
	out := make([]Status, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.instances[name].Status())
	}
	return out
}

// Status reports the instance's state.
func (i *Instance) Status() Status {
	i.mu.RLock()
	defer i.mu.RUnlock()
	st := Status{Name: i.Decl.Name, State: i.state, PID: i.pid, Restarts: i.restarts, LastError: i.lastError, DataPlane: i.Decl.DataPlane,
		Endpoints: []string{}, Jobs: []string{}}
	if i.desc != nil {
		st.Version = i.desc.Version
		st.Routes = len(i.desc.Routes)
		for _, r := range i.desc.Routes {
			st.Endpoints = append(st.Endpoints, r.Method+" "+r.Path)
		}
		for _, j := range i.desc.Jobs {
			st.Jobs = append(st.Jobs, j.Name)
		}
	}
	if i.state == StateRunning {
		t := i.startedAt
		st.StartedAt = &t
		if i.dataPlane.socket == nil {
			st.DataPlane = "grpc"
		}
	}
	return st
}

// Description is the plugin's last Describe answer (nil before its first start).
func (i *Instance) Description() *pluginv1.DescribeResponse {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.desc
}

// running returns the live client, or an *UnavailableError that says when
// a retry makes sense or that none does.
func (i *Instance) running() (*protocol.Client, dataPlane, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.runningLocked()
}

// acquire is running for work a reload must wait for: release, called
// once the work is done, lets the process it ran on be drained.
func (i *Instance) acquire() (rpc *protocol.Client, plane dataPlane, release func(), err error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	rpc, plane, err = i.runningLocked()
	if err != nil {
		return nil, dataPlane{}, nil, err
	}
	g := i.gen
	g.active.Add(1)
	return rpc, plane, sync.OnceFunc(g.active.Done), nil
}

func (i *Instance) runningLocked() (*protocol.Client, dataPlane, error) {
	if i.state == StateRunning {
		return i.rpc, i.dataPlane, nil
	}
	err := fmt.Errorf("%w: %s is %s", ErrUnavailable, i.Decl.Name, i.state)
	if i.state == StateFailed {
		down := i.down
		if down == "" {
			down = "it cannot start"
		}
		return nil, dataPlane{}, &UnavailableError{Plugin: i.Decl.Name, Down: down, Err: err}
	}
	return nil, dataPlane{}, unavailable(i.Decl.Name, i.retryAt, err)
}

func (i *Instance) setState(st State, err error) {
	i.mu.Lock()
	i.state = st
	if err != nil {
		i.lastError = err.Error()
	}
	i.mu.Unlock()
	i.sup.metrics.state(i.Decl.Name, st)
}

// process is one started process of a plugin and what it serves.
type process struct {
	client  *plugin.Client
	rpc     *protocol.Client
	desc    *pluginv1.DescribeResponse
	plane   dataPlane
	pid     int
	exited  chan struct{}
	hostSrv *grpc.Server
}

// spawn verifies the declared binary, starts it, and describes, migrates
// and configures it; described sees the description before anything is
// migrated or configured and may refuse it. A failed spawn leaves no
// process behind. A checksum or protocol mismatch is a *permanentError.
func (i *Instance) spawn(ctx context.Context, described func(*pluginv1.DescribeResponse) error) (*process, error) {
	s := i.sup
	if err := verifyChecksum(i.Decl.Binary, i.Decl.SHA256); err != nil {
		return nil, &permanentError{err}
	}
	exited := make(chan struct{})
	var pid atomic.Int64
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginMap(&protocol.GRPCPlugin{}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           i.log,
		StartTimeout:     i.Decl.StartTimeout,
		Managed:          true,
		// The plugin inherits none of the host's environment but what
		// pluginEnv allows: the host's secrets live there.
		SkipHostEnv: true,
		RunnerFunc: func(l hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			cmd.Env = append(pluginEnv(os.Environ(), i.Decl.CloudCredential), cmd.Env...)
			if i.Decl.MemoryLimit > 0 {
				cmd.Env = append(cmd.Env, "GOMEMLIMIT="+strconv.FormatInt(softMemoryLimit(i.Decl.MemoryLimit), 10))
			}
			return protocol.NewRunner(l, cmd, i.Decl.Binary, exited, func(p int) { pid.Store(int64(p)) })
		},
		SyncStdout: protocol.LogWriter(i.log, "stdout"),
		SyncStderr: protocol.LogWriter(i.log, "stderr"),
	})
	// The handshake takes no context and client.Kill waits for it to end:
	// ending the process is what ends a handshake early.
	halt := context.AfterFunc(ctx, func() { killProcess(int(pid.Load()), exited) })
	rpcClient, err := client.Client()
	halt()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("start %s: %w", i.Decl.Binary, err)
	}
	raw, err := rpcClient.Dispense(protocol.PluginName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("dispense: %w", err)
	}
	pc := raw.(*protocol.Client)
	callCtx, cancel := context.WithTimeout(ctx, i.Decl.StartTimeout)
	defer cancel()
	var plane dataPlane
	startup := &protocol.Startup{
		Name:      i.Decl.Name,
		Described: described,
		Host:      &hostService{sup: s, plugin: i.Decl.Name},
		Configure: func(desc *pluginv1.DescribeResponse) (*pluginv1.ConfigureRequest, error) {
			cloudSettings, err := pluginCloud(s.opts.Cloud, i.Decl.CloudCredential)
			if err != nil {
				return nil, fmt.Errorf("cloud settings: %w", err)
			}
			req := &pluginv1.ConfigureRequest{
				Config: i.Decl.Config, DatabaseUrl: s.opts.DatabaseURL,
				Environment: s.opts.Environment, DataDir: s.opts.DataDir, Cloud: cloudSettings,
			}
			if i.Decl.DataPlane == "socket" && slices.Contains(desc.Capabilities, protocol.CapabilityHTTPSocket) {
				// During a reload the old process still serves on its
				// socket, so the new one takes the other of two names.
				plane.socketPath = filepath.Join(s.runtime.path, i.Decl.Name+".sock")
				i.mu.RLock()
				if i.dataPlane.socketPath == plane.socketPath {
					plane.socketPath = filepath.Join(s.runtime.path, i.Decl.Name+".next.sock")
				}
				i.mu.RUnlock()
				plane.token = randomToken()
				req.DataSocket, req.DataToken = plane.socketPath, plane.token
			}
			return req, nil
		},
	}
	if s.opts.Migrate != nil {
		startup.Migrate = func(ctx context.Context, files []*pluginv1.Migration) error {
			return s.opts.Migrate(ctx, i.Decl.Name, files)
		}
	}
	started, err := startup.Run(callCtx, pc)
	var mismatch *protocol.MismatchError
	if errors.As(err, &mismatch) {
		client.Kill()
		return nil, &permanentError{err}
	}
	if err != nil {
		client.Kill()
		return nil, err
	}
	if started.Configured.DataSocketReady && plane.socketPath != "" {
		plane.socket = newSocketClient(plane.socketPath)
	}
	p := &process{client: client, rpc: pc, desc: started.Describe, plane: plane, pid: int(pid.Load()), exited: exited}
	select {
	case p.hostSrv = <-started.HostServer:
	default:
	}
	return p, nil
}

// start runs the plugin's process and configures it. When ctx ends first
// (Stop has begun), the process is killed and the plugin left stopped.
func (i *Instance) start(ctx context.Context) error {
	s := i.sup
	if err := ctx.Err(); err != nil {
		i.setState(StateStopped, nil)
		return err
	}
	i.setState(StateStarting, nil)
	t0 := time.Now()
	var routesFailed bool
	p, err := i.spawn(ctx, func(desc *pluginv1.DescribeResponse) error {
		err := s.routes.set(i.Decl.Name, desc.Routes, s.opts.Reserved)
		routesFailed = err != nil
		return err
	})
	switch {
	case isPermanent(err):
		i.setState(StateFailed, err)
		return err
	case routesFailed:
		i.setState(StateFailed, err)
		return err
	case err != nil:
		if s.ctx.Err() != nil {
			i.setState(StateStopped, nil)
			return err
		}
		i.setState(StateRestarting, err)
		return err
	}
	i.mu.Lock()
	// Checked under the lock Stop's kill takes: either Stop has begun and
	// this start kills its own process, or kill sees this client.
	if err := ctx.Err(); err != nil {
		i.mu.Unlock()
		p.client.Kill()
		i.setState(StateStopped, nil)
		return fmt.Errorf("start %s: %w", i.Decl.Binary, err)
	}
	i.install(p)
	i.mu.Unlock()
	i.setState(StateRunning, nil)
	i.started(p, t0)
	return nil
}

// install makes p the instance's process; i.mu is held. lastError stays:
// after a restart or reload it says what the plugin recovered from.
func (i *Instance) install(p *process) {
	i.client, i.rpc, i.desc, i.dataPlane, i.pid, i.hostSrv = p.client, p.rpc, p.desc, p.plane, p.pid, p.hostSrv
	i.gen = &generation{}
	i.startedAt = time.Now()
}

// started records a process that now serves and watches it.
func (i *Instance) started(p *process, t0 time.Time) {
	s := i.sup
	s.metrics.startSeconds.WithLabelValues(i.Decl.Name).Set(time.Since(t0).Seconds())
	// Create the series at start so dashboards see the plugin before its
	// first request.
	s.metrics.rpc.WithLabelValues(i.Decl.Name, "http")
	s.metrics.rpcErrors.WithLabelValues(i.Decl.Name, "http")
	i.log.Info("plugin started", "version", p.desc.Version, "pid", p.pid, "routes", len(p.desc.Routes), "data_plane", i.Status().DataPlane, "took", time.Since(t0).Round(time.Millisecond))
	if s.opts.OnDescribe != nil {
		s.opts.OnDescribe(i.Decl.Name, p.desc)
	}
	if s.begin() {
		go i.watch(p.client, p.exited)
	}
	if i.Decl.MemoryLimit > 0 && memoryWatched && s.begin() {
		go i.watchMemory(p.client, p.pid)
	}
}

// watch waits for the process to exit; an exit the supervisor did not ask
// for is a crash.
func (i *Instance) watch(client *plugin.Client, exited chan struct{}) {
	defer i.sup.wg.Done()
	select {
	case <-exited:
	case <-i.sup.ctx.Done():
		return
	}
	i.mu.Lock()
	current := i.client == client
	wasRunning := i.state == StateRunning
	err := i.exitCause
	i.exitCause = nil
	i.mu.Unlock()
	if !current || !wasRunning {
		return
	}
	client.Kill()
	if err == nil {
		err = errors.New("plugin process exited unexpectedly")
	}
	i.log.Error("plugin crashed", "error", err)
	i.sup.scheduleRestart(i, err)
}

// scheduleRestart restarts a plugin with exponential backoff, or gives up
// when it crashed MaxCrashes times within the window.
func (s *Supervisor) scheduleRestart(i *Instance, cause error) {
	if s.ctx.Err() != nil {
		return
	}
	pol := i.Decl.Restart
	now := time.Now()
	i.mu.Lock()
	var recent []time.Time
	for _, t := range i.crashes {
		if now.Sub(t) < pol.Window {
			recent = append(recent, t)
		}
	}
	recent = append(recent, now)
	i.crashes = recent
	n := len(recent)
	if n >= pol.MaxCrashes {
		i.state = StateFailed
		i.lastError = fmt.Sprintf("gave up after %d crashes within %s: %v", n, pol.Window, cause)
		i.down = fmt.Sprintf("given up after %d crashes", n)
		if n == 1 {
			i.down = "given up after 1 crash"
		}
		i.mu.Unlock()
		s.metrics.state(i.Decl.Name, StateFailed)
		i.log.Error("plugin crash-looping; not restarting", "crashes", n, "window", pol.Window)
		return
	}
	backoff := pol.BackoffInitial << (n - 1)
	if backoff > pol.BackoffMax || backoff <= 0 {
		backoff = pol.BackoffMax
	}
	i.state = StateRestarting
	i.lastError = cause.Error()
	i.retryAt = now.Add(backoff)
	i.mu.Unlock()
	s.metrics.state(i.Decl.Name, StateRestarting)
	s.metrics.restarts.WithLabelValues(i.Decl.Name).Inc()
	i.log.Info("restarting plugin", "in", backoff, "crashes_in_window", n)
	if !s.begin() {
		return
	}
	go func() {
		defer s.wg.Done()
		select {
		case <-time.After(backoff):
		case <-s.ctx.Done():
			return
		}
		i.mu.Lock()
		i.restarts++
		i.mu.Unlock()
		if err := i.start(s.ctx); err != nil {
			if s.ctx.Err() != nil {
				return
			}
			if isPermanent(err) {
				i.log.Error("plugin cannot start; not restarting", "error", err)
				return
			}
			i.log.Error("plugin restart failed", "error", err)
			s.scheduleRestart(i, err)
		}
	}()
}

func (i *Instance) kill(final State) {
	i.mu.Lock()
	client := i.client
	if i.state != StateDisabled {
		i.state = final
	}
	if i.dataPlane.socket != nil {
		i.dataPlane.socket.CloseIdleConnections()
	}
	i.mu.Unlock()
	if client != nil {
		client.Kill()
	}
}

// Kill stops a running plugin as if it had crashed; tests and the admin
// use it to prove restarts.
func (i *Instance) Kill() {
	i.mu.RLock()
	pid := i.pid
	i.mu.RUnlock()
	if p, err := os.FindProcess(pid); err == nil && pid > 0 {
		_ = p.Kill()
	}
}

// killProcess ends a plugin process that has started and not yet exited.
func killProcess(pid int, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	if pid <= 0 {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// PID is the plugin's process id while it runs.
func (i *Instance) PID() int {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.pid
}

func verifyChecksum(path, want string) error {
	if want == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want) {
		return fmt.Errorf("checksum mismatch for %s: sha256 is %s, plugins.hcl says %s", path, got, want)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Names lists the declared plugins, sorted.
func (s *Supervisor) Names() []string {
	out := append([]string(nil), s.order...)
	sort.Strings(out)
	return out
}
