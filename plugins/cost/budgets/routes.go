package budgets

import (
	"context"
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
	"github.com/stewardhq/steward/sdk/protocol"
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

// BudgetRef names a budget in the path.
type BudgetRef struct {
	ID string `path:"budget_id" format:"uuid"`
}

// AlertParams filter and page a list of alerts.
type AlertParams struct {
	Status string `query:"status" enum:"pending,acknowledged,resolved,dismissed"`
	Limit  int    `query:"limit" minimum:"1" maximum:"500" default:"50"`
	Offset int    `query:"offset" minimum:"0" default:"0"`
}

type listIn struct {
	Tenants         sdk.TenantIDs `query:"tenant_ids"`
	SubscriptionIDs []string      `query:"subscription_ids"`
	Status          string        `query:"status" enum:"active,warning,critical,exceeded"`
	Limit           int           `query:"limit" minimum:"1" maximum:"1000" default:"100"`
	Offset          int           `query:"offset" minimum:"0" default:"0"`
	SortBy          string        `query:"sort_by" enum:"created_at,updated_at,name,amount,current_spend,utilization_percent,status" default:"created_at"`
	SortOrder       string        `query:"sort_order" enum:"asc,desc" default:"desc"`
}

type summaryIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

type allAlertsIn struct {
	Tenants    sdk.TenantIDs `query:"tenant_ids"`
	AlertTypes []string      `query:"alert_types" enum:"threshold,forecast"`
	AlertParams
}

type budgetAlertsIn struct {
	BudgetRef
	AlertParams
}

type createIn struct {
	Body createBody
}

type patchIn struct {
	BudgetRef
	Body patchBody
}

type ackIn struct {
	ID   int64 `path:"alert_id" minimum:"1"`
	Body *ackBody
}

type bulkIn struct {
	Body bulkBody
}

type syncAllIn struct {
	Body *syncBody
}

// page is one page of a list, with how many match in all.
type page[T any] struct {
	Total int `header:"X-Total-Count" doc:"How many match in all, beyond this page"`
	Body  []T
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
	budget403 := &huma.Response{Description: "The budget belongs to a tenant the caller may not see; the problem tells nothing of it"}
	budget404 := &huma.Response{Description: "No such budget"}
	invalid := &huma.Response{Description: "The body is invalid; errors name each bad field as body.<field>"}
	unavailable := &huma.Response{Description: "The cloud provider failed or refused; nothing changed in Steward"}
	tags := []string{tag}
	type responses = map[string]*huma.Response
	return []sdk.Route{
		sdk.Get(budgetsPath, sdk.Op{ID: "budgets-list", Tags: tags, Summary: "Budgets of the caller's tenants",
			Description: "A JSON array, one page of it; X-Total-Count says how many match." + statusRule}, h.list),
		sdk.Post(budgetsPath, sdk.Op{ID: "budgets-create", Tags: tags, Summary: "Create a budget", Status: http.StatusCreated,
			Description: "The caller must be able to see the tenant (403 otherwise). Thresholds: 1 to 5, each a whole percentage from 1 to 1000, " +
				"unique per threshold type, with up to 50 e-mail addresses (optional: every threshold reached is an alert in Steward; " +
				"the addresses are whom the provider e-mails once a subscription's budget is pushed to it, and a threshold with none, " +
				"and no action group in notifications, is not pushed). threshold_type defaults to Actual, notifications to enabled " +
				"with no roles and no groups. The budget is evaluated at once." + statusRule,
			Responses: responses{"409": {Description: "The tenant already has a budget of that name in that scope"}, "422": invalid}}, h.create),
		sdk.Get(budgetsPath+"/summary", sdk.Op{ID: "budgets-summary", Tags: tags, Summary: "Budgets by status and currency, alerts by status and type"}, h.summary),
		sdk.Get(budgetsPath+"/alerts/all", sdk.Op{ID: "budgets-alerts-all", Tags: tags, Summary: "Budget alerts across the caller's tenants, newest first",
			Description: "A JSON array, one page of it; X-Total-Count says how many match."}, h.allAlerts),
		sdk.Post(budgetsPath+"/alerts/bulk-acknowledge", sdk.Op{ID: "budgets-alerts-bulk-acknowledge", Tags: tags, Summary: "Acknowledge budget alerts, all or none",
			Description: "If any id is not an alert the caller may see (404) or is resolved or dismissed (409), none is acknowledged and the problem names those ids. " +
				"Alerts already acknowledged stay as they were.",
			Responses: responses{"404": {Description: "Some ids are not alerts the caller may see"}, "409": {Description: "Some alerts are resolved or dismissed"}, "422": invalid}},
			h.bulkAcknowledge),
		sdk.Post(budgetsPath+"/alerts/{alert_id}/acknowledge", sdk.Op{ID: "budgets-alert-acknowledge", Tags: tags, Summary: "Acknowledge a budget alert",
			Description: "The body is optional (it may be empty or null). Acknowledging an acknowledged alert again changes nothing.",
			Responses: responses{"404": {Description: "No such alert, or of a tenant the caller may not see"}, "409": {Description: "The alert is resolved or dismissed"},
				"422": invalid}}, h.acknowledge),
		sdk.Post(budgetsPath+"/sync/all", sdk.Op{ID: "budgets-sync-all", Tags: tags, RateClass: sdk.RateSync, Summary: "Exchange the caller's tenants' budgets with the cloud provider",
			Description: "Pulls the provider budgets of every subscription of the tenants into Steward (source provider), removes those the provider no longer has, " +
				"pushes the tenants' Steward subscription budgets to the provider as steward-<id>, and sums the provider's cost for their budgets of a whole tenant " +
				"(as POST /api/v1/budgets/{budget_id}/sync does). " +
				"The body is optional. A subscription or budget that fails is counted and named in errors; the others sync.",
			Responses: responses{"422": invalid, "503": unavailable}}, h.syncAll),
		sdk.Get(budgetsPath+"/{budget_id}", sdk.Op{ID: "budgets-get", Tags: tags, Summary: "A budget with its thresholds and recent alerts",
			Responses: responses{"403": budget403, "404": budget404}}, h.get),
		sdk.Patch(budgetsPath+"/{budget_id}", sdk.Op{ID: "budgets-update", Tags: tags, Summary: "Change a budget's given fields",
			Description: "Only the fields present change; null clears end_date or notifications, and is refused for a required field. " +
				"tenant_id and subscription_id cannot change. A budget pulled from the provider is the provider's and cannot be changed here (409). " +
				"The budget is evaluated again at once.",
			Responses: responses{"403": budget403, "404": budget404, "409": {Description: "The new name is taken in the tenant and scope, or the budget is the provider's"}, "422": invalid}},
			h.patch),
		sdk.Delete(budgetsPath+"/{budget_id}", sdk.Op{ID: "budgets-delete", Tags: tags, Summary: "Delete a budget and its alerts",
			Description: "A budget exchanged with the provider is deleted there first; if that fails, nothing is deleted (503).",
			Responses:   responses{"204": {Description: "Deleted"}, "403": budget403, "404": budget404, "503": unavailable}}, h.delete),
		sdk.Get(budgetsPath+"/{budget_id}/alerts", sdk.Op{ID: "budgets-alerts", Tags: tags, Summary: "A budget's alerts, newest first",
			Description: "A JSON array, one page of it; X-Total-Count says how many match.", Responses: responses{"403": budget403, "404": budget404}}, h.budgetAlerts),
		sdk.Post(budgetsPath+"/{budget_id}/sync", sdk.Op{ID: "budgets-sync", Tags: tags, RateClass: sdk.RateSync, Summary: "Exchange one budget with the cloud provider",
			Description: "A Steward budget of a subscription is pushed (written to the provider, which answers with its current spend and forecast); " +
				"a provider budget is pulled (its definition, current spend and forecast read into Steward). " +
				"A budget of a whole tenant has no counterpart at the provider, whose budgets are per subscription: it is summed " +
				"(the provider's actual cost of its current period so far, in its currency, added up over every subscription of the tenant " +
				"the provider reports, with a forecast at that cost's daily average). The budget is evaluated again at once; " +
				"its current_spend stays that of Steward's cost data, the provider's figures are the provider_* members.",
			Responses: responses{"403": budget403, "404": budget404, "503": unavailable}}, h.syncOne),
	}
}

const budgetsPath = "/api/v1/budgets"

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

// logged is err, logged when it is not a problem, since the caller is
// told only that it was internal.
func (h *Handlers) logged(err error) error {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("budget request failed", "error", err)
	}
	return err
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*page[View], error) {
	rows, total, err := h.Store.List(ctx, ListQuery{TenantIDs: in.Tenants, SubscriptionIDs: in.SubscriptionIDs,
		Status: in.Status, SortBy: in.SortBy, Desc: in.SortOrder != "asc", Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return nil, h.logged(err)
	}
	out := make([]View, len(rows))
	for i := range rows {
		out[i] = viewOf(&rows[i])
	}
	return &page[View]{Total: total, Body: out}, nil
}

func (h *Handlers) summary(ctx context.Context, in *summaryIn) (*Summary, error) {
	s, err := h.Store.Summary(ctx, in.Tenants)
	if err != nil {
		return nil, h.logged(err)
	}
	return &s, nil
}

// find returns the budget named if the caller may see it. A budget that
// does not exist is 404; one of a tenant the caller may not see is 403
// (the interface's Errors rule 1), with the one wording of every tenant
// refusal, so that nothing of the budget or its tenant is told.
func (h *Handlers) find(ctx context.Context, ref BudgetRef) (*Budget, error) {
	b, err := h.Store.Get(ctx, ref.ID)
	if err != nil {
		return nil, h.logged(err)
	}
	if b == nil {
		return nil, sdk.NotFound("no budget " + ref.ID)
	}
	if !sdk.PrincipalFrom(ctx).CanSee(b.TenantID) {
		return nil, sdk.Forbidden(protocol.MsgNoTenantAccess)
	}
	return b, nil
}

func (h *Handlers) detail(ctx context.Context, b *Budget) (*Detail, error) {
	alerts, err := h.Store.Recent(ctx, b)
	if err != nil {
		return nil, h.logged(err)
	}
	return &Detail{View: viewOf(b), RecentAlerts: alertViews(alerts)}, nil
}

func (h *Handlers) get(ctx context.Context, in *BudgetRef) (*Detail, error) {
	b, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	return h.detail(ctx, b)
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

func (h *Handlers) create(ctx context.Context, in *createIn) (*Detail, error) {
	p := sdk.PrincipalFrom(ctx)
	now := h.Evaluator.now()
	b := &Budget{ID: uuid.NewString(), Source: SourceSteward, Status: StatusActive, CreatedBy: p.ID, CreatedAt: now, UpdatedAt: now}
	if err := apply(b, in.Body.members, true); err != nil {
		return nil, err
	}
	if b.TenantID == "" {
		return nil, sdk.Invalid("body.tenant_id", "must not be empty")
	}
	if err := h.checkSubscription(ctx, b); err != nil {
		return nil, h.logged(err)
	}
	if b.SubscriptionID != "" {
		b.ProviderName = providerName(b.ID)
	}
	b.PeriodStart = b.PeriodOn(ledger.DayOf(now)).Start
	if err := h.Store.Create(ctx, b); err != nil {
		return nil, h.storeError(err)
	}
	if _, err := h.Evaluator.EvaluateBudget(ctx, b); err != nil {
		return nil, h.logged(err)
	}
	h.audit(ctx, "budget.create.success", b.TenantID, "budget", b.ID, map[string]any{"name": b.Name, "amount": b.Amount.String(), "currency": b.Currency})
	return h.detail(ctx, b)
}

func (h *Handlers) storeError(err error) error {
	if errors.Is(err, ErrDuplicate) {
		return sdk.Conflict(ErrDuplicate.Error())
	}
	return h.logged(err)
}

func (h *Handlers) patch(ctx context.Context, in *patchIn) (*Detail, error) {
	b, err := h.find(ctx, in.BudgetRef)
	if err != nil {
		return nil, err
	}
	f := in.Body.members
	if b.Source == SourceProvider {
		return nil, sdk.Conflict("the budget was pulled from the provider, which owns it: change it there and sync")
	}
	if err := apply(b, f, false); err != nil {
		return nil, err
	}
	b.UpdatedAt = h.Evaluator.now()
	if err := h.Store.Update(ctx, b); err != nil {
		return nil, h.storeError(err)
	}
	if _, err := h.Evaluator.EvaluateBudget(ctx, b); err != nil {
		return nil, h.logged(err)
	}
	changed := make([]string, 0, len(f))
	for k := range f {
		changed = append(changed, k)
	}
	h.audit(ctx, "budget.update.success", b.TenantID, "budget", b.ID, map[string]any{"fields": changed})
	return h.detail(ctx, b)
}

func (h *Handlers) delete(ctx context.Context, in *BudgetRef) (*sdk.Empty, error) {
	b, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	if err := h.Syncer.DeleteRemote(ctx, b); err != nil {
		return nil, sdk.Unavailable(fmt.Sprintf("the provider did not delete budget %s: %v", b.ProviderName, err))
	}
	if err := h.Store.Delete(ctx, b.ID); err != nil {
		return nil, h.logged(err)
	}
	h.audit(ctx, "budget.delete.success", b.TenantID, "budget", b.ID, map[string]any{"name": b.Name})
	return &sdk.Empty{}, nil
}

func (h *Handlers) budgetAlerts(ctx context.Context, in *budgetAlertsIn) (*page[AlertView], error) {
	b, err := h.find(ctx, in.BudgetRef)
	if err != nil {
		return nil, err
	}
	return h.alerts(ctx, in.AlertParams, AlertQuery{TenantIDs: []string{b.TenantID}, BudgetID: b.ID})
}

func (h *Handlers) allAlerts(ctx context.Context, in *allAlertsIn) (*page[AlertView], error) {
	return h.alerts(ctx, in.AlertParams, AlertQuery{TenantIDs: in.Tenants, Types: in.AlertTypes})
}

func (h *Handlers) alerts(ctx context.Context, p AlertParams, q AlertQuery) (*page[AlertView], error) {
	q.Status, q.Limit, q.Offset = p.Status, p.Limit, p.Offset
	rows, total, err := h.Store.Alerts(ctx, q)
	if err != nil {
		return nil, h.logged(err)
	}
	return &page[AlertView]{Total: total, Body: alertViews(rows)}, nil
}

// ackError turns a refused acknowledgement into its problem.
func (h *Handlers) ackError(err error) error {
	var ae *AckError
	if !errors.As(err, &ae) {
		return h.logged(err)
	}
	if len(ae.Missing) > 0 {
		return sdk.NotFound(ae.Error())
	}
	return sdk.Conflict(ae.Error())
}

func (h *Handlers) acknowledge(ctx context.Context, in *ackIn) (*AckResult, error) {
	var note *string
	if in.Body != nil {
		note = noteOf(in.Body.ResolutionNote)
	}
	p := sdk.PrincipalFrom(ctx)
	rows, changed, err := h.Store.Acknowledge(ctx, []int64{in.ID}, p.TenantIDs, p.ID, note, h.Evaluator.now())
	if err != nil {
		return nil, h.ackError(err)
	}
	a := rows[0]
	if len(changed) > 0 {
		h.audit(ctx, "budget_alert.acknowledge.success", a.TenantID, "budget_alert", strconv.FormatInt(a.ID, 10),
			map[string]any{"budget_id": a.BudgetID, "resolution_note": note})
	}
	return &AckResult{Success: true, Changed: len(changed) > 0, Alert: alertViewOf(a)}, nil
}

func (h *Handlers) bulkAcknowledge(ctx context.Context, in *bulkIn) (*BulkAckResult, error) {
	ids, note := sortedUnique(in.Body.AlertIDs), noteOf(in.Body.ResolutionNote)
	p := sdk.PrincipalFrom(ctx)
	rows, changed, err := h.Store.Acknowledge(ctx, ids, p.TenantIDs, p.ID, note, h.Evaluator.now())
	if err != nil {
		return nil, h.ackError(err)
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
		h.audit(ctx, "budget_alert.bulk_acknowledge.success", tenant, "budget_alert", "", map[string]any{"alert_ids": ids, "resolution_note": note})
	}
	return &BulkAckResult{Success: true, Acknowledged: len(changed), AlreadyAcknowledged: len(ids) - len(changed), Alerts: alertViews(rows)}, nil
}

// syncFailed turns a cloud failure into a 503 naming it.
func syncFailed(err error) error {
	var p *sdk.Problem
	if errors.As(err, &p) {
		return err
	}
	return sdk.Unavailable("budget sync failed: " + err.Error())
}

func (h *Handlers) syncOne(ctx context.Context, in *BudgetRef) (*BudgetSyncResult, error) {
	b, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	res, err := h.Syncer.SyncBudget(ctx, b)
	if err != nil {
		return nil, syncFailed(err)
	}
	h.audit(ctx, "budget.sync.success", b.TenantID, "budget", b.ID, map[string]any{"action": res.Action, "provider_name": res.ProviderName})
	return &BudgetSyncResult{BudgetSync: res, Budget: viewOf(b)}, nil
}

func (h *Handlers) syncAll(ctx context.Context, in *syncAllIn) (*SyncResult, error) {
	ids := sdk.PrincipalFrom(ctx).TenantIDs
	if in.Body != nil && len(in.Body.TenantIDs) > 0 {
		ids = in.Body.TenantIDs
	}
	var tenants []sdk.Tenant
	if len(ids) > 0 {
		var err error
		if tenants, err = h.Host.Tenants(ctx, ids...); err != nil {
			return nil, h.logged(err)
		}
	}
	res, err := h.Syncer.SyncTenants(ctx, tenants)
	if err != nil {
		return nil, syncFailed(err)
	}
	outcome := "budget.sync_all.success"
	if res.Failed > 0 {
		outcome = "budget.sync_all.warning"
	}
	for _, t := range tenants {
		h.audit(ctx, outcome, t.ID, "budget", "", map[string]any{
			"created": res.Created, "updated": res.Updated, "removed": res.Removed, "pushed": res.Pushed, "failed": res.Failed})
	}
	return &res, nil
}
