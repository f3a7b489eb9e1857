package reports

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

// TestSection: the page's report section shows the caller's tenants only,
// or the picked one, over the last 30 days by default, with the figures
// and the list of the samples, on both databases.
func TestSection(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		empty := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body)
		for _, want := range []string{"No aggregate reports in these days.", "No reports in these days. Widen the range", `name="from" type="date" value="2026-10-27"`, `name="to" type="date" value="2026-11-25"`} {
			if !strings.Contains(empty, want) {
				t.Errorf("section before any report lacks %q:\n%s", want, empty)
			}
		}
		seedThroughAPI(t, f)

		contoso := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body)
		for _, want := range []string{"96.12 %", "of 645 reported messages", "DMARC pass rate per day", "2026-10-27", "2026-11-25", "203.0.113.45", "198.51.100.7",
			"<caption>Aggregate reports, newest first</caption>", "Reports 1 to 2 of 2.",
			// Newest first: Yahoo's begins a day after Google's.
			"<tr><td>Yahoo</td><td>northwind-travel.example</td><td>2026-11-21</td><td>125</td><td>120</td><td>5</td>",
			"<tr><td>google.com</td><td>contoso-retail.example</td><td>2026-11-20</td><td>520</td><td>500</td><td>20</td>"} {
			if !strings.Contains(contoso, want) {
				t.Errorf("Contoso's section lacks %q:\n%s", want, contoso)
			}
		}
		if strings.Index(contoso, "<td>Yahoo</td>") > strings.Index(contoso, "<td>google.com</td>") || strings.Contains(contoso, "192.0.2.33") || strings.Contains(contoso, "fabrikam-foods.example") {
			t.Errorf("Contoso's section is out of order or shows Fabrikam's:\n%s", contoso)
		}
		picked := string(f.do(t, admin, "GET", SectionPath+"?tenant_id="+tenantFabrikam, "", nil).body)
		if !strings.Contains(picked, "192.0.2.33") || strings.Contains(picked, "203.0.113.45") || !strings.Contains(picked, "<td>fabrikam-foods.example</td><td>2026-11-20 to 2026-11-21</td>") ||
			!strings.Contains(picked, `<input type="hidden" name="tenant_id" value="`+tenantFabrikam+`">`) {
			t.Errorf("Fabrikam's section:\n%s", picked)
		}
		// An admin on every tenant sees which tenant each report is of.
		if all := string(f.do(t, admin, "GET", SectionPath, "", nil).body); !strings.Contains(all, "<td>Enterprise Outlook</td><td>Fabrikam</td>") || !strings.Contains(all, "<td>Yahoo</td><td>Contoso</td>") {
			t.Errorf("the admin's section on every tenant:\n%s", all)
		}
		if a := f.do(t, userContoso, "GET", SectionPath+"?tenant_id="+tenantFabrikam, "", nil); a.status != http.StatusForbidden {
			t.Errorf("Contoso's user picks Fabrikam: %d", a.status)
		}

		// One day: the figures and the list are that day's.
		day := string(f.do(t, userContoso, "GET", SectionPath+"?from=2026-11-21&to=2026-11-21", "", nil).body)
		if !strings.Contains(day, "<td>Yahoo</td>") || strings.Contains(day, "<td>google.com</td>") || !strings.Contains(day, "of 125 reported messages") || !strings.Contains(day, "Pass rate, 2026-11-21 to 2026-11-21") {
			t.Errorf("Contoso's 21 November:\n%s", day)
		}
	})
}

// TestSectionRange: days the section cannot show are named beside the
// range as typed, and the last 30 days shown instead.
func TestSectionRange(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	for _, c := range []struct{ query, want string }{
		{"from=2026-13-01&to=2026-11-25", "from: 2026-13-01 is not a date (YYYY-MM-DD)"},
		{"from=2026-11-20&to=yesterday", "to: yesterday is not a date (YYYY-MM-DD)"},
		{"from=2026-11-20&to=2026-11-19", "to: is before from"},
		{"from=2025-11-24&to=2026-11-25", "from: the range from 2025-11-24 to 2026-11-25 is longer than 366 days"},
		{"offset=-1", "offset: -1 is not a whole number from 0 to 1000000"},
	} {
		a := f.do(t, userContoso, "GET", SectionPath+"?"+c.query, "", nil)
		body := string(a.body)
		if a.status != http.StatusOK || !strings.Contains(body, "Those days cannot be shown; these are the last 30:") || !strings.Contains(body, c.want) ||
			!strings.Contains(body, `aria-invalid="true"`) || !strings.Contains(body, "Pass rate, 2026-10-27 to 2026-11-25") {
			t.Errorf("%s: %d %s", c.query, a.status, body)
		}
	}
}

// TestSectionPages: the list shows 20 reports at a time, newest first,
// with links to the older and newer ones; a report older than the last
// 30 days shows once the range reaches back to it.
func TestSectionPages(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	rep, err := Parse(bytes.NewReader(sample(t, "google-contoso-retail.xml")), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// 22 daily reports, 1 to 22 March 2025.
	for i := range 22 {
		rep.ReportID = "march-" + strconv.Itoa(i+1)
		rep.Begin = time.Date(2025, 3, i+1, 0, 0, 0, 0, time.UTC)
		rep.End = rep.Begin.Add(24*time.Hour - time.Second)
		if _, _, err := f.store.Insert(t.Context(), rep, Meta{TenantID: tenantContoso, Source: SourceUpload, ReceivedAt: rep.End}); err != nil {
			t.Fatal(err)
		}
	}
	if recent := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body); strings.Contains(recent, "2025-03") {
		t.Errorf("March 2025 in the last 30 days:\n%s", recent)
	}
	first := string(f.do(t, userContoso, "GET", SectionPath+"?from=2025-03-01&to=2025-03-31", "", nil).body)
	older := "/partials/dmarc-reports?from=2025-03-01&amp;offset=20&amp;to=2025-03-31"
	if !strings.Contains(first, "Reports 1 to 20 of 22.") || !strings.Contains(first, "<td>2025-03-22</td>") || strings.Contains(first, "<td>2025-03-02</td>") ||
		!strings.Contains(first, `href="`+older+`"`) || strings.Contains(first, "Newer reports") || !strings.Contains(first, "of 11,440 reported messages") {
		t.Errorf("March's first page:\n%s", first)
	}
	second := string(f.do(t, userContoso, "GET", strings.ReplaceAll(older, "&amp;", "&"), "", nil).body)
	if !strings.Contains(second, "Reports 21 to 22 of 22.") || !strings.Contains(second, "<td>2025-03-01</td>") || !strings.Contains(second, "<td>2025-03-02</td>") ||
		strings.Contains(second, "<td>2025-03-03</td>") || !strings.Contains(second, `href="/partials/dmarc-reports?from=2025-03-01&amp;to=2025-03-31"`) || strings.Contains(second, "Older reports") {
		t.Errorf("March's second page:\n%s", second)
	}
	past := string(f.do(t, userContoso, "GET", SectionPath+"?from=2025-03-01&to=2025-03-31&offset=400", "", nil).body)
	if !strings.Contains(past, "Reports 21 to 22 of 22.") || !strings.Contains(past, "<td>2025-03-01</td>") {
		t.Errorf("an offset past March's reports:\n%s", past)
	}
}

// TestUploadFormTenants: the form posts to the page's tenant when the page
// is of one; a caller of several tenants on a page of all of them chooses
// among their names, one of a single tenant is not asked.
func TestUploadFormTenants(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	all := string(f.do(t, admin, "GET", SectionPath, "", nil).body)
	for _, want := range []string{`action="/partials/dmarc-reports/upload?from=2026-10-27&amp;to=2026-11-25"`, `hx-encoding="multipart/form-data"`, `<select id="dmarc-upload-tenant" name="tenant_id" required>`,
		`<option value="` + tenantContoso + `">Contoso</option>`, `<option value="` + tenantFabrikam + `">Fabrikam</option>`, `type="file" required`} {
		if !strings.Contains(all, want) {
			t.Errorf("admin's form on every tenant lacks %s:\n%s", want, all)
		}
	}
	picked := string(f.do(t, admin, "GET", SectionPath+"?tenant_id="+tenantFabrikam, "", nil).body)
	if !strings.Contains(picked, `action="/partials/dmarc-reports/upload?from=2026-10-27&amp;tenant_id=`+tenantFabrikam+`&amp;to=2026-11-25"`) || strings.Contains(picked, "<select") {
		t.Errorf("form on Fabrikam's page:\n%s", picked)
	}
	if one := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body); strings.Contains(one, "<select") || strings.Contains(one, "tenant_id") {
		t.Errorf("form of a one-tenant user:\n%s", one)
	}
}

// TestUploadForm: the form's file is stored as the API stores it, once,
// audited, and the section answers what became of it: stored, duplicate,
// or refused with the parser's reason, the file's domain or the missing
// tenant; another tenant is 403, on both databases.
func TestUploadForm(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		google := sample(t, "google-contoso-retail.xml")
		ct, body := form(t, nil, "google.com!contoso-retail.example!1795132800!1795219199.xml", google)
		a := f.do(t, userContoso, "POST", UploadFormPath, ct, body)
		if a.status != http.StatusOK || !strings.Contains(string(a.body), `<div class="stack" id="dmarc-reports">`) ||
			!strings.Contains(string(a.body), "Stored: report 5871604411926393155 from google.com about contoso-retail.example, 2026-11-20 to 2026-11-20: 520 messages, 500 passed DMARC, 20 failed.") {
			t.Fatalf("upload through the form: %d %s", a.status, a.body)
		}
		if entries := f.h.AuditEntries(); len(entries) != 1 || entries[0].Action != "dmarc_report.upload.success" || entries[0].TenantID != tenantContoso {
			t.Errorf("audit entries %+v", entries)
		}
		if !strings.Contains(string(a.body), "203.0.113.45") {
			t.Errorf("the section after the upload lacks its failing source:\n%s", a.body)
		}
		ct, body = form(t, map[string]string{"tenant_id": tenantContoso}, "again.xml", google)
		if a := f.do(t, admin, "POST", UploadFormPath, ct, body); a.status != http.StatusOK || !strings.Contains(string(a.body), "Already stored: report 5871604411926393155") {
			t.Errorf("duplicate through the form: %d %s", a.status, a.body)
		}

		for _, c := range []struct {
			name   string
			who    string
			target string
			fields map[string]string
			file   []byte
			want   string
		}{
			{"not a report", "contoso", UploadFormPath, nil, []byte("<feedback><nonsense/>"), "Not uploaded:"},
			{"a domain of another tenant", "contoso", UploadFormPath, nil, sample(t, "microsoft-fabrikam-foods.xml"), "the report is about fabrikam-foods.example, which is not a domain of the tenant"},
			{"no tenant chosen", "admin", UploadFormPath, map[string]string{"tenant_id": ""}, sample(t, "yahoo-northwind-travel.xml"), "Tenant: is required"},
			{"no file", "contoso", UploadFormPath, nil, nil, "is required: the report file"},
		} {
			who := userContoso
			if c.who == "admin" {
				who = admin
			}
			ct, body := form(t, c.fields, "r.xml", c.file)
			a := f.do(t, who, "POST", c.target, ct, body)
			if a.status != http.StatusOK || !strings.Contains(string(a.body), `<div class="alert" role="alert"><p>Not uploaded:</p>`) || !strings.Contains(string(a.body), c.want) {
				t.Errorf("%s: %d %s", c.name, a.status, a.body)
			}
		}
		if n, _ := f.store.DB.NewSelect().TableExpr("dmarc_reports").Count(t.Context()); n != 1 {
			t.Errorf("%d reports after the refusals, want 1", n)
		}

		// A report older than the days shown is stored, and a link shows
		// its days.
		march := strings.Replace(strings.Replace(strings.Replace(string(google), "<begin>1795132800</begin>", "<begin>1740787200</begin>", 1),
			"<end>1795219199</end>", "<end>1740873599</end>", 1), "5871604411926393155", "march-2025", 1)
		ct, body = form(t, nil, "march.xml", []byte(march))
		a = f.do(t, userContoso, "POST", UploadFormPath+"?from=2026-11-01&to=2026-11-25", ct, body)
		its := "/partials/dmarc-reports?from=2025-03-01&amp;to=2025-03-01"
		if a.status != http.StatusOK || !strings.Contains(string(a.body), "Stored: report march-2025") || !strings.Contains(string(a.body), `href="`+its+`"`) ||
			!strings.Contains(string(a.body), "Pass rate, 2026-11-01 to 2026-11-25") || strings.Contains(string(a.body), "<td>2025-03-01</td>") {
			t.Errorf("an old report through the form: %d %s", a.status, a.body)
		}
		if shown := string(f.do(t, userContoso, "GET", strings.ReplaceAll(its, "&amp;", "&"), "", nil).body); !strings.Contains(shown, "<td>google.com</td><td>contoso-retail.example</td><td>2025-03-01</td>") {
			t.Errorf("the old report's days:\n%s", shown)
		}
		// A range the section cannot show is refused before the file is read.
		ct, body = form(t, nil, "r.xml", sample(t, "yahoo-northwind-travel.xml"))
		f.do(t, userContoso, "POST", UploadFormPath+"?from=2026-11-20&to=2026-11-19", ct, body).problem(t, "to before from", http.StatusUnprocessableEntity, "query.to", "is before from")
		f.do(t, userContoso, "POST", UploadFormPath+"?from=20-11-2026", ct, body).problem(t, "not a date", http.StatusUnprocessableEntity, "query.from", "")
		if n, _ := f.store.DB.NewSelect().TableExpr("dmarc_reports").Count(t.Context()); n != 2 {
			t.Errorf("%d reports after the refused ranges, want 2", n)
		}

		ct, body = form(t, nil, "r.xml", sample(t, "microsoft-fabrikam-foods.xml"))
		if a := f.do(t, userContoso, "POST", UploadFormPath+"?tenant_id="+tenantFabrikam, ct, body); a.status != http.StatusForbidden {
			t.Errorf("Contoso's user uploads for Fabrikam in the query: %d %s", a.status, a.body)
		}
		ct, body = form(t, map[string]string{"tenant_id": tenantFabrikam}, "r.xml", sample(t, "microsoft-fabrikam-foods.xml"))
		if a := f.do(t, userContoso, "POST", UploadFormPath, ct, body); a.status != http.StatusForbidden {
			t.Errorf("Contoso's user uploads for Fabrikam in the form: %d %s", a.status, a.body)
		}
	})
}

func TestPassRateChartGaps(t *testing.T) {
	p := 50.0
	html := string(PassRateChart([]DayRate{{Day: "2026-11-02", Messages: 4, Passed: 2, Failed: 2, PassPercent: &p}},
		time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)))
	if !strings.Contains(html, "2026-11-01") || !strings.Contains(html, "2026-11-03") || strings.Count(html, `<td class="num"></td>`) != 2 || !strings.Contains(html, `<td class="num">50</td>`) || strings.Contains(html, "NaN") {
		t.Errorf("chart of one day in three:\n%s", html)
	}
}

// TestReportDetail: a listed report links to its records, which show
// each source with its reverse name and sending organisation once looked
// up, its messages, disposition, aligned results and raw authentication
// results; a report of another tenant is 404, and naming that tenant
// 403, on both databases.
func TestReportDetail(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		contoso, fabrikam := seedThroughAPI(t, f)
		if _, err := f.store.DB.NewUpdate().Model((*StoredRecord)(nil)).
			Set("source_ptr = ?, source_org = ?, enriched_at = ?", "mail-db8eur05on2091.outbound.protection.outlook.com", "Microsoft", time.Now()).
			Where("source_ip IN (?)", bun.List([]string{"40.107.22.91"})).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.DB.NewUpdate().Model((*StoredRecord)(nil)).Set("enriched_at = ?", time.Now()).
			Where("source_ip = ?", "203.0.113.45").Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		at := func(id int64) string { return "/partials/dmarc-reports/" + strconv.FormatInt(id, 10) }

		list := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body)
		link := `<a href="` + at(contoso) + `" hx-get="` + at(contoso) + `" hx-target="#dmarc-report-detail" hx-swap="innerHTML show:top">4 records<span class="visually-hidden"> of report 5871604411926393155 from google.com</span></a>`
		if !strings.Contains(list, link) || !strings.Contains(list, `<div id="dmarc-report-detail"></div>`) {
			t.Errorf("the list lacks the report's link %s:\n%s", link, list)
		}
		a := f.do(t, userContoso, "GET", at(contoso), "", nil)
		body := string(a.body)
		for _, want := range []string{`<h3 id="dmarc-report-title">Report 5871604411926393155 from google.com</h3>`, "<dd>2026-11-20</dd>",
			"<dd>520: 500 passed DMARC, 20 failed (96.15 % passed)</dd>",
			"<caption>Records of report 5871604411926393155 from google.com</caption>",
			`<tr><td>40.107.22.91</td><td>mail-db8eur05on2091.outbound.protection.outlook.com</td><td>Microsoft</td><td>412</td><td>none</td><td><span class="badge health-ok">pass</span></td><td><span class="badge health-ok">pass</span></td><td><span class="badge health-ok">pass, DKIM and SPF</span></td><td>contoso-retail.example</td><td>DKIM contoso-retail.example (selector1): pass; SPF contoso-retail.example: pass</td></tr>`,
			`<tr><td>2a01:111:f400:7e1b::50b</td><td>not looked up yet</td><td>–</td><td>88</td><td>none</td><td><span class="badge health-ok">pass</span></td><td><span class="badge health-critical">fail</span></td><td><span class="badge health-ok">pass, DKIM only</span></td>`,
			`<td>203.0.113.45</td><td>none</td><td>–</td><td>17</td>`} {
			if !strings.Contains(body, want) {
				t.Errorf("the report's detail lacks %s:\n%d %s", want, a.status, body)
			}
		}
		if picked := f.do(t, admin, "GET", at(fabrikam)+"?tenant_id="+tenantFabrikam, "", nil); picked.status != http.StatusOK || !strings.Contains(string(picked.body), "192.0.2.33") {
			t.Errorf("Fabrikam's report on Fabrikam's page: %d %s", picked.status, picked.body)
		}
		f.do(t, userContoso, "GET", at(fabrikam), "", nil).problem(t, "another tenant's report", http.StatusNotFound, "", "no report")
		f.do(t, admin, "GET", at(fabrikam)+"?tenant_id="+tenantContoso, "", nil).problem(t, "a report of another tenant than the page's", http.StatusNotFound, "", "no report")
		if a := f.do(t, userContoso, "GET", at(fabrikam)+"?tenant_id="+tenantFabrikam, "", nil); a.status != http.StatusForbidden {
			t.Errorf("Contoso's user names Fabrikam: %d %s", a.status, a.body)
		}
		f.do(t, userContoso, "GET", "/partials/dmarc-reports/0", "", nil).problem(t, "id 0", http.StatusUnprocessableEntity, "path.id", "")
	})
}
