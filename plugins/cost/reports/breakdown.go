package reports

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// The grains of a day's breakdown: what each item is.
const (
	// ByResourceGroup is a resource group of a subscription.
	ByResourceGroup = "resource_group"
	// ByResource is a resource (or the costs of no resource).
	ByResource = "resource"
)

// GroupCost is one resource group's or resource's cost of a service on a
// day, in one currency.
type GroupCost struct {
	SubscriptionID string        `bun:"subscription_id" json:"subscription_id"`
	ResourceGroup  string        `bun:"resource_group" json:"resource_group" doc:"By resource, the group the resource's id names, in lower case; empty for the costs of no resource"`
	ResourceID     *string       `bun:"resource_id" json:"resource_id" doc:"By resource, its ARM id in lower case (empty for the costs of no resource); by resource group, null"`
	Label          string        `bun:"-" json:"label" doc:"The item as people read it: the resource group, or the resource's name and group"`
	Currency       string        `bun:"currency" json:"currency"`
	Cost           ledger.Amount `bun:"cost" json:"cost"`
}

// Breakdown is a tenant's cost of one service on one day by resource
// group or by resource.
type Breakdown struct {
	TenantID string           `json:"tenant_id"`
	Date     ledger.Day       `json:"date" format:"date"`
	Service  string           `json:"service"`
	Grain    string           `json:"grain" enum:"resource_group,resource" doc:"What each item is: a resource group of a subscription, or a resource"`
	Items    []GroupCost      `json:"items" doc:"Per currency, costliest first"`
	Totals   []CurrencyAmount `json:"totals" doc:"The items' sum per currency"`
}

// DayBreakdown sums the tenant's cost of the service on the day per
// subscription, resource group (or resource, by ByResource) and currency,
// from the raw ledger: per currency, costliest first.
func (s *Store) DayBreakdown(ctx context.Context, tenant string, day ledger.Day, service, by string, m Metric) ([]GroupCost, error) {
	out := []GroupCost{}
	sel := s.DB.NewSelect().TableExpr("cost_daily").
		ColumnExpr("subscription_id, resource_group, NULL AS resource_id, currency, CAST(SUM(?) AS BIGINT) AS cost", bun.Ident(m.Column())).
		GroupExpr("subscription_id, resource_group, currency")
	if by == ByResource {
		sel = s.DB.NewSelect().TableExpr("cost_resource_daily").
			ColumnExpr("subscription_id, resource_group, resource_id, currency, CAST(SUM(?) AS BIGINT) AS cost", bun.Ident(m.Column())).
			GroupExpr("subscription_id, resource_group, resource_id, currency")
	}
	err := sel.Where("tenant_id = ? AND day = ? AND service = ?", tenant, day, service).
		OrderExpr("currency, cost DESC, subscription_id, resource_group, resource_id").Scan(ctx, &out)
	for i, it := range out {
		out[i].Label = it.ResourceGroup
		if it.ResourceID != nil {
			out[i].Label = ResourceLabel(*it.ResourceID)
		}
	}
	return out, err
}

type breakdownIn struct {
	Tenant  sdk.TenantID `query:"tenant_id" required:"true" doc:"The tenant, one the caller may see (403 otherwise)"`
	Date    string       `query:"date" required:"true" format:"date" doc:"The day (UTC)"`
	Service string       `query:"service" required:"true" minLength:"1" maxLength:"256" doc:"The service, as the ledger names it (an anomaly's service)"`
	By      string       `query:"by" enum:"resource_group,resource" default:"resource_group" doc:"What an item is: a resource group of a subscription, or a resource"`
	MetricParam
}

// breakdownRoute declares the day's breakdown, the drill-down of an
// anomaly.
func (h *Handlers) breakdownRoute() sdk.Route {
	return sdk.Get("/api/v1/costs/daily-breakdown", sdk.Op{ID: "costs-daily-breakdown", Tags: []string{tag}, Summary: "A tenant's cost of one service on one day, by resource group or resource",
		Description: "The drill-down of an anomaly: the day's cost of the service per subscription and resource group, or per resource with by=resource, " +
			"per currency, costliest first, with each currency's total. A day or service without costs answers no items.",
		Responses: map[string]*huma.Response{"422": {Description: "A parameter is missing or not of its form"}}}, h.breakdown)
}

func (h *Handlers) breakdown(ctx context.Context, in *breakdownIn) (*Breakdown, error) {
	d, err := day("query.date", in.Date)
	if err != nil {
		return nil, err
	}
	items, err := h.Store.DayBreakdown(ctx, string(in.Tenant), d, in.Service, in.By, in.Metric)
	if err != nil {
		return nil, err
	}
	return &Breakdown{TenantID: string(in.Tenant), Date: d, Service: in.Service, Grain: in.By, Items: items, Totals: Totals(items)}, nil
}

// Totals sums the items per currency, in the items' order of currencies.
func Totals(items []GroupCost) []CurrencyAmount {
	out := []CurrencyAmount{}
	for _, it := range items {
		if n := len(out); n > 0 && out[n-1].Currency == it.Currency {
			out[n-1].TotalCost += it.Cost
			continue
		}
		out = append(out, CurrencyAmount{Currency: it.Currency, TotalCost: it.Cost})
	}
	return out
}
