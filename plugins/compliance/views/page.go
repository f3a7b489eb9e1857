package views

import (
	"cmp"
	"context"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// What the page shows.
const (
	// trendDays is how many days, today included, the trend charts.
	trendDays = 30
	// nonCompliantShown is how many non-compliant policies the list
	// shows; the rest are a link to the list's API route away.
	nonCompliantShown = 10
	// apiPage is the page size of the list's API link, the route's
	// largest.
	apiPage = 500
)

// page is the compliance page over the tenants the request covers: the
// overall compliance and headline figures (each tenant's too when there
// are several), the trend, the non-compliant policies, the framework
// coverage, and the further sections.
func (h *Handlers) page(w http.ResponseWriter, r *http.Request, in *viewIn) {
	ctx := r.Context()
	tenants := sdkui.Tenants(r)
	s, err := h.States.Summary(ctx, tenants, h.Findings)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	parts := []template.HTML{}
	if s.TenantsWithData == 0 {
		parts = append(parts, sdkui.Card("Overall compliance", sdkui.Empty(noData)))
	} else {
		headline, err := h.headline(ctx, tenants, s)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		trend, err := h.trend(ctx, tenants)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		list, err := h.nonCompliant(ctx, string(in.Tenant), tenants)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		coverage, err := h.frameworks(ctx, in, tenants)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		parts = append(parts,
			sdkui.Card("Overall compliance", headline),
			sdkui.Card("Compliance, last "+strconv.Itoa(trendDays)+" days", trend),
			sdkui.Card("Non-compliant policies", list),
			sdkui.Card("Framework coverage", coverage),
		)
	}
	for _, sec := range h.Sections {
		body, err := sec.Render(r, tenants)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		parts = append(parts, sdkui.Card(sec.Title, body))
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(parts...))
}

// headline is the compliance gauge with the headline figures, and each
// tenant's latest figures by name when the page covers several.
func (h *Handlers) headline(ctx context.Context, tenants []string, s states.Summary) (template.HTML, error) {
	stats := []template.HTML{
		sdkui.Stat("Compliant resources", count(s.CompliantResources), "of "+count(s.TotalResources)+" with a policy state", ""),
		sdkui.Stat("Non-compliant resources", count(s.NonCompliantResources), "", sdkui.AtMost(float64(s.NonCompliantResources), 0, 0)),
		sdkui.Stat("Non-compliant policies", count(s.NonCompliantPolicies), "of "+count(s.TotalPolicies)+" policies", sdkui.AtMost(float64(s.NonCompliantPolicies), 0, 0)),
		severityStat(s.NonCompliantBySeverity),
	}
	for _, src := range s.Sources {
		if src.Source == states.SourceCustomRule {
			stats = append(stats, sdkui.Stat("Violated custom rules", count(src.Findings), count(src.NonCompliantCount)+" violations", sdkui.AtMost(float64(src.Findings), 0, 0)))
		}
	}
	parts := []template.HTML{overall(s), sdkui.Grid(stats...), synced(s)}
	if len(tenants) > 1 {
		table, err := h.scores(ctx, tenants)
		if err != nil {
			return "", err
		}
		parts = append(parts, table)
	}
	return stack(parts...), nil
}

// scores is each tenant's latest snapshot, by tenant name; a tenant never
// synced says so.
func (h *Handlers) scores(ctx context.Context, tenants []string) (template.HTML, error) {
	snaps, err := h.States.LatestSnapshots(ctx, tenants)
	if err != nil {
		return "", err
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return "", err
	}
	byTenant := make(map[string]*states.Snapshot, len(snaps))
	for i := range snaps {
		byTenant[snaps[i].TenantID] = &snaps[i]
	}
	ids := slices.Clone(tenants)
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(names[a], names[b]), cmp.Compare(a, b)) })
	rows := make([][]any, 0, len(ids))
	for _, id := range ids {
		sn := byTenant[id]
		if sn == nil {
			rows = append(rows, []any{names[id], sdkui.Badge("Not synced", sdkui.Unknown), "–", "–", "–"})
			continue
		}
		score := sdkui.Badge("Not evaluated", sdkui.Unknown)
		if p := sn.CompliancePercent(); p != nil {
			score = sdkui.Badge(percent(*p), sdkui.AtLeast(*p, healthyPercent, warningPercent))
		}
		rows = append(rows, []any{names[id], score, count(sn.NonCompliantResources) + " of " + count(sn.TotalResources),
			count(sn.NonCompliantPolicies) + " of " + count(sn.TotalPolicies), sn.Day})
	}
	return sdkui.Table([]string{"Tenant", "Compliance", "Non-compliant resources", "Non-compliant policies", "Snapshot"}, rows,
		"Compliance of each tenant at its latest sync"), nil
}

// trend charts the daily compliance percent over the trendDays days up to
// today, as the trends route reads it: a day without a sync carries the
// last known state forward, and a day before any tenant's first sync has
// no point.
func (h *Handlers) trend(ctx context.Context, tenants []string) (template.HTML, error) {
	last := h.now().Truncate(24 * time.Hour)
	days, err := h.States.Trend(ctx, tenants, last.AddDate(0, 0, 1-trendDays), last)
	if err != nil {
		return "", err
	}
	labels := make([]string, len(days))
	compliance := make([]float64, len(days))
	for i, d := range days {
		labels[i], compliance[i] = d.Date, math.NaN()
		if d.OverallCompliancePercent != nil {
			compliance[i] = *d.OverallCompliancePercent
		}
	}
	note := "Each day's figures are the latest sync on or before it; a day without a sync carries the last known state forward."
	if first := slices.IndexFunc(days, func(d states.TrendDay) bool { return d.OverallCompliancePercent != nil }); first >= 0 {
		from, to := days[first], days[len(days)-1]
		figures := percent(*to.OverallCompliancePercent) + " on " + to.Date + ". "
		if from.Date != to.Date {
			figures = percent(*from.OverallCompliancePercent) + " on " + from.Date + ", " + figures
		}
		note = figures + note
	}
	return stack(
		sdkui.LineChart("Compliant resources in percent", labels, []sdkui.Series{{Name: "Compliant resources", Values: compliance}}, nil),
		render("note", note),
	), nil
}

// nonCompliant is the non-compliant policies (and violated custom rules)
// with the most non-compliant resources, their severity, and a link to
// the whole list on the API.
func (h *Handlers) nonCompliant(ctx context.Context, tenant string, tenants []string) (template.HTML, error) {
	items, total, err := h.States.NonCompliant(ctx, states.NonCompliantQuery{TenantIDs: tenants, SortBy: "non_compliant_count", Desc: true,
		Limit: nonCompliantShown}, h.Findings)
	if err != nil {
		return "", err
	}
	if total == 0 {
		return sdkui.Empty("No non-compliant policies."), nil
	}
	many := len(tenants) > 1
	rows := make([][]any, 0, len(items))
	for _, p := range items {
		kind := p.Category
		if p.Source == states.SourceCustomRule {
			kind = "Custom rule · " + p.Category
		}
		evaluated := "never"
		if p.LastEvaluatedAt != nil {
			evaluated = p.LastEvaluatedAt.Format(time.DateOnly)
		}
		// A cloud policy leads to its non-compliant resources; a custom
		// rule's violations are the rule editor's to show.
		name := twoLines(p.PolicyName, kind)
		if p.Source == states.SourcePolicy {
			name = linkedLines(p.PolicyName, kind, policyLink(p.ID, tenant, 0))
		}
		row := []any{name, sdkui.Badge(p.Severity, severityHealth[p.Severity]), count(p.NonCompliantCount), count(p.CompliantCount)}
		if many {
			row = append(row, count(p.TenantCount))
		}
		rows = append(rows, append(row, evaluated))
	}
	columns := []string{"Policy", "Severity", "Non-compliant resources", "Compliant resources"}
	if many {
		columns = append(columns, "Tenants")
	}
	q := url.Values{"limit": {strconv.Itoa(apiPage)}, "sort_by": {"non_compliant_count"}}
	if tenant != "" {
		q.Set("tenant_ids", tenant)
	}
	return stack(
		sdkui.Table(append(columns, "Last evaluated"), rows, "Non-compliant policies, most non-compliant resources first"),
		render("more", struct {
			Shown, Total, Href string
			PageSize           int
		}{count(int64(len(items))), count(int64(total)), "/api/v1/compliance/non-compliant?" + q.Encode(), apiPage}),
	), nil
}
