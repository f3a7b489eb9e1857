package states

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk"
)

// ResourceStatesDatasetName is the name other plugins read the policy
// states of given resources by: the resources plugin's resource page.
const ResourceStatesDatasetName = "compliance_resource_states"

// MaxResourceIDs bounds the resource states dataset's resource_ids
// parameter.
const MaxResourceIDs = 1000

// ResourceState is one record of the resource states dataset: a
// resource's latest state under one policy assignment.
type ResourceState struct {
	TenantID           string    `json:"tenant_id" doc:"Internal tenant id"`
	SubscriptionID     string    `json:"subscription_id"`
	ResourceID         string    `json:"resource_id" doc:"The ARM id, as Policy Insights reported it"`
	PolicyAssignmentID string    `json:"policy_assignment_id"`
	PolicyDefinitionID string    `json:"policy_definition_id"`
	PolicyName         string    `json:"policy_name"`
	Category           string    `json:"category"`
	ComplianceState    string    `json:"compliance_state" doc:"Compliant, NonCompliant, Exempt, Conflict or Unknown"`
	Severity           string    `json:"severity" enum:"High,Medium,Low"`
	EvaluatedAt        time.Time `json:"evaluated_at"`
}

// ResourceStates returns the tenants' latest policy states of the
// resources named by ARM id (case ignored, as ARM ids are), by tenant and
// resource; a resource's non-compliant first, then compliant or exempt,
// then the rest, each by policy name and assignment.
func (s *Store) ResourceStates(ctx context.Context, tenants, resourceIDs []string) ([]ResourceState, error) {
	out := []ResourceState{}
	if len(tenants) == 0 || len(resourceIDs) == 0 {
		return out, nil
	}
	lower := make([]string, len(resourceIDs))
	for i, id := range resourceIDs {
		lower[i] = strings.ToLower(id)
	}
	var rows []struct {
		TenantID           string `bun:"tenant_id"`
		SubscriptionID     string `bun:"subscription_id"`
		ResourceID         string `bun:"resource_id"`
		PolicyAssignmentID string `bun:"policy_assignment_id"`
		PolicyDefinitionID string `bun:"policy_definition_id"`
		PolicyName         string `bun:"policy_name"`
		Category           string `bun:"category"`
		ComplianceState    string `bun:"compliance_state"`
		Severity           string `bun:"severity"`
		EvaluatedUnix      int64  `bun:"evaluated_unix"`
	}
	err := s.DB.NewSelect().Table("compliance_policy_states").
		Column("tenant_id", "subscription_id", "resource_id", "policy_assignment_id", "policy_definition_id", "policy_name",
			"category", "compliance_state", "severity", "evaluated_unix").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Where("LOWER(resource_id) IN (?)", bun.List(lower)).
		Order("tenant_id", "resource_id", "state_rank DESC", "policy_name", "policy_assignment_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, ResourceState{TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID,
			PolicyAssignmentID: r.PolicyAssignmentID, PolicyDefinitionID: r.PolicyDefinitionID, PolicyName: r.PolicyName,
			Category: r.Category, ComplianceState: r.ComplianceState, Severity: r.Severity, EvaluatedAt: time.Unix(r.EvaluatedUnix, 0).UTC()})
	}
	return out, nil
}

// ResourceStatesDataset publishes the latest policy states of the
// resources its parameter resource_ids names (ARM ids separated by
// newlines, case ignored, 1 to MaxResourceIDs), of the tenants asked
// for. The parameter is required: the dataset answers about resources a
// reader already holds, never the whole table.
func (h *Handlers) ResourceStatesDataset() sdk.Dataset {
	return sdk.DatasetOf(ResourceStatesDatasetName,
		"The latest policy state of each resource under each policy assignment, for the resources named. "+
			"Parameter resource_ids (required): ARM ids separated by newlines, at most 1000, case ignored.",
		func(ctx context.Context, req sdk.DatasetRequest, emit func(ResourceState) error) error {
			var ids []string
			for _, id := range strings.Split(req.Params["resource_ids"], "\n") {
				if id = strings.TrimSpace(id); id != "" {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 || len(ids) > MaxResourceIDs {
				return fmt.Errorf("resource_ids: want 1 to %d ARM ids separated by newlines, got %d", MaxResourceIDs, len(ids))
			}
			rows, err := h.Store.ResourceStates(ctx, req.TenantIDs, ids)
			if err != nil {
				return err
			}
			for _, r := range rows {
				if err := emit(r); err != nil {
					return err
				}
			}
			return nil
		})
}
