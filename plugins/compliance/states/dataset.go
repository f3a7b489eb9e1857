package states

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the compliance figures by.
const DatasetName = "compliance"

// Record is one record of the compliance dataset: a tenant's latest
// snapshot.
type Record struct {
	TenantID                 string    `json:"tenant_id"`
	Date                     string    `json:"date"`
	OverallCompliancePercent *float64  `json:"overall_compliance_percent"`
	CompliantResources       int64     `json:"compliant_resources"`
	NonCompliantResources    int64     `json:"non_compliant_resources"`
	TotalResources           int64     `json:"total_resources"`
	CompliantPolicies        int64     `json:"compliant_policies"`
	NonCompliantPolicies     int64     `json:"non_compliant_policies"`
	TotalPolicies            int64     `json:"total_policies"`
	PolicyStates             int64     `json:"policy_states"`
	SyncedAt                 time.Time `json:"synced_at"`
}

const datasetSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "A tenant's compliance figures at its latest complete compliance sync",
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "description": "Internal tenant id"},
    "date": {"type": "string", "format": "date", "description": "Day (UTC) of the snapshot"},
    "overall_compliance_percent": {"type": ["number", "null"], "description": "compliant_resources of compliant plus non-compliant resources, percent to two decimals; null without either"},
    "compliant_resources": {"type": "integer"},
    "non_compliant_resources": {"type": "integer", "description": "Resources with a NonCompliant policy state"},
    "total_resources": {"type": "integer", "description": "Resources with any policy state"},
    "compliant_policies": {"type": "integer"},
    "non_compliant_policies": {"type": "integer", "description": "Policy definitions with a NonCompliant state"},
    "total_policies": {"type": "integer"},
    "policy_states": {"type": "integer"},
    "synced_at": {"type": "string", "format": "date-time"}
  },
  "required": ["tenant_id", "date", "overall_compliance_percent", "compliant_resources", "non_compliant_resources", "total_resources",
    "compliant_policies", "non_compliant_policies", "total_policies", "policy_states", "synced_at"],
  "additionalProperties": false
}`

// Dataset publishes each tenant's latest snapshot, one record per tenant
// of the request that synced, ordered by tenant.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.Dataset{
		Name:        DatasetName,
		Description: "Each tenant's overall compliance percent and its compliant and non-compliant resources and policies at its latest compliance sync.",
		Schema:      json.RawMessage(datasetSchema),
		Read: func(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
			snaps, err := h.Store.LatestSnapshots(ctx, req.TenantIDs)
			if err != nil {
				return err
			}
			for i := range snaps {
				if err := emit(recordOf(&snaps[i])); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// recordOf is a snapshot as a dataset record.
func recordOf(s *Snapshot) Record {
	return Record{TenantID: s.TenantID, Date: s.Day, OverallCompliancePercent: s.CompliancePercent(),
		CompliantResources: s.CompliantResources, NonCompliantResources: s.NonCompliantResources, TotalResources: s.TotalResources,
		CompliantPolicies: s.CompliantPolicies, NonCompliantPolicies: s.NonCompliantPolicies, TotalPolicies: s.TotalPolicies,
		PolicyStates: s.PolicyStates, SyncedAt: s.TakenAt.UTC()}
}
