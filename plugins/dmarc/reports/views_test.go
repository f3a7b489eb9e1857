package reports

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
)

// TestSection: the page's report section shows the caller's tenants only,
// or the picked one, with the figures of the samples.
func TestSection(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	empty := f.do(t, userContoso, "GET", SectionPath, "", nil)
	if empty.status != http.StatusOK || !strings.Contains(string(empty.body), "No aggregate reports in the last 30 days") {
		t.Errorf("section before any report: %d %s", empty.status, empty.body)
	}
	seedThroughAPI(t, f)

	contoso := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body)
	for _, want := range []string{"96.12 %", "of 645 reported messages", "DMARC pass rate per day", "2026-10-27", "2026-11-25", "203.0.113.45", "198.51.100.7"} {
		if !strings.Contains(contoso, want) {
			t.Errorf("Contoso's section lacks %q:\n%s", want, contoso)
		}
	}
	if strings.Contains(contoso, "192.0.2.33") {
		t.Errorf("Contoso's section shows Fabrikam's source:\n%s", contoso)
	}
	picked := string(f.do(t, admin, "GET", SectionPath+"?tenant_id="+tenantFabrikam, "", nil).body)
	if !strings.Contains(picked, "192.0.2.33") || strings.Contains(picked, "203.0.113.45") {
		t.Errorf("Fabrikam's section:\n%s", picked)
	}
	if a := f.do(t, userContoso, "GET", SectionPath+"?tenant_id="+tenantFabrikam, "", nil); a.status != http.StatusForbidden {
		t.Errorf("Contoso's user picks Fabrikam: %d", a.status)
	}
}

// TestUploadFormTenants: the form posts to the page's tenant when the page
// is of one; a caller of several tenants on a page of all of them chooses
// among their names, one of a single tenant is not asked.
func TestUploadFormTenants(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	all := string(f.do(t, admin, "GET", SectionPath, "", nil).body)
	for _, want := range []string{`action="/partials/dmarc-reports/upload"`, `hx-encoding="multipart/form-data"`, `<select id="dmarc-upload-tenant" name="tenant_id" required>`,
		`<option value="` + tenantContoso + `">Contoso</option>`, `<option value="` + tenantFabrikam + `">Fabrikam</option>`, `type="file" required`} {
		if !strings.Contains(all, want) {
			t.Errorf("admin's form on every tenant lacks %s:\n%s", want, all)
		}
	}
	picked := string(f.do(t, admin, "GET", SectionPath+"?tenant_id="+tenantFabrikam, "", nil).body)
	if !strings.Contains(picked, `action="/partials/dmarc-reports/upload?tenant_id=`+tenantFabrikam+`"`) || strings.Contains(picked, "<select") {
		t.Errorf("form on Fabrikam's page:\n%s", picked)
	}
	if one := string(f.do(t, userContoso, "GET", SectionPath, "", nil).body); strings.Contains(one, "<select") || strings.Contains(one, "tenant_id=") {
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
