package views

import (
	"html/template"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// FormTenant is the tenant a form route acts on, which the host checks.
type FormTenant struct {
	Tenant sdk.TenantID `query:"tenant_id" required:"true" doc:"The tenant the form acts on, one the caller may see"`
}

// fragment is an answer of HTML that htmx swaps in.
type fragment struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

func htmlOf(h template.HTML) *fragment {
	return &fragment{ContentType: "text/html; charset=utf-8", Body: []byte(h)}
}

func htmlResponse(desc string) *huma.Response {
	return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"text/html": {Schema: &huma.Schema{Type: huma.TypeString}}}}
}

// formBody documents a form route's body, urlencoded, with the schema of
// the struct v.
func formBody(v any) *huma.RequestBody {
	return &huma.RequestBody{Description: "The form", Required: true, Content: map[string]*huma.MediaType{
		"application/x-www-form-urlencoded": {Schema: sdk.SchemaOf(v)}}}
}
