package plugins

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// routeSpecs builds plugin routes from "METHOD /path" strings.
func routeSpecs(specs ...string) []*pluginv1.Route {
	out := make([]*pluginv1.Route, 0, len(specs))
	for _, s := range specs {
		method, path, _ := strings.Cut(s, " ")
		out = append(out, &pluginv1.Route{Method: method, Path: path})
	}
	return out
}

// tablePatterns lists the table as sorted "plugin METHOD /pattern" strings.
func tablePatterns(t *RouteTable) []string {
	var out []string
	for _, r := range t.All() {
		out = append(out, r.Plugin+" "+r.Method+" "+r.Pattern)
	}
	slices.Sort(out)
	return out
}

func mustSet(t *testing.T, table *RouteTable, plugin string, rs []*pluginv1.Route) {
	t.Helper()
	if err := table.set(plugin, rs, nil); err != nil {
		t.Fatalf("set %s: %v", plugin, err)
	}
}

func TestRouteTableMatch(t *testing.T) {
	table := newRouteTable()
	mustSet(t, table, "a", routeSpecs(
		"GET /api/v1/items",
		"POST /api/v1/items",
		"GET /api/v1/items/{id}",
		"get /api/v1/items/{id}/children/{child}",
	))
	mustSet(t, table, "b", routeSpecs("GET /api/v1/reports/{id}", "GET /"))

	tests := []struct {
		name        string
		method      string
		path        string
		wantPlugin  string // "" when nothing should match
		wantPattern string
		wantParams  map[string]string
	}{
		{name: "exact", method: "GET", path: "/api/v1/items", wantPlugin: "a", wantPattern: "/api/v1/items"},
		{name: "exact other method", method: "POST", path: "/api/v1/items", wantPlugin: "a", wantPattern: "/api/v1/items"},
		{name: "param", method: "GET", path: "/api/v1/items/42", wantPlugin: "a", wantPattern: "/api/v1/items/{id}", wantParams: map[string]string{"id": "42"}},
		{
			name: "two params, method declared lower-case", method: "GET", path: "/api/v1/items/42/children/c-7",
			wantPlugin: "a", wantPattern: "/api/v1/items/{id}/children/{child}", wantParams: map[string]string{"id": "42", "child": "c-7"},
		},
		{name: "other plugin", method: "GET", path: "/api/v1/reports/r1", wantPlugin: "b", wantPattern: "/api/v1/reports/{id}", wantParams: map[string]string{"id": "r1"}},
		{name: "root", method: "GET", path: "/", wantPlugin: "b", wantPattern: "/"},
		{name: "method mismatch", method: "DELETE", path: "/api/v1/items"},
		{name: "method mismatch on param route", method: "POST", path: "/api/v1/items/42"},
		{name: "too few segments", method: "GET", path: "/api/v1/items/42/children"},
		{name: "too many segments", method: "GET", path: "/api/v1/items/42/extra"},
		{name: "literal mismatch", method: "GET", path: "/api/v2/items"},
		{name: "literal mismatch after param", method: "GET", path: "/api/v1/items/42/parents/7"},
		{name: "empty segment never matches a param", method: "GET", path: "/api/v1/items//children/7"},
		{name: "empty last segment never matches a param", method: "GET", path: "/api/v1/items/42/children//"},
		{name: "unknown", method: "GET", path: "/api/v1/unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, params := table.Match(tt.method, tt.path)
			if tt.wantPlugin == "" {
				if r != nil {
					t.Fatalf("Match(%s %s) = %s %s %s, want no route", tt.method, tt.path, r.Plugin, r.Method, r.Pattern)
				}
				if params != nil {
					t.Errorf("Match returned params %v without a route", params)
				}
				return
			}
			if r == nil {
				t.Fatalf("Match(%s %s) found no route, want %s", tt.method, tt.path, tt.wantPattern)
			}
			if r.Plugin != tt.wantPlugin || r.Pattern != tt.wantPattern || r.Method != tt.method {
				t.Errorf("Match = %s %s %s, want %s %s %s", r.Plugin, r.Method, r.Pattern, tt.wantPlugin, tt.method, tt.wantPattern)
			}
			if !reflect.DeepEqual(params, tt.wantParams) {
				t.Errorf("params = %v, want %v", params, tt.wantParams)
			}
		})
	}
}

func TestRouteTableSetConflicts(t *testing.T) {
	hostRoutes := func(method, path string) bool { return method == "GET" && path == "/api/v1/me" }
	tests := []struct {
		name string
		// existing routes belong to plugin "a"; routes are set for plugin "b".
		existing []string
		routes   []string
		want     ConflictError // zero when set must succeed
	}{
		{
			name:     "same pattern as another plugin",
			existing: []string{"GET /x/{id}"},
			routes:   []string{"GET /x/{id}"},
			want:     ConflictError{Method: "GET", Path: "/x/{id}", Owner: "b", Other: `plugin "a" (/x/{id})`},
		},
		{
			name:     "same shape, other param name",
			existing: []string{"GET /x/{id}"},
			routes:   []string{"GET /x/{key}"},
			want:     ConflictError{Method: "GET", Path: "/x/{key}", Owner: "b", Other: `plugin "a" (/x/{id})`},
		},
		{
			name:     "literal under another plugin's param",
			existing: []string{"GET /x/{id}"},
			routes:   []string{"GET /y", "GET /x/special"},
			want:     ConflictError{Method: "GET", Path: "/x/special", Owner: "b", Other: `plugin "a" (/x/{id})`},
		},
		{
			name:     "param over another plugin's literal",
			existing: []string{"GET /x/special/logs"},
			routes:   []string{"GET /x/{id}/logs"},
			want:     ConflictError{Method: "GET", Path: "/x/{id}/logs", Owner: "b", Other: `plugin "a" (/x/special/logs)`},
		},
		{
			name:     "method compared after upper-casing",
			existing: []string{"POST /x"},
			routes:   []string{"post /x"},
			want:     ConflictError{Method: "POST", Path: "/x", Owner: "b", Other: `plugin "a" (/x)`},
		},
		{
			name:   "within one plugin, neither more specific",
			routes: []string{"GET /y/{id}/logs", "GET /y/new/{part}"},
			want:   ConflictError{Method: "GET", Path: "/y/new/{part}", Owner: "b", Other: "its own route /y/{id}/logs"},
		},
		{
			name:   "duplicate within one plugin",
			routes: []string{"GET /y", "GET /y"},
			want:   ConflictError{Method: "GET", Path: "/y", Owner: "b", Other: "its own route /y"},
		},
		{
			name:   "host-reserved route",
			routes: []string{"GET /api/v1/items", "GET /api/v1/me"},
			want:   ConflictError{Method: "GET", Path: "/api/v1/me", Owner: "b", Other: "a route of the host"},
		},
		{name: "own literal beside own param", routes: []string{"GET /y/{id}", "GET /y/new"}},
		{name: "other method", existing: []string{"GET /x/{id}"}, routes: []string{"DELETE /x/{id}"}},
		{name: "other segment count", existing: []string{"GET /x/{id}"}, routes: []string{"GET /x/{id}/logs", "GET /x"}},
		{name: "other literal", existing: []string{"GET /x/a"}, routes: []string{"GET /x/b"}},
		{name: "reserved path under another method", routes: []string{"POST /api/v1/me"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := newRouteTable()
			mustSet(t, table, "a", routeSpecs(tt.existing...))
			before := tablePatterns(table)

			err := table.set("b", routeSpecs(tt.routes...), hostRoutes)

			if tt.want == (ConflictError{}) {
				if err != nil {
					t.Fatalf("set: %v", err)
				}
				if got, want := len(table.All()), len(tt.existing)+len(tt.routes); got != want {
					t.Errorf("table holds %d routes, want %d: %v", got, want, tablePatterns(table))
				}
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("set error = %v, want a *ConflictError", err)
			}
			if *ce != tt.want {
				t.Errorf("conflict = %+v, want %+v", *ce, tt.want)
			}
			for _, part := range []string{tt.want.Method, tt.want.Path, `plugin "b"`, tt.want.Other} {
				if !strings.Contains(ce.Error(), part) {
					t.Errorf("message %q does not mention %q", ce.Error(), part)
				}
			}
			if after := tablePatterns(table); !slices.Equal(after, before) {
				t.Errorf("a refused set changed the table: %v, was %v", after, before)
			}
		})
	}
}

// TestRouteTableMoreSpecificWins: of a plugin's routes that both match a
// request, the more specific serves it, whatever order they were declared
// in; other paths still reach the parameter route.
func TestRouteTableMoreSpecificWins(t *testing.T) {
	for _, order := range [][]string{
		{"GET /b/{id}", "GET /b/summary", "GET /b/{id}/alerts", "GET /b/alerts/all"},
		{"GET /b/alerts/all", "GET /b/{id}/alerts", "GET /b/summary", "GET /b/{id}"},
	} {
		table := newRouteTable()
		mustSet(t, table, "a", routeSpecs(order...))
		for path, want := range map[string]string{
			"/b/summary": "/b/summary", "/b/7": "/b/{id}", "/b/alerts/all": "/b/alerts/all", "/b/7/alerts": "/b/{id}/alerts", "/b/alerts/alerts": "/b/{id}/alerts",
		} {
			if r, _ := table.Match("GET", path); r == nil || r.Pattern != want {
				t.Errorf("declared %v: %s matched %v, want %s", order, path, r, want)
			}
		}
	}
}

func TestRouteTableRedescribeReplacesOwnRoutes(t *testing.T) {
	table := newRouteTable()
	mustSet(t, table, "a", routeSpecs("GET /x", "GET /x/{id}"))
	mustSet(t, table, "b", routeSpecs("GET /b"))

	// An upgraded plugin describes routes overlapping its old ones.
	mustSet(t, table, "a", routeSpecs("GET /x/{name}", "GET /x/{id}/logs"))
	want := []string{"a GET /x/{id}/logs", "a GET /x/{name}", "b GET /b"}
	if got := tablePatterns(table); !slices.Equal(got, want) {
		t.Fatalf("table = %v, want %v", got, want)
	}
	if r, _ := table.Match("GET", "/x"); r != nil {
		t.Errorf("dropped route GET /x still matches %s", r.Pattern)
	}
	if _, params := table.Match("GET", "/x/7"); params["name"] != "7" {
		t.Errorf("new route's params = %v, want name=7", params)
	}

	// The path a gave up is free for another plugin.
	mustSet(t, table, "b", routeSpecs("GET /b", "GET /x"))

	// Describing no routes removes all of a plugin's routes.
	mustSet(t, table, "a", nil)
	want = []string{"b GET /b", "b GET /x"}
	if got := tablePatterns(table); !slices.Equal(got, want) {
		t.Errorf("table = %v, want %v", got, want)
	}
}

func TestRouteTableSnapshotIsImmutable(t *testing.T) {
	table := newRouteTable()
	mustSet(t, table, "a", routeSpecs("GET /a"))
	old := table.All()
	mustSet(t, table, "b", routeSpecs("GET /b"))
	if len(old) != 1 || old[0].Pattern != "/a" {
		t.Errorf("an earlier snapshot changed to %d routes", len(old))
	}
	if len(table.All()) != 2 {
		t.Errorf("All = %d routes, want 2", len(table.All()))
	}
}

func TestRouteTableSetRejectsBadRoutes(t *testing.T) {
	tests := []struct {
		name  string
		route *pluginv1.Route
		want  []string
	}{
		{
			name:  "relative path",
			route: &pluginv1.Route{Method: "GET", Path: "items"},
			want:  []string{`plugin "a"`, `route GET items: path "items" must start with /`},
		},
		{
			name:  "empty segment",
			route: &pluginv1.Route{Method: "GET", Path: "/items//x"},
			want:  []string{`plugin "a"`, `path "/items//x" has an empty segment`},
		},
		{
			name:  "parameter inside a segment",
			route: &pluginv1.Route{Method: "GET", Path: "/items/x-{id}"},
			want:  []string{`plugin "a"`, `segment "x-{id}" must be a literal or a whole {parameter}`},
		},
		{
			name:  "parameter twice",
			route: &pluginv1.Route{Method: "GET", Path: "/items/{id}/{id}"},
			want:  []string{`plugin "a"`, `parameter "id" appears twice`},
		},
		{
			name:  "operation not JSON",
			route: &pluginv1.Route{Method: "GET", Path: "/items", OpenapiOperation: []byte("{not json")},
			want:  []string{`plugin "a"`, "route GET /items: operation:"},
		},
		{
			name:  "operation of the wrong shape",
			route: &pluginv1.Route{Method: "GET", Path: "/items", OpenapiOperation: []byte(`{"parameters": "limit"}`)},
			want:  []string{`plugin "a"`, "route GET /items: operation:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := newRouteTable()
			err := table.set("a", []*pluginv1.Route{tt.route}, nil)
			if err == nil {
				t.Fatal("set succeeded, want an error")
			}
			var ce *ConflictError
			if errors.As(err, &ce) {
				t.Errorf("error %v is a conflict", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if n := len(table.All()); n != 0 {
				t.Errorf("table holds %d routes after a refused set", n)
			}
		})
	}
}

func TestRouteTableKeepsRouteAttributes(t *testing.T) {
	table := newRouteTable()
	mustSet(t, table, "a", []*pluginv1.Route{
		{Method: "GET", Path: "/default"},
		{Method: "POST", Path: "/admin", Auth: pluginv1.Auth_AUTH_ADMIN, RateClass: pluginv1.RateClass_RATE_CLASS_SYNC, TenantScoped: true},
	})
	r, _ := table.Match("GET", "/default")
	if r == nil || r.Auth != pluginv1.Auth_AUTH_USER || r.TenantScoped || r.Operation != nil {
		t.Errorf("GET /default = %+v, want user auth, not tenant-scoped, no operation", r)
	}
	r, _ = table.Match("POST", "/admin")
	if r == nil || r.Auth != pluginv1.Auth_AUTH_ADMIN || r.RateClass != pluginv1.RateClass_RATE_CLASS_SYNC || !r.TenantScoped {
		t.Errorf("POST /admin = %+v, want admin auth, sync rate class, tenant-scoped", r)
	}
}

// validatedRoute is GET /items/{id}/events with an OpenAPI operation
// declaring its parameters, as a plugin describes it.
func validatedRoute(t *testing.T) *Route {
	t.Helper()
	float := func(f float64) *float64 { return &f }
	maxTags := 3
	op := &huma.Operation{
		OperationID: "list-item-events",
		Parameters: []*huma.Param{
			{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1)}},
			{Name: "q", In: "query", Required: true, Schema: &huma.Schema{Type: huma.TypeString}},
			{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500)}},
			{Name: "state", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"open", "closed"}}},
			{Name: "page_size", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Enum: []any{10, 25, 50}}},
			{Name: "archived", In: "query", Schema: &huma.Schema{Type: huma.TypeBoolean}},
			{Name: "tag", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, MaxItems: &maxTags, Items: &huma.Schema{Type: huma.TypeString}}},
			{Name: "ids", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1)}}},
			// Header parameters are the proxy's business, not Validate's.
			{Name: "X-Trace", In: "header", Required: true, Schema: &huma.Schema{Type: huma.TypeString}},
		},
	}
	raw, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	table := newRouteTable()
	mustSet(t, table, "a", []*pluginv1.Route{{Method: "GET", Path: "/items/{id}/events", OpenapiOperation: raw}})
	r, params := table.Match("GET", "/items/7/events")
	if r == nil || params["id"] != "7" {
		t.Fatalf("Match = %v, %v", r, params)
	}
	if r.Operation == nil || r.Operation.OperationID != "list-item-events" || r.Operation.Method != "GET" || r.Operation.Path != "/items/{id}/events" {
		t.Fatalf("operation = %+v", r.Operation)
	}
	return r
}

func TestRouteValidate(t *testing.T) {
	r := validatedRoute(t)

	type problem struct{ location, message string }
	tests := []struct {
		name  string
		query string
		path  map[string]string // nil: id=7
		want  []problem
	}{
		{name: "only required", query: "q=x"},
		{name: "everything valid", query: "q=x&limit=20&state=open&archived=true&tag=a&ids=1,2"},
		{name: "limit 0", query: "q=x&limit=0", want: []problem{{"query.limit", "expected number >= 1"}}},
		{name: "limit 1", query: "q=x&limit=1"},
		{name: "limit 500", query: "q=x&limit=500"},
		{name: "limit 501", query: "q=x&limit=501", want: []problem{{"query.limit", "expected number <= 500"}}},
		{name: "limit not a number", query: "q=x&limit=ten", want: []problem{{"query.limit", "expected integer"}}},
		{name: "limit fractional", query: "q=x&limit=1.5", want: []problem{{"query.limit", "expected integer"}}},
		{name: "limit empty counts as absent", query: "q=x&limit="},
		// A plugin may read any of them (huma reads the first).
		{name: "every value of a repeated scalar is checked", query: "q=x&limit=0&limit=5", want: []problem{{"query.limit", "expected number >= 1"}}},
		{name: "an empty one among them is absent", query: "q=x&limit=&limit=5"},
		{name: "enum value", query: "q=x&state=closed"},
		{name: "enum mismatch", query: "q=x&state=pending", want: []problem{{"query.state", "expected value to be one of"}}},
		{name: "enum is case-sensitive", query: "q=x&state=Open", want: []problem{{"query.state", "expected value to be one of"}}},
		{name: "integer enum value", query: "q=x&page_size=25"},
		{name: "integer enum mismatch", query: "q=x&page_size=20", want: []problem{{"query.page_size", "expected value to be one of"}}},
		{name: "boolean true", query: "q=x&archived=true"},
		{name: "boolean false as 0", query: "q=x&archived=0"},
		{name: "boolean not parseable", query: "q=x&archived=yes", want: []problem{{"query.archived", "expected boolean"}}},
		{name: "array repeated", query: "q=x&tag=a&tag=b&tag=c"},
		{name: "array comma-separated", query: "q=x&tag=a,b,c"},
		{name: "array mixed forms", query: "q=x&tag=a,b&tag=c"},
		{name: "array empty items skipped", query: "q=x&tag=a,,b,&tag=c"},
		{name: "array too long repeated", query: "q=x&tag=a&tag=b&tag=c&tag=d", want: []problem{{"query.tag", "expected array length <= 3"}}},
		{name: "array too long comma-separated", query: "q=x&tag=a,b,c,d", want: []problem{{"query.tag", "expected array length <= 3"}}},
		{name: "array too long mixed", query: "q=x&tag=a,b&tag=c,d", want: []problem{{"query.tag", "expected array length <= 3"}}},
		{name: "array item not an integer", query: "q=x&ids=1,x", want: []problem{{"query.ids", "expected integer"}}},
		{name: "array item out of bounds", query: "q=x&ids=1&ids=0", want: []problem{{"query.ids[1]", "expected number >= 1"}}},
		{name: "required query missing", query: "", want: []problem{{"query.q", "required query parameter is missing"}}},
		{name: "required query empty", query: "q=", want: []problem{{"query.q", "required query parameter is missing"}}},
		{name: "required path missing", query: "q=x", path: map[string]string{}, want: []problem{{"path.id", "required path parameter is missing"}}},
		{name: "path not an integer", query: "q=x", path: map[string]string{"id": "abc"}, want: []problem{{"path.id", "expected integer"}}},
		{name: "path below minimum", query: "q=x", path: map[string]string{"id": "0"}, want: []problem{{"path.id", "expected number >= 1"}}},
		{
			name:  "every problem reported, in declaration order",
			query: "limit=501&state=x&archived=maybe",
			path:  map[string]string{"id": "-1"},
			want: []problem{
				{"path.id", "expected number >= 1"},
				{"query.q", "required query parameter is missing"},
				{"query.limit", "expected number <= 500"},
				{"query.state", "expected value to be one of"},
				{"query.archived", "expected boolean"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			path := tt.path
			if path == nil {
				path = map[string]string{"id": "7"}
			}
			got := r.Validate(func(name string) []string { return q[name] }, path)
			if len(got) != len(tt.want) {
				t.Fatalf("Validate = %d problems %v, want %d %v", len(got), problemList(got), len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if got[i].Location != w.location || !strings.Contains(got[i].Message, w.message) {
					t.Errorf("problem %d = %s: %q, want %s: %q", i, got[i].Location, got[i].Message, w.location, w.message)
				}
			}
		})
	}
}

func TestRouteValidateEchoesUnparseableValue(t *testing.T) {
	r := validatedRoute(t)
	got := r.Validate(func(name string) []string {
		if name == "q" {
			return []string{"x"}
		}
		if name == "ids" {
			return []string{"1,x", "3"}
		}
		return nil
	}, map[string]string{"id": "7"})
	if len(got) != 1 || got[0].Location != "query.ids" || got[0].Value != "1,x,3" {
		t.Errorf("Validate = %v, want query.ids echoing the raw value 1,x,3", problemList(got))
	}
}

func TestRouteWithoutOperationValidatesNothing(t *testing.T) {
	table := newRouteTable()
	mustSet(t, table, "a", routeSpecs("GET /items/{id}"))
	r, params := table.Match("GET", "/items/x")
	if got := r.Validate(func(string) []string { return []string{"anything"} }, params); len(got) != 0 {
		t.Errorf("Validate = %v, want nothing to check", problemList(got))
	}
}

func problemList(ds []*huma.ErrorDetail) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.Location+": "+d.Message)
	}
	return out
}
