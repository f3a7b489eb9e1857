package server

import (
	"maps"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/ratelimit"
	"github.com/stewardhq/steward/sdk/protocol"
)

// What /openapi.json says of each operation must be what the server does:
// the end-to-end suite checks every response it receives against it.

// pluginResponses completes a plugin operation's responses: the plugin's
// own, an error body for each error status it declares without one, and
// the statuses the host or the SDK answer around the plugin's handler —
// 401 and 403 from authentication, 422 from validating its parameters or
// body (a body that does not parse included), 413 for a body over the
// limit, 415 for a body of a media type it does not take, 429 from the
// rate limit, 503 while the plugin is not running and 504 when it does not
// answer within its request_timeout — each with the headers the middleware
// sets (addHeaders).
func (s *Server) pluginResponses(op *huma.Operation, method string, authenticated bool) map[string]*huma.Response {
	out := make(map[string]*huma.Response, len(op.Responses)+7)
	for code, r := range op.Responses {
		cp := *r
		if n, err := strconv.Atoi(code); err == nil && n >= 400 && len(cp.Content) == 0 {
			cp.Content = map[string]*huma.MediaType{api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}
		}
		out[code] = &cp
	}
	if len(out) == 0 {
		out["200"] = &huma.Response{Description: "OK"}
	}
	codes := api.DefaultErrors(authenticated, len(op.Parameters) > 0, op.RequestBody != nil)
	if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		codes = append(codes, http.StatusRequestEntityTooLarge)
	}
	for _, code := range append(codes, http.StatusServiceUnavailable, http.StatusGatewayTimeout) {
		key := strconv.Itoa(code)
		if _, own := out[key]; !own {
			out[key] = &huma.Response{Description: http.StatusText(code), Content: map[string]*huma.MediaType{api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}}
		}
	}
	for code, r := range out {
		addHeaders(code, r)
	}
	return out
}

// pageRefusal documents that a browser opening a plugin's page for a
// tenant it may not see gets the error page (pages.RefuseTenant), as on
// the host's own pages.
func pageRefusal(rs map[string]*huma.Response) {
	r, ok := rs["403"]
	if !ok {
		return
	}
	cp := *r
	cp.Content = maps.Clone(cp.Content)
	cp.Content[api.MimeHTML] = &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString, Description: "The error page, for a browser's navigation"}}
	rs["403"] = &cp
}

// The headers the middleware sets, which every operation documents on
// each of its answers: X-Request-Id (assignRequestID, or the error handler
// for a request fasthttp refused before the middleware ran), the rate
// limit's X-RateLimit-* and, on a 429 and on some 503s, Retry-After.
// Each is a component, required where every answer of the status carries
// it, and again as name+optionalSuffix, not required, where some do not:
// the rate limit's headers are missing from a 413 fasthttp answers for a
// body over the limit, and from a 500 or 503 when authentication failed
// to read a store before the request was counted; a 503 has Retry-After
// only when waiting helps (not while a plugin is down for good).
const (
	headerRequestID = "X-Request-Id"
	optionalSuffix  = ".optional"
)

// commonHeaders are those headers' definitions, required.
func commonHeaders() map[string]*huma.Header {
	count := func(desc string) *huma.Header {
		return &huma.Header{Description: desc, Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(0)}}
	}
	return map[string]*huma.Header{
		headerRequestID: {Description: "The request's id, in the host's log and audit entries: the client's own X-Request-Id when it is up to 128 letters, digits and -_.: characters, else one the host generated",
			Required: true, Schema: &huma.Schema{Type: huma.TypeString, MinLength: intPtr(1), MaxLength: intPtr(maxRequestIDLen)}},
		ratelimit.HeaderLimit:     count("Requests the caller's budget allows in the current window"),
		ratelimit.HeaderRemaining: count("Requests left in the current window"),
		ratelimit.HeaderReset:     count("When the current window ends, in Unix seconds"),
		fiber.HeaderRetryAfter:    count("Seconds to wait before trying again"),
	}
}

// documentHeaders declares the common headers among the document's
// components and on every response of its operations.
func documentHeaders(doc *huma.OpenAPI) {
	if doc.Components.Headers == nil {
		doc.Components.Headers = map[string]*huma.Header{}
	}
	for name, h := range commonHeaders() {
		optional := *h
		optional.Required = false
		doc.Components.Headers[name], doc.Components.Headers[name+optionalSuffix] = h, &optional
	}
	for _, item := range doc.Paths {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
			if op := *protocol.OperationSlot(item, method); op != nil {
				for code, r := range op.Responses {
					addHeaders(code, r)
				}
			}
		}
	}
}

// addHeaders adds the common headers an answer with the status carries to
// r, beside the operation's own; r.Headers is replaced, not changed, as
// responses may share it.
func addHeaders(code string, r *huma.Response) {
	headers := maps.Clone(r.Headers)
	if headers == nil {
		headers = map[string]*huma.Header{}
	}
	ref := func(name string, required bool) {
		component := name
		if !required {
			component += optionalSuffix
		}
		headers[name] = &huma.Header{Ref: "#/components/headers/" + component}
	}
	status, _ := strconv.Atoi(code)
	counted := status != http.StatusRequestEntityTooLarge && status != http.StatusInternalServerError && status != http.StatusServiceUnavailable
	ref(headerRequestID, true)
	for _, name := range []string{ratelimit.HeaderLimit, ratelimit.HeaderRemaining, ratelimit.HeaderReset} {
		ref(name, counted)
	}
	switch status {
	case http.StatusTooManyRequests:
		ref(fiber.HeaderRetryAfter, true)
	case http.StatusServiceUnavailable:
		ref(fiber.HeaderRetryAfter, false)
	}
	r.Headers = headers
}

// pluginTenantScope finds the parameter a tenant-scoped plugin operation
// names its tenant with, or else the tenant_id property of its JSON body
// (a create naming the tenant of what it creates). A route that names
// none acts on the caller's whole scope, so there is no tenant a caller
// could name and nothing to mark.
func pluginTenantScope(op *huma.Operation) map[string]string {
	for _, want := range []struct{ in, name string }{{"path", "tenant_id"}, {"query", "tenant_ids"}, {"query", "tenant_id"}} {
		for _, p := range op.Parameters {
			if p != nil && p.In == want.in && p.Name == want.name {
				return map[string]string{want.in: want.name}
			}
		}
	}
	if op.RequestBody != nil {
		if mt := op.RequestBody.Content["application/json"]; mt != nil && mt.Schema != nil && mt.Schema.Properties["tenant_id"] != nil {
			return map[string]string{"body": "tenant_id"}
		}
	}
	return nil
}

// documentPlainRoutes declares the routes fiber serves outside huma.
func (s *Server) documentPlainRoutes() {
	anonymous := []map[string][]string{}
	limited := func(rs map[string]*huma.Response) map[string]*huma.Response {
		out := maps.Clone(rs)
		out["429"] = &huma.Response{Description: http.StatusText(http.StatusTooManyRequests), Content: map[string]*huma.MediaType{api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}}
		return out
	}
	doc := s.API.OpenAPI()
	doc.AddOperation(&huma.Operation{OperationID: "openapi", Method: http.MethodGet, Path: "/openapi.json", Tags: []string{"meta"}, Security: anonymous,
		Summary: "This OpenAPI document", Description: "The host's operations and those of every running plugin.",
		Responses: limited(map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
			"application/openapi+json": {Schema: &huma.Schema{Type: huma.TypeObject, Description: "An OpenAPI 3.1 document"}}}}})})
	doc.AddOperation(&huma.Operation{OperationID: "docs", Method: http.MethodGet, Path: "/docs", Tags: []string{"meta"}, Security: anonymous,
		Summary: "Interactive API reference", Description: "Renders /openapi.json with Stoplight Elements, whose script and style sheet the host serves itself (GET /docs/{asset}).",
		Responses: limited(map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
			api.MimeHTML: {Schema: &huma.Schema{Type: huma.TypeString, Description: "An HTML page"}}}}})})
	s.documentDocsAssets(limited)
	if s.deps.Registry == nil {
		return
	}
	doc.AddOperation(&huma.Operation{OperationID: "metrics", Method: http.MethodGet, Path: "/metrics", Tags: []string{"meta"}, Security: anonymous,
		Summary: "Prometheus metrics", Description: "Metrics in the Prometheus text exposition format.",
		Responses: limited(map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
			"text/plain": {Schema: &huma.Schema{Type: huma.TypeString, Description: "Prometheus text exposition format"}}}}})})
}
