package states

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/pluginenv"
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
	if err := s.resourceStates(tenants, lower).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, ResourceState{TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID,
			PolicyAssignmentID: r.PolicyAssignmentID, PolicyDefinitionID: r.PolicyDefinitionID, PolicyName: r.PolicyName,
			Category: r.Category, ComplianceState: r.ComplianceState, Severity: r.Severity, EvaluatedAt: time.Unix(r.EvaluatedUnix, 0).UTC()})
	}
	return out, nil
}

// resourceStates selects the tenants' states of the resources whose ARM
// ids, in lower case, are lowerIDs, in ResourceStates' order. The
// lookup by LOWER(resource_id) within the tenants is what the index
// compliance_policy_states_resource_lower serves.
func (s *Store) resourceStates(tenants, lowerIDs []string) *bun.SelectQuery {
	return s.DB.NewSelect().Table("compliance_policy_states").
		Column("tenant_id", "subscription_id", "resource_id", "policy_assignment_id", "policy_definition_id", "policy_name",
			"category", "compliance_state", "severity", "evaluated_unix").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Where("LOWER(resource_id) IN (?)", bun.List(lowerIDs)).
		Order("tenant_id", "resource_id", "state_rank DESC", "policy_name", "policy_assignment_id")
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

// PolicyResourcesQuery selects a page of one policy's non-compliant
// resources.
type PolicyResourcesQuery struct {
	TenantIDs []string
	// PolicyID is the policy definition id, as the non-compliant list's
	// id gives it.
	PolicyID      string
	Limit, Offset int
}

// PolicyResource is a resource non-compliant under a policy: one record
// per tenant and resource, whichever assignments of the policy found it.
type PolicyResource struct {
	TenantID        string    `json:"tenant_id"`
	TenantName      string    `json:"tenant_name"`
	SubscriptionID  string    `json:"subscription_id"`
	ResourceID      string    `json:"resource_id" doc:"The ARM id"`
	ResourceType    string    `json:"resource_type"`
	ComplianceState string    `json:"compliance_state" enum:"NonCompliant"`
	Severity        string    `json:"severity" enum:"High,Medium,Low"`
	LastEvaluatedAt time.Time `json:"last_evaluated_at" doc:"The latest evaluation among the resource's states under the policy"`
}

// PolicyResources is a page of a policy's non-compliant resources.
type PolicyResources struct {
	PolicyID   string           `json:"policy_id"`
	PolicyName string           `json:"policy_name"`
	Category   string           `json:"category"`
	Severity   string           `json:"severity" enum:"High,Medium,Low"`
	Items      []PolicyResource `json:"items" doc:"By tenant id, then ARM id"`
	Total      int              `json:"total" doc:"How many non-compliant resources the policy has in the tenants, beyond this page"`
	Limit      int              `json:"limit"`
	Offset     int              `json:"offset"`
}

// policyResources selects the policy's non-compliant resources of the
// tenants, one row per tenant and resource.
func (s *Store) policyResources(q PolicyResourcesQuery) *bun.SelectQuery {
	return s.DB.NewSelect().Table("compliance_policy_states").
		Column("tenant_id", "resource_id").
		ColumnExpr("MAX(subscription_id) AS subscription_id").
		ColumnExpr("MAX(resource_type) AS resource_type").
		ColumnExpr("MAX(policy_name) AS policy_name").
		ColumnExpr("MAX(category) AS category").
		ColumnExpr("MAX(severity_rank) AS severity_rank").
		ColumnExpr("MAX(evaluated_unix) AS evaluated_unix").
		Where("tenant_id IN (?)", bun.List(q.TenantIDs)).
		Where("policy_definition_id = ?", q.PolicyID).
		Where("state_rank = 2").
		Group("tenant_id", "resource_id")
}

// PolicyResources returns a page of the policy's non-compliant resources
// in the tenants, with the policy's name, category and severity and how
// many there are in all; Total is 0 when the policy has none there (or
// is unknown), and the items' tenant names are the caller's to fill.
func (s *Store) PolicyResources(ctx context.Context, q PolicyResourcesQuery) (PolicyResources, error) {
	out := PolicyResources{PolicyID: q.PolicyID, Items: []PolicyResource{}, Limit: q.Limit, Offset: q.Offset}
	if len(q.TenantIDs) == 0 {
		return out, nil
	}
	var head struct {
		Total        int    `bun:"total"`
		PolicyName   string `bun:"policy_name"`
		Category     string `bun:"category"`
		SeverityRank int    `bun:"severity_rank"`
	}
	err := s.DB.NewSelect().TableExpr("(?) AS r", s.policyResources(q)).
		ColumnExpr("COUNT(*) AS total").
		ColumnExpr("COALESCE(MAX(policy_name), '') AS policy_name").
		ColumnExpr("COALESCE(MAX(category), '') AS category").
		ColumnExpr("COALESCE(MAX(severity_rank), 0) AS severity_rank").
		Scan(ctx, &head)
	if err != nil || head.Total == 0 {
		return out, err
	}
	out.Total, out.PolicyName, out.Category, out.Severity = head.Total, head.PolicyName, head.Category, severityOfRank(head.SeverityRank)
	var rows []struct {
		TenantID       string `bun:"tenant_id"`
		ResourceID     string `bun:"resource_id"`
		SubscriptionID string `bun:"subscription_id"`
		ResourceType   string `bun:"resource_type"`
		PolicyName     string `bun:"policy_name"`
		Category       string `bun:"category"`
		SeverityRank   int    `bun:"severity_rank"`
		EvaluatedUnix  int64  `bun:"evaluated_unix"`
	}
	err = s.policyResources(q).Order("tenant_id", "resource_id").Limit(int64(q.Limit)).Offset(int64(q.Offset)).Scan(ctx, &rows)
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		out.Items = append(out.Items, PolicyResource{TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID,
			ResourceType: r.ResourceType, ComplianceState: StateNonCompliant, Severity: severityOfRank(r.SeverityRank),
			LastEvaluatedAt: time.Unix(r.EvaluatedUnix, 0).UTC()})
	}
	return out, nil
}

// NamedPolicyResources is the store's PolicyResources with each item's
// tenant named through the host; a policy without a non-compliant
// resource in the tenants, or unknown, is a 404, so a caller cannot tell
// a policy of another tenant from one that does not exist.
func NamedPolicyResources(ctx context.Context, st *Store, host *sdk.Host, q PolicyResourcesQuery) (*PolicyResources, error) {
	out, err := st.PolicyResources(ctx, q)
	if err != nil {
		return nil, err
	}
	if out.Total == 0 {
		return nil, sdk.NotFound("policy " + q.PolicyID + " has no non-compliant resource in the tenants")
	}
	ids := make([]string, len(out.Items))
	for i := range out.Items {
		ids[i] = out.Items[i].TenantID
	}
	names, err := pluginenv.TenantNames(ctx, host, ids)
	if err != nil {
		return nil, err
	}
	for i := range out.Items {
		out.Items[i].TenantName = names[out.Items[i].TenantID]
	}
	return &out, nil
}

type policyResourcesIn struct {
	Tenants
	PolicyID string `query:"policy_id" required:"true" maxLength:"1024" pattern:"^/[^/]" example:"/providers/Microsoft.Authorization/policyDefinitions/0a914e76-4921-4c19-b460-a2d36003525a" doc:"The policy definition id, as the non-compliant list's id gives it (/providers/Microsoft.Authorization/policyDefinitions/…)"`
	Limit    int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset   int    `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

func (h *Handlers) policyResources(ctx context.Context, in *policyResourcesIn) (*PolicyResources, error) {
	return NamedPolicyResources(ctx, h.Store, h.Host, PolicyResourcesQuery{TenantIDs: in.Tenants.Tenants, PolicyID: in.PolicyID, Limit: in.Limit, Offset: in.Offset})
}
