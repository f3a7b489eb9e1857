package views

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// api serves the plugin's own API routes in this process for the page's
// form routes, so that a form meets the API's validation and audit exactly
// as a call of the API would.
type api struct {
	routes func() []sdk.Route

	once    sync.Once
	handler http.Handler
}

// answer is an API route's answer.
type answer struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *answer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(b)
}

// problem is the answer's problem; an answer that is none gives its
// status alone.
func (a *answer) problem() *sdk.Problem {
	var p sdk.Problem
	if json.Unmarshal(a.body.Bytes(), &p) != nil || p.Status == 0 {
		return &sdk.Problem{Title: http.StatusText(a.status), Status: a.status}
	}
	return &p
}

// call serves a request of the API as the caller of ctx with only the
// tenant in scope: the host checked the form route's tenant, not the
// members of the JSON body built here, so no route may reach another of
// the caller's tenants. With no tenant the caller keeps its own, for a
// route that checks the caller's tenants against its object's itself.
func (c *api) call(ctx context.Context, tenant, method, path string, body any) (*answer, error) {
	c.once.Do(func() { c.handler = (&sdk.Plugin{Routes: c.routes()}).HTTPHandler() })
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	info := sdk.Info(ctx)
	if tenant != "" {
		info.Principal.TenantIDs = []string{tenant}
	}
	req, err := http.NewRequestWithContext(sdk.WithRequestInfo(ctx, info), method, path, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	a := &answer{header: http.Header{}}
	c.handler.ServeHTTP(a, req)
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a, nil
}

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
