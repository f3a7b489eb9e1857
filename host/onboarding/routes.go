package onboarding

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
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
	SubscriptionID string `json:"subscription_id,omitempty" doc:"The subscription's id (a GUID): delegated through Azure Lighthouse, or readable by Steward's application in the directory"`
	Description    string `json:"description,omitempty" doc:"Optional; at most 2000 characters"`
	UseDelegation  string `json:"use_delegation,omitempty" enum:"true,false" default:"true" doc:"true (the default): Steward reaches the subscription through Azure Lighthouse delegation. false: Steward's application reads the directory with its own token there, after the directory's administrator granted it admin consent (GET /onboarding/api/consent)"`
}

func (f verifyFields) request() Request {
	return Request{TenantName: f.TenantName, DirectoryTenantID: f.TenantID, SubscriptionID: f.SubscriptionID, Description: f.Description,
		Direct: f.UseDelegation == "false"}
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
		SubscriptionID string `json:"subscription_id" doc:"The subscription's id (a GUID): delegated through Azure Lighthouse, or readable by Steward's application in the directory"`
		Description    string `json:"description,omitempty" doc:"Optional; at most 2000 characters"`
		UseDelegation  string `json:"use_delegation,omitempty" enum:"true,false" default:"true" doc:"true (the default): Steward reaches the subscription through Azure Lighthouse delegation. false: Steward's application reads the directory with its own token there, after the directory's administrator granted it admin consent (GET /onboarding/api/consent)"`
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

// accessStatus is how a tenant registered without delegation is read now,
// as every sync resolves it.
type accessStatus struct {
	Consented     bool      `json:"consented" doc:"The tenant's directory issues Steward's application a token: its admin consent is in place"`
	Readable      bool      `json:"readable" doc:"Azure Resource Manager lets that token read the tenant's subscriptions"`
	Subscriptions []string  `json:"subscriptions" doc:"The subscriptions Steward reads; empty when it reads none"`
	CheckedAt     time.Time `json:"checked_at"`
	Detail        string    `json:"detail" doc:"What was found, with the fix when access is missing"`
}

type onboardingStatus struct {
	TenantID          string            `json:"tenant_id"`
	Name              string            `json:"name"`
	DirectoryTenantID string            `json:"directory_tenant_id"`
	SubscriptionID    string            `json:"subscription_id"`
	UseDelegation     bool              `json:"use_delegation"`
	IsActive          bool              `json:"is_active"`
	CreatedAt         time.Time         `json:"created_at"`
	Delegation        *delegationStatus `json:"delegation,omitempty" doc:"A delegated tenant's live delegation check; absent for a tenant registered without delegation"`
	Access            *accessStatus     `json:"access,omitempty" doc:"A tenant registered without delegation: its consent and readability, live; absent for a delegated tenant"`
}

// consentQuery names the directory whose administrator is to consent.
type consentQuery struct {
	TenantID string `query:"tenant_id" doc:"The customer's cloud directory tenant id (a GUID), not an internal tenant id"`
}

// consentLink is where a directory's administrator grants Steward's
// application admin consent.
type consentLink struct {
	TenantID    string `json:"tenant_id" doc:"The directory tenant id the consent is for"`
	ConsentURL  string `json:"consent_url" doc:"Entra ID's admin consent URL for the directory: an administrator of the directory opens it in a browser"`
	RedirectURI string `json:"redirect_uri" doc:"Where Entra ID sends the administrator back: GET /onboarding/consent/callback"`
}

// consentPage sends the browser on to Entra ID (Location, no body), or
// answers a page saying why not.
type consentPage struct {
	Status      int
	Location    string `header:"Location"`
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// consentCallback is Entra ID's answer to an admin consent request.
type consentCallback struct {
	AdminConsent     string `query:"admin_consent" doc:"True when the administrator granted consent"`
	Tenant           string `query:"tenant" doc:"The directory tenant id consent was given in"`
	Error            string `query:"error" doc:"Entra ID's error code when consent was not granted, e.g. access_denied"`
	ErrorDescription string `query:"error_description" doc:"Entra ID's description of the error, starting with its AADSTS code"`
	State            string `query:"state" doc:"Accepted and ignored: the callback changes nothing, and the verification that follows checks the consent itself"`
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
	// ConsentRedirectURI is this host's GET /onboarding/consent/callback as
	// a browser reaches it; it must be a redirect URI of Steward's
	// application.
	ConsentRedirectURI string
	Audit              *audit.Recorder
}

// Register adds the onboarding operations to a.
func (r Routes) Register(a huma.API) {
	// A nil *cloud.Clients must stay a nil interface, or the verifier
	// would call through it instead of reporting the cloud missing.
	var c Cloud
	if r.Cloud != nil {
		c = r.Cloud
	}
	v := &Verifier{Cloud: c, Tenants: r.Tenancy, ManagingTenantID: r.ManagingTenantID, ConsentRedirectURI: r.ConsentRedirectURI}
	tags := []string{"onboarding"}

	api.Get(a, "/onboarding/", sdk.Op{ID: "onboarding-page", Tags: tags, Auth: sdk.AuthNone,
		Responses: api.HTMLResponses(a, http.StatusOK),
		Summary:   "Onboarding landing page",
		Description: "How to bring a tenant under Steward: by delegating a subscription through Azure Lighthouse (the forms that generate the template and verify the delegation), " +
			"or without delegation, by granting Steward's application admin consent in the directory (the form that starts it); either way the directory grants the consent Microsoft Graph needs."},
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

	api.Get(a, "/onboarding/consent", sdk.Op{ID: "onboarding-consent-page", Tags: tags, Auth: sdk.AuthNone,
		Summary: "Start admin consent in a directory, from a browser",
		Description: "Sends the browser (303) to Entra ID's admin consent URL of the directory named by query tenant_id, where an administrator of the directory grants Steward's application " +
			"the permissions it asks for; Entra ID then sends the browser to GET /onboarding/consent/callback. A missing or malformed tenant_id answers 422 with the landing page showing why; " +
			"503 when this host has no cloud or no application (client) id to consent to.",
		Responses: consentPageResponses(a)},
		func(_ context.Context, in *consentQuery) (*consentPage, error) {
			dir, ok := cleanGUID(in.TenantID)
			status, msg := http.StatusUnprocessableEntity, msgDirectoryID
			if ok {
				u, err := r.consentURL(dir)
				if err == nil {
					return &consentPage{Status: http.StatusSeeOther, Location: u}, nil
				}
				status, msg = http.StatusServiceUnavailable, err.Error()
			}
			page, err := renderPage(status, "landing", pageData{Errors: []FieldError{{Field: "tenant_id", Message: msg}}, ConsentTenantID: in.TenantID})
			if err != nil {
				return nil, err
			}
			return &consentPage{Status: page.Status, ContentType: page.ContentType, Body: page.Body}, nil
		})

	api.Get(a, "/onboarding/api/consent", sdk.Op{ID: "onboarding-consent", Tags: tags, Auth: sdk.AuthNone,
		Summary: "The admin consent URL of a directory",
		Description: "Entra ID's admin consent URL for the directory named by query tenant_id (required, a GUID), on the identity provider Steward is configured with, and the redirect URI it " +
			"sends the administrator back to. Consent is the first step of onboarding without delegation, and gives a delegated tenant the Microsoft Graph access Lighthouse does not. " +
			"422 for a missing or malformed tenant_id; 503 when this host has no cloud or no application (client) id to consent to.",
		Errors: []int{http.StatusServiceUnavailable}},
		func(_ context.Context, in *consentQuery) (*consentLink, error) {
			dir, ok := cleanGUID(in.TenantID)
			if !ok {
				return nil, huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "query.tenant_id", Message: msgDirectoryID})
			}
			u, err := r.consentURL(dir)
			if err != nil {
				return nil, huma.Error503ServiceUnavailable(err.Error())
			}
			return &consentLink{TenantID: dir, ConsentURL: u, RedirectURI: r.ConsentRedirectURI}, nil
		})

	api.Get(a, "/onboarding/consent/callback", sdk.Op{ID: "onboarding-consent-callback", Tags: tags, Auth: sdk.AuthNone,
		Summary: "Where Entra ID sends an administrator back after admin consent",
		Description: "Entra ID's answer to an admin consent request, as a page. admin_consent=True with the directory as tenant answers 200 with the form that verifies the subscription " +
			"without delegation, the directory filled in. error and error_description (the administrator declined, or may not consent for the organisation) answer 422 with Entra ID's words " +
			"and the way to start again; so does a request that is neither. The callback records nothing: the verification checks the consent itself.",
		Responses: api.HTMLResponses(a, http.StatusOK, http.StatusUnprocessableEntity)},
		func(_ context.Context, in *consentCallback) (*htmlPage, error) {
			d := consentPageData(in)
			status := http.StatusOK
			if !d.Consent.Granted {
				status = http.StatusUnprocessableEntity
			}
			return renderPage(status, "consented", d)
		})

	api.Post(a, "/onboarding/verify", sdk.Op{ID: "onboarding-verify-page", Tags: tags, Auth: sdk.AuthNone,
		Responses: api.HTMLResponses(a, http.StatusOK, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable),
		Summary:   "Verify access to a tenant and create it, as a page",
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
		Summary: "Verify access to a tenant and create it",
		Description: "Form fields tenant_name, tenant_id (the customer's cloud directory tenant id), subscription_id, optional description and optional use_delegation (default true). " +
			"With delegation, checks through the cloud that Steward's managing tenant reaches the subscription through Azure Lighthouse and that it belongs to that directory tenant; " +
			"without (use_delegation=false, after admin consent: GET /onboarding/api/consent), that the directory issues Steward's application a token, that Resource Manager lets that token " +
			"read the subscription and that it belongs to the directory. Either way Microsoft Graph must answer the application in the directory, which needs the directory's admin consent " +
			"(Lighthouse does not reach Entra ID). Then the tenant is created with use_delegation as asked (201). A failed check answers 422 and a directory tenant already managed 409, " +
			"each with the checks run, the one that failed last, and the reason, with nothing created; 503 when the cloud could not be asked. Invalid input is a 422 problem naming the field. " +
			"An admin is shown each check's detail and the reason in full, with the cloud's words and the admin consent URL; any other caller, anonymous included, gets each check's name and " +
			"whether it passed, with a fixed detail and reason per check that name no subscription, directory or tenant and repeat none of the cloud's words. Anonymous verifications draw on the sign-in rate limit.",
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
		Description: "The tenant record and a live check of Steward's access to it, for a signed-in caller who may see the tenant: for a delegated tenant (delegation), that its " +
			"subscription is still reachable through Azure Lighthouse; for one registered without delegation (access), whether its directory issues Steward's application a token (consent) " +
			"and Resource Manager lets it read the tenant's subscriptions, as every sync resolves it. Any other caller, anonymous included, gets the 404 of an unknown tenant.",
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
			out := &onboardingStatus{
				TenantID: t.ID, Name: t.Name, DirectoryTenantID: t.DirectoryTenantID, SubscriptionID: t.SubscriptionID,
				UseDelegation: t.UseDelegation, IsActive: t.IsActive, CreatedAt: t.CreatedAt,
			}
			if t.UseDelegation {
				out.Delegation = r.delegationOf(ctx, t)
			} else {
				out.Access = r.accessOf(ctx, t)
			}
			return out, nil
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
	details := map[string]any{"directory_tenant_id": t.DirectoryTenantID, "subscription_id": t.SubscriptionID, "use_delegation": t.UseDelegation}
	r.Audit.Record(ctx, audit.Entry{Action: "tenant.create.success", Status: audit.StatusSuccess, TenantID: &t.ID, ResourceType: "tenant", ResourceID: t.ID,
		Details: map[string]any{"name": t.Name, "directory_tenant_id": t.DirectoryTenantID, "use_delegation": t.UseDelegation, "source": "onboarding"}})
	r.Audit.Record(ctx, audit.Entry{Action: "onboarding.verify.success", Status: audit.StatusSuccess, TenantID: &t.ID, ResourceType: "tenant", ResourceID: t.ID, Details: details})
	return res, nil
}

func (r Routes) recordVerifyFailure(ctx context.Context, req Request, reason string, checks []Check) {
	details := map[string]any{"reason": reason, "directory_tenant_id": req.DirectoryTenantID, "subscription_id": req.SubscriptionID, "use_delegation": !req.Direct}
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
func (r Routes) delegationOf(ctx context.Context, t tenancy.Tenant) *delegationStatus {
	out := &delegationStatus{CheckedAt: time.Now().UTC()}
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

// accessOf resolves live how a tenant registered without delegation is
// read, as every sync does: whether its directory issues Steward's
// application a token, and which subscriptions that token reads.
func (r Routes) accessOf(ctx context.Context, t tenancy.Tenant) *accessStatus {
	out := &accessStatus{CheckedAt: time.Now().UTC(), Subscriptions: []string{}}
	if r.Cloud == nil {
		out.Detail = "no cloud is configured on this Steward host"
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, statusCheckTimeout)
	defer cancel()
	a := r.Cloud.Access(ctx, []cloud.Tenant{{ID: t.ID, Name: t.Name, DirectoryTenantID: t.DirectoryTenantID, SubscriptionID: t.SubscriptionID}})[0]
	out.Consented = !refusedToken(a.Err)
	if a.Err != nil {
		out.Detail = a.Err.Error()
		return out
	}
	out.Readable, out.Subscriptions = true, a.Subscriptions
	out.Detail = fmt.Sprintf("Steward's application reads %d subscription(s) with its token of directory %s", len(a.Subscriptions), t.DirectoryTenantID)
	return out
}

// msgDirectoryID says what a directory tenant id looks like.
const msgDirectoryID = "tenant_id must be the directory tenant id, a GUID such as 00000000-0000-0000-0000-000000000000"

// consentURL is the directory's admin consent URL, sending the
// administrator back to this host's callback.
func (r Routes) consentURL(dir string) (string, error) {
	if r.Cloud == nil {
		return "", errors.New("no cloud is configured on this Steward host, so no directory can consent to it")
	}
	return r.Cloud.AdminConsentURL(dir, r.ConsentRedirectURI)
}

// consentResult is the admin consent answer a callback page shows.
type consentResult struct {
	Granted bool
	// Directory is the directory consent was given in, when granted.
	Directory string
	// Error and Description are Entra ID's, when it reported one.
	Error, Description string
}

// consentPageData reads Entra ID's answer: granted only with
// admin_consent=True and a directory tenant id.
func consentPageData(in *consentCallback) pageData {
	var res consentResult
	dir, ok := cleanGUID(in.Tenant)
	switch {
	case in.Error != "":
		res.Error, res.Description = in.Error, in.ErrorDescription
	case strings.EqualFold(in.AdminConsent, "true") && ok:
		res.Granted, res.Directory = true, dir
	default:
		res.Error, res.Description = "invalid_request", "this is not an admin consent answer: it carries neither admin_consent=True with the directory tenant id nor an error"
	}
	d := pageData{Consent: &res}
	if res.Granted {
		d.Form = verifyFields{TenantID: dir, UseDelegation: "false"}
	}
	return d
}

// consentPageResponses declares the consent page's outcomes: the redirect
// to Entra ID, or the landing page saying why not.
func consentPageResponses(a huma.API) map[string]*huma.Response {
	out := api.HTMLResponses(a, http.StatusUnprocessableEntity, http.StatusServiceUnavailable)
	out[strconv.Itoa(http.StatusSeeOther)] = &huma.Response{Description: "The browser is sent to Entra ID's admin consent URL of the directory",
		Headers: map[string]*huma.Param{"Location": {Schema: &huma.Schema{Type: huma.TypeString, Format: "uri"}}}}
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
	// Consent is the admin consent answer the callback page shows.
	Consent *consentResult
	// ConsentTenantID refills the consent form.
	ConsentTenantID string
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
