package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

// screenshots is where the browser tests leave a picture of each page:
// docs/screenshots, which the README shows, under `make screenshots`
// (STEWARD_TEST_SCREENSHOTS), and otherwise a folder of the test's own, so
// that `make test` leaves the tracked pictures alone.
func screenshots(t *testing.T) string {
	if dir := os.Getenv("STEWARD_TEST_SCREENSHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

var idpOriginRE = regexp.MustCompile(`identity_provider=(https://127\.0\.0\.1:\d+)`)

// signInThroughIdP opens a page without a session, which sends the browser
// to sign in; it signs in as email on the simulated identity provider's
// account picker and comes back to the page.
func signInThroughIdP(t *testing.T, h *host, tab *browsertest.Tab, path, email string) {
	t.Helper()
	m := idpOriginRE.FindStringSubmatch(h.logs.String())
	if m == nil {
		t.Fatal("the host logged no identity provider")
	}
	tab.Allow(m[1])
	tab.Open(path, `form[action="/auth/login"] button`)
	if loc := tab.Location(); !strings.Contains(loc, "/login?next="+url.QueryEscape(path)) {
		t.Fatalf("a page without a session went to %s", loc)
	}
	tab.Click(`form[action="/auth/login"] button`)
	tab.Click(fmt.Sprintf(`a[href*="login_hint=%s"]`, url.QueryEscape(email)))
	tab.WaitVisible("#tenant-picker")
	if loc := tab.Location(); !strings.HasSuffix(loc, path) {
		t.Fatalf("signed in, the browser is at %s, not %s", loc, path)
	}
}

// TestUIInBrowser signs in through the simulated identity provider as an
// admin and as a standard user and uses the pages as a person would: the
// dashboard's fragments show the simulated cloud's numbers, the tenant
// picker scopes them, a standard user never sees another tenant's name, a
// request without the CSRF token is refused, an anomaly acknowledged with
// its button on the cost page leaves the list, the identity page shows the
// demo directories' MFA coverage, the compliance page shows the demo's
// compliance and, through its framework picker, a framework's controls,
// and the dashboard its compliance gauge, no page logs an error, and
// every page passes an axe-core scan in light and dark mode (the
// compliance page with its controls expanded), the framework report
// among them, which prints without the navigation and a page per category.
func TestUIInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	// The resources plugin runs from a copy that the test can break, so
	// that once killed it stays down.
	resources := filepath.Join(t.TempDir(), "resources")
	bin, err := os.ReadFile(filepath.Join(binDir, "plugins", "resources"))
	if err != nil || os.WriteFile(resources, bin, 0o755) != nil {
		t.Fatalf("copy the resources plugin: %v", err)
	}
	hcl := defaultPlugins() + strings.Replace(resourcesPlugins(), filepath.Join(binDir, "plugins", "resources"), resources, 1) + costPlugins("") + identityPlugins("") + compliancePlugins("") + dmarcPlugins("") +
		partnerPlugins(examplePartnerCatalogue(t))
	started := time.Now()
	// The walk opens every page twice (light and dark) with all its
	// fragments, faster than a person would: the default budget of 100
	// requests a minute is not what this test is about.
	h := startHost(t, hostOpts{pluginsHCL: hcl, env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoAdmin)
	stats := `[hx-get^="/partials/resource-stats"]`
	// The first sync runs at start-up; until it is done the card says so,
	// and a person reloads.
	var all string
	for deadline := time.Now().Add(60 * time.Second); ; {
		tab.Settle()
		if all = tab.Text(stats); strings.Contains(all, "Quotas") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
		tab.Open("/dashboard", "main")
	}
	t.Logf("the admin's dashboard showed the simulated cloud's quotas %s after the host was started", time.Since(started).Round(100*time.Millisecond))
	if !regexp.MustCompile(`\d`).MatchString(all) {
		t.Errorf("the quota card shows no number: %q", all)
	}
	tab.WaitText(`[hx-get^="/partials/sync-status-card"]`, func(s string) bool { return strings.Contains(s, "resources") })

	admin := h.login()
	var tenants []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	if len(tenants) < 3 {
		t.Fatalf("tenants %+v", tenants)
	}

	// Picking a tenant scopes every fragment to it.
	contoso := ""
	for _, tn := range tenants {
		if tn.Name == "Contoso Retail" {
			contoso = tn.ID
		}
	}
	// Contoso's brand colour accents the pages scoped to it.
	if r := h.do(http.MethodPatch, "/api/v1/tenants/"+contoso, admin, strings.NewReader(`{"brand_color":"#7B1FA2"}`), "Content-Type", "application/json"); r.status != http.StatusOK {
		t.Fatalf("set Contoso's brand colour: %d %s", r.status, r.body)
	}
	tab.Open("/dashboard?tenant_id="+url.QueryEscape(contoso), stats)
	var brand string
	tab.Eval(`getComputedStyle(document.documentElement).getPropertyValue("--brand").trim()`, &brand)
	if brand != "#7b1fa2" {
		t.Errorf("Contoso's dashboard has the brand colour %q", brand)
	}
	var got string
	tab.Eval(`document.querySelector("#tenant-picker").selectedOptions[0].textContent`, &got)
	if !strings.Contains(got, "Contoso") {
		t.Errorf("the picker shows %q selected", got)
	}
	fresh := tab.WaitText(`[hx-get^="/partials/tenant-sync-status"]`, func(s string) bool { return strings.Contains(s, "Contoso") })
	for _, tn := range tenants {
		if tn.ID != contoso && !strings.Contains("Contoso Retail", tn.Name) && strings.Contains(fresh, tn.Name) {
			t.Errorf("scoped to Contoso, the freshness card names %s", tn.Name)
		}
	}
	// The session keeps the pick for the pages after it: "All my tenants"
	// goes back to the walk's view of every tenant.
	tab.Open("/dashboard?tenant_id=", stats)

	// A request that changes state needs the session's CSRF token.
	var status int
	tab.Eval(`fetch("/api/v1/sync/resources", {method: "POST"}).then(r => r.status)`, &status)
	if status != 403 {
		t.Errorf("a sync without the CSRF token: %d", status)
	}
	tab.Eval(`fetch("/api/v1/sync/resources", {method: "POST", headers: {"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}}).then(r => r.status)`, &status)
	if status != 202 {
		t.Errorf("a sync with the CSRF token: %d", status)
	}

	// The sync status card reloads itself every 30 seconds: a mark put
	// into it is gone once it has. The mark goes into a dashboard of a
	// tab of its own, looked at again once the walk below is done, so the
	// test waits out the 30 seconds while it goes on.
	card := `[hx-get^="/partials/sync-status-card"]`
	refresh := b.NewTab(h.url)
	signInThroughIdP(t, h, refresh, "/dashboard", world.DemoAdmin)
	refresh.WaitVisible(card)
	var marked bool
	refresh.Eval(`(() => { const m = document.createElement("i"); m.id = "refresh-mark"; document.querySelector('`+card+`').append(m); return true })()`, &marked)
	markedAt := time.Now()

	// The cost page once the start-up costs sync has written the demo
	// world's year: its trend, and anomalies to acknowledge. Acknowledging
	// the first through its button reloads the list without it.
	costs := `[hx-get^="/costs"]`
	// Its anomalies are judged tenant by tenant as the sync goes: the
	// count is read once all are.
	waitStartupSync(t, h, admin, "costs")
	for deadline := time.Now().Add(90 * time.Second); ; {
		tab.Open("/costs", costs)
		tab.Settle()
		if strings.Contains(tab.Text(costs), "Daily cost in") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	countRE := regexp.MustCompile(`(\d+) of (\d+) anomalies not yet acknowledged`)
	before := countRE.FindStringSubmatch(tab.Text("#cost-anomalies"))
	if before == nil {
		t.Fatalf("the cost page shows no anomalies to acknowledge: %q", tab.Text(costs))
	}
	tab.Click("#cost-anomalies .cost-ack")
	total, _ := strconv.Atoi(before[2])
	want := strconv.Itoa(total - 1)
	// The list replaces itself: its text is read from the page's slot.
	tab.WaitText(costs, func(s string) bool {
		m := countRE.FindStringSubmatch(s)
		return m != nil && m[2] == want || strings.Contains(s, "No anomalies to acknowledge.")
	})

	// The identity page once the start-up identity sync has written the
	// demo world's directories: its gauges.
	identity := `[hx-get^="/identity"]`
	for deadline := time.Now().Add(60 * time.Second); ; {
		tab.Open("/identity", identity)
		tab.Settle()
		if strings.Contains(tab.Text(identity), "Accounts without MFA") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if text := tab.Text(identity); !strings.Contains(text, "MFA coverage in percent") {
		t.Errorf("the identity page shows no MFA trend: %q", text)
	}

	// The compliance page once the start-up compliance sync has written
	// the demo world's policy states: its trend, and NIST CSF's controls
	// picked with the framework picker, which reloads its section.
	compliance := `[hx-get^="/compliance"]`
	for deadline := time.Now().Add(60 * time.Second); ; {
		tab.Open("/compliance", compliance)
		tab.Settle()
		if strings.Contains(tab.Text(compliance), "Non-compliant policies") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if text := tab.Text(compliance); !strings.Contains(text, "Compliant resources in percent") || !strings.Contains(text, "Framework coverage") {
		t.Errorf("the compliance page shows no trend or framework coverage: %q", text)
	}
	var picked bool
	tab.Eval(`(() => { document.querySelector("#compliance-framework").value = "nist_csf"; return true })()`, &picked)
	tab.Click(`#compliance-frameworks button[type="submit"]`)
	tab.WaitText("#compliance-frameworks h3", func(s string) bool { return strings.Contains(s, "NIST Cybersecurity Framework") })
	// The dashboard places the gauge in its slot.
	gauge := `[hx-get^="/partials/compliance-gauge"]`
	tab.Open("/dashboard", gauge)
	tab.Settle()
	if text := tab.Text(gauge); !strings.Contains(text, "Non-compliant resources") {
		t.Errorf("the dashboard's compliance gauge: %q", text)
	}
	// The partner page once the start-up partner run has assessed the
	// demo's tenants against the example catalogue.
	partner := `[hx-get^="/partner"]`
	for deadline := time.Now().Add(60 * time.Second); ; {
		tab.Open("/partner", partner)
		tab.Settle()
		if strings.Contains(tab.Text(partner), "Maturity per tenant") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if text := tab.Text(partner); !strings.Contains(text, "Northwind Bank deadline") || !strings.Contains(text, "Gaps, most pressing first") {
		t.Errorf("the partner page shows no countdown or gaps: %q", text)
	}
	// A requirement's evidence panel: opened, its form starts the evidence
	// with htmx (carrying the session's CSRF token), and the panel comes
	// back open with the evidence in progress and its upload form.
	var panel bool
	tab.Eval(`(() => { const d = document.querySelector('`+partner+` details.partner-evidence'); if (!d) return false; d.open = true; `+
		`d.querySelector("form").requestSubmit(); return true })()`, &panel)
	if !panel {
		t.Fatal("the partner page has no evidence panel")
	}
	if text := tab.WaitText(partner+" details.partner-evidence[open]", func(s string) bool { return strings.Contains(s, "Evidence started.") }); !strings.Contains(text, "Upload") {
		t.Errorf("the evidence panel after a start: %q", text)
	}
	const expand = `(() => { document.querySelectorAll("main details").forEach(d => { d.open = true }); return true })()`
	// The pages a drill-down reaches: a policy's resources and a
	// resource's page, by the first link to each.
	policyLink := compliance + ` a[href^="/compliance/policy?"]`
	tab.Open("/compliance", policyLink)
	policyPage := drillAttr(t, tab, policyLink, "href")
	resourceLink := `[hx-get^="/compliance/policy"] a[href^="/resources/item?"]`
	tab.Open(policyPage, resourceLink)
	resourcePage := drillAttr(t, tab, resourceLink, "href")
	// The framework's printable report, by its link; printed, it shows
	// neither the navigation nor its own links, and each category starts
	// a page.
	reportLink := `#compliance-frameworks a[href^="/compliance/report?"]`
	tab.Open("/compliance", reportLink)
	reportPage := drillAttr(t, tab, reportLink, "href")
	report := `[hx-get^="/compliance/report"] .report-category`
	tab.Open(reportPage, report)
	tab.Run("print media", emulation.SetEmulatedMedia().WithMedia("print"))
	var printed string
	tab.Eval(`[".nav", ".topbar", ".report .no-print"].map(s => getComputedStyle(document.querySelector(s)).display).join(" ") + " " + `+
		`[...document.querySelectorAll(".report-category")].slice(0, 2).map(e => getComputedStyle(e).breakBefore).join(" ")`, &printed)
	if printed != "none none none page page" {
		t.Errorf("the printed report: display of the navigation, top bar and links, break before the categories: %q", printed)
	}
	tab.Run("screen media", emulation.SetEmulatedMedia().WithMedia(""))

	for _, page := range []struct{ path, name, wait, script string }{
		{"/dashboard", "dashboard", stats, ""},
		{"/sync-dashboard", "sync-dashboard", `[hx-get^="/partials/sync-history-table"]`, ""},
		{"/resources", "resources", `[hx-get^="/resources"]`, ""},
		{"/costs", "costs", "#cost-anomalies", ""},
		{"/costs/analysis", "cost-analysis", `[hx-get^="/costs/analysis"] table`, ""},
		{"/identity", "identity", identity, ""},
		{"/compliance", "compliance", "#compliance-frameworks", expand},
		{policyPage, "compliance-policy", `[hx-get^="/compliance/policy"] table`, ""},
		{resourcePage, "resource", `[hx-get^="/resources/item"] table`, ""},
		{reportPage, "compliance-report", report, ""},
		{"/partner", "partner", partner, expand},
		{"/dmarc", "dmarc", "main", ""},
		{"/design-system", "design-system", "main", ""},
		{"/notifications", "notifications", "main", ""},
	} {
		for _, scheme := range []string{"light", "dark"} {
			tab.ColorScheme(scheme)
			tab.Open(page.path, page.wait)
			tab.Settle()
			if page.script != "" {
				var done bool
				tab.Eval(page.script, &done)
			}
			for _, v := range tab.Axe() {
				t.Errorf("%s (%s): %s", page.path, scheme, v)
			}
			tab.Screenshot(screenshots(t), page.name+"-"+scheme)
		}
	}
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on the admin's pages:\n%s", strings.Join(p, "\n"))
	}

	login := b.NewTab(h.url)
	for _, scheme := range []string{"light", "dark"} {
		login.ColorScheme(scheme)
		login.Open("/login", `form[action="/auth/login"]`)
		for _, v := range login.Axe() {
			t.Errorf("/login (%s): %s", scheme, v)
		}
		login.Screenshot(screenshots(t), "login-"+scheme)
	}

	// A standard user of Contoso sees Contoso only, on every page.
	user := b.NewTab(h.url)
	signInThroughIdP(t, h, user, "/dashboard", world.DemoContosoUser)
	mine := user.Text("#tenant-picker")
	if !strings.Contains(mine, "Contoso Retail") {
		t.Errorf("the standard user's tenants: %q", mine)
	}
	for _, path := range []string{"/dashboard", "/sync-dashboard", "/resources", "/costs", "/identity", "/compliance", "/partner", "/dmarc"} {
		user.Open(path, "main")
		user.Settle()
		text := user.Text("body")
		for _, tn := range tenants {
			// A name inside one of the user's own (Contoso Retail in
			// Contoso Retail Dev) cannot be told apart by its text.
			if !strings.Contains(mine, tn.Name) && strings.Contains(text, tn.Name) {
				t.Errorf("%s shows the standard user %s", path, tn.Name)
			}
		}
	}
	if p := user.Problems(); len(p) > 0 {
		t.Errorf("problems on the standard user's pages:\n%s", strings.Join(p, "\n"))
	}

	for deadline := markedAt.Add(40 * time.Second); ; time.Sleep(time.Second) {
		refresh.Eval(`document.getElementById("refresh-mark") !== null`, &marked)
		if !marked || time.Now().After(deadline) {
			break
		}
	}
	if marked {
		t.Error("the sync status card did not reload within 40 s")
	}

	// With the resources plugin down, the dashboard still answers and
	// shows its slot unavailable.
	broken := resources + ".broken"
	if err := os.WriteFile(broken, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Renamed over: the running process keeps its own file.
	if err := os.Rename(broken, resources); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(h.pluginPID(admin, "resources"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := h.get("/dashboard", admin); r.status != 200 {
		t.Errorf("dashboard with the resources plugin down: %d", r.status)
	}
	if r := h.get("/partials/resource-stats", admin); r.status != 503 {
		t.Errorf("the resources fragment with its plugin down: %d", r.status)
	}
	tab.ColorScheme("light")
	tab.Open("/dashboard", "main")
	down := tab.WaitText(`section:has(`+stats+`) .slot-status`, func(s string) bool { return strings.Contains(s, "unavailable") })
	if !strings.Contains(down, "Resources") {
		t.Errorf("the unavailable slot says %q", down)
	}
	tab.Screenshot(screenshots(t), "dashboard-plugin-down")
}
