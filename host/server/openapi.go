package server

import (
	"maps"
	"net/http"
	"reflect"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
)

// What /openapi.json says of each operation must be what the server does:
// the end-to-end suite checks every response it receives against it.

const (
	mimeProblem = "application/problem+json"
	mimeHTML    = "text/html"
)

func bearerOrKey() []map[string][]string {
	return []map[string][]string{{"OAuth2PasswordBearer": {}}, {"APIKeyHeader": {}}}
}

// inputShape reports whether an operation's input type has parameters and
// a body, which decide the validation statuses it may answer.
func inputShape(t reflect.Type) (params, body bool) {
	for f := range t.Fields() {
		switch {
		case f.Name == "Body":
			body = true
		case f.Tag.Get("path") != "" || f.Tag.Get("query") != "" || f.Tag.Get("header") != "" || f.Tag.Get("cookie") != "":
			params = true
		}
	}
	return params, body
}

// defaultErrors are the statuses the host answers before or around an
// operation's handler: 401 and 403 from authentication, and 503 from it
// while the token revocation list's Redis is unreachable, 400 (a body that
// does not decode), 413 (over STEWARD_MAX_BODY_BYTES), 415 (a content type
// the operation does not take) and 422 (validation) from reading its
// input, 429 from the rate limit.
func defaultErrors(authenticated, params, body bool) []int {
	var codes []int
	if authenticated {
		codes = append(codes, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	}
	if body {
		codes = append(codes, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	if params || body {
		codes = append(codes, http.StatusUnprocessableEntity)
	}
	return append(codes, http.StatusTooManyRequests)
}

// problemSchema is the schema of every problem document the host writes.
func (s *Server) problemSchema() *huma.Schema {
	return s.API.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[huma.ErrorModel](), true, "")
}

// schemaOf registers v's type and returns a reference to it.
func (s *Server) schemaOf(v any) *huma.Schema {
	return s.API.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(v), true, "")
}

// htmlResponses declares server-rendered pages: each status answers HTML,
// and 422 may also be the problem document of input huma refuses before
// the handler renders anything.
func (s *Server) htmlResponses(statuses ...int) map[string]*huma.Response {
	out := make(map[string]*huma.Response, len(statuses))
	for _, code := range statuses {
		r := &huma.Response{Description: http.StatusText(code), Content: map[string]*huma.MediaType{
			mimeHTML: {Schema: &huma.Schema{Type: huma.TypeString, Description: "An HTML page"}}}}
		if code == http.StatusUnprocessableEntity {
			r.Content[mimeProblem] = &huma.MediaType{Schema: s.problemSchema()}
		}
		out[strconv.Itoa(code)] = r
	}
	return out
}

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
			cp.Content = map[string]*huma.MediaType{mimeProblem: {Schema: s.problemSchema()}}
		}
		out[code] = &cp
	}
	if len(out) == 0 {
		out["200"] = &huma.Response{Description: "OK"}
	}
	codes := defaultErrors(authenticated, len(op.Parameters) > 0, false)
	if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		codes = append(codes, http.StatusRequestEntityTooLarge)
	}
	for _, code := range append(codes, http.StatusServiceUnavailable, http.StatusGatewayTimeout) {
		key := strconv.Itoa(code)
		if _, own := out[key]; !own {
			out[key] = &huma.Response{Description: http.StatusText(code), Content: map[string]*huma.MediaType{mimeProblem: {Schema: s.problemSchema()}}}
		}
	}
	return out
}

// documentPlainRoutes declares the routes fiber serves outside huma.
func (s *Server) documentPlainRoutes() {
	anonymous := []map[string][]string{}
	limited := func(rs map[string]*huma.Response) map[string]*huma.Response {
		out := maps.Clone(rs)
		out["429"] = &huma.Response{Description: http.StatusText(http.StatusTooManyRequests), Content: map[string]*huma.MediaType{mimeProblem: {Schema: s.problemSchema()}}}
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
			mimeHTML: {Schema: &huma.Schema{Type: huma.TypeString, Description: "An HTML page"}}}}})})
	s.documentDocsAssets(limited)
	for _, p := range []string{"/openapi.json", "/docs"} {
		s.hostOps[http.MethodGet+" "+p] = true
	}
	if s.deps.Registry == nil {
		return
	}
	s.hostOps[http.MethodGet+" /metrics"] = true
	doc.AddOperation(&huma.Operation{OperationID: "metrics", Method: http.MethodGet, Path: "/metrics", Tags: []string{"meta"}, Security: anonymous,
		Summary: "Prometheus metrics", Description: "Metrics in the Prometheus text exposition format.",
		Responses: limited(map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
			"text/plain": {Schema: &huma.Schema{Type: huma.TypeString, Description: "Prometheus text exposition format"}}}}})})
}
