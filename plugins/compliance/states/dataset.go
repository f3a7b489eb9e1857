package states

import (
	"context"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the compliance figures by.
const DatasetName = "compliance"

// Record is one record of the compliance dataset: a tenant's compliance
// figures at its latest complete compliance sync.
type Record struct {
	TenantID                 string    `json:"tenant_id" doc:"Internal tenant id"`
	Date                     string    `json:"date" format:"date" doc:"Day (UTC) of the snapshot"`
	OverallCompliancePercent *float64  `json:"overall_compliance_percent" nullable:"true" doc:"compliant_resources of compliant plus non-compliant resources, percent to two decimals; null without either"`
	CompliantResources       int64     `json:"compliant_resources"`
	NonCompliantResources    int64     `json:"non_compliant_resources" doc:"Resources with a NonCompliant policy state"`
	TotalResources           int64     `json:"total_resources" doc:"Resources with any policy state"`
	CompliantPolicies        int64     `json:"compliant_policies"`
	NonCompliantPolicies     int64     `json:"non_compliant_policies" doc:"Policy definitions with a NonCompliant state"`
	TotalPolicies            int64     `json:"total_policies"`
	PolicyStates             int64     `json:"policy_states"`
	SyncedAt                 time.Time `json:"synced_at"`
}

// Dataset publishes each tenant's latest snapshot, one record per tenant
// of the request that synced, ordered by tenant.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.DatasetOf(DatasetName, "Each tenant's overall compliance percent and its compliant and non-compliant resources and policies at its latest compliance sync.",
		func(ctx context.Context, req sdk.DatasetRequest, emit func(Record) error) error {
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
		})
}

// recordOf is a snapshot as a dataset record.
func recordOf(s *Snapshot) Record {
	return Record{TenantID: s.TenantID, Date: s.Day, OverallCompliancePercent: s.CompliancePercent(),
		CompliantResources: s.CompliantResources, NonCompliantResources: s.NonCompliantResources, TotalResources: s.TotalResources,
		CompliantPolicies: s.CompliantPolicies, NonCompliantPolicies: s.NonCompliantPolicies, TotalPolicies: s.TotalPolicies,
		PolicyStates: s.PolicyStates, SyncedAt: s.TakenAt.UTC()}
}
