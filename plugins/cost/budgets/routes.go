package budgets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Host is what the routes need of the host; *sdk.Host provides it.
type Host interface {
	Audit(ctx context.Context, e sdk.AuditEntry) error
	Tenants(ctx context.Context, ids ...string) ([]sdk.Tenant, error)
}

// Handlers serves the budget routes.
type Handlers struct {
	Store     *Store
	Evaluator *Evaluator
	Syncer    *Syncer
	Host      Host
	Logger    hclog.Logger
}

const tag = "budgets"

func float(v float64) *float64 { return &v }

var (
	tenantIDsParam = &huma.Param{Name: "tenant_ids", In: "query", Description: "Only these tenants (each must be one the caller may see); all the caller's when omitted",
		Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}}}
	budgetIDParam = &huma.Param{Name: "budget_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString, Format: "uuid"}}
	offsetParam   = &huma.Param{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(0), Default: 0}}
	alertStatus   = &huma.Param{Name: "status", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{AlertPending, AlertAcknowledged, AlertResolved, AlertDismissed}}}
	alertLimit    = &huma.Param{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500), Default: 50}}
	totalHeader   = map[string]*huma.Param{"X-Total-Count": {Description: "How many match in all, beyond this page", Schema: &huma.Schema{Type: huma.TypeInteger}}}
)

func jsonBody(description string, schema *huma.Schema, required bool) *huma.RequestBody {
	return &huma.RequestBody{Description: description, Required: required, Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}}
}

func withTotal(r *huma.Response) *huma.Response {
	r.Headers = totalHeader
	return r
}

// createSchema documents the create body; the handler checks it (body.go).
func createSchema() *huma.Schema {
	s := sdk.SchemaOf(createBody{})
	s.AdditionalProperties = false
	return s
}

// createBody documents the body of POST /api/v1/budgets.
type createBody struct {
	TenantID       string         `json:"tenant_id" doc:"The tenant, one the caller may see"`
	SubscriptionID *string        `json:"subscription_id,omitempty" required:"false" nullable:"true" doc:"A subscription of the tenant; omitted or null for a budget of the whole tenant"`
	Name           string         `json:"name" minLength:"1" maxLength:"100" doc:"Unique in the tenant and scope, case-insensitively; a name holding markup (< or >) is refused"`
	Amount         float64        `json:"amount" exclusiveMinimum:"0" maximum:"10000000000" doc:"Per period, at most two decimals"`
	Currency       string         `json:"currency,omitempty" required:"false" pattern:"^[A-Z]{3}$" default:"USD" doc:"ISO 4217; only costs in this currency count"`
	TimeGrain      string         `json:"time_grain" enum:"Monthly,Quarterly,Annually"`
	StartDate      string         `json:"start_date" format:"date" doc:"The first day of a month, 2000-01-01 through 2099-12-01"`
	EndDate        *string        `json:"end_date,omitempty" required:"false" nullable:"true" format:"date" doc:"After start_date; omitted or null for no end"`
	Thresholds     []Threshold    `json:"thresholds" minItems:"1" maxItems:"5"`
	Notifications  *Notifications `json:"notifications,omitempty" required:"false"`
}

// patchSchema documents the PATCH body: the create body's fields, none
// required.
func patchSchema() *huma.Schema {
	s := createSchema()
	s.Required = nil
	return s
}

type ackBody struct {
	ResolutionNote *string `json:"resolution_note,omitempty" required:"false" nullable:"true" maxLength:"1000"`
}

type bulkBody struct {
	AlertIDs       []int64 `json:"alert_ids" minItems:"1" maxItems:"500" doc:"Alerts to acknowledge; all or none are"`
	ResolutionNote *string `json:"resolution_note,omitempty" required:"false" nullable:"true" maxLength:"1000"`
}

type syncBody struct {
	TenantIDs []string `json:"tenant_ids,omitempty" required:"false" doc:"Only these tenants; all the caller's when omitted"`
}

// AckResult answers an acknowledgement.
type AckResult struct {
	Success bool      `json:"success"`
	Changed bool      `json:"changed" doc:"false when the alert was already acknowledged"`
	Alert   AlertView `json:"alert"`
}

// BulkAckResult answers a bulk acknowledgement.
type BulkAckResult struct {
	Success             bool        `json:"success"`
	Acknowledged        int         `json:"acknowledged" doc:"Alerts moved from pending to acknowledged"`
	AlreadyAcknowledged int         `json:"already_acknowledged"`
	Alerts              []AlertView `json:"alerts"`
}

// BudgetSyncResult answers the sync of one budget.
type BudgetSyncResult struct {
	BudgetSync
	Budget View `json:"budget"`
}

const statusRule = " Status: utilisation is the current period's spend / amount; exceeded from 100 %, critical from 90 %, " +
	"warning from the budget's lowest Actual threshold, active below."

// Routes declares the budget routes.
func (h *Handlers) Routes() []sdk.Route {
	budget404 := &huma.Response{Description: "No such budget, or it belongs to a tenant the caller may not see"}
	invalid := &huma.Response{Description: "The body is invalid; errors name each bad field as body.<field>"}
	unavailable := &huma.Response{Description: "The cloud provider failed or refused; nothing changed in Steward"}
	return []sdk.Route{
		{Method: http.MethodGet, Path: "/api/v1/budgets", TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "budgets-list", Tags: []string{tag}, Summary: "Budgets of the caller's tenants",
			Description: "A JSON array, one page of it; X-Total-Count says how many match." + statusRule,
			Parameters: []*huma.Param{tenantIDsParam,
				{Name: "subscription_ids", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}}},
				{Name: "status", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{StatusActive, StatusWarning, StatusCritical, StatusExceeded}}},
				{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(1000), Default: 100}},
				offsetParam,
				{Name: "sort_by", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: anySlice(SortKeys), Default: "created_at"}},
				{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "desc"}},
			},
			Responses: map[string]*huma.Response{"200": withTotal(sdk.JSONResponse("Budgets", []View{}))},
		}},
		{Method: http.MethodPost, Path: "/api/v1/budgets", Handler: h.create, Operation: &huma.Operation{
			OperationID: "budgets-create", Tags: []string{tag}, Summary: "Create a budget",
			Description: "The caller must be able to see the tenant (403 otherwise). Thresholds: 1 to 5, each a whole percentage from 1 to 1000 " +
				"with 1 to 50 e-mail addresses, unique per threshold type. The budget is evaluated at once." + statusRule,
			RequestBody: jsonBody("The budget", createSchema(), true),
			Responses: map[string]*huma.Response{"201": sdk.JSONResponse("The budget", Detail{}), "403": {Description: "The caller may not see the tenant"},
				"409": {Description: "The tenant already has a budget of that name in that scope"}, "422": invalid},
		}},
		{Method: http.MethodGet, Path: "/api/v1/budgets/summary", TenantScoped: true, Handler: h.summary, Operation: &huma.Operation{
			OperationID: "budgets-summary", Tags: []string{tag}, Summary: "Budgets by status and currency, alerts by status and type",
			Parameters: []*huma.Param{tenantIDsParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Summary", Summary{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/budgets/alerts/all", TenantScoped: true, Handler: h.allAlerts, Operation: &huma.Operation{
			OperationID: "budgets-alerts-all", Tags: []string{tag}, Summary: "Budget alerts across the caller's tenants, newest first",
			Description: "A JSON array, one page of it; X-Total-Count says how many match.",
			Parameters: []*huma.Param{tenantIDsParam,
				{Name: "alert_types", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, Enum: []any{AlertThreshold, AlertForecast}}}},
				alertStatus, alertLimit, offsetParam},
			Responses: map[string]*huma.Response{"200": withTotal(sdk.JSONResponse("Alerts", []AlertView{}))},
		}},
		{Method: http.MethodPost, Path: "/api/v1/budgets/alerts/bulk-acknowledge", Handler: h.bulkAcknowledge, Operation: &huma.Operation{
			OperationID: "budgets-alerts-bulk-acknowledge", Tags: []string{tag}, Summary: "Acknowledge budget alerts, all or none",
			Description: "If any id is not an alert the caller may see (404) or is resolved or dismissed (409), none is acknowledged and the problem names those ids. " +
				"Alerts already acknowledged stay as they were.",
			RequestBody: jsonBody("The alerts and an optional note", sdk.SchemaOf(bulkBody{}), true),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("What changed", BulkAckResult{}), "404": {Description: "Some ids are not alerts the caller may see"},
				"409": {Description: "Some alerts are resolved or dismissed"}, "422": invalid},
		}},
		{Method: http.MethodPost, Path: "/api/v1/budgets/alerts/{alert_id}/acknowledge", Handler: h.acknowledge, Operation: &huma.Operation{
			OperationID: "budgets-alert-acknowledge", Tags: []string{tag}, Summary: "Acknowledge a budget alert",
			Description: "The body is optional (it may be empty or null). Acknowledging an acknowledged alert again changes nothing.",
			Parameters:  []*huma.Param{{Name: "alert_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1)}}},
			RequestBody: jsonBody("An optional resolution note", sdk.SchemaOf(ackBody{}), false),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("The alert", AckResult{}), "404": {Description: "No such alert, or of a tenant the caller may not see"},
				"409": {Description: "The alert is resolved or dismissed"}, "422": invalid},
		}},
		{Method: http.MethodPost, Path: "/api/v1/budgets/sync/all", RateClass: sdk.RateSync, Handler: h.syncAll, Operation: &huma.Operation{
			OperationID: "budgets-sync-all", Tags: []string{tag}, Summary: "Exchange the caller's tenants' budgets with the cloud provider",
			Description: "Pulls the provider budgets of every subscription of the tenants into Steward (source provider), removes those the provider no longer has, " +
				"and pushes the tenants' Steward subscription budgets to the provider as steward-<id>. Budgets of a whole tenant stay in Steward. " +
				"The body is optional. A subscription or budget that fails is counted and named in errors; the others sync.",
			RequestBody: jsonBody("Optional parameters", sdk.SchemaOf(syncBody{}), false),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("What the sync did", SyncResult{}), "403": {Description: "A named tenant is not one the caller may see"},
				"422": invalid, "503": unavailable},
		}},
		{Method: http.MethodGet, Path: "/api/v1/budgets/{budget_id}", Handler: h.get, Operation: &huma.Operation{
			OperationID: "budgets-get", Tags: []string{tag}, Summary: "A budget with its thresholds and recent alerts",
			Parameters: []*huma.Param{budgetIDParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("The budget", Detail{}), "404": budget404},
		}},
		{Method: http.MethodPatch, Path: "/api/v1/budgets/{budget_id}", Handler: h.patch, Operation: &huma.Operation{
			OperationID: "budgets-update", Tags: []string{tag}, Summary: "Change a budget's given fields",
			Description: "Only the fields present change; null clears end_date or notifications, and is refused for a required field. " +
				"tenant_id and subscription_id cannot change. A budget pulled from the provider is the provider's and cannot be changed here (409). " +
				"The budget is evaluated again at once.",
			Parameters:  []*huma.Param{budgetIDParam},
			RequestBody: jsonBody("The fields to change", patchSchema(), true),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("The budget", Detail{}), "404": budget404,
				"409": {Description: "The new name is taken in the tenant and scope, or the budget is the provider's"}, "422": invalid},
		}},
		{Method: http.MethodDelete, Path: "/api/v1/budgets/{budget_id}", Handler: h.delete, Operation: &huma.Operation{
			OperationID: "budgets-delete", Tags: []string{tag}, Summary: "Delete a budget and its alerts",
			Description: "A budget exchanged with the provider is deleted there first; if that fails, nothing is deleted (503).",
			Parameters:  []*huma.Param{budgetIDParam},
			Responses:   map[string]*huma.Response{"204": {Description: "Deleted"}, "404": budget404, "503": unavailable},
		}},
		{Method: http.MethodGet, Path: "/api/v1/budgets/{budget_id}/alerts", Handler: h.budgetAlerts, Operation: &huma.Operation{
			OperationID: "budgets-alerts", Tags: []string{tag}, Summary: "A budget's alerts, newest first",
			Description: "A JSON array, one page of it; X-Total-Count says how many match.",
			Parameters:  []*huma.Param{budgetIDParam, alertStatus, alertLimit, offsetParam},
			Responses:   map[string]*huma.Response{"200": withTotal(sdk.JSONResponse("Alerts", []AlertView{})), "404": budget404},
		}},
		{Method: http.MethodPost, Path: "/api/v1/budgets/{budget_id}/sync", RateClass: sdk.RateSync, Handler: h.syncOne, Operation: &huma.Operation{
			OperationID: "budgets-sync", Tags: []string{tag}, Summary: "Exchange one budget with the cloud provider",
			Description: "A Steward budget of a subscription is pushed (written to the provider, which answers with its current spend and forecast); " +
				"a provider budget is pulled (its definition, current spend and forecast read into Steward). A budget of a whole tenant has no provider counterpart (409).",
			Parameters: []*huma.Param{budgetIDParam},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("What the sync did", BudgetSyncResult{}), "404": budget404,
				"409": {Description: "The budget is of a whole tenant"}, "503": unavailable},
		}},
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// intParam reads a declared integer parameter the host has checked and
// defaulted.
func intParam(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

// audit records a change; a failure to record is logged, since the change
// itself is made.
func (h *Handlers) audit(ctx context.Context, action, tenantID, resourceType, id string, details map[string]any) {
	status := "success"
	if strings.HasSuffix(action, ".warning") {
		status = "warning"
	}
	err := h.Host.Audit(ctx, sdk.AuditEntry{Action: action, Status: status, TenantID: tenantID, ResourceType: resourceType, ResourceID: id, Details: details})
	if err != nil && h.Logger != nil {
		h.Logger.Error("audit entry not recorded", "action", action, "resource_id", id, "error", err)
	}
}

// writeError answers err; one that is not a problem is logged, since the
// caller is told only that it was internal.
func (h *Handlers) writeError(w http.ResponseWriter, err error) {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("budget request failed", "error", err)
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
	rows, total, err := h.Store.List(r.Context(), ListQuery{TenantIDs: tenants, SubscriptionIDs: sdk.QueryList(r, "subscription_ids"),
		Status: q.Get("status"), SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") != "asc",
		Limit: intParam(r, "limit"), Offset: intParam(r, "offset")})
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

func (h *Handlers) summary(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		h.writeError(w, err)
		return
	}
	s, err := h.Store.Summary(r.Context(), tenants)
	if err != nil {
		h.writeError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, s)
}

// find returns the budget of the path if the caller may see it, or
// writes 404.
func (h *Handlers) find(w http.ResponseWriter, r *http.Request) *Budget {
	id := r.PathValue("budget_id")
	b, err := h.Store.Get(r.Context(), id, sdk.PrincipalFrom(r.Context()).TenantIDs)
	if err != nil {
		h.writeError(w, err)
		return nil
	}
	if b == nil {
		h.writeError(w, sdk.NotFound("no budget "+id))
		return nil
	}
	return b
}

func (h *Handlers) writeDetail(w http.ResponseWriter, r *http.Request, status int, b *Budget) {
	alerts, err := h.Store.Recent(r.Context(), b)
	if err != nil {
		h.writeError(w, err)
		return
	}
	sdk.WriteJSON(w, status, Detail{View: viewOf(b), RecentAlerts: alertViews(alerts)})
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	if b := h.find(w, r); b != nil {
		h.writeDetail(w, r, http.StatusOK, b)
	}
}

// checkSubscription refuses a subscription that is not known to be the
// tenant's: its directory entry's subscription, or one with costs of the
// tenant in the ledger.
func (h *Handlers) checkSubscription(ctx context.Context, b *Budget) error {
	if b.SubscriptionID == "" {
		return nil
	}
	tenants, err := h.Host.Tenants(ctx, b.TenantID)
	if err != nil {
		return err
	}
	if len(tenants) == 1 && tenants[0].SubscriptionID == b.SubscriptionID {
		return nil
	}
	ok, err := h.Store.HasCosts(ctx, b.TenantID, b.SubscriptionID)
	if err != nil {
		return err
	}
	if !ok {
		return sdk.Invalid("body.subscription_id", "is not a subscription of the tenant")
	}
	return nil
}

func (h *Handlers) create(w http.ResponseWriter, r *http.Request) {
	f, err := readObject(r, false)
	if err != nil {
		h.writeError(w, err)
		return
	}
	p := sdk.PrincipalFrom(r.Context())
	var tenantID string
	if json.Unmarshal(f["tenant_id"], &tenantID) == nil && tenantID != "" && !p.CanSee(tenantID) {
		h.writeError(w, sdk.Forbidden("no access to the tenant"))
		return
	}
	now := h.Evaluator.now()
	b := &Budget{ID: uuid.NewString(), Source: SourceSteward, Status: StatusActive, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	if err := apply(b, f, true); err != nil {
		h.writeError(w, err)
		return
	}
	if b.TenantID == "" {
		h.writeError(w, sdk.Invalid("body.tenant_id", "must not be empty"))
		return
	}
	if err := h.checkSubscription(r.Context(), b); err != nil {
		h.writeError(w, err)
		return
	}
	if b.SubscriptionID != "" {
		b.ProviderName = providerName(b.ID)
	}
	b.PeriodStart = b.PeriodOn(ledger.DayOf(now)).Start
	if err := h.Store.Create(r.Context(), b); err != nil {
		h.writeStoreError(w, err)
		return
	}
	if _, err := h.Evaluator.EvaluateBudget(r.Context(), b); err != nil {
		h.writeError(w, err)
		return
	}
	h.audit(r.Context(), "budget.create.success", b.TenantID, "budget", b.ID, map[string]any{"name": b.Name, "amount": b.Amount.String(), "currency": b.Currency})
	h.writeDetail(w, r, http.StatusCreated, b)
}

func (h *Handlers) writeStoreError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrDuplicate) {
		err = sdk.Conflict(ErrDuplicate.Error())
	}
	h.writeError(w, err)
}

func (h *Handlers) patch(w http.ResponseWriter, r *http.Request) {
	b := h.find(w, r)
	if b == nil {
		return
	}
	f, err := readObject(r, false)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if b.Source == SourceProvider {
		h.writeError(w, sdk.Conflict("the budget was pulled from the provider, which owns it: change it there and sync"))
		return
	}
	if err := apply(b, f, false); err != nil {
		h.writeError(w, err)
		return
	}
	b.UpdatedAt = h.Evaluator.now()
	if err := h.Store.Update(r.Context(), b); err != nil {
		h.writeStoreError(w, err)
		return
	}
	if _, err := h.Evaluator.EvaluateBudget(r.Context(), b); err != nil {
		h.writeError(w, err)
		return
	}
	changed := make([]string, 0, len(f))
	for k := range f {
		changed = append(changed, k)
	}
	h.audit(r.Context(), "budget.update.success", b.TenantID, "budget", b.ID, map[string]any{"fields": changed})
	h.writeDetail(w, r, http.StatusOK, b)
}

func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) {
	b := h.find(w, r)
	if b == nil {
		return
	}
	if err := h.Syncer.DeleteRemote(r.Context(), b); err != nil {
		h.writeError(w, sdk.Unavailable(fmt.Sprintf("the provider did not delete budget %s: %v", b.ProviderName, err)))
		return
	}
	if err := h.Store.Delete(r.Context(), b.ID); err != nil {
		h.writeError(w, err)
		return
	}
	h.audit(r.Context(), "budget.delete.success", b.TenantID, "budget", b.ID, map[string]any{"name": b.Name})
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handlers) budgetAlerts(w http.ResponseWriter, r *http.Request) {
	b := h.find(w, r)
	if b == nil {
		return
	}
	h.writeAlerts(w, r, AlertQuery{TenantIDs: []string{b.TenantID}, BudgetID: b.ID})
}

func (h *Handlers) allAlerts(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		h.writeError(w, err)
		return
	}
	h.writeAlerts(w, r, AlertQuery{TenantIDs: tenants, Types: sdk.QueryList(r, "alert_types")})
}

func (h *Handlers) writeAlerts(w http.ResponseWriter, r *http.Request, q AlertQuery) {
	q.Status, q.Limit, q.Offset = r.URL.Query().Get("status"), intParam(r, "limit"), intParam(r, "offset")
	rows, total, err := h.Store.Alerts(r.Context(), q)
	if err != nil {
		h.writeError(w, err)
		return
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	sdk.WriteJSON(w, http.StatusOK, alertViews(rows))
}

// ackError turns a refused acknowledgement into its problem.
func ackError(err error) error {
	var ae *AckError
	if !errors.As(err, &ae) {
		return err
	}
	if len(ae.Missing) > 0 {
		return sdk.NotFound(ae.Error())
	}
	return sdk.Conflict(ae.Error())
}

func (h *Handlers) acknowledge(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("alert_id"), 10, 64)
	f, err := readObject(r, true)
	if err != nil {
		h.writeError(w, err)
		return
	}
	note, err := ackNote(f)
	if err != nil {
		h.writeError(w, err)
		return
	}
	p := sdk.PrincipalFrom(r.Context())
	rows, changed, err := h.Store.Acknowledge(r.Context(), []int64{id}, p.TenantIDs, p.ID, note, h.Evaluator.now())
	if err != nil {
		h.writeError(w, ackError(err))
		return
	}
	a := rows[0]
	if len(changed) > 0 {
		h.audit(r.Context(), "budget_alert.acknowledge.success", a.TenantID, "budget_alert", strconv.FormatInt(a.ID, 10),
			map[string]any{"budget_id": a.BudgetID, "resolution_note": note})
	}
	sdk.WriteJSON(w, http.StatusOK, AckResult{Success: true, Changed: len(changed) > 0, Alert: alertViewOf(a)})
}

func (h *Handlers) bulkAcknowledge(w http.ResponseWriter, r *http.Request) {
	f, err := readObject(r, false)
	if err != nil {
		h.writeError(w, err)
		return
	}
	ids, note, err := bulkAck(f)
	if err != nil {
		h.writeError(w, err)
		return
	}
	p := sdk.PrincipalFrom(r.Context())
	rows, changed, err := h.Store.Acknowledge(r.Context(), ids, p.TenantIDs, p.ID, note, h.Evaluator.now())
	if err != nil {
		h.writeError(w, ackError(err))
		return
	}
	// One entry per tenant whose alerts changed.
	byTenant := map[string][]int64{}
	for _, a := range rows {
		for _, c := range changed {
			if a.ID == c {
				byTenant[a.TenantID] = append(byTenant[a.TenantID], a.ID)
			}
		}
	}
	for tenant, ids := range byTenant {
		h.audit(r.Context(), "budget_alert.bulk_acknowledge.success", tenant, "budget_alert", "", map[string]any{"alert_ids": ids, "resolution_note": note})
	}
	sdk.WriteJSON(w, http.StatusOK, BulkAckResult{Success: true, Acknowledged: len(changed), AlreadyAcknowledged: len(ids) - len(changed), Alerts: alertViews(rows)})
}

// syncFailed turns a cloud failure into a 503 naming it.
func syncFailed(err error) error {
	var p *sdk.Problem
	if errors.As(err, &p) {
		return err
	}
	return sdk.Unavailable("budget sync failed: " + err.Error())
}

func (h *Handlers) syncOne(w http.ResponseWriter, r *http.Request) {
	b := h.find(w, r)
	if b == nil {
		return
	}
	res, err := h.Syncer.SyncBudget(r.Context(), b)
	if errors.Is(err, ErrNoCounterpart) {
		h.writeError(w, sdk.Conflict(err.Error()))
		return
	}
	if err != nil {
		h.writeError(w, syncFailed(err))
		return
	}
	h.audit(r.Context(), "budget.sync.success", b.TenantID, "budget", b.ID, map[string]any{"action": res.Action, "provider_name": res.ProviderName})
	sdk.WriteJSON(w, http.StatusOK, BudgetSyncResult{BudgetSync: res, Budget: viewOf(b)})
}

func (h *Handlers) syncAll(w http.ResponseWriter, r *http.Request) {
	f, err := readObject(r, true)
	if err != nil {
		h.writeError(w, err)
		return
	}
	p := sdk.PrincipalFrom(r.Context())
	ids := p.TenantIDs
	for k, raw := range f {
		if k != "tenant_ids" {
			h.writeError(w, sdk.Invalid("body."+k, "is not a sync parameter"))
			return
		}
		if jsonbody.IsNull(raw) {
			continue
		}
		var named []string
		if err := json.Unmarshal(raw, &named); err != nil {
			h.writeError(w, sdk.Invalid("body.tenant_ids", "must be an array of tenant ids"))
			return
		}
		for _, id := range named {
			if !p.CanSee(id) {
				h.writeError(w, sdk.Forbidden("no access to a requested tenant"))
				return
			}
		}
		if len(named) > 0 {
			ids = named
		}
	}
	var tenants []sdk.Tenant
	if len(ids) > 0 {
		if tenants, err = h.Host.Tenants(r.Context(), ids...); err != nil {
			h.writeError(w, err)
			return
		}
	}
	res, err := h.Syncer.SyncTenants(r.Context(), tenants)
	if err != nil {
		h.writeError(w, syncFailed(err))
		return
	}
	outcome := "budget.sync_all.success"
	if res.Failed > 0 {
		outcome = "budget.sync_all.warning"
	}
	for _, t := range tenants {
		h.audit(r.Context(), outcome, t.ID, "budget", "", map[string]any{
			"created": res.Created, "updated": res.Updated, "removed": res.Removed, "pushed": res.Pushed, "failed": res.Failed})
	}
	sdk.WriteJSON(w, http.StatusOK, res)
}
