package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

// TestDrillDownInBrowser walks from a number to the rows behind it as a
// standard user of Contoso Retail would: the compliance page's first
// non-compliant policy, its page of non-compliant resources, and one of
// them on its resource page with its policy states, each page passing an
// axe-core scan in light and dark mode. A user of another tenant who
// follows the same links gets a 404 for the resource and for the policy
// on Contoso's tenant a 403, and never sees Contoso's resource.
func TestDrillDownInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: resourcesPlugins() + compliancePlugins(""),
		env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	waitStartupSync(t, h, admin, "resources")

	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/compliance", world.DemoContosoUser)
	policyLink := `[hx-get^="/compliance"] a[href^="/compliance/policy?"]`
	tab.WaitVisible(policyLink)
	policyHref := drillAttr(t, tab, policyLink, "href")
	tab.Click(policyLink)
	resourceLink := `[hx-get^="/compliance/policy"] a[href^="/resources/item?"]`
	tab.WaitVisible(resourceLink)
	if loc := tab.Location(); !strings.HasSuffix(loc, policyHref) {
		t.Fatalf("the policy's link led to %s, not %s", loc, policyHref)
	}
	text := tab.Text(`[hx-get^="/compliance/policy"]`)
	if !strings.Contains(text, "Contoso Retail") || !strings.Contains(text, "non-compliant resources") {
		t.Errorf("the policy's page: %q", text)
	}
	drillScan(t, tab, policyHref, resourceLink)

	resourceHref := drillAttr(t, tab, resourceLink, "href")
	resource, err := url.Parse(resourceHref)
	if err != nil {
		t.Fatal(err)
	}
	armID := resource.Query().Get("resource_id")
	// The resources job type runs the quotas and the inventory as two
	// jobs: the resource is there once the inventory's has synced it.
	h.waitFor("the inventory's sync of "+armID, time.Minute, func() bool {
		var page struct {
			Total int `json:"total"`
		}
		h.get("/api/v1/resources/inventory?q="+url.QueryEscape(armID), admin).json(t, &page)
		return page.Total > 0
	})
	// The page's figures are the API's, whose answers the harness checks
	// against the OpenAPI document.
	policy, err := url.Parse(policyHref)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Items []struct {
			ResourceID string `json:"resource_id"`
		} `json:"items"`
		Total int `json:"total"`
	}
	h.get("/api/v1/compliance/non-compliant/resources?limit=500&policy_id="+url.QueryEscape(policy.Query().Get("policy_id")), admin).json(t, &listed)
	found := false
	for _, it := range listed.Items {
		found = found || it.ResourceID == armID
	}
	if !found {
		t.Errorf("the API does not list %s among the policy's %d non-compliant resources", armID, listed.Total)
	}
	if r := h.get("/api/v1/compliance/non-compliant/resources?policy_id=%2Fno-such-policy", admin); r.status != http.StatusNotFound {
		t.Errorf("an unknown policy's resources: %d %s", r.status, r.body)
	}
	tab.Click(resourceLink)
	item := `[hx-get^="/resources/item"]`
	text = tab.WaitText(item, func(s string) bool { return strings.Contains(s, "Lifecycle") })
	if !strings.Contains(text, "Contoso Retail") || !strings.Contains(text, "NonCompliant") || !strings.Contains(text, "Policy states") {
		t.Errorf("the resource's page: %q", text)
	}
	if loc := tab.Location(); !strings.HasSuffix(loc, resourceHref) {
		t.Fatalf("the resource's link led to %s, not %s", loc, resourceHref)
	}
	drillScan(t, tab, resourceHref, item+" table")
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on the drill-down's pages:\n%s", strings.Join(p, "\n"))
	}

	// Fabrikam's user, with the links Contoso's user followed.
	other := b.NewTab(h.url)
	signInThroughIdP(t, h, other, "/dashboard", world.DemoFabrikamUser)
	contoso := h.tenantIDs(t, admin)["Contoso Retail"]
	for href, want := range map[string]int{
		resourceHref: 404,
		policyHref + "&tenant_id=" + url.QueryEscape(contoso): 403,
	} {
		if status, body := drillFetch(t, other, href); status != want || strings.Contains(body, armID) {
			t.Errorf("%s for Fabrikam's user: %d %.300s, want %d without Contoso's resource", href, status, body, want)
		}
	}
	if _, body := drillFetch(t, other, policyHref); strings.Contains(body, armID) || strings.Contains(body, "Contoso") {
		t.Errorf("the policy's page for Fabrikam's user shows Contoso's resource: %.300s", body)
	}
	// Opened in the browser, the refused resource's page says why in its
	// slot, once: asking again would not change a 404.
	other.Open(resourceHref, "main")
	said := other.WaitText("main .slot-status:not([hidden])", func(s string) bool { return strings.TrimSpace(s) != "" })
	if !strings.Contains(said, "Not found: no such resource in the inventory.") || strings.Contains(said, "unavailable") {
		t.Errorf("the resource's page in Fabrikam's browser says %q, want it not found and no retry", said)
	}
}

// drillAttr is an attribute of the first element the selector matches.
func drillAttr(t *testing.T, tab *browsertest.Tab, sel, name string) string {
	t.Helper()
	var v string
	tab.Eval(`document.querySelector(`+jsQuote(t, sel)+`).getAttribute(`+jsQuote(t, name)+`)`, &v)
	return v
}

// drillFetch asks for a page's HTML as its slot does, with the tab's session,
// and answers the status and body.
func drillFetch(t *testing.T, tab *browsertest.Tab, href string) (int, string) {
	t.Helper()
	var out struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	tab.Eval(`fetch(`+jsQuote(t, href)+`, {headers: {"HX-Request": "true"}}).then(async r => ({status: r.status, body: await r.text()}))`, &out)
	return out.Status, out.Body
}

// drillScan opens the page in light and dark mode and fails the test on each
// serious axe-core violation.
func drillScan(t *testing.T, tab *browsertest.Tab, path, wait string) {
	t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		tab.ColorScheme(scheme)
		tab.Open(path, wait)
		tab.Settle()
		for _, v := range tab.Axe() {
			t.Errorf("%s (%s): %s", path, scheme, v)
		}
	}
}

// jsQuote is s as a JavaScript string literal.
func jsQuote(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
