package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// generation counts the work in flight on one process of a plugin, so a
// reload can wait for it before stopping that process. No work joins a
// generation once its process is replaced: acquire takes the instance's
// read lock, the swap its write lock.
type generation struct {
	active sync.WaitGroup
	// replaced is set when a reload stops the process with work still in
	// flight, past the drain timeout: that work did not fail on its own.
	replaced atomic.Bool
}

// drain waits until the generation's work is done, timeout passes or the
// host stops, and reports whether the work finished.
func (g *generation) drain(timeout time.Duration, stopping <-chan struct{}) bool {
	done := make(chan struct{})
	go func() {
		g.active.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
	case <-stopping:
	}
	return false
}

// ErrProcessReplaced ends a job whose plugin process a reload stopped
// before the job finished, past the plugin's drain_timeout.
var ErrProcessReplaced = errors.New("the plugin process was replaced by a reload before the job finished")

// ErrUnknownPlugin is a reload of a plugin plugins.hcl does not declare.
var ErrUnknownPlugin = errors.New("unknown plugin")

// ReloadError is a reload that was refused or failed; the running process,
// if any, goes on serving. Conflict says the new binary or the plugin's
// state conflicts with what runs (a checksum or protocol mismatch, a route
// another plugin or the host serves, a plugin starting, restarting,
// stopped or disabled); otherwise the
// new binary failed to start, describe, migrate or configure.
type ReloadError struct {
	Plugin   string
	Conflict bool
	Err      error
}

func (e *ReloadError) Error() string {
	return fmt.Sprintf("reload of plugin %s: %v; the running process goes on serving", e.Plugin, e.Err)
}

func (e *ReloadError) Unwrap() error { return e.Err }

// Reloaded is a reload that took effect.
type Reloaded struct {
	OldVersion string        `json:"old_version"`
	NewVersion string        `json:"new_version"`
	OldPID     int           `json:"old_pid"`
	NewPID     int           `json:"new_pid"`
	Duration   time.Duration `json:"-"`
	// Drained says whether the old process's work all finished within
	// the plugin's drain_timeout before it was stopped; a job still running
	// then was cancelled with the process and is queued again (see
	// ErrProcessReplaced).
	Drained bool `json:"drained"`
}

// Reload upgrades a running plugin in place: it starts the binary its
// declaration names beside the running process (checksum verified again),
// describes, migrates and configures it, swaps the plugin's routes and
// process in, then lets the old process finish its work and stops it.
// Anything failing before the swap leaves the old process serving. A
// plugin the supervisor gave up on (failed) is started afresh.
func (s *Supervisor) Reload(ctx context.Context, name string) (Reloaded, error) {
	inst, ok := s.instance(name)
	if !ok {
		return Reloaded{}, ErrUnknownPlugin
	}
	inst.changing.Lock()
	defer inst.changing.Unlock()
	return inst.reload(ctx, nil)
}

// reload is Reload from declaration d, or from the current one when d is
// nil; i.changing is held.
func (i *Instance) reload(ctx context.Context, d *Decl) (Reloaded, error) {
	s, name := i.sup, i.name
	t0 := time.Now()
	i.mu.RLock()
	state, oldDesc, oldDecl := i.state, i.desc, i.decl
	i.mu.RUnlock()
	if d == nil {
		d = oldDecl
	}
	if state != StateRunning && state != StateFailed {
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: fmt.Errorf("plugin is %s, neither running nor failed", state)}
	}
	if !s.begin() {
		return Reloaded{}, &ReloadError{Plugin: name, Err: errors.New("the host is stopping")}
	}
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	if state == StateFailed {
		return i.revive(ctx, d, oldDesc, t0)
	}
	p, err := i.spawn(ctx, d, func(desc *pluginv1.DescribeResponse) error {
		if err := s.events.check(name, desc.EventTypes); err != nil {
			return err
		}
		return s.routes.check(name, protocol.AllRoutes(desc), s.opts.Reserved)
	})
	var conflict *ConflictError
	if err != nil {
		i.log.Error("reload failed; the running process goes on serving", "error", err)
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: isPermanent(err) || errors.As(err, &conflict), Err: err}
	}
	i.mu.Lock()
	if i.state != StateRunning || ctx.Err() != nil {
		state := i.state
		i.mu.Unlock()
		p.client.Kill()
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: fmt.Errorf("plugin became %s during the reload", state)}
	}
	// Routes and process change under the instance's lock, so a request
	// that matches a new route is served by the new process.
	if err := s.events.check(name, p.desc.EventTypes); err != nil {
		i.mu.Unlock()
		p.client.Kill()
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: err}
	}
	if err := s.routes.set(name, protocol.AllRoutes(p.desc), s.opts.Reserved); err != nil {
		i.mu.Unlock()
		p.client.Kill()
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: err}
	}
	if err := s.events.set(name, p.desc.EventTypes); err != nil {
		i.mu.Unlock()
		p.client.Kill()
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: err}
	}
	old := &process{client: i.client, plane: i.dataPlane, pid: i.pid}
	oldGen := i.gen
	i.install(p)
	i.mu.Unlock()
	i.started(p, t0)
	drained := oldGen.drain(oldDecl.DrainTimeout, s.ctx.Done())
	if !drained {
		oldGen.replaced.Store(true)
		i.log.Warn("old process still busy after the drain timeout; stopping it", "pid", old.pid, "timeout", oldDecl.DrainTimeout)
	}
	if old.plane.socket != nil {
		old.plane.socket.CloseIdleConnections()
	}
	old.client.Kill()
	out := Reloaded{OldVersion: oldDesc.GetVersion(), NewVersion: p.desc.Version, OldPID: old.pid, NewPID: p.pid, Duration: time.Since(t0), Drained: drained}
	i.log.Info("plugin reloaded", "old_version", out.OldVersion, "new_version", out.NewVersion, "old_pid", out.OldPID, "new_pid", out.NewPID, "took", out.Duration.Round(time.Millisecond))
	return out, nil
}

// revive starts a plugin the supervisor gave up on from declaration d, as
// a reload with no process to drain: the way back from a crash loop or a
// refused binary once a fixed binary is in place. A failed start leaves
// it failed.
func (i *Instance) revive(ctx context.Context, d *Decl, oldDesc *pluginv1.DescribeResponse, t0 time.Time) (Reloaded, error) {
	i.mu.Lock()
	crashes, down := i.crashes, i.down
	i.crashes, i.down, i.decl = nil, "", d
	i.mu.Unlock()
	err := i.start(ctx)
	if err != nil {
		if i.sup.ctx.Err() != nil {
			return Reloaded{}, &ReloadError{Plugin: i.name, Err: errors.New("the host is stopping")}
		}
		i.mu.Lock()
		i.crashes, i.down = crashes, down
		i.mu.Unlock()
		i.setState(StateFailed, err)
		var conflict *ConflictError
		i.log.Error("reload of a failed plugin failed; it stays failed", "error", err)
		return Reloaded{}, &ReloadError{Plugin: i.name, Conflict: isPermanent(err) || errors.As(err, &conflict), Err: err}
	}
	desc := i.Description()
	out := Reloaded{OldVersion: oldDesc.GetVersion(), NewVersion: desc.Version, NewPID: i.PID(), Duration: time.Since(t0), Drained: true}
	i.log.Info("failed plugin started by a reload", "version", out.NewVersion, "pid", out.NewPID, "took", out.Duration.Round(time.Millisecond))
	return out, nil
}
