package states

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// A finding's state is the worst of its assignments' states, in this order
// from worst: NonCompliant, Conflict, Unknown, Exempt, Compliant.
var findingStateRanks = map[string]int{StateNonCompliant: 5, StateConflict: 4, StateUnknown: 3, StateExempt: 2, StateCompliant: 1}

// findingStateExpr ranks a state by findingStateRanks; a state outside
// them ranks as Unknown.
const findingStateExpr = "CASE compliance_state WHEN 'NonCompliant' THEN 5 WHEN 'Conflict' THEN 4 WHEN 'Exempt' THEN 2 WHEN 'Compliant' THEN 1 ELSE 3 END"

// findingStates are the states a finding can have, by the findings
// filter's names.
var findingStates = map[string]string{"non_compliant": StateNonCompliant, "conflict": StateConflict, "unknown": StateUnknown,
	"exempt": StateExempt, "compliant": StateCompliant}

// findingSortColumns are the findings' sort keys and their columns.
var findingSortColumns = map[string]string{"severity": "severity_rank", "state": "state_rank", "resource": "resource_id", "evaluated": "evaluated_unix"}

// FindingsQuery selects a page of findings: one per resource and policy
// definition, whichever assignments evaluated it.
type FindingsQuery struct {
	TenantIDs []string
	// PolicyIDs keeps findings of these definitions; nil keeps all, an
	// empty non-nil slice none.
	PolicyIDs []string
	// Severity (High, Medium, Low), State (as findingStates gives it) and
	// ResourceType keep findings with that value; empty keeps all.
	Severity, State, ResourceType string
	// SortBy is a key of findingSortColumns; ties are ordered by tenant,
	// resource and definition.
	SortBy        string
	Desc          bool
	Limit, Offset int
	// Hide, when set, adds conditions to the query over the findings,
	// alias f (tenant_id, resource_id, policy_definition_id), that leave
	// findings out of the page and the total alike.
	Hide func(*bun.SelectQuery) *bun.SelectQuery
}

// StoredFinding is one resource under one policy definition.
type StoredFinding struct {
	TenantID           string
	SubscriptionID     string
	ResourceID         string
	ResourceType       string
	PolicyDefinitionID string
	PolicyName         string
	Category           string
	Severity           string
	// ComplianceState is the worst of the assignments' states.
	ComplianceState string
	// Assignments are the assignments that evaluated the resource under
	// the definition, sorted.
	Assignments []string
	EvaluatedAt time.Time
}

// assignmentsAgg joins the distinct assignment ids of a group with commas,
// which no ARM id holds.
func (s *Store) assignmentsAgg() string {
	if s.DB.Dialect().Name() == dialect.PG {
		return "string_agg(DISTINCT policy_assignment_id, ',')"
	}
	return "group_concat(DISTINCT policy_assignment_id)"
}

// findingsQuery selects the query's findings, one row per tenant, resource and
// definition, filtered.
func (s *Store) findingsQuery(q FindingsQuery) *bun.SelectQuery {
	sel := s.DB.NewSelect().Table("compliance_policy_states").
		Column("tenant_id", "resource_id", "policy_definition_id").
		ColumnExpr("MAX(subscription_id) AS subscription_id").
		ColumnExpr("MAX(resource_type) AS resource_type").
		ColumnExpr("MAX(policy_name) AS policy_name").
		ColumnExpr("MAX(category) AS category").
		ColumnExpr("MAX(severity_rank) AS severity_rank").
		ColumnExpr("MAX("+findingStateExpr+") AS state_rank").
		ColumnExpr("MAX(evaluated_unix) AS evaluated_unix").
		ColumnExpr(s.assignmentsAgg()+" AS assignments").
		Where("tenant_id IN (?)", bun.List(q.TenantIDs)).
		Group("tenant_id", "resource_id", "policy_definition_id")
	if q.PolicyIDs != nil {
		sel = sel.Where("policy_definition_id IN (?)", bun.List(q.PolicyIDs))
	}
	if q.ResourceType != "" {
		sel = sel.Where("LOWER(resource_type) = ?", strings.ToLower(q.ResourceType))
	}
	if rank, ok := severityRanks[q.Severity]; ok {
		sel = sel.Having("MAX(severity_rank) = ?", rank)
	}
	if rank, ok := findingStateRanks[findingStates[q.State]]; ok {
		sel = sel.Having("MAX("+findingStateExpr+") = ?", rank)
	}
	return sel
}

// policyFindingRow is a finding as findingsQuery selects it.
type policyFindingRow struct {
	TenantID       string `bun:"tenant_id"`
	ResourceID     string `bun:"resource_id"`
	PolicyID       string `bun:"policy_definition_id"`
	SubscriptionID string `bun:"subscription_id"`
	ResourceType   string `bun:"resource_type"`
	PolicyName     string `bun:"policy_name"`
	Category       string `bun:"category"`
	SeverityRank   int    `bun:"severity_rank"`
	StateRank      int    `bun:"state_rank"`
	EvaluatedUnix  int64  `bun:"evaluated_unix"`
	Assignments    string `bun:"assignments"`
}

func (r *policyFindingRow) stored() StoredFinding {
	assignments := strings.Split(r.Assignments, ",")
	slices.Sort(assignments)
	return StoredFinding{TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID,
		ResourceType: r.ResourceType, PolicyDefinitionID: r.PolicyID, PolicyName: r.PolicyName, Category: r.Category,
		Severity: severityOfRank(r.SeverityRank), ComplianceState: stateOfFindingRank(r.StateRank), Assignments: assignments,
		EvaluatedAt: time.Unix(r.EvaluatedUnix, 0).UTC()}
}

// none reports whether the query can match no finding.
func (q *FindingsQuery) none() bool {
	return len(q.TenantIDs) == 0 || (q.PolicyIDs != nil && len(q.PolicyIDs) == 0)
}

// sortedFindings selects the query's findings in its order: by its sort
// key, then by tenant, resource and definition.
func (s *Store) sortedFindings(q FindingsQuery) *bun.SelectQuery {
	col, ok := findingSortColumns[q.SortBy]
	if !ok {
		col = findingSortColumns["severity"]
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	return s.outerFindings(q).ColumnExpr("*").
		OrderExpr(col + dir).OrderExpr("tenant_id, resource_id, policy_definition_id")
}

// outerFindings selects from the query's findings as f, without those its
// Hide leaves out.
func (s *Store) outerFindings(q FindingsQuery) *bun.SelectQuery {
	sel := s.DB.NewSelect().TableExpr("(?) AS f", s.findingsQuery(q))
	if q.Hide != nil {
		sel = q.Hide(sel)
	}
	return sel
}

// Findings returns a page of the tenants' findings and how many match in
// all, aggregated, filtered, sorted and paged in the database.
func (s *Store) Findings(ctx context.Context, q FindingsQuery) ([]StoredFinding, int, error) {
	out := []StoredFinding{}
	if q.none() {
		return out, 0, nil
	}
	var total int
	if err := s.outerFindings(q).ColumnExpr("COUNT(*)").Scan(ctx, &total); err != nil || total == 0 {
		return out, total, err
	}
	var rows []policyFindingRow
	if err := s.sortedFindings(q).Limit(int64(q.Limit)).Offset(int64(q.Offset)).Scan(ctx, &rows); err != nil {
		return nil, 0, err
	}
	for i := range rows {
		out = append(out, rows[i].stored())
	}
	return out, total, nil
}

// EachFinding calls fn with every finding of the query, in the order
// Findings pages them (Limit and Offset are ignored), reading them from
// one cursor one at a time: the findings are aggregated and sorted once,
// where paging through them would do so for every page. An error from fn
// stops the read and is returned.
func (s *Store) EachFinding(ctx context.Context, q FindingsQuery, fn func(StoredFinding) error) error {
	if q.none() {
		return nil
	}
	rows, err := s.sortedFindings(q).Rows(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r policyFindingRow
		if err := s.DB.ScanRow(ctx, rows, &r); err != nil {
			return err
		}
		if err := fn(r.stored()); err != nil {
			return err
		}
	}
	return rows.Err()
}

func stateOfFindingRank(rank int) string {
	for state, r := range findingStateRanks {
		if r == rank {
			return state
		}
	}
	return StateUnknown
}
