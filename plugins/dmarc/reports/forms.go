package reports

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// uploadFormIn is the section's upload form: the API's upload, answered
// with the section.
type uploadFormIn struct {
	Tenant      sdk.TenantID `query:"tenant_id" doc:"The page's tenant, which the report is for; without it the form's tenant_id field names the tenant, or the caller's only tenant is taken"`
	From        time.Time    `query:"from" timeFormat:"2006-01-02" doc:"The first day the section shows after the upload; default 29 days before to"`
	To          time.Time    `query:"to" timeFormat:"2006-01-02" doc:"The last day the section shows after the upload; default today (UTC)"`
	ContentType string       `header:"Content-Type" doc:"multipart/form-data with its boundary"`
	RawBody     []byte
}

// detailIn is a report of the section's list.
type detailIn struct {
	Tenant sdk.TenantID `query:"tenant_id" doc:"The page's tenant; without it, any tenant the caller may see"`
	ID     int64        `path:"id" minimum:"1"`
}

// sectionHTML is the section, or a report of it, as a route answers it.
type sectionHTML struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

func htmlOf(s string) *sectionHTML {
	return &sectionHTML{ContentType: "text/html; charset=utf-8", Body: []byte(s)}
}

// FormRoutes are the routes of the section's upload form and of a listed
// report's records. The form's requests carry the session's CSRF token as
// every htmx request of the host's pages does.
func (h *Handlers) FormRoutes() []sdk.Route {
	html := map[string]*huma.Response{"200": {Description: "The DMARC page's report section, saying what became of the file: stored, a duplicate, or refused and why",
		Content: map[string]*huma.MediaType{"text/html": {Schema: &huma.Schema{Type: huma.TypeString}}}}}
	upload := sdk.Op{ID: "dmarc-reports-form-upload", Tags: []string{tag}, Summary: "Upload a DMARC aggregate report from the DMARC page",
		Description: "Passes the form to POST " + reportsPath + " in this process, so the file meets its checks, limits and audit. " +
			"A refused file (422, 413) is answered as the section with the reasons, since htmx swaps no error answer; a tenant the caller may not see is 403, " +
			"and a range of days the section cannot show (to before from, longer than 366 days) is 422 before the file is read.",
		Responses: html, RequestBody: &huma.RequestBody{Required: true, Description: "The form", Content: map[string]*huma.MediaType{
			"multipart/form-data": uploadBody().Content["multipart/form-data"]}}}
	detail := sdk.Op{ID: "dmarc-reports-form-detail", Tags: []string{tag}, Summary: "A DMARC aggregate report with its records, for the DMARC page",
		Description: "What GET " + reportsPath + "/{id} answers, as HTML: the report and each record's source, messages, disposition, aligned DKIM and SPF results and header_from. " +
			"A report of a tenant the caller may not see, or of another tenant than tenant_id, is 404.",
		Errors: []int{http.StatusNotFound}, Responses: map[string]*huma.Response{"200": {Description: "The report with its records",
			Content: map[string]*huma.MediaType{"text/html": {Schema: &huma.Schema{Type: huma.TypeString}}}}}}
	return []sdk.Route{sdk.Post(UploadFormPath, upload, h.uploadForm), sdk.Get(DetailPath, detail, h.reportDetail)}
}

func (h *Handlers) uploadForm(ctx context.Context, in *uploadFormIn) (*sectionHTML, error) {
	v := sectionView{tenants: sdk.PrincipalFrom(ctx).TenantIDs, picked: string(in.Tenant)}
	if v.picked != "" {
		v.tenants = []string{v.picked}
	}
	var err error
	if v.from, v.to, err = h.dayRange(in.From, in.To); err != nil {
		return nil, err
	}
	var o outcome
	out, err := h.upload(ctx, &uploadIn{Tenant: in.Tenant, ContentType: in.ContentType, RawBody: in.RawBody})
	var p *sdk.Problem
	switch {
	case err == nil:
		o.result = &out.Body
	case errors.As(err, &p) && p.Status != http.StatusForbidden && p.Status < http.StatusInternalServerError:
		o.refused = refusal(p)
	default:
		return nil, err
	}
	html, err := h.section(ctx, v, o)
	if err != nil {
		return nil, err
	}
	return htmlOf(string(html)), nil
}

func (h *Handlers) reportDetail(ctx context.Context, in *detailIn) (*sectionHTML, error) {
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	if in.Tenant != "" {
		tenants = []string{string(in.Tenant)}
	}
	d, err := h.detail(ctx, tenants, in.ID)
	if err != nil {
		return nil, err
	}
	return htmlOf(string(detailView(d))), nil
}
