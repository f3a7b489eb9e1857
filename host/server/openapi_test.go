package server

import (
	"testing"

	"github.com/danielgtaylor/huma/v2"
)

// TestAddHeaders: every answer documents the request id and the rate
// limit's headers, required where every answer of its status carries them;
// a 429 and a 503 document Retry-After; the operation's own headers stay,
// and a headers map responses share is left alone.
func TestAddHeaders(t *testing.T) {
	shared := map[string]*huma.Header{"Location": {Schema: &huma.Schema{Type: huma.TypeString}}}
	const refs = "#/components/headers/"
	for _, c := range []struct {
		code       string
		counted    bool
		retryAfter string // the component of Retry-After; "" when absent
	}{
		{"200", true, ""},
		{"303", true, ""},
		{"403", true, ""},
		{"413", false, ""},
		{"429", true, "Retry-After"},
		{"500", false, ""},
		{"503", false, "Retry-After.optional"},
	} {
		r := &huma.Response{Headers: shared}
		addHeaders(c.code, r)
		want := map[string]string{"X-Request-Id": "X-Request-Id", "Location": ""}
		for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			want[name] = name
			if !c.counted {
				want[name] += ".optional"
			}
		}
		if c.retryAfter != "" {
			want["Retry-After"] = c.retryAfter
		}
		if len(r.Headers) != len(want) {
			t.Errorf("%s: %d headers, want %d", c.code, len(r.Headers), len(want))
		}
		for name, component := range want {
			h := r.Headers[name]
			switch {
			case h == nil:
				t.Errorf("%s: no %s", c.code, name)
			case component == "" && h.Ref != "":
				t.Errorf("%s: the operation's own %s became %s", c.code, name, h.Ref)
			case component != "" && h.Ref != refs+component:
				t.Errorf("%s: %s is %q, want %q", c.code, name, h.Ref, refs+component)
			}
		}
	}
	if len(shared) != 1 {
		t.Errorf("the shared headers map was changed: %v", shared)
	}

	doc := &huma.OpenAPI{Components: &huma.Components{}, Paths: map[string]*huma.PathItem{
		"/x": {Get: &huma.Operation{Responses: map[string]*huma.Response{"200": {}}}}}}
	documentHeaders(doc)
	if h := doc.Components.Headers["X-RateLimit-Reset"]; h == nil || !h.Required {
		t.Errorf("X-RateLimit-Reset component: %+v, want required", h)
	}
	if h := doc.Components.Headers["X-RateLimit-Reset.optional"]; h == nil || h.Required || h.Schema == nil {
		t.Errorf("X-RateLimit-Reset.optional component: %+v, want it not required", h)
	}
	if h := doc.Paths["/x"].Get.Responses["200"].Headers["X-Request-Id"]; h == nil || h.Ref != refs+"X-Request-Id" {
		t.Errorf("an operation's answer without the request id: %+v", h)
	}
}
