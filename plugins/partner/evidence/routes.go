package evidence

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Host is what the routes and the expiry job need of the host; *sdk.Host
// provides it.
type Host interface {
	Audit(ctx context.Context, e sdk.AuditEntry) error
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

// createBody documents a create body; the handler checks it (body.go).
type createBody struct {
	TenantID      string   `json:"tenant_id,omitempty" required:"false" doc:"The tenant, one the caller may see; may be left out by a caller who sees exactly one tenant"`
	RequirementID string   `json:"requirement_id" maxLength:"100" doc:"A requirement of the partner's catalogue; a tenant has one record per requirement (409 for a second)"`
	Status        string   `json:"status,omitempty" required:"false" enum:"not_started,in_progress" default:"not_started"`
	Owner         *string  `json:"owner,omitempty" required:"false" nullable:"true" maxLength:"255" doc:"Markup is removed before storing"`
	DueDate       *string  `json:"due_date,omitempty" required:"false" nullable:"true" format:"date"`
	Notes         *string  `json:"notes,omitempty" required:"false" nullable:"true" maxLength:"4000" doc:"Markup is removed before storing"`
	Links         []string `json:"links,omitempty" required:"false" nullable:"true" maxItems:"20" doc:"Absolute http or https URLs of at most 2048 characters, without credentials, each once"`
	ExpiresAt     *string  `json:"expires_at,omitempty" required:"false" nullable:"true" format:"date-time" doc:"When the evidence lapses once accepted"`
}

// patchBody documents a PATCH body.
type patchBody struct {
	Status    string   `json:"status,omitempty" required:"false" enum:"not_started,in_progress,submitted" doc:"A move the lifecycle allows from the current status (409 otherwise)"`
	Owner     *string  `json:"owner,omitempty" required:"false" nullable:"true" maxLength:"255" doc:"null clears it"`
	DueDate   *string  `json:"due_date,omitempty" required:"false" nullable:"true" format:"date" doc:"null clears it"`
	Notes     *string  `json:"notes,omitempty" required:"false" nullable:"true" maxLength:"4000" doc:"null clears it"`
	Links     []string `json:"links,omitempty" required:"false" nullable:"true" maxItems:"20" doc:"Replaces the links; null clears them"`
	ExpiresAt *string  `json:"expires_at,omitempty" required:"false" nullable:"true" format:"date-time" doc:"null clears it"`
}

// reviewDoc documents a review body.
type reviewDoc struct {
	Decision     string `json:"decision" enum:"accepted,rejected"`
	Reason       string `json:"reason" minLength:"1" maxLength:"2000" doc:"Why; required for either decision. Markup is removed before storing"`
	ValidityDays int    `json:"validity_days,omitempty" required:"false" minimum:"1" maximum:"3650" doc:"Only with accepted: the evidence expires this many days after the review, replacing its expires_at"`
}

func closed(v any) *huma.Schema {
	s := sdk.SchemaOf(v)
	s.AdditionalProperties = false
	return s
}

func jsonBody(desc string, v any) *huma.RequestBody {
	return &huma.RequestBody{Description: desc, Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: closed(v)}}}
}

func float(v float64) *float64 { return &v }

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

var idParam = &huma.Param{Name: "id", In: "path", Required: true, Description: "The evidence's id", Schema: &huma.Schema{Type: huma.TypeString, Format: "uuid"}}

// Routes declares the evidence routes.
func (h *Handlers) Routes() []sdk.Route {
	notFound := &huma.Response{Description: "No such evidence, or it belongs to a tenant the caller may not see"}
	invalid := &huma.Response{Description: "The body is invalid; errors name each bad member as body.<member> (body.links[<i>] for a link)"}
	return append([]sdk.Route{
		{Method: http.MethodGet, Path: evidencePath, TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "partner-evidence-list", Tags: []string{tag}, Summary: "Evidence of the caller's tenants",
			Description: "A page of evidence records, without their files; file_count says how many each has.",
			Parameters: []*huma.Param{
				{Name: "tenant_ids", In: "query", Description: "Only these tenants (each must be one the caller may see); all the caller's when omitted",
					Schema: &huma.Schema{Type: huma.TypeArray, MaxItems: intp(100), Items: &huma.Schema{Type: huma.TypeString}}},
				{Name: "requirement_id", In: "query", Description: "Only these requirements",
					Schema: &huma.Schema{Type: huma.TypeArray, MaxItems: intp(100), Items: &huma.Schema{Type: huma.TypeString, MaxLength: intp(maxRequirementID)}}},
				{Name: "status", In: "query", Description: "Only these statuses",
					Schema: &huma.Schema{Type: huma.TypeArray, MaxItems: intp(len(Statuses)), Items: &huma.Schema{Type: huma.TypeString, Enum: anySlice(Statuses)}}},
				{Name: "sort_by", In: "query", Description: "Records without a due date come last either way",
					Schema: &huma.Schema{Type: huma.TypeString, Enum: anySlice(SortKeys), Default: "updated_at"}},
				{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "desc"}},
				{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500), Default: 100}},
				{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(0), Maximum: float(1e6), Default: 0}},
			},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Evidence", List{}),
				"403": {Description: "A tenant named is one the caller may not see"}},
		}},
		{Method: http.MethodPost, Path: evidencePath, TenantScoped: true, Handler: h.create, Operation: &huma.Operation{
			OperationID: "partner-evidence-create", Tags: []string{tag}, Summary: "Start evidence for a requirement",
			Description: "Creates a tenant's record for a requirement of the partner's catalogue, not_started or in_progress.",
			RequestBody: jsonBody("The evidence", createBody{}),
			Responses: map[string]*huma.Response{"201": sdk.JSONResponse("The evidence", View{}),
				"403": {Description: "The caller may not see the tenant named, or sees none"},
				"409": {Description: "The tenant has evidence for the requirement already"}, "422": invalid},
		}},
		{Method: http.MethodGet, Path: evidencePath + "/{id}", Handler: h.get, Operation: &huma.Operation{
			OperationID: "partner-evidence-get", Tags: []string{tag}, Summary: "One evidence record with its files",
			Parameters: []*huma.Param{idParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("The evidence", Detail{}), "404": notFound},
		}},
		{Method: http.MethodPatch, Path: evidencePath + "/{id}", Handler: h.patch, Operation: &huma.Operation{
			OperationID: "partner-evidence-update", Tags: []string{tag}, Summary: "Change evidence or move it along its lifecycle",
			Description: "Members present change, null clears an optional one, members left out keep their value. status moves the record: " +
				"not_started -> in_progress; in_progress -> submitted or not_started; submitted, rejected or expired -> in_progress. " +
				"accepted and rejected are set by a review, expired by the daily expiry (422). While the evidence is submitted or accepted " +
				"its content is frozen: a change is a 409 unless the same PATCH moves it to in_progress.",
			Parameters:  []*huma.Param{idParam},
			RequestBody: jsonBody("The changes", patchBody{}),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("The evidence", View{}), "404": notFound,
				"409": {Description: "The lifecycle has no such move from the current status, the evidence is frozen for review, or it changed meanwhile"},
				"422": invalid},
		}},
		{Method: http.MethodPost, Path: evidencePath + "/{id}/review", Auth: sdk.AuthAdmin, Handler: h.review, Operation: &huma.Operation{
			OperationID: "partner-evidence-review", Tags: []string{tag}, Summary: "Accept or reject submitted evidence (admin)",
			Description: "Only submitted evidence is reviewed. The reason is kept with the evidence and in the audit log. Accepted evidence " +
				"with an expires_at (set here with validity_days, or before) is marked expired by the daily expiry once that time has passed.",
			Parameters:  []*huma.Param{idParam},
			RequestBody: jsonBody("The decision", reviewDoc{}),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("The evidence", View{}), "404": notFound,
				"409": {Description: "The evidence is not submitted"}, "422": invalid},
		}},
	}, h.fileRoutes(notFound)...)
}

func intp(v int) *int { return &v }

// audit records a change; a failure to record is logged, since the change
// itself is made.
func (h *Handlers) audit(ctx context.Context, action, status, tenantID, resourceType, resourceID string, details map[string]any) {
	err := h.Host.Audit(ctx, sdk.AuditEntry{Action: action, Status: status, TenantID: tenantID, ResourceType: resourceType,
		ResourceID: resourceID, Details: details})
	if err != nil && h.Logger != nil {
		h.Logger.Error("audit entry not recorded", "action", action, "resource_id", resourceID, "error", err)
	}
}

// writeError answers err; one that is not a problem is logged, since the
// caller is told only that it was internal.
func (h *Handlers) writeError(w http.ResponseWriter, err error) {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("partner evidence request failed", "error", err)
	}
	sdk.WriteError(w, err)
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		h.writeError(w, err)
		return
	}
	q := r.URL.Query()
	lq := ListQuery{TenantIDs: tenants, RequirementIDs: sdk.QueryList(r, "requirement_id"), Statuses: sdk.QueryList(r, "status"),
		SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") == "desc"}
	lq.Limit, _ = strconv.Atoi(q.Get("limit"))
	lq.Offset, _ = strconv.Atoi(q.Get("offset"))
	rows, total, err := h.Store.List(r.Context(), lq)
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := List{Items: make([]View, len(rows)), Total: total, Limit: lq.Limit, Offset: lq.Offset}
	for i := range rows {
		out.Items[i] = viewOf(&rows[i])
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// find returns the evidence of the path if the caller may see it, or
// writes 404: evidence of another tenant is not confirmed to exist.
func (h *Handlers) find(w http.ResponseWriter, r *http.Request) *Evidence {
	id := r.PathValue("id")
	e, err := h.Store.Get(r.Context(), id, sdk.PrincipalFrom(r.Context()).TenantIDs)
	if err != nil {
		h.writeError(w, err)
		return nil
	}
	if e == nil {
		h.writeError(w, sdk.NotFound("no evidence "+id))
		return nil
	}
	return e
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	e := h.find(w, r)
	if e == nil {
		return
	}
	files, err := h.Store.Files(r.Context(), e.ID)
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := Detail{View: viewOf(e), Files: make([]FileView, len(files))}
	for i := range files {
		out.Files[i] = fileViewOf(&files[i])
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) create(w http.ResponseWriter, r *http.Request) {
	f, err := jsonbody.Read(r, maxBodyBytes)
	if err != nil {
		h.writeError(w, err)
		return
	}
	p := sdk.PrincipalFrom(r.Context())
	tenantID, err := tenantOf(f, p)
	if err != nil {
		h.writeError(w, err)
		return
	}
	var probs problems
	probs.Members(f, append([]string{"tenant_id", "requirement_id"}, editFields...), serviceFields)
	now := h.now()
	e := &Evidence{ID: uuid.NewString(), TenantID: tenantID, Status: StatusNotStarted, Links: []string{},
		CreatedBy: p.ID, UpdatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	e.RequirementID = probs.requirement(f, h.Requirement)
	if s, ok := probs.status(f, []string{StatusNotStarted, StatusInProgress}); ok {
		e.Status = s
	}
	probs.applyContent(e, f)
	if err := probs.Err(); err != nil {
		h.writeError(w, err)
		return
	}
	if err := h.Store.Create(r.Context(), e); err != nil {
		if errors.Is(err, ErrExists) {
			err = sdk.Conflict("the tenant has evidence for requirement " + e.RequirementID + " already; change that record")
		}
		h.writeError(w, err)
		return
	}
	h.audit(r.Context(), "partner_evidence.create.success", "success", e.TenantID, auditType, e.ID,
		map[string]any{"requirement_id": e.RequirementID, "status": e.Status})
	sdk.WriteJSON(w, http.StatusCreated, viewOf(e))
}

func (h *Handlers) patch(w http.ResponseWriter, r *http.Request) {
	e := h.find(w, r)
	if e == nil {
		return
	}
	f, err := jsonbody.Read(r, maxBodyBytes)
	if err != nil {
		h.writeError(w, err)
		return
	}
	var probs problems
	probs.Members(f, append([]string{"tenant_id", "requirement_id"}, editFields...), serviceFields)
	for _, fixed := range [][2]string{{"tenant_id", e.TenantID}, {"requirement_id", e.RequirementID}} {
		if raw, ok := f[fixed[0]]; ok {
			if s, ok := probs.String("body."+fixed[0], raw); ok && s != fixed[1] {
				probs.Add("body."+fixed[0], "cannot be changed; start evidence for the other one instead")
			}
		}
	}
	before := *e
	to, moved := probs.status(f, editableStatuses)
	probs.applyContent(e, f)
	if err := probs.Err(); err != nil {
		h.writeError(w, err)
		return
	}
	if moved && to != before.Status {
		if !canEdit(before.Status, to) {
			h.writeError(w, sdk.Conflict("evidence that is "+before.Status+" cannot be moved to "+to))
			return
		}
		e.Status = to
	}
	if contentChanged(&before, e) && frozen(e.Status) {
		h.writeError(w, sdk.Conflict("evidence that is "+e.Status+" cannot be changed; move it to in_progress first"))
		return
	}
	e.UpdatedBy, e.UpdatedAt = sdk.PrincipalFrom(r.Context()).ID, h.now()
	if err := h.Store.Update(r.Context(), e, before.Status); err != nil {
		if errors.Is(err, ErrChanged) {
			err = sdk.Conflict("the evidence changed meanwhile; read it again")
		}
		h.writeError(w, err)
		return
	}
	details := map[string]any{"requirement_id": e.RequirementID, "status": e.Status}
	if e.Status != before.Status {
		details["from_status"] = before.Status
	}
	h.audit(r.Context(), "partner_evidence.update.success", "success", e.TenantID, auditType, e.ID, details)
	sdk.WriteJSON(w, http.StatusOK, viewOf(e))
}

func (h *Handlers) review(w http.ResponseWriter, r *http.Request) {
	e := h.find(w, r)
	if e == nil {
		return
	}
	f, err := jsonbody.Read(r, maxBodyBytes)
	if err != nil {
		h.writeError(w, err)
		return
	}
	rv, err := readReview(f)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if e.Status != StatusSubmitted {
		h.writeError(w, sdk.Conflict("only submitted evidence is reviewed; this is "+e.Status))
		return
	}
	now := h.now()
	if rv.validityDays > 0 {
		at := now.AddDate(0, 0, rv.validityDays)
		e.ExpiresAt = &at
	}
	if rv.decision == DecisionAccepted && e.ExpiresAt != nil && !e.ExpiresAt.After(now) {
		h.writeError(w, sdk.Invalid("body.validity_days", "is required: the evidence's expires_at has passed"))
		return
	}
	by := sdk.PrincipalFrom(r.Context()).ID
	e.Status, e.ReviewReason, e.ReviewedBy, e.ReviewedAt, e.UpdatedBy, e.UpdatedAt = rv.decision, &rv.reason, &by, &now, by, now
	if err := h.Store.Review(r.Context(), e); err != nil {
		if errors.Is(err, ErrChanged) {
			err = sdk.Conflict("the evidence is no longer submitted")
		}
		h.writeError(w, err)
		return
	}
	details := map[string]any{"requirement_id": e.RequirementID, "decision": rv.decision, "reason": rv.reason}
	if e.ExpiresAt != nil {
		details["expires_at"] = e.ExpiresAt.Format(time.RFC3339)
	}
	h.audit(r.Context(), "partner_evidence.review.success", "success", e.TenantID, auditType, e.ID, details)
	sdk.WriteJSON(w, http.StatusOK, viewOf(e))
}
