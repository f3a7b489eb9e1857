package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the monthly costs by.
const DatasetName = "costs"

// defaultMonths and maxMonths bound the dataset's months parameter.
const (
	defaultMonths = 12
	maxMonths     = 36
)

// MonthRecord is one record of the costs dataset.
type MonthRecord struct {
	TenantID       string        `json:"tenant_id"`
	Month          string        `json:"month"`
	Currency       string        `json:"currency"`
	TotalCost      ledger.Amount `json:"total_cost"`
	TotalCostCents int64         `json:"total_cost_cents"`
	Days           int           `json:"days"`
}

const datasetSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "Monthly cost of a tenant in one currency",
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "description": "Internal tenant id"},
    "month": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$", "description": "Calendar month (UTC), YYYY-MM"},
    "currency": {"type": "string", "description": "ISO 4217 code of the costs"},
    "total_cost": {"type": "number", "description": "Total of the month in units of currency, two decimals, exact"},
    "total_cost_cents": {"type": "integer", "description": "The same total in cents, for exact sums"},
    "days": {"type": "integer", "minimum": 1, "description": "Days of the month with costs in the currency"}
  },
  "required": ["tenant_id", "month", "currency", "total_cost", "total_cost_cents", "days"],
  "additionalProperties": false
}`

// Dataset publishes each tenant's cost per calendar month and currency,
// ordered by tenant, month and currency, streamed from a cursor. The
// parameter months (1 to 36, default 12) is how many months up to the
// current one, which is included, are read.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.Dataset{
		Name:        DatasetName,
		Description: "Cost per tenant, calendar month and currency. Parameter months: 1 to 36 months up to the current one (default 12).",
		Schema:      json.RawMessage(datasetSchema),
		Read: func(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
			months := defaultMonths
			if v, ok := req.Params["months"]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > maxMonths {
					return fmt.Errorf("months %q: want an integer from 1 to %d", v, maxMonths)
				}
				months = n
			}
			y, m, _ := h.today().Time().Date()
			from := ledger.DayOf(time.Date(y, m-time.Month(months)+1, 1, 0, 0, 0, 0, time.UTC))
			return h.Store.EachMonth(ctx, req.TenantIDs, from, Actual, func(t MonthTotal) error {
				return emit(MonthRecord{TenantID: t.TenantID, Month: fmt.Sprintf("%04d-%02d", t.Month/100, t.Month%100), Currency: t.Currency,
					TotalCost: ledger.Amount(t.Total), TotalCostCents: int64(t.Total), Days: t.Days})
			})
		},
	}
}
