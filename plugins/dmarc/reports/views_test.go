package reports

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
)

// TestViews: the page's sections show the caller's tenants only, or the
// picked one, with the figures of the samples.
func TestViews(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	empty := f.do(t, userContoso, "GET", RatesFragmentPath, "", nil)
	if empty.status != http.StatusOK || !strings.Contains(string(empty.body), "No aggregate reports in the last 30 days") {
		t.Errorf("rates before any report: %d %s", empty.status, empty.body)
	}
	seedThroughAPI(t, f)

	rates := string(f.do(t, userContoso, "GET", RatesFragmentPath, "", nil).body)
	for _, want := range []string{"96.12 %", "of 645 reported messages", "DMARC pass rate per day", "2026-10-27", "2026-11-25"} {
		if !strings.Contains(rates, want) {
			t.Errorf("Contoso's rates lack %q:\n%s", want, rates)
		}
	}
	sources := string(f.do(t, userContoso, "GET", SourcesFragmentPath, "", nil).body)
	if !strings.Contains(sources, "203.0.113.45") || !strings.Contains(sources, "198.51.100.7") || strings.Contains(sources, "192.0.2.33") {
		t.Errorf("Contoso's failing sources:\n%s", sources)
	}
	picked := string(f.do(t, admin, "GET", SourcesFragmentPath+"?tenant_id="+tenantFabrikam, "", nil).body)
	if !strings.Contains(picked, "192.0.2.33") || strings.Contains(picked, "203.0.113.45") {
		t.Errorf("Fabrikam's failing sources:\n%s", picked)
	}
	if a := f.do(t, userContoso, "GET", RatesFragmentPath+"?tenant_id="+tenantFabrikam, "", nil); a.status != http.StatusForbidden {
		t.Errorf("Contoso's user picks Fabrikam: %d", a.status)
	}
}

func TestPassRateChartGaps(t *testing.T) {
	p := 50.0
	html := string(PassRateChart([]DayRate{{Day: "2026-11-02", Messages: 4, Passed: 2, Failed: 2, PassPercent: &p}},
		time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)))
	if !strings.Contains(html, "2026-11-01") || !strings.Contains(html, "2026-11-03") || strings.Count(html, `<td class="num"></td>`) != 2 || !strings.Contains(html, `<td class="num">50</td>`) || strings.Contains(html, "NaN") {
		t.Errorf("chart of one day in three:\n%s", html)
	}
}
