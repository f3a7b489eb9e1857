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

// RuleID is the path parameter naming a rule.
type RuleID struct {
	ID int64 `path:"id" minimum:"1"`
}

type listIn struct {
	Tenants  sdk.TenantIDs      `query:"tenant_ids"`
	Category string             `query:"category" enum:"resource_property,compliance_score,mfa_coverage"`
	IsActive sdk.Optional[bool] `query:"is_active"`
	Limit    int                `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset   int                `query:"offset" minimum:"0" default:"0"`
}

// rulePage is a page of rules: the JSON array and its total.
type rulePage struct {
	Total int `header:"X-Total-Count" doc:"How many match in all, beyond this page"`
	Body  []View
}

type createIn struct {
	// Picked is the web UI's tenant picker's selection, which the UI
	// passes to routes as this parameter (protocol.ParamTenantID).
	Picked string `query:"tenant_id" maxLength:"64" doc:"The tenant picked with the web UI's tenant picker, which the UI passes as tenant_id: the rule's tenant when the body names none. Must be one the caller may see (403 otherwise)"`
	Body   struct {
		TenantID sdk.TenantID `json:"tenant_id,omitempty" required:"false" minLength:"1" doc:"The tenant, one the caller may see. May be left out when the caller picked a tenant (query tenant_id) or sees exactly one; a PUT may not change it"`
		Definition
	}
}

type putIn struct {
	RuleID
	Body struct {
		TenantID string `json:"tenant_id,omitempty" required:"false" maxLength:"64" doc:"The rule's tenant, which a PUT may not change"`
		Definition
	}
}

// Routes declares the rule routes.
func (h *Handlers) Routes() []sdk.Route {
	tags := []string{tag}
	rule404 := &huma.Response{Description: "No such rule, it was deleted, or it belongs to a tenant the caller may not see"}
	invalid := &huma.Response{Description: "The body is invalid; errors name each bad field as body.<field>, and a refused schema names the guard " +
		"(size, depth, pattern length, remote reference, reference fan-out) at body.schema or the member's JSON Pointer below it"}
	return []sdk.Route{
		sdk.Get(rulesPath, sdk.Op{ID: "compliance-rules-list", Tags: tags, Summary: "Custom compliance rules of the caller's tenants",
			Description: "A JSON array, oldest first, one page of it; X-Total-Count says how many match. Deleted rules are not listed."}, h.list),
		sdk.Post(rulesPath, sdk.Op{ID: "compliance-rules-create", Tags: tags, Summary: "Create a custom compliance rule",
			Description: "The rule's tenant is body.tenant_id; left out, it is taken from the authorisation context: the tenant picked " +
				"with the web UI's tenant picker (query tenant_id), or the caller's only tenant. A caller of several tenants that names and picks " +
				"none is answered 422 naming body.tenant_id. The schema is compiled under every guard before the rule is stored. " +
				"Names and descriptions are stored without markup.",
			Status: http.StatusCreated,
			Responses: map[string]*huma.Response{"403": {Description: "The caller may not see the tenant named or picked, or sees none"},
				"422": {Description: invalid.Description + "; body.tenant_id when no tenant is named, picked or the caller's only one, or it differs from the one picked"}}}, h.create),
		sdk.Get(rulesPath+"/{id}", sdk.Op{ID: "compliance-rules-get", Tags: tags, Summary: "A custom compliance rule",
			Responses: map[string]*huma.Response{"404": rule404}}, h.get),
		sdk.Put(rulesPath+"/{id}", sdk.Op{ID: "compliance-rules-update", Tags: tags, Summary: "Replace a custom compliance rule's definition",
			Description: "The whole definition is replaced: an optional field left out takes its default. The schema is compiled again under every guard. " +
				"The rule's stored violations are cleared until the next evaluation; updated_at changes.",
			Responses: map[string]*huma.Response{"404": rule404, "422": invalid}}, h.put),
		sdk.Delete(rulesPath+"/{id}", sdk.Op{ID: "compliance-rules-delete", Tags: tags, Summary: "Delete a custom compliance rule",
			Description: "A soft delete: the rule is kept, inactive and marked deleted, and is 404 from then on.",
			Responses:   map[string]*huma.Response{"404": rule404}}, h.delete),
		// A dry run reads a whole category of the tenant's data, so it
		// draws on the host's costly budget, which every replica shares.
		sdk.Post(rulesPath+"/{id}/evaluate", sdk.Op{ID: "compliance-rules-evaluate", Tags: tags, RateClass: sdk.RateCostly,
			Summary: "Dry-run a custom compliance rule against current data",
			Description: "Validates the tenant's current records of the rule's category and lists every violation; nothing is stored. " +
				"The evaluation budgets of a sync apply: a record whose validation visits more than 100,000 schema objects, or validation " +
				"taking more than 10 s in all, stops the dry run with a 422 naming the evaluation budget at path.id. " +
				"Rate limited per user by the host's budget of costly requests (STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE, 10 a minute by default), " +
				"shared by every host replica and by the compliance page's Dry run button; beyond it 429 with Retry-After.",
			Responses: map[string]*huma.Response{"404": rule404,
				"429": {Description: "The caller's budget of costly requests (or of all requests) is spent", Headers: map[string]*huma.Header{"Retry-After": {Description: "Seconds until the next dry run is allowed", Schema: &huma.Schema{Type: huma.TypeInteger}}}},
				"422": {Description: "The rule's evaluation went past a budget (evaluation budget, at path.id), or its stored schema no longer passes the guards (at body.schema)"},
				"503": {Description: "The category's data (another plugin's dataset) could not be read"}}}, h.evaluate),
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

func (h *Handlers) now() time.Time {
	// Microseconds, as PostgreSQL keeps them, so a rule reads back as it
	// was written.
	return h.Evaluator.now().Truncate(time.Microsecond)
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*rulePage, error) {
	lq := ListQuery{TenantIDs: in.Tenants, Category: in.Category, Limit: in.Limit, Offset: in.Offset}
	if in.IsActive.Set {
		lq.Active = in.IsActive.Ptr()
	}
	rows, total, err := h.Store.List(ctx, lq)
	if err != nil {
		return nil, err
	}
	out := make([]View, len(rows))
	for i := range rows {
		out[i] = viewOf(&rows[i])
	}
	return &rulePage{Total: total, Body: out}, nil
}

// find returns the rule if the caller may see it and it is not deleted,
// or a 404.
func (h *Handlers) find(ctx context.Context, id int64) (*Rule, error) {
	rule, err := h.Store.Get(ctx, id, sdk.PrincipalFrom(ctx).TenantIDs)
	if err == nil && rule == nil {
		err = sdk.NotFound("no rule " + strconv.FormatInt(id, 10))
	}
	return rule, err
}

func (h *Handlers) get(ctx context.Context, in *RuleID) (*View, error) {
	rule, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	v := viewOf(rule)
	return &v, nil
}

func (h *Handlers) create(ctx context.Context, in *createIn) (*View, error) {
	p := sdk.PrincipalFrom(ctx)
	tenantID, err := tenantOf(in.Body.TenantID, in.Picked, p)
	if err != nil {
		return nil, err
	}
	now := h.now()
	rule := &Rule{TenantID: tenantID, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	if err := apply(rule, &in.Body.Definition); err != nil {
		return nil, err
	}
	if err := h.Store.Create(ctx, rule); err != nil {
		return nil, err
	}
	h.audit(ctx, "compliance_rule.create.success", rule, map[string]any{"rule_name": rule.Name, "category": rule.Category, "severity": rule.Severity})
	v := viewOf(rule)
	return &v, nil
}

func (h *Handlers) put(ctx context.Context, in *putIn) (*View, error) {
	rule, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	if in.Body.TenantID != "" && in.Body.TenantID != rule.TenantID {
		return nil, sdk.Invalid("body.tenant_id", "cannot be changed; create the rule in the other tenant")
	}
	if err := apply(rule, &in.Body.Definition); err != nil {
		return nil, err
	}
	rule.UpdatedAt = h.now()
	updated, err := h.Store.Update(ctx, rule)
	if err != nil {
		return nil, err
	}
	if !updated {
		return nil, sdk.NotFound("no rule " + strconv.FormatInt(rule.ID, 10))
	}
	h.audit(ctx, "compliance_rule.update.success", rule, map[string]any{"rule_name": rule.Name, "category": rule.Category,
		"severity": rule.Severity, "effect": rule.Effect, "is_active": rule.IsActive})
	v := viewOf(rule)
	return &v, nil
}

func (h *Handlers) delete(ctx context.Context, in *RuleID) (*sdk.Empty, error) {
	rule, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	deleted, err := h.Store.Delete(ctx, rule, h.now())
	if err != nil {
		return nil, err
	}
	if !deleted {
		return nil, sdk.NotFound("no rule " + strconv.FormatInt(rule.ID, 10))
	}
	h.audit(ctx, "compliance_rule.delete.success", rule, map[string]any{"rule_name": rule.Name})
	return &sdk.Empty{}, nil
}

func (h *Handlers) evaluate(ctx context.Context, in *RuleID) (*DryRun, error) {
	rule, err := h.find(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	at := h.now()
	res, err := h.Evaluator.DryRun(ctx, rule)
	switch {
	case errors.Is(err, ErrSource):
		return nil, sdk.Unavailable(err.Error())
	case errors.Is(err, ErrBudget):
		return nil, sdk.Invalid("path.id", "%s", err.Error())
	case err != nil:
		return nil, err
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
	return &out, nil
}
