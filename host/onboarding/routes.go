package onboarding

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk"
)

var errNoSuchTenant = huma.Error404NotFound("no tenant with that id")

// statusCheckTimeout bounds the live delegation check of the status route,
// so a slow cloud delays the answer by seconds, not by the SDK's retries.
const statusCheckTimeout = 5 * time.Second

// htmlPage is an operation answering a server-rendered page.
type htmlPage struct {
	Status      int
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// rawJSON is an operation answering a JSON document it rendered itself.
type rawJSON struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

type templateForm struct {
	Body *struct {
		OrgName string `json:"org_name,omitempty" doc:"Customer organisation shown in the offer name; at most 100 characters"`
	} `contentType:"application/x-www-form-urlencoded"`
}

// verifyFields are the verification form's fields. The page's variant
// declares none required, so a missing field is shown on the page rather
// than answered with a problem document a browser would display raw.
type verifyFields struct {
	TenantName     string `json:"tenant_name,omitempty" doc:"Name Steward shows for the tenant; trimmed, 1 to 200 characters"`
	TenantID       string `json:"tenant_id,omitempty" doc:"The customer's cloud directory tenant id (a GUID), not an internal tenant id"`
	SubscriptionID string `json:"subscription_id,omitempty" doc:"The delegated subscription's id (a GUID)"`
	Description    string `json:"description,omitempty" doc:"Optional; at most 2000 characters"`
}

func (f verifyFields) request() Request {
	return Request{TenantName: f.TenantName, DirectoryTenantID: f.TenantID, SubscriptionID: f.SubscriptionID, Description: f.Description}
}

// verifyPageInput's form is optional too: a browser posting nothing gets
// the page naming the missing fields.
type verifyPageInput struct {
	Body *verifyFields `contentType:"application/x-www-form-urlencoded"`
}

type verifyAPIInput struct {
	Body struct {
		TenantName     string `json:"tenant_name" doc:"Name Steward shows for the tenant; trimmed, 1 to 200 characters"`
		TenantID       string `json:"tenant_id" doc:"The customer's cloud directory tenant id (a GUID), not an internal tenant id"`
		SubscriptionID string `json:"subscription_id" doc:"The delegated subscription's id (a GUID)"`
		Description    string `json:"description,omitempty" doc:"Optional; at most 2000 characters"`
	} `contentType:"application/x-www-form-urlencoded"`
}

type verifyResult struct {
	Success bool            `json:"success"`
	Tenant  *tenancy.Tenant `json:"tenant"`
	Checks  []Check         `json:"checks"`
	Error   *string         `json:"error"`
}

// TransformSchema lets tenant be null, as it is when nothing was created;
// huma's nullable tag does not apply to a referenced schema.
func (verifyResult) TransformSchema(_ huma.Registry, sch *huma.Schema) *huma.Schema {
	if t := sch.Properties["tenant"]; t != nil && t.Ref != "" {
		sch.Properties["tenant"] = &huma.Schema{Description: "The tenant created; null when none was",
			OneOf: []*huma.Schema{t, {Type: "null"}}}
	}
	return sch
}

type verifyAPIOutput struct {
	Status int
	Body   verifyResult
}

type delegationStatus struct {
	Reachable bool      `json:"reachable"`
	CheckedAt time.Time `json:"checked_at"`
	Detail    string    `json:"detail"`
}

type onboardingStatus struct {
	TenantID          string           `json:"tenant_id"`
	Name              string           `json:"name"`
	DirectoryTenantID string           `json:"directory_tenant_id"`
	SubscriptionID    string           `json:"subscription_id"`
	UseDelegation     bool             `json:"use_delegation"`
	IsActive          bool             `json:"is_active"`
	CreatedAt         time.Time        `json:"created_at"`
	Delegation        delegationStatus `json:"delegation"`
}

// Routes serve onboarding: the pages and JSON routes through which a
// customer delegates a subscription to Steward and registers its tenant,
// and a tenant's onboarding status.
type Routes struct {
	Tenancy *tenancy.Store
	// Cloud is the host's own cloud clients, which check delegations; nil
	// leaves onboarding unable to verify (it answers 503).
	Cloud *cloud.Clients
	// ManagingTenantID is the directory tenant Steward signs in to, the
	// one customers delegate their subscriptions to.
	ManagingTenantID string
	Audit            *audit.Recorder
}

// Register adds the onboarding operations to a.
func (r Routes) Register(a huma.API) {
	// A nil *cloud.Clients must stay a nil interface, or the verifier
	// would call through it instead of reporting the cloud missing.
	var c Cloud
	if r.Cloud != nil {
		c = r.Cloud
	}
	v := &Verifier{Cloud: c, Tenants: r.Tenancy, ManagingTenantID: r.ManagingTenantID}
	tags := []string{"onboarding"}

	api.Get(a, "/onboarding/", sdk.Op{ID: "onboarding-page", Tags: tags, Auth: sdk.AuthNone,
		Responses: api.HTMLResponses(a, http.StatusOK),
		Summary:   "Onboarding landing page", Description: "How to delegate a subscription to Steward through Azure Lighthouse, with the forms that generate the template and verify the delegation."},
		func(context.Context, *struct{}) (*htmlPage, error) {
			return renderPage(http.StatusOK, "landing", pageData{})
		})

	api.Post(a, "/onboarding/generate-template", sdk.Op{ID: "onboarding-generate-template", Tags: tags, Auth: sdk.AuthNone,
		Responses:   api.HTMLResponses(a, http.StatusOK, http.StatusUnprocessableEntity),
		Summary:     "Deployment template and instructions, as a page",
		Description: "Optional form field org_name (at most 100 characters, no control characters). An invalid name answers 422 with the page showing why."},
		func(ctx context.Context, in *templateForm) (*htmlPage, error) {
			org := ""
			if in.Body != nil {
				org = in.Body.OrgName
			}
			org, err := CleanOrgName(org)
			if err != nil {
				return renderPage(http.StatusUnprocessableEntity, "landing", pageData{Errors: []FieldError{{Field: "org_name", Message: err.Error()}}})
			}
			b, err := NewTemplate(org, r.ManagingTenantID).JSON()
			if err != nil {
				return nil, err
			}
			r.recordTemplate(ctx, org, "html")
			return renderPage(http.StatusOK, "template", pageData{OrgName: org, Template: string(b), ManagingTenantID: r.ManagingTenantID})
		})

	api.Get(a, "/onboarding/api/template", sdk.Op{ID: "onboarding-template", Tags: tags, Auth: sdk.AuthNone,
		Summary:     "Deployment template",
		Description: "The Azure Lighthouse subscription deployment template: a registration definition granting Steward's managing tenant Reader, Cost Management Reader and Security Reader, and its assignment.",
		Responses: map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: huma.TypeObject,
			Description: "An Azure Resource Manager subscription deployment template", Required: []string{"$schema", "contentVersion", "parameters", "resources"},
			Properties: map[string]*huma.Schema{"$schema": {Type: huma.TypeString}, "contentVersion": {Type: huma.TypeString},
				"parameters": {Type: huma.TypeObject}, "resources": {Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeObject}}}}}}}}},
		func(ctx context.Context, in *struct {
			OrgName string `query:"org_name" doc:"Customer organisation shown in the offer name; at most 100 characters"`
		}) (*rawJSON, error) {
			org, err := CleanOrgName(in.OrgName)
			if err != nil {
				return nil, huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "query.org_name", Message: err.Error(), Value: in.OrgName})
			}
			b, err := NewTemplate(org, r.ManagingTenantID).JSON()
			if err != nil {
				return nil, err
			}
			r.recordTemplate(ctx, org, "json")
			return &rawJSON{ContentType: "application/json", Body: b}, nil
		})

	api.Post(a, "/onboarding/verify", sdk.Op{ID: "onboarding-verify-page", Tags: tags, Auth: sdk.AuthNone,
		Responses: api.HTMLResponses(a, http.StatusOK, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable),
		Summary:   "Verify a delegation and create the tenant, as a page",
		Description: "Same checks and outcomes as POST /onboarding/api/verify, shown as a page: 200 when the tenant was created, 409 when its directory tenant is already managed, " +
			"422 for invalid input or a failed check, 503 when the cloud could not be asked."},
		func(ctx context.Context, in *verifyPageInput) (*htmlPage, error) {
			var form verifyFields
			if in.Body != nil {
				form = *in.Body
			}
			req, errs := form.request().Clean()
			if len(errs) > 0 {
				r.recordVerifyFailure(ctx, req, invalidReason(errs), nil)
				return renderPage(http.StatusUnprocessableEntity, "landing", pageData{Errors: errs, Form: form})
			}
			res, err := r.verify(ctx, v, req)
			if err != nil {
				return nil, err
			}
			status := verifyStatus(res.Outcome)
			if status == http.StatusCreated {
				status = http.StatusOK
			}
			return renderPage(status, "result", pageData{Result: &res, Form: form})
		})

	api.Post(a, "/onboarding/api/verify", sdk.Op{ID: "onboarding-verify", Tags: tags, Auth: sdk.AuthNone,
		Summary: "Verify a delegation and create the tenant",
		Description: "Form fields tenant_name, tenant_id (the customer's cloud directory tenant id), subscription_id and optional description. Checks through the cloud that Steward's managing tenant reaches " +
			"the subscription by delegation and that it belongs to that directory tenant, then creates the tenant with use_delegation true (201). A failed check answers 422 and a directory tenant " +
			"already managed 409, each with the checks and the reason and with nothing created; 503 when the cloud could not be asked. Invalid input is a 422 problem naming the field. " +
			"Only an admin is shown the checks and the reason of a verification that created nothing: any other caller gets 422 with one generic reason for every failed check and for an already managed tenant, " +
			"so the route tells no one which directory owns a subscription or whether it is delegated. Anonymous verifications draw on the sign-in rate limit.",
		Status:    http.StatusCreated,
		Responses: verifyResponses(a)},
		func(ctx context.Context, in *verifyAPIInput) (*verifyAPIOutput, error) {
			req, errs := verifyFields(in.Body).request().Clean()
			if len(errs) > 0 {
				r.recordVerifyFailure(ctx, req, invalidReason(errs), nil)
				details := make([]error, 0, len(errs))
				for _, e := range errs {
					details = append(details, &huma.ErrorDetail{Location: "body." + e.Field, Message: e.Message})
				}
				return nil, huma.Error422UnprocessableEntity("validation failed", details...)
			}
			res, err := r.verify(ctx, v, req)
			if err != nil {
				return nil, err
			}
			out := verifyResult{Success: res.Outcome == Created, Tenant: res.Tenant, Checks: res.Checks}
			if res.Reason != "" {
				out.Error = &res.Reason
			}
			return &verifyAPIOutput{Status: verifyStatus(res.Outcome), Body: out}, nil
		})

	api.Get(a, "/onboarding/status/{tenant_id}", sdk.Op{ID: "onboarding-status", Tags: tags, Auth: sdk.AuthNone,
		Summary: "A tenant's onboarding status",
		Description: "The tenant record and a live check that its subscription is still reachable by delegation, for a signed-in caller who may see the tenant. " +
			"Any other caller, anonymous included, gets the 404 of an unknown tenant.",
		Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *struct {
			TenantID string `path:"tenant_id" format:"uuid" doc:"Internal tenant id, not the cloud directory tenant id"`
		}) (*onboardingStatus, error) {
			// A tenant the caller may not see answers as an unknown one,
			// before any lookup, so the answer tells nothing of whether the
			// id exists and an anonymous request never reaches the cloud.
			p := api.PrincipalFrom(ctx)
			if p == nil || !p.CanSeeTenant(in.TenantID) {
				return nil, errNoSuchTenant
			}
			t, err := r.Tenancy.Tenant(ctx, in.TenantID)
			if errors.Is(err, tenancy.ErrNotFound) {
				return nil, errNoSuchTenant
			}
			if err != nil {
				return nil, err
			}
			return &onboardingStatus{
				TenantID: t.ID, Name: t.Name, DirectoryTenantID: t.DirectoryTenantID, SubscriptionID: t.SubscriptionID,
				UseDelegation: t.UseDelegation, IsActive: t.IsActive, CreatedAt: t.CreatedAt, Delegation: r.delegationOf(ctx, t),
			}, nil
		})
}

// verifyResponses declares the JSON verification's outcomes: each answers
// the verification's report, and 422 and 503 may also be a problem document
// (invalid input; a failure before the cloud was asked).
func verifyResponses(a huma.API) map[string]*huma.Response {
	report := api.SchemaOf(a, verifyResult{})
	out := map[string]*huma.Response{}
	for _, code := range []int{http.StatusCreated, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable} {
		r := &huma.Response{Description: http.StatusText(code), Content: map[string]*huma.MediaType{"application/json": {Schema: report}}}
		if code >= 422 {
			r.Content[api.MimeProblem] = &huma.MediaType{Schema: api.ProblemSchema(a)}
		}
		out[strconv.Itoa(code)] = r
	}
	return out
}

// verify runs the verification and audits its outcome. Only an admin is
// told why a verification failed; the audit log keeps the reason.
func (r Routes) verify(ctx context.Context, v *Verifier, req Request) (Result, error) {
	res, err := v.Verify(ctx, req)
	if err != nil {
		return res, err
	}
	if res.Outcome != Created {
		r.recordVerifyFailure(ctx, req, res.Reason, res.Checks)
		if p := api.PrincipalFrom(ctx); p == nil || !p.IsAdmin {
			res = res.Redacted()
		}
		return res, nil
	}
	t := res.Tenant
	details := map[string]any{"directory_tenant_id": t.DirectoryTenantID, "subscription_id": t.SubscriptionID}
	r.Audit.Record(ctx, audit.Entry{Action: "tenant.create.success", Status: audit.StatusSuccess, TenantID: &t.ID, ResourceType: "tenant", ResourceID: t.ID,
		Details: map[string]any{"name": t.Name, "directory_tenant_id": t.DirectoryTenantID, "use_delegation": true, "source": "onboarding"}})
	r.Audit.Record(ctx, audit.Entry{Action: "onboarding.verify.success", Status: audit.StatusSuccess, TenantID: &t.ID, ResourceType: "tenant", ResourceID: t.ID, Details: details})
	return res, nil
}

func (r Routes) recordVerifyFailure(ctx context.Context, req Request, reason string, checks []Check) {
	details := map[string]any{"reason": reason, "directory_tenant_id": req.DirectoryTenantID, "subscription_id": req.SubscriptionID}
	if checks != nil {
		details["checks"] = checks
	}
	r.Audit.Record(ctx, audit.Entry{Action: "onboarding.verify.failure", Status: audit.StatusFailure, ResourceType: "tenant", Details: details})
}

func (r Routes) recordTemplate(ctx context.Context, org, format string) {
	r.Audit.Record(ctx, audit.Entry{Action: "onboarding.template.success", Status: audit.StatusSuccess, ResourceType: "onboarding_template",
		Details: map[string]any{"org_name": org, "format": format}})
}

// invalidReason names the fields a rejected form got wrong, for the audit.
func invalidReason(errs []FieldError) string {
	fields := make([]string, 0, len(errs))
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	return "invalid input: " + strings.Join(fields, ", ")
}

// verifyStatus is the JSON route's status for an outcome.
func verifyStatus(o Outcome) int {
	switch o {
	case Created:
		return http.StatusCreated
	case Duplicate:
		return http.StatusConflict
	case Unavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusUnprocessableEntity
	}
}

// delegationOf checks live whether Steward still reaches the tenant's
// subscription.
func (r Routes) delegationOf(ctx context.Context, t tenancy.Tenant) delegationStatus {
	out := delegationStatus{CheckedAt: time.Now().UTC()}
	switch {
	case r.Cloud == nil:
		out.Detail = "no cloud is configured on this Steward host"
		return out
	case t.SubscriptionID == "":
		out.Detail = "the tenant has no subscription recorded"
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, statusCheckTimeout)
	defer cancel()
	if err := r.Cloud.CheckDelegation(ctx, t.SubscriptionID); err != nil {
		out.Detail = err.Error()
		return out
	}
	out.Reachable = true
	out.Detail = "subscription " + t.SubscriptionID + " is reachable"
	return out
}

// pageData is what the onboarding pages show.
type pageData struct {
	OrgName          string
	Template         string
	ManagingTenantID string
	Errors           []FieldError
	// Form refills the verification form after a failure.
	Form   verifyFields
	Result *Result
}

func (d pageData) Created() bool { return d.Result != nil && d.Result.Outcome == Created }

func renderPage(status int, name string, d pageData) (*htmlPage, error) {
	var buf bytes.Buffer
	if err := onboardingPages.ExecuteTemplate(&buf, name, d); err != nil {
		return nil, err
	}
	return &htmlPage{Status: status, ContentType: "text/html; charset=utf-8", Body: buf.Bytes()}, nil
}

// pages are the onboarding pages' templates. They need no script, style
// sheet or image: the host's content security policy allows only its own
// origin, and the pages must work for a customer's administrator on any
// browser.
//
//go:embed pages/*.html
var pageFiles embed.FS

var onboardingPages = template.Must(template.ParseFS(pageFiles, "pages/*.html"))
