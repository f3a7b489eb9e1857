package inventory

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
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

func float(v float64) *float64 { return &v }

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// percent is part of whole in percent to two decimals, 100 of nothing.
func percent(part, whole int64) float64 {
	if whole == 0 {
		return 100
	}
	return math.Round(float64(part)*10000/float64(whole)) / 100
}

// Bounds of the inventory's filters: declared on its route, where the
// host applies them, and applied by the resources page, whose query the
// host does not check.
const (
	maxTypeLen     = 200
	maxLocationLen = 64
	maxGroupLen    = 90
	maxTagKeyLen   = 512
	maxTagValueLen = 256
	maxTextLen     = 200
	maxOffset      = 1_000_000
	// locationForm is a location's form, such as eastus.
	locationForm = "^[a-z0-9]+$"
)

// filterQuery reads the inventory's filters from a query, for the
// tenants.
func filterQuery(q url.Values, tenants []string) ListQuery {
	return ListQuery{TenantIDs: tenants, Type: q.Get("type"), Location: q.Get("location"), ResourceGroup: q.Get("resource_group"),
		TagKey: q.Get("tag_key"), TagValue: q.Get("tag_value"), Text: q.Get("q")}
}

// checkTag refuses a tag value without the key it is the value of.
func (q ListQuery) checkTag() error {
	if q.TagValue != "" && q.TagKey == "" {
		return sdk.Invalid("query.tag_value", "needs tag_key")
	}
	return nil
}

var (
	tenantIDsParam = &huma.Param{Name: "tenant_ids", In: "query", Description: "Only these tenants (each must be one the caller may see); all the caller's when omitted",
		Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}, MaxItems: intPtr(100)}}
	limitParam  = &huma.Param{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500), Default: 100}}
	offsetParam = &huma.Param{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(0), Maximum: float(maxOffset), Default: 0}}
	textSchema  = func(max int) *huma.Schema {
		return &huma.Schema{Type: huma.TypeString, MinLength: intPtr(1), MaxLength: intPtr(max)}
	}
)

func intPtr(n int) *int { return &n }

const tag = "resources"

// Routes declares the inventory routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	return []sdk.Route{
		{Method: http.MethodGet, Path: "/api/v1/resources/inventory", TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "resources-inventory", Tags: []string{tag}, Summary: "Resource inventory",
			Description: "The resources of the caller's tenants as last synced from Resource Graph, filtered and sorted, one page of them.",
			Parameters: []*huma.Param{tenantIDsParam,
				{Name: "type", In: "query", Description: "Resource type, e.g. microsoft.compute/disks (case ignored)", Schema: textSchema(maxTypeLen)},
				{Name: "location", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Pattern: locationForm, MaxLength: intPtr(maxLocationLen)}},
				{Name: "resource_group", In: "query", Description: "Case ignored", Schema: textSchema(maxGroupLen)},
				{Name: "tag_key", In: "query", Schema: textSchema(maxTagKeyLen)},
				{Name: "tag_value", In: "query", Description: "With tag_key: only resources whose tag has this value", Schema: textSchema(maxTagValueLen)},
				{Name: "q", In: "query", Description: "Text found in the name or ARM id, case ignored", Schema: textSchema(maxTextLen)},
				{Name: "sort_by", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: anySlice(SortKeys), Default: "name"}},
				{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "asc"}},
				limitParam, offsetParam,
			},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Resources", Page[View]{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/resources/inventory/counts", TenantScoped: true, Handler: h.counts, Operation: &huma.Operation{
			OperationID: "resources-inventory-counts", Tags: []string{tag}, Summary: "Resources counted by type and by location",
			Parameters: []*huma.Param{tenantIDsParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Counts", Counts{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/resources/inventory/{resource_id}", TenantScoped: true, Handler: h.get, Operation: &huma.Operation{
			OperationID: "resources-inventory-get", Tags: []string{tag}, Summary: "One resource with its lifecycle history",
			Parameters: []*huma.Param{{Name: "resource_id", In: "path", Required: true, Description: "Steward's id of the resource (the inventory's id), not the ARM id",
				Schema: &huma.Schema{Type: huma.TypeString, Pattern: "^[0-9a-f]{32}$"}}},
			Responses: map[string]*huma.Response{
				"200": sdk.JSONResponse("The resource", Detail{}),
				"404": {Description: "No such resource in the inventory, or it belongs to a tenant the caller may not see"},
			},
		}},
		{Method: http.MethodGet, Path: "/api/v1/resources/tags/coverage", TenantScoped: true, Handler: h.coverage, Operation: &huma.Operation{
			OperationID: "resources-tags-coverage", Tags: []string{tag}, Summary: "Coverage of the required tags",
			Description: "How many resources carry each tag of the plugin's required_tags, and all of them.",
			Parameters:  []*huma.Param{tenantIDsParam},
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("Tag coverage", Coverage{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/resources/orphans", TenantScoped: true, Handler: h.orphans, Operation: &huma.Operation{
			OperationID: "resources-orphans", Tags: []string{tag}, Summary: "Orphaned resources",
			Description: "Unattached managed disks, public IP addresses bound to no IP configuration, network interfaces attached to no VM, and resource groups (when Resource Graph lists them) holding nothing, read from the synced properties, " +
				"each with its estimated monthly cost where the cost plugin's resource_costs dataset has it.",
			Parameters: []*huma.Param{tenantIDsParam,
				{Name: "kind", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: anySlice(OrphanKinds)}},
				limitParam, offsetParam},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Orphans", Orphans{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/resources/events", TenantScoped: true, Handler: h.events, Operation: &huma.Operation{
			OperationID: "resources-events", Tags: []string{tag}, Summary: "Lifecycle events",
			Description: "What each inventory sync found created, changed or deleted since the one before, newest first.",
			Parameters: []*huma.Param{tenantIDsParam,
				{Name: "kind", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{EventCreated, EventChanged, EventDeleted}}},
				{Name: "since", In: "query", Description: "Only events at or after this time", Schema: &huma.Schema{Type: huma.TypeString, Format: "date-time"}},
				limitParam, offsetParam},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Events", Page[EventView]{})},
		}},
	}
}

// intParam reads a declared integer parameter the host has checked and
// defaulted.
func intParam(r *http.Request, name string) int64 {
	n, _ := strconv.ParseInt(r.URL.Query().Get(name), 10, 64)
	return n
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	q := r.URL.Query()
	lq := filterQuery(q, tenants)
	lq.SortBy, lq.Desc, lq.Limit, lq.Offset = q.Get("sort_by"), q.Get("sort_order") == "desc", intParam(r, "limit"), intParam(r, "offset")
	if err := lq.checkTag(); err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows, total, err := h.Store.List(r.Context(), lq)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	items := make([]View, len(rows))
	for i := range rows {
		items[i] = viewOf(&rows[i])
	}
	sdk.WriteJSON(w, http.StatusOK, Page[View]{Items: items, Total: total, Limit: lq.Limit, Offset: lq.Offset})
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	p := sdk.PrincipalFrom(r.Context())
	res, err := h.Store.Get(r.Context(), r.PathValue("resource_id"))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	// A resource of a tenant the caller may not see is answered exactly
	// like an unknown one.
	if res == nil || !p.CanSee(res.TenantID) {
		sdk.WriteError(w, sdk.NotFound("no resource "+r.PathValue("resource_id")+" in the inventory"))
		return
	}
	history, err := h.Store.History(r.Context(), res.UID)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	props := map[string]any{}
	_ = json.Unmarshal([]byte(res.Properties), &props)
	sdk.WriteJSON(w, http.StatusOK, Detail{View: viewOf(res), Properties: props, History: eventViews(history)})
}

func (h *Handlers) counts(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	byType, err := h.Store.CountBy(r.Context(), tenants, "type")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	byLocation, err := h.Store.CountBy(r.Context(), tenants, "location")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := Counts{ByType: byType, ByLocation: byLocation}
	for _, c := range byType {
		out.Total += c.Count
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) coverage(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	required := h.RequiredTags
	if required == nil {
		required = []string{}
	}
	c, err := h.Store.Coverage(r.Context(), tenants, required)
	if err != nil {
		sdk.WriteError(w, err)
		return
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
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) orphans(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	limit, offset, kind := intParam(r, "limit"), intParam(r, "offset"), r.URL.Query().Get("kind")
	rows, byKind, err := h.Store.Orphans(r.Context(), tenants, kind, limit, offset)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	costs, err := h.monthlyCosts(r.Context(), tenants, rows)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := Orphans{Page: Page[OrphanView]{Items: make([]OrphanView, len(rows)), Limit: limit, Offset: offset}, ByKind: byKind}
	for i := range rows {
		out.Items[i] = OrphanView{Kind: rows[i].Kind, View: viewOf(&rows[i].Resource), EstimatedMonthlyCost: costOf(costs, &rows[i])}
	}
	for k, n := range byKind {
		if kind == "" || k == kind {
			out.Total += n
		}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) events(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	q := EventQuery{TenantIDs: tenants, Kind: r.URL.Query().Get("kind"), Limit: intParam(r, "limit"), Offset: intParam(r, "offset")}
	if v := r.URL.Query().Get("since"); v != "" {
		if q.Since, err = time.Parse(time.RFC3339, v); err != nil {
			sdk.WriteError(w, sdk.Invalid("query.since", "must be an RFC 3339 date-time"))
			return
		}
	}
	events, total, err := h.Store.EventFeed(r.Context(), q)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, Page[EventView]{Items: eventViews(events), Total: total, Limit: q.Limit, Offset: q.Offset})
}
