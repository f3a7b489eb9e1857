package states

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
)

// DefinitionCount is one distinct policy definition of the tenants' states
// with its resources by compliance.
type DefinitionCount struct {
	PolicyDefinitionID string
	PolicyName         string
	// GroupNames is the union of the definition's initiative group names
	// over its assignments, sorted.
	GroupNames []string
	// Compliant counts distinct resources compliant (or exempt) under it,
	// NonCompliant those non-compliant.
	Compliant    int64
	NonCompliant int64
}

// groupsAgg is the aggregate joining the distinct group_names values of a
// group with commas: JSON arrays, or such lists of them.
func (s *Store) groupsAgg() string {
	if s.DB.Dialect().Name() == dialect.PG {
		return "string_agg(DISTINCT group_names, ',')"
	}
	return "group_concat(DISTINCT group_names)"
}

// replaceDefinitionCounts replaces, in Replace's transaction, the target
// subscription's definition counts with those of the staged states.
func (s *Store) replaceDefinitionCounts(ctx context.Context, tx bun.Tx, t Target) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM compliance_definition_counts WHERE subscription_id = ?`, t.SubscriptionID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO compliance_definition_counts
		(tenant_id, subscription_id, policy_definition_id, policy_name, group_names, compliant, non_compliant)
		SELECT ?, ?, policy_definition_id, MIN(policy_name), `+s.groupsAgg()+`,
			COUNT(DISTINCT CASE WHEN state_rank = 1 THEN resource_id END),
			COUNT(DISTINCT CASE WHEN state_rank = 2 THEN resource_id END)
		FROM compliance_stage GROUP BY policy_definition_id`, t.TenantID, t.SubscriptionID)
	return err
}

// DefinitionCounts returns the tenants' distinct policy definitions, ordered
// by id, each with its group names and its compliant and non-compliant
// resources, in one aggregate query over the definition counts each sync
// of a subscription writes (one row per subscription and definition, not
// per state).
func (s *Store) DefinitionCounts(ctx context.Context, tenants []string) ([]DefinitionCount, error) {
	out := []DefinitionCount{}
	if len(tenants) == 0 {
		return out, nil
	}
	var rows []struct {
		ID           string `bun:"policy_definition_id"`
		Name         string `bun:"name"`
		Groups       string `bun:"groups"`
		Compliant    int64  `bun:"compliant"`
		NonCompliant int64  `bun:"non_compliant"`
	}
	err := s.DB.NewSelect().Table("compliance_definition_counts").
		Column("policy_definition_id").
		ColumnExpr("MIN(policy_name) AS name").
		ColumnExpr(s.groupsAgg()+" AS groups").
		ColumnExpr("SUM(compliant) AS compliant").
		ColumnExpr("SUM(non_compliant) AS non_compliant").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Group("policy_definition_id").
		Order("policy_definition_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		// The group names are JSON arrays joined by commas, bracketed one
		// JSON array of arrays.
		var sets [][]string
		if err := json.Unmarshal([]byte("["+r.Groups+"]"), &sets); err != nil {
			return nil, fmt.Errorf("states: group names of %s: %w", r.ID, err)
		}
		names := []string{}
		for _, set := range sets {
			names = append(names, set...)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		out = append(out, DefinitionCount{PolicyDefinitionID: r.ID, PolicyName: r.Name, GroupNames: names,
			Compliant: r.Compliant, NonCompliant: r.NonCompliant})
	}
	return out, nil
}

// revisions is the table of the tenants' revisions of their states.
const revisions = "compliance_tenant_revisions"

// bumpRevision raises the tenant's revision in tx, which changes its
// stored states.
func bumpRevision(ctx context.Context, tx bun.Tx, tenantID string) error {
	return revcache.Bump(ctx, tx, revisions, tenantID)
}

// Revision identifies the state of the tenants' stored policy states and
// snapshots: it changes whenever a sync changes the states of any of them
// or takes a snapshot, so a result read from them after it was taken may
// be reused while it stays the same.
func (s *Store) Revision(ctx context.Context, tenants []string) (string, error) {
	return revcache.Read(ctx, s.DB, revisions, tenants)
}

// TenantRevisions is Revision per tenant, by tenant id, read in one
// statement: what a result kept per tenant is checked against.
func (s *Store) TenantRevisions(ctx context.Context, tenants []string) (map[string]string, error) {
	return revcache.ReadEach(ctx, s.DB, revisions, tenants)
}

// The bits of DefinitionResource.Evidence: whether any of the resource's
// states under the definition is Compliant, Exempt or NonCompliant.
const (
	EvidenceCompliant    = 1
	EvidenceExempt       = 2
	EvidenceNonCompliant = 4
)

// evidenceExpr is a resource's states under a definition as the bits of
// DefinitionResource.Evidence, an aggregate over its group.
const evidenceExpr = "MAX(CASE WHEN compliance_state = 'Compliant' THEN 1 ELSE 0 END) + " +
	"MAX(CASE WHEN compliance_state = 'Exempt' THEN 2 ELSE 0 END) + MAX(CASE WHEN state_rank = 2 THEN 4 ELSE 0 END)"

// DefinitionResource is what one resource's states under one policy
// definition say.
type DefinitionResource struct {
	PolicyDefinitionID string `bun:"policy_definition_id"`
	ResourceID         string `bun:"resource_id"`
	// Evidence holds the bits EvidenceCompliant, EvidenceExempt and
	// EvidenceNonCompliant.
	Evidence uint8 `bun:"evidence"`
}

// DefinitionResources returns, in one aggregate query, each resource of
// the tenants evaluated compliant, exempt or non-compliant under each
// policy definition, whichever assignments evaluated it; resources only
// Unknown or in Conflict are left out.
func (s *Store) DefinitionResources(ctx context.Context, tenants []string) ([]DefinitionResource, error) {
	out := []DefinitionResource{}
	if len(tenants) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Table("compliance_policy_states").
		Column("policy_definition_id", "resource_id").
		ColumnExpr(evidenceExpr+" AS evidence").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Where("state_rank > 0").
		Group("policy_definition_id", "resource_id").
		Scan(ctx, &out)
	return out, err
}

// ResourceEvidence is a DefinitionResource with where the resource is and
// what it and the definition are called.
type ResourceEvidence struct {
	DefinitionResource
	TenantID       string `bun:"tenant_id"`
	SubscriptionID string `bun:"subscription_id"`
	ResourceType   string `bun:"resource_type"`
	PolicyName     string `bun:"policy_name"`
}

// ResourceEvidence returns, in one aggregate query, each resource of the
// tenants evaluated compliant, exempt or non-compliant under each of the
// given policy definitions, as DefinitionResources does, ordered by
// resource and definition.
func (s *Store) ResourceEvidence(ctx context.Context, tenants, policyIDs []string) ([]ResourceEvidence, error) {
	out := []ResourceEvidence{}
	if len(tenants) == 0 || len(policyIDs) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Table("compliance_policy_states").
		Column("tenant_id", "policy_definition_id", "resource_id").
		ColumnExpr("MAX(subscription_id) AS subscription_id").
		ColumnExpr("MAX(resource_type) AS resource_type").
		ColumnExpr("MAX(policy_name) AS policy_name").
		ColumnExpr(evidenceExpr+" AS evidence").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Where("policy_definition_id IN (?)", bun.List(policyIDs)).
		Where("state_rank > 0").
		Group("tenant_id", "policy_definition_id", "resource_id").
		Order("resource_id", "policy_definition_id").
		Scan(ctx, &out)
	return out, err
}
