package rules

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Host is what the routes need of the host; *sdk.Host provides it.
type Host interface {
	Audit(ctx context.Context, e sdk.AuditEntry) error
}

// Handlers serves the rule routes.
type Handlers struct {
	Store     *Store
	Evaluator *Evaluator
	Host      Host
	Logger    hclog.Logger
}

const (
	tag       = "compliance-rules"
	rulesPath = "/api/v1/compliance/rules"
	auditType = "compliance_rule"
	maxListed = 1000
)

func float(v float64) *float64 { return &v }

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// View is a rule as the API shows it.
type View struct {
	ID                int64           `json:"id"`
	TenantID          string          `json:"tenant_id"`
	RuleName          string          `json:"rule_name" doc:"Plain text: markup was removed when the rule was stored"`
	RuleDescription   *string         `json:"rule_description" doc:"Plain text, or null"`
	Category          string          `json:"category" enum:"resource_property,compliance_score,mfa_coverage"`
	ResourceType      *string         `json:"resource_type" doc:"The resource type a resource_property rule checks, lower case; null for the other categories"`
	Severity          string          `json:"severity" enum:"Low,Medium,High,Critical"`
	Effect            string          `json:"effect" enum:"audit,disabled" doc:"audit: evaluated at each sync, violations count as non-compliance; disabled: only evaluated by a dry run"`
	Schema            json.RawMessage `json:"schema" doc:"The JSON Schema (draft 2020-12) each record must satisfy"`
	IsActive          bool            `json:"is_active"`
	CreatedBy         string          `json:"created_by" doc:"Id of the user (or apikey:<id>) who created the rule"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	EvaluatedAt       *time.Time      `json:"evaluated_at" doc:"When a sync last evaluated the rule and stored its violations; null since the rule was created or changed"`
	SubjectsEvaluated int             `json:"subjects_evaluated" doc:"Records the last stored evaluation validated"`
	ViolationCount    int             `json:"violation_count" doc:"Violations the last stored evaluation found"`
}

func viewOf(r *Rule) View {
	return View{ID: r.ID, TenantID: r.TenantID, RuleName: r.Name, RuleDescription: r.Description, Category: r.Category,
		ResourceType: r.ResourceType, Severity: r.Severity, Effect: r.Effect, Schema: json.RawMessage(r.Schema), IsActive: r.IsActive,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EvaluatedAt: r.EvaluatedAt,
		SubjectsEvaluated: r.SubjectsEvaluated, ViolationCount: r.ViolationCount}
}

// ruleBody documents a create or PUT body; the handler checks it (body.go).
type ruleBody struct {
	TenantID        string         `json:"tenant_id,omitempty" required:"false" doc:"The tenant, one the caller may see; may be left out by a caller who sees exactly one tenant. A PUT may not change it"`
	RuleName        string         `json:"rule_name" maxLength:"255" doc:"Markup is removed before storing (encoded markup too); what remains must not be empty"`
	RuleDescription *string        `json:"rule_description,omitempty" required:"false" nullable:"true" maxLength:"4000" doc:"Markup is removed before storing"`
	Category        string         `json:"category" enum:"resource_property,compliance_score,mfa_coverage"`
	ResourceType    *string        `json:"resource_type,omitempty" required:"false" nullable:"true" maxLength:"255" doc:"Required for resource_property (an ARM type such as Microsoft.Compute/disks), refused for the others"`
	Severity        string         `json:"severity,omitempty" required:"false" enum:"Low,Medium,High,Critical" default:"Medium"`
	Effect          string         `json:"effect,omitempty" required:"false" enum:"audit,disabled" default:"audit"`
	Schema          map[string]any `json:"schema" doc:"A JSON Schema (draft 2020-12): at most 64 KiB without whitespace, 10 levels of nesting, patterns of 500 characters, only local $ref, and at most 10,000 schema objects once every $ref and $dynamicRef is counted as the part it names (reference fan-out); format is not asserted. Each record's validation may visit at most 100,000 schema objects, and a rule's evaluation for a tenant may take 10 s"`
	IsActive        *bool          `json:"is_active,omitempty" required:"false" default:"true"`
}

func ruleSchema() *huma.Schema {
	s := sdk.SchemaOf(ruleBody{})
	s.AdditionalProperties = false
	return s
}

// DryRunViolation is a violation a dry run found.
type DryRunViolation struct {
	Subject      string `json:"subject" doc:"The resource's ARM id, or the tenant's id"`
	SubjectName  string `json:"subject_name"`
	InstancePath string `json:"instance_path" doc:"JSON Pointer to the failing value in the subject's record"`
	Keyword      string `json:"keyword"`
	SchemaPath   string `json:"schema_path" doc:"JSON Pointer to the keyword in the rule's schema"`
	Message      string `json:"message"`
}

// DryRun answers POST .../evaluate.
type DryRun struct {
	RuleID               int64             `json:"rule_id"`
	TenantID             string            `json:"tenant_id"`
	EvaluatedAt          time.Time         `json:"evaluated_at"`
	SubjectsEvaluated    int               `json:"subjects_evaluated" doc:"Records validated"`
	NonCompliantSubjects int               `json:"non_compliant_subjects" doc:"Records with at least one violation"`
	ViolationCount       int               `json:"violation_count" doc:"Every violation found, beyond those listed"`
	Violations           []DryRunViolation `json:"violations" doc:"The first 1000 violations, by record, each failed keyword of a record"`
	Truncated            bool              `json:"truncated" doc:"true when violation_count is more than the violations listed"`
}

// Routes declares the rule routes.
func (h *Handlers) Routes() []sdk.Route {
	idParam := &huma.Param{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1)}}
	rule404 := &huma.Response{Description: "No such rule, it was deleted, or it belongs to a tenant the caller may not see"}
	invalid := &huma.Response{Description: "The body is invalid; errors name each bad field as body.<field>, and a refused schema names the guard " +
		"(size, depth, pattern length, remote reference, reference fan-out) at body.schema or the member's JSON Pointer below it"}
	return []sdk.Route{
		{Method: http.MethodGet, Path: rulesPath, TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "compliance-rules-list", Tags: []string{tag}, Summary: "Custom compliance rules of the caller's tenants",
			Description: "A JSON array, oldest first, one page of it; X-Total-Count says how many match. Deleted rules are not listed.",
			Parameters: []*huma.Param{
				{Name: "tenant_ids", In: "query", Description: "Only these tenants (each must be one the caller may see); all the caller's when omitted",
					Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}}},
				{Name: "category", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: anySlice(Categories)}},
				{Name: "is_active", In: "query", Schema: &huma.Schema{Type: huma.TypeBoolean}},
				{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500), Default: 100}},
				{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(0), Default: 0}},
			},
			Responses: map[string]*huma.Response{"200": {
				Description: "Rules", Headers: map[string]*huma.Param{"X-Total-Count": {Description: "How many match in all, beyond this page", Schema: &huma.Schema{Type: huma.TypeInteger}}},
				Content: map[string]*huma.MediaType{"application/json": {Schema: sdk.SchemaOf([]View{})}}}},
		}},
		{Method: http.MethodPost, Path: rulesPath, TenantScoped: true, Handler: h.create, Operation: &huma.Operation{
			OperationID: "compliance-rules-create", Tags: []string{tag}, Summary: "Create a custom compliance rule",
			Description: "The schema is compiled under every guard before the rule is stored. Names and descriptions are stored without markup.",
			RequestBody: &huma.RequestBody{Description: "The rule", Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: ruleSchema()}}},
			Responses: map[string]*huma.Response{"201": sdk.JSONResponse("The rule", View{}),
				"403": {Description: "The caller may not see the tenant named, or sees none"}, "422": invalid},
		}},
		{Method: http.MethodGet, Path: rulesPath + "/{id}", Handler: h.get, Operation: &huma.Operation{
			OperationID: "compliance-rules-get", Tags: []string{tag}, Summary: "A custom compliance rule",
			Parameters: []*huma.Param{idParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("The rule", View{}), "404": rule404},
		}},
		{Method: http.MethodPut, Path: rulesPath + "/{id}", Handler: h.put, Operation: &huma.Operation{
			OperationID: "compliance-rules-update", Tags: []string{tag}, Summary: "Replace a custom compliance rule's definition",
			Description: "The whole definition is replaced: an optional field left out takes its default. The schema is compiled again under every guard. " +
				"The rule's stored violations are cleared until the next evaluation; updated_at changes.",
			Parameters:  []*huma.Param{idParam},
			RequestBody: &huma.RequestBody{Description: "The rule", Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: ruleSchema()}}},
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("The rule", View{}), "404": rule404, "422": invalid},
		}},
		{Method: http.MethodDelete, Path: rulesPath + "/{id}", Handler: h.delete, Operation: &huma.Operation{
			OperationID: "compliance-rules-delete", Tags: []string{tag}, Summary: "Delete a custom compliance rule",
			Description: "A soft delete: the rule is kept, inactive and marked deleted, and is 404 from then on.",
			Parameters:  []*huma.Param{idParam},
			Responses:   map[string]*huma.Response{"204": {Description: "Deleted"}, "404": rule404},
		}},
		// A dry run reads a whole category of the tenant's data, so it
		// draws on the host's costly budget, which every replica shares.
		{Method: http.MethodPost, Path: rulesPath + "/{id}/evaluate", RateClass: sdk.RateCostly, Handler: h.evaluate, Operation: &huma.Operation{
			OperationID: "compliance-rules-evaluate", Tags: []string{tag}, Summary: "Dry-run a custom compliance rule against current data",
			Description: "Validates the tenant's current records of the rule's category and lists every violation; nothing is stored. " +
				"The evaluation budgets of a sync apply: a record whose validation visits more than 100,000 schema objects, or validation " +
				"taking more than 10 s in all, stops the dry run with a 422 naming the evaluation budget at path.id. " +
				"Rate limited per user by the host's budget of costly requests (STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE, 10 a minute by default), " +
				"shared by every host replica and by the compliance page's Dry run button; beyond it 429 with Retry-After.",
			Parameters: []*huma.Param{idParam},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("What the rule finds", DryRun{}), "404": rule404,
				"429": {Description: "The caller's budget of costly requests (or of all requests) is spent", Headers: map[string]*huma.Param{"Retry-After": {Description: "Seconds until the next dry run is allowed", Schema: &huma.Schema{Type: huma.TypeInteger}}}},
				"422": {Description: "The rule's evaluation went past a budget (evaluation budget, at path.id), or its stored schema no longer passes the guards (at body.schema)"},
				"503": {Description: "The category's data (another plugin's dataset) could not be read"}},
		}},
	}
}

// audit records a change; a failure to record is logged, since the change
// itself is made.
func (h *Handlers) audit(ctx context.Context, action string, r *Rule, details map[string]any) {
	err := h.Host.Audit(ctx, sdk.AuditEntry{Action: action, Status: "success", TenantID: r.TenantID, ResourceType: auditType,
		ResourceID: strconv.FormatInt(r.ID, 10), Details: details})
	if err != nil && h.Logger != nil {
		h.Logger.Error("audit entry not recorded", "action", action, "rule_id", r.ID, "error", err)
	}
}

// writeError answers err; one that is not a problem is logged, since the
// caller is told only that it was internal.
func (h *Handlers) writeError(w http.ResponseWriter, err error) {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("compliance rule request failed", "error", err)
	}
	sdk.WriteError(w, err)
}

func (h *Handlers) now() time.Time {
	// Microseconds, as PostgreSQL keeps them, so a rule reads back as it
	// was written.
	return h.Evaluator.now().Truncate(time.Microsecond)
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		h.writeError(w, err)
		return
	}
	q := r.URL.Query()
	lq := ListQuery{TenantIDs: tenants, Category: q.Get("category")}
	lq.Limit, _ = strconv.Atoi(q.Get("limit"))
	lq.Offset, _ = strconv.Atoi(q.Get("offset"))
	if v := q.Get("is_active"); v != "" {
		active := v == "true"
		lq.Active = &active
	}
	rows, total, err := h.Store.List(r.Context(), lq)
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := make([]View, len(rows))
	for i := range rows {
		out[i] = viewOf(&rows[i])
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	sdk.WriteJSON(w, http.StatusOK, out)
}

// find returns the rule of the path if the caller may see it and it is
// not deleted, or writes 404.
func (h *Handlers) find(w http.ResponseWriter, r *http.Request) *Rule {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	rule, err := h.Store.Get(r.Context(), id, sdk.PrincipalFrom(r.Context()).TenantIDs)
	if err != nil {
		h.writeError(w, err)
		return nil
	}
	if rule == nil {
		h.writeError(w, sdk.NotFound("no rule "+strconv.FormatInt(id, 10)))
		return nil
	}
	return rule
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	if rule := h.find(w, r); rule != nil {
		sdk.WriteJSON(w, http.StatusOK, viewOf(rule))
	}
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
	now := h.now()
	rule := &Rule{TenantID: tenantID, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	if err := apply(rule, f); err != nil {
		h.writeError(w, err)
		return
	}
	if err := h.Store.Create(r.Context(), rule); err != nil {
		h.writeError(w, err)
		return
	}
	h.audit(r.Context(), "compliance_rule.create.success", rule, map[string]any{"rule_name": rule.Name, "category": rule.Category, "severity": rule.Severity})
	sdk.WriteJSON(w, http.StatusCreated, viewOf(rule))
}

func (h *Handlers) put(w http.ResponseWriter, r *http.Request) {
	rule := h.find(w, r)
	if rule == nil {
		return
	}
	f, err := jsonbody.Read(r, maxBodyBytes)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if raw, ok := f["tenant_id"]; ok && !jsonbody.IsNull(raw) {
		var id string
		if json.Unmarshal(raw, &id) != nil || id != rule.TenantID {
			h.writeError(w, sdk.Invalid("body.tenant_id", "cannot be changed; create the rule in the other tenant"))
			return
		}
	}
	if err := apply(rule, f); err != nil {
		h.writeError(w, err)
		return
	}
	rule.UpdatedAt = h.now()
	updated, err := h.Store.Update(r.Context(), rule)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if !updated {
		h.writeError(w, sdk.NotFound("no rule "+strconv.FormatInt(rule.ID, 10)))
		return
	}
	h.audit(r.Context(), "compliance_rule.update.success", rule, map[string]any{"rule_name": rule.Name, "category": rule.Category,
		"severity": rule.Severity, "effect": rule.Effect, "is_active": rule.IsActive})
	sdk.WriteJSON(w, http.StatusOK, viewOf(rule))
}

func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) {
	rule := h.find(w, r)
	if rule == nil {
		return
	}
	deleted, err := h.Store.Delete(r.Context(), rule, h.now())
	if err != nil {
		h.writeError(w, err)
		return
	}
	if !deleted {
		h.writeError(w, sdk.NotFound("no rule "+strconv.FormatInt(rule.ID, 10)))
		return
	}
	h.audit(r.Context(), "compliance_rule.delete.success", rule, map[string]any{"rule_name": rule.Name})
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handlers) evaluate(w http.ResponseWriter, r *http.Request) {
	rule := h.find(w, r)
	if rule == nil {
		return
	}
	at := h.now()
	res, err := h.Evaluator.DryRun(r.Context(), rule)
	switch {
	case errors.Is(err, ErrSource):
		h.writeError(w, sdk.Unavailable(err.Error()))
		return
	case errors.Is(err, ErrBudget):
		h.writeError(w, sdk.Invalid("path.id", "%s", err.Error()))
		return
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := DryRun{RuleID: rule.ID, TenantID: rule.TenantID, EvaluatedAt: at, SubjectsEvaluated: res.SubjectsEvaluated,
		ViolationCount: len(res.Violations), Violations: []DryRunViolation{}}
	seen := map[string]bool{}
	for _, v := range res.Violations {
		seen[v.Subject] = true
		if len(out.Violations) < maxListed {
			out.Violations = append(out.Violations, DryRunViolation{Subject: v.Subject, SubjectName: v.SubjectName, InstancePath: v.InstancePath,
				Keyword: v.Keyword, SchemaPath: v.SchemaPath, Message: v.Message})
		}
	}
	out.NonCompliantSubjects, out.Truncated = len(seen), len(res.Violations) > maxListed
	sdk.WriteJSON(w, http.StatusOK, out)
}
