package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// ItemPath is the resource page: one resource with its properties, tags,
// policy states, cost and lifecycle, named by its ARM id in the query's
// resource_id (ItemLink), the id every plugin knows a resource by.
const ItemPath = "/resources/item"

// ComplianceDataset is the compliance plugin's dataset of the latest
// policy states of named resources, which the resource page shows.
const ComplianceDataset = "compliance_resource_states"

// Pages are the inventory's own pages: the resource page, reached from
// the inventory's rows and other plugins' lists of resources.
func (h *Handlers) Pages() []sdk.Page {
	return []sdk.Page{{Path: ItemPath, Title: "Resource", Handler: sdk.View(h.item)}}
}

// ItemLink is the resource page of the resource with the ARM id.
func ItemLink(resourceID string) string {
	return ItemPath + "?resource_id=" + url.QueryEscape(resourceID)
}

type itemIn struct {
	ResourceID string `query:"resource_id" maxLength:"2048" pattern:"^/[^/]" doc:"The resource's ARM id (/subscriptions/…), case ignored; without it the page says where to find one"`
}

// item is the resource page. A resource the inventory does not hold, or
// one of a tenant the caller may not see, is the same 404, so the page
// never tells another tenant's resource from an unknown one.
func (h *Handlers) item(w http.ResponseWriter, r *http.Request, in *itemIn) {
	ctx := r.Context()
	if in.ResourceID == "" {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty("This page shows one resource: open it from a row of the inventory on the resources page, or from a policy's non-compliant resources."))
		return
	}
	res, err := h.Store.Get(ctx, UID(in.ResourceID))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if res == nil || !sdk.PrincipalFrom(ctx).CanSee(res.TenantID) {
		sdk.WriteError(w, sdk.NotFound("no such resource in the inventory"))
		return
	}
	body, err := h.itemBody(ctx, res)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, body)
}

// itemBody is the resource page's cards for a resource the caller may see.
func (h *Handlers) itemBody(ctx context.Context, res *Resource) (template.HTML, error) {
	names, err := pluginenv.TenantNames(ctx, h.Host, []string{res.TenantID})
	if err != nil {
		return "", err
	}
	states, err := h.complianceCard(ctx, res)
	if err != nil {
		return "", err
	}
	costs, err := h.costsOf(ctx, []string{res.TenantID}, []string{strings.ToLower(res.ResourceID)})
	if err != nil {
		return "", err
	}
	history, err := h.Store.History(ctx, res.UID)
	if err != nil {
		return "", err
	}
	v := viewOf(res)
	return sdkui.Join(
		sdkui.Card(v.Name, summaryTable(&v, names[res.TenantID])),
		sdkui.Card("Policy states", states),
		sdkui.Card("Cost", costCard(costs[costKey{res.TenantID, strings.ToLower(res.ResourceID)}])),
		sdkui.Card("Tags", tagsTable(v.Tags)),
		sdkui.Card("Properties", propertiesTable(res.Properties)),
		sdkui.Card("Lifecycle", historyTable(history)),
	), nil
}

// summaryTable is the resource's own fields, one a row.
func summaryTable(v *View, tenant string) template.HTML {
	sku := v.SKU
	if sku == "" {
		sku = "—"
	}
	return sdkui.Table([]string{"Field", "Value"}, [][]any{
		{"Tenant", tenant}, {"Subscription", v.SubscriptionID}, {"Resource group", v.ResourceGroup}, {"Type", v.Type},
		{"Location", v.Location}, {"SKU", sku}, {"ARM id", v.ResourceID},
		{"First seen", sdkui.Time(v.FirstSeen)}, {"Last seen", sdkui.Time(v.LastSeen)}, {"Last changed", sdkui.Time(v.ChangedAt)},
	}, "The resource as last synced")
}

// tagsTable is the resource's tags by key.
func tagsTable(tags map[string]string) template.HTML {
	keys := slices.Sorted(maps.Keys(tags))
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k, tags[k]}
	}
	return sdkui.Table([]string{"Tag", "Value"}, rows, "Tags, by key")
}

// propertiesTable is the resource's top-level properties by name, each
// value as the JSON Resource Graph gave.
func propertiesTable(raw string) template.HTML {
	props := map[string]json.RawMessage{}
	_ = json.Unmarshal([]byte(raw), &props)
	keys := slices.Sorted(maps.Keys(props))
	rows := make([][]any, len(keys))
	for i, k := range keys {
		rows[i] = []any{k, string(props[k])}
	}
	return sdkui.Table([]string{"Property", "Value"}, rows, "Properties, by name")
}

// stateRecord is the part of a compliance_resource_states record shown.
type stateRecord struct {
	PolicyName      string    `json:"policy_name"`
	Category        string    `json:"category"`
	ComplianceState string    `json:"compliance_state"`
	Severity        string    `json:"severity"`
	EvaluatedAt     time.Time `json:"evaluated_at"`
}

// stateHealth is the colour of a compliance state.
var stateHealth = map[string]sdkui.Health{"NonCompliant": sdkui.Critical, "Compliant": sdkui.OK, "Exempt": sdkui.OK}

// complianceCard is the resource's policy states, read from the
// compliance plugin's dataset through the host; without a compliance
// plugin running it says so.
func (h *Handlers) complianceCard(ctx context.Context, res *Resource) (template.HTML, error) {
	var rows [][]any
	err := h.Host.ReadDataset(ctx, ComplianceDataset, []string{res.TenantID}, map[string]string{"resource_ids": res.ResourceID}, func(raw json.RawMessage) error {
		var s stateRecord
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("a %s record: %w", ComplianceDataset, err)
		}
		rows = append(rows, []any{s.PolicyName, s.Category, sdkui.Badge(s.ComplianceState, stateHealth[s.ComplianceState]), s.Severity, sdkui.Time(s.EvaluatedAt)})
		return nil
	})
	if errors.Is(err, sdk.ErrDatasetUnavailable) {
		return sdkui.ErrorState("Policy states are unavailable: no compliance plugin is running."), nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", ComplianceDataset, err)
	}
	if len(rows) == 0 {
		return sdkui.Empty("No policy evaluated this resource at the last compliance sync."), nil
	}
	return sdkui.Table([]string{"Policy", "Category", "State", "Severity", "Evaluated"}, rows,
		"Policy states at the last compliance sync, non-compliant first"), nil
}

// costCard is the resource's estimated monthly cost, or why there is none.
func costCard(c *MonthlyCost) template.HTML {
	if c == nil {
		return sdkui.Empty("No cost of this resource over the last 30 days, or no cost plugin is running.")
	}
	return sdkui.Stat("Estimated monthly cost", formatCost(c), "actual cost from "+c.PeriodFrom+" to "+c.PeriodTo, "")
}

// eventHealth is the colour of a lifecycle event's kind.
var eventHealth = map[string]sdkui.Health{"created": sdkui.OK, "changed": sdkui.Warning, "deleted": sdkui.Critical}

// historyTable is the resource's lifecycle events, newest first.
func historyTable(events []Event) template.HTML {
	rows := make([][]any, len(events))
	for i, e := range events {
		fields := strings.Join(e.ChangedFields(), ", ")
		rows[len(events)-1-i] = []any{sdkui.Time(e.At), sdkui.Badge(e.Kind, eventHealth[e.Kind]), fields}
	}
	return sdkui.Table([]string{"When", "Event", "Changed fields"}, rows, "Lifecycle events, newest first")
}
