package inventory

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the inventory routes from the store.
type Handlers struct {
	Store *Store
	// RequiredTags are the tag keys every resource should carry (the
	// plugin's required_tags).
	RequiredTags []string
	// Host reads the cost plugin's resource_costs dataset for the orphans'
	// estimated monthly costs; without it they have none.
	Host *sdk.Host
}

// View is a resource as the API shows it. Its id is the resource's UID.
type View struct {
	ID             string            `json:"id" doc:"Steward's id of the resource: the first 32 hex digits of the SHA-256 of its lower-cased ARM id"`
	TenantID       string            `json:"tenant_id"`
	SubscriptionID string            `json:"subscription_id"`
	ResourceID     string            `json:"resource_id" doc:"The ARM id"`
	Name           string            `json:"name"`
	Type           string            `json:"type" doc:"Lower case, as Resource Graph reports types"`
	Location       string            `json:"location"`
	ResourceGroup  string            `json:"resource_group" doc:"Lower case"`
	SKU            string            `json:"sku"`
	Tags           map[string]string `json:"tags"`
	FirstSeen      time.Time         `json:"first_seen"`
	LastSeen       time.Time         `json:"last_seen"`
	ChangedAt      time.Time         `json:"changed_at" doc:"When a sync last found a field changed, or first saw it"`
}

func viewOf(r *Resource) View {
	tags := map[string]string{}
	_ = json.Unmarshal([]byte(r.Tags), &tags)
	return View{ID: r.UID, TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID, Name: r.Name, Type: r.Type,
		Location: r.Location, ResourceGroup: r.ResourceGroup, SKU: r.SKU, Tags: tags, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen, ChangedAt: r.ChangedAt}
}

// EventView is a lifecycle event as the API shows it.
type EventView struct {
	ID             int64     `json:"id"`
	TenantID       string    `json:"tenant_id"`
	SubscriptionID string    `json:"subscription_id"`
	Resource       string    `json:"resource" doc:"The resource's id (see the inventory)"`
	ResourceID     string    `json:"resource_id" doc:"The ARM id"`
	Name           string    `json:"name"`
	Type           string    `json:"type"`
	Kind           string    `json:"kind" enum:"created,changed,deleted"`
	ChangedFields  []string  `json:"changed_fields" doc:"The fields a changed event found different: name, type, location, resource_group, sku, tags, properties"`
	At             time.Time `json:"at"`
}

func eventViews(events []Event) []EventView {
	out := make([]EventView, len(events))
	for i, e := range events {
		out[i] = EventView{ID: e.ID, TenantID: e.TenantID, SubscriptionID: e.SubscriptionID, Resource: e.UID, ResourceID: e.ResourceID,
			Name: e.Name, Type: e.Type, Kind: e.Kind, ChangedFields: e.ChangedFields(), At: e.At}
	}
	return out
}

// Page is a page of a list.
type Page[T any] struct {
	Items  []T   `json:"items"`
	Total  int64 `json:"total" doc:"How many match in all, beyond this page"`
	Limit  int64 `json:"limit"`
	Offset int64 `json:"offset"`
}

// Detail is one resource with its properties and lifecycle history.
type Detail struct {
	View
	Properties map[string]any `json:"properties"`
	History    []EventView    `json:"history" doc:"Its lifecycle events, oldest first"`
}

// Counts is the inventory counted by type and by location.
type Counts struct {
	Total      int64   `json:"total"`
	ByType     []Count `json:"by_type"`
	ByLocation []Count `json:"by_location"`
}

// TagStat is one required tag's coverage.
type TagStat struct {
	Key             string  `json:"key"`
	Tagged          int64   `json:"tagged"`
	Missing         int64   `json:"missing"`
	CoveragePercent float64 `json:"coverage_percent" doc:"Two decimals; 100 when there are no resources"`
}

// Coverage is the tag coverage's body.
type Coverage struct {
	RequiredTags   []string  `json:"required_tags"`
	TotalResources int64     `json:"total_resources"`
	FullyTagged    int64     `json:"fully_tagged" doc:"Resources carrying every required tag"`
	FullyTaggedPct float64   `json:"fully_tagged_percent"`
	Tags           []TagStat `json:"tags"`
}

// OrphanView is an orphan as the API shows it.
type OrphanView struct {
	Kind string `json:"kind" enum:"unattached_disk,unused_public_ip,unused_nic,empty_resource_group"`
	View
	EstimatedMonthlyCost *MonthlyCost `json:"estimated_monthly_cost" doc:"The resource's actual cost over the last 30 full days, from the cost plugin's resource_costs dataset; null where it has no cost of the resource (or costs in several currencies), or no cost plugin is installed"`
}

// Orphans is the orphans' body.
type Orphans struct {
	Page[OrphanView]
	ByKind map[string]int64 `json:"by_kind" doc:"How many orphans of each kind, whatever the kind filter"`
}

// percent is part of whole in percent to two decimals, 100 of nothing.
func percent(part, whole int64) float64 {
	if whole == 0 {
		return 100
	}
	return math.Round(float64(part)*10000/float64(whole)) / 100
}

// Filters are the inventory's filters, declared once for the inventory
// route, where the host applies their bounds, and the resources page,
// whose view binds them the same way.
type Filters struct {
	Type          string `query:"type" minLength:"1" maxLength:"200" doc:"Resource type, e.g. microsoft.compute/disks (case ignored)"`
	Location      string `query:"location" pattern:"^[a-z0-9]+$" maxLength:"64"`
	ResourceGroup string `query:"resource_group" minLength:"1" maxLength:"90" doc:"Case ignored"`
	TagKey        string `query:"tag_key" minLength:"1" maxLength:"512"`
	TagValue      string `query:"tag_value" minLength:"1" maxLength:"256" doc:"With tag_key: only resources whose tag has this value"`
	Text          string `query:"q" minLength:"1" maxLength:"200" doc:"Text found in the name or ARM id, case ignored"`
}

// query is the filters' query of the tenants; a tag value without the key
// it is the value of is refused.
func (f *Filters) query(tenants []string) (ListQuery, error) {
	if f.TagValue != "" && f.TagKey == "" {
		return ListQuery{}, sdk.Invalid("query.tag_value", "needs tag_key")
	}
	return ListQuery{TenantIDs: tenants, Type: f.Type, Location: f.Location, ResourceGroup: f.ResourceGroup,
		TagKey: f.TagKey, TagValue: f.TagValue, Text: f.Text}, nil
}

// Paging pages a list.
type Paging struct {
	Limit  int64 `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset int64 `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

// Tenants is the tenant input of a read: tenant_ids, which the host checks.
type Tenants struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

type listIn struct {
	Tenants
	Filters
	SortBy    string `query:"sort_by" enum:"name,type,location,resource_group,first_seen,last_seen,changed_at" default:"name"`
	SortOrder string `query:"sort_order" enum:"asc,desc" default:"asc"`
	Paging
}

type getIn struct {
	ID string `path:"resource_id" pattern:"^[0-9a-f]{32}$" doc:"Steward's id of the resource (the inventory's id), not the ARM id"`
}

type orphansIn struct {
	Tenants
	Kind string `query:"kind" enum:"unattached_disk,unused_public_ip,unused_nic,empty_resource_group"`
	Paging
}

type eventsIn struct {
	Tenants
	Kind  string    `query:"kind" enum:"created,changed,deleted"`
	Since time.Time `query:"since" doc:"Only events at or after this time"`
	Paging
}

var tags = []string{"resources"}

// Routes declares the inventory routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	return []sdk.Route{
		sdk.Get("/api/v1/resources/inventory", sdk.Op{ID: "resources-inventory", Tags: tags, Summary: "Resource inventory",
			Description: "The resources of the caller's tenants as last synced from Resource Graph, filtered and sorted, one page of them."}, h.list),
		sdk.Get("/api/v1/resources/inventory/counts", sdk.Op{ID: "resources-inventory-counts", Tags: tags, Summary: "Resources counted by type and by location"}, h.counts),
		sdk.Get("/api/v1/resources/inventory/{resource_id}", sdk.Op{ID: "resources-inventory-get", Tags: tags, Summary: "One resource with its lifecycle history",
			Responses: map[string]*huma.Response{"404": {Description: "No such resource in the inventory, or it belongs to a tenant the caller may not see"}}}, h.get),
		sdk.Get("/api/v1/resources/tags/coverage", sdk.Op{ID: "resources-tags-coverage", Tags: tags, Summary: "Coverage of the required tags",
			Description: "How many resources carry each tag of the plugin's required_tags, and all of them."}, h.coverage),
		sdk.Get("/api/v1/resources/orphans", sdk.Op{ID: "resources-orphans", Tags: tags, Summary: "Orphaned resources",
			Description: "Unattached managed disks, public IP addresses bound to no IP configuration, network interfaces attached to no VM, and resource groups (when Resource Graph lists them) holding nothing, read from the synced properties, " +
				"each with its estimated monthly cost where the cost plugin's resource_costs dataset has it."}, h.orphans),
		sdk.Get("/api/v1/resources/events", sdk.Op{ID: "resources-events", Tags: tags, Summary: "Lifecycle events",
			Description: "What each inventory sync found created, changed or deleted since the one before, newest first."}, h.events),
	}
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*Page[View], error) {
	lq, err := in.Filters.query(in.Tenants.Tenants)
	if err != nil {
		return nil, err
	}
	lq.SortBy, lq.Desc, lq.Limit, lq.Offset = in.SortBy, in.SortOrder == "desc", in.Limit, in.Offset
	rows, total, err := h.Store.List(ctx, lq)
	if err != nil {
		return nil, err
	}
	items := make([]View, len(rows))
	for i := range rows {
		items[i] = viewOf(&rows[i])
	}
	return &Page[View]{Items: items, Total: total, Limit: lq.Limit, Offset: lq.Offset}, nil
}

func (h *Handlers) get(ctx context.Context, in *getIn) (*Detail, error) {
	res, err := h.Store.Get(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	// A resource of a tenant the caller may not see is answered exactly
	// like an unknown one.
	if res == nil || !sdk.PrincipalFrom(ctx).CanSee(res.TenantID) {
		return nil, sdk.NotFound("no resource " + in.ID + " in the inventory")
	}
	history, err := h.Store.History(ctx, res.UID)
	if err != nil {
		return nil, err
	}
	props := map[string]any{}
	_ = json.Unmarshal([]byte(res.Properties), &props)
	return &Detail{View: viewOf(res), Properties: props, History: eventViews(history)}, nil
}

func (h *Handlers) counts(ctx context.Context, in *Tenants) (*Counts, error) {
	byType, err := h.Store.CountBy(ctx, in.Tenants, "type")
	if err != nil {
		return nil, err
	}
	byLocation, err := h.Store.CountBy(ctx, in.Tenants, "location")
	if err != nil {
		return nil, err
	}
	out := Counts{ByType: byType, ByLocation: byLocation}
	for _, c := range byType {
		out.Total += c.Count
	}
	return &out, nil
}

func (h *Handlers) coverage(ctx context.Context, in *Tenants) (*Coverage, error) {
	required := h.RequiredTags
	if required == nil {
		required = []string{}
	}
	c, err := h.Store.Coverage(ctx, in.Tenants, required)
	if err != nil {
		return nil, err
	}
	out := Coverage{RequiredTags: required, TotalResources: c.Total, FullyTagged: c.AllTagged, Tags: make([]TagStat, len(required))}
	if len(required) == 0 {
		out.FullyTagged = c.Total
	}
	out.FullyTaggedPct = percent(out.FullyTagged, c.Total)
	for i, k := range required {
		n := c.TaggedWith[k]
		out.Tags[i] = TagStat{Key: k, Tagged: n, Missing: c.Total - n, CoveragePercent: percent(n, c.Total)}
	}
	return &out, nil
}

func (h *Handlers) orphans(ctx context.Context, in *orphansIn) (*Orphans, error) {
	tenants := in.Tenants.Tenants
	rows, byKind, err := h.Store.Orphans(ctx, tenants, in.Kind, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	costs, err := h.monthlyCosts(ctx, tenants, rows)
	if err != nil {
		return nil, err
	}
	out := Orphans{Page: Page[OrphanView]{Items: make([]OrphanView, len(rows)), Limit: in.Limit, Offset: in.Offset}, ByKind: byKind}
	for i := range rows {
		out.Items[i] = OrphanView{Kind: rows[i].Kind, View: viewOf(&rows[i].Resource), EstimatedMonthlyCost: costOf(costs, &rows[i])}
	}
	for k, n := range byKind {
		if in.Kind == "" || k == in.Kind {
			out.Total += n
		}
	}
	return &out, nil
}

func (h *Handlers) events(ctx context.Context, in *eventsIn) (*Page[EventView], error) {
	q := EventQuery{TenantIDs: in.Tenants.Tenants, Kind: in.Kind, Since: in.Since, Limit: in.Limit, Offset: in.Offset}
	events, total, err := h.Store.EventFeed(ctx, q)
	if err != nil {
		return nil, err
	}
	return &Page[EventView]{Items: eventViews(events), Total: total, Limit: q.Limit, Offset: q.Offset}, nil
}
