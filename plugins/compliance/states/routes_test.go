package states_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

func ids(items []states.PolicyStatus) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

func pct(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

// TestReads: against the known world, the summary, the scores, the
// non-compliant list with its filter, sorts and pages, the status and the
// dataset carry the world's figures.
func TestReads(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, complianceWorld())
		f.mustRun(t)

		var sum states.Summary
		f.get(t, "/api/v1/compliance/summary", admin, &sum)
		if sum.TenantCount != 2 || sum.TenantsWithData != 2 || pct(sum.OverallCompliancePercent) != 57.14 || sum.CompliantResources != 4 ||
			sum.NonCompliantResources != 3 || sum.TotalResources != 8 || sum.CompliantPolicies != 1 || sum.NonCompliantPolicies != 3 ||
			sum.TotalPolicies != 4 || sum.PolicyStates != 12 || sum.LastSyncedAt == nil || !sum.LastSyncedAt.Equal(simNow) {
			t.Fatalf("summary %+v", sum)
		}
		if sum.NonCompliantBySeverity != (states.SeverityCounts{High: 2, Low: 1}) ||
			!slices.Equal(sum.Sources, []states.SourceSummary{{Source: "policy", Findings: 3, NonCompliantCount: 4}}) {
			t.Fatalf("summary by severity %+v, by source %+v", sum.NonCompliantBySeverity, sum.Sources)
		}
		f.get(t, "/api/v1/compliance/summary?tenant_ids="+fabrikam.ID, admin, &sum)
		if sum.TenantCount != 1 || pct(sum.OverallCompliancePercent) != 66.67 || sum.NonCompliantPolicies != 1 || sum.TotalPolicies != 2 {
			t.Fatalf("fabrikam's summary %+v", sum)
		}

		var scores []states.Score
		h := f.get(t, "/api/v1/compliance/scores", admin, &scores)
		if len(scores) != 2 || scores[0].TenantName != "Contoso" || pct(scores[0].OverallCompliancePercent) != 50 || *scores[0].Date != "2026-12-15" ||
			scores[0].NonCompliantPolicies != 3 || scores[1].TenantName != "Fabrikam" || pct(scores[1].OverallCompliancePercent) != 66.67 ||
			scores[1].PolicyStates != 3 || h.Get("X-Total-Count") != "2" || h.Get("Deprecation") != "" {
			t.Fatalf("scores %+v (%v)", scores, h)
		}
		h = f.get(t, "/api/v1/compliance/scores?limit=1&offset=1", admin, &scores)
		if len(scores) != 1 || scores[0].TenantID != fabrikam.ID || h.Get("X-Total-Count") != "2" {
			t.Fatalf("second page of scores %+v", scores)
		}
		// The deprecated tenant_id still works, and says it is deprecated.
		h = f.get(t, "/api/v1/compliance/scores?tenant_id="+fabrikam.ID, admin, &scores)
		if len(scores) != 1 || scores[0].TenantID != fabrikam.ID || h.Get("Deprecation") != states.Deprecation {
			t.Fatalf("scores of tenant_id %+v (%v)", scores, h)
		}

		var nc []states.PolicyStatus
		h = f.get(t, "/api/v1/compliance/non-compliant", admin, &nc)
		if !slices.Equal(ids(nc), []string{p1.id, p2.id, p3.id}) || h.Get("X-Total-Count") != "3" {
			t.Fatalf("non-compliant %v (%v)", ids(nc), h)
		}
		got := nc[0]
		if got.Source != "policy" || got.PolicyName != p1.name || got.Category != "Storage" || got.Severity != "High" || got.ComplianceState != "NonCompliant" ||
			got.NonCompliantCount != 2 || got.CompliantCount != 2 || got.TenantCount != 2 || !slices.Equal(got.GroupNames, []string{"SOC_2_CC6.1"}) ||
			got.LastEvaluatedAt == nil || !got.LastEvaluatedAt.Equal(simNow.Add(-time.Hour)) {
			t.Fatalf("p1 %+v", got)
		}
		if nc[1].Severity != "High" || nc[2].Severity != "Low" || nc[2].NonCompliantCount != 1 || nc[2].CompliantCount != 3 || len(nc[2].GroupNames) != 0 {
			t.Fatalf("p2 and p3: %+v", nc[1:])
		}
		for _, c := range []struct {
			query string
			want  []string
			total string
		}{
			{"severity=High", []string{p1.id, p2.id}, "2"},
			{"severity=Low", []string{p3.id}, "1"},
			{"severity=Medium", []string{}, "0"},
			{"sort_by=policy_name&sort_order=asc", []string{p2.id, p3.id, p1.id}, "3"},
			{"sort_by=severity&sort_order=asc", []string{p3.id, p1.id, p2.id}, "3"},
			{"sort_by=non_compliant_count&sort_order=asc", []string{p2.id, p3.id, p1.id}, "3"},
			{"sort_by=category", []string{p3.id, p1.id, p2.id}, "3"},
			{"limit=1&offset=1", []string{p2.id}, "3"},
			{"offset=3", []string{}, "3"},
			{"tenant_ids=" + fabrikam.ID, []string{p1.id}, "1"},
		} {
			h := f.get(t, "/api/v1/compliance/non-compliant?"+c.query, admin, &nc)
			if !slices.Equal(ids(nc), c.want) || h.Get("X-Total-Count") != c.total {
				t.Errorf("%s: %v (total %s), want %v (%s)", c.query, ids(nc), h.Get("X-Total-Count"), c.want, c.total)
			}
		}
		h = f.get(t, "/api/v1/compliance/non-compliant?tenant_id="+fabrikam.ID, admin, &nc)
		if !slices.Equal(ids(nc), []string{p1.id}) || nc[0].NonCompliantCount != 1 || h.Get("Deprecation") != states.Deprecation {
			t.Fatalf("non-compliant of tenant_id %+v (%v)", nc, h)
		}

		var st states.Status
		f.get(t, "/api/v1/compliance/status", admin, &st)
		if st.TenantCount != 2 || st.SyncedTenants != 2 || st.StaleTenants != 0 || st.Subscriptions != 3 || st.PolicyStates != 12 ||
			st.StaleAfterHours != 5 || len(st.Tenants) != 2 {
			t.Fatalf("status %+v", st)
		}
		if c := st.Tenants[0]; c.TenantName != "Contoso" || c.Subscriptions != 2 || c.PolicyStates != 9 || c.Stale || !c.LastSyncedAt.Equal(simNow) ||
			!c.LastSubscriptionSyncAt.Equal(simNow) || pct(c.OverallCompliancePercent) != 50 {
			t.Fatalf("contoso's status %+v", c)
		}
		// Six hours on, without a sync, both are stale.
		f.clock.Advance(6 * time.Hour)
		f.get(t, "/api/v1/compliance/status", admin, &st)
		if st.StaleTenants != 2 || !st.Tenants[1].Stale {
			t.Fatalf("status six hours on %+v", st)
		}

		recs, err := f.harness.ReadDataset(context.Background(), states.DatasetName, []string{contoso.ID}, nil)
		if err != nil || len(recs) != 1 {
			t.Fatalf("dataset: %d records (%v)", len(recs), err)
		}
		var rec map[string]any
		if err := json.Unmarshal(recs[0], &rec); err != nil || rec["tenant_id"] != contoso.ID || rec["overall_compliance_percent"] != 50.0 ||
			rec["non_compliant_resources"] != 2.0 || rec["total_policies"] != 4.0 || rec["date"] != "2026-12-15" {
			t.Fatalf("dataset record %s (%v)", recs[0], err)
		}
	})
}

// TestTrends: one record per day, oldest first; days before a tenant's
// first snapshot do not count it; a day without a sync carries the last
// snapshot forward.
func TestTrends(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := complianceWorld()
		f := start(t, dialect, w)
		f.mustRun(t) // 2026-12-15: 4 of 7, 57.14 %
		f.sim.SetWorld(withStates(w, func(ps []world.PolicyState) []world.PolicyState {
			for i := range ps {
				if ps[i].ResourceID == r1 {
					ps[i].ComplianceState = "Compliant"
				}
			}
			return ps
		}))
		f.advance(t, 24*time.Hour)
		f.mustRun(t) // 2026-12-16: 5 of 7, 71.43 %
		f.advance(t, 48*time.Hour)

		var days []states.TrendDay
		f.get(t, "/api/v1/compliance/trends?days=7", admin, &days)
		if len(days) != 7 || days[0].Date != "2026-12-12" || days[6].Date != "2026-12-18" {
			t.Fatalf("trend days %+v", days)
		}
		for _, d := range days[:3] {
			if d.TenantsReporting != 0 || d.OverallCompliancePercent != nil || d.TotalResources != 0 {
				t.Fatalf("a day before the first sync %+v", d)
			}
		}
		if d := days[3]; d.TenantsReporting != 2 || pct(d.OverallCompliancePercent) != 57.14 || d.NonCompliantResources != 3 || d.TotalResources != 8 ||
			d.NonCompliantPolicies != 4 || d.TotalPolicies != 6 {
			t.Fatalf("2026-12-15 %+v", d)
		}
		for _, d := range days[4:] {
			if d.TenantsReporting != 2 || pct(d.OverallCompliancePercent) != 71.43 || d.NonCompliantResources != 2 {
				t.Fatalf("%s: %+v, want the snapshot of 2026-12-16 carried forward", d.Date, d)
			}
		}
		f.get(t, "/api/v1/compliance/trends?tenant_ids="+fabrikam.ID, admin, &days)
		if len(days) != 30 || days[29].Date != "2026-12-18" || pct(days[29].OverallCompliancePercent) != 66.67 || days[29].TenantsReporting != 1 {
			t.Fatalf("fabrikam's default trend: %d days, last %+v", len(days), days[len(days)-1])
		}
		// A snapshot before the window carries into it.
		f.advance(t, 10*24*time.Hour)
		f.get(t, "/api/v1/compliance/trends?days=7", admin, &days)
		if days[0].TenantsReporting != 2 || pct(days[0].OverallCompliancePercent) != 71.43 {
			t.Fatalf("first day of a window after the last sync %+v", days[0])
		}
	})
}

// TestTenantScope: a user of Contoso sees Contoso's figures only, and is
// refused Fabrikam by tenant_ids and by the deprecated tenant_id, without
// a trace of it.
func TestTenantScope(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, complianceWorld())
		f.mustRun(t)

		var sum states.Summary
		f.get(t, "/api/v1/compliance/summary", contosoer, &sum)
		if sum.TenantCount != 1 || pct(sum.OverallCompliancePercent) != 50 || sum.TotalResources != 5 || sum.PolicyStates != 9 {
			t.Fatalf("contoso user's summary %+v", sum)
		}
		var nc []states.PolicyStatus
		f.get(t, "/api/v1/compliance/non-compliant", contosoer, &nc)
		if !slices.Equal(ids(nc), []string{p1.id, p2.id, p3.id}) || nc[0].NonCompliantCount != 1 || nc[0].TenantCount != 1 {
			t.Fatalf("contoso user's non-compliant %+v", nc)
		}
		var scores []states.Score
		f.get(t, "/api/v1/compliance/scores", contosoer, &scores)
		if len(scores) != 1 || scores[0].TenantID != contoso.ID {
			t.Fatalf("contoso user's scores %+v", scores)
		}
		var st states.Status
		f.get(t, "/api/v1/compliance/status", contosoer, &st)
		if st.TenantCount != 1 || len(st.Tenants) != 1 || st.Tenants[0].TenantID != contoso.ID || st.PolicyStates != 9 {
			t.Fatalf("contoso user's status %+v", st)
		}
		var days []states.TrendDay
		f.get(t, "/api/v1/compliance/trends?days=7", contosoer, &days)
		if d := days[len(days)-1]; d.TenantsReporting != 1 || pct(d.OverallCompliancePercent) != 50 {
			t.Fatalf("contoso user's trend %+v", d)
		}
		for _, target := range []string{
			"/api/v1/compliance/summary?tenant_ids=" + fabrikam.ID,
			"/api/v1/compliance/scores?tenant_ids=" + contoso.ID + "," + fabrikam.ID,
			"/api/v1/compliance/scores?tenant_id=" + fabrikam.ID,
			"/api/v1/compliance/non-compliant?tenant_ids=" + fabrikam.ID,
			"/api/v1/compliance/non-compliant?tenant_id=" + fabrikam.ID,
			"/api/v1/compliance/non-compliant?tenant_ids=" + contoso.ID + "&tenant_id=" + fabrikam.ID,
			"/api/v1/compliance/trends?tenant_ids=" + fabrikam.ID,
		} {
			resp, body := f.do(t, target, contosoer)
			if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), fabrikam.ID) || strings.Contains(string(body), "Fabrikam") {
				t.Errorf("%s: %d %s, want 403 without a trace of Fabrikam", target, resp.StatusCode, body)
			}
		}
	})
}

// TestBounds: every bound of every read is a 422 naming the parameter.
func TestBounds(t *testing.T) {
	f := start(t, "sqlite", complianceWorld())
	for _, c := range []struct{ target, location string }{
		{"/api/v1/compliance/scores?limit=0", "query.limit"},
		{"/api/v1/compliance/scores?limit=501", "query.limit"},
		{"/api/v1/compliance/scores?offset=-1", "query.offset"},
		{"/api/v1/compliance/scores?limit=ten", "query.limit"},
		{"/api/v1/compliance/non-compliant?limit=0", "query.limit"},
		{"/api/v1/compliance/non-compliant?limit=501", "query.limit"},
		{"/api/v1/compliance/non-compliant?offset=-1", "query.offset"},
		{"/api/v1/compliance/non-compliant?severity=Critical", "query.severity"},
		{"/api/v1/compliance/non-compliant?severity=high", "query.severity"},
		{"/api/v1/compliance/non-compliant?sort_by=resource_id", "query.sort_by"},
		{"/api/v1/compliance/non-compliant?sort_order=up", "query.sort_order"},
		{"/api/v1/compliance/trends?days=6", "query.days"},
		{"/api/v1/compliance/trends?days=366", "query.days"},
		{"/api/v1/compliance/trends?days=x", "query.days"},
		{"/api/v1/compliance/scores?tenant_id=" + strings.Repeat("a", 65), "query.tenant_id"},
	} {
		resp, body := f.do(t, c.target, admin)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), c.location) {
			t.Errorf("%s: %d %s, want 422 naming %s", c.target, resp.StatusCode, body, c.location)
		}
	}
}

// TestCustomRuleSource: a source of findings beside the policies joins
// the summary and the non-compliant list, marked by its source, filtered,
// sorted and paged together with the policies.
func TestCustomRuleSource(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, complianceWorld())
		f.mustRun(t)
		// One violated rule per tenant with states, of High severity,
		// with a violation per state.
		f.handlers.Findings = []states.FindingSource{{Name: states.SourceCustomRule, Select: func(db bun.IDB, tenants []string) *bun.SelectQuery {
			return db.NewSelect().Table("compliance_policy_states").
				ColumnExpr("'rule-' || tenant_id AS finding_id, 'No public endpoints' AS name, 'resource_property' AS category").
				ColumnExpr("3 AS severity_rank, COUNT(*) AS non_compliant_count, 0 AS compliant_count, 1 AS tenant_count").
				ColumnExpr("'[]' AS group_names, 0 AS last_evaluated_unix").
				Where("tenant_id IN (?)", bun.List(tenants)).Group("tenant_id")
		}}}
		var sum states.Summary
		f.get(t, "/api/v1/compliance/summary", admin, &sum)
		if !slices.Equal(sum.Sources, []states.SourceSummary{{Source: "policy", Findings: 3, NonCompliantCount: 4}, {Source: "custom_rule", Findings: 2, NonCompliantCount: 12}}) ||
			sum.NonCompliantBySeverity.High != 4 || sum.NonCompliantPolicies != 3 {
			t.Fatalf("summary with custom rules: %+v", sum)
		}
		var nc []states.PolicyStatus
		h := f.get(t, "/api/v1/compliance/non-compliant?severity=High", admin, &nc)
		if !slices.Equal(ids(nc), []string{"rule-t-contoso", "rule-t-fabrikam", p1.id, p2.id}) || h.Get("X-Total-Count") != "4" ||
			nc[0].Source != "custom_rule" || nc[0].NonCompliantCount != 9 || nc[0].LastEvaluatedAt != nil || nc[2].Source != "policy" {
			t.Fatalf("non-compliant with custom rules %+v", nc)
		}
		f.get(t, "/api/v1/compliance/non-compliant?tenant_ids="+fabrikam.ID+"&limit=1&offset=1", admin, &nc)
		if !slices.Equal(ids(nc), []string{p1.id}) {
			t.Fatalf("fabrikam's second finding %v", ids(nc))
		}
	})
}
