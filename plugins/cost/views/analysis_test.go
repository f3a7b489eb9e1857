package views_test

import (
	"encoding/csv"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/cost/views"
)

var (
	rowRE   = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	cellRE  = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	csvRE   = regexp.MustCompile(`<a class="btn" href="([^"]+)" download>`)
	focusRE = regexp.MustCompile(`<a class="btn btn-small" href="(/api/v1/costs/focus[^"]+)" download`)
)

// tableRows are the body rows of the analysis's table (the first table
// after the charts' data tables), each cell's text unescaped, without
// thousands separators.
func tableRows(t *testing.T, page string) [][]string {
	t.Helper()
	start := strings.Index(page, "<caption>Cost by ")
	if start < 0 {
		t.Fatalf("no analysis table:\n%s", page)
	}
	table := page[start:]
	table = table[:strings.Index(table, "</table>")]
	var out [][]string
	for _, row := range rowRE.FindAllStringSubmatch(table, -1) {
		var cells []string
		for _, c := range cellRE.FindAllStringSubmatch(row[1], -1) {
			cells = append(cells, strings.ReplaceAll(html.UnescapeString(text(c[1])), ",", ""))
		}
		if cells != nil {
			out = append(out, cells)
		}
	}
	return out
}

// testAnalysis: the cost analysis page groups Alpha's costs in the
// database as asked, each figure exact; its CSV download is exactly its
// table, and its FOCUS download the range's costs of the caller's
// tenants; a form it cannot read says why; another tenant is refused.
func testAnalysis(t *testing.T, w *world) {
	page := w.html(t, views.AnalysisPagePath, userA)
	contains(t, "the analysis page", page, `id="cost-analysis"`, `hx-get="/partials/cost-analysis"`, `hx-trigger="change, submit"`,
		`<option value="service" selected>Service</option>`, "Cost by Service, daily, 2026-10-12 to 2026-11-10")
	lacks(t, "the analysis page", page, "Beta", "<script")

	// October's Storage: 31 days of 5.05 EUR.
	part := w.html(t, views.AnalysisPath+"?group_by=service&grain=monthly&start_date=2026-10-01&end_date=2026-11-10&service=Storage", userA)
	rows := tableRows(t, part)
	if len(rows) != 1 || !slices.Equal(rows[0], []string{"Storage", "EUR", "156.55", "50.50", "207.05"}) {
		t.Errorf("Alpha's Storage by month: %v", rows)
	}

	// The subscriptions by day: the table is the CSV it offers.
	part = w.html(t, views.AnalysisPath+"?group_by=subscription&start_date=2026-11-01&end_date=2026-11-10", userA)
	rows = tableRows(t, part)
	m := csvRE.FindStringSubmatch(part)
	if m == nil || len(rows) != 2 {
		t.Fatalf("the subscriptions' table %v, CSV link %v:\n%s", rows, m, part)
	}
	resp := w.h.Do(httptest.NewRequest(http.MethodGet, html.UnescapeString(m[1]), nil), userA)
	records, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK || len(records) != len(rows)+1 {
		t.Fatalf("the CSV of %s: %d %v %v", m[1], resp.StatusCode, records, err)
	}
	if !slices.EqualFunc(records[1:], rows, slices.Equal) {
		t.Errorf("the CSV\n%v\nis not the table\n%v", records[1:], rows)
	}
	if want := []string{"subscription_id", "currency", "2026-11-01"}; !slices.Equal(records[0][:3], want) || len(records[0]) != 13 {
		t.Errorf("the CSV's header %v", records[0])
	}
	// Beside it, the range's FOCUS export: Alpha's costs of those days.
	m = focusRE.FindStringSubmatch(part)
	if m == nil {
		t.Fatalf("no FOCUS link:\n%s", part)
	}
	resp = w.h.Do(httptest.NewRequest(http.MethodGet, html.UnescapeString(m[1]), nil), userA)
	records, err = csv.NewReader(resp.Body).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK || len(records) < 2 || records[0][0] != "BilledCost" {
		t.Fatalf("the FOCUS export of %s: %d %v %v", m[1], resp.StatusCode, records, err)
	}
	for _, r := range records[1:] {
		if r[1] != "t1" || r[11] < "2026-11-01" || r[11] > "2026-11-10T00:00:00Z" {
			t.Fatalf("the FOCUS export of %s holds %v", m[1], r)
		}
	}

	for _, c := range []struct{ query, want string }{
		{"group_by=city", "Group by one of service, resource group, subscription, tenant, resource and tag."},
		{"group_by=tag", "Name the tag to group by, such as cost-center."},
		{"tags=env", "Write each tag filter as key=value, such as env=prod, separated by commas."},
		{"grain=hourly", "The grain is daily or monthly."},
		{"metric=billed", "The cost is actual or amortized."},
		{"start_date=1.11.2026", "The dates: expected a date YYYY-MM-DD."},
		{"start_date=2026-11-05&end_date=2026-11-01", "The dates: start_date 2026-11-05 is after end_date 2026-11-01."},
	} {
		contains(t, c.query, text(w.html(t, views.AnalysisPath+"?"+c.query, userA)), c.want)
	}
	// Amortised: the test ledger holds none, so every figure is 0.
	rows = tableRows(t, w.html(t, views.AnalysisPath+"?group_by=service&grain=monthly&metric=amortized&start_date=2026-10-01&end_date=2026-11-10&service=Storage", userA))
	if len(rows) != 1 || !slices.Equal(rows[0], []string{"Storage", "EUR", "0.00", "0.00", "0.00"}) {
		t.Errorf("Alpha's Storage by month, amortised: %v", rows)
	}

	// Several services at once, and the spiky service by resource.
	rows = tableRows(t, w.html(t, views.AnalysisPath+"?group_by=service&grain=monthly&start_date=2026-10-01&end_date=2026-10-31&service=Storage,+Virtual+Machines", userA))
	if len(rows) != 2 || rows[0][0] != "Virtual Machines" || rows[1][0] != "Storage" {
		t.Errorf("two services: %v", rows)
	}
	rows = tableRows(t, w.html(t, views.AnalysisPath+"?group_by=resource&grain=monthly&start_date=2026-10-01&end_date=2026-10-31", userA))
	if len(rows) != 2 || !slices.Equal(rows[0], []string{appID, "app-1 (rg)", "USD", "372.00", "372.00"}) ||
		!slices.Equal(rows[1], []string{"", "(costs of no resource)", "USD", "10.54", "10.54"}) {
		t.Errorf("by resource: %v", rows)
	}
	for _, path := range []string{views.AnalysisPagePath, views.AnalysisPath} {
		if status, body := w.get(t, path+"?tenant_id=t2", userA); status != http.StatusForbidden || strings.Contains(body, betaService) {
			t.Errorf("%s of Beta for Alpha's user: %d", path, status)
		}
	}
	contains(t, "the admin's analysis by tenant", text(w.html(t, views.AnalysisPath+"?group_by=tenant", admin)), "t2Beta")

	// A picked brand's analysis carries brand_id in its form, its pages'
	// links and its CSV, so the host keeps narrowing them to the brand.
	part = w.html(t, views.AnalysisPath+"?brand_id=b-1&group_by=subscription&start_date=2026-11-01&end_date=2026-11-10", userA)
	contains(t, "a brand's analysis", part, `<input type="hidden" name="brand_id" value="b-1">`)
	if m := csvRE.FindStringSubmatch(part); m == nil || !strings.Contains(m[1], "brand_id=b-1") {
		t.Errorf("a brand's CSV link: %v", m)
	}
	if m := focusRE.FindStringSubmatch(part); m == nil || !strings.Contains(m[1], "brand_id=b-1") {
		t.Errorf("a brand's FOCUS link: %v", m)
	}
	lacks(t, "a tenant's analysis", w.html(t, views.AnalysisPath+"?brand_id=b-1&tenant_id=t1", userA), `name="brand_id"`)
}
