package states

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Guidance is a policy definition's text as the sync read it: what the
// policy checks and how to bring a resource it finds non-compliant into
// compliance.
type Guidance struct {
	bun.BaseModel      `bun:"table:compliance_policy_definitions,alias:g"`
	PolicyDefinitionID string `bun:"policy_definition_id,pk"`
	DisplayName        string `bun:"display_name"`
	Description        string `bun:"description"`
	Category           string `bun:"category"`
	// Remediation is empty when the definition carries none.
	Remediation string `bun:"remediation"`
	SyncedUnix  int64  `bun:"synced_unix"`
}

// ReferencedDefinitions lists the distinct policy definitions the
// tenant's stored states name, sorted.
func (s *Store) ReferencedDefinitions(ctx context.Context, tenantID string) ([]string, error) {
	ids := []string{}
	err := s.DB.NewSelect().Table("compliance_policy_states").ColumnExpr("DISTINCT policy_definition_id").
		Where("tenant_id = ?", tenantID).OrderExpr("policy_definition_id").Scan(ctx, &ids)
	return ids, err
}

// PutGuidance stores the definitions' guidance read at at, each replacing
// what was stored for its id, in one transaction: a definition read again
// unchanged leaves the same row.
func (s *Store) PutGuidance(ctx context.Context, list []Guidance, at time.Time) error {
	if len(list) == 0 {
		return nil
	}
	rows := make([]Guidance, len(list))
	for i, g := range list {
		g.SyncedUnix = at.Unix()
		rows[i] = g
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += stageRows {
			batch := rows[start:min(start+stageRows, len(rows))]
			_, err := tx.NewInsert().Model(&batch).On("CONFLICT (policy_definition_id) DO UPDATE").
				Set("display_name = EXCLUDED.display_name, description = EXCLUDED.description, category = EXCLUDED.category, " +
					"remediation = EXCLUDED.remediation, synced_unix = EXCLUDED.synced_unix").Exec(ctx)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Remediations reads the stored remediation of each of the definitions
// that has one, by id; nil ids reads every definition's, an empty non-nil
// slice none.
func (s *Store) Remediations(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if ids != nil && len(ids) == 0 {
		return out, nil
	}
	var rows []Guidance
	sel := s.DB.NewSelect().Model(&rows).Column("policy_definition_id", "remediation").Where("g.remediation <> ''")
	if ids != nil {
		sel = sel.Where("g.policy_definition_id IN (?)", bun.List(ids))
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.PolicyDefinitionID] = r.Remediation
	}
	return out, nil
}
