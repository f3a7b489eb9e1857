package api

import (
	"net/http"
	"reflect"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
)

// Media types the host answers besides JSON.
const (
	MimeProblem = "application/problem+json"
	MimeHTML    = "text/html"
)

// ProblemSchema is the schema of every problem document the host writes.
func ProblemSchema(api huma.API) *huma.Schema {
	return api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[huma.ErrorModel](), true, "")
}

// SchemaOf registers v's type and returns a reference to it.
func SchemaOf(api huma.API, v any) *huma.Schema {
	return api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(v), true, "")
}

// HTMLResponses declares server-rendered pages: each status answers HTML,
// and 422 may also be the problem document of input huma refuses before
// the handler renders anything.
func HTMLResponses(api huma.API, statuses ...int) map[string]*huma.Response {
	out := make(map[string]*huma.Response, len(statuses))
	for _, code := range statuses {
		r := &huma.Response{Description: http.StatusText(code), Content: map[string]*huma.MediaType{
			MimeHTML: {Schema: &huma.Schema{Type: huma.TypeString, Description: "An HTML page"}}}}
		if code == http.StatusUnprocessableEntity {
			r.Content[MimeProblem] = &huma.MediaType{Schema: ProblemSchema(api)}
		}
		out[strconv.Itoa(code)] = r
	}
	return out
}
