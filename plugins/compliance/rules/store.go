package rules

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/store"
)

// Store keeps rules and their violations.
type Store struct{ db *bun.DB }

// NewStore returns a Store on db, migrated with Migrations.
func NewStore(db *bun.DB) *Store { return &Store{db: db} }

// Create stores a new rule and sets its id.
func (s *Store) Create(ctx context.Context, r *Rule) error {
	_, err := s.db.NewInsert().Model(r).Returning("id").Exec(ctx)
	return err
}

// Get returns the rule if it is not deleted and belongs to one of the
// tenants, else nil.
func (s *Store) Get(ctx context.Context, id int64, tenantIDs []string) (*Rule, error) {
	if len(tenantIDs) == 0 {
		return nil, nil
	}
	var r Rule
	err := s.db.NewSelect().Model(&r).Where("id = ?", id).Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("NOT deleted").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Update writes the rule's definition and updated_at, and clears what its
// last evaluation found, which no longer describes it, in one transaction.
// A rule deleted meanwhile is left alone (false).
func (s *Store) Update(ctx context.Context, r *Rule) (bool, error) {
	r.EvaluatedAt, r.SubjectsEvaluated, r.ViolationCount = nil, 0, 0
	updated := false
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model(r).WherePK().Where("NOT deleted").
			Column("rule_name", "rule_description", "category", "resource_type", "severity", "effect", "schema", "is_active",
				"updated_at", "evaluated_at", "subjects_evaluated", "violation_count").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		updated = true
		_, err = tx.NewDelete().Model((*Violation)(nil)).Where("rule_id = ?", r.ID).Exec(ctx)
		return err
	})
	return updated && err == nil, err
}

// Delete marks the rule deleted and inactive at the time, keeping its row
// and its violations; false if it was deleted already.
func (s *Store) Delete(ctx context.Context, r *Rule, at time.Time) (bool, error) {
	res, err := s.db.NewUpdate().Model((*Rule)(nil)).
		Set("deleted = ?", true).Set("is_active = ?", false).Set("deleted_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", r.ID).Where("NOT deleted").Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err == nil && n > 0 {
		r.Deleted, r.IsActive, r.DeletedAt, r.UpdatedAt = true, false, &at, at
	}
	return n > 0, err
}

// ListQuery narrows the rule list.
type ListQuery struct {
	TenantIDs     []string
	Category      string
	Active        *bool
	Limit, Offset int
}

// List returns a page of the tenants' rules that are not deleted, oldest
// first, and how many match in all.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Rule, int, error) {
	out := []Rule{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.db.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(q.TenantIDs)).Where("NOT deleted")
	if q.Category != "" {
		sel = sel.Where("category = ?", q.Category)
	}
	if q.Active != nil {
		sel = sel.Where("is_active = ?", *q.Active)
	}
	total, err := sel.OrderExpr("id ASC").Limit(int64(q.Limit)).Offset(int64(q.Offset)).ScanAndCount(ctx)
	return out, int(total), err
}

// Active returns the tenant's rules the sync evaluates: active, not
// deleted, of effect audit.
func (s *Store) Active(ctx context.Context, tenantID string) ([]Rule, error) {
	var out []Rule
	err := s.db.NewSelect().Model(&out).Where("tenant_id = ?", tenantID).Where("NOT deleted").Where("is_active").
		Where("effect = ?", EffectAudit).OrderExpr("id ASC").Scan(ctx)
	return out, err
}

// stageRows is how many violations one multi-row INSERT into the stage
// carries: seven columns a row keeps it below both databases' limits on
// bound parameters.
const stageRows = 1000

// stageColumns are the stage's columns, in the order rows are written.
var stageColumns = []string{"rule_id", "subject", "subject_name", "instance_path", "keyword", "schema_path", "message"}

// ReplaceViolations stores what one evaluation of the tenant's rules found
// at the time: each rule's violations replace its previous ones, and the
// rule records when it was evaluated, how many subjects it saw and how
// many violations it found. The violations are first streamed into a
// temporary stage on one connection (COPY on PostgreSQL, multi-row
// inserts on SQLite) and then moved in one short transaction. A rule
// changed or deleted since it was read (its updated_at differs) is
// skipped, so an evaluation of its old definition never overwrites its
// new state.
func (s *Store) ReplaceViolations(ctx context.Context, tenantID string, results []Result, at time.Time) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := store.OpenStage(ctx, conn, "compliance_violations_stage", `rule_id BIGINT NOT NULL, subject TEXT NOT NULL,
		subject_name TEXT NOT NULL, instance_path TEXT NOT NULL, keyword TEXT NOT NULL, schema_path TEXT NOT NULL, message TEXT NOT NULL`,
		stageColumns, s.db.Dialect().Name() == dialect.PG, stageRows)
	if err != nil {
		return fmt.Errorf("rules: stage: %w", err)
	}
	defer st.Drop()
	for _, res := range results {
		vs, id := res.Violations, res.Rule.ID
		err := st.Write(ctx, len(vs), func(i int) []any {
			v := &vs[i]
			return []any{id, v.Subject, v.SubjectName, v.InstancePath, v.Keyword, v.SchemaPath, v.Message}
		})
		if err != nil {
			return fmt.Errorf("rules: stage: %w", err)
		}
	}
	return conn.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		var evaluated []int64
		for _, res := range results {
			r := res.Rule
			upd, err := tx.NewUpdate().Model((*Rule)(nil)).
				Set("evaluated_at = ?", at).Set("subjects_evaluated = ?", res.SubjectsEvaluated).Set("violation_count = ?", len(res.Violations)).
				Where("id = ?", r.ID).Where("tenant_id = ?", tenantID).Where("updated_at = ?", r.UpdatedAt).Where("NOT deleted").Exec(ctx)
			if err != nil {
				return err
			}
			if n, err := upd.RowsAffected(); err != nil || n == 0 {
				if err != nil {
					return err
				}
				continue
			}
			r.EvaluatedAt, r.SubjectsEvaluated, r.ViolationCount = &at, res.SubjectsEvaluated, len(res.Violations)
			evaluated = append(evaluated, r.ID)
		}
		if len(evaluated) == 0 {
			return nil
		}
		ids := bun.List(evaluated)
		if _, err := tx.NewDelete().Model((*Violation)(nil)).Where("rule_id IN (?)", ids).Where("tenant_id = ?", tenantID).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO compliance_rule_violations
			(rule_id, tenant_id, subject, subject_name, instance_path, keyword, schema_path, message, evaluated_at)
			SELECT rule_id, ?, subject, subject_name, instance_path, keyword, schema_path, message, ? FROM compliance_violations_stage
			WHERE rule_id IN (?)`, tenantID, at, ids)
		return err
	})
}

// RuleFindings is a rule with what its last stored evaluation found, for
// the compliance summary and non-compliant views.
type RuleFindings struct {
	Rule
	// NonCompliantSubjects is how many distinct subjects have violations.
	NonCompliantSubjects int `bun:"non_compliant_subjects"`
}

// Findings returns the tenants' evaluated rules that count, active and of
// effect audit and not deleted, each with how many subjects violate it;
// rules in id order.
func (s *Store) Findings(ctx context.Context, tenantIDs []string) ([]RuleFindings, error) {
	out := []RuleFindings{}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	subjects := s.db.NewSelect().Model((*Violation)(nil)).ColumnExpr("COUNT(DISTINCT v.subject)").Where("v.rule_id = r.id")
	err := s.db.NewSelect().Model((*Rule)(nil)).ColumnExpr("r.*").ColumnExpr("(?) AS non_compliant_subjects", subjects).
		Where("r.tenant_id IN (?)", bun.List(tenantIDs)).Where("NOT r.deleted").Where("r.is_active").
		Where("r.effect = ?", EffectAudit).Where("r.evaluated_at IS NOT NULL").OrderExpr("r.id ASC").Scan(ctx, &out)
	return out, err
}

// Violations returns the stored violations of the tenants' counting rules
// (active, of effect audit, not deleted), of one rule when ruleID is not
// 0, by rule, subject and instance path.
func (s *Store) Violations(ctx context.Context, tenantIDs []string, ruleID int64) ([]Violation, error) {
	out := []Violation{}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	sel := s.db.NewSelect().Model(&out).
		Join("JOIN compliance_rules AS r ON r.id = v.rule_id").
		Where("v.tenant_id IN (?)", bun.List(tenantIDs)).Where("NOT r.deleted").Where("r.is_active").Where("r.effect = ?", EffectAudit)
	if ruleID != 0 {
		sel = sel.Where("v.rule_id = ?", ruleID)
	}
	err := sel.OrderExpr("v.rule_id ASC, v.subject ASC, v.instance_path ASC, v.id ASC").Scan(ctx)
	return out, err
}

// FindingRows selects the tenants' violated rules that count (active, of
// effect audit, not deleted) as the compliance reads take in findings
// beside the cloud's policies, one row per rule: finding_id (the rule's
// id as text), name, category, severity_rank (1 for Low, 2 for Medium, 3
// for High and Critical), non_compliant_count (subjects with violations),
// compliant_count (the other subjects evaluated), tenant_count (1: a rule
// is one tenant's), group_names ("[]") and last_evaluated_unix (the
// evaluation's time in seconds).
func FindingRows(db bun.IDB, tenantIDs []string) *bun.SelectQuery {
	subjects := db.NewSelect().Table("compliance_rule_violations").ColumnExpr("rule_id, COUNT(DISTINCT subject) AS subjects").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Group("rule_id")
	evaluated := "CAST(strftime('%s', r.evaluated_at) AS INTEGER)"
	if db.Dialect().Name() == dialect.PG {
		evaluated = "CAST(EXTRACT(EPOCH FROM r.evaluated_at) AS BIGINT)"
	}
	return db.NewSelect().TableExpr("compliance_rules AS r").Join("JOIN (?) AS v ON v.rule_id = r.id", subjects).
		ColumnExpr("CAST(r.id AS TEXT) AS finding_id, r.rule_name AS name, r.category").
		ColumnExpr("CASE r.severity WHEN 'Critical' THEN 3 WHEN 'High' THEN 3 WHEN 'Low' THEN 1 ELSE 2 END AS severity_rank").
		ColumnExpr("v.subjects AS non_compliant_count, r.subjects_evaluated - v.subjects AS compliant_count, 1 AS tenant_count").
		ColumnExpr("'[]' AS group_names, "+evaluated+" AS last_evaluated_unix").
		Where("r.tenant_id IN (?)", bun.List(tenantIDs)).Where("NOT r.deleted").Where("r.is_active").Where("r.effect = ?", EffectAudit)
}
