package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// ResourceDatasetName is the name other plugins read resources' costs by.
const ResourceDatasetName = "resource_costs"

// MaxResourceIDs bounds the resource_costs dataset's resource_ids
// parameter.
const MaxResourceIDs = 1000

// ResourceRecord is one record of the resource_costs dataset.
type ResourceRecord struct {
	TenantID         string        `json:"tenant_id"`
	SubscriptionID   string        `json:"subscription_id"`
	ResourceID       string        `json:"resource_id"`
	Currency         string        `json:"currency"`
	MonthlyCost      ledger.Amount `json:"monthly_cost"`
	MonthlyCostCents int64         `json:"monthly_cost_cents"`
	PeriodFrom       ledger.Day    `json:"period_from"`
	PeriodTo         ledger.Day    `json:"period_to"`
}

const resourceDatasetSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "Estimated monthly cost of one resource in one currency",
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "description": "Internal tenant id"},
    "subscription_id": {"type": "string", "description": "The subscription the cost is billed in"},
    "resource_id": {"type": "string", "description": "The resource's ARM id in lower case, as Cost Management reports it"},
    "currency": {"type": "string", "description": "ISO 4217 code of the cost"},
    "monthly_cost": {"type": "number", "description": "Actual cost over the period (30 days) in units of currency, two decimals, exact"},
    "monthly_cost_cents": {"type": "integer", "description": "The same cost in cents, for exact sums"},
    "period_from": {"type": "string", "format": "date", "description": "First day (UTC) of the period the cost sums"},
    "period_to": {"type": "string", "format": "date", "description": "Last day (UTC) of the period, included"}
  },
  "required": ["tenant_id", "subscription_id", "resource_id", "currency", "monthly_cost", "monthly_cost_cents", "period_from", "period_to"],
  "additionalProperties": false
}`

// ResourceDataset publishes each resource's actual cost over the 30 full
// days its subscription's last sync summed, the estimated monthly cost of
// the resource, ordered by tenant, resource id, currency and
// subscription, streamed from a cursor. The optional parameter
// resource_ids (ARM ids separated by newlines, case ignored, at most
// MaxResourceIDs) reads only those resources.
func (h *Handlers) ResourceDataset() sdk.Dataset {
	return sdk.Dataset{
		Name: ResourceDatasetName,
		Description: "Estimated monthly cost per resource: its actual cost over the last 30 full days, per tenant and currency. " +
			"Parameter resource_ids: ARM ids separated by newlines (at most 1000) to read only those.",
		Schema: json.RawMessage(resourceDatasetSchema),
		Read: func(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
			var ids []string
			if v, ok := req.Params["resource_ids"]; ok {
				for _, id := range strings.Split(v, "\n") {
					if id = strings.ToLower(strings.TrimSpace(id)); id != "" {
						ids = append(ids, id)
					}
				}
				if len(ids) == 0 || len(ids) > MaxResourceIDs {
					return fmt.Errorf("resource_ids: want 1 to %d ARM ids separated by newlines, got %d", MaxResourceIDs, len(ids))
				}
			}
			return h.Store.EachResourceCost(ctx, req.TenantIDs, ids, func(r ResourceRecord) error {
				r.MonthlyCostCents = int64(r.MonthlyCost)
				return emit(r)
			})
		},
	}
}

// EachResourceCost calls fn with the tenants' resource costs (of the
// resources named, or all when ids is nil), ordered by tenant, resource
// id, currency and subscription, from a cursor.
func (s *Store) EachResourceCost(ctx context.Context, tenants, ids []string, fn func(ResourceRecord) error) error {
	if len(tenants) == 0 {
		return nil
	}
	q := `SELECT r.tenant_id, r.subscription_id, r.resource_id, r.currency, r.cost_cents, p.first_day, p.last_day
		FROM cost_resource r JOIN cost_resource_period p ON p.subscription_id = r.subscription_id
		WHERE r.tenant_id IN (?)`
	args := []any{bun.List(tenants)}
	if ids != nil {
		q += ` AND r.resource_id IN (?)`
		args = append(args, bun.List(ids))
	}
	rows, err := s.DB.QueryContext(ctx, q+` ORDER BY r.tenant_id, r.resource_id, r.currency, r.subscription_id`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r ResourceRecord
		if err := rows.Scan(&r.TenantID, &r.SubscriptionID, &r.ResourceID, &r.Currency, &r.MonthlyCost, &r.PeriodFrom, &r.PeriodTo); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}
