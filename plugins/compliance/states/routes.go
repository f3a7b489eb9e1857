package states

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
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

var tags = []string{"compliance"}

// Tenants is the tenant input of a read: tenant_ids, which the host checks.
type Tenants struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

// Scope is the tenant input of a list that still takes the deprecated
// tenant_id beside tenant_ids, with the list's paging.
type Scope struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	// TenantID is checked by Scope.tenants: a route declares one tenant
	// input to the host, tenant_ids.
	TenantID string `query:"tenant_id" maxLength:"64" deprecated:"true" doc:"Deprecated: use tenant_ids. Still accepted, as one more tenant of tenant_ids; a response to a request naming it carries a Deprecation header. A tenant the caller may not see is a 403."`
	Limit    int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset   int    `query:"offset" minimum:"0" default:"0"`
	// named is whether the request named tenant_ids, before the SDK fills
	// an absent one with every tenant of the caller.
	named bool
}

// Resolve notes whether the request named tenant_ids.
func (s *Scope) Resolve(huma.Context) []error {
	s.named = len(s.Tenants) > 0
	return nil
}

// tenants are the tenants a list acts on — tenant_ids and the deprecated
// tenant_id together, or all the caller's tenants when neither is given —
// and the Deprecation header to answer with, set when tenant_id is named.
func (s *Scope) tenants(ctx context.Context) ([]string, string, error) {
	if s.TenantID == "" {
		return s.Tenants, "", nil
	}
	if !sdk.PrincipalFrom(ctx).CanSee(s.TenantID) {
		return nil, "", sdk.Forbidden(protocol.MsgNoTenantAccess)
	}
	if !s.named {
		return []string{s.TenantID}, Deprecation, nil
	}
	if !slices.Contains(s.Tenants, s.TenantID) {
		return append(slices.Clip(s.Tenants), s.TenantID), Deprecation, nil
	}
	return s.Tenants, Deprecation, nil
}

// Page is a page of a list that takes tenant_id: the JSON array and its
// headers.
type Page[T any] struct {
	Total       int    `header:"X-Total-Count" doc:"How many match in all, beyond this page"`
	Deprecation string `header:"Deprecation" doc:"Present when the request named the deprecated tenant_id (RFC 9745)"`
	Body        []T
}

const definitions = " A resource is non-compliant when any of its policy states is NonCompliant, compliant when none is and one is Compliant or Exempt; " +
	"the compliance percent is compliant resources over compliant and non-compliant ones, to two decimals. " +
	"A policy is a policy definition, non-compliant when any of its states is."

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	return []sdk.Route{
		sdk.Get("/api/v1/compliance/summary", sdk.Op{ID: "compliance-summary", Tags: tags, Summary: "Compliance summary across tenants",
			Description: "The tenants' latest policy states summed up: resources and policies by compliance, the compliance percent, " +
				"non-compliant findings by severity and by source (cloud policies; custom rules)." + definitions}, h.summary),
		sdk.Get("/api/v1/compliance/scores", sdk.Op{ID: "compliance-scores", Tags: tags, Summary: "Compliance score of each tenant",
			Description: "One record per tenant, by tenant name, from its latest snapshot (taken at each complete sync); a tenant never synced " +
				"has null date and percent and zero counts. A JSON array, one page of it; X-Total-Count says how many tenants." + definitions}, h.scores),
		sdk.Get("/api/v1/compliance/non-compliant", sdk.Op{ID: "compliance-non-compliant", Tags: tags, Summary: "Non-compliant policies",
			Description: "One record per non-compliant policy definition over the tenants (and, with source custom_rule, per violated custom rule), " +
				"with its non-compliant resources. Sorted by sort_by, then by source and id. A JSON array, one page of it; X-Total-Count says how many match." + definitions},
			h.nonCompliant),
		sdk.Get("/api/v1/compliance/non-compliant/resources", sdk.Op{ID: "compliance-non-compliant-resources", Tags: tags, Summary: "Non-compliant resources of a policy",
			Description: "The resources in a NonCompliant state under one policy definition (policy_id, an id of the non-compliant list of source policy) over the tenants, " +
				"one record per tenant and resource whichever assignments found it, by tenant id and ARM id, one page of them.",
			Responses: map[string]*huma.Response{"404": {Description: "The policy has no non-compliant resource in the tenants, or no such policy"}}},
			h.policyResources),
		sdk.Get("/api/v1/compliance/trends", sdk.Op{ID: "compliance-trends", Tags: tags, Summary: "Daily compliance over time",
			Description: "One record per day of the `days` days ending today (UTC), oldest first, summed over the tenants. " +
				"A tenant's figures on a day are those of its latest snapshot on or before it: a day without a sync carries the last known state forward. " +
				"A tenant counts from its first snapshot on (tenants_reporting); a day no tenant reports has zero counts and a null percent."}, h.trends),
		sdk.Get("/api/v1/compliance/status", sdk.Op{ID: "compliance-status", Tags: tags, Summary: "Compliance sync status",
			Description: "For each of the caller's tenants: its last complete sync (every subscription read; when it was marked fresh), " +
				"whether that is older than 5 hours (stale) or missing, its synced subscriptions and stored policy states."}, h.status),
	}
}

func (h *Handlers) summary(ctx context.Context, in *Tenants) (*Summary, error) {
	out, err := h.Store.Summary(ctx, in.Tenants, h.Findings)
	return &out, err
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

func (h *Handlers) scores(ctx context.Context, in *Scope) (*Page[Score], error) {
	tenants, deprecation, err := in.tenants(ctx)
	if err != nil {
		return nil, err
	}
	snaps, err := h.Store.LatestSnapshots(ctx, tenants)
	if err != nil {
		return nil, err
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return nil, err
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
	start := min(in.Offset, len(all))
	return &Page[Score]{Total: len(all), Deprecation: deprecation, Body: all[start:min(start+in.Limit, len(all))]}, nil
}

type nonCompliantIn struct {
	Scope
	Severity  string `query:"severity" enum:"High,Medium,Low"`
	SortBy    string `query:"sort_by" enum:"non_compliant_count,policy_name,severity,category,tenant_count,last_evaluated_at" default:"non_compliant_count" doc:"non_compliant_count (resources), policy_name, severity (High above Low), category, tenant_count or last_evaluated_at"`
	SortOrder string `query:"sort_order" enum:"asc,desc" default:"desc"`
}

func (h *Handlers) nonCompliant(ctx context.Context, in *nonCompliantIn) (*Page[PolicyStatus], error) {
	tenants, deprecation, err := in.tenants(ctx)
	if err != nil {
		return nil, err
	}
	items, total, err := h.Store.NonCompliant(ctx, NonCompliantQuery{TenantIDs: tenants, Severity: in.Severity,
		SortBy: in.SortBy, Desc: in.SortOrder != "asc", Limit: in.Limit, Offset: in.Offset}, h.Findings)
	if err != nil {
		return nil, err
	}
	return &Page[PolicyStatus]{Total: total, Deprecation: deprecation, Body: items}, nil
}

type trendsIn struct {
	Tenants
	Days int `query:"days" minimum:"7" maximum:"365" default:"30" doc:"Days up to today"`
}

func (h *Handlers) trends(ctx context.Context, in *trendsIn) (*[]TrendDay, error) {
	last := h.now().Truncate(24 * time.Hour)
	out, err := h.Store.Trend(ctx, in.Tenants.Tenants, last.AddDate(0, 0, 1-in.Days), last)
	if err != nil {
		return nil, err
	}
	return &out, nil
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

func (h *Handlers) status(ctx context.Context, _ *sdk.Empty) (*Status, error) {
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	snaps, err := h.Store.LatestSnapshots(ctx, tenants)
	if err != nil {
		return nil, err
	}
	subs, err := h.Store.SubscriptionCounts(ctx, tenants)
	if err != nil {
		return nil, err
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return nil, err
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
	return &out, nil
}
