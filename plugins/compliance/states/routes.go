package states

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

// StaleAfter is how old a tenant's last complete sync may be before the
// status calls it stale: the host's threshold for the compliance domain
// (a four-hourly schedule and an hour of slack).
const StaleAfter = 5 * time.Hour

// Deprecation is the Deprecation header (RFC 9745) answering a request
// that names the deprecated tenant_id parameter: the parameter has been
// deprecated since 2026-11-25.
const Deprecation = "@1795564800"

// Handlers serves the compliance reads.
type Handlers struct {
	Store *Store
	// Host names tenants.
	Host *sdk.Host
	// Findings are the sources of findings beside the policies (the
	// custom rules) that the summary and the non-compliant list take in.
	Findings []FindingSource
	// Now is the clock of the trend's last day and of staleness; nil is
	// time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

const tag = "compliance"

func float(v float64) *float64 { return &v }

var (
	tenantIDsParam = &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants to include (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}}
	tenantIDParam = &huma.Param{Name: "tenant_id", In: "query", Deprecated: true,
		Description: "Deprecated: use tenant_ids. Still accepted, as one more tenant of tenant_ids; a response to a request naming it carries a Deprecation header. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}
	limitParam  = &huma.Param{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500), Default: 100}}
	offsetParam = &huma.Param{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(0), Default: 0}}
)

func intPtr(n int) *int { return &n }

// pageHeaders are the headers of a page of a list that takes tenant_id.
var pageHeaders = map[string]*huma.Param{
	"X-Total-Count": {Description: "How many match in all, beyond this page", Schema: &huma.Schema{Type: huma.TypeInteger}},
	"Deprecation":   {Description: "Present when the request named the deprecated tenant_id (RFC 9745)", Schema: &huma.Schema{Type: huma.TypeString}},
}

func page(description string, v any) *huma.Response {
	r := sdk.JSONResponse(description, v)
	r.Headers = pageHeaders
	return r
}

const definitions = " A resource is non-compliant when any of its policy states is NonCompliant, compliant when none is and one is Compliant or Exempt; " +
	"the compliance percent is compliant resources over compliant and non-compliant ones, to two decimals. " +
	"A policy is a policy definition, non-compliant when any of its states is."

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	get := http.MethodGet
	return []sdk.Route{
		{Method: get, Path: "/api/v1/compliance/summary", TenantScoped: true, Handler: h.summary, Operation: &huma.Operation{
			OperationID: "compliance-summary", Tags: []string{tag}, Summary: "Compliance summary across tenants",
			Description: "The tenants' latest policy states summed up: resources and policies by compliance, the compliance percent, " +
				"non-compliant findings by severity and by source (cloud policies; custom rules)." + definitions,
			Parameters: []*huma.Param{tenantIDsParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Compliance summary", Summary{})},
		}},
		{Method: get, Path: "/api/v1/compliance/scores", TenantScoped: true, Handler: h.scores, Operation: &huma.Operation{
			OperationID: "compliance-scores", Tags: []string{tag}, Summary: "Compliance score of each tenant",
			Description: "One record per tenant, by tenant name, from its latest snapshot (taken at each complete sync); a tenant never synced " +
				"has null date and percent and zero counts. A JSON array, one page of it; X-Total-Count says how many tenants." + definitions,
			Parameters: []*huma.Param{tenantIDParam, tenantIDsParam, limitParam, offsetParam},
			Responses:  map[string]*huma.Response{"200": page("Compliance scores", []Score{})},
		}},
		{Method: get, Path: "/api/v1/compliance/non-compliant", TenantScoped: true, Handler: h.nonCompliant, Operation: &huma.Operation{
			OperationID: "compliance-non-compliant", Tags: []string{tag}, Summary: "Non-compliant policies",
			Description: "One record per non-compliant policy definition over the tenants (and, with source custom_rule, per violated custom rule), " +
				"with its non-compliant resources. Sorted by sort_by, then by source and id. A JSON array, one page of it; X-Total-Count says how many match." + definitions,
			Parameters: []*huma.Param{tenantIDParam, tenantIDsParam,
				{Name: "severity", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{SeverityHigh, SeverityMedium, SeverityLow}}},
				limitParam, offsetParam,
				{Name: "sort_by", In: "query", Description: "non_compliant_count (resources), policy_name, severity (High above Low), category, tenant_count or last_evaluated_at",
					Schema: &huma.Schema{Type: huma.TypeString, Enum: anySlice(SortKeys), Default: "non_compliant_count"}},
				{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "desc"}},
			},
			Responses: map[string]*huma.Response{"200": page("Non-compliant policies", []PolicyStatus{})},
		}},
		{Method: get, Path: "/api/v1/compliance/trends", TenantScoped: true, Handler: h.trends, Operation: &huma.Operation{
			OperationID: "compliance-trends", Tags: []string{tag}, Summary: "Daily compliance over time",
			Description: "One record per day of the `days` days ending today (UTC), oldest first, summed over the tenants. " +
				"A tenant's figures on a day are those of its latest snapshot on or before it: a day without a sync carries the last known state forward. " +
				"A tenant counts from its first snapshot on (tenants_reporting); a day no tenant reports has zero counts and a null percent.",
			Parameters: []*huma.Param{tenantIDsParam, {Name: "days", In: "query", Description: "Days up to today",
				Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(7), Maximum: float(365), Default: 30}}},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Daily compliance", []TrendDay{})},
		}},
		{Method: get, Path: "/api/v1/compliance/status", TenantScoped: true, Handler: h.status, Operation: &huma.Operation{
			OperationID: "compliance-status", Tags: []string{tag}, Summary: "Compliance sync status",
			Description: "For each of the caller's tenants: its last complete sync (every subscription read; when it was marked fresh), " +
				"whether that is older than 5 hours (stale) or missing, its synced subscriptions and stored policy states.",
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Sync status", Status{})},
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

// intQuery reads a parameter the host has checked and the SDK defaulted.
func intQuery(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

// scope is the tenants a request acts on: tenant_ids and the deprecated
// tenant_id together, each one the caller may see, or all the caller's
// tenants when neither is given. Naming tenant_id sets the Deprecation
// header.
func scope(w http.ResponseWriter, r *http.Request) ([]string, error) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		return nil, err
	}
	id := r.URL.Query().Get("tenant_id")
	if id == "" {
		return tenants, nil
	}
	w.Header().Set("Deprecation", Deprecation)
	if !sdk.PrincipalFrom(r.Context()).CanSee(id) {
		return nil, sdk.Forbidden("no access to a requested tenant")
	}
	if len(sdk.QueryList(r, "tenant_ids")) == 0 {
		return []string{id}, nil
	}
	if !slices.Contains(tenants, id) {
		tenants = append(tenants, id)
	}
	return tenants, nil
}

func (h *Handlers) summary(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out, err := h.Store.Summary(r.Context(), tenants, h.Findings)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// Score is a tenant's compliance at its latest snapshot.
type Score struct {
	TenantID                 string     `json:"tenant_id"`
	TenantName               string     `json:"tenant_name"`
	Date                     *string    `json:"date" format:"date" doc:"Day (UTC) of the latest snapshot; null when the tenant never synced"`
	OverallCompliancePercent *float64   `json:"overall_compliance_percent" doc:"null without compliant or non-compliant resources"`
	CompliantResources       int64      `json:"compliant_resources"`
	NonCompliantResources    int64      `json:"non_compliant_resources"`
	TotalResources           int64      `json:"total_resources"`
	CompliantPolicies        int64      `json:"compliant_policies"`
	NonCompliantPolicies     int64      `json:"non_compliant_policies"`
	TotalPolicies            int64      `json:"total_policies"`
	PolicyStates             int64      `json:"policy_states"`
	SyncedAt                 *time.Time `json:"synced_at" doc:"When the snapshot was taken"`
}

func (h *Handlers) scores(w http.ResponseWriter, r *http.Request) {
	tenants, err := scope(w, r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	snaps, err := h.Store.LatestSnapshots(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	names, err := pluginenv.TenantNames(r.Context(), h.Host, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	byTenant := make(map[string]*Snapshot, len(snaps))
	for i := range snaps {
		byTenant[snaps[i].TenantID] = &snaps[i]
	}
	all := make([]Score, 0, len(tenants))
	for _, id := range tenants {
		sc := Score{TenantID: id, TenantName: names[id]}
		if sn := byTenant[id]; sn != nil {
			day, at := sn.Day, sn.TakenAt.UTC()
			sc.Date, sc.SyncedAt, sc.OverallCompliancePercent = &day, &at, sn.CompliancePercent()
			sc.CompliantResources, sc.NonCompliantResources, sc.TotalResources = sn.CompliantResources, sn.NonCompliantResources, sn.TotalResources
			sc.CompliantPolicies, sc.NonCompliantPolicies, sc.TotalPolicies = sn.CompliantPolicies, sn.NonCompliantPolicies, sn.TotalPolicies
			sc.PolicyStates = sn.PolicyStates
		}
		all = append(all, sc)
	}
	slices.SortFunc(all, func(a, b Score) int {
		return cmp.Or(cmp.Compare(a.TenantName, b.TenantName), cmp.Compare(a.TenantID, b.TenantID))
	})
	limit, offset := intQuery(r, "limit"), intQuery(r, "offset")
	start := min(offset, len(all))
	w.Header().Set("X-Total-Count", strconv.Itoa(len(all)))
	sdk.WriteJSON(w, http.StatusOK, all[start:min(start+limit, len(all))])
}

func (h *Handlers) nonCompliant(w http.ResponseWriter, r *http.Request) {
	tenants, err := scope(w, r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	q := r.URL.Query()
	items, total, err := h.Store.NonCompliant(r.Context(), NonCompliantQuery{TenantIDs: tenants, Severity: q.Get("severity"),
		SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") != "asc", Limit: intQuery(r, "limit"), Offset: intQuery(r, "offset")}, h.Findings)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	sdk.WriteJSON(w, http.StatusOK, items)
}

func (h *Handlers) trends(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	last := h.now().Truncate(24 * time.Hour)
	first := last.AddDate(0, 0, 1-intQuery(r, "days"))
	out, err := h.Store.Trend(r.Context(), tenants, first, last)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// Status is the compliance sync status of the caller's tenants.
type Status struct {
	TenantCount     int            `json:"tenant_count"`
	SyncedTenants   int            `json:"synced_tenants" doc:"Tenants with a complete sync"`
	StaleTenants    int            `json:"stale_tenants" doc:"Tenants whose last complete sync is older than stale_after_hours, or missing"`
	Subscriptions   int            `json:"subscriptions" doc:"Subscriptions synced"`
	PolicyStates    int64          `json:"policy_states" doc:"Policy states stored"`
	LastSyncedAt    *time.Time     `json:"last_synced_at" doc:"The latest complete sync of any tenant"`
	StaleAfterHours int            `json:"stale_after_hours"`
	Tenants         []TenantStatus `json:"tenants" doc:"By tenant name"`
}

// TenantStatus is one tenant's compliance sync status.
type TenantStatus struct {
	TenantID   string `json:"tenant_id"`
	TenantName string `json:"tenant_name"`
	// LastSyncedAt is when every subscription of the tenant was last
	// read, the time its freshness was marked.
	LastSyncedAt             *time.Time `json:"last_synced_at" doc:"The last complete sync, when the tenant was marked fresh; null when never"`
	Stale                    bool       `json:"stale"`
	LastSubscriptionSyncAt   *time.Time `json:"last_subscription_sync_at" doc:"The latest sync of any one of its subscriptions; later than last_synced_at when another failed since"`
	Subscriptions            int        `json:"subscriptions"`
	PolicyStates             int64      `json:"policy_states"`
	OverallCompliancePercent *float64   `json:"overall_compliance_percent"`
}

func (h *Handlers) status(w http.ResponseWriter, r *http.Request) {
	tenants := sdk.PrincipalFrom(r.Context()).TenantIDs
	snaps, err := h.Store.LatestSnapshots(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	subs, err := h.Store.SubscriptionCounts(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	names, err := pluginenv.TenantNames(r.Context(), h.Host, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	latest := make(map[string]*Snapshot, len(snaps))
	for i := range snaps {
		latest[snaps[i].TenantID] = &snaps[i]
	}
	now := h.now()
	out := Status{TenantCount: len(tenants), StaleAfterHours: int(StaleAfter / time.Hour), Tenants: []TenantStatus{}}
	for _, id := range tenants {
		ts := TenantStatus{TenantID: id, TenantName: names[id], Stale: true}
		if c, ok := subs[id]; ok {
			at := c.LastSynced.UTC()
			ts.LastSubscriptionSyncAt, ts.Subscriptions, ts.PolicyStates = &at, c.Subscriptions, c.PolicyStates
			out.Subscriptions += c.Subscriptions
			out.PolicyStates += c.PolicyStates
		}
		if sn := latest[id]; sn != nil {
			at := sn.TakenAt.UTC()
			ts.LastSyncedAt, ts.Stale, ts.OverallCompliancePercent = &at, now.Sub(at) > StaleAfter, sn.CompliancePercent()
			out.SyncedTenants++
			if out.LastSyncedAt == nil || at.After(*out.LastSyncedAt) {
				out.LastSyncedAt = &at
			}
		}
		if ts.Stale {
			out.StaleTenants++
		}
		out.Tenants = append(out.Tenants, ts)
	}
	slices.SortFunc(out.Tenants, func(a, b TenantStatus) int {
		return cmp.Or(cmp.Compare(a.TenantName, b.TenantName), cmp.Compare(a.TenantID, b.TenantID))
	})
	sdk.WriteJSON(w, http.StatusOK, out)
}
