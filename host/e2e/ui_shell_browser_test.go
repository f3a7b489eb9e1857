package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

// shellPlugins are the plugins whose pages the shell's browser tests walk:
// every page of the navigation but the partner's, which needs a catalogue.
func shellPlugins() string {
	return defaultPlugins() + resourcesPlugins() + costPlugins("") + identityPlugins("") + compliancePlugins("") + dmarcPlugins("")
}

// shellTenants registers two tenants through the API and returns their
// ids by name.
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

// TestTenantScopeInBrowser picks a tenant and walks every page, through
// the navigation and by typing each address: every page has that tenant
// picked and every slot loads its fragment for it, the dashboard's
// freshness card names it and not the other; "All my tenants" then
// clears the scope for the pages after it.
func TestTenantScopeInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	// The walk opens every page three times with all its fragments, faster
	// than a person would.
	h := startHost(t, hostOpts{pluginsHCL: shellPlugins(), env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
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
