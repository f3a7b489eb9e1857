package states

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
)

// Finding sources: the source field of a non-compliant record.
const (
	SourcePolicy     = "policy"
	SourceCustomRule = "custom_rule"
)

// FindingSource is a kind of finding the summary and the non-compliant
// list take in beside the cloud's policies — the custom rules' violations.
// Select returns, for the tenants, one row per finding with the columns
// findingColumns names (finding_id and name as text, category, severity_rank
// 1 to 3, non_compliant_count, compliant_count and tenant_count as
// integers, group_names a JSON array as text, last_evaluated_unix seconds),
// and only findings that are non-compliant; the list's filters, sorting
// and paging apply to all sources' rows together, in the database.
type FindingSource struct {
	// Name is the rows' source, e.g. SourceCustomRule.
	Name   string
	Select func(db bun.IDB, tenants []string) *bun.SelectQuery
}

// findingColumns are the columns a FindingSource selects, in the order
// the union takes them.
const findingColumns = "finding_id, name, category, severity_rank, non_compliant_count, compliant_count, tenant_count, group_names, last_evaluated_unix"

// policyFindings selects the tenants' non-compliant policies, one row per
// policy definition over the tenants.
func policyFindings(db bun.IDB, tenants []string) *bun.SelectQuery {
	return db.NewSelect().Table("compliance_policy_states").
		ColumnExpr("policy_definition_id AS finding_id").
		ColumnExpr("MAX(policy_name) AS name").
		ColumnExpr("MAX(category) AS category").
		ColumnExpr("MAX(severity_rank) AS severity_rank").
		ColumnExpr("COUNT(DISTINCT CASE WHEN state_rank = 2 THEN resource_id END) AS non_compliant_count").
		ColumnExpr("COUNT(DISTINCT CASE WHEN state_rank = 1 THEN resource_id END) AS compliant_count").
		ColumnExpr("COUNT(DISTINCT CASE WHEN state_rank = 2 THEN tenant_id END) AS tenant_count").
		ColumnExpr("MAX(group_names) AS group_names").
		ColumnExpr("MAX(evaluated_unix) AS last_evaluated_unix").
		Where("tenant_id IN (?)", bun.List(tenants)).
		Group("policy_definition_id").
		Having("MAX(state_rank) = 2")
}

// findings is the union of the sources' findings of the tenants, each row
// with its source first.
func (s *Store) findings(tenants []string, sources []FindingSource) (string, []any) {
	parts := make([]string, len(sources))
	args := make([]any, 0, 2*len(sources))
	for i, src := range sources {
		parts[i] = fmt.Sprintf("SELECT ? AS source, %s FROM (?) AS s%d", findingColumns, i)
		args = append(args, src.Name, src.Select(s.DB, tenants))
	}
	return strings.Join(parts, " UNION ALL "), args
}

// withPolicies is the sources of the non-compliant list: the cloud's
// policies, then extra.
func withPolicies(extra []FindingSource) []FindingSource {
	return append([]FindingSource{{Name: SourcePolicy, Select: policyFindings}}, extra...)
}

// findingRow is a row of findings.
type findingRow struct {
	Source            string `bun:"source"`
	FindingID         string `bun:"finding_id"`
	Name              string `bun:"name"`
	Category          string `bun:"category"`
	SeverityRank      int    `bun:"severity_rank"`
	NonCompliantCount int64  `bun:"non_compliant_count"`
	CompliantCount    int64  `bun:"compliant_count"`
	TenantCount       int64  `bun:"tenant_count"`
	GroupNames        string `bun:"group_names"`
	LastEvaluatedUnix int64  `bun:"last_evaluated_unix"`
}

// sortColumns maps each sort key, a value of the non-compliant list's
// sort_by, to its column of findings.
var sortColumns = map[string]string{
	"non_compliant_count": "non_compliant_count",
	"policy_name":         "name",
	"severity":            "severity_rank",
	"category":            "category",
	"tenant_count":        "tenant_count",
	"last_evaluated_at":   "last_evaluated_unix",
}

// NonCompliantQuery selects a page of the non-compliant list.
type NonCompliantQuery struct {
	TenantIDs []string
	// Severity keeps findings of that severity; empty keeps all.
	Severity string
	// SortBy is a key of sortColumns; ties are ordered by source and id.
	SortBy        string
	Desc          bool
	Limit, Offset int
}

// NonCompliant returns a page of the tenants' non-compliant findings and
// how many there are in all, aggregated, filtered, sorted and paged in the
// database.
func (s *Store) NonCompliant(ctx context.Context, q NonCompliantQuery, extra []FindingSource) ([]PolicyStatus, int, error) {
	out := []PolicyStatus{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	union, args := s.findings(q.TenantIDs, withPolicies(extra))
	where := ""
	if rank, ok := severityRanks[q.Severity]; ok {
		where = " WHERE severity_rank = ?"
		args = append(args, rank)
	}
	var total int
	if err := s.DB.NewRaw("SELECT COUNT(*) FROM ("+union+") AS f"+where, args...).Scan(ctx, &total); err != nil {
		return nil, 0, err
	}
	col, ok := sortColumns[q.SortBy]
	if !ok {
		col = sortColumns["non_compliant_count"]
	}
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	var rows []findingRow
	err := s.DB.NewRaw("SELECT * FROM ("+union+") AS f"+where+" ORDER BY "+col+" "+dir+", source, finding_id LIMIT ? OFFSET ?",
		append(args, q.Limit, q.Offset)...).Scan(ctx, &rows)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range rows {
		out = append(out, r.status())
	}
	return out, total, nil
}

// PolicyStatus is a non-compliant record: one policy (or custom rule) over
// the tenants asked for.
type PolicyStatus struct {
	Source string `json:"source" enum:"policy,custom_rule" doc:"policy for a cloud policy definition; custom_rule for a tenant's custom compliance rule"`
	ID     string `json:"id" doc:"The policy definition id (source policy) or the custom rule's id (source custom_rule)"`
	// PolicyName is the definition's display name.
	PolicyName        string     `json:"policy_name"`
	Category          string     `json:"category"`
	Severity          string     `json:"severity" enum:"High,Medium,Low"`
	ComplianceState   string     `json:"compliance_state" enum:"NonCompliant"`
	NonCompliantCount int64      `json:"non_compliant_count" doc:"Distinct resources in a NonCompliant state under it"`
	CompliantCount    int64      `json:"compliant_count" doc:"Distinct resources compliant (or exempt) under it"`
	TenantCount       int64      `json:"tenant_count" doc:"Tenants with a non-compliant resource under it"`
	GroupNames        []string   `json:"group_names" doc:"The initiative groups (e.g. regulatory controls) the policy belongs to"`
	LastEvaluatedAt   *time.Time `json:"last_evaluated_at" doc:"The latest evaluation among its states"`
}

func (r findingRow) status() PolicyStatus {
	groups := []string{}
	_ = json.Unmarshal([]byte(r.GroupNames), &groups)
	if groups == nil {
		groups = []string{}
	}
	p := PolicyStatus{Source: r.Source, ID: r.FindingID, PolicyName: r.Name, Category: r.Category, Severity: severityOfRank(r.SeverityRank),
		ComplianceState: StateNonCompliant, NonCompliantCount: r.NonCompliantCount, CompliantCount: r.CompliantCount,
		TenantCount: r.TenantCount, GroupNames: groups}
	if r.LastEvaluatedUnix > 0 {
		t := time.Unix(r.LastEvaluatedUnix, 0).UTC()
		p.LastEvaluatedAt = &t
	}
	return p
}

// SeverityCounts counts non-compliant findings by severity.
type SeverityCounts struct {
	High   int64 `json:"High"`
	Medium int64 `json:"Medium"`
	Low    int64 `json:"Low"`
}

// SourceSummary is one source's non-compliant findings.
type SourceSummary struct {
	Source            string `json:"source" enum:"policy,custom_rule"`
	Findings          int64  `json:"findings" doc:"Non-compliant policies (or custom rules)"`
	NonCompliantCount int64  `json:"non_compliant_count" doc:"Their non-compliant resources, summed over the findings"`
}

// Summary is the compliance summary across tenants.
type Summary struct {
	TenantCount              int      `json:"tenant_count" doc:"Tenants summarised: those asked for, else every tenant of the caller"`
	TenantsWithData          int      `json:"tenants_with_data" doc:"Tenants with policy states stored"`
	OverallCompliancePercent *float64 `json:"overall_compliance_percent" doc:"compliant_resources of compliant plus non-compliant resources, percent to two decimals; null without either"`
	CompliantResources       int64    `json:"compliant_resources"`
	NonCompliantResources    int64    `json:"non_compliant_resources"`
	TotalResources           int64    `json:"total_resources" doc:"Every resource with a policy state, including those only Unknown or in Conflict"`
	CompliantPolicies        int64    `json:"compliant_policies"`
	NonCompliantPolicies     int64    `json:"non_compliant_policies" doc:"Policy definitions non-compliant in any of the tenants"`
	TotalPolicies            int64    `json:"total_policies" doc:"Distinct policy definitions over the tenants"`
	PolicyStates             int64    `json:"policy_states"`
	// NonCompliantBySeverity counts the findings of every source.
	NonCompliantBySeverity SeverityCounts  `json:"non_compliant_by_severity" doc:"Non-compliant findings of every source by severity"`
	Sources                []SourceSummary `json:"sources" doc:"Non-compliant findings by source: cloud policies, and custom rules"`
	LastSyncedAt           *time.Time      `json:"last_synced_at" doc:"The latest successful sync of any of the tenants; null when none synced"`
}

// Summary builds the summary of the tenants from their stored states, in
// the database. The policy states' part of it is kept under the tenants'
// revision (see policySummary); the extra sources' findings are counted on
// every call.
func (s *Store) Summary(ctx context.Context, tenants []string, extra []FindingSource) (Summary, error) {
	out := Summary{TenantCount: len(tenants), Sources: []SourceSummary{}}
	for _, src := range withPolicies(extra) {
		out.Sources = append(out.Sources, SourceSummary{Source: src.Name})
	}
	if len(tenants) == 0 {
		return out, nil
	}
	part, err := s.policySummary(ctx, tenants)
	if err != nil {
		return out, err
	}
	out.CompliantResources, out.NonCompliantResources, out.TotalResources = part.resources.Compliant, part.resources.NonCompliant, part.resources.Total
	out.OverallCompliancePercent = Percent(part.resources.Compliant, part.resources.NonCompliant)
	out.CompliantPolicies, out.NonCompliantPolicies, out.TotalPolicies = part.policies.Compliant, part.policies.NonCompliant, part.policies.Total
	out.PolicyStates, out.TenantsWithData = part.states, part.tenantsWithData
	if part.lastSynced != nil {
		t := *part.lastSynced
		out.LastSyncedAt = &t
	}
	groups := part.findings
	if len(extra) > 0 {
		more, err := s.findingGroups(ctx, tenants, extra)
		if err != nil {
			return out, err
		}
		groups = append(slices.Clip(groups), more...)
	}
	for _, g := range groups {
		switch severityOfRank(g.SeverityRank) {
		case SeverityHigh:
			out.NonCompliantBySeverity.High += g.Findings
		case SeverityLow:
			out.NonCompliantBySeverity.Low += g.Findings
		default:
			out.NonCompliantBySeverity.Medium += g.Findings
		}
		for i := range out.Sources {
			if out.Sources[i].Source == g.Source {
				out.Sources[i].Findings += g.Findings
				out.Sources[i].NonCompliantCount += g.NonCompliantCount
			}
		}
	}
	return out, nil
}

// policyPart is the part of a summary read from the policy states and
// snapshots alone.
type policyPart struct {
	resources, policies rankCounts
	states              int64
	tenantsWithData     int
	findings            []findingGroup
	lastSynced          *time.Time
}

// findingGroup counts a source's non-compliant findings of one severity.
type findingGroup struct {
	Source            string `bun:"source"`
	SeverityRank      int    `bun:"severity_rank"`
	Findings          int64  `bun:"findings"`
	NonCompliantCount int64  `bun:"non_compliant_count"`
}

// summaryCapacity bounds the tenant selections whose policy part of the
// summary is kept.
const summaryCapacity = 256

// policySummary returns the policy states' part of the tenants' summary:
// four aggregates over every state of the tenants and their latest
// snapshots, read again only when a sync changed the states or took a
// snapshot of one of them since (the tenants' revision, which Replace and
// Finish raise in their transactions).
func (s *Store) policySummary(ctx context.Context, tenants []string) (policyPart, error) {
	s.once.Do(func() { s.summaries = revcache.New[policyPart](summaryCapacity, revcache.MaxAge) })
	revision, err := s.Revision(ctx, tenants)
	if err != nil {
		return policyPart{}, err
	}
	return s.summaries.Get(ctx, revcache.Key(tenants), revision, func(ctx context.Context) (policyPart, error) {
		var out policyPart
		res, err := countRanks(ctx, s.DB, tenants, "resource_id")
		if err != nil {
			return out, err
		}
		out.resources = res
		// A policy is counted once over the tenants.
		items := s.DB.NewSelect().Table("compliance_policy_states").ColumnExpr("MAX(state_rank) AS r").
			Where("tenant_id IN (?)", bun.List(tenants)).Group("policy_definition_id")
		err = s.DB.NewSelect().TableExpr("(?) AS i", items).
			ColumnExpr("COALESCE(SUM(CASE WHEN r = 2 THEN 1 ELSE 0 END), 0) AS non_compliant").
			ColumnExpr("COALESCE(SUM(CASE WHEN r = 1 THEN 1 ELSE 0 END), 0) AS compliant").
			ColumnExpr("COUNT(*) AS total").Scan(ctx, &out.policies)
		if err != nil {
			return out, err
		}
		var counts struct {
			States  int64 `bun:"states"`
			Tenants int   `bun:"tenants"`
		}
		err = s.DB.NewSelect().Table("compliance_policy_states").ColumnExpr("COUNT(*) AS states, COUNT(DISTINCT tenant_id) AS tenants").
			Where("tenant_id IN (?)", bun.List(tenants)).Scan(ctx, &counts)
		if err != nil {
			return out, err
		}
		out.states, out.tenantsWithData = counts.States, counts.Tenants
		if out.findings, err = s.findingGroups(ctx, tenants, withPolicies(nil)); err != nil {
			return out, err
		}
		snaps, err := s.LatestSnapshots(ctx, tenants)
		if err != nil {
			return out, err
		}
		for i := range snaps {
			if t := snaps[i].TakenAt.UTC(); out.lastSynced == nil || t.After(*out.lastSynced) {
				out.lastSynced = &t
			}
		}
		return out, nil
	})
}

// findingGroups counts the sources' non-compliant findings of the tenants
// by source and severity, in the database.
func (s *Store) findingGroups(ctx context.Context, tenants []string, sources []FindingSource) ([]findingGroup, error) {
	union, args := s.findings(tenants, sources)
	var groups []findingGroup
	err := s.DB.NewRaw("SELECT source, severity_rank, COUNT(*) AS findings, SUM(non_compliant_count) AS non_compliant_count FROM ("+union+
		") AS f GROUP BY source, severity_rank", args...).Scan(ctx, &groups)
	return groups, err
}

// TrendDay is the tenants' figures on one day of the trend.
type TrendDay struct {
	Date                     string   `json:"date" format:"date"`
	TenantsReporting         int      `json:"tenants_reporting" doc:"Tenants with a snapshot on or before the day"`
	OverallCompliancePercent *float64 `json:"overall_compliance_percent" doc:"Summed compliant resources of summed compliant and non-compliant ones, percent to two decimals; null when no tenant reports"`
	CompliantResources       int64    `json:"compliant_resources"`
	NonCompliantResources    int64    `json:"non_compliant_resources"`
	TotalResources           int64    `json:"total_resources"`
	CompliantPolicies        int64    `json:"compliant_policies" doc:"Summed over the tenants: a policy of several tenants counts in each"`
	NonCompliantPolicies     int64    `json:"non_compliant_policies"`
	TotalPolicies            int64    `json:"total_policies"`
}

// Trend returns one record per day from first through last (YYYY-MM-DD),
// oldest first. A tenant's figures on a day are those of its latest
// snapshot on or before that day — a day without a sync carries the last
// known state forward — and a tenant counts from its first snapshot on.
func (s *Store) Trend(ctx context.Context, tenants []string, first, last time.Time) ([]TrendDay, error) {
	var snaps []Snapshot
	if len(tenants) > 0 {
		from, to := first.Format(time.DateOnly), last.Format(time.DateOnly)
		if err := s.DB.NewSelect().Model(&snaps).Where("tenant_id IN (?)", bun.List(tenants)).Where("day BETWEEN ? AND ?", from, to).
			Order("day").Scan(ctx); err != nil {
			return nil, err
		}
		var before []Snapshot
		latest := s.DB.NewSelect().Table("compliance_snapshots").ColumnExpr("tenant_id, MAX(day) AS day").
			Where("tenant_id IN (?)", bun.List(tenants)).Where("day < ?", from).Group("tenant_id")
		if err := s.DB.NewSelect().Model(&before).Join("JOIN (?) AS l ON l.tenant_id = s.tenant_id AND l.day = s.day", latest).
			Scan(ctx); err != nil {
			return nil, err
		}
		snaps = append(before, snaps...)
	}
	current := map[string]Snapshot{}
	next := 0
	out := []TrendDay{}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		day := d.Format(time.DateOnly)
		for next < len(snaps) && snaps[next].Day <= day {
			current[snaps[next].TenantID] = snaps[next]
			next++
		}
		td := TrendDay{Date: day, TenantsReporting: len(current)}
		for _, sn := range current {
			td.CompliantResources += sn.CompliantResources
			td.NonCompliantResources += sn.NonCompliantResources
			td.TotalResources += sn.TotalResources
			td.CompliantPolicies += sn.CompliantPolicies
			td.NonCompliantPolicies += sn.NonCompliantPolicies
			td.TotalPolicies += sn.TotalPolicies
		}
		td.OverallCompliancePercent = Percent(td.CompliantResources, td.NonCompliantResources)
		out = append(out, td)
	}
	return out, nil
}

// SubscriptionCounts is a tenant's synced subscriptions and their states.
type SubscriptionCounts struct {
	TenantID      string    `bun:"tenant_id"`
	Subscriptions int       `bun:"subscriptions"`
	PolicyStates  int64     `bun:"policy_states"`
	LastSynced    time.Time `bun:"last_synced"`
}

// SubscriptionCounts returns, per tenant with any, its synced
// subscriptions, their states and their latest sync.
func (s *Store) SubscriptionCounts(ctx context.Context, tenants []string) (map[string]SubscriptionCounts, error) {
	out := map[string]SubscriptionCounts{}
	if len(tenants) == 0 {
		return out, nil
	}
	var rows []SubscriptionCounts
	err := s.DB.NewSelect().Table("compliance_subscriptions").
		ColumnExpr("tenant_id, COUNT(*) AS subscriptions, SUM(policy_states) AS policy_states, MAX(synced_at) AS last_synced").
		Where("tenant_id IN (?)", bun.List(tenants)).Group("tenant_id").Scan(ctx, &rows)
	for _, r := range rows {
		out[r.TenantID] = r
	}
	return out, err
}
