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
	"github.com/stewardhq/steward/sdk"
)

// fact is a raw ledger row as the analysis's check reads it: its group
// as the API names it (the group, after the subscription of a resource
// group or resource), and what the filters look at.
type fact struct {
	group, tenant, service, currency string
	day                              ledger.Day
	cost                             ledger.Amount
}

// costFacts are the days by resource group, grouped by groupBy.
func costFacts(rows []ledger.Cost, groupBy string) []fact {
	out := make([]fact, len(rows))
	for i, r := range rows {
		g := r.Service
		switch groupBy {
		case reports.GroupTenant:
			g = r.TenantID
		case reports.GroupSubscription:
			g = r.SubscriptionID
		case reports.GroupResourceGroup:
			g = r.SubscriptionID + "/" + r.ResourceGroup
		}
		out[i] = fact{g, r.TenantID, r.Service, r.Currency, r.Day, r.Cost}
	}
	return out
}

// resourceFacts are the days by resource, grouped by resource or by the
// value of the tag key, of the resources keep keeps (all when nil).
func resourceFacts(rows []ledger.ResourceDay, tags []ledger.ResourceTag, groupBy, key string, keep func(map[string]string) bool) []fact {
	byResource := map[string]map[string]string{}
	for _, t := range tags {
		if byResource[t.ResourceID] == nil {
			byResource[t.ResourceID] = map[string]string{}
		}
		byResource[t.ResourceID][t.Key] = t.Value
	}
	var out []fact
	for _, r := range rows {
		if keep != nil && !keep(byResource[r.ResourceID]) {
			continue
		}
		g := r.SubscriptionID + "/" + r.ResourceID
		if groupBy == reports.GroupTag {
			g = byResource[r.ResourceID][key]
		}
		out = append(out, fact{g, r.TenantID, r.Service, r.Currency, r.Day, r.Cost})
	}
	return out
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
			for _, groupBy := range []string{reports.GroupService, reports.GroupResourceGroup, reports.GroupSubscription, reports.GroupTenant} {
				for _, grain := range []string{reports.GrainDaily, reports.GrainMonthly} {
					q := url.Values{"group_by": {groupBy}, "grain": {grain}, "limit": {"100"}}
					for k, v := range base {
						q[k] = v
					}
					var a reports.Analysis
					w.json(t, "/api/v1/costs/analysis?"+q.Encode(), admin, &a)
					checkAnalysis(t, costFacts(w.rows, groupBy), []string{"t1", "t2", "t3", "t4"}, a, groupBy, grain, from, to, nil)
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
			checkAnalysis(t, costFacts(w.rows, reports.GroupResourceGroup), []string{"t1", "t3"}, whole, "resource_group", "daily", from, to, func(f fact) bool { return f.service == "Storage" })

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
				{"group_by=tag", "query.tag_key"},
				{"group_by=tag&tag_key=%20", "query.tag_key"},
				{"group_by=city", "query.group_by"},
				{"tags=env", "query.tags[0]"},
				{"tags=env%3Dprod&tags=%3Dprod", "query.tags[1]"},
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
func checkAnalysis(t *testing.T, facts []fact, tenants []string, a reports.Analysis, groupBy, grain string, from, to ledger.Day, keep func(fact) bool) {
	t.Helper()
	type cell struct{ group, currency string }
	totals, perPeriod, all := map[cell]ledger.Amount{}, map[cell]map[string]ledger.Amount{}, map[string]ledger.Amount{}
	for _, r := range facts {
		if r.day < from || r.day > to || !slices.Contains(tenants, r.tenant) || keep != nil && !keep(r) {
			continue
		}
		c := cell{r.group, r.currency}
		period := r.day.String()
		if grain == reports.GrainMonthly {
			period = period[:7]
		}
		if perPeriod[c] == nil {
			perPeriod[c] = map[string]ledger.Amount{}
		}
		totals[c] += r.cost
		perPeriod[c][period] += r.cost
		all[r.currency] += r.cost
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

// TestAnalysisByResourceAndTag: grouped by resource or by a tag's value,
// and filtered by tags (values of a key alternatives, keys all required)
// and a resource group in any case, the analysis equals the days by
// resource summed in Go, on both databases; a tag key is compared without
// case; resources without the tag form one group labelled as such; the
// CSV names each resource; another tenant's resources are not seen.
func TestAnalysisByResourceAndTag(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			from, to := mustDay("2026-09-25"), mustDay("2026-10-17")
			all := []string{"t1", "t2", "t3", "t4"}
			get := func(who sdk.Principal, q url.Values) reports.Analysis {
				t.Helper()
				q.Set("start_date", from.String())
				q.Set("end_date", to.String())
				q.Set("limit", "100")
				var a reports.Analysis
				w.json(t, "/api/v1/costs/analysis?"+q.Encode(), who, &a)
				return a
			}
			for _, grain := range []string{reports.GrainDaily, reports.GrainMonthly} {
				a := get(admin, url.Values{"group_by": {"resource"}, "grain": {grain}})
				checkAnalysis(t, resourceFacts(w.resources, w.tags, reports.GroupResource, "", nil), all, a, reports.GroupResource, grain, from, to, nil)
				a = get(admin, url.Values{"group_by": {"tag"}, "tag_key": {"ENV"}, "grain": {grain}})
				checkAnalysis(t, resourceFacts(w.resources, w.tags, reports.GroupTag, "env", nil), all, a, reports.GroupTag, grain, from, to, nil)
				if a.TagKey == nil || *a.TagKey != "env" {
					t.Errorf("tag_key %v, want env", a.TagKey)
				}
				labels := map[string]string{}
				for _, g := range a.Items {
					labels[g.Group] = g.Label
				}
				if labels[""] != "(without the tag)" || labels["prod"] != "prod" || labels["dev"] != "dev" || len(labels) != 3 {
					t.Errorf("tag groups %v", labels)
				}
			}
			prodOfT1 := func(tags map[string]string) bool { return tags["env"] == "prod" && tags["cost-center"] == "CC-t1" }
			a := get(admin, url.Values{"group_by": {"service"}, "tags": {"env=prod", "Cost-Center=CC-t1", "cost-center=CC-nobody"}})
			checkAnalysis(t, costFactsOf(resourceFacts(w.resources, w.tags, reports.GroupResource, "", prodOfT1)), all, a, reports.GroupService, "daily", from, to, nil)
			if a.Total == 0 {
				t.Fatal("the tag filters match nothing")
			}
			either := func(tags map[string]string) bool { return tags["env"] == "prod" || tags["env"] == "dev" }
			a = get(admin, url.Values{"group_by": {"resource"}, "tags": {"env=prod", "env=dev"}, "resource_groups": {"RG0"}})
			checkAnalysis(t, resourceFacts(w.resources, w.tags, reports.GroupResource, "", either), all, a, reports.GroupResource, "daily", from, to,
				func(f fact) bool { return strings.Contains(f.group, "/resourcegroups/rg0/") })
			for _, g := range a.Items {
				if !strings.HasSuffix(g.Label, "-1 (rg0)") || g.SubscriptionID == nil {
					t.Errorf("resource %+v: want a tagged resource of rg0, labelled by name and group", g)
				}
			}

			mine := get(userA, url.Values{"group_by": {"resource"}})
			checkAnalysis(t, resourceFacts(w.resources, w.tags, reports.GroupResource, "", nil), []string{"t1", "t3"}, mine, reports.GroupResource, "daily", from, to, nil)
			resp := w.get(t, "/api/v1/costs/analysis?group_by=tag&tag_key=env&tenant_ids=t2", userA)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("another tenant's tags: %d", resp.StatusCode)
			}

			q := url.Values{"group_by": {"resource"}, "format": {"csv"}, "limit": {"3"}}
			resp = w.get(t, "/api/v1/costs/analysis?"+q.Encode(), userA)
			records, err := csv.NewReader(resp.Body).ReadAll()
			if err != nil || resp.StatusCode != http.StatusOK || len(records) != 4 || records[0][0] != "resource_id" || records[0][1] != "resource" ||
				!strings.HasPrefix(records[1][0], "/subscriptions/") || !strings.Contains(records[1][1], " (rg") {
				t.Errorf("csv by resource: %d %v %v", resp.StatusCode, records, err)
			}
		})
	}
}

// costFactsOf regroups facts by service, the grouping TestAnalysisByResourceAndTag
// filters by tag.
func costFactsOf(facts []fact) []fact {
	out := slices.Clone(facts)
	for i := range out {
		out[i].group = out[i].service
	}
	return out
}
