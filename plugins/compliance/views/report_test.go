package views_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/views"
)

var reportRow = regexp.MustCompile(`(?s)<tr class="report-control" data-control="([^"]+)" data-status="([^"]+)">(.*?)</tr>`)

// testReport: the framework section links the report; Alpha's user's
// report of NIST CSF names its tenants, the day, the disclaimer and the
// controls counted by result, then every control of the framework, by
// category, with its status and resources as the coverage counts them,
// and nothing of Beta; an unknown framework is a 404, a bad id a 422 and
// a tenant the user may not see a 403; without a framework it lists them.
func testReport(t *testing.T, w *world) {
	contains(t, "Alpha's NIST CSF section", w.html(t, views.FrameworksPath+"?framework=nist_csf", userA), `<a href="/compliance/report?framework=nist_csf">the printable report</a>`)
	contains(t, "Alpha's NIST CSF section scoped to it", w.html(t, views.FrameworksPath+"?framework=nist_csf&tenant_id=t1", userA),
		`<a href="/compliance/report?framework=nist_csf&amp;tenant_id=t1">the printable report</a>`)

	report := w.html(t, views.ReportPath+"?framework=nist_csf", userA)
	contains(t, "Alpha's NIST CSF report", report, "<h2>NIST Cybersecurity Framework 2.0: controls over resources</h2>",
		"<dt>Tenants</dt><dd>Alpha, Gamma</dd>", `<time class="local-time" datetime="2026-11-10T15:00:00Z">10 Nov 2026 15:00 UTC</time>`,
		mapping.Disclaimer, `<a href="/compliance?framework=nist_csf">Back to the framework</a>`, `<p class="no-print">`,
		`<section class="report-category" aria-labelledby="report-category-PR-DS"><h3 id="report-category-PR-DS">Data Security (PR.DS)</h3>`,
		// Of its 106 controls, ID.AM-02 passes, PR.DS-01, PR.DS-11 and
		// RC.RP-03 fail, and the rest have no policy in scope.
		`<tr><th scope="row">Passed</th><td class="num">1</td></tr><tr><th scope="row">Failed</th><td class="num">3</td></tr>`,
		`<tr><th scope="row">Manual: no policy in scope maps to it</th><td class="num">102</td></tr>`)
	lacks(t, "Alpha's NIST CSF report", report, "Beta", betaPolicy)

	set, err := frameworks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	nist, _ := set.Get("nist_csf")
	rows := reportRow.FindAllStringSubmatch(report, -1)
	if len(rows) != len(nist.Controls) {
		t.Fatalf("the report has %d controls, NIST CSF %d", len(rows), len(nist.Controls))
	}
	got := map[string][]string{}
	for _, r := range rows {
		got[r[1]] = []string{r[2], text(r[3])}
	}
	for id, want := range map[string][]string{
		// Status; then the row's text: id, name, badge, result, passing,
		// failing, exempt, mapped policies, evaluated resources.
		"PR.DS-01": {mapping.StatusPartial, "PR.DS-01Data at restPartialFailed\n12013"},
		"PR.DS-11": {mapping.StatusNonCompliant, "PR.DS-11BackupsNon-compliantFailed\n01011"},
		"PR.DS-02": {mapping.StatusNotCovered, "PR.DS-02Data in transitNot coveredManual: no policy in scope maps to it\n00000"},
		"PR.AA-01": {mapping.StatusNotCovered, "PR.AA-01"},
		"ID.AM-02": {mapping.StatusCovered, "ID.AM-02"},
		"RC.RP-03": {mapping.StatusNonCompliant, "RC.RP-03"},
	} {
		if g := got[id]; g == nil || g[0] != want[0] || !strings.HasPrefix(g[1], want[1]) {
			t.Errorf("%s in the report: %q, want %q", id, g, want)
		}
	}
	// The admin's report counts Beta's policy on PR.AA-01.
	admins := w.html(t, views.ReportPath+"?framework=nist_csf", admin)
	contains(t, "the admin's NIST CSF report", admins, "<dd>Alpha, Beta, Gamma</dd>", `data-control="PR.AA-01" data-status="non_compliant"`)

	choice := w.html(t, views.ReportPath+"?tenant_id=t1", userA)
	contains(t, "the report without a framework", choice, "Pick the framework to report on.", `<a href="/compliance/report?framework=nist_csf&amp;tenant_id=t1">`)
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{views.ReportPath + "?framework=nope", http.StatusNotFound, "no framework with this id"},
		{views.ReportPath + "?framework=" + strings.Repeat("f", 65), http.StatusUnprocessableEntity, "query.framework"},
		{views.ReportPath + "?framework=nist_csf&tenant_id=t2", http.StatusForbidden, ""},
	} {
		status, body := w.get(t, c.path, userA)
		if status != c.status || !strings.Contains(body, c.want) || strings.Contains(body, "Beta") {
			t.Errorf("%s: %d %s, want %d", c.path, status, body, c.status)
		}
	}
}
