package e2e

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

// TestDMARCReportsInBrowser signs in as a standard user of Contoso Retail
// and uses the DMARC page's report section as a person would: a file
// dropped on the upload form that is no report is refused with the
// parser's reason, an aggregate
// report picked in the upload form is stored, shows in the list over its
// days, opens its records, and is a duplicate the second time; the page
// logs no error and passes an axe-core scan in light and dark mode with
// the records open.
func TestDMARCReportsInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: dmarcPlugins(""), env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	waitStartupSync(t, h, admin, "dmarc")
	var domains struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
			Domain   string `json:"domain"`
		} `json:"items"`
	}
	h.get("/api/v1/dmarc/domains?limit=500", admin).json(t, &domains)
	contoso := ""
	for _, d := range domains.Items {
		if d.Domain == "contoso-retail.example" {
			contoso = d.TenantID
		}
	}
	if contoso == "" {
		t.Fatalf("no tenant watches contoso-retail.example: %+v", domains.Items)
	}
	report, err := filepath.Abs(filepath.Join("..", "..", "plugins", "dmarc", "reports", "testdata", "google-contoso-retail.xml"))
	if err != nil {
		t.Fatal(err)
	}

	tab := b.NewTab(h.url)
	page := "/dmarc?tenant_id=" + url.QueryEscape(contoso)
	signInThroughIdP(t, h, tab, page, world.DemoContosoUser)
	submit := func() { tab.Click(`#dmarc-reports form[enctype="multipart/form-data"] button[type="submit"]`) }
	upload := func(file string) {
		t.Helper()
		tab.Run("pick "+filepath.Base(file), chromedp.WaitVisible("#dmarc-upload-file", chromedp.ByQuery),
			chromedp.SetUploadFiles("#dmarc-upload-file", []string{file}, chromedp.ByQuery))
		submit()
	}

	// A file dropped on the drop zone is the form's, as a picked one is.
	tab.WaitVisible(".dropzone")
	var dropped int
	tab.Eval(`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(["<html>not a report</html>"], "not-a-report.xml", {type: "text/xml"}));
		document.querySelector(".dropzone").dispatchEvent(new DragEvent("drop", {bubbles: true, cancelable: true, dataTransfer: dt}));
		return document.querySelector("#dmarc-upload-file").files.length;
	})()`, &dropped)
	if dropped != 1 {
		t.Fatalf("the drop zone took %d files", dropped)
	}
	submit()
	refused := tab.WaitText("#dmarc-reports .alert", func(s string) bool { return strings.Contains(s, "Not uploaded") })
	if !strings.Contains(refused, "feedback") {
		t.Errorf("the refusal does not say what the file lacks: %q", refused)
	}
	upload(report)
	stored := tab.WaitText(`#dmarc-reports [role="status"]`, func(s string) bool { return strings.Contains(s, "Stored: report 5871604411926393155") })
	if !strings.Contains(stored, "520 messages, 500 passed DMARC, 20 failed") {
		t.Errorf("the upload's outcome: %q", stored)
	}
	// Its own days, whatever today is.
	tab.Click(`#dmarc-reports [role="status"] a`)
	tab.WaitText("#dmarc-reports", func(s string) bool { return strings.Contains(s, "Pass rate, 2026-11-20 to 2026-11-20") })
	list := tab.WaitText(`#dmarc-reports [aria-label="Aggregate reports, newest first, scrollable"]`, func(s string) bool { return strings.Contains(s, "google.com") })
	for _, want := range []string{"contoso-retail.example", "2026-11-20", "520", "96.15 %", "4 records"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q: %q", want, list)
		}
	}
	var from string
	tab.Eval(`document.querySelector("#dmarc-range-from").value`, &from)
	if from != "2026-11-20" {
		t.Errorf("the range shown begins %q, not on the report's day", from)
	}

	tab.Click(`#dmarc-reports a[hx-target="#dmarc-report-detail"]`)
	records := tab.WaitText("#dmarc-report-detail", func(s string) bool { return strings.Contains(s, "40.107.22.91") })
	for _, want := range []string{"Report 5871604411926393155 from google.com", "203.0.113.45", "reject", "DKIM contoso-retail.example (selector1): pass"} {
		if !strings.Contains(records, want) {
			t.Errorf("the report's records lack %q: %q", want, records)
		}
	}
	for _, scheme := range []string{"light", "dark"} {
		tab.ColorScheme(scheme)
		for _, v := range tab.Axe() {
			t.Errorf("DMARC page with a report's records, %s: %s", scheme, v)
		}
	}

	upload(report)
	tab.WaitText(`#dmarc-reports [role="status"]`, func(s string) bool { return strings.Contains(s, "Already stored: report 5871604411926393155") })
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("the page logged problems: %v", p)
	}
}
