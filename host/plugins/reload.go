package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// generation counts the work in flight on one process of a plugin, so a
// reload can wait for it before stopping that process. No work joins a
// generation once its process is replaced: acquire takes the instance's
// read lock, the swap its write lock.
type generation struct{ active sync.WaitGroup }

// drain waits until the generation's work is done or timeout passes, and
// reports whether it finished.
func (g *generation) drain(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		g.active.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

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
	// then was cancelled with the process and its run ends as failed.
	Drained bool `json:"drained"`
}

// Reload upgrades a running plugin in place: it starts the binary its
// declaration names beside the running process (checksum verified again),
// describes, migrates and configures it, swaps the plugin's routes and
// process in, then lets the old process finish its work and stops it.
// Anything failing before the swap leaves the old process serving. A
// plugin the supervisor gave up on (failed) is started afresh.
func (s *Supervisor) Reload(ctx context.Context, name string) (Reloaded, error) {
	inst, ok := s.instances[name]
	if !ok {
		return Reloaded{}, ErrUnknownPlugin
	}
	inst.reloading.Lock()
	defer inst.reloading.Unlock()
	t0 := time.Now()
	inst.mu.RLock()
	state, oldDesc := inst.state, inst.desc
	inst.mu.RUnlock()
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
		return inst.revive(ctx, oldDesc, t0)
	}
	p, err := inst.spawn(ctx, func(desc *pluginv1.DescribeResponse) error {
		return s.routes.check(name, desc.Routes, s.opts.Reserved)
	})
	var conflict *ConflictError
	if err != nil {
		inst.log.Error("reload failed; the running process goes on serving", "error", err)
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: isPermanent(err) || errors.As(err, &conflict), Err: err}
	}
	inst.mu.Lock()
	if inst.state != StateRunning || ctx.Err() != nil {
		state := inst.state
		inst.mu.Unlock()
		p.client.Kill()
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: fmt.Errorf("plugin became %s during the reload", state)}
	}
	// Routes and process change under the instance's lock, so a request
	// that matches a new route is served by the new process.
	if err := s.routes.set(name, p.desc.Routes, s.opts.Reserved); err != nil {
		inst.mu.Unlock()
		p.client.Kill()
		return Reloaded{}, &ReloadError{Plugin: name, Conflict: true, Err: err}
	}
	old := &process{client: inst.client, plane: inst.dataPlane, pid: inst.pid}
	oldGen := inst.gen
	inst.install(p)
	inst.mu.Unlock()
	inst.started(p, t0)
	drained := oldGen.drain(inst.Decl.DrainTimeout)
	if !drained {
		inst.log.Warn("old process still busy after the drain timeout; stopping it", "pid", old.pid, "timeout", inst.Decl.DrainTimeout)
	}
	if old.plane.socket != nil {
		old.plane.socket.CloseIdleConnections()
	}
	old.client.Kill()
	out := Reloaded{OldVersion: oldDesc.GetVersion(), NewVersion: p.desc.Version, OldPID: old.pid, NewPID: p.pid, Duration: time.Since(t0), Drained: drained}
	inst.log.Info("plugin reloaded", "old_version", out.OldVersion, "new_version", out.NewVersion, "old_pid", out.OldPID, "new_pid", out.NewPID, "took", out.Duration.Round(time.Millisecond))
	return out, nil
}

// revive starts a plugin the supervisor gave up on, as a reload with no
// process to drain: the way back from a crash loop or a refused binary
// once a fixed binary is in place. A failed start leaves it failed.
func (i *Instance) revive(ctx context.Context, oldDesc *pluginv1.DescribeResponse, t0 time.Time) (Reloaded, error) {
	i.mu.Lock()
	crashes, down := i.crashes, i.down
	i.crashes, i.down = nil, ""
	i.mu.Unlock()
	err := i.start(ctx)
	if err != nil {
		if i.sup.ctx.Err() != nil {
			return Reloaded{}, &ReloadError{Plugin: i.Decl.Name, Err: errors.New("the host is stopping")}
		}
		i.mu.Lock()
		i.crashes, i.down = crashes, down
		i.mu.Unlock()
		i.setState(StateFailed, err)
		var conflict *ConflictError
		i.log.Error("reload of a failed plugin failed; it stays failed", "error", err)
		return Reloaded{}, &ReloadError{Plugin: i.Decl.Name, Conflict: isPermanent(err) || errors.As(err, &conflict), Err: err}
	}
	desc := i.Description()
	out := Reloaded{OldVersion: oldDesc.GetVersion(), NewVersion: desc.Version, NewPID: i.PID(), Duration: time.Since(t0), Drained: true}
	i.log.Info("failed plugin started by a reload", "version", out.NewVersion, "pid", out.NewPID, "took", out.Duration.Round(time.Millisecond))
	return out, nil
}
