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

	"github.com/stewardhq/steward/host/pluginstore"
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
	var cfg *ConfigError
	var ev *EventTypeError
	return errors.As(err, &p) || errors.As(err, &c) || errors.As(err, &cfg) || errors.As(err, &ev) || errors.Is(err, pluginstore.ErrRefused)
}

// Options configure a Supervisor.
type Options struct {
	Logger      hclog.Logger
	Environment string
	// DataDir is the host's data directory; each plugin is handed a
	// folder of its own in it, plugins/<name> (0700), never the host's.
	DataDir string
	Cloud   json.RawMessage
	// Storage gives a plugin its own database before its process starts:
	// the URL the plugin and its migrations use, from the database_url its
	// block declares (empty when none). An error wrapping
	// pluginstore.ErrRefused fails the plugin without a retry.
	Storage func(ctx context.Context, plugin, declared string) (string, error)
	// Backend serves the Host service's directory, audit and freshness calls.
	Backend Backend
	// Reserved reports whether the host itself serves a route, so a plugin
	// declaring it is a start-up error.
	Reserved func(method, path string) bool
	// OnChange is called whenever plugins' routes, jobs or schedules may
	// have changed: one (re)started (plugin names it), or Apply changed
	// some (plugin is empty). The host refreshes its OpenAPI document and
	// job specs.
	OnChange func(plugin string)
	// Migrate applies a plugin's migrations to its database (Storage's
	// URL) before it is configured. It runs under the start's context but
	// not its start_timeout: a migration over a large table, or a plugin's
	// tables moving out of the host's database, takes what it takes, and
	// Stop still ends it.
	Migrate    func(ctx context.Context, plugin, databaseURL string, files []*pluginv1.Migration) error
	Registerer prometheus.Registerer
}

// Supervisor starts, watches and restarts plugins.
type Supervisor struct {
	opts    Options
	runtime *runtimeDir
	// roster is the declared plugins. Apply replaces it whole and never
	// changes one in place, so requests and jobs read it without a lock.
	roster atomic.Pointer[roster]
	routes *RouteTable
	// events is which plugin declares each event type.
	events  eventTable
	metrics *metrics
	// calls are the requests in flight at plugins, by which a dataset read
	// made on a request's behalf is narrowed to its caller's tenants.
	calls protocol.Calls
	// applying serialises Apply.
	applying sync.Mutex
	// ctx ends when Stop begins; every start, restart and watcher runs
	// under it, so none of them outlives Stop.
	ctx    context.Context
	cancel context.CancelFunc
	// mu guards stopped, so that no goroutine joins wg once Stop waits.
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// roster is the declared plugins by name, in plugins.hcl's order.
type roster struct {
	byName map[string]*Instance
	order  []*Instance
}

// Instance is one declared plugin and, while it runs, its process.
type Instance struct {
	name string
	sup  *Supervisor
	log  hclog.Logger

	mu sync.RWMutex
	// decl is the declaration the current process was started from (or the
	// next one will be). A Decl is never changed once an instance holds it:
	// a new declaration replaces the pointer.
	decl      *Decl
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
	// changing serialises what replaces or stops the plugin's process:
	// starts, restarts, reloads, and Apply's changes.
	changing sync.Mutex
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
	s := &Supervisor{opts: opts, runtime: runtime, routes: newRouteTable(), metrics: newMetrics(opts.Registerer)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	r := &roster{byName: map[string]*Instance{}}
	for _, d := range decls {
		inst := s.newInstance(d)
		r.byName[d.Name] = inst
		r.order = append(r.order, inst)
	}
	s.roster.Store(r)
	return s, nil
}

// newInstance is a declared plugin that has not started.
func (s *Supervisor) newInstance(d Decl) *Instance {
	inst := &Instance{name: d.Name, decl: &d, sup: s, log: s.opts.Logger.Named(d.Name), state: StateStopped}
	if !d.Enabled {
		inst.state = StateDisabled
	}
	return inst
}

// instance is the declared plugin of that name.
func (s *Supervisor) instance(name string) (*Instance, bool) {
	inst, ok := s.roster.Load().byName[name]
	return inst, ok
}

// instances is every declared plugin in declaration order.
func (s *Supervisor) instances() []*Instance { return s.roster.Load().order }

// Start starts every enabled plugin in parallel and waits until each has
// started or failed its first start. A plugin that fails is retried in the
// background; a route conflict is returned as an error because serving with
// an ambiguous route table would be wrong, and so is a config block a
// plugin's schema refuses, as one *ConfigError whose lines name every
// plugin's problems, because serving without the plugin the operator
// configured would hide the mistake.
func (s *Supervisor) Start(ctx context.Context) error {
	insts := s.instances()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	var wg sync.WaitGroup
	errs := make([]error, len(insts))
	for i, inst := range insts {
		if !inst.Decl().Enabled || !s.begin() {
			continue
		}
		wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer wg.Done()
			inst.changing.Lock()
			defer inst.changing.Unlock()
			if err := inst.firstStart(ctx); err != nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	config := &ConfigError{}
	var others []error
	for _, err := range errs {
		var cfg *ConfigError
		if errors.As(err, &cfg) {
			config.Lines = append(config.Lines, cfg.Lines...)
		} else if err != nil {
			others = append(others, err)
		}
	}
	if len(config.Lines) > 0 {
		return config
	}
	return errors.Join(others...)
}

// firstStart starts a plugin that was not running, retrying in the
// background on failure; it returns a route conflict or a config block
// the plugin's schema refuses, which no retry cures. i.changing is held.
func (i *Instance) firstStart(ctx context.Context) error {
	err := i.start(ctx)
	var conflict *ConflictError
	var config *ConfigError
	switch {
	case err == nil:
	case errors.As(err, &conflict), errors.As(err, &config):
		return err
	case isPermanent(err):
		i.log.Error("plugin cannot start", "error", err)
	case i.sup.ctx.Err() != nil:
	default:
		i.log.Error("plugin failed to start", "error", err)
		i.sup.scheduleRestart(i, err)
	}
	return nil
}

// Stop kills every plugin, ends the starts and restarts in flight (each
// kills the process it was starting) and waits for all of them.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	for _, inst := range s.instances() {
		inst.kill(StateStopped)
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
func (s *Supervisor) Instance(name string) (*Instance, bool) { return s.instance(name) }

// Decl is the plugin's declaration: the one its process was started from,
// or the one its next start will use.
func (i *Instance) Decl() Decl {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return *i.decl
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
	insts := s.instances()
	out := make([]Status, 0, len(insts))
	for _, inst := range insts {
		out = append(out, inst.Status())
	}
	return out
}

// Status reports the instance's state.
func (i *Instance) Status() Status {
	i.mu.RLock()
	defer i.mu.RUnlock()
	st := Status{Name: i.name, State: i.state, PID: i.pid, Restarts: i.restarts, LastError: i.lastError, DataPlane: i.decl.DataPlane,
		Endpoints: []string{}, Jobs: []string{}}
	if i.desc != nil {
		st.Version = i.desc.Version
		routes := protocol.AllRoutes(i.desc)
		st.Routes = len(routes)
		for _, r := range routes {
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

// lease is one request's or job's hold on a plugin process: the process
// cannot be drained until release is called.
type lease struct {
	rpc   *protocol.Client
	plane dataPlane
	// decl is the declaration the process was started from.
	decl    *Decl
	gen     *generation
	release func()
}

// acquire is running for work a reload must wait for.
func (i *Instance) acquire() (lease, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	rpc, plane, err := i.runningLocked()
	if err != nil {
		return lease{}, err
	}
	g := i.gen
	g.active.Add(1)
	return lease{rpc: rpc, plane: plane, decl: i.decl, gen: g, release: sync.OnceFunc(g.active.Done)}, nil
}

func (i *Instance) runningLocked() (*protocol.Client, dataPlane, error) {
	if i.state == StateRunning {
		return i.rpc, i.dataPlane, nil
	}
	err := fmt.Errorf("%w: %s is %s", ErrUnavailable, i.name, i.state)
	if i.state == StateFailed {
		down := i.down
		if down == "" {
			down = "it cannot start"
		}
		return nil, dataPlane{}, &UnavailableError{Plugin: i.name, Down: down, Err: err}
	}
	return nil, dataPlane{}, unavailable(i.name, i.retryAt, err)
}

func (i *Instance) setState(st State, err error) {
	i.mu.Lock()
	i.state = st
	if err != nil {
		i.lastError = err.Error()
	}
	i.mu.Unlock()
	i.sup.metrics.state(i.name, st)
}

// process is one started process of a plugin and what it serves.
type process struct {
	decl    *Decl
	client  *plugin.Client
	rpc     *protocol.Client
	desc    *pluginv1.DescribeResponse
	plane   dataPlane
	pid     int
	exited  chan struct{}
	hostSrv *grpc.Server
}

// spawn verifies the binary d declares, starts it, and describes, migrates
// and configures it; described sees the description before anything is
// migrated or configured (for a plugin that builds what it serves from its
// config, once it is configured) and may refuse it. A failed spawn leaves
// no process behind. A checksum or protocol mismatch is a
// *permanentError, a config block the plugin's schema refuses a
// *ConfigError.
func (i *Instance) spawn(ctx context.Context, d *Decl, described func(*pluginv1.DescribeResponse) error) (*process, error) {
	s := i.sup
	if err := verifyChecksum(d.Binary, d.SHA256); err != nil {
		return nil, &permanentError{err}
	}
	var databaseURL string
	if s.opts.Storage != nil {
		var err error
		if databaseURL, err = s.opts.Storage(ctx, i.name, d.DatabaseURL); err != nil {
			return nil, err
		}
	}
	exited := make(chan struct{})
	var pid atomic.Int64
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginMap(&protocol.GRPCPlugin{}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           i.log,
		StartTimeout:     d.StartTimeout,
		Managed:          true,
		// The plugin inherits none of the host's environment but what
		// pluginEnv allows: the host's secrets live there.
		SkipHostEnv: true,
		RunnerFunc: func(l hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			cmd.Env = append(pluginEnv(os.Environ(), d.CloudCredential), cmd.Env...)
			if d.MemoryLimit > 0 {
				cmd.Env = append(cmd.Env, "GOMEMLIMIT="+strconv.FormatInt(softMemoryLimit(d.MemoryLimit), 10))
			}
			return protocol.NewRunner(l, cmd, d.Binary, exited, func(p int) { pid.Store(int64(p)) })
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
		return nil, fmt.Errorf("start %s: %w", d.Binary, err)
	}
	raw, err := rpcClient.Dispense(protocol.PluginName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("dispense: %w", err)
	}
	pc := raw.(*protocol.Client)
	callCtx, cancel := context.WithTimeout(ctx, d.StartTimeout)
	defer cancel()
	var plane dataPlane
	host := &hostService{sup: s, plugin: i.name}
	startup := &protocol.Startup{
		Name:   i.name,
		Config: d.Config,
		ConfigRefused: func(problems []protocol.ConfigProblem) error {
			return d.configError(problems)
		},
		Described: func(desc *pluginv1.DescribeResponse) error {
			if err := described(desc); err != nil {
				return err
			}
			host.desc.Store(desc)
			return nil
		},
		Host: host,
		Configure: func(desc *pluginv1.DescribeResponse) (*pluginv1.ConfigureRequest, error) {
			cloudSettings, err := pluginCloud(s.opts.Cloud, d.CloudCredential)
			if err != nil {
				return nil, fmt.Errorf("cloud settings: %w", err)
			}
			dataDir, err := s.pluginDataDir(i.name)
			if err != nil {
				return nil, err
			}
			req := &pluginv1.ConfigureRequest{
				DatabaseUrl: databaseURL, Environment: s.opts.Environment, DataDir: dataDir, Cloud: cloudSettings,
			}
			if d.DataPlane == "socket" && slices.Contains(desc.Capabilities, protocol.CapabilityHTTPSocket) {
				// During a reload the old process still serves on its
				// socket, so the new one takes the other of two names.
				plane.socketPath = filepath.Join(s.runtime.path, i.name+".sock")
				i.mu.RLock()
				if i.dataPlane.socketPath == plane.socketPath {
					plane.socketPath = filepath.Join(s.runtime.path, i.name+".next.sock")
				}
				i.mu.RUnlock()
				plane.token = randomToken()
				req.DataSocket, req.DataToken = plane.socketPath, plane.token
			}
			return req, nil
		},
	}
	if s.opts.Migrate != nil {
		startup.Migrate = func(_ context.Context, files []*pluginv1.Migration) error {
			return s.opts.Migrate(ctx, i.name, databaseURL, files)
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
	p := &process{decl: d, client: client, rpc: pc, desc: started.Describe, plane: plane, pid: int(pid.Load()), exited: exited}
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
	d := i.Decl()
	var routesFailed bool
	p, err := i.spawn(ctx, &d, func(desc *pluginv1.DescribeResponse) error {
		err := s.events.check(i.name, desc.EventTypes)
		if err == nil {
			err = s.routes.set(i.name, protocol.AllRoutes(desc), s.opts.Reserved)
		}
		if err == nil {
			err = s.events.set(i.name, desc.EventTypes)
		}
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
		return fmt.Errorf("start %s: %w", d.Binary, err)
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
	i.decl = p.decl
	i.client, i.rpc, i.desc, i.dataPlane, i.pid, i.hostSrv = p.client, p.rpc, p.desc, p.plane, p.pid, p.hostSrv
	i.gen = &generation{}
	i.startedAt = time.Now()
}

// started records a process that now serves and watches it.
func (i *Instance) started(p *process, t0 time.Time) {
	s := i.sup
	s.metrics.startSeconds.WithLabelValues(i.name).Set(time.Since(t0).Seconds())
	// Create the series at start so dashboards see the plugin before its
	// first request.
	s.metrics.rpc.WithLabelValues(i.name, "http")
	s.metrics.rpcErrors.WithLabelValues(i.name, "http")
	i.log.Info("plugin started", "version", p.desc.Version, "pid", p.pid, "routes", len(p.desc.Routes), "data_plane", i.Status().DataPlane, "took", time.Since(t0).Round(time.Millisecond))
	s.changed(i.name)
	if s.begin() {
		go i.watch(p.client, p.exited)
	}
	if p.decl.MemoryLimit > 0 && memoryWatched && s.begin() {
		go i.watchMemory(p.client, p.pid, p.decl.MemoryLimit)
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

// pluginDataDir makes the plugin's own folder in the host's data
// directory, plugins/<name>, readable by the host's user alone: a plugin
// is handed that, never the data directory holding the host's database
// and secrets. Empty when the host has no data directory.
func (s *Supervisor) pluginDataDir(name string) (string, error) {
	if s.opts.DataDir == "" {
		return "", nil
	}
	dir, err := filepath.Abs(filepath.Join(s.opts.DataDir, "plugins", name))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory of plugin %s: %w", name, err)
	}
	return dir, nil
}

// scheduleRestart restarts a plugin with exponential backoff, or gives up
// when it crashed MaxCrashes times within the window.
func (s *Supervisor) scheduleRestart(i *Instance, cause error) {
	if s.ctx.Err() != nil {
		return
	}
	now := time.Now()
	i.mu.Lock()
	pol := i.decl.Restart
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
		s.metrics.state(i.name, StateFailed)
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
	s.metrics.state(i.name, StateRestarting)
	s.metrics.restarts.WithLabelValues(i.name).Inc()
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
		i.changing.Lock()
		defer i.changing.Unlock()
		i.mu.Lock()
		// A reload, or plugins.hcl disabling or removing the plugin, may
		// have settled its state meanwhile.
		if i.state != StateRestarting {
			i.mu.Unlock()
			return
		}
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
	var out []string
	for _, inst := range s.instances() {
		out = append(out, inst.name)
	}
	sort.Strings(out)
	return out
}
