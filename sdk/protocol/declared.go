package protocol

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Route is a route a plugin's Describe declared, checked the way the host
// checks it before routing and ready to match and validate requests. The
// host's route table and the test harness both build theirs with
// ParseRoutes, so a route the harness accepts is one the host accepts.
type Route struct {
	// Method is upper case, whatever case the plugin declared it in.
	Method  string
	Pattern string
	// Auth is AUTH_USER when the plugin left it unspecified.
	Auth      pluginv1.Auth
	RateClass pluginv1.RateClass
	// TenantScoped routes act on tenant data; the host's OpenAPI document
	// marks them for the isolation tests.
	TenantScoped bool
	// Tenant, when set, says where a request names its tenants; CheckTenant
	// enforces it.
	Tenant *Tenant
	// Operation is the decoded OpenAPI operation, nil when the plugin
	// declared none; its Method and Path are the route's.
	Operation *huma.Operation
	Params    Params
	Segments  []string
	// View is ViewFragment or ViewPage for the routes AllRoutes adds for a
	// plugin's fragments and pages, empty for an API route; Title is the
	// view's title.
	View  string
	Title string
	// Slot is set on a page the host lays out from the fragments of that
	// slot, under Description; the plugin serves no HTML for it.
	Slot, Description string
	// TriggerJob is set on the route of a job's trigger path: the job type
	// the host queues when it is called, without asking the plugin.
	TriggerJob string
}

// Kinds of view routes.
const (
	ViewFragment = "fragment"
	ViewPage     = "page"
)

// ParseRoute checks one declared route: its pattern with CheckPattern and
// its operation with DecodeOperation.
func ParseRoute(pr *pluginv1.Route) (*Route, error) {
	if err := CheckPattern(pr.Path); err != nil {
		return nil, fmt.Errorf("route %s %s: %w", pr.Method, pr.Path, err)
	}
	r := &Route{Method: strings.ToUpper(pr.Method), Pattern: pr.Path, Auth: pr.Auth,
		RateClass: pr.RateClass, TenantScoped: pr.TenantScoped, Segments: SplitPath(pr.Path)}
	if r.Auth == pluginv1.Auth_AUTH_UNSPECIFIED {
		r.Auth = pluginv1.Auth_AUTH_USER
	}
	if len(pr.OpenapiOperation) > 0 {
		op, err := DecodeOperation(pr.OpenapiOperation)
		if err != nil {
			return nil, fmt.Errorf("route %s %s: operation: %w", r.Method, r.Pattern, err)
		}
		op.Method, op.Path = r.Method, r.Pattern
		if r.Params, err = OperationParams(op); err != nil {
			return nil, fmt.Errorf("route %s %s: operation: %w", r.Method, r.Pattern, err)
		}
		r.Operation = op
		for kind, ext := range map[string]string{ViewFragment: ExtFragment, ViewPage: ExtPage} {
			if meta, ok := op.Extensions[ext].(map[string]any); ok {
				r.View = kind
				r.Title, _ = meta["title"].(string)
				r.Slot, _ = meta["slot"].(string)
				r.Description, _ = meta["description"].(string)
			}
		}
		// Only an admin route may queue a job: a plugin cannot mark a route
		// of its own that anyone may call to trigger syncs.
		if meta, ok := op.Extensions[ExtTrigger].(map[string]any); ok && r.Auth == pluginv1.Auth_AUTH_ADMIN {
			r.TriggerJob, _ = meta["job_type"].(string)
		}
	}
	declared := map[string]bool{}
	for _, p := range r.Params {
		declared[p.In+"."+p.Name] = true
	}
	tenant, err := parseTenantInput(pr.TenantInput, declared)
	if err != nil {
		return nil, fmt.Errorf("route %s %s: %w", r.Method, r.Pattern, err)
	}
	if tenant != nil {
		r.Tenant, r.TenantScoped = tenant, true
	}
	return r, nil
}

// OwnConflictError is a declared route that one request could match as
// well as an earlier route of the same plugin.
type OwnConflictError struct {
	Route *Route
	// Earlier is the pattern of the earlier route.
	Earlier string
}

func (e *OwnConflictError) Error() string {
	return fmt.Sprintf("route %s %s conflicts with its own route %s", e.Route.Method, e.Route.Pattern, e.Earlier)
}

// ParseRoutes parses every declared route with ParseRoute and refuses two
// that one request could match unless one is more specific than the other
// (see MoreSpecific), as an *OwnConflictError.
func ParseRoutes(prs []*pluginv1.Route) ([]*Route, error) {
	out := make([]*Route, 0, len(prs))
	for _, pr := range prs {
		r, err := ParseRoute(pr)
		if err != nil {
			return nil, err
		}
		for _, other := range out {
			if r.Conflicts(other) {
				return nil, &OwnConflictError{Route: r, Earlier: other.Pattern}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Overlaps reports whether some request could match both routes.
func (r *Route) Overlaps(o *Route) bool {
	return r.Method == o.Method && PatternsOverlap(r.Pattern, o.Pattern)
}

// Conflicts reports whether the two routes of one plugin cannot be routed
// side by side: see PatternsConflict.
func (r *Route) Conflicts(o *Route) bool {
	return r.Method == o.Method && PatternsConflict(r.Pattern, o.Pattern)
}

// Wins reports whether r serves a request that o matches too: r is more
// specific. Pick among the routes a request matches with it.
func (r *Route) Wins(o *Route) bool { return MoreSpecific(r.Pattern, o.Pattern) }

// Match matches a request, its path split by SplitPath, and returns the
// path parameters, nil when the pattern has none.
func (r *Route) Match(method string, path []string) (map[string]string, bool) {
	if r.Method != method {
		return nil, false
	}
	return MatchSegments(r.Segments, path)
}

// Validate checks a request's query and path parameters against the
// route's operation; see Params.Validate.
func (r *Route) Validate(query func(string) []string, pathParams map[string]string) []*huma.ErrorDetail {
	return r.Params.Validate(query, pathParams)
}

// Admit reports how the host refuses a caller the route's auth requirement
// does not admit: 401 for an anonymous caller (nil principal) on a route
// that is not AUTH_NONE, 403 for one who is not an admin on an AUTH_ADMIN
// route, each with the problem's detail; status is 0 when the caller is
// admitted.
func (r *Route) Admit(principal *pluginv1.Principal) (status int, detail string) {
	switch {
	case r.Auth != pluginv1.Auth_AUTH_NONE && principal == nil:
		return http.StatusUnauthorized, "authentication required"
	case r.Auth == pluginv1.Auth_AUTH_ADMIN && !principal.GetIsAdmin():
		return http.StatusForbidden, "admin role required"
	}
	return 0, ""
}
