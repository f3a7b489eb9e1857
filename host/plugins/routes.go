package plugins

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Route is one plugin route in the host's table: a route its plugin
// declared, parsed by protocol.ParseRoutes.
type Route struct {
	Plugin string
	protocol.Route
}

// ConflictError is a route two owners claim.
type ConflictError struct {
	Method, Path, Owner, Other string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("route %s %s of plugin %q conflicts with %s", e.Method, e.Path, e.Owner, e.Other)
}

// RouteTable maps requests to plugin routes. Lookups read an immutable
// snapshot so the request path takes no lock.
type RouteTable struct {
	mu       sync.Mutex
	snapshot atomic.Pointer[[]*Route]
}

func newRouteTable() *RouteTable {
	t := &RouteTable{}
	t.snapshot.Store(&[]*Route{})
	return t
}

// All returns every route, for the OpenAPI document and the isolation tests.
func (t *RouteTable) All() []*Route { return *t.snapshot.Load() }

// Match finds the route for a request and its path parameters, matched as
// protocol.MatchSegments does. Of a plugin's routes that both match, the
// more specific serves (protocol.MoreSpecific); routes of different
// plugins never overlap. A path must be absolute, as the plugin reads it:
// "api/v1/x" matches nothing.
func (t *RouteTable) Match(method, path string) (*Route, map[string]string) {
	if !strings.HasPrefix(path, "/") {
		return nil, nil
	}
	segs := protocol.SplitPath(path)
	var best *Route
	var bestParams map[string]string
	for _, r := range *t.snapshot.Load() {
		if params, ok := r.Match(method, segs); ok && (best == nil || r.Wins(&best.Route)) {
			best, bestParams = r, params
		}
	}
	return best, bestParams
}

// set replaces a plugin's routes, refusing any that another plugin or the
// host already serves. The plugin's old routes and its new ones change in
// one snapshot store, so no request finds neither.
func (t *RouteTable) set(owner string, routes []*pluginv1.Route, reserved func(method, path string) bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	next, err := t.next(owner, routes, reserved)
	if err != nil {
		return err
	}
	t.snapshot.Store(&next)
	return nil
}

// remove drops a plugin's routes.
func (t *RouteTable) remove(owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var next []*Route
	for _, r := range *t.snapshot.Load() {
		if r.Plugin != owner {
			next = append(next, r)
		}
	}
	t.snapshot.Store(&next)
}

// check is set without the store: it says whether set would succeed now.
func (t *RouteTable) check(owner string, routes []*pluginv1.Route, reserved func(method, path string) bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.next(owner, routes, reserved)
	return err
}

// next builds the table with owner's routes replaced; t.mu is held.
func (t *RouteTable) next(owner string, routes []*pluginv1.Route, reserved func(method, path string) bool) ([]*Route, error) {
	parsed, err := protocol.ParseRoutes(routes)
	var own *protocol.OwnConflictError
	if errors.As(err, &own) {
		return nil, &ConflictError{Method: own.Route.Method, Path: own.Route.Pattern, Owner: owner, Other: "its own route " + own.Earlier}
	}
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", owner, err)
	}
	built := make([]*Route, 0, len(parsed))
	for _, pr := range parsed {
		if reserved != nil && reserved(pr.Method, pr.Pattern) {
			return nil, &ConflictError{Method: pr.Method, Path: pr.Pattern, Owner: owner, Other: "a route of the host"}
		}
		built = append(built, &Route{Plugin: owner, Route: *pr})
	}
	next := make([]*Route, 0, len(*t.snapshot.Load())+len(built))
	for _, r := range *t.snapshot.Load() {
		if r.Plugin == owner {
			continue
		}
		for _, b := range built {
			if r.Overlaps(&b.Route) {
				return nil, &ConflictError{Method: b.Method, Path: b.Pattern, Owner: owner, Other: fmt.Sprintf("plugin %q (%s)", r.Plugin, r.Pattern)}
			}
		}
		next = append(next, r)
	}
	return append(next, built...), nil
}
