package protocol

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestSplitPath(t *testing.T) {
	for path, want := range map[string][]string{
		"/":                {""},
		"":                 {""},
		"/a":               {"a"},
		"/a/":              {"a", ""},
		"a/b":              {"a", "b"},
		"/a/{id}/c":        {"a", "{id}", "c"},
		"/a//c":            {"a", "", "c"},
		"//a/b//":          {"", "a", "b", "", ""},
		"/api/v1/items/42": {"api", "v1", "items", "42"},
	} {
		if got := SplitPath(path); !slices.Equal(got, want) {
			t.Errorf("SplitPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestParamName(t *testing.T) {
	tests := []struct {
		seg   string
		name  string
		param bool
	}{
		{"{id}", "id", true},
		{"{path...}", "path", true},
		{"{a-b}", "a-b", true},
		{"{}", "", false},
		{"{", "", false},
		{"id", "", false},
		{"{id", "", false},
		{"id}", "", false},
		{"x{id}", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		name, param := ParamName(tt.seg)
		if name != tt.name || param != tt.param {
			t.Errorf("ParamName(%q) = %q, %v; want %q, %v", tt.seg, name, param, tt.name, tt.param)
		}
	}
}

func TestMatchPath(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		path    string
		ok      bool
		params  map[string]string
	}{
		{name: "root", pattern: "/", path: "/", ok: true},
		{name: "literal", pattern: "/api/v1/items", path: "/api/v1/items", ok: true},
		{name: "a trailing slash is another path", pattern: "/api/v1/items", path: "/api/v1/items/"},
		{name: "a pattern's trailing slash is required", pattern: "/onboarding/", path: "/onboarding"},
		{name: "trailing slash on both", pattern: "/onboarding/", path: "/onboarding/", ok: true},
		{name: "literal mismatch", pattern: "/api/v1/items", path: "/api/v2/items"},
		{name: "literals are case-sensitive", pattern: "/api/v1/items", path: "/API/v1/items"},
		{name: "param", pattern: "/items/{id}", path: "/items/42", ok: true, params: map[string]string{"id": "42"}},
		{
			name: "two params", pattern: "/items/{id}/children/{child}", path: "/items/42/children/c-7",
			ok: true, params: map[string]string{"id": "42", "child": "c-7"},
		},
		{name: "rest param is one segment", pattern: "/files/{path...}", path: "/files/a.txt", ok: true, params: map[string]string{"path": "a.txt"}},
		{name: "rest param does not span segments", pattern: "/files/{path...}", path: "/files/a/b.txt"},
		{name: "too few segments", pattern: "/items/{id}/children", path: "/items/42"},
		{name: "too many segments", pattern: "/items/{id}", path: "/items/42/extra"},
		{name: "empty segment never matches a param", pattern: "/items/{id}/children", path: "/items//children"},
		{name: "empty last segment never matches a param", pattern: "/items/{id}/{child}", path: "/items/42//"},
		{name: "a param never matches the root", pattern: "/{id}", path: "/"},
		{name: "braces alone are a literal", pattern: "/items/{}", path: "/items/{}", ok: true},
		{name: "braces alone match nothing else", pattern: "/items/{}", path: "/items/42"},
		{name: "literal after param", pattern: "/items/{id}/logs", path: "/items/42/events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params, ok := MatchPath(tt.pattern, tt.path)
			if ok != tt.ok {
				t.Fatalf("MatchPath(%q, %q) ok = %v, want %v", tt.pattern, tt.path, ok, tt.ok)
			}
			// nil, not empty, without parameters: callers compare and
			// forward the map as is.
			if !reflect.DeepEqual(params, tt.params) {
				t.Errorf("MatchPath(%q, %q) params = %#v, want %#v", tt.pattern, tt.path, params, tt.params)
			}
			segParams, segOK := MatchSegments(SplitPath(tt.pattern), SplitPath(tt.path))
			if segOK != ok || !reflect.DeepEqual(segParams, params) {
				t.Errorf("MatchSegments = %v, %v; MatchPath = %v, %v", segParams, segOK, params, ok)
			}
		})
	}
}

func TestPatternsOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/x", "/x", true},
		{"/x/", "/x", false},
		{"/x/{id}", "/x/{id}", true},
		{"/x/{id}", "/x/{key}", true},
		{"/x/{id}", "/x/special", true},
		{"/x/special/logs", "/x/{id}/logs", true},
		{"/{a}/b", "/a/{b}", true},
		{"/x/{path...}", "/x/{id}", true},
		{"/", "/", true},
		{"/x/a", "/x/b", false},
		{"/x/{id}", "/x/{id}/logs", false},
		{"/x/{id}", "/x", false},
		{"/x/{id}/logs", "/x/{id}/events", false},
		{"/x/{}", "/x/a", false},
		{"/", "/{id}", true}, // no path matches both, but the check errs towards a conflict
	}
	for _, tt := range tests {
		if got := PatternsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("PatternsOverlap(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := PatternsOverlap(tt.b, tt.a); got != tt.want {
			t.Errorf("PatternsOverlap(%q, %q) = %v, want %v (not symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestMoreSpecific(t *testing.T) {
	tests := []struct {
		a, b     string
		more     bool // a is more specific than b
		conflict bool
	}{
		{"/x/special", "/x/{id}", true, false},
		{"/x/special/logs", "/x/{id}/logs", true, false},
		{"/x/a/b", "/x/{p}/{q}", true, false},
		{"/x/a/{q}", "/x/{p}/{q}", true, false},
		{"/x/{id}", "/x/{id}", false, true},
		{"/x/{id}", "/x/{key}", false, true},
		{"/x", "/x", false, true},
		{"/{a}/b", "/a/{b}", false, true},
		{"/x/a", "/x/b", false, false},
		{"/x/{id}", "/x/{id}/logs", false, false},
	}
	for _, tt := range tests {
		if got := MoreSpecific(tt.a, tt.b); got != tt.more {
			t.Errorf("MoreSpecific(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.more)
		}
		if tt.more && MoreSpecific(tt.b, tt.a) {
			t.Errorf("MoreSpecific(%q, %q) both ways", tt.b, tt.a)
		}
		for _, pair := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
			if got := PatternsConflict(pair[0], pair[1]); got != tt.conflict {
				t.Errorf("PatternsConflict(%q, %q) = %v, want %v", pair[0], pair[1], got, tt.conflict)
			}
		}
	}
}

func TestCheckPattern(t *testing.T) {
	tests := []struct {
		pattern string
		err     string // empty: valid
	}{
		{"/", ""},
		{"/x", ""},
		{"/x/", ""},
		{"/x/{id}", ""},
		{"/x/{id}/logs/{log_id}", ""},
		{"/x/{rest...}", ""},
		{"x", "must start with /"},
		{"", "must start with /"},
		{"/x?y=1", "must not hold a query or fragment"},
		{"/x#top", "must not hold a query or fragment"},
		{"//x", "has an empty segment"},
		{"/x//y", "has an empty segment"},
		{"/x/{}", "must be a literal or a whole {parameter}"},
		{"/x/{id", "must be a literal or a whole {parameter}"},
		{"/x/a{id}", "must be a literal or a whole {parameter}"},
		{"/x/{1d}", `parameter name "1d" is not an identifier`},
		{"/x/{a-b}", `parameter name "a-b" is not an identifier`},
		{"/x/{rest...}/y", "{rest...} must be the last segment"},
		{"/x/{id}/{id}", `parameter "id" appears twice`},
	}
	for _, tt := range tests {
		err := CheckPattern(tt.pattern)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("CheckPattern(%q) = %v, want nil", tt.pattern, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("CheckPattern(%q) = %v, want an error saying %q", tt.pattern, err, tt.err)
		}
	}
}

func TestPathParams(t *testing.T) {
	if got := PathParams("/x/{a}/y/{b...}"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("PathParams = %v, want [a b]", got)
	}
	if got := PathParams("/x/y"); got != nil {
		t.Errorf("PathParams of a literal path = %v, want none", got)
	}
}

func TestPluginPath(t *testing.T) {
	for raw, want := range map[string]string{
		"/api/v1/items/42":                    "/api/v1/items/42",
		"/api/v1/items/a%2Fb":                 "/api/v1/items/a%2Fb",
		"/api/v1/items/..%2Fadmin":            "/api/v1/items/..%2Fadmin",
		"/api/v1/items/./history":             "/api/v1/items/%2E/history",
		"/api/v1/items/%2e%2e":                "/api/v1/items/%2E%2E",
		"/api/v1/items/café%2Fx":              "/api/v1/items/caf%C3%A9%2Fx",
		`/api/v1/items/"|^`:                   "/api/v1/items/%22%7C%5E",
		"/api/v1/items/a%20b":                 "/api/v1/items/a%20b",
		"/api/v1/items/a+b:c@d":               "/api/v1/items/a+b:c@d",
		"/api/v1/items/%zz":                   "/api/v1/items/%zz",
		"/api/v1/items/":                      "/api/v1/items/",
		"/api/v1/items/%E2%82%AC%2C%3B%3F%23": "/api/v1/items/%E2%82%AC%2C%3B%3F%23",
	} {
		if got := PluginPath(raw); got != want {
			t.Errorf("PluginPath(%q) = %q, want %q", raw, got, want)
		}
	}
}
