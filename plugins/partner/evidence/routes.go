package evidence

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/sdk"
)

// Host is what the routes and the expiry job need of the host; *sdk.Host
// provides it.
type Host interface {
	Audit(ctx context.Context, e sdk.AuditEntry) error
	RaiseEvent(ctx context.Context, e sdk.Event) (duplicate bool, err error)
}

// Handlers serves the evidence routes and runs the expiry job.
type Handlers struct {
	Store *Store
	Blobs Blobs
	Host  Host
	// Requirement reports whether an id names a requirement of the
	// partner's catalogue; evidence is kept only for those.
	Requirement func(id string) bool
	// MaxFileBytes bounds an uploaded file; 0 is DefaultMaxFileBytes.
	MaxFileBytes int64
	Logger       hclog.Logger
	// Now is the clock of records and of the expiry; nil is time.Now.
	Now func() time.Time
}

const (
	tag          = "partner-evidence"
	evidencePath = "/api/v1/partner/evidence"
	auditType    = "partner_evidence"
	auditFile    = "partner_evidence_file"
)

func (h *Handlers) now() time.Time {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	// Microseconds, as PostgreSQL keeps them, so a record reads back as it
	// was written.
	return now().UTC().Truncate(time.Microsecond)
}

// View is evidence as the API shows it.
type View struct {
	ID            string     `json:"id" format:"uuid"`
	TenantID      string     `json:"tenant_id"`
	RequirementID string     `json:"requirement_id" doc:"A requirement of the partner's catalogue"`
	Status        string     `json:"status" enum:"not_started,in_progress,submitted,accepted,rejected,expired"`
	Owner         *string    `json:"owner" doc:"Who gathers the evidence; plain text, or null"`
	DueDate       *string    `json:"due_date" format:"date" doc:"When the evidence is due, or null"`
	Notes         *string    `json:"notes" doc:"Plain text, or null"`
	Links         []string   `json:"links" doc:"Absolute http or https URLs"`
	ExpiresAt     *time.Time `json:"expires_at" doc:"When accepted evidence lapses; the daily expiry marks it expired after. null: it does not lapse"`
	ReviewReason  *string    `json:"review_reason" doc:"The reason of the last review, or null"`
	ReviewedBy    *string    `json:"reviewed_by" doc:"Id of the admin who last reviewed the evidence, or null"`
	ReviewedAt    *time.Time `json:"reviewed_at"`
	FileCount     int        `json:"file_count"`
	CreatedBy     string     `json:"created_by" doc:"Id of the user (or apikey:<id>) who created the record"`
	UpdatedBy     string     `json:"updated_by" doc:"Id of who changed it last; job:partner_evidence_expiry for the daily expiry"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

func viewOf(e *Evidence) View {
	links := e.Links
	if links == nil {
		links = []string{}
	}
	return View{ID: e.ID, TenantID: e.TenantID, RequirementID: e.RequirementID, Status: e.Status, Owner: e.Owner, DueDate: e.DueDate,
		Notes: e.Notes, Links: links, ExpiresAt: e.ExpiresAt, ReviewReason: e.ReviewReason, ReviewedBy: e.ReviewedBy,
		ReviewedAt: e.ReviewedAt, FileCount: e.FileCount, CreatedBy: e.CreatedBy, UpdatedBy: e.UpdatedBy, CreatedAt: e.CreatedAt,
		UpdatedAt: e.UpdatedAt}
}

// Detail is one evidence record with its files.
type Detail struct {
	View
	Files []FileView `json:"files" doc:"Oldest first"`
}

// List is a page of evidence.
type List struct {
	Items  []View `json:"items"`
	Total  int    `json:"total" doc:"How many match in all, beyond this page"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
}

// EvidencePath names evidence by its id in the path; evidence of a tenant
// the caller may not see is 404.
type EvidencePath struct {
	ID string `path:"id" format:"uuid" doc:"The evidence's id"`
}

// The list's enums are Statuses and SortKeys.
type listIn struct {
	Tenants        sdk.TenantIDs `query:"tenant_ids" doc:"Only these tenants (each must be one the caller may see); all the caller's when omitted"`
	RequirementIDs []string      `query:"requirement_id" maxItems:"100" maxLength:"100" doc:"Only these requirements"`
	Statuses       []string      `query:"status" maxItems:"6" enum:"not_started,in_progress,submitted,accepted,rejected,expired" doc:"Only these statuses"`
	SortBy         string        `query:"sort_by" enum:"updated_at,created_at,due_date,requirement_id,status" default:"updated_at" doc:"Records without a due date come last either way"`
	SortOrder      string        `query:"sort_order" enum:"asc,desc" default:"desc"`
	Limit          int           `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset         int           `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

type createIn struct {
	Body struct {
		TenantID      sdk.TenantID `json:"tenant_id,omitempty" doc:"The tenant, one the caller may see; may be left out by a caller who sees exactly one tenant"`
		RequirementID string       `json:"requirement_id" maxLength:"100" doc:"A requirement of the partner's catalogue; a tenant has one record per requirement (409 for a second)"`
		Status        string       `json:"status,omitempty" enum:"not_started,in_progress" default:"not_started"`
		Content
	}
}

type patchIn struct {
	EvidencePath
	Body struct {
		TenantID      string `json:"tenant_id,omitempty" doc:"The evidence's tenant, which cannot be changed"`
		RequirementID string `json:"requirement_id,omitempty" doc:"The evidence's requirement, which cannot be changed"`
		Status        string `json:"status,omitempty" enum:"not_started,in_progress,submitted" doc:"A move the lifecycle allows from the current status (409 otherwise)"`
		Content
	}
}

type reviewIn struct {
	EvidencePath
	Body struct {
		Decision     string `json:"decision" enum:"accepted,rejected"`
		Reason       string `json:"reason" minLength:"1" maxLength:"2000" doc:"Why; required for either decision. Markup is removed before storing"`
		ValidityDays int    `json:"validity_days,omitempty" minimum:"1" maximum:"3650" doc:"Only with accepted: the evidence expires this many days after the review, replacing its expires_at"`
	}
}

// Routes declares the evidence routes.
func (h *Handlers) Routes() []sdk.Route {
	op := func(id, summary, doc string, errs ...int) sdk.Op {
		return sdk.Op{ID: "partner-evidence-" + id, Tags: []string{tag}, Summary: summary, Description: doc, Errors: errs}
	}
	create := op("create", "Start evidence for a requirement",
		"Creates a tenant's record for a requirement of the partner's catalogue, not_started or in_progress. "+
			"A caller who sees no tenant is refused (403); a second record for the requirement is a 409.", http.StatusConflict)
	create.Status = http.StatusCreated
	review := op("review", "Accept or reject submitted evidence (admin)",
		"Only submitted evidence is reviewed (409 otherwise). The reason is kept with the evidence and in the audit log. Accepted evidence "+
			"with an expires_at (set here with validity_days, or before) is marked expired by the daily expiry once that time has passed.",
		http.StatusNotFound, http.StatusConflict)
	review.Auth = sdk.AuthAdmin
	return append([]sdk.Route{
		sdk.Get(evidencePath, op("list", "Evidence of the caller's tenants",
			"A page of evidence records, without their files; file_count says how many each has."), h.list),
		sdk.Post(evidencePath, create, h.create),
		sdk.Get(evidencePath+"/{id}", op("get", "One evidence record with its files", "", http.StatusNotFound), h.get),
		sdk.Patch(evidencePath+"/{id}", op("update", "Change evidence or move it along its lifecycle",
			"Members present change, null clears an optional one, members left out keep their value. status moves the record: "+
				"not_started -> in_progress; in_progress -> submitted or not_started; submitted, rejected or expired -> in_progress. "+
				"accepted and rejected are set by a review, expired by the daily expiry (422). While the evidence is submitted or accepted "+
				"its content is frozen: a change is a 409 unless the same PATCH moves it to in_progress. A move the lifecycle lacks, "+
				"or evidence that changed meanwhile, is a 409 too.", http.StatusNotFound, http.StatusConflict), h.patch),
		sdk.Post(evidencePath+"/{id}/review", review, h.review),
	}, h.fileRoutes()...)
}

// audit records a change; a failure to record is logged, since the change
// itself is made.
func (h *Handlers) audit(ctx context.Context, action, status, tenantID, resourceType, resourceID string, details map[string]any) {
	err := h.Host.Audit(ctx, sdk.AuditEntry{Action: action, Status: status, TenantID: tenantID, ResourceType: resourceType,
		ResourceID: resourceID, Details: details})
	if err != nil && h.Logger != nil {
		h.Logger.Error("audit entry not recorded", "action", action, "resource_id", resourceID, "error", err)
	}
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*List, error) {
	lq := ListQuery{TenantIDs: in.Tenants, RequirementIDs: in.RequirementIDs, Statuses: in.Statuses, SortBy: in.SortBy, Desc: in.SortOrder == "desc",
		Limit: in.Limit, Offset: in.Offset}
	rows, total, err := h.Store.List(ctx, lq)
	if err != nil {
		return nil, err
	}
	out := &List{Items: make([]View, len(rows)), Total: total, Limit: lq.Limit, Offset: lq.Offset}
	for i := range rows {
		out.Items[i] = viewOf(&rows[i])
	}
	return out, nil
}

// find returns the evidence of the path if the caller may see it, or a
// 404: evidence of another tenant is not confirmed to exist.
func (h *Handlers) find(ctx context.Context, in EvidencePath) (*Evidence, error) {
	e, err := h.Store.Get(ctx, in.ID, sdk.PrincipalFrom(ctx).TenantIDs)
	if err == nil && e == nil {
		err = sdk.NotFound("no evidence " + in.ID)
	}
	return e, err
}

func (h *Handlers) get(ctx context.Context, in *EvidencePath) (*Detail, error) {
	e, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	files, err := h.Store.Files(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	out := &Detail{View: viewOf(e), Files: make([]FileView, len(files))}
	for i := range files {
		out.Files[i] = fileViewOf(&files[i])
	}
	return out, nil
}

func (h *Handlers) create(ctx context.Context, in *createIn) (*View, error) {
	p := sdk.PrincipalFrom(ctx)
	tenantID, err := tenantOf(in.Body.TenantID, p)
	if err != nil {
		return nil, err
	}
	var probs problems
	now := h.now()
	e := &Evidence{ID: uuid.NewString(), TenantID: tenantID, Status: in.Body.Status, Links: []string{},
		CreatedBy: p.ID, UpdatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	e.RequirementID = probs.requirement(in.Body.RequirementID, h.Requirement)
	probs.apply(e, in.Body.Content)
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if err := h.Store.Create(ctx, e); err != nil {
		if errors.Is(err, ErrExists) {
			err = sdk.Conflict("the tenant has evidence for requirement " + e.RequirementID + " already; change that record")
		}
		return nil, err
	}
	h.audit(ctx, "partner_evidence.create.success", "success", e.TenantID, auditType, e.ID,
		map[string]any{"requirement_id": e.RequirementID, "status": e.Status})
	return ptr(viewOf(e)), nil
}

func ptr[T any](v T) *T { return &v }

func (h *Handlers) patch(ctx context.Context, in *patchIn) (*View, error) {
	e, err := h.find(ctx, in.EvidencePath)
	if err != nil {
		return nil, err
	}
	var probs problems
	for _, fixed := range [][3]string{{"tenant_id", in.Body.TenantID, e.TenantID}, {"requirement_id", in.Body.RequirementID, e.RequirementID}} {
		if fixed[1] != "" && fixed[1] != fixed[2] {
			probs.Add("body."+fixed[0], "cannot be changed; start evidence for the other one instead")
		}
	}
	before := *e
	probs.apply(e, in.Body.Content)
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if to := in.Body.Status; to != "" && to != before.Status {
		if !canEdit(before.Status, to) {
			return nil, sdk.Conflict("evidence that is " + before.Status + " cannot be moved to " + to)
		}
		e.Status = to
	}
	if contentChanged(&before, e) && frozen(e.Status) {
		return nil, sdk.Conflict("evidence that is " + e.Status + " cannot be changed; move it to in_progress first")
	}
	e.UpdatedBy, e.UpdatedAt = sdk.PrincipalFrom(ctx).ID, h.now()
	if err := h.Store.Update(ctx, e, before.Status); err != nil {
		if errors.Is(err, ErrChanged) {
			err = sdk.Conflict("the evidence changed meanwhile; read it again")
		}
		return nil, err
	}
	details := map[string]any{"requirement_id": e.RequirementID, "status": e.Status}
	if e.Status != before.Status {
		details["from_status"] = before.Status
	}
	h.audit(ctx, "partner_evidence.update.success", "success", e.TenantID, auditType, e.ID, details)
	return ptr(viewOf(e)), nil
}

func (h *Handlers) review(ctx context.Context, in *reviewIn) (*View, error) {
	e, err := h.find(ctx, in.EvidencePath)
	if err != nil {
		return nil, err
	}
	var probs problems
	reason := probs.text("body.reason", &in.Body.Reason, true)
	if reason == nil && probs.Len() == 0 {
		probs.Add("body.reason", "must not be empty")
	}
	if in.Body.ValidityDays > 0 && in.Body.Decision == DecisionRejected {
		probs.Add("body.validity_days", "is only for an acceptance")
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if e.Status != StatusSubmitted {
		return nil, sdk.Conflict("only submitted evidence is reviewed; this is " + e.Status)
	}
	now := h.now()
	if in.Body.ValidityDays > 0 {
		at := now.AddDate(0, 0, in.Body.ValidityDays)
		e.ExpiresAt = &at
	}
	if in.Body.Decision == DecisionAccepted && e.ExpiresAt != nil && !e.ExpiresAt.After(now) {
		return nil, sdk.Invalid("body.validity_days", "is required: the evidence's expires_at has passed")
	}
	by := sdk.PrincipalFrom(ctx).ID
	e.Status, e.ReviewReason, e.ReviewedBy, e.ReviewedAt, e.UpdatedBy, e.UpdatedAt = in.Body.Decision, reason, &by, &now, by, now
	if err := h.Store.Review(ctx, e); err != nil {
		if errors.Is(err, ErrChanged) {
			err = sdk.Conflict("the evidence is no longer submitted")
		}
		return nil, err
	}
	details := map[string]any{"requirement_id": e.RequirementID, "decision": in.Body.Decision, "reason": *reason}
	if e.ExpiresAt != nil {
		details["expires_at"] = e.ExpiresAt.Format(time.RFC3339)
	}
	h.audit(ctx, "partner_evidence.review.success", "success", e.TenantID, auditType, e.ID, details)
	return ptr(viewOf(e)), nil
}
