package states

import (
	"context"
	"fmt"
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

// FindingsQuery selects a page of findings: of the policy states, one per
// resource and policy definition, whichever assignments evaluated it;
// of other sources, as they give them.
type FindingsQuery struct {
	TenantIDs []string
	// Source keeps the findings of one source (SourcePolicy or a
	// ResourceFindings' name); empty keeps all.
	Source string
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

// ResourceFindings is a source of findings per resource beside the policy
// states, such as Defender for Cloud's assessments. Select returns, for
// the query's tenants, one row per finding with the columns
// findingRowColumns names, filtered by the query's PolicyIDs, Severity,
// State and ResourceType as the policy states' findings are: state_rank
// and severity_rank rank as findingStateRanks and severityRanks do,
// evaluated_unix is in seconds, assignments is empty or comma-separated,
// remediation is the finding's own guidance. The findings list unions,
// filters by source, sorts and pages all sources' rows together, in the
// database.
type ResourceFindings struct {
	// Name is the rows' source, e.g. defender.
	Name   string
	Select func(db bun.IDB, q FindingsQuery) *bun.SelectQuery
}

// findingRowColumns are the columns a source of findings selects, in the
// order the union takes them.
const findingRowColumns = "tenant_id, resource_id, policy_definition_id, subscription_id, resource_type, policy_name, category, " +
	"severity_rank, state_rank, evaluated_unix, assignments, assessment_id, assessment_name, remediation"

// FindingStateRank is the rank of a findings filter's state (non_compliant,
// …, compliant) as a source's state_rank column gives it, and whether
// the state is one.
func FindingStateRank(state string) (int, bool) {
	rank, ok := findingStateRanks[findingStates[state]]
	return rank, ok
}

// StoredFinding is one resource under one policy definition.
type StoredFinding struct {
	// Source is SourcePolicy or a ResourceFindings' name.
	Source             string
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
	// AssessmentID and AssessmentName identify a finding of another source
	// (a Defender assessment's id and name); empty for the policy states.
	AssessmentID, AssessmentName string
	// Remediation is how to fix the resource: a policy definition's
	// stored guidance, another source's own; empty when there is none.
	Remediation string
}

// assignmentsAgg joins the distinct assignment ids of a group with commas,
// which no ARM id holds.
func (s *Store) assignmentsAgg() string {
	if s.DB.Dialect().Name() == dialect.PG {
		return "string_agg(DISTINCT policy_assignment_id, ',')"
	}
	return "group_concat(DISTINCT policy_assignment_id)"
}

// policyFindingRows selects the policy states' findings, one row per
// tenant, resource and definition, filtered.
func (s *Store) policyFindingRows(q FindingsQuery) *bun.SelectQuery {
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
		ColumnExpr("'' AS assessment_id, '' AS assessment_name, '' AS remediation").
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

// findingsQuery selects the query's findings of the policy states and of
// extra, the sources q.Source keeps, as one union with each row's source;
// nil when it keeps none.
func (s *Store) findingsQuery(q FindingsQuery, extra []ResourceFindings) *bun.RawQuery {
	sources := append([]ResourceFindings{{Name: SourcePolicy, Select: func(bun.IDB, FindingsQuery) *bun.SelectQuery { return s.policyFindingRows(q) }}}, extra...)
	var parts []string
	var args []any
	for i, src := range sources {
		if q.Source != "" && q.Source != src.Name {
			continue
		}
		parts = append(parts, fmt.Sprintf("SELECT ? AS source, %s FROM (?) AS s%d", findingRowColumns, i))
		args = append(args, src.Name, src.Select(s.DB, q))
	}
	if len(parts) == 0 {
		return nil
	}
	return s.DB.NewRaw(strings.Join(parts, " UNION ALL "), args...)
}

// resourceFindingRow is a finding per resource as findingsQuery's union selects it.
type resourceFindingRow struct {
	Source         string `bun:"source"`
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
	AssessmentID   string `bun:"assessment_id"`
	AssessmentName string `bun:"assessment_name"`
	Remediation    string `bun:"remediation"`
}

// stored is the row as a finding; a policy state's remediation is its
// definition's stored guidance, by id in guidance.
func (r *resourceFindingRow) stored(guidance map[string]string) StoredFinding {
	assignments := []string{}
	if r.Assignments != "" {
		assignments = strings.Split(r.Assignments, ",")
		slices.Sort(assignments)
	}
	remediation := r.Remediation
	if r.Source == SourcePolicy {
		remediation = guidance[r.PolicyID]
	}
	return StoredFinding{Source: r.Source, AssessmentID: r.AssessmentID, AssessmentName: r.AssessmentName,
		Remediation: remediation, TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID,
		ResourceType: r.ResourceType, PolicyDefinitionID: r.PolicyID, PolicyName: r.PolicyName, Category: r.Category,
		Severity: severityOfRank(r.SeverityRank), ComplianceState: stateOfFindingRank(r.StateRank), Assignments: assignments,
		EvaluatedAt: time.Unix(r.EvaluatedUnix, 0).UTC()}
}

// none reports whether the query can match no finding.
func (q *FindingsQuery) none() bool {
	return len(q.TenantIDs) == 0 || (q.PolicyIDs != nil && len(q.PolicyIDs) == 0)
}

// outerFindings selects from the union of the query's findings as f,
// without those its Hide leaves out; nil when q keeps no source.
func (s *Store) outerFindings(q FindingsQuery, extra []ResourceFindings) *bun.SelectQuery {
	union := s.findingsQuery(q, extra)
	if union == nil {
		return nil
	}
	sel := s.DB.NewSelect().TableExpr("(?) AS f", union)
	if q.Hide != nil {
		sel = q.Hide(sel)
	}
	return sel
}

// sortedFindings orders the findings of outer by the query's sort key,
// then by tenant, resource, definition, source and assessment.
func sortedFindings(outer *bun.SelectQuery, q FindingsQuery) *bun.SelectQuery {
	col, ok := findingSortColumns[q.SortBy]
	if !ok {
		col = findingSortColumns["severity"]
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	return outer.ColumnExpr("*").OrderExpr(col + dir).OrderExpr("tenant_id, resource_id, policy_definition_id, source, assessment_id")
}

// Findings returns a page of the tenants' findings of the policy states
// and of extra and how many match in all, aggregated, filtered, sorted and
// paged in the database.
func (s *Store) Findings(ctx context.Context, q FindingsQuery, extra []ResourceFindings) ([]StoredFinding, int, error) {
	out := []StoredFinding{}
	if q.none() {
		return out, 0, nil
	}
	// The count and the page each need a query of their own: a column
	// added to one would go into the other.
	count := s.outerFindings(q, extra)
	if count == nil {
		return out, 0, nil
	}
	var total int
	if err := count.ColumnExpr("COUNT(*)").Scan(ctx, &total); err != nil || total == 0 {
		return out, total, err
	}
	var rows []resourceFindingRow
	if err := sortedFindings(s.outerFindings(q, extra), q).Limit(int64(q.Limit)).Offset(int64(q.Offset)).Scan(ctx, &rows); err != nil {
		return nil, 0, err
	}
	var policies []string
	for _, r := range rows {
		if r.Source == SourcePolicy {
			policies = append(policies, r.PolicyID)
		}
	}
	guidance := map[string]string{}
	if len(policies) > 0 {
		var err error
		if guidance, err = s.Remediations(ctx, policies); err != nil {
			return nil, 0, err
		}
	}
	for i := range rows {
		out = append(out, rows[i].stored(guidance))
	}
	return out, total, nil
}

// EachFinding calls fn with every finding of the query, in the order
// Findings pages them (Limit and Offset are ignored), reading them from
// one cursor one at a time: the findings are aggregated and sorted once,
// where paging through them would do so for every page. The definitions'
// guidance is read first, the query's definitions' or all of it. An error
// from fn stops the read and is returned.
func (s *Store) EachFinding(ctx context.Context, q FindingsQuery, extra []ResourceFindings, fn func(StoredFinding) error) error {
	if q.none() {
		return nil
	}
	outer := s.outerFindings(q, extra)
	if outer == nil {
		return nil
	}
	guidance, err := s.Remediations(ctx, q.PolicyIDs)
	if err != nil {
		return err
	}
	rows, err := sortedFindings(outer, q).Rows(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r resourceFindingRow
		if err := s.DB.ScanRow(ctx, rows, &r); err != nil {
			return err
		}
		if err := fn(r.stored(guidance)); err != nil {
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
