package quotas

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
)

// Entry is one quota as the API shows it.
type Entry struct {
	TenantID         string    `json:"tenant_id"`
	SubscriptionID   string    `json:"subscription_id"`
	SubscriptionName string    `json:"subscription_name" doc:"The subscription's display name in Azure, empty until a sync has read it"`
	Provider         string    `json:"provider"`
	Name             string    `json:"name"`
	LocalizedName    string    `json:"localized_name"`
	CurrentValue     float64   `json:"current_value"`
	Limit            float64   `json:"limit"`
	UsagePercent     float64   `json:"usage_percent"`
	Health           string    `json:"health"`
	Unit             string    `json:"unit"`
	SyncedAt         time.Time `json:"synced_at"`
}

// Counts is how many quotas are in each health.
type Counts struct {
	Total    int `json:"total"`
	OK       int `json:"ok"`
	Warning  int `json:"warning"`
	Critical int `json:"critical"`
}

// List is the quota list's body: a page of the quotas, and the counts of
// them all.
type List struct {
	sdk.Prepared
	Location       string  `json:"location"`
	Provider       string  `json:"provider"`
	SubscriptionID string  `json:"subscription_id,omitempty" doc:"The subscription asked for, when one was"`
	Items          []Entry `json:"items" doc:"A page of the quotas, by subscription and name"`
	Total          int     `json:"total" doc:"Quotas in all, over the pages"`
	Limit          int     `json:"limit"`
	Offset         int     `json:"offset"`
	Summary        Counts  `json:"summary" doc:"The quotas of every page by health"`
}

// Summary is the quota summary's body.
type Summary struct {
	Location      string             `json:"location"`
	Subscriptions int                `json:"subscriptions" doc:"Subscriptions with quota data in the region"`
	Health        string             `json:"health" enum:"ok,warning,critical"`
	Counts        Counts             `json:"counts"`
	ByProvider    map[string]*Counts `json:"by_provider"`
	MostUsed      []Entry            `json:"most_used" doc:"The ten quotas nearest their limits"`
}

// plus is c and d counted together.
func (c Counts) plus(d Counts) Counts {
	return Counts{Total: c.Total + d.Total, OK: c.OK + d.OK, Warning: c.Warning + d.Warning, Critical: c.Critical + d.Critical}
}

func entryOf(u Usage) Entry {
	p := UsagePercent(u.CurrentValue, u.Limit)
	return Entry{TenantID: u.TenantID, SubscriptionID: u.SubscriptionID, SubscriptionName: u.SubscriptionName, Provider: u.Provider, Name: u.Name, LocalizedName: u.LocalizedName,
		CurrentValue: u.CurrentValue, Limit: u.Limit, UsagePercent: p, Health: Health(p), Unit: u.Unit, SyncedAt: u.SyncedAt}
}

// DefaultLocation is the region a quota route shows when the caller names
// none, and the first region synced unless the plugin is configured.
const DefaultLocation = "eastus"

// Location is the region a quota route or the resources page shows,
// DefaultLocation unless the caller names one.
type Location struct {
	Location string `query:"location" default:"eastus" pattern:"^[a-z0-9]{2,40}$" doc:"Azure region"`
}

type listIn struct {
	SubscriptionID string `query:"subscription_id" maxLength:"64"`
	Location
	Provider string `query:"provider" enum:"compute,network" default:"compute"`
	Limit    int    `query:"limit" minimum:"1" maximum:"500" default:"100" doc:"Page size"`
	Offset   int    `query:"offset" minimum:"0" default:"0"`
}

// Routes declares the quota routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	tags := []string{"resources"}
	return []sdk.Route{
		sdk.Get("/api/v1/resources/quotas", sdk.Op{ID: "resources-quotas", Tags: tags, Summary: "Quota usage, limits and health",
			Description: "Compute or network quotas of the subscriptions the caller may see, in one region. Health is ok below 75 % of the limit, warning from 75 %, critical from 90 %.",
			Responses:   map[string]*huma.Response{"404": {Description: "No quota data for the subscription, or it belongs to a tenant the caller may not see"}}}, h.list),
		sdk.Get("/api/v1/resources/quotas/summary", sdk.Op{ID: "resources-quotas-summary", Tags: tags, Summary: "Quota health across managed subscriptions"}, h.summary),
	}
}

// Handlers serves the quota routes from the store.
type Handlers struct {
	Store *Store
	// Inventory renders the inventory's section of the resources page for
	// the tenants and the page's inventory parameters, its filter form
	// submitting to action; nil leaves the page to the quotas.
	Inventory func(r *http.Request, tenants []string, in *inventory.PageQuery, action string) (template.HTML, error)
	// InventoryStats renders the inventory's figures for the tenants, which
	// the dashboard's card shows above the quotas; nil leaves the card to
	// the quotas.
	InventoryStats func(r *http.Request, tenants []string) (template.HTML, error)
	// Host names the tenants whose quotas the resources page shows.
	Host *sdk.Host
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*List, error) {
	// The counts and the page read the tenants' revision once.
	ctx = revcache.OneRead(ctx)
	p := sdk.PrincipalFrom(ctx)
	q := Query{TenantIDs: p.TenantIDs, Location: in.Location.Location, Provider: in.Provider, SubscriptionID: in.SubscriptionID}
	if q.SubscriptionID != "" {
		tenant, err := h.Store.TenantOf(ctx, q.SubscriptionID)
		if err != nil {
			return nil, err
		}
		// A subscription of a tenant the caller may not see is answered
		// exactly like an unknown one, so ids cannot be probed.
		if tenant == "" || !p.CanSee(tenant) {
			return nil, sdk.NotFound("no quota data for subscription " + q.SubscriptionID)
		}
	}
	q.Limit, q.Offset = in.Limit, in.Offset
	return h.Store.Page(ctx, q)
}

func (h *Handlers) summary(ctx context.Context, in *Location) (*Summary, error) {
	ctx = revcache.OneRead(ctx)
	q := Query{TenantIDs: sdk.PrincipalFrom(ctx).TenantIDs, Location: in.Location}
	ov, err := h.Store.Overview(ctx, q)
	if err != nil {
		return nil, err
	}
	most, err := h.Store.MostUsed(ctx, q, 10)
	if err != nil {
		return nil, err
	}
	var all Counts
	byProvider := map[string]*Counts{"compute": {}, "network": {}}
	for provider, c := range ov.ByProvider {
		all = all.plus(c)
		if p, ok := byProvider[provider]; ok {
			*p = c
		}
	}
	top := make([]Entry, 0, len(most))
	for _, u := range most {
		top = append(top, entryOf(u))
	}
	overall := HealthOK
	switch {
	case all.Critical > 0:
		overall = HealthCritical
	case all.Warning > 0:
		overall = HealthWarning
	}
	return &Summary{Location: in.Location, Subscriptions: ov.Subscriptions, Health: overall, Counts: all, ByProvider: byProvider, MostUsed: top}, nil
}
