package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

type scopeIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Limit   int           `query:"limit" minimum:"1" maximum:"10" default:"5"`
}

type scopeOut struct {
	Tenants []string `json:"tenants"`
	Limit   int      `json:"limit"`
}

// Paging is a set of parameters several routes share, embedded in their
// inputs; the tenant input may live in it.
type Paging struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Limit   int           `query:"limit" minimum:"1" maximum:"10" default:"5"`
}

type embeddedIn struct {
	Paging
	Name string `query:"name"`
}

type oneIn struct {
	Tenant sdk.TenantID `path:"tenant_id"`
}

type createIn struct {
	Body struct {
		TenantID sdk.TenantID `json:"tenant_id,omitempty"`
		Name     string       `json:"name" minLength:"1" maxLength:"20"`
	}
}

// noteIn's body is optional: absent or an object.
type noteIn struct {
	Body *struct {
		Note string `json:"note,omitempty" maxLength:"20"`
	}
}

type formIn struct {
	RawBody []byte `contentType:"application/x-www-form-urlencoded"`
}

type created struct {
	Tenant string `json:"tenant"`
	Name   string `json:"name"`
}

// careless is a plugin whose handlers check no tenant at all: whatever a
// request names, they answer with it. The harness, like the host, must
// refuse a tenant the caller may not see before they run.
func careless(ran *int) *sdk.Plugin {
	render := func(w http.ResponseWriter, r *http.Request) {
		*ran++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<p>"+r.URL.Query().Get("tenant_id")+"</p>")
	}
	return &sdk.Plugin{
		Routes: []sdk.Route{
			sdk.Get("/api/v1/careless/scope", sdk.Op{ID: "careless-scope"}, func(_ context.Context, in *scopeIn) (*scopeOut, error) {
				*ran++
				return &scopeOut{Tenants: in.Tenants, Limit: in.Limit}, nil
			}),
			sdk.Get("/api/v1/careless/embedded", sdk.Op{ID: "careless-embedded", Responses: map[string]*huma.Response{"200": {Description: "The tenants, as text",
				Content: map[string]*huma.MediaType{"text/plain": {Schema: &huma.Schema{Type: huma.TypeString}}}}}}, func(_ context.Context, in *embeddedIn) (*scopeOut, error) {
				*ran++
				return &scopeOut{Tenants: in.Tenants, Limit: in.Limit}, nil
			}),
			sdk.Get("/api/v1/careless/tenants/{tenant_id}", sdk.Op{ID: "careless-one", Errors: []int{http.StatusNotFound}}, func(_ context.Context, in *oneIn) (*scopeOut, error) {
				*ran++
				if in.Tenant == "t3" {
					return nil, sdk.NotFound("no such tenant")
				}
				return &scopeOut{Tenants: []string{string(in.Tenant)}}, nil
			}),
			sdk.Post("/api/v1/careless/things", sdk.Op{ID: "careless-create", Status: http.StatusCreated}, func(_ context.Context, in *createIn) (*created, error) {
				*ran++
				if in.Body.Name == "boom" {
					return nil, errors.New("database password=hunter2 refused")
				}
				return &created{Tenant: string(in.Body.TenantID), Name: in.Body.Name}, nil
			}),
			sdk.Post("/api/v1/careless/notes", sdk.Op{ID: "careless-note"}, func(_ context.Context, _ *noteIn) (*sdk.Empty, error) {
				*ran++
				return &sdk.Empty{}, nil
			}),
			sdk.Post("/api/v1/careless/form", sdk.Op{ID: "careless-form", RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
				"application/x-www-form-urlencoded": {Schema: sdk.SchemaOf(struct {
					Name string `json:"name"`
				}{})}}}}, func(_ context.Context, in *formIn) (*created, error) {
				*ran++
				return &created{Name: string(in.RawBody)}, nil
			}),
		},
		Fragments: []sdk.Fragment{{Path: "/partials/careless-card", Title: "Card", Slot: "dashboard", Handler: render}},
		Pages:     []sdk.Page{{Path: "/careless", Title: "Careless", Handler: render}},
	}
}

func startCareless(t *testing.T, ran *int) *plugintest.Harness {
	factory := func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) { return careless(ran), nil }
	return plugintest.New(t, sdk.Definition{Name: "careless", Version: "1"}, factory, plugintest.Options{Tenants: tenants})
}

// TestTenantInputEnforcedBeforeTheHandler: whatever a route's handler
// does, a request naming a tenant its caller may not see — in the query,
// the path or the JSON body, in any case — is answered 403 with the one
// wording, and the handler never runs.
func TestTenantInputEnforcedBeforeTheHandler(t *testing.T) {
	ran := 0
	h := startCareless(t, &ran)
	bob := sdk.Principal{ID: "u2", Kind: "user", TenantIDs: []string{"t1"}}
	for _, tc := range []struct {
		method, target, body string
		status               int
	}{
		{"GET", "/api/v1/careless/scope", "", http.StatusOK},
		{"GET", "/api/v1/careless/scope?tenant_ids=t1", "", http.StatusOK},
		{"GET", "/api/v1/careless/scope?tenant_ids=t2", "", http.StatusForbidden},
		{"GET", "/api/v1/careless/scope?tenant_ids=t1,t2", "", http.StatusForbidden},
		{"GET", "/api/v1/careless/scope?tenant_ids=t1&tenant_ids=t2", "", http.StatusForbidden},
		{"GET", "/api/v1/careless/embedded?tenant_ids=t1", "", http.StatusOK},
		{"GET", "/api/v1/careless/embedded?tenant_ids=t2", "", http.StatusForbidden},
		{"GET", "/api/v1/careless/tenants/t1", "", http.StatusOK},
		{"GET", "/api/v1/careless/tenants/t2", "", http.StatusForbidden},
		{"POST", "/api/v1/careless/things", `{"name": "a"}`, http.StatusCreated},
		{"POST", "/api/v1/careless/things", `{"tenant_id": "t1", "name": "a"}`, http.StatusCreated},
		{"POST", "/api/v1/careless/things", `{"tenant_id": "t2", "name": "a"}`, http.StatusForbidden},
		{"POST", "/api/v1/careless/things", `{"TENANT_ID": "t2", "name": "a"}`, http.StatusForbidden},
		{"POST", "/api/v1/careless/things", `{"tenant_id": "t1", "Tenant_Id": "t2", "name": "a"}`, http.StatusForbidden},
		{"GET", "/partials/careless-card", "", http.StatusOK},
		{"GET", "/partials/careless-card?tenant_id=t1", "", http.StatusOK},
		{"GET", "/partials/careless-card?tenant_id=t2", "", http.StatusForbidden},
		{"GET", "/careless?tenant_id=t2", "", http.StatusForbidden},
	} {
		before := ran
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req := httptest.NewRequest(tc.method, tc.target, body)
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp := h.Do(req, bob)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s %s = %d %s, want %d", tc.method, tc.target, tc.body, resp.StatusCode, b, tc.status)
			continue
		}
		if handled := ran > before; handled != (tc.status < 400) {
			t.Errorf("%s %s %s: handler ran %v", tc.method, tc.target, tc.body, handled)
		}
		if tc.status == http.StatusForbidden {
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || !strings.Contains(string(b), protocol.MsgNoTenantAccess) || strings.Contains(string(b), "t2") {
				t.Errorf("%s %s: refusal %s %s", tc.method, tc.target, ct, b)
			}
		}
	}
}

// TestTypedRouteBinding: a typed route gets its declared default, the
// caller's tenants when it names none, 422s naming the field for bad
// parameters and bodies (a missing member too), its own problem's status,
// and a 500 that does not repeat a plain error's text.
func TestTypedRouteBinding(t *testing.T) {
	ran := 0
	h := startCareless(t, &ran)

	resp := h.Do(httptest.NewRequest("GET", "/api/v1/careless/scope", nil), alice)
	got := decode[scopeOut](t, resp)
	if resp.StatusCode != http.StatusOK || !slices.Equal(got.Tenants, alice.TenantIDs) || got.Limit != 5 {
		t.Errorf("no parameters: %d %+v, want every tenant of alice and the default limit", resp.StatusCode, got)
	}
	form := httptest.NewRequest("POST", "/api/v1/careless/form", strings.NewReader("name=a+b"))
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp = h.Do(form, alice)
	if got := decode[created](t, resp); resp.StatusCode != http.StatusOK || got.Name != "name=a+b" {
		t.Errorf("a form the route reads as its raw body: %d %+v", resp.StatusCode, got)
	}
	resp = h.Do(httptest.NewRequest("GET", "/api/v1/careless/scope?tenant_ids=t2&tenant_ids=t1&limit=7", nil), alice)
	if got := decode[scopeOut](t, resp); !slices.Equal(got.Tenants, []string{"t2", "t1"}) || got.Limit != 7 {
		t.Errorf("repeated tenant_ids: %+v", got)
	}

	for _, tc := range []struct {
		method, target, body, location string
	}{
		{"GET", "/api/v1/careless/scope?limit=11", "", "query.limit"},
		{"GET", "/api/v1/careless/scope?limit=x", "", "query.limit"},
		{"GET", "/api/v1/careless/scope?tenant_ids=" + strings.Repeat("x", 65), "", "query.tenant_ids[0]"},
		{"POST", "/api/v1/careless/things", `{"name": ""}`, "body.name"},
		{"POST", "/api/v1/careless/things", `{"name": "a", "colour": "red"}`, "body.colour"},
		{"POST", "/api/v1/careless/things", `{"tenant_id": "t1"}`, "body.name"},
		{"POST", "/api/v1/careless/things", ``, "body"},
		{"POST", "/api/v1/careless/things", `{"name": "a"`, "body"},
		{"POST", "/api/v1/careless/notes", `{"note": "a"`, "body"},
		{"POST", "/api/v1/careless/notes", ` `, "body"},
		{"POST", "/api/v1/careless/notes", `{"note": "` + strings.Repeat("a", 21) + `"}`, "body.note"},
		{"GET", "/api/v1/careless/embedded?tenant_ids=t1&limit=0", "", "query.limit"},
	} {
		req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp := h.Do(req, alice)
		p := decode[sdk.Problem](t, resp)
		if resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) == 0 || !strings.HasPrefix(p.Errors[0].Location, tc.location) {
			t.Errorf("%s %s %s = %d %+v, want 422 at %s", tc.method, tc.target, tc.body, resp.StatusCode, p, tc.location)
		}
	}

	// An optional body may be absent; the answer without a body has no
	// Content-Type.
	for _, body := range []string{"", `{"note": "a"}`} {
		req := httptest.NewRequest("POST", "/api/v1/careless/notes", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp := h.Do(req, alice)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusNoContent || len(b) != 0 || resp.Header.Get("Content-Type") != "" {
			t.Errorf("note %q: %d %q, Content-Type %q; want 204 without either", body, resp.StatusCode, b, resp.Header.Get("Content-Type"))
		}
	}

	// A refusal never repeats the whole body, whose other members may be
	// secrets.
	req := httptest.NewRequest("POST", "/api/v1/careless/things", strings.NewReader(`{"name": "a", "colour": "red", "note": "hunter2"}`))
	req.Header.Set("Content-Type", "application/json")
	resp = h.Do(req, alice)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusUnprocessableEntity || strings.Contains(string(b), "hunter2") {
		t.Errorf("unexpected member: %d %s", resp.StatusCode, b)
	}

	resp = h.Do(httptest.NewRequest("GET", "/api/v1/careless/tenants/t3", nil), admin)
	if p := decode[sdk.Problem](t, resp); resp.StatusCode != http.StatusNotFound || p.Detail != "no such tenant" {
		t.Errorf("own problem: %d %+v", resp.StatusCode, p)
	}
	req = httptest.NewRequest("POST", "/api/v1/careless/things", strings.NewReader(`{"name": "boom"}`))
	req.Header.Set("Content-Type", "application/json")
	resp = h.Do(req, alice)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(b), "hunter2") {
		t.Errorf("plain error: %d %s", resp.StatusCode, b)
	}
}

// TestTypedRouteDocumented: the operation the host receives is derived
// from the types, inline, with the tenant input declared.
func TestTypedRouteDocumented(t *testing.T) {
	ran := 0
	h := startCareless(t, &ran)
	byPath := map[string]string{}
	for _, r := range h.Describe().Routes {
		if r.TenantInput != nil {
			byPath[r.Method+" "+r.Path] = r.TenantInput.In + "." + r.TenantInput.Name
		}
		if r.Path == "/api/v1/careless/embedded" && !strings.Contains(string(r.OpenapiOperation), `"text/plain"`) {
			t.Errorf("the operation's own answer is not declared: %s", r.OpenapiOperation)
		}
		if r.Path == "/api/v1/careless/form" && !strings.Contains(string(r.OpenapiOperation), `"application/x-www-form-urlencoded":{"schema":{"additionalProperties":false,"properties":{"name"`) {
			t.Errorf("the operation's own request body is not declared: %s", r.OpenapiOperation)
		}
		if strings.Contains(string(r.OpenapiOperation), "$ref") {
			t.Errorf("%s %s: operation refers to a component: %s", r.Method, r.Path, r.OpenapiOperation)
		}
	}
	want := map[string]string{
		"GET /api/v1/careless/scope":               "query.tenant_ids",
		"GET /api/v1/careless/embedded":            "query.tenant_ids",
		"GET /api/v1/careless/tenants/{tenant_id}": "path.tenant_id",
		"POST /api/v1/careless/things":             "body.tenant_id",
	}
	for k, v := range want {
		if byPath[k] != v {
			t.Errorf("%s: tenant input %q, want %q", k, byPath[k], v)
		}
	}
}

type listOut []string

type otherIn struct{}

// TestTypedRouteShapes: a route may answer a JSON array, and two routes'
// types may share a Go name in different places.
func TestTypedRouteShapes(t *testing.T) {
	type Summary struct {
		N int `json:"n"`
	}
	one := sdk.Get("/api/v1/shapes/list", sdk.Op{ID: "shapes-list"}, func(context.Context, *otherIn) (*listOut, error) {
		return &listOut{"a", "b"}, nil
	})
	two := sdk.Get("/api/v1/shapes/summary", sdk.Op{ID: "shapes-summary"}, func(context.Context, *otherIn) (*Summary, error) {
		return &Summary{N: 2}, nil
	})
	three := func() sdk.Route {
		type Summary struct {
			M int `json:"m"`
		}
		return sdk.Get("/api/v1/shapes/other", sdk.Op{ID: "shapes-other"}, func(context.Context, *otherIn) (*Summary, error) {
			return &Summary{M: 3}, nil
		})
	}()
	type download struct {
		ETag string `header:"ETag" doc:"The content's digest"`
		Body func(huma.Context)
	}
	four := sdk.Get("/api/v1/shapes/file", sdk.Op{ID: "shapes-file", Responses: map[string]*huma.Response{"200": {Description: "The file",
		Content: map[string]*huma.MediaType{"text/plain": {}}}}}, func(context.Context, *otherIn) (*download, error) {
		return &download{ETag: `"d1"`, Body: func(hc huma.Context) { _, _ = io.WriteString(hc.BodyWriter(), "content") }}, nil
	})
	factory := func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
		return &sdk.Plugin{Routes: []sdk.Route{one, two, three, four}}, nil
	}
	h := plugintest.New(t, sdk.Definition{Name: "shapes", Version: "1"}, factory, plugintest.Options{Tenants: tenants})
	// A replaced answer keeps the headers the output type declares.
	for _, r := range h.Describe().Routes {
		if r.Path == "/api/v1/shapes/file" && (!strings.Contains(string(r.OpenapiOperation), `"ETag"`) || !strings.Contains(string(r.OpenapiOperation), `"text/plain"`)) {
			t.Errorf("the file's operation: %s", r.OpenapiOperation)
		}
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/shapes/file", nil), alice); resp.Header.Get("ETag") != `"d1"` {
		t.Errorf("the file's ETag: %q", resp.Header.Get("ETag"))
	}
	for path, want := range map[string]string{"/api/v1/shapes/list": `["a","b"]`, "/api/v1/shapes/summary": `{"n":2}`, "/api/v1/shapes/other": `{"m":3}`} {
		resp := h.Do(httptest.NewRequest("GET", path, nil), alice)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %d %s, want %s", path, resp.StatusCode, b, want)
		}
	}
}

type rawIn struct {
	Tenant      sdk.TenantID `query:"tenant_id"`
	ContentType string       `header:"Content-Type"`
	RawBody     []byte
}

type rawOut struct {
	Tenant      string `json:"tenant"`
	ContentType string `json:"content_type"`
	Text        string `json:"text"`
}

// TestTypedRouteRawBody: a RawBody input gets the body as sent whatever
// its media type, a missing one is a 422 naming body, the tenant input
// beside it is enforced, and the document shows the request body the Op
// declares instead of huma's octet stream.
func TestTypedRouteRawBody(t *testing.T) {
	doc := &huma.RequestBody{Description: "A CSV file", Required: true, Content: map[string]*huma.MediaType{
		"text/csv": {Schema: &huma.Schema{Type: huma.TypeString, Format: "binary"}}}}
	factory := func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
		return &sdk.Plugin{Routes: []sdk.Route{sdk.Post("/api/v1/raw/files", sdk.Op{ID: "raw-files", RequestBody: doc},
			func(_ context.Context, in *rawIn) (*rawOut, error) {
				return &rawOut{Tenant: string(in.Tenant), ContentType: in.ContentType, Text: string(in.RawBody)}, nil
			})}}, nil
	}
	h := plugintest.New(t, sdk.Definition{Name: "raw", Version: "1"}, factory, plugintest.Options{Tenants: tenants})
	post := func(target, contentType, body string) *http.Response {
		req := httptest.NewRequest("POST", target, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		return h.Do(req, alice)
	}
	resp := post("/api/v1/raw/files?tenant_id=t1", "text/csv", "a,b\n1,2\n")
	if got := decode[rawOut](t, resp); resp.StatusCode != http.StatusOK || got != (rawOut{"t1", "text/csv", "a,b\n1,2\n"}) {
		t.Errorf("raw body: %d %+v", resp.StatusCode, got)
	}
	resp = post("/api/v1/raw/files", "", "")
	if p := decode[sdk.Problem](t, resp); resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != "body" {
		t.Errorf("no body: %d %+v, want 422 at body", resp.StatusCode, p)
	}
	if resp := post("/api/v1/raw/files?tenant_id=t3", "text/csv", "a"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another tenant: %d, want 403", resp.StatusCode)
	}
	routes := h.Describe().Routes
	if len(routes) != 1 || routes[0].TenantInput == nil || routes[0].TenantInput.In != "query" {
		t.Fatalf("routes %+v", routes)
	}
	var op huma.Operation
	if err := json.Unmarshal(routes[0].OpenapiOperation, &op); err != nil {
		t.Fatal(err)
	}
	if op.RequestBody == nil || op.RequestBody.Content["text/csv"] == nil || op.RequestBody.Content["application/octet-stream"] != nil {
		t.Errorf("request body %+v, want the declared one", op.RequestBody)
	}
}

type viewIn struct {
	Tenant   sdk.TenantID `query:"tenant_id"`
	Location string       `query:"location" default:"eastus" pattern:"^[a-z0-9]+$"`
	Kinds    []string     `query:"kind" enum:"vm,disk"`
}

// TestTypedViews: a view declared with sdk.View gets its parameters bound
// — defaults, repeated lists — and a bad one is a 422 naming it before
// the view renders; the host's tenant check still comes first.
func TestTypedViews(t *testing.T) {
	rendered := 0
	render := func(w http.ResponseWriter, r *http.Request, in *viewIn) {
		rendered++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<p>"+string(in.Tenant)+"|"+in.Location+"|"+strings.Join(in.Kinds, "+")+"|"+r.URL.Path+"</p>")
	}
	factory := func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
		return &sdk.Plugin{
			Fragments: []sdk.Fragment{{Path: "/partials/typed-card", Title: "Card", Slot: "dashboard", Handler: sdk.View(render)}},
			Pages:     []sdk.Page{{Path: "/typed", Title: "Typed", Handler: sdk.View(render)}},
		}, nil
	}
	h := plugintest.New(t, sdk.Definition{Name: "typed", Version: "1"}, factory, plugintest.Options{Tenants: tenants})
	bob := sdk.Principal{ID: "u2", Kind: "user", TenantIDs: []string{"t1"}}
	for _, tc := range []struct {
		target string
		status int
		want   string
	}{
		{"/typed", http.StatusOK, "<p>|eastus||/typed</p>"},
		{"/partials/typed-card?tenant_id=t1&location=westeurope&kind=vm&kind=disk", http.StatusOK, "<p>t1|westeurope|vm+disk|/partials/typed-card</p>"},
		{"/typed?kind=vm,disk", http.StatusOK, "<p>|eastus|vm+disk|/typed</p>"},
		{"/typed?location=..%2Fx", http.StatusUnprocessableEntity, "query.location"},
		{"/typed?kind=tape", http.StatusUnprocessableEntity, "query.kind"},
		{"/typed?tenant_id=t2", http.StatusForbidden, protocol.MsgNoTenantAccess},
	} {
		before := rendered
		resp := h.Do(httptest.NewRequest("GET", tc.target, nil), bob)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s = %d %s, want %d with %q", tc.target, resp.StatusCode, b, tc.status, tc.want)
		}
		if (rendered > before) != (tc.status == http.StatusOK) {
			t.Errorf("%s: rendered %v", tc.target, rendered > before)
		}
	}
}
