package plugins

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/host/notifications"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// EventTypeError is a plugin's event type declaration the host refuses:
// a bad name or description, one in the host's area, or a name another
// plugin declares. Retrying the start is pointless.
type EventTypeError struct {
	Plugin string
	Err    error
}

func (e *EventTypeError) Error() string {
	return fmt.Sprintf("event types of plugin %q: %v", e.Plugin, e.Err)
}

func (e *EventTypeError) Unwrap() error { return e.Err }

// eventTable is which plugin declares each event type, so that no two
// declare the same one.
type eventTable struct {
	mu    sync.Mutex
	owner map[string]string
}

// set records plugin's event types, replacing those it declared before,
// or refuses them with an *EventTypeError.
func (t *eventTable) set(plugin string, types []*pluginv1.EventType) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkLocked(plugin, types); err != nil {
		return err
	}
	for name, owner := range t.owner {
		if owner == plugin {
			delete(t.owner, name)
		}
	}
	if t.owner == nil {
		t.owner = map[string]string{}
	}
	for _, et := range types {
		t.owner[et.Name] = plugin
	}
	return nil
}

// check reports whether set would accept plugin's event types.
func (t *eventTable) check(plugin string, types []*pluginv1.EventType) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkLocked(plugin, types)
}

func (t *eventTable) checkLocked(plugin string, types []*pluginv1.EventType) error {
	refuse := func(err error) error { return &EventTypeError{Plugin: plugin, Err: err} }
	if err := protocol.CheckEventTypes(types); err != nil {
		return refuse(err)
	}
	for _, et := range types {
		if slices.ContainsFunc(notifications.HostEventTypes, func(h notifications.EventType) bool { return h.Name == et.Name }) {
			return refuse(fmt.Errorf("%s is the host's", et.Name))
		}
		if owner, ok := t.owner[et.Name]; ok && owner != plugin {
			return refuse(fmt.Errorf("%s is declared by plugin %q", et.Name, owner))
		}
	}
	return nil
}

// EventTypes lists the event types subscriptions may name: the host's own
// and those of every running plugin, by name.
func (s *Supervisor) EventTypes() []notifications.EventType {
	out := slices.Clone(notifications.HostEventTypes)
	for _, inst := range s.instances() {
		if inst.Status().State != StateRunning {
			continue
		}
		for _, et := range inst.Description().GetEventTypes() {
			out = append(out, notifications.EventType{Name: et.Name, Source: inst.name, Description: et.Description})
		}
	}
	slices.SortFunc(out, func(a, b notifications.EventType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// RaiseEvent hands the backend an event of one of the event types the
// plugin's process declared; any other kind is refused.
func (h *hostService) RaiseEvent(ctx context.Context, req *pluginv1.RaiseEventRequest) (*pluginv1.RaiseEventResponse, error) {
	var declared []*pluginv1.EventType
	if d := h.desc.Load(); d != nil {
		declared = d.EventTypes
	}
	if err := protocol.CheckRaiseEvent(req, declared); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	b, err := h.backend()
	if err != nil {
		return nil, err
	}
	var at time.Time
	if req.OccurredAtUnixMs != 0 {
		at = time.UnixMilli(req.OccurredAtUnixMs).UTC()
	}
	id, duplicate, err := b.RaiseEvent(ctx, h.plugin, req, at)
	if err != nil {
		return nil, grpcError(err)
	}
	return &pluginv1.RaiseEventResponse{EventId: id, Duplicate: duplicate}, nil
}
