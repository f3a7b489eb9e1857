package quotas

import (
	"html/template"
	"net/http"
	"sort"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// Entry is one quota as the API shows it.
type Entry struct {
	TenantID       string    `json:"tenant_id"`
	SubscriptionID string    `json:"subscription_id"`
	Provider       string    `json:"provider"`
	Name           string    `json:"name"`
	LocalizedName  string    `json:"localized_name"`
	CurrentValue   float64   `json:"current_value"`
	Limit          float64   `json:"limit"`
	UsagePercent   float64   `json:"usage_percent"`
	Health         string    `json:"health"`
	Unit           string    `json:"unit"`
	SyncedAt       time.Time `json:"synced_at"`
}

// Counts is how many quotas are in each health.
type Counts struct {
	Total    int `json:"total"`
	OK       int `json:"ok"`
	Warning  int `json:"warning"`
	Critical int `json:"critical"`
}

// List is the quota list's body.
type List struct {
	Location       string  `json:"location"`
	Provider       string  `json:"provider"`
	SubscriptionID string  `json:"subscription_id,omitempty" doc:"The subscription asked for, when one was"`
	Items          []Entry `json:"items"`
	Summary        Counts  `json:"summary"`
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

func (c *Counts) add(health string) {
	c.Total++
	switch health {
	case HealthOK:
		c.OK++
	case HealthWarning:
		c.Warning++
	case HealthCritical:
		c.Critical++
	}
}

func entryOf(u Usage) Entry {
	p := UsagePercent(u.CurrentValue, u.Limit)
	return Entry{TenantID: u.TenantID, SubscriptionID: u.SubscriptionID, Provider: u.Provider, Name: u.Name, LocalizedName: u.LocalizedName,
		CurrentValue: u.CurrentValue, Limit: u.Limit, UsagePercent: p, Health: Health(p), Unit: u.Unit, SyncedAt: u.SyncedAt}
}

// DefaultLocation is the region a quota route shows when the caller names
// none, and the first region synced unless the plugin is configured.
const DefaultLocation = "eastus"

var locSchema = &huma.Schema{Type: huma.TypeString, Default: DefaultLocation, Pattern: locPattern.String(), Description: "Azure region"}

// Routes declares the quota routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	return []sdk.Route{
		{Method: http.MethodGet, Path: "/api/v1/resources/quotas", TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "resources-quotas", Tags: []string{"resources"}, Summary: "Quota usage, limits and health",
			Description: "Compute or network quotas of the subscriptions the caller may see, in one region. Health is ok below 75 % of the limit, warning from 75 %, critical from 90 %.",
			Parameters: []*huma.Param{
				{Name: "subscription_id", In: "query", Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}},
				{Name: "location", In: "query", Schema: locSchema},
				{Name: "provider", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"compute", "network"}, Default: "compute"}},
			},
			Responses: map[string]*huma.Response{
				"200": sdk.JSONResponse("Quotas", List{}),
				"404": {Description: "No quota data for the subscription, or it belongs to a tenant the caller may not see"},
			},
		}},
		{Method: http.MethodGet, Path: "/api/v1/resources/quotas/summary", TenantScoped: true, Handler: h.summary, Operation: &huma.Operation{
			OperationID: "resources-quotas-summary", Tags: []string{"resources"}, Summary: "Quota health across managed subscriptions",
			Parameters: []*huma.Param{{Name: "location", In: "query", Schema: locSchema}},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Quota health", Summary{})},
		}},
	}
}

func intPtr(n int) *int { return &n }

// Handlers serves the quota routes from the store.
type Handlers struct {
	Store *Store
	// Inventory renders the inventory's section of the resources page for
	// the tenants, its filter form submitting to action; nil leaves the
	// page to the quotas.
	Inventory func(r *http.Request, tenants []string, action string) (template.HTML, error)
	// InventoryStats renders the inventory's figures for the tenants, which
	// the dashboard's card shows above the quotas; nil leaves the card to
	// the quotas.
	InventoryStats func(r *http.Request, tenants []string) (template.HTML, error)
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	p := sdk.PrincipalFrom(r.Context())
	q := Query{TenantIDs: p.TenantIDs, Location: r.URL.Query().Get("location"), Provider: r.URL.Query().Get("provider"),
		SubscriptionID: r.URL.Query().Get("subscription_id")}
	if q.SubscriptionID != "" {
		tenant, err := h.Store.TenantOf(r.Context(), q.SubscriptionID)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		// A subscription of a tenant the caller may not see is answered
		// exactly like an unknown one, so ids cannot be probed.
		if tenant == "" || !p.CanSee(tenant) {
			sdk.WriteError(w, sdk.NotFound("no quota data for subscription "+q.SubscriptionID))
			return
		}
	}
	usages, err := h.Store.List(r.Context(), q)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	items := make([]Entry, 0, len(usages))
	var counts Counts
	for _, u := range usages {
		e := entryOf(u)
		counts.add(e.Health)
		items = append(items, e)
	}
	sdk.WriteJSON(w, http.StatusOK, List{Location: q.Location, Provider: q.Provider, SubscriptionID: q.SubscriptionID, Items: items, Summary: counts})
}

func (h *Handlers) summary(w http.ResponseWriter, r *http.Request) {
	p := sdk.PrincipalFrom(r.Context())
	loc := r.URL.Query().Get("location")
	usages, err := h.Store.List(r.Context(), Query{TenantIDs: p.TenantIDs, Location: loc})
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	var all Counts
	byProvider := map[string]*Counts{"compute": {}, "network": {}}
	subs := map[string]bool{}
	entries := make([]Entry, 0, len(usages))
	for _, u := range usages {
		e := entryOf(u)
		all.add(e.Health)
		if c, ok := byProvider[e.Provider]; ok {
			c.add(e.Health)
		}
		subs[e.SubscriptionID] = true
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].UsagePercent > entries[j].UsagePercent })
	top := entries[:min(10, len(entries))]
	overall := HealthOK
	switch {
	case all.Critical > 0:
		overall = HealthCritical
	case all.Warning > 0:
		overall = HealthWarning
	}
	sdk.WriteJSON(w, http.StatusOK, Summary{Location: loc, Subscriptions: len(subs), Health: overall, Counts: all, ByProvider: byProvider, MostUsed: top})
}
