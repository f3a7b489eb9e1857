package reports

import (
	"context"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// BreakdownGrain says what a day's breakdown is by: the ledger keeps a
// day's costs per subscription, resource group and service, as Cost
// Management reports them; a resource's own cost is kept only summed over
// its subscription's last 30 days (cost_resource), so a resource group is
// the finest grain of one day.
const BreakdownGrain = "resource_group"

// GroupCost is one resource group's cost of a service on a day, in one
// currency.
type GroupCost struct {
	SubscriptionID string        `bun:"subscription_id" json:"subscription_id"`
	ResourceGroup  string        `bun:"resource_group" json:"resource_group"`
	Currency       string        `bun:"currency" json:"currency"`
	Cost           ledger.Amount `bun:"cost" json:"cost"`
}

// Breakdown is a tenant's cost of one service on one day by resource
// group.
type Breakdown struct {
	TenantID string           `json:"tenant_id"`
	Date     ledger.Day       `json:"date" format:"date"`
	Service  string           `json:"service"`
	Grain    string           `json:"grain" enum:"resource_group" doc:"What each item is: a resource group of a subscription, the finest grain the ledger keeps for one day"`
	Items    []GroupCost      `json:"items" doc:"Per currency, costliest first"`
	Totals   []CurrencyAmount `json:"totals" doc:"The items' sum per currency"`
}

// DayBreakdown sums the tenant's cost of the service on the day per
// subscription, resource group and currency, from the raw ledger:
// per currency, costliest first.
func (s *Store) DayBreakdown(ctx context.Context, tenant string, day ledger.Day, service string) ([]GroupCost, error) {
	out := []GroupCost{}
	err := s.DB.NewSelect().TableExpr("cost_daily").
		ColumnExpr("subscription_id, resource_group, currency, CAST(SUM(cost_cents) AS BIGINT) AS cost").
		Where("tenant_id = ? AND day = ? AND service = ?", tenant, day, service).
		GroupExpr("subscription_id, resource_group, currency").
		OrderExpr("currency, cost DESC, subscription_id, resource_group").Scan(ctx, &out)
	return out, err
}

type breakdownIn struct {
	Tenant  sdk.TenantID `query:"tenant_id" required:"true" doc:"The tenant, one the caller may see (403 otherwise)"`
	Date    string       `query:"date" required:"true" format:"date" doc:"The day (UTC)"`
	Service string       `query:"service" required:"true" minLength:"1" maxLength:"256" doc:"The service, as the ledger names it (an anomaly's service)"`
}

// breakdownRoute declares the day's breakdown, the drill-down of an
// anomaly.
func (h *Handlers) breakdownRoute() sdk.Route {
	return sdk.Get("/api/v1/costs/daily-breakdown", sdk.Op{ID: "costs-daily-breakdown", Tags: []string{tag}, Summary: "A tenant's cost of one service on one day, by resource group",
		Description: "The drill-down of an anomaly: the day's cost of the service per subscription and resource group, per currency, costliest first, with each currency's total. " +
			"A resource group is the finest grain the ledger keeps for a day (Cost Management's daily rows); a resource's own cost is kept only over its last 30 days. " +
			"A day or service without costs answers no items.",
		Responses: map[string]*huma.Response{"422": {Description: "A parameter is missing or not of its form"}}}, h.breakdown)
}

func (h *Handlers) breakdown(ctx context.Context, in *breakdownIn) (*Breakdown, error) {
	d, err := day("query.date", in.Date)
	if err != nil {
		return nil, err
	}
	items, err := h.Store.DayBreakdown(ctx, string(in.Tenant), d, in.Service)
	if err != nil {
		return nil, err
	}
	return &Breakdown{TenantID: string(in.Tenant), Date: d, Service: in.Service, Grain: BreakdownGrain, Items: items, Totals: Totals(items)}, nil
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
