package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// CostDataset is the cost plugin's dataset of each resource's actual cost
// over its last 30 full days, which the orphans' estimated monthly costs
// are read from.
const CostDataset = "resource_costs"

// Amount is money in cents of its currency.
type Amount int64

// String is the amount with two decimals, as "-12.30".
func (a Amount) String() string {
	sign, n := "", int64(a)
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}

// MarshalJSON writes the amount as a JSON number with two decimals,
// exactly.
func (a Amount) MarshalJSON() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalJSON reads a JSON number of units, rounded to cents.
func (a *Amount) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 9e13 {
		return fmt.Errorf("amount %s: not a number of at most 9e13", b)
	}
	*a = Amount(math.Round(v * 100))
	return nil
}

// Schema describes an amount in the OpenAPI document as the number it is
// written as.
func (Amount) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeNumber, Description: "An amount of money in units of its currency, with two decimals"}
}

// MonthlyCost is a resource's estimated monthly cost: its actual cost over
// the 30 days of a period. Its schema is nullable: a resource without a
// known cost has null.
type MonthlyCost struct {
	_          struct{} `nullable:"true"`
	Amount     Amount   `json:"amount"`
	Currency   string   `json:"currency" doc:"ISO 4217 code"`
	PeriodFrom string   `json:"period_from" format:"date" doc:"First day (UTC) of the 30 the amount sums"`
	PeriodTo   string   `json:"period_to" format:"date" doc:"Last day (UTC), included"`
}

// costRecord is the part of a resource_costs record read here.
type costRecord struct {
	TenantID   string `json:"tenant_id"`
	ResourceID string `json:"resource_id"`
	Currency   string `json:"currency"`
	Cents      *int64 `json:"monthly_cost_cents"`
	PeriodFrom string `json:"period_from"`
	PeriodTo   string `json:"period_to"`
}

// costKey names a resource of a tenant; ARM ids are compared in lower
// case, as Cost Management reports them.
type costKey struct{ tenant, resource string }

// monthlyCosts reads the estimated monthly costs of the orphans from the
// cost plugin's dataset through the host, for the tenants asked about and
// only the orphans' resources. A resource without a record, or with
// records in more than one currency, has none. With no host, or no cost
// plugin installed or running, nothing has a cost.
func (h *Handlers) monthlyCosts(ctx context.Context, tenants []string, orphans []Orphan) (map[costKey]*MonthlyCost, error) {
	ids := make([]string, len(orphans))
	for i := range orphans {
		ids[i] = strings.ToLower(orphans[i].ResourceID)
	}
	return h.costsOf(ctx, tenants, ids)
}

// costsOf reads the estimated monthly costs of the resources with the
// ARM ids (in lower case) of the tenants, as monthlyCosts does.
func (h *Handlers) costsOf(ctx context.Context, tenants, ids []string) (map[costKey]*MonthlyCost, error) {
	out := map[costKey]*MonthlyCost{}
	if h.Host == nil || len(ids) == 0 {
		return out, nil
	}
	mixed := map[costKey]bool{}
	err := h.Host.ReadDataset(ctx, CostDataset, tenants, map[string]string{"resource_ids": strings.Join(ids, "\n")}, func(raw json.RawMessage) error {
		var rec costRecord
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Cents == nil {
			return fmt.Errorf("a %s record without monthly_cost_cents: %s", CostDataset, raw)
		}
		k := costKey{rec.TenantID, strings.ToLower(rec.ResourceID)}
		if c, ok := out[k]; ok && c.Currency != rec.Currency {
			mixed[k] = true
		}
		out[k] = &MonthlyCost{Amount: Amount(*rec.Cents), Currency: rec.Currency, PeriodFrom: rec.PeriodFrom, PeriodTo: rec.PeriodTo}
		return nil
	})
	if errors.Is(err, sdk.ErrDatasetUnavailable) {
		return map[costKey]*MonthlyCost{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", CostDataset, err)
	}
	for k := range mixed {
		delete(out, k)
	}
	return out, nil
}

// costOf is the orphan's estimated monthly cost among costs, or nil.
func costOf(costs map[costKey]*MonthlyCost, o *Orphan) *MonthlyCost {
	return costs[costKey{o.TenantID, strings.ToLower(o.ResourceID)}]
}

// formatCost shows a cost on the page: "12.30 USD", or an em dash.
func formatCost(c *MonthlyCost) string {
	if c == nil {
		return "—"
	}
	return c.Amount.String() + " " + c.Currency
}
