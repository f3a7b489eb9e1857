package plugins

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/danielgtaylor/huma/v2"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Route is one plugin route in the host's table.
type Route struct {
	Plugin    string
	Method    string
	Pattern   string
	Auth      pluginv1.Auth
	RateClass pluginv1.RateClass
	// TenantScoped routes are checked for tenant isolation by the route
	// table walk in the test suite.
	TenantScoped bool
	Operation    *huma.Operation
	segments     []string
	params       []*huma.Param
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
// protocol.MatchSegments does.
func (t *RouteTable) Match(method, path string) (*Route, map[string]string) {
	segs := protocol.SplitPath(path)
	for _, r := range *t.snapshot.Load() {
		if r.Method != method {
			continue
		}
		if params, ok := protocol.MatchSegments(r.segments, segs); ok {
			return r, params
		}
	}
	return nil, nil
}

// set replaces a plugin's routes, refusing any that another plugin or the
// host already serves.
func (t *RouteTable) set(inst *Instance, routes []*pluginv1.Route, reserved func(method, path string) bool) error {
	owner := inst.Decl.Name
	built := make([]*Route, 0, len(routes))
	for _, pr := range routes {
		r, err := buildRoute(owner, pr)
		if err != nil {
			return err
		}
		if reserved != nil && reserved(r.Method, r.Pattern) {
			return &ConflictError{Method: r.Method, Path: r.Pattern, Owner: owner, Other: "a route of the host"}
		}
		for _, other := range built {
			if overlaps(r, other) {
				return &ConflictError{Method: r.Method, Path: r.Pattern, Owner: owner, Other: "its own route " + other.Pattern}
			}
		}
		built = append(built, r)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := make([]*Route, 0, len(*t.snapshot.Load())+len(built))
	for _, r := range *t.snapshot.Load() {
		if r.Plugin == owner {
			continue
		}
		for _, b := range built {
			if overlaps(r, b) {
				return &ConflictError{Method: b.Method, Path: b.Pattern, Owner: owner, Other: fmt.Sprintf("plugin %q (%s)", r.Plugin, r.Pattern)}
			}
		}
		next = append(next, r)
	}
	next = append(next, built...)
	t.snapshot.Store(&next)
	return nil
}

func buildRoute(owner string, pr *pluginv1.Route) (*Route, error) {
	if err := protocol.CheckPattern(pr.Path); err != nil {
		return nil, fmt.Errorf("plugin %q: route %s %s: %w", owner, pr.Method, pr.Path, err)
	}
	r := &Route{Plugin: owner, Method: strings.ToUpper(pr.Method), Pattern: pr.Path, Auth: pr.Auth,
		RateClass: pr.RateClass, TenantScoped: pr.TenantScoped, segments: protocol.SplitPath(pr.Path)}
	if r.Auth == pluginv1.Auth_AUTH_UNSPECIFIED {
		r.Auth = pluginv1.Auth_AUTH_USER
	}
	if len(pr.OpenapiOperation) > 0 {
		op, err := protocol.DecodeOperation(pr.OpenapiOperation)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: route %s %s: operation: %w", owner, r.Method, r.Pattern, err)
		}
		op.Method, op.Path = r.Method, r.Pattern
		for _, p := range op.Parameters {
			if p.Schema != nil && (p.In == "query" || p.In == "path") {
				p.Schema.PrecomputeMessages()
				r.params = append(r.params, p)
			}
		}
		r.Operation = op
	}
	return r, nil
}

// overlaps reports whether some request could match both routes.
func overlaps(a, b *Route) bool {
	return a.Method == b.Method && protocol.PatternsOverlap(a.Pattern, b.Pattern)
}

var validationRegistry = huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)

// Validate checks the query and path parameters the route declares, the
// same way the host's own operations are checked, and returns each problem
// with its location (e.g. "query.limit").
func (r *Route) Validate(query func(string) []string, pathParams map[string]string) []*huma.ErrorDetail {
	var res huma.ValidateResult
	for _, p := range r.params {
		var raw []string
		if p.In == "path" {
			if v, ok := pathParams[p.Name]; ok {
				raw = []string{v}
			}
		} else {
			raw = query(p.Name)
		}
		loc := p.In + "." + p.Name
		pb := huma.NewPathBuffer([]byte(loc), len(loc))
		if len(raw) == 0 || (len(raw) == 1 && raw[0] == "") {
			if p.Required {
				res.Add(pb, nil, "required "+p.In+" parameter is missing")
			}
			continue
		}
		v, err := parseParam(p.Schema, raw)
		if err != nil {
			res.Add(pb, strings.Join(raw, ","), err.Error())
			continue
		}
		huma.Validate(validationRegistry, p.Schema, pb, huma.ModeWriteToServer, v, &res)
	}
	out := make([]*huma.ErrorDetail, 0, len(res.Errors))
	for _, e := range res.Errors {
		if d, ok := e.(*huma.ErrorDetail); ok {
			out = append(out, d)
		}
	}
	return out
}

func parseParam(s *huma.Schema, raw []string) (any, error) {
	if s.Type == huma.TypeArray {
		var items []any
		for _, v := range raw {
			for item := range strings.SplitSeq(v, ",") {
				if item == "" {
					continue
				}
				if s.Items == nil {
					items = append(items, item)
					continue
				}
				pv, err := parseScalar(s.Items, item)
				if err != nil {
					return nil, err
				}
				items = append(items, pv)
			}
		}
		return items, nil
	}
	return parseScalar(s, raw[len(raw)-1])
}

func parseScalar(s *huma.Schema, v string) (any, error) {
	switch s.Type {
	case huma.TypeInteger:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected integer")
		}
		// A float64, like the numbers of the JSON-decoded schema it is
		// checked against: enum holds float64 values.
		return float64(n), nil
	case huma.TypeNumber:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("expected number")
		}
		return f, nil
	case huma.TypeBoolean:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("expected boolean")
		}
		return b, nil
	default:
		return v, nil
	}
}
