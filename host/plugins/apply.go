package plugins

import (
	"context"
	"reflect"
)

// Action is what Apply did to one plugin.
type Action string

const (
	ActionAdded    Action = "added"
	ActionRemoved  Action = "removed"
	ActionEnabled  Action = "enabled"
	ActionDisabled Action = "disabled"
	// ActionChanged: the declaration changed; a running plugin was
	// reloaded from it, one that is not running starts from it next.
	ActionChanged Action = "changed"
	// ActionRescheduled: only the job schedules changed; the process
	// goes on serving.
	ActionRescheduled Action = "rescheduled"
)

// Change is one plugin's change by Apply; Err says why it did not take
// effect (the plugin is then left as a failed start or reload leaves it).
type Change struct {
	Plugin string
	Action Action
	Err    error
}

// Apply brings the supervisor in line with decls, plugins.hcl as it now
// reads. A plugin no longer declared, or now disabled, loses its routes at
// once, gets its drain_timeout to finish the requests and jobs in flight,
// and is stopped. A plugin declared anew, or now enabled, is started. A
// running plugin whose declaration changed is reloaded from the new one
// (see Reload: a new process beside the old, which is drained); one not
// running starts from it next. A plugin whose declaration is unchanged is
// left alone. Each plugin's change stands alone: one that fails leaves the
// others applied. Stops come first, so a plugin added in place of a
// removed one can claim its routes.
func (s *Supervisor) Apply(ctx context.Context, decls []Decl) []Change {
	s.applying.Lock()
	defer s.applying.Unlock()
	if !s.begin() {
		return nil
	}
	defer s.wg.Done()
	current := s.roster.Load()
	declared := map[string]Decl{}
	for _, d := range decls {
		declared[d.Name] = d
	}
	var out []Change
	for _, inst := range current.order {
		if _, ok := declared[inst.name]; !ok {
			inst.changing.Lock()
			inst.retire(StateStopped, nil)
			inst.changing.Unlock()
			out = append(out, Change{Plugin: inst.name, Action: ActionRemoved})
		}
	}
	next := &roster{byName: map[string]*Instance{}}
	var kept, fresh []*Instance
	for _, d := range decls {
		inst, ok := current.byName[d.Name]
		if ok {
			kept = append(kept, inst)
		} else {
			inst = s.newInstance(d)
			fresh = append(fresh, inst)
		}
		next.byName[d.Name] = inst
		next.order = append(next.order, inst)
	}
	s.roster.Store(next)
	for _, inst := range kept {
		if c, ok := inst.redeclare(ctx, declared[inst.name]); ok {
			out = append(out, c)
		}
	}
	for _, inst := range fresh {
		c := Change{Plugin: inst.name, Action: ActionAdded}
		if inst.Decl().Enabled {
			inst.changing.Lock()
			c.Err = inst.firstStart(ctx)
			inst.changing.Unlock()
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		s.changed("")
	}
	return out
}

// redeclare applies a plugin's declaration as plugins.hcl now reads, and
// reports what changed, if anything.
func (i *Instance) redeclare(ctx context.Context, d Decl) (Change, bool) {
	i.changing.Lock()
	defer i.changing.Unlock()
	i.mu.RLock()
	old, state := *i.decl, i.state
	i.mu.RUnlock()
	c := Change{Plugin: i.name}
	switch {
	case sameDecl(old, d):
		// Lines above it may have moved: its keys' positions are the
		// file's as it now reads.
		i.setDecl(&d)
		return c, false
	case old.Enabled && !d.Enabled:
		c.Action = ActionDisabled
		i.retire(StateDisabled, &d)
	case !old.Enabled && d.Enabled:
		c.Action = ActionEnabled
		i.setDecl(&d)
		c.Err = i.firstStart(ctx)
	case sameProcess(old, d) || !d.Enabled:
		// Schedules and staleness change the host's scheduler only; a disabled plugin
		// keeps its new declaration for when it is enabled.
		c.Action = ActionRescheduled
		if !sameProcess(old, d) {
			c.Action = ActionChanged
		}
		i.setDecl(&d)
	case state == StateRunning || state == StateFailed:
		c.Action = ActionChanged
		_, c.Err = i.reload(ctx, &d)
	default:
		// Starting again after a crash: the restart under way takes it.
		c.Action = ActionChanged
		i.setDecl(&d)
	}
	return c, true
}

// sameProcess reports whether a and b start the same process: they differ
// in job schedules and staleness at most.
func sameProcess(a, b Decl) bool {
	a.Schedules, b.Schedules = nil, nil
	a.StaleAfter, b.StaleAfter = nil, nil
	return sameDecl(a, b)
}

// sameDecl reports whether a and b declare the same, wherever in the file
// they are written.
func sameDecl(a, b Decl) bool {
	a.source, b.source = nil, nil
	return reflect.DeepEqual(a, b)
}

func (i *Instance) setDecl(d *Decl) {
	i.mu.Lock()
	i.decl = d
	i.mu.Unlock()
}

// retire stops serving the plugin and leaves it in state final: its routes
// go at once, so new requests find none; no new work reaches its process;
// the work in flight gets the drain timeout to finish; then the process is
// stopped. d, when set, is the declaration it keeps. i.changing is held.
func (i *Instance) retire(final State, d *Decl) {
	i.sup.routes.remove(i.name)
	i.mu.Lock()
	client, gen, plane, drain := i.client, i.gen, i.dataPlane, i.decl.DrainTimeout
	wasRunning := i.state == StateRunning
	i.state = final
	if d != nil {
		i.decl = d
	}
	i.mu.Unlock()
	i.sup.metrics.state(i.name, final)
	if wasRunning && !gen.drain(drain, i.sup.ctx.Done()) {
		i.log.Warn("plugin still busy after the drain timeout; stopping it", "timeout", drain)
	}
	if plane.socket != nil {
		plane.socket.CloseIdleConnections()
	}
	if client != nil {
		client.Kill()
	}
	i.log.Info("plugin stopped", "state", final)
}

// changed tells the host a plugin's routes, jobs or schedules may have
// changed.
func (s *Supervisor) changed(plugin string) {
	if s.opts.OnChange != nil {
		s.opts.OnChange(plugin)
	}
}
