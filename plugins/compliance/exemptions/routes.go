package exemptions

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Host is what the routes and the expiry job need of the host; *sdk.Host
// provides it.
type Host interface {
	Audit(ctx context.Context, e sdk.AuditEntry) error
}

// Handlers serves the exemption routes and runs the expiry job.
type Handlers struct {
	Store *Store
	// Frameworks are the loaded frameworks a control exemption must name
	// a control of.
	Frameworks *frameworks.Set
	Host       Host
	Logger     hclog.Logger
	// Now is the clock of records and of the expiry; nil is time.Now.
	Now func() time.Time
}

const (
	tag            = "compliance-exemptions"
	exemptionsPath = "/api/v1/compliance/exemptions"
	auditType      = "compliance_exemption"
	// ExpiryJobType names the expiry job, and its sync route
	// (POST /api/v1/sync/compliance_exemption_expiry) for an admin.
	ExpiryJobType = "compliance_exemption_expiry"
	// MaxLifetime is how far ahead of now an exemption may expire.
	MaxLifetime  = 366 * 24 * time.Hour
	maxReasonLen = 2000
	maxOwnerLen  = 254
	maxIDLen     = 1024
)

// Statuses of an exemption, as the API shows them.
const (
	StatusActive  = "active"
	StatusExpired = "expired"
)

var (
	// resourceIDRE is an ARM resource id below a subscription, without
	// spaces or control characters.
	resourceIDRE = regexp.MustCompile(`(?i)^/subscriptions/[^/\x00-\x20\x7f]+/[^\x00-\x20\x7f]+$`)
	// policyIDRE is a policy definition's ARM id, built in or custom.
	policyIDRE = regexp.MustCompile(`(?i)^(/(subscriptions|providers/microsoft\.management/managementgroups)/[^/\x00-\x20\x7f]+)?/providers/microsoft\.authorization/policydefinitions/[^/\x00-\x20\x7f]+$`)
)

func (h *Handlers) now() time.Time {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	// Microseconds, as PostgreSQL keeps them, so an exemption reads back
	// as it was written.
	return now().UTC().Truncate(time.Microsecond)
}

// View is an exemption as the API shows it.
type View struct {
	ID                 int64      `json:"id"`
	TenantID           string     `json:"tenant_id"`
	Scope              string     `json:"scope" enum:"finding,resource,policy,control"`
	ResourceID         *string    `json:"resource_id" doc:"The exempted resource's ARM id, lower case, for the finding and resource scopes; null otherwise"`
	PolicyDefinitionID *string    `json:"policy_definition_id" doc:"The exempted policy definition's ARM id, lower case, for the finding and policy scopes; null otherwise"`
	FrameworkID        *string    `json:"framework_id" doc:"The control's framework, for the control scope; null otherwise"`
	ControlID          *string    `json:"control_id" doc:"The exempted control, for the control scope; null otherwise"`
	Reason             string     `json:"reason" doc:"Plain text: markup was removed when the exemption was stored"`
	Owner              string     `json:"owner" doc:"Who answers for the exemption: an e-mail address or a name, plain text"`
	ExpiresAt          time.Time  `json:"expires_at"`
	Status             string     `json:"status" enum:"active,expired" doc:"active before expires_at, expired from then on"`
	CreatedBy          string     `json:"created_by" doc:"Id of the user (or apikey:<id>) who created the exemption"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	LapseRecordedAt    *time.Time `json:"lapse_recorded_at" doc:"When the expiry job recorded the lapse in the audit log; null until then"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewOf(e *Exemption, now time.Time) View {
	status := StatusExpired
	if e.Active(now) {
		status = StatusActive
	}
	return View{ID: e.ID, TenantID: e.TenantID, Scope: e.Scope, ResourceID: orNull(e.ResourceID), PolicyDefinitionID: orNull(e.PolicyDefinitionID),
		FrameworkID: orNull(e.FrameworkID), ControlID: orNull(e.ControlID), Reason: e.Reason, Owner: e.Owner, ExpiresAt: e.ExpiresAt,
		Status: status, CreatedBy: e.CreatedBy, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, LapseRecordedAt: e.LapseRecordedAt}
}

// ExemptionID is the path parameter naming an exemption.
type ExemptionID struct {
	ID int64 `path:"id" minimum:"1"`
}

type listIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids" doc:"Tenants whose exemptions to list (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403."`
	Scope   string        `query:"scope" enum:"finding,resource,policy,control"`
	Status  string        `query:"status" enum:"active,expired" doc:"Only exemptions active now, or only those expired"`
	Limit   int           `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset  int           `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

// Page is a page of exemptions.
type Page struct {
	Items  []View `json:"items" doc:"Newest first"`
	Total  int    `json:"total" doc:"How many exemptions match, beyond this page"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
}

type createIn struct {
	Body struct {
		TenantID           sdk.TenantID `json:"tenant_id,omitempty" required:"false" minLength:"1" doc:"The exemption's tenant, one the caller may see (403 otherwise); may be left out by a caller who sees exactly one"`
		Scope              string       `json:"scope" enum:"finding,resource,policy,control" doc:"finding: one resource under one policy definition (resource_id and policy_definition_id); resource: a resource under every policy (resource_id); policy: every resource under a policy definition (policy_definition_id); control: every resource under the policies mapped to a framework's control (framework_id and control_id)"`
		ResourceID         string       `json:"resource_id,omitempty" required:"false" maxLength:"1024" doc:"An ARM resource id (/subscriptions/…), for the finding and resource scopes; case ignored"`
		PolicyDefinitionID string       `json:"policy_definition_id,omitempty" required:"false" maxLength:"1024" doc:"A policy definition's ARM id (…/providers/Microsoft.Authorization/policyDefinitions/…), for the finding and policy scopes; case ignored"`
		FrameworkID        string       `json:"framework_id,omitempty" required:"false" maxLength:"64" doc:"A loaded framework's id, for the control scope"`
		ControlID          string       `json:"control_id,omitempty" required:"false" maxLength:"64" doc:"A control of the framework, for the control scope"`
		Reason             string       `json:"reason" maxLength:"2000" doc:"Why the findings are accepted; plain text, not empty once markup is removed"`
		Owner              string       `json:"owner" maxLength:"254" doc:"Who answers for the exemption: an e-mail address or a name; plain text on one line"`
		ExpiresAt          time.Time    `json:"expires_at" doc:"When the exemption lapses: in the future, at most 366 days ahead"`
	}
}

type patchIn struct {
	ExemptionID
	Body struct {
		Reason    *string    `json:"reason,omitempty" required:"false" maxLength:"2000" doc:"A new reason"`
		Owner     *string    `json:"owner,omitempty" required:"false" maxLength:"254" doc:"A new owner"`
		ExpiresAt *time.Time `json:"expires_at,omitempty" required:"false" doc:"A new expiry, to extend or shorten the exemption: in the future, at most 366 days ahead"`
	}
}

// Routes declares the exemption routes.
func (h *Handlers) Routes() []sdk.Route {
	tags := []string{tag}
	notFound := &huma.Response{Description: "No such exemption, or it belongs to a tenant the caller may not see"}
	return []sdk.Route{
		sdk.Get(exemptionsPath, sdk.Op{ID: "compliance-exemptions-list", Tags: tags, Summary: "Steward's exemptions of compliance findings",
			Description: "The exemptions of the caller's tenants (or of tenant_ids), newest first, one page of them: active ones and expired ones, " +
				"which are kept until deleted. These are Steward's own exemptions, apart from Azure Policy's (the Exempt compliance state)."}, h.list),
		sdk.Post(exemptionsPath, sdk.Op{ID: "compliance-exemptions-create", Tags: tags, Summary: "Exempt compliance findings",
			Description: "Creates one tenant's exemption of a finding, a resource, a policy definition or a framework's control. While active " +
				"it hides the findings it matches from GET /api/v1/compliance/findings (unless include_exempted) and counts the failing " +
				"resources it covers as exempted, not failing, in the framework detail and the control's resources; at expires_at it lapses " +
				"on its own. Audited (compliance_exemption.create.success). The reason and owner are stored without markup.",
			Status: http.StatusCreated, Errors: []int{http.StatusConflict},
			Responses: map[string]*huma.Response{"403": {Description: "The caller may not see the tenant named, or sees none"},
				"409": {Description: "An active exemption of the tenant has the same scope and target"},
				"422": {Description: "The body is invalid; errors name each bad field as body.<field>: a member the scope needs is missing or one it does not use is given, an id is malformed, the framework or control is not loaded, the reason or owner is empty, expires_at is not in the future or more than 366 days ahead"}}}, h.create),
		sdk.Get(exemptionsPath+"/{id}", sdk.Op{ID: "compliance-exemptions-get", Tags: tags, Summary: "A compliance exemption",
			Errors: []int{http.StatusNotFound}, Responses: map[string]*huma.Response{"404": notFound}}, h.get),
		sdk.Patch(exemptionsPath+"/{id}", sdk.Op{ID: "compliance-exemptions-update", Tags: tags, Summary: "Change an active exemption's reason, owner or expiry",
			Description: "Changes the members given; at least one. An expired exemption cannot be changed (409): create a new one. Audited " +
				"(compliance_exemption.update.success) with the values before and after.",
			Errors: []int{http.StatusNotFound, http.StatusConflict},
			Responses: map[string]*huma.Response{"404": notFound, "409": {Description: "The exemption has expired"},
				"422": {Description: "The body is invalid; errors name each bad field as body.<field>"}}}, h.patch),
		sdk.Delete(exemptionsPath+"/{id}", sdk.Op{ID: "compliance-exemptions-delete", Tags: tags, Summary: "Delete a compliance exemption",
			Description: "Removes the exemption, active or expired; the findings it hid are listed again at once. Audited (compliance_exemption.delete.success).",
			Errors:      []int{http.StatusNotFound}, Responses: map[string]*huma.Response{"404": notFound}}, h.delete),
	}
}

// ExpiryJob is the job that records each lapsed exemption in the audit
// log once (compliance_exemption.expire.success). The lapse itself needs
// no job: reads compare expires_at with their own time. It keeps no data
// domain fresh: it reads nothing from the cloud.
func (h *Handlers) ExpiryJob() sdk.Job {
	return sdk.Job{Name: ExpiryJobType, JobType: ExpiryJobType, Schedule: "@every 5m", Run: h.expire}
}

func (h *Handlers) expire(ctx context.Context, run *sdk.JobRun) (int64, error) {
	lapsed, err := h.Store.Lapse(ctx, h.now(), run.TenantIDs)
	if err != nil {
		return 0, err
	}
	for i := range lapsed {
		e := &lapsed[i]
		h.audit(ctx, "compliance_exemption.expire.success", e, map[string]any{"expires_at": e.ExpiresAt.UTC().Format(time.RFC3339Nano)})
		run.Progress(int64(i+1), int64(len(lapsed)), "exemption "+strconv.FormatInt(e.ID, 10))
	}
	return int64(len(lapsed)), nil
}

// audit records a change with the exemption's scope and target; a failure
// to record is logged, since the change itself is made.
func (h *Handlers) audit(ctx context.Context, action string, e *Exemption, details map[string]any) {
	details["scope"] = e.Scope
	for k, v := range map[string]string{"resource_id": e.ResourceID, "policy_definition_id": e.PolicyDefinitionID,
		"framework_id": e.FrameworkID, "control_id": e.ControlID} {
		if v != "" {
			details[k] = v
		}
	}
	err := h.Host.Audit(ctx, sdk.AuditEntry{Action: action, Status: "success", TenantID: e.TenantID, ResourceType: auditType,
		ResourceID: strconv.FormatInt(e.ID, 10), Details: details})
	if err != nil && h.Logger != nil {
		h.Logger.Error("audit entry not recorded", "action", action, "exemption_id", e.ID, "error", err)
	}
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*Page, error) {
	now := h.now()
	q := ListQuery{TenantIDs: in.Tenants, Scope: in.Scope, Now: now, Limit: in.Limit, Offset: in.Offset}
	if in.Status != "" {
		active := in.Status == StatusActive
		q.Active = &active
	}
	rows, total, err := h.Store.List(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &Page{Items: make([]View, len(rows)), Total: total, Limit: in.Limit, Offset: in.Offset}
	for i := range rows {
		out.Items[i] = viewOf(&rows[i], now)
	}
	return out, nil
}

// find returns the exemption if the caller may see it, or a 404.
func (h *Handlers) find(ctx context.Context, id int64) (*Exemption, error) {
	e, err := h.Store.Get(ctx, id, sdk.PrincipalFrom(ctx).TenantIDs)
	if err == nil && e == nil {
		err = sdk.NotFound("no exemption " + strconv.FormatInt(id, 10))
	}
	return e, err
}

func (h *Handlers) get(ctx context.Context, in *ExemptionID) (*View, error) {
	e, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	v := viewOf(e, h.now())
	return &v, nil
}

// tenantOf is a new exemption's tenant: the one the body names, which the
// host has checked the caller may see, or the caller's only tenant.
func tenantOf(named sdk.TenantID, p sdk.Principal) (string, error) {
	switch {
	case named != "":
		return string(named), nil
	case len(p.TenantIDs) == 0:
		return "", sdk.Forbidden("the caller may see no tenant to create an exemption in")
	case len(p.TenantIDs) == 1:
		return p.TenantIDs[0], nil
	}
	return "", sdk.Invalid("body.tenant_id", "is required: the caller may see %d tenants", len(p.TenantIDs))
}

// checkExpiry adds a problem unless at is in the future and at most
// MaxLifetime ahead of now.
func checkExpiry(p *jsonbody.Problems, at, now time.Time) {
	switch {
	case !at.After(now):
		p.Add("body.expires_at", "must be in the future (now is %s)", now.Format(time.RFC3339))
	case at.Sub(now) > MaxLifetime:
		p.Add("body.expires_at", "must be at most 366 days ahead (until %s)", now.Add(MaxLifetime).Format(time.RFC3339))
	}
}

// text checks a reason or owner and returns it as plain text.
func text(p *jsonbody.Problems, loc, s string, maxLen int, multiline bool) string {
	out, ok := p.Plain(loc, s, maxLen, multiline)
	if ok && out == "" {
		p.Add(loc, "must not be empty once markup is removed")
	}
	return out
}

// target checks the members a scope uses, and that it is given no other,
// and sets them on e.
func (h *Handlers) target(p *jsonbody.Problems, e *Exemption, resourceID, policyID, frameworkID, controlID string) {
	uses := map[string][]string{ScopeFinding: {"resource_id", "policy_definition_id"}, ScopeResource: {"resource_id"},
		ScopePolicy: {"policy_definition_id"}, ScopeControl: {"framework_id", "control_id"}}[e.Scope]
	for _, m := range []struct{ name, value string }{{"resource_id", resourceID}, {"policy_definition_id", policyID},
		{"framework_id", frameworkID}, {"control_id", controlID}} {
		used := slices.Contains(uses, m.name)
		switch {
		case used && m.value == "":
			p.Add("body."+m.name, "is required for a %s exemption", e.Scope)
		case !used && m.value != "":
			p.Add("body."+m.name, "is not used by a %s exemption; leave it out", e.Scope)
		}
	}
	if resourceID != "" {
		if !resourceIDRE.MatchString(resourceID) {
			p.Add("body.resource_id", "must be an ARM resource id such as /subscriptions/<id>/resourceGroups/<group>/providers/<type>/<name>")
		}
		e.ResourceID = strings.ToLower(resourceID)
	}
	if policyID != "" {
		if !policyIDRE.MatchString(policyID) {
			p.Add("body.policy_definition_id", "must be a policy definition id such as /providers/Microsoft.Authorization/policyDefinitions/<name>")
		}
		e.PolicyDefinitionID = strings.ToLower(policyID)
	}
	if e.Scope != ScopeControl || frameworkID == "" {
		return
	}
	fw, ok := h.Frameworks.Get(frameworkID)
	if !ok {
		p.Add("body.framework_id", "is not a loaded framework (GET /api/v1/compliance/frameworks lists them)")
		return
	}
	e.FrameworkID = fw.ID
	if controlID == "" {
		return
	}
	for _, c := range fw.Controls {
		if c.ID == controlID {
			e.ControlID = c.ID
			return
		}
	}
	p.Add("body.control_id", "is not a control of framework %s", fw.ID)
}

func (h *Handlers) create(ctx context.Context, in *createIn) (*View, error) {
	pr := sdk.PrincipalFrom(ctx)
	tenantID, err := tenantOf(in.Body.TenantID, pr)
	if err != nil {
		return nil, err
	}
	now := h.now()
	b := &in.Body
	e := &Exemption{TenantID: tenantID, Scope: b.Scope, CreatedBy: pr.ID, CreatedAt: now, UpdatedAt: now, ExpiresAt: b.ExpiresAt.UTC().Truncate(time.Microsecond)}
	var p jsonbody.Problems
	h.target(&p, e, b.ResourceID, b.PolicyDefinitionID, b.FrameworkID, b.ControlID)
	e.Reason = text(&p, "body.reason", b.Reason, maxReasonLen, true)
	e.Owner = text(&p, "body.owner", b.Owner, maxOwnerLen, false)
	checkExpiry(&p, e.ExpiresAt, now)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if err := h.Store.Create(ctx, e, now); err != nil {
		if errors.Is(err, ErrDuplicate) {
			return nil, sdk.Conflict("an active exemption of this tenant has the same scope and target; change or delete it instead")
		}
		return nil, err
	}
	h.audit(ctx, "compliance_exemption.create.success", e, map[string]any{"reason": e.Reason, "owner": e.Owner,
		"expires_at": e.ExpiresAt.Format(time.RFC3339Nano)})
	v := viewOf(e, now)
	return &v, nil
}

func (h *Handlers) patch(ctx context.Context, in *patchIn) (*View, error) {
	e, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	now := h.now()
	b := &in.Body
	var p jsonbody.Problems
	if b.Reason == nil && b.Owner == nil && b.ExpiresAt == nil {
		p.Add("body", "name at least one of reason, owner and expires_at")
	}
	before := map[string]any{"reason": e.Reason, "owner": e.Owner, "expires_at": e.ExpiresAt.UTC().Format(time.RFC3339Nano)}
	if b.Reason != nil {
		e.Reason = text(&p, "body.reason", *b.Reason, maxReasonLen, true)
	}
	if b.Owner != nil {
		e.Owner = text(&p, "body.owner", *b.Owner, maxOwnerLen, false)
	}
	if b.ExpiresAt != nil {
		e.ExpiresAt = b.ExpiresAt.UTC().Truncate(time.Microsecond)
		checkExpiry(&p, e.ExpiresAt, now)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	updated, err := h.Store.Update(ctx, e, now)
	if err != nil {
		return nil, err
	}
	if !updated {
		// Gone since it was read, or expired: find answers which.
		if _, err := h.find(ctx, in.ID); err != nil {
			return nil, err
		}
		return nil, sdk.Conflict("the exemption has expired; create a new one")
	}
	h.audit(ctx, "compliance_exemption.update.success", e, map[string]any{"before": before,
		"after": map[string]any{"reason": e.Reason, "owner": e.Owner, "expires_at": e.ExpiresAt.Format(time.RFC3339Nano)}})
	v := viewOf(e, now)
	return &v, nil
}

func (h *Handlers) delete(ctx context.Context, in *ExemptionID) (*sdk.Empty, error) {
	e, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	deleted, err := h.Store.Delete(ctx, e)
	if err != nil {
		return nil, err
	}
	if !deleted {
		return nil, sdk.NotFound("no exemption " + strconv.FormatInt(e.ID, 10))
	}
	h.audit(ctx, "compliance_exemption.delete.success", e, map[string]any{"reason": e.Reason, "owner": e.Owner,
		"expires_at": e.ExpiresAt.UTC().Format(time.RFC3339Nano)})
	return &sdk.Empty{}, nil
}
