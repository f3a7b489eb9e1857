package defender

import (
	"context"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// Store keeps the assessments and secure scores.
type Store struct {
	DB *bun.DB
}

// revisions is the table of the tenants' revisions of their assessments.
const revisions = "compliance_defender_revisions"

// Assessment is one stored assessment of a resource.
type Assessment struct {
	bun.BaseModel      `bun:"table:compliance_defender_assessments,alias:a"`
	TenantID           string    `bun:"tenant_id"`
	SubscriptionID     string    `bun:"subscription_id"`
	AssessmentID       string    `bun:"assessment_id"`
	AssessmentName     string    `bun:"assessment_name"`
	ResourceID         string    `bun:"resource_id"`
	ResourceType       string    `bun:"resource_type"`
	DisplayName        string    `bun:"display_name"`
	Status             string    `bun:"status"`
	Severity           string    `bun:"severity"`
	SeverityRank       int       `bun:"severity_rank"`
	PolicyDefinitionID string    `bun:"policy_definition_id"`
	Remediation        string    `bun:"remediation"`
	Category           string    `bun:"category"`
	SyncedAt           time.Time `bun:"synced_at"`
}

// Score is a subscription's stored secure score.
type Score struct {
	bun.BaseModel  `bun:"table:compliance_defender_scores,alias:s"`
	SubscriptionID string    `bun:"subscription_id,pk"`
	TenantID       string    `bun:"tenant_id"`
	Current        float64   `bun:"current_score"`
	Max            int64     `bun:"max_score"`
	Percentage     float64   `bun:"percentage"`
	SyncedAt       time.Time `bun:"synced_at"`
}

// Control is a subscription's stored score of one security control.
type Control struct {
	bun.BaseModel          `bun:"table:compliance_defender_controls,alias:c"`
	TenantID               string    `bun:"tenant_id"`
	SubscriptionID         string    `bun:"subscription_id,pk"`
	Name                   string    `bun:"control_name,pk"`
	DisplayName            string    `bun:"display_name"`
	Current                float64   `bun:"current_score"`
	Max                    int64     `bun:"max_score"`
	HealthyResources       int64     `bun:"healthy_resources"`
	UnhealthyResources     int64     `bun:"unhealthy_resources"`
	NotApplicableResources int64     `bun:"not_applicable_resources"`
	SyncedAt               time.Time `bun:"synced_at"`
}

// Snapshot is what one sync read of a subscription.
type Snapshot struct {
	TenantID       string
	SubscriptionID string
	SyncedAt       time.Time
	Assessments    []Assessment
	Score          Score
	Controls       []Control
}

// insertRows is how many rows one multi-row INSERT carries.
const insertRows = 500

// Replace replaces, in one transaction, the subscription's stored
// assessments, secure score and controls with the snapshot's, and raises
// its tenant's revision. Replacing with the same snapshot again leaves
// the same rows.
func (s *Store) Replace(ctx context.Context, snap Snapshot) error {
	at := snap.SyncedAt.UTC()
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, table := range []string{"compliance_defender_assessments", "compliance_defender_scores", "compliance_defender_controls"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE subscription_id = ?`, snap.SubscriptionID); err != nil {
				return err
			}
		}
		rows := make([]Assessment, len(snap.Assessments))
		for i, a := range snap.Assessments {
			a.TenantID, a.SubscriptionID, a.SyncedAt = snap.TenantID, snap.SubscriptionID, at
			a.Status = normalize(a.Status, StatusHealthy, StatusUnhealthy, StatusNotApplicable)
			a.Severity = normalize(a.Severity, "High", "Medium", "Low")
			a.SeverityRank = severityRanks[a.Severity]
			a.ResourceType = resourceTypeOf(a.ResourceID)
			rows[i] = a
		}
		for start := 0; start < len(rows); start += insertRows {
			batch := rows[start:min(start+insertRows, len(rows))]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
		}
		score := snap.Score
		score.TenantID, score.SubscriptionID, score.SyncedAt = snap.TenantID, snap.SubscriptionID, at
		if _, err := tx.NewInsert().Model(&score).Exec(ctx); err != nil {
			return err
		}
		if len(snap.Controls) > 0 {
			controls := make([]Control, len(snap.Controls))
			for i, c := range snap.Controls {
				c.TenantID, c.SubscriptionID, c.SyncedAt = snap.TenantID, snap.SubscriptionID, at
				controls[i] = c
			}
			if _, err := tx.NewInsert().Model(&controls).Exec(ctx); err != nil {
				return err
			}
		}
		return revcache.Bump(ctx, tx, revisions, snap.TenantID)
	})
}

// Revision identifies the state of the tenants' stored assessments: it
// changes whenever a sync replaces any of them.
func (s *Store) Revision(ctx context.Context, tenants []string) (string, error) {
	return revcache.Read(ctx, s.DB, revisions, tenants)
}

// AssessmentQuery selects and pages the assessments list.
type AssessmentQuery struct {
	TenantIDs []string
	// Status, Severity and ResourceType filter when set; ResourceType
	// compares in lower case.
	Status       string
	Severity     string
	ResourceType string
	Limit        int
	Offset       int
}

// Assessments returns a page of the tenants' assessments that pass the
// query, by severity (High first), then by status (Unhealthy first),
// display name, resource id and assessment id, with how many pass in
// all.
func (s *Store) Assessments(ctx context.Context, q AssessmentQuery) ([]Assessment, int, error) {
	out := []Assessment{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.DB.NewSelect().Model(&out).Where("a.tenant_id IN (?)", bun.List(q.TenantIDs))
	if q.Status != "" {
		sel = sel.Where("a.status = ?", q.Status)
	}
	if q.Severity != "" {
		sel = sel.Where("a.severity = ?", q.Severity)
	}
	if q.ResourceType != "" {
		sel = sel.Where("a.resource_type = ?", q.ResourceType)
	}
	total, err := sel.
		OrderExpr("a.severity_rank DESC").
		OrderExpr("CASE a.status WHEN 'Unhealthy' THEN 0 WHEN 'Healthy' THEN 1 ELSE 2 END").
		OrderExpr("a.display_name, a.resource_id, a.assessment_id").
		Limit(int64(q.Limit)).Offset(int64(q.Offset)).ScanAndCount(ctx)
	return out, int(total), err
}

// Scores returns the tenants' stored secure scores by subscription and
// their controls, ordered by subscription and control name.
func (s *Store) Scores(ctx context.Context, tenants []string) ([]Score, []Control, error) {
	scores, controls := []Score{}, []Control{}
	if len(tenants) == 0 {
		return scores, controls, nil
	}
	if err := s.DB.NewSelect().Model(&scores).Where("s.tenant_id IN (?)", bun.List(tenants)).Order("s.subscription_id").Scan(ctx); err != nil {
		return nil, nil, err
	}
	if err := s.DB.NewSelect().Model(&controls).Where("c.tenant_id IN (?)", bun.List(tenants)).
		Order("c.subscription_id", "c.control_name").Scan(ctx); err != nil {
		return nil, nil, err
	}
	return scores, controls, nil
}

// Finding is an assessment as a finding of source defender, the shape the
// mapping and the findings of other sources share.
type Finding struct {
	TenantID           string `json:"tenant_id"`
	ResourceID         string `json:"resource_id"`
	ResourceType       string `json:"resource_type"`
	PolicyDefinitionID string `json:"policy_definition_id"`
	// State is compliant, non_compliant or not_applicable.
	State string `json:"state"`
	// Severity is High, Medium, Low or empty.
	Severity string `json:"severity"`
	// Source is always defender.
	Source string `json:"source"`
}

// Findings returns the tenants' assessments as findings, ordered by
// tenant, resource and policy definition.
func (s *Store) Findings(ctx context.Context, tenants []string) ([]Finding, error) {
	out := []Finding{}
	if len(tenants) == 0 {
		return out, nil
	}
	var rows []Assessment
	if err := s.DB.NewSelect().Model(&rows).Column("tenant_id", "resource_id", "resource_type", "policy_definition_id", "status", "severity").
		Where("a.tenant_id IN (?)", bun.List(tenants)).Order("a.tenant_id", "a.resource_id", "a.policy_definition_id", "a.assessment_id").
		Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, Finding{TenantID: r.TenantID, ResourceID: r.ResourceID, ResourceType: r.ResourceType,
			PolicyDefinitionID: r.PolicyDefinitionID, State: stateOf(r.Status), Severity: r.Severity, Source: Source})
	}
	return out, nil
}

// Definitions returns the policy definitions the tenants' assessments are
// built on, ordered by id, each with the recommendation's display name
// and its distinct resources Healthy (compliant) and Unhealthy
// (non-compliant), for the framework coverage to count beside the policy
// states. Assessments of no policy definition are left out.
func (s *Store) Definitions(ctx context.Context, tenants []string) ([]states.DefinitionCount, error) {
	out := []states.DefinitionCount{}
	if len(tenants) == 0 {
		return out, nil
	}
	var rows []struct {
		ID           string `bun:"policy_definition_id"`
		Name         string `bun:"name"`
		Compliant    int64  `bun:"compliant"`
		NonCompliant int64  `bun:"non_compliant"`
	}
	err := s.DB.NewRaw(`SELECT policy_definition_id, MIN(display_name) AS name,
			COUNT(DISTINCT CASE WHEN status = 'Healthy' THEN tenant_id || ' ' || resource_id END) AS compliant,
			COUNT(DISTINCT CASE WHEN status = 'Unhealthy' THEN tenant_id || ' ' || resource_id END) AS non_compliant
		FROM compliance_defender_assessments
		WHERE tenant_id IN (?) AND policy_definition_id <> ''
		GROUP BY policy_definition_id ORDER BY policy_definition_id`, bun.List(tenants)).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, states.DefinitionCount{PolicyDefinitionID: r.ID, PolicyName: r.Name, GroupNames: []string{},
			Compliant: r.Compliant, NonCompliant: r.NonCompliant})
	}
	return out, nil
}

// CoverageSource is the assessments as a source of the framework
// coverage: their policy definitions (Definitions) under their revision,
// and their rows of the findings list (FindingRows).
func (s *Store) CoverageSource() coverage.Source {
	return coverage.Source{Name: Source, Revision: s.Revision, Definitions: s.Definitions, Resources: s.DefinitionResources,
		Findings: &states.ResourceFindings{Name: Source, Select: FindingRows}}
}

// FindingRows selects the query's tenants' assessments as rows of the
// findings list (states.ResourceFindings): each assessment one finding
// under the policy definition it is built on, Unhealthy as NonCompliant
// and Healthy as Compliant; NotApplicable ones are no finding and left
// out. The evaluation time is the sync's, the remediation the
// assessment's.
func FindingRows(db bun.IDB, q states.FindingsQuery) *bun.SelectQuery {
	nonCompliant, _ := states.FindingStateRank(StateNonCompliant)
	compliant, _ := states.FindingStateRank(StateCompliant)
	evaluated := "CAST(strftime('%s', synced_at) AS INTEGER)"
	if db.Dialect().Name() == dialect.PG {
		evaluated = "CAST(EXTRACT(EPOCH FROM synced_at) AS BIGINT)"
	}
	sel := db.NewSelect().Table("compliance_defender_assessments").
		Column("tenant_id", "resource_id", "policy_definition_id", "subscription_id", "resource_type").
		ColumnExpr("display_name AS policy_name").
		Column("category", "severity_rank").
		ColumnExpr("CASE status WHEN ? THEN ? ELSE ? END AS state_rank", StatusUnhealthy, nonCompliant, compliant).
		ColumnExpr(evaluated+" AS evaluated_unix").
		ColumnExpr("'' AS assignments").
		Column("assessment_id", "assessment_name", "remediation").
		Where("tenant_id IN (?)", bun.List(q.TenantIDs))
	switch q.State {
	case "":
		sel = sel.Where("status IN (?)", bun.List([]string{StatusHealthy, StatusUnhealthy}))
	case StateNonCompliant:
		sel = sel.Where("status = ?", StatusUnhealthy)
	case StateCompliant:
		sel = sel.Where("status = ?", StatusHealthy)
	default:
		// No assessment is in a policy state's other states.
		sel = sel.Where("1 = 0")
	}
	if q.PolicyIDs != nil {
		sel = sel.Where("policy_definition_id IN (?)", bun.List(q.PolicyIDs))
	}
	if rank, ok := severityRanks[q.Severity]; ok {
		sel = sel.Where("severity_rank = ?", rank)
	}
	if q.ResourceType != "" {
		sel = sel.Where("resource_type = ?", strings.ToLower(q.ResourceType))
	}
	return sel
}

// DefinitionResources returns the evidence of each resource of the tenants
// under each policy definition their assessments are built on: compliant
// for a Healthy assessment, non-compliant for an Unhealthy one, both bits
// when assessments of the definition disagree on the resource.
// NotApplicable assessments and those of no definition give none.
func (s *Store) DefinitionResources(ctx context.Context, tenants []string) ([]states.DefinitionResource, error) {
	out := []states.DefinitionResource{}
	if len(tenants) == 0 {
		return out, nil
	}
	var rows []Assessment
	if err := s.DB.NewSelect().Model(&rows).Column("policy_definition_id", "resource_id", "status").
		Where("a.tenant_id IN (?)", bun.List(tenants)).Where("a.policy_definition_id <> ''").
		Where("a.status IN (?)", bun.List([]string{StatusHealthy, StatusUnhealthy})).
		Order("a.policy_definition_id", "a.resource_id").Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		bit := uint8(states.EvidenceCompliant)
		if r.Status == StatusUnhealthy {
			bit = states.EvidenceNonCompliant
		}
		if n := len(out); n > 0 && out[n-1].PolicyDefinitionID == r.PolicyDefinitionID && out[n-1].ResourceID == r.ResourceID {
			out[n-1].Evidence |= bit
			continue
		}
		out = append(out, states.DefinitionResource{PolicyDefinitionID: r.PolicyDefinitionID, ResourceID: r.ResourceID, Evidence: bit})
	}
	return out, nil
}
