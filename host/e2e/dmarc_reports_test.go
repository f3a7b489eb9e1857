package e2e

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// dmarcReportsPlugins declares the dmarc plugin reading aggregate reports
// from dir (none when empty).
func dmarcReportsPlugins(dir string) string {
	config := ""
	if dir != "" {
		config = fmt.Sprintf("    reports_dir = %q\n", dir)
	}
	return fmt.Sprintf("plugin \"dmarc\" {\n  binary = %q\n  cloud_credential = true\n  config {\n%s  }\n}\n", filepath.Join(binDir, "plugins", "dmarc"), config)
}

// dmarcReportSample is one of the report package's samples.
func dmarcReportSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "dmarc", "reports", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dmarcReportsWorld: Brand A sends mail as contoso-retail.example and
// northwind-travel.example, Brand B as fabrikam-foods.example.
func dmarcReportsWorld(t *testing.T) string {
	return writeWorld(t, world.World{Tenants: []world.Tenant{
		{Name: "Brand A", DirectoryTenantID: "aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa", Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}},
			AccessGroups: []string{"grp-a"}, Domains: []string{"contoso-retail.example", "northwind-travel.example"}},
		{Name: "Brand B", DirectoryTenantID: "bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb", Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}},
			AccessGroups: []string{"grp-b"}, Domains: []string{"fabrikam-foods.example"}},
	}})
}

type dmarcReportList struct {
	Items []struct {
		ID       int64  `json:"id"`
		TenantID string `json:"tenant_id"`
		OrgName  string `json:"org_name"`
		Source   string `json:"source"`
		Messages int64  `json:"messages"`
	} `json:"items"`
	Total int `json:"total"`
}

type dmarcUpload struct {
	Status string `json:"status"`
	Report struct {
		ID       int64  `json:"id"`
		TenantID string `json:"tenant_id"`
	} `json:"report"`
}

// TestDMARCReportsThroughTheHost: reports reach the plugin's tables from
// its folder and through uploads, on both databases; the statistics and
// the DMARC page's section show a tenant's own; a user of Brand A is
// refused Brand B's report (404, through the API and the page's records),
// an upload for Brand B (403, through the API and the page's form) and one for
// a domain not its own (422); a bound answers 422.
func TestDMARCReportsThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testDMARCReportsThroughTheHost(t, dialect) })
	}
}

func testDMARCReportsThroughTheHost(t *testing.T, dialect string) {
	dir := t.TempDir()
	zipped := zipOne(t, "google.com!contoso-retail.example!1795132800!1795219199.xml", dmarcReportSample(t, "google-contoso-retail.xml"))
	for name, b := range map[string][]byte{
		"google.com!contoso-retail.example!1795132800!1795219199.zip": zipped,
		"yahoo.xml":   dmarcReportSample(t, "yahoo-northwind-travel.xml"),
		"garbage.xml": []byte("<html>not a report</html>"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := hostOpts{pluginsHCL: dmarcReportsPlugins(dir), env: map[string]string{"STEWARD_SIM_WORLD": dmarcReportsWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "dmarc")
	waitStartupSync(t, h, admin, "dmarc_reports")
	f := &fixture{h: h, admin: admin}
	// The start-up ingest may have run before the domains were known; the
	// files it could not place are read again.
	if r := f.waitRun(t, f.trigger(t, "dmarc_reports")); r.Status != "completed" {
		t.Fatalf("ingest %+v", r)
	}
	var list dmarcReportList
	h.get("/api/v1/dmarc/reports?sort_by=org_name&sort_order=asc", admin).json(t, &list)
	if list.Total != 2 || list.Items[0].OrgName != "Yahoo" || list.Items[1].OrgName != "google.com" || list.Items[0].Source != "folder" {
		t.Fatalf("reports from the folder %+v", list)
	}
	tenantA := list.Items[0].TenantID
	var files []struct {
		FileName string `json:"file_name"`
		Status   string `json:"status"`
		Reason   string `json:"reason"`
	}
	h.get("/api/v1/dmarc/reports/files", admin).json(t, &files)
	failed := 0
	for _, fl := range files {
		if fl.Status == "failed" && fl.FileName == "garbage.xml" && strings.Contains(fl.Reason, "root element is <html>") {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("ingested files %+v, want garbage.xml failed naming its root", files)
	}

	var tenants []struct{ ID, Name string }
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	tenantB := ""
	for _, tn := range tenants {
		if tn.Name == "Brand B" {
			tenantB = tn.ID
		}
	}
	microsoft := dmarcReportSample(t, "microsoft-fabrikam-foods.xml")
	var up dmarcUpload
	r := h.do(http.MethodPost, "/api/v1/dmarc/reports?tenant_id="+tenantB, admin, bytes.NewReader(gzipped(t, microsoft)), "Content-Type", "application/gzip")
	r.json(t, &up)
	if r.status != http.StatusCreated || up.Status != "stored" || up.Report.TenantID != tenantB {
		t.Fatalf("admin uploads Brand B's report: %d %s", r.status, r.body)
	}
	r = h.do(http.MethodPost, "/api/v1/dmarc/reports?tenant_id="+tenantB, admin, bytes.NewReader(microsoft), "Content-Type", "application/xml")
	if r.json(t, &up); r.status != http.StatusOK || up.Status != "duplicate" {
		t.Errorf("the same report again: %d %s", r.status, r.body)
	}

	u := tenancy.User{DirectoryTenantID: "aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa", Subject: "oid-a-user", Email: "a-user@contoso-retail.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(t.Context(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	if r := h.get("/api/v1/dmarc/reports/"+strconv.FormatInt(up.Report.ID, 10), tokA); r.status != http.StatusNotFound || strings.Contains(string(r.body), "fabrikam") {
		t.Errorf("Brand B's report for Brand A's user: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPost, "/api/v1/dmarc/reports?tenant_id="+tenantB, tokA, bytes.NewReader(microsoft), "Content-Type", "application/xml"); r.status != http.StatusForbidden {
		t.Errorf("Brand A's user uploads for Brand B: %d %s", r.status, r.body)
	}
	r = h.do(http.MethodPost, "/api/v1/dmarc/reports", tokA, bytes.NewReader(microsoft), "Content-Type", "application/xml")
	expectInvalid(t, r, "body")
	if !strings.Contains(string(r.body), "fabrikam-foods.example, which is not a domain of the tenant") {
		t.Errorf("upload of another domain's report: %s", r.body)
	}
	r = h.do(http.MethodPost, "/api/v1/dmarc/reports", tokA, strings.NewReader(`<!DOCTYPE feedback [<!ENTITY a "aaaa">]><feedback>&a;</feedback>`), "Content-Type", "application/xml")
	expectInvalid(t, r, "body")

	// The host's request limit (8 MiB by default) applies before the
	// plugin's own 10 MiB: a larger upload is refused whole by the host.
	r = h.do(http.MethodPost, "/api/v1/dmarc/reports", tokA, bytes.NewReader(make([]byte, 9<<20)), "Content-Type", "application/gzip")
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 9 MiB upload: %d %s, want 413 from the host", r.status, r.body)
	}

	h.get("/api/v1/dmarc/reports", tokA).json(t, &list)
	if list.Total != 2 || list.Items[0].TenantID != tenantA || list.Items[1].TenantID != tenantA {
		t.Errorf("Brand A's user lists %+v", list)
	}
	var stats struct {
		Messages int64 `json:"messages"`
		Failed   int64 `json:"failed"`
		Items    []struct {
			Key    string `json:"key"`
			Failed int64  `json:"failed"`
		} `json:"items"`
	}
	h.get("/api/v1/dmarc/reports/stats?group_by=source_ip&from=2026-11-20&to=2026-11-21", tokA).json(t, &stats)
	if stats.Messages != 645 || stats.Failed != 25 || len(stats.Items) != 5 || stats.Items[0].Key != "203.0.113.45" || stats.Items[0].Failed != 22 {
		t.Errorf("Brand A's sources %+v", stats)
	}
	h.get("/api/v1/dmarc/reports/stats?group_by=disposition&from=2026-11-20&to=2026-11-21", admin).json(t, &stats)
	if stats.Messages != 945 || stats.Failed != 65 || stats.Items[0].Key != "quarantine" {
		t.Errorf("every tenant's dispositions %+v", stats)
	}
	if r := h.get("/api/v1/dmarc/reports/stats?tenant_ids="+tenantB, tokA); r.status != http.StatusForbidden {
		t.Errorf("Brand B's statistics for Brand A's user: %d", r.status)
	}
	expectInvalid(t, h.get("/api/v1/dmarc/reports/stats?limit=1001", tokA), "query.limit")
	expectInvalid(t, h.get("/api/v1/dmarc/reports/stats?from=2025-01-01&to=2026-11-21", tokA), "query.from")
	expectInvalid(t, h.get("/api/v1/dmarc/reports?limit=0", tokA), "query.limit")
	if r := h.get("/api/v1/dmarc/reports/files", tokA); r.status != http.StatusForbidden {
		t.Errorf("Brand A's user reads the ingest's files: %d", r.status)
	}

	// The DMARC page's report section is Brand A's only.
	if r := h.get("/partials/dmarc-reports", tokA); r.status != http.StatusOK || !strings.Contains(string(r.body), "203.0.113.45") || strings.Contains(string(r.body), "192.0.2.33") {
		t.Errorf("failing sources for Brand A's user: %d %s", r.status, r.body)
	}
	if r := h.get("/partials/dmarc-reports?tenant_id="+tenantB, tokA); r.status != http.StatusForbidden {
		t.Errorf("Brand B's report section for Brand A's user: %d", r.status)
	}
	detailB := "/partials/dmarc-reports/" + strconv.FormatInt(up.Report.ID, 10)
	if r := h.get(detailB, tokA); r.status != http.StatusNotFound || strings.Contains(string(r.body), "fabrikam") {
		t.Errorf("Brand B's report's records for Brand A's user: %d %s", r.status, r.body)
	}
	if r := h.get(detailB+"?tenant_id="+tenantB, tokA); r.status != http.StatusForbidden {
		t.Errorf("Brand B's report's records on Brand B's page for Brand A's user: %d", r.status)
	}
	if r := h.get(detailB, admin); r.status != http.StatusOK || !strings.Contains(string(r.body), "fabrikam-foods.example") {
		t.Errorf("Brand B's report's records for the admin: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPost, "/partials/dmarc-reports/upload?tenant_id="+tenantB, tokA, bytes.NewReader(microsoft), "Content-Type", "multipart/form-data; boundary=x"); r.status != http.StatusForbidden {
		t.Errorf("Brand A's user uploads for Brand B through the page's form: %d %s", r.status, r.body)
	}
}

// zipOne is a zip archive of one file, as reporters send a report.
func zipOne(t *testing.T, name string, content []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(name)
	if err == nil {
		_, err = w.Write(content)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gzipped is content compressed with gzip.
func gzipped(t *testing.T, content []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	gw := gzip.NewWriter(&b)
	if _, err := gw.Write(content); err != nil || gw.Close() != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
