package reports_test

import (
	"encoding/csv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// groupKey is a raw row's group of the analysis, as the API names it:
// the group, and the subscription of a resource group.
func groupKey(groupBy string) func(ledger.Cost) string {
	return func(r ledger.Cost) string {
		switch groupBy {
		case reports.GroupTenant:
			return r.TenantID
		case reports.GroupSubscription:
			return r.SubscriptionID
		case reports.GroupResourceGroup:
			return r.SubscriptionID + "/" + r.ResourceGroup
		}
		return r.Service
	}
}

func itemKey(g reports.AnalysisGroup) string {
	if g.SubscriptionID != nil {
		return *g.SubscriptionID + "/" + g.Group
	}
	return g.Group
}

// TestAnalysis: the cost analysis's groups, their totals and their cost of
// each day or month equal the raw rows summed in Go for every grouping,
// with filters, pages and both grains, on both databases; the CSV is the
// page as the JSON has it; another tenant is refused; a bad group, grain,
// date or range is a 422 naming it.
func TestAnalysis(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			from, to := mustDay("2026-09-25"), mustDay("2026-10-17")
			base := url.Values{"start_date": {from.String()}, "end_date": {to.String()}}
			for _, groupBy := range reports.Groupings {
				for _, grain := range []string{reports.GrainDaily, reports.GrainMonthly} {
					q := url.Values{"group_by": {groupBy}, "grain": {grain}, "limit": {"100"}}
					for k, v := range base {
						q[k] = v
					}
					var a reports.Analysis
					w.json(t, "/api/v1/costs/analysis?"+q.Encode(), admin, &a)
					checkAnalysis(t, w.rows, []string{"t1", "t2", "t3", "t4"}, a, groupBy, grain, from, to, nil)
				}
			}
			// Alpha's user, one service, by resource group, a page of two
			// after the first two.
			q := url.Values{"group_by": {"resource_group"}, "services": {"Storage"}, "limit": {"2"}, "offset": {"2"}}
			for k, v := range base {
				q[k] = v
			}
			var page reports.Analysis
			w.json(t, "/api/v1/costs/analysis?"+q.Encode(), userA, &page)
			if page.Total != 6 || len(page.Items) != 2 || page.Limit != 2 || page.Offset != 2 {
				t.Fatalf("Alpha's Storage by resource group, second page: %+v", page)
			}
			var whole reports.Analysis
			q.Set("limit", "100")
			q.Set("offset", "0")
			w.json(t, "/api/v1/costs/analysis?"+q.Encode(), userA, &whole)
			if !slices.EqualFunc(page.Items, whole.Items[2:4], func(a, b reports.AnalysisGroup) bool { return itemKey(a) == itemKey(b) && a.Total == b.Total }) {
				t.Errorf("the second page %+v is not the whole's third and fourth %+v", page.Items, whole.Items[2:4])
			}
			checkAnalysis(t, w.rows, []string{"t1", "t3"}, whole, "resource_group", "daily", from, to, func(r ledger.Cost) bool { return r.Service == "Storage" })

			// The CSV is the JSON's page, cell for cell.
			q.Set("format", "csv")
			resp := w.get(t, "/api/v1/costs/analysis?"+q.Encode(), userA)
			records, err := csv.NewReader(resp.Body).ReadAll()
			if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") ||
				resp.Header.Get("Content-Disposition") != `attachment; filename="cost-analysis-resource_group-2026-09-25-2026-10-17.csv"` {
				t.Fatalf("csv: %d %v %v", resp.StatusCode, resp.Header, err)
			}
			if want := reports.AnalysisCSV(whole); !slices.EqualFunc(records, want, slices.Equal) {
				t.Errorf("csv\n%v\nwant\n%v", records, want)
			}
			if records[0][0] != "subscription_id" || records[0][1] != "resource_group" || records[0][2] != "currency" || records[0][3] != "2026-09-25" ||
				records[0][len(records[0])-1] != "total" || len(records) != 7 {
				t.Errorf("csv header %v, %d records", records[0], len(records))
			}

			for _, path := range []string{"/api/v1/costs/analysis?tenant_ids=t2", "/api/v1/costs/analysis?tenant_ids=t1&tenant_ids=t2&format=csv"} {
				resp := w.get(t, path, userA)
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "s4") {
					t.Errorf("%s as Alpha's user: %d %s", path, resp.StatusCode, body)
				}
			}
			var mine reports.Analysis
			w.json(t, "/api/v1/costs/analysis?group_by=tenant&limit=100&"+base.Encode(), userA, &mine)
			for _, g := range mine.Items {
				if g.Group != "t1" || g.Label != "Alpha" {
					t.Errorf("Alpha's user sees the group %+v", g)
				}
			}
			for _, c := range []struct{ query, location string }{
				{"group_by=tag", "query.group_by"},
				{"grain=weekly", "query.grain"},
				{"start_date=2026-02-30", "query.start_date"},
				{"end_date=soon", "query.end_date"},
				{"start_date=2026-10-02&end_date=2026-10-01", "query.start_date"},
				{"start_date=2025-01-01&end_date=2026-10-01", "query.start_date"},
				{"limit=0", "query.limit"},
				{"limit=101", "query.limit"},
				{"offset=-1", "query.offset"},
				{"format=xlsx", "query.format"},
			} {
				resp := w.get(t, "/api/v1/costs/analysis?"+c.query, admin)
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"location":"`+c.location+`"`) {
					t.Errorf("%s: %d %s, want 422 naming %s", c.query, resp.StatusCode, body, c.location)
				}
			}
		})
	}
}

// checkAnalysis compares an analysis with the raw rows of the tenants
// that keep (all when nil) summed in Go: its groups and their order,
// totals, costs per period and the totals of every group.
func checkAnalysis(t *testing.T, rows []ledger.Cost, tenants []string, a reports.Analysis, groupBy, grain string, from, to ledger.Day, keep func(ledger.Cost) bool) {
	t.Helper()
	type cell struct{ group, currency string }
	totals, perPeriod, all := map[cell]ledger.Amount{}, map[cell]map[string]ledger.Amount{}, map[string]ledger.Amount{}
	for _, r := range rows {
		if r.Day < from || r.Day > to || !slices.Contains(tenants, r.TenantID) || keep != nil && !keep(r) {
			continue
		}
		c := cell{groupKey(groupBy)(r), r.Currency}
		period := r.Day.String()
		if grain == reports.GrainMonthly {
			period = period[:7]
		}
		if perPeriod[c] == nil {
			perPeriod[c] = map[string]ledger.Amount{}
		}
		totals[c] += r.Cost
		perPeriod[c][period] += r.Cost
		all[r.Currency] += r.Cost
	}
	what := groupBy + " " + grain
	wantPeriods := []string{}
	for d := from; d <= to; d++ {
		p := d.String()
		if grain == reports.GrainMonthly {
			p = p[:7]
		}
		if !slices.Contains(wantPeriods, p) {
			wantPeriods = append(wantPeriods, p)
		}
	}
	if !slices.Equal(a.Periods, wantPeriods) || a.GroupBy != groupBy || a.Grain != grain {
		t.Errorf("%s: periods %v, want %v", what, a.Periods, wantPeriods)
	}
	if a.Total != len(totals) || len(a.Items) != len(totals) {
		t.Fatalf("%s: %d groups (%d items), want %d", what, a.Total, len(a.Items), len(totals))
	}
	for i, g := range a.Items {
		c := cell{itemKey(g), g.Currency}
		if g.Total != totals[c] {
			t.Errorf("%s: %v total %s, want %s", what, c, g.Total, totals[c])
		}
		for j, p := range a.Periods {
			if g.Costs[j] != perPeriod[c][p] {
				t.Errorf("%s: %v on %s: %s, want %s", what, c, p, g.Costs[j], perPeriod[c][p])
			}
		}
		if i > 0 && a.Items[i-1].Total < g.Total {
			t.Errorf("%s: %v before %v", what, a.Items[i-1], g)
		}
	}
	if len(a.Totals) != len(all) {
		t.Errorf("%s: totals %+v, want %v", what, a.Totals, all)
	}
	for _, tc := range a.Totals {
		if all[tc.Currency] != tc.TotalCost {
			t.Errorf("%s: %s total %s, want %s", what, tc.Currency, tc.TotalCost, all[tc.Currency])
		}
	}
}
