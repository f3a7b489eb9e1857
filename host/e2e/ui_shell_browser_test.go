package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

var rateLimitedRE = regexp.MustCompile(`^Rate limited — retrying in [1-9]\d* s$`)

// shellPlugins are the plugins whose pages the shell's browser tests walk:
// every page of the navigation but the partner's, which needs a catalogue.
func shellPlugins() string {
	return defaultPlugins() + resourcesPlugins() + costPlugins("") + identityPlugins("") + compliancePlugins("") + dmarcPlugins("")
}

// shellTenants registers two tenants through the API and returns their
// ids by name (the layout shows the tenant picker, which signInThroughIdP
// waits for, to a user with tenants).
func shellTenants(t *testing.T, h *host) map[string]string {
	t.Helper()
	admin := h.login()
	ids := map[string]string{}
	for _, name := range []string{"Shell North", "Shell South"} {
		body, _ := json.Marshal(map[string]string{"name": name, "directory_tenant_id": uuid.NewString(), "subscription_id": uuid.NewString()})
		r := h.do(http.MethodPost, "/api/v1/tenants", admin, strings.NewReader(string(body)), "Content-Type", "application/json")
		var tn struct {
			ID string `json:"id"`
		}
		r.json(t, &tn)
		if r.status != http.StatusCreated || tn.ID == "" {
			t.Fatalf("create %s: %d %s", name, r.status, r.body)
		}
		ids[name] = tn.ID
	}
	return ids
}

// navPaths are the paths of the page's navigation links, without query.
func navPaths(tab *browsertest.Tab) []string {
	var paths []string
	tab.Eval(`[...document.querySelectorAll("nav.nav a")].map(a => a.pathname)`, &paths)
	return paths
}

// current is the selector of the nav link marked current once the tab has
// navigated to path (with the tenant's query when tenantID is set): the
// page it is on now, rather than the one it came from.
func current(path, tenantID string) string {
	href := path
	if tenantID != "" {
		href += "?tenant_id=" + tenantID
	}
	return `nav.nav a[aria-current="page"][href="` + href + `"]`
}

// pageScope is what a page shows of its tenant scope: the picker's
// selected value and every slot's fragment address.
type pageScope struct {
	Picked string   `json:"picked"`
	Slots  []string `json:"slots"`
}

func readScope(tab *browsertest.Tab) pageScope {
	var s pageScope
	tab.Eval(`({picked: document.querySelector("#tenant-picker").value,
		slots: [...document.querySelectorAll(".slot-body[hx-get]")].map(e => e.getAttribute("hx-get"))})`, &s)
	return s
}

// pageHeadings are the texts of a page's h1 elements and of its other
// headings, once its slots have loaded.
type pageHeadings struct {
	H1     []string `json:"h1"`
	Others []string `json:"others"`
}

const headingsScript = `({h1: [...document.querySelectorAll("h1")].map(e => e.textContent.trim()),
	others: [...document.querySelectorAll("h2, h3, h4")].map(e => e.textContent.trim())})`

// TestTenantScopeInBrowser picks a tenant and walks every page, through
// the navigation and by typing each address: every page has that tenant
// picked and every slot loads its fragment for it, the dashboard's
// freshness card names it and not the other; "All my tenants" then
// clears the scope for the pages after it. Each page has one h1, which no
// other heading repeats.
func TestTenantScopeInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: shellPlugins()})
	ids := shellTenants(t, h)
	north := ids["Shell North"]
	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoAdmin)

	var picked bool
	tab.Eval(`(() => { document.querySelector("#tenant-picker").value = "`+north+`"; document.querySelector(".tenant-picker button").click(); return true })()`, &picked)
	tab.WaitVisible(current("/dashboard", north))
	fresh := tab.WaitText(`[hx-get^="/partials/tenant-sync-status"]`, func(s string) bool { return strings.Contains(s, "Shell North") })
	if strings.Contains(fresh, "Shell South") {
		t.Errorf("scoped to Shell North, the freshness card shows Shell South: %q", fresh)
	}

	check := func(how, path string) {
		t.Helper()
		tab.WaitVisible(current(path, north))
		tab.Settle()
		u, _ := url.Parse(tab.Location())
		if got := u.Query().Get("tenant_id"); got != north {
			t.Errorf("%s %s: the address has tenant_id %q", how, path, got)
		}
		s := readScope(tab)
		if s.Picked != north {
			t.Errorf("%s %s: the picker shows %q", how, path, s.Picked)
		}
		for _, slot := range s.Slots {
			if !strings.Contains(slot, "tenant_id="+north) {
				t.Errorf("%s %s: the slot %s is not scoped", how, path, slot)
			}
		}
		if text := tab.Text("main"); strings.Contains(text, "Shell South") {
			t.Errorf("%s %s: the page shows Shell South", how, path)
		}
		var h pageHeadings
		tab.Eval(headingsScript, &h)
		if len(h.H1) != 1 || slices.Contains(h.Others, h.H1[0]) {
			t.Errorf("%s %s: h1 %q, other headings %q; want one h1, not repeated", how, path, h.H1, h.Others)
		}
	}
	paths := navPaths(tab)
	if len(paths) < 7 {
		t.Fatalf("the navigation has %v", paths)
	}
	for i, path := range paths {
		tab.Click(`nav.nav li:nth-child(` + strconv.Itoa(i+1) + `) a`)
		check("through the nav,", path)
	}
	for _, path := range paths {
		tab.Open(path, "main")
		check("typed,", path)
	}

	// "All my tenants" clears the scope.
	tab.Open("/dashboard", "#tenant-picker")
	tab.Eval(`(() => { document.querySelector("#tenant-picker").value = ""; document.querySelector(".tenant-picker button").click(); return true })()`, &picked)
	tab.WaitVisible(`nav.nav a[aria-current="page"][href="/dashboard"]`)
	for _, path := range paths {
		tab.Open(path, current(path, ""))
		if loc := tab.Location(); strings.Contains(loc, "tenant_id") {
			t.Errorf("after All my tenants, %s opened as %s", path, loc)
		}
		if s := readScope(tab); s.Picked != "" {
			t.Errorf("after All my tenants, %s has %q picked", path, s.Picked)
		}
	}
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on the pages:\n%s", strings.Join(p, "\n"))
	}
}

// TestFastPageViewsInBrowser: 30 page views through the navigation, each
// with all its fragments loaded, as fast as the browser goes (the budgets
// are the defaults), leave no slot unavailable and no request refused.
func TestFastPageViewsInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: shellPlugins()})
	shellTenants(t, h)
	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoAdmin)
	paths := navPaths(tab)
	started := time.Now()
	for i := range 30 {
		n := i%len(paths) + 1
		tab.Click(`nav.nav li:nth-child(` + strconv.Itoa(n) + `) a`)
		tab.WaitVisible(current(paths[n-1], ""))
		tab.Settle()
		var failed []string
		tab.Eval(`[...document.querySelectorAll(".slot.is-unavailable .slot-status")].map(e => e.innerText)`, &failed)
		if len(failed) > 0 {
			t.Fatalf("page view %d, %s: unavailable slots %v", i+1, paths[n-1], failed)
		}
	}
	t.Logf("30 page views in %s", time.Since(started).Round(100*time.Millisecond))
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on the pages:\n%s", strings.Join(p, "\n"))
	}
}

// TestRateLimitedSlotInBrowser: once the page-view budget is spent, a
// page's slots that the rate limit refused say so and how long they wait,
// not that they are unavailable.
func TestRateLimitedSlotInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_UI_RATE_LIMIT_PER_MINUTE": "40"}})
	shellTenants(t, h)
	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoAdmin)
	tab.Settle()
	// Spend the budget down to one request: the page's own.
	for left := -1; left != 1; {
		tab.Eval(`fetch("/partials/sync-status-card", {headers: {"HX-Request": "true"}}).then(r => parseInt(r.headers.get("X-RateLimit-Remaining"), 10))`, &left)
		if left < 1 {
			t.Fatalf("the budget ran out (%d left) before the page could be opened", left)
		}
	}
	tab.Open("/sync-dashboard", "main")
	tab.Settle()
	var states []string
	tab.Eval(`[...document.querySelectorAll(".slot")].map(s => s.classList.contains("is-unavailable") ? s.querySelector(".slot-status").innerText.trim() : "loaded")`, &states)
	if len(states) == 0 {
		t.Fatal("the sync dashboard has no slots")
	}
	for i, s := range states {
		if !rateLimitedRE.MatchString(s) {
			t.Errorf("slot %d, refused by the rate limit, says %q", i+1, s)
		}
	}
	for _, v := range tab.Axe() {
		t.Errorf("rate-limited slots: %s", v)
	}
}

// overflowingCards names the cards of the page whose content is wider
// than the card (a table cut off at the card's edge) or whose table has to
// scroll in its container (.table-wrap), which it may do by design only
// where the screen is narrow, or for a pivot's column per period
// (.table-wrap-pivot).
const overflowingCards = `[...document.querySelectorAll("main .card")].filter(c => c.scrollWidth > c.clientWidth + 1 ||
		[...c.querySelectorAll(".table-wrap:not(.table-wrap-pivot)")].some(w => w.scrollWidth > w.clientWidth + 1)).
	map(c => ((c.querySelector("h2, h3") || {}).textContent || c.className).trim() + ": " +
		[c, ...c.querySelectorAll(".table-wrap")].map(e => e.scrollWidth + " px in " + e.clientWidth).join(", "))`

// widestElements names the elements that reach past the window's right
// edge outside any container that scrolls or clips them: what makes a page
// scroll sideways.
const widestElements = `[...document.querySelectorAll("body *")].filter(e => {
	if (e.getBoundingClientRect().right <= window.innerWidth + 1) return false;
	for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
		if (getComputedStyle(a).overflowX !== "visible" && a.getBoundingClientRect().right <= window.innerWidth + 1) return false;
	}
	return true;
}).slice(0, 3).map(e => e.tagName.toLowerCase() + (typeof e.className === "string" && e.className ? "." + e.className : "") + ": " + e.textContent.trim().slice(0, 40))`

// TestPagesFitTheScreenInBrowser opens every page with the demo world's
// data (the nav's, a policy's resources and a resource's page) at 1,400 px, where no card's content may be wider than the card and
// no table has to scroll in its card, and at 390 px, a phone's width, where
// no page may scroll sideways (a table scrolls in its own container).
func TestPagesFitTheScreenInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: shellPlugins() + partnerPlugins(examplePartnerCatalogue(t)), env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true"}})
	admin := h.login()
	for _, job := range []string{"resources", "costs", "identity", "compliance", "dmarc", "partner"} {
		waitStartupSync(t, h, admin, job)
	}
	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoAdmin)
	// The nav's pages, and the pages a drill-down reaches: a policy's
	// resources and a resource's page, by the first link to each.
	paths := navPaths(tab)
	tab.Open("/compliance", `[hx-get^="/compliance"] a[href^="/compliance/policy?"]`)
	policy := drillAttr(t, tab, `[hx-get^="/compliance"] a[href^="/compliance/policy?"]`, "href")
	tab.Open(policy, `[hx-get^="/compliance/policy"] a[href^="/resources/item?"]`)
	resource := drillAttr(t, tab, `[hx-get^="/compliance/policy"] a[href^="/resources/item?"]`, "href")
	paths = append(paths, policy, resource)
	for _, width := range []int64{1400, 390} {
		tab.Run("viewport", emulation.SetDeviceMetricsOverride(width, 900, 1, false))
		for _, path := range paths {
			tab.Open(path, "main")
			tab.Settle()
			if width == 1400 {
				var clipped []string
				tab.Eval(overflowingCards, &clipped)
				for _, c := range clipped {
					t.Errorf("%s at %d px: the card %s", path, width, c)
				}
				continue
			}
			var page struct{ Scroll, Inner int }
			tab.Eval(`({Scroll: document.documentElement.scrollWidth, Inner: window.innerWidth})`, &page)
			if page.Scroll > page.Inner {
				var wide []string
				tab.Eval(widestElements, &wide)
				t.Errorf("%s at %d px scrolls sideways: %d px wide; for one, %q", path, width, page.Scroll, wide)
			}
		}
	}
}
