package server

import (
	"maps"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
)

// What /openapi.json says of each operation must be what the server does:
// the end-to-end suite checks every response it receives against it.

// pluginResponses completes a plugin operation's responses: the plugin's
// own, an error body for each error status it declares without one, and
// the statuses the host itself answers on the plugin's behalf — 401 and
// 403 from authentication, 422 from parameter validation, 413 for a body
// over the limit, 429 from the rate limit, 503 while the plugin is not
// running and 504 when it does not answer within its request_timeout.
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
	codes := api.DefaultErrors(authenticated, len(op.Parameters) > 0, false)
	if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		codes = append(codes, http.StatusRequestEntityTooLarge)
	}
	for _, code := range append(codes, http.StatusServiceUnavailable, http.StatusGatewayTimeout) {
		key := strconv.Itoa(code)
		if _, own := out[key]; !own {
			out[key] = &huma.Response{Description: http.StatusText(code), Content: map[string]*huma.MediaType{api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}}
		}
	}
	return out
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
