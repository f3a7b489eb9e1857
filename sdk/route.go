package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/store"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Op documents a typed route and says who may call it. Handle derives the
// rest of the route's OpenAPI operation — parameters, request body,
// response — from the handler's input and output types.
type Op struct {
	// ID is the operation's id in the host's OpenAPI document, unique
	// across every plugin: start it with the plugin's name.
	ID          string
	Summary     string
	Description string
	// Tags group the operation in the document; the host tags an operation
	// without any with the plugin's name.
	Tags      []string
	Auth      Auth
	RateClass RateClass
	// Status is the status of a successful answer; 200 when zero (204 for
	// an output type without a body).
	Status int
	// Errors are the statuses the handler itself answers besides the
	// host's own (401, 403, 422, 429, …), such as 404 or 409.
	Errors []int
	// Responses replace or add answers of the derived operation by status
	// code ("200"), for what the types cannot say: a body streamed as CSV,
	// a second success status. A replacement without headers keeps those
	// the output type's header fields declare.
	Responses map[string]*huma.Response
	// RequestBody replaces the derived request body in the document, for
	// what the types cannot say: the media types and form fields a RawBody
	// input accepts. The input is bound as its types say whatever this
	// documents.
	RequestBody *huma.RequestBody
}

// Items is the answer of a list route: {"items": [...]}, an empty list
// rather than null when there is none.
type Items[T any] struct {
	Items []T `json:"items"`
}

// MarshalJSON writes no items as [].
func (l Items[T]) MarshalJSON() ([]byte, error) {
	if l.Items == nil {
		l.Items = []T{}
	}
	return json.Marshal(struct {
		Items []T `json:"items"`
	}{l.Items})
}

// TenantIDs is a route input naming the tenants a request acts on: a query
// parameter (`query:"tenant_ids"`), repeated or comma-separated, or a
// member of the JSON body. The host refuses a request naming a tenant its
// caller may not see with a 403 before the plugin sees it. Left empty by
// the caller, the handler receives every tenant the caller may see.
type TenantIDs = protocol.TenantIDs

// TenantID is a route input naming one tenant: a query or path parameter,
// or a member of the JSON body. The host refuses a request naming a tenant
// its caller may not see with a 403 before the plugin sees it. Empty when
// the caller named none (a path parameter is never empty).
type TenantID = protocol.TenantID

// Handle declares a route served by a typed handler, on huma's input
// binding: I's fields tagged `query`, `path` or `header` are the
// parameters, with their bounds and defaults as tags (`minimum`,
// `maximum`, `default`, `enum`, `maxLength`, `doc`…), and its Body field
// the JSON request body; the host checks the parameters before the plugin
// sees the request and the SDK checks the body, each answering 422 naming
// the field. A TenantIDs or TenantID field (a parameter or a member of
// Body) is the route's tenant input, which the host enforces.
//
// O is the response body, unless it is a struct with a Body field, which
// is then the body and whose other fields tagged `header` are response
// headers. A handler's *Problem keeps its status; any other error is a 500
// that does not repeat the error's text.
func Handle[I, O any](method, path string, op Op, h func(ctx context.Context, in *I) (*O, error)) Route {
	r := Route{Method: method, Path: path, Auth: op.Auth, RateClass: op.RateClass}
	tenant, err := protocol.FindTenant(reflect.TypeFor[I]())
	if err != nil {
		r.declErr = err
		return r
	}
	r.tenant, r.TenantScoped, r.responses, r.requestBody = tenant, tenant != nil, op.Responses, op.RequestBody
	hop := huma.Operation{OperationID: op.ID, Method: method, Path: path, Summary: op.Summary, Description: op.Description,
		Tags: op.Tags, DefaultStatus: op.Status, Errors: op.Errors}
	call := func(ctx context.Context, in *I) (*O, error) {
		if tenant != nil {
			tenant.FillEmpty(in, PrincipalFrom(ctx).TenantIDs)
		}
		out, err := h(ctx, in)
		if err != nil {
			var p *Problem
			if !errors.As(err, &p) && store.Unavailable(err) {
				if store.Full(err) {
					hclog.Default().Warn("database storage full; answered 503", "route", method+" "+path, "error", err)
				}
				return nil, protocol.DatabaseUnavailable(err)
			}
			if !errors.As(err, &p) {
				hclog.Default().Error("handler failed", "route", method+" "+path, "error", err)
				p = newProblem(http.StatusInternalServerError, "internal error")
			}
			return nil, p
		}
		return out, nil
	}
	r.register = func(api huma.API) { protocol.RegisterTyped(api, hop, call) }
	return r
}

// Get declares a GET route; see Handle.
func Get[I, O any](path string, op Op, h func(ctx context.Context, in *I) (*O, error)) Route {
	return Handle(http.MethodGet, path, op, h)
}

// Post declares a POST route; see Handle.
func Post[I, O any](path string, op Op, h func(ctx context.Context, in *I) (*O, error)) Route {
	return Handle(http.MethodPost, path, op, h)
}

// Put declares a PUT route; see Handle.
func Put[I, O any](path string, op Op, h func(ctx context.Context, in *I) (*O, error)) Route {
	return Handle(http.MethodPut, path, op, h)
}

// Patch declares a PATCH route; see Handle.
func Patch[I, O any](path string, op Op, h func(ctx context.Context, in *I) (*O, error)) Route {
	return Handle(http.MethodPatch, path, op, h)
}

// Delete declares a DELETE route; see Handle.
func Delete[I, O any](path string, op Op, h func(ctx context.Context, in *I) (*O, error)) Route {
	return Handle(http.MethodDelete, path, op, h)
}

// Empty is the input of a route that takes none, or the output of one
// that answers without a body (204 unless Op.Status says otherwise).
type Empty = protocol.Empty

// apiConfig is huma's configuration for a plugin's typed routes: JSON
// only, and none of huma's additions to the documents (no $schema links),
// so a body is what the operation's schema says.
func apiConfig() huma.Config {
	return huma.Config{
		OpenAPI: &huma.OpenAPI{OpenAPI: "3.1.0", Info: &huma.Info{Title: "plugin", Version: Version},
			Components: &huma.Components{Schemas: huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)}},
		Formats:       map[string]huma.Format{"application/json": jsonFormat, "json": jsonFormat},
		DefaultFormat: "application/json",
		Transformers:  []huma.Transformer{nameMissingMembers},
	}
}

// nameMissingMembers names the missing member huma reports at its object
// (protocol.NameMissingMember) and drops a value the host would not repeat
// either (protocol.Echoable): a whole object or list, a credential.
func nameMissingMembers(_ huma.Context, _ string, v any) (any, error) {
	m, ok := v.(*huma.ErrorModel)
	if !ok {
		return v, nil
	}
	for _, d := range m.Errors {
		protocol.NameMissingMember(d)
		if !protocol.Echoable(d.Location, d.Value) {
			d.Value = nil
		}
	}
	return m, nil
}

// muxAdapter serves huma's operations on a ServeMux. A list query
// parameter reaches huma comma-separated whether the caller repeated it
// (?a=1&a=2) or not (?a=1,2), as the host's validation reads both
// (hostQuery).
type muxAdapter struct{ mux *http.ServeMux }

func (a muxAdapter) Handle(op *huma.Operation, handler func(huma.Context)) {
	lists := listParams(op)
	required := op.RequestBody != nil && op.RequestBody.Required
	jsonBody := op.RequestBody != nil && op.RequestBody.Content["application/json"] != nil
	a.mux.HandleFunc(muxPattern(op.Method, op.Path), func(w http.ResponseWriter, r *http.Request) {
		if required || jsonBody {
			var p *Problem
			if r, p = readableBody(r, op.MaxBodyBytes, required, jsonBody); p != nil {
				WriteError(w, p)
				return
			}
		}
		handler(humago.NewContext(op, hostQuery(r, lists), w))
	})
}

// readableBody answers a 422 naming the body, as the contract has every
// input problem, for a required body that is missing or a JSON body,
// required or not, that is not JSON, which huma would answer 400. A body
// over the limit goes on for huma to refuse.
func readableBody(r *http.Request, limit int64, required, isJSON bool) (*http.Request, *Problem) {
	if limit <= 0 {
		limit = 1 << 20
	}
	missing := "a body is required"
	if isJSON {
		missing = "a JSON body is required"
	}
	if r.Body == nil {
		if required {
			return r, Invalid("body", "%s", missing)
		}
		return r, nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return r, BadRequest("the body could not be read")
	}
	r2 := *r
	r2.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	switch {
	case int64(len(head)) > limit:
		return &r2, nil
	case required && (len(head) == 0 || isJSON && len(bytes.TrimSpace(head)) == 0):
		return r, Invalid("body", "%s", missing)
	case isJSON && len(head) > 0 && !json.Valid(head):
		return r, Invalid("body", "the body is not valid JSON")
	}
	return &r2, nil
}

func (a muxAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// listParams names an operation's list query parameters.
func listParams(op *huma.Operation) []string {
	var lists []string
	for _, p := range op.Parameters {
		if p.In == "query" && p.Schema != nil && p.Schema.Type == huma.TypeArray {
			lists = append(lists, p.Name)
		}
	}
	return lists
}

// hostQuery returns r with its query as huma should read it: as net/url
// reads it, which is what the host checked (its tenants, its declared
// parameters), and with each repeated list parameter joined by commas.
// huma reads a parameter with a parser of its own (queryparam), which
// takes a name without a value (?tenant_id) as "true" where the host read
// an empty value; re-encoded, the query gives each name its value
// (?tenant_id=).
func hostQuery(r *http.Request, lists []string) *http.Request {
	if r.URL.RawQuery == "" {
		return r
	}
	q := r.URL.Query()
	for _, name := range lists {
		if vs := q[name]; len(vs) > 1 {
			q[name] = []string{strings.Join(vs, ",")}
		}
	}
	enc := q.Encode()
	if enc == r.URL.RawQuery {
		return r
	}
	u := *r.URL
	u.RawQuery = enc
	r2 := *r
	r2.URL = &u
	return &r2
}

// typedOperation is the OpenAPI operation of a typed route as it travels to
// the host: derived by huma from the handler's types, every schema inline,
// and each error answer left for the host to document with its problem
// schema.
func typedOperation(r Route) (op *huma.Operation, err error) {
	if r.declErr != nil {
		return nil, r.declErr
	}
	defer func() {
		if v := recover(); v != nil {
			op, err = nil, fmt.Errorf("%v", v)
		}
	}()
	api := huma.NewAPI(apiConfig(), muxAdapter{http.NewServeMux()})
	r.register(api)
	item := api.OpenAPI().Paths[r.Path]
	if item == nil {
		return nil, errors.New("huma registered no operation")
	}
	registered := *protocol.OperationSlot(item, strings.ToUpper(r.Method))
	reg := api.OpenAPI().Components.Schemas
	out := *registered
	out.Parameters = make([]*huma.Param, len(registered.Parameters))
	for i, p := range registered.Parameters {
		cp := *p
		cp.Schema = inline(reg, p.Schema, nil)
		// A parameter is absent or has a value: huma's null for a nil
		// slice is a body's notion.
		if cp.Schema != nil {
			cp.Schema.Nullable = false
		}
		out.Parameters[i] = &cp
	}
	if rb := registered.RequestBody; rb != nil {
		cp := *rb
		cp.Content = inlineContent(reg, rb.Content)
		out.RequestBody = &cp
	}
	out.Responses = map[string]*huma.Response{}
	for code, resp := range registered.Responses {
		if code == "default" {
			continue
		}
		cp := *resp
		if n, _ := strconv.Atoi(code); n >= 400 {
			cp.Content = nil
		} else {
			cp.Content = inlineContent(reg, resp.Content)
		}
		out.Responses[code] = &cp
	}
	for code, resp := range r.responses {
		// The output type's header fields stay documented unless the
		// replacement declares headers of its own.
		if derived := out.Responses[code]; derived != nil && resp.Headers == nil && derived.Headers != nil {
			cp := *resp
			cp.Headers = derived.Headers
			resp = &cp
		}
		out.Responses[code] = resp
	}
	if r.requestBody != nil {
		out.RequestBody = r.requestBody
	}
	return &out, nil
}

func inlineContent(reg huma.Registry, content map[string]*huma.MediaType) map[string]*huma.MediaType {
	if content == nil {
		return nil
	}
	out := make(map[string]*huma.MediaType, len(content))
	for ct, mt := range content {
		cp := *mt
		cp.Schema = inline(reg, mt.Schema, nil)
		out[ct] = &cp
	}
	return out
}

// routeProto is a route as Describe declares it to the host.
func routeProto(r Route) (*pluginv1.Route, error) {
	op := r.Operation
	if r.register != nil {
		var err error
		if op, err = typedOperation(r); err != nil {
			return nil, fmt.Errorf("route %s %s: %w", r.Method, r.Path, err)
		}
	}
	var b []byte
	if op != nil {
		var err error
		if b, err = json.Marshal(op); err != nil {
			return nil, fmt.Errorf("route %s %s: operation: %w", r.Method, r.Path, err)
		}
	}
	out := &pluginv1.Route{
		Method:           strings.ToUpper(r.Method),
		Path:             r.Path,
		Auth:             authProto(r.Auth),
		RateClass:        rateProto(r.RateClass),
		OpenapiOperation: b,
		TenantScoped:     r.TenantScoped,
	}
	if r.tenant != nil {
		out.TenantInput = &pluginv1.TenantInput{In: r.tenant.In, Name: r.tenant.Name}
	}
	return out, nil
}
