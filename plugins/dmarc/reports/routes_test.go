package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var (
	admin        = sdk.Principal{ID: "admin-1", IsAdmin: true, Kind: "user", TenantIDs: []string{tenantContoso, tenantFabrikam}}
	userContoso  = sdk.Principal{ID: "user-c", Kind: "user", TenantIDs: []string{tenantContoso}}
	userFabrikam = sdk.Principal{ID: "user-f", Kind: "user", TenantIDs: []string{tenantFabrikam}}
)

// domains is the tenants' domains in the tests.
var domains = map[string]string{
	"contoso-retail.example":   tenantContoso,
	"northwind-travel.example": tenantContoso,
	"fabrikam-foods.example":   tenantFabrikam,
}

func tenantOf(_ context.Context, domain string) (string, bool, error) {
	id, ok := domains[domain]
	return id, ok, nil
}

type fixture struct {
	h     *plugintest.Harness
	store *Store
}

// newFixture serves the routes through the plugin protocol on a migrated
// database, with small limits so that each bound is quick to cross.
func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, Migrations(), "plugin_dmarc_migrations"); err != nil {
		t.Fatal(err)
	}
	st := &Store{DB: db}
	handlers := &Handlers{}
	p := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		*handlers = Handlers{Store: st, TenantOf: tenantOf, Audit: env.Host, Logger: env.Logger, Tenants: env.Host,
			Limits: Limits{MaxCompressed: 64 << 10, MaxDecompressed: 256 << 10, MaxRecords: 50},
			Now:    func() time.Time { return time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC) }}
		return &sdk.Plugin{Routes: append(handlers.Routes(), handlers.FormRoutes()...), Fragments: handlers.Fragments("dmarc")}, nil
	}
	return &fixture{h: plugintest.New(t, sdk.Definition{Name: "dmarc"}, p, plugintest.Options{Tenants: []sdk.Tenant{
		{ID: tenantContoso, Name: "Contoso", IsActive: true}, {ID: tenantFabrikam, Name: "Fabrikam", IsActive: true}}}), store: st}
}

func eachFixture(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, newFixture(t, dialect)) })
	}
}

type answer struct {
	status int
	body   []byte
}

func (f *fixture) do(t *testing.T, who sdk.Principal, method, target, contentType string, body []byte) answer {
	t.Helper()
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp := f.h.Do(req, who)
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, b}
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %d %s: %v", a.status, a.body, err)
	}
}

// problem checks a refusal: its status, and for a 422 the location and
// part of the message.
func (a answer) problem(t *testing.T, name string, status int, location, msg string) {
	t.Helper()
	var p sdk.Problem
	if a.status != status || json.Unmarshal(a.body, &p) != nil {
		t.Errorf("%s: %d %s, want %d", name, a.status, a.body, status)
		return
	}
	if location != "" && (len(p.Errors) == 0 || p.Errors[0].Location != location) {
		t.Errorf("%s: errors %+v, want location %s", name, p.Errors, location)
	}
	if !strings.Contains(p.Error()+errorsText(p), msg) {
		t.Errorf("%s: %q, want it to say %q", name, p.Error(), msg)
	}
}

func errorsText(p sdk.Problem) string {
	var b strings.Builder
	for _, e := range p.Errors {
		b.WriteString(" " + e.Message)
	}
	return b.String()
}

func form(t *testing.T, fields map[string]string, fileName string, file []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := w.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(file); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), buf.Bytes()
}

func TestUpload(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		google := sample(t, "google-contoso-retail.xml")
		// A user of one tenant need not name it.
		a := f.do(t, userContoso, "POST", reportsPath, "application/gzip", gz(t, google))
		var up UploadResult
		a.decode(t, &up)
		if a.status != http.StatusCreated || up.Status != "stored" || up.Report.TenantID != tenantContoso || up.Report.Messages != 520 ||
			up.Report.Failed != 20 || *up.Report.PassPercent != 96.15 || up.Report.Source != SourceUpload || len(up.Report.SHA256) != 64 ||
			up.Warnings == nil || len(up.Warnings) != 0 {
			t.Fatalf("upload: %d %s", a.status, a.body)
		}
		if entries := f.h.AuditEntries(); len(entries) != 1 || entries[0].Action != "dmarc_report.upload.success" || entries[0].TenantID != tenantContoso {
			t.Errorf("audit entries %+v", entries)
		}
		// The same report again, as a zip this time: a duplicate, not stored.
		a = f.do(t, admin, "POST", reportsPath+"?tenant_id="+tenantContoso, "application/zip", zipOf(t, "r.xml", google))
		var dup UploadResult
		a.decode(t, &dup)
		if a.status != http.StatusOK || dup.Status != "duplicate" || dup.Report.ID != up.Report.ID || dup.Warnings == nil || len(dup.Warnings) != 0 {
			t.Errorf("duplicate upload: %d %s", a.status, a.body)
		}
		if n, _ := f.store.DB.NewSelect().TableExpr("dmarc_report_records").Count(context.Background()); n != 4 {
			t.Errorf("%d records after a duplicate, want 4", n)
		}
		// A multipart form naming the tenant in a field.
		ct, body := form(t, map[string]string{"tenant_id": tenantFabrikam}, "enterprise.protection.outlook.com!fabrikam-foods.example!1795132800!1795219200.xml.gz",
			gz(t, sample(t, "microsoft-fabrikam-foods.xml")))
		a = f.do(t, admin, "POST", reportsPath, ct, body)
		a.decode(t, &up)
		if a.status != http.StatusCreated || up.Report.TenantID != tenantFabrikam || up.Report.FileName == "" || up.Report.Policy.P != "quarantine" {
			t.Errorf("multipart upload: %d %s", a.status, a.body)
		}
	})
}

// TestUploadRefusals: every bound and mistake is refused naming it, and
// nothing is stored.
func TestUploadRefusals(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		google := sample(t, "google-contoso-retail.xml")
		onlyFile := func(b []byte) (string, []byte) {
			return form(t, map[string]string{"tenant_id": tenantContoso}, "r.xml", b)
		}
		mpCT, mpBody := onlyFile([]byte(billionLaughs))
		noFileCT, noFileBody := form(t, map[string]string{"tenant_id": tenantContoso}, "", nil)
		badIPCT, badIPBody := onlyFile(bytes.Replace(google, []byte("40.107.22.91"), []byte("not-an-ip"), 1))
		foreignCT, foreignBody := form(t, map[string]string{"tenant_id": tenantFabrikam}, "r.xml", google)
		longCT, longBody := form(t, map[string]string{"tenant_id": strings.Repeat("x", 65)}, "r.xml", google)
		emptyTenantCT, emptyTenantBody := form(t, map[string]string{"tenant_id": " "}, "r.xml", google)
		for _, c := range []struct {
			name     string
			who      sdk.Principal
			target   string
			ct       string
			body     []byte
			status   int
			location string
			msg      string
		}{
			{"foreign tenant", userContoso, "?tenant_id=" + tenantFabrikam, "application/xml", google, 403, "", "no access"},
			{"foreign tenant in a form", userContoso, "", foreignCT, foreignBody, 403, "", "no access"},
			{"no tenant, several seen", admin, "", "application/xml", google, 422, "query.tenant_id", "is required"},
			{"tenant too long", admin, "?tenant_id=" + strings.Repeat("x", 65), "application/xml", google, 422, "query.tenant_id", ""},
			{"domain of another tenant", admin, "?tenant_id=" + tenantFabrikam, "application/xml", google, 422, "body", "contoso-retail.example, which is not a domain of the tenant"},
			{"json", userContoso, "", "application/json", []byte(`{}`), 422, "header.Content-Type", "application/json"},
			{"json for a foreign tenant", userContoso, "?tenant_id=" + tenantFabrikam, "application/json", []byte(`{}`), 403, "", "no access"},
			{"no content type", userContoso, "", "", google, 422, "header.Content-Type", ""},
			{"no body", userContoso, "", "application/xml", nil, 422, "body", "is required"},
			{"empty tenant in a form, several seen", admin, "", emptyTenantCT, emptyTenantBody, 422, "body.tenant_id", "is required"},
			{"too large", userContoso, "", "application/xml", append(bytes.Repeat([]byte(" "), 64<<10), google...), 413, "", "larger than 65536 bytes"},
			{"expands too far", userContoso, "", "application/gzip", gz(t, append(google, bytes.Repeat([]byte(" "), 256<<10)...)), 413, "", "expands more than 100 times"},
			{"billion laughs", userContoso, "", "application/xml", []byte(billionLaughs), 422, "body", "document type declaration"},
			{"two members", userContoso, "", "application/zip", zipOf(t, "a.xml", google, "b.xml", google), 422, "body", "holds 2 files"},
			{"malformed", userContoso, "", "application/xml", google[:300], 422, "body", "malformed"},
			{"wrong root", userContoso, "", "application/xml", []byte("<html><body/></html>"), 422, "body", "root element is <html>"},
			{"bad field", userContoso, "", "application/xml", bytes.Replace(google, []byte("<count>412</count>"), []byte("<count>-1</count>"), 1), 422, "body", "feedback/record[1]/row/count: is -1"},
			{"tenant too long in a form", admin, "", longCT, longBody, 422, "body.tenant_id", "longer than 64"},
			{"no file in a form", userContoso, "", noFileCT, noFileBody, 422, "body.file", "is required"},
			{"bad ip in a form", userContoso, "", badIPCT, badIPBody, 422, "body.file", `source_ip: is "not-an-ip"`},
			{"billion laughs in a form", userContoso, "", mpCT, mpBody, 422, "body.file", "document type declaration"},
			{"too many records", userContoso, "", "application/xml", []byte(withRecords(t, 52)), 422, "body", "more than 50 records"},
		} {
			f.do(t, c.who, "POST", reportsPath+c.target, c.ct, c.body).problem(t, c.name, c.status, c.location, c.msg)
		}
		if n, _ := f.store.DB.NewSelect().TableExpr("dmarc_reports").Count(context.Background()); n != 0 {
			t.Errorf("%d reports stored by refused uploads", n)
		}
	})
}

func seedThroughAPI(t *testing.T, f *fixture) (contoso, fabrikam int64) {
	t.Helper()
	ids := []int64{}
	for _, s := range []struct{ name, tenant string }{
		{"google-contoso-retail.xml", tenantContoso},
		{"microsoft-fabrikam-foods.xml", tenantFabrikam},
		{"yahoo-northwind-travel.xml", tenantContoso},
	} {
		a := f.do(t, admin, "POST", reportsPath+"?tenant_id="+s.tenant, "application/xml", sample(t, s.name))
		var up UploadResult
		a.decode(t, &up)
		if a.status != http.StatusCreated {
			t.Fatalf("seed %s: %d %s", s.name, a.status, a.body)
		}
		ids = append(ids, up.Report.ID)
	}
	return ids[0], ids[1]
}

func TestReadRoutes(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		contoso, fabrikam := seedThroughAPI(t, f)

		var list List
		f.do(t, userContoso, "GET", reportsPath, "", nil).decode(t, &list)
		if list.Total != 2 || len(list.Items) != 2 || list.Items[0].OrgName != "Yahoo" || list.Limit != 50 {
			t.Errorf("Contoso's list %+v", list)
		}
		f.do(t, admin, "GET", reportsPath+"?sort_by=messages&sort_order=asc&limit=1&offset=2", "", nil).decode(t, &list)
		if list.Total != 3 || len(list.Items) != 1 || list.Items[0].OrgName != "google.com" {
			t.Errorf("admin's third page %+v", list)
		}
		f.do(t, admin, "GET", reportsPath+"?org_name=Enterprise+Outlook&domain=FABRIKAM-foods.example&from=2026-11-20&to=2026-11-20", "", nil).decode(t, &list)
		if list.Total != 1 || list.Items[0].ID != fabrikam {
			t.Errorf("filtered list %+v", list)
		}
		f.do(t, userContoso, "GET", reportsPath+"?tenant_ids="+tenantFabrikam, "", nil).problem(t, "foreign list", 403, "", "")
		f.do(t, userContoso, "GET", reportsPath+"?tenant_ids="+tenantContoso+","+tenantFabrikam, "", nil).problem(t, "list with a foreign tenant", 403, "", "")

		var detail Detail
		f.do(t, userContoso, "GET", reportsPath+"/"+strconv.FormatInt(contoso, 10), "", nil).decode(t, &detail)
		if detail.OrgName != "google.com" || len(detail.Records) != 4 || detail.Records[3].HeaderFrom != "shop.contoso-retail.example" ||
			detail.Records[3].AuthDKIM[0].Selector != "s1" || detail.Records[2].AuthDKIM == nil || len(detail.Records[2].AuthDKIM) != 0 {
			t.Errorf("detail %+v", detail)
		}
		f.do(t, userContoso, "GET", reportsPath+"/"+strconv.FormatInt(fabrikam, 10), "", nil).problem(t, "another tenant's report", 404, "", "no report")
		f.do(t, userContoso, "GET", reportsPath+"/999999", "", nil).problem(t, "no report", 404, "", "")

		var st StatsView
		f.do(t, admin, "GET", reportsPath+"/stats?from=2026-11-20&to=2026-11-21", "", nil).decode(t, &st)
		if st.GroupBy != "day" || st.Messages != 945 || st.Failed != 65 || *st.PassPercent != 93.12 || len(st.Items) != 2 || st.Items[0].Failed != 60 {
			t.Errorf("daily stats %+v", st)
		}
		f.do(t, userContoso, "GET", reportsPath+"/stats?group_by=source_ip&from=2026-11-20&to=2026-11-21&limit=1", "", nil).decode(t, &st)
		if st.Messages != 645 || st.Groups != 5 || len(st.Items) != 1 || st.Items[0].Key != "203.0.113.45" || st.Items[0].Failed != 22 {
			t.Errorf("Contoso's sources %+v", st)
		}
		f.do(t, admin, "GET", reportsPath+"/stats?group_by=alignment&domain=fabrikam-foods.example&from=2026-11-01&to=2026-11-30", "", nil).decode(t, &st)
		if st.Messages != 300 || len(st.Items) != 3 || st.Items[0].Key != "none" || st.Items[0].Messages != 40 {
			t.Errorf("Fabrikam's alignment %+v", st)
		}
		// The default range is the 30 days to today (25 November).
		f.do(t, userFabrikam, "GET", reportsPath+"/stats?group_by=disposition", "", nil).decode(t, &st)
		if st.From != "2026-10-27" || st.To != "2026-11-25" || st.Messages != 300 || st.Items[0].Key != "quarantine" {
			t.Errorf("Fabrikam's dispositions %+v", st)
		}
		f.do(t, userFabrikam, "GET", reportsPath+"/stats?tenant_ids="+tenantContoso, "", nil).problem(t, "foreign stats", 403, "", "")
	})
}

func TestReadRouteBounds(t *testing.T) {
	f := newFixture(t, store.DialectSQLite)
	for _, c := range []struct{ target, location string }{
		{reportsPath + "?limit=0", "query.limit"},
		{reportsPath + "?limit=501", "query.limit"},
		{reportsPath + "?offset=-1", "query.offset"},
		{reportsPath + "?offset=1000001", "query.offset"},
		{reportsPath + "?sort_by=size", "query.sort_by"},
		{reportsPath + "?sort_order=up", "query.sort_order"},
		{reportsPath + "?from=2026-13-01", "query.from"},
		{reportsPath + "?from=2026-11-20&to=2026-11-19", "query.to"},
		{reportsPath + "?domain=" + strings.Repeat("a", 254), "query.domain"},
		{reportsPath + "?org_name=" + strings.Repeat("a", 256), "query.org_name"},
		{reportsPath + "/stats?group_by=week", "query.group_by"},
		{reportsPath + "/stats?limit=0", "query.limit"},
		{reportsPath + "/stats?limit=1001", "query.limit"},
		{reportsPath + "/stats?to=yesterday", "query.to"},
		{reportsPath + "/stats?from=2026-11-20&to=2026-11-19", "query.to"},
		{reportsPath + "/stats?from=2025-11-24&to=2026-11-25", "query.from"},
		{reportsPath + "/stats?to=2025-11-25", ""},
		{reportsPath + "/0", "path.id"},
		{reportsPath + "/files?limit=0", "query.limit"},
		{reportsPath + "/files?limit=1001", "query.limit"},
		{reportsPath + "/stats?domain=" + strings.Repeat("a", 254), "query.domain"},
		{reportsPath + "/stats?tenant_ids=" + strings.Repeat("a", 65), "query.tenant_ids[0]"},
	} {
		a := f.do(t, admin, "GET", c.target, "", nil)
		if c.location == "" {
			if a.status != http.StatusOK {
				t.Errorf("%s: %d %s", c.target, a.status, a.body)
			}
			continue
		}
		a.problem(t, c.target, 422, c.location, "")
	}
	if a := f.do(t, userContoso, "GET", reportsPath+"/files", "", nil); a.status != http.StatusForbidden {
		t.Errorf("a user reads the ingest's files: %d", a.status)
	}
}

// withoutOrgName is the Google sample as some reporters send it: no
// org_name, and an email of another domain than the sample's.
func withoutOrgName(t *testing.T) string {
	t.Helper()
	doc := string(sample(t, "google-contoso-retail.xml"))
	for old, new := range map[string]string{
		"<org_name>google.com</org_name>":                 "",
		"<email>noreply-dmarc-support@google.com</email>": "<email>noreply-dmarc@reports.example.net</email>",
	} {
		if !strings.Contains(doc, old) {
			t.Fatalf("sample lacks %q", old)
		}
		doc = strings.Replace(doc, old, new, 1)
	}
	return doc
}

// TestUploadWithoutOrgName: a report without org_name is stored with the
// reporter taken from its email, else unknown, and a warning saying so;
// the reporter and report id still tell duplicates apart.
func TestUploadWithoutOrgName(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		noOrg := withoutOrgName(t)
		upload := func(name, ct string, body []byte, status int, result, reporter string) UploadResult {
			t.Helper()
			a := f.do(t, userContoso, "POST", reportsPath, ct, body)
			var up UploadResult
			a.decode(t, &up)
			if a.status != status || up.Status != result || up.Report.OrgName != reporter || up.Report.ReportID == "" ||
				len(up.Warnings) != 1 || !strings.HasPrefix(up.Warnings[0], "feedback/report_metadata/org_name: is empty or missing") ||
				!strings.Contains(up.Warnings[0], "recorded as "+reporter) {
				t.Errorf("%s: %d %s, want %d %s by %s with a warning", name, a.status, a.body, status, result, reporter)
			}
			return up
		}
		first := upload("no org_name", "application/xml", []byte(noOrg), http.StatusCreated, "stored", "reports.example.net")
		if first.Report.Email != "noreply-dmarc@reports.example.net" || first.Report.RecordCount != 4 {
			t.Errorf("stored %+v", first.Report)
		}
		var list List
		f.do(t, userContoso, "GET", reportsPath+"?org_name=reports.example.net", "", nil).decode(t, &list)
		if list.Total != 1 || list.Items[0].ID != first.Report.ID || list.Items[0].OrgName != "reports.example.net" {
			t.Errorf("listed by its reporter %+v", list)
		}
		again := upload("no org_name again, gzipped", "application/gzip", gz(t, []byte(noOrg)), http.StatusOK, "duplicate", "reports.example.net")
		if again.Report.ID != first.Report.ID {
			t.Errorf("the duplicate names report %d, want %d", again.Report.ID, first.Report.ID)
		}
		otherID := strings.Replace(noOrg, "<report_id>5871604411926393155</report_id>", "<report_id>5871604411926393156</report_id>", 1)
		upload("no org_name, another report id", "application/xml", []byte(otherID), http.StatusCreated, "stored", "reports.example.net")

		anon := strings.Replace(noOrg, "<email>noreply-dmarc@reports.example.net</email>", "", 1)
		anonFirst := upload("neither org_name nor email", "application/xml", []byte(anon), http.StatusCreated, "stored", Unknown)
		if anonFirst.Report.ID == first.Report.ID || anonFirst.Report.Email != "" {
			t.Errorf("the report of no reporter %+v", anonFirst.Report)
		}
		upload("neither, again", "application/xml", []byte(anon), http.StatusOK, "duplicate", Unknown)
		upload("neither, another report id", "application/xml",
			[]byte(strings.Replace(anon, "<report_id>5871604411926393155</report_id>", "<report_id>other-1</report_id>", 1)), http.StatusCreated, "stored", Unknown)

		f.do(t, userContoso, "GET", reportsPath+"?sort_by=org_name&sort_order=asc", "", nil).decode(t, &list)
		if list.Total != 4 || list.Items[0].OrgName != "reports.example.net" || list.Items[3].OrgName != Unknown {
			t.Errorf("Contoso's reports %+v", list)
		}
		if entries := f.h.AuditEntries(); len(entries) != 4 {
			t.Errorf("%d audit entries, want one per stored report", len(entries))
		}
	})
}

// TestUploadDateRanges: a long date range is stored with a warning; a
// range that cannot be real is refused, its dates written as dates.
func TestUploadDateRanges(t *testing.T) {
	eachFixture(t, func(t *testing.T, f *fixture) {
		google := string(sample(t, "google-contoso-retail.xml"))
		ranged := func(begin, end string) []byte {
			return []byte(strings.Replace(strings.Replace(google, "<begin>1795132800</begin>", "<begin>"+begin+"</begin>", 1), "<end>1795219199</end>", "<end>"+end+"</end>", 1))
		}
		// 1 October to 20 November 2026.
		a := f.do(t, userContoso, "POST", reportsPath, "application/xml", ranged("1790812800", "1795219199"))
		var up UploadResult
		a.decode(t, &up)
		if a.status != http.StatusCreated || up.Status != "stored" || !up.Report.DateBegin.Equal(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)) ||
			len(up.Warnings) != 1 || !strings.Contains(up.Warnings[0], "date_range: spans more than 31 days, from 2026-10-01T00:00:00Z to 2026-11-20T23:59:59Z") {
			t.Errorf("a long range: %d %s", a.status, a.body)
		}
		for _, c := range []struct{ name, begin, end, msg string }{
			{"years ahead", "4102444800", "4102531199", "date_range/begin: is 2100-01-01T00:00:00Z, more than a day after now ("},
			{"ending years ahead", "1795132800", "4102531199", "date_range/end: is 2100-01-01T23:59:59Z, more than a day after now ("},
			{"ending before it begins", "1795132800", "1795046400", "date_range: ends (2026-11-19T00:00:00Z) before it begins (2026-11-20T00:00:00Z)"},
			{"the epoch", "0", "86399", "date_range/begin: is 1970-01-01T00:00:00Z, before 2012-01-01"},
			{"milliseconds", "1795132800000", "1795219199000", "date_range/begin: is not a date of the years 1 to 9999"},
		} {
			a := f.do(t, userContoso, "POST", reportsPath, "application/xml", ranged(c.begin, c.end))
			a.problem(t, c.name, http.StatusUnprocessableEntity, "body", c.msg)
			var p sdk.Problem
			a.decode(t, &p)
			if msg := p.Error() + errorsText(p); epochLike.MatchString(msg) {
				t.Errorf("%s: %q writes a date as seconds", c.name, msg)
			}
		}
		if n, _ := f.store.DB.NewSelect().TableExpr("dmarc_reports").Count(context.Background()); n != 1 {
			t.Errorf("%d reports stored, want the long range's only", n)
		}
	})
}
