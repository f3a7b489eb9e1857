package states

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
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

// DefinitionCounts returns the tenants' distinct policy definitions, ordered
// by id, each with its group names and its compliant and non-compliant
// resources, in one aggregate query.
func (s *Store) DefinitionCounts(ctx context.Context, tenants []string) ([]DefinitionCount, error) {
	out := []DefinitionCount{}
	if len(tenants) == 0 {
		return out, nil
	}
	// Each state's group_names is a JSON array; the distinct arrays of a
	// definition joined with commas and bracketed are one JSON array of
	// arrays.
	groups := "group_concat(DISTINCT group_names)"
	if s.DB.Dialect().Name() == dialect.PG {
		groups = "string_agg(DISTINCT group_names, ',')"
	}
	var rows []struct {
		ID           string `bun:"policy_definition_id"`
		Name         string `bun:"name"`
		Groups       string `bun:"groups"`
		Compliant    int64  `bun:"compliant"`
		NonCompliant int64  `bun:"non_compliant"`
	}
	err := s.DB.NewSelect().Table("compliance_policy_states").
		Column("policy_definition_id").
		ColumnExpr("MIN(policy_name) AS name").
		ColumnExpr(groups+" AS groups").
		ColumnExpr("COUNT(DISTINCT CASE WHEN state_rank = 1 THEN resource_id END) AS compliant").
		ColumnExpr("COUNT(DISTINCT CASE WHEN state_rank = 2 THEN resource_id END) AS non_compliant").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Group("policy_definition_id").
		Order("policy_definition_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
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
