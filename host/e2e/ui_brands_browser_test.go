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

// TestBrandScopeInBrowser: the tenant picker offers a brand above the
// tenants; picking it scopes every page, through the navigation and
// typed, to the brand's tenants (the address names brand_id, the picker
// shows the brand, every slot loads its fragment for it, the freshness
// card names both its tenants and not the third), and the page passes
// axe in light and dark; "All my tenants" then clears it. A brand the
// user cannot see is the error page, not its name.
func TestBrandScopeInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: shellPlugins()})
	admin := h.login()
	ids := map[string]string{}
	for _, name := range []string{"Shell North", "Shell South", "Shell East"} {
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
	body := `{"name":"Shell Retail","tenant_ids":["` + ids["Shell North"] + `","` + ids["Shell South"] + `"]}`
	r := h.do(http.MethodPost, "/api/v1/brands", admin, strings.NewReader(body), "Content-Type", "application/json")
	var brand struct {
		ID string `json:"id"`
	}
	r.json(t, &brand)
	if r.status != http.StatusCreated || brand.ID == "" {
		t.Fatalf("create the brand: %d %s", r.status, r.body)
	}

	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoAdmin)
	var label string
	tab.Eval(`document.querySelector('#tenant-picker optgroup[label="Brands"] option').textContent`, &label)
	if label != "Shell Retail" {
		t.Fatalf("the picker's first brand is %q", label)
	}
	var picked bool
	tab.Eval(`(() => { document.querySelector("#tenant-picker").value = "brand:`+brand.ID+`"; document.querySelector(".tenant-picker button").click(); return true })()`, &picked)
	scoped := "brand_id=" + url.QueryEscape(brand.ID)
	currentIn := func(path string) string { return `nav.nav a[aria-current="page"][href="` + path + "?" + scoped + `"]` }
	tab.WaitVisible(currentIn("/dashboard"))
	fresh := tab.WaitText(`[hx-get^="/partials/tenant-sync-status"]`, func(s string) bool {
		return strings.Contains(s, "Shell North") && strings.Contains(s, "Shell South")
	})
	if strings.Contains(fresh, "Shell East") {
		t.Errorf("scoped to Shell Retail, the freshness card shows Shell East: %q", fresh)
	}
	for _, scheme := range []string{"light", "dark"} {
		tab.ColorScheme(scheme)
		for _, v := range tab.Axe() {
			t.Errorf("the dashboard of a brand (%s): %s", scheme, v)
		}
	}
	tab.ColorScheme("light")

	check := func(how, path string) {
		t.Helper()
		tab.WaitVisible(currentIn(path))
		tab.Settle()
		u, _ := url.Parse(tab.Location())
		if got := u.Query().Get("brand_id"); got != brand.ID || u.Query().Has("tenant_id") {
			t.Errorf("%s %s: the address is %s", how, path, tab.Location())
		}
		s := readScope(tab)
		if s.Picked != "brand:"+brand.ID {
			t.Errorf("%s %s: the picker shows %q", how, path, s.Picked)
		}
		for _, slot := range s.Slots {
			if !strings.Contains(slot, scoped) {
				t.Errorf("%s %s: the slot %s is not scoped to the brand", how, path, slot)
			}
		}
		if text := tab.Text("main"); strings.Contains(text, "Shell East") {
			t.Errorf("%s %s: the page shows Shell East", how, path)
		}
		var unavailable []string
		tab.Eval(`[...document.querySelectorAll(".slot.is-unavailable .slot-status")].map(e => e.innerText)`, &unavailable)
		if len(unavailable) > 0 {
			t.Errorf("%s %s: unavailable slots %v", how, path, unavailable)
		}
	}
	paths := navPaths(tab)
	for i, path := range paths {
		tab.Click(`nav.nav li:nth-child(` + strconv.Itoa(i+1) + `) a`)
		check("through the nav,", path)
	}
	// The session keeps the brand: an address typed without it is sent
	// to the same address with it.
	for _, path := range paths {
		tab.Open(path, "main")
		check("typed,", path)
	}

	// "All my tenants" clears the brand.
	tab.Open("/dashboard", "#tenant-picker")
	tab.Eval(`(() => { document.querySelector("#tenant-picker").value = ""; document.querySelector(".tenant-picker button").click(); return true })()`, &picked)
	tab.WaitVisible(`nav.nav a[aria-current="page"][href="/dashboard"]`)
	tab.Open("/sync-dashboard", `nav.nav a[aria-current="page"][href="/sync-dashboard"]`)
	if loc := tab.Location(); strings.Contains(loc, "brand_id") {
		t.Errorf("after All my tenants, the sync dashboard opened as %s", loc)
	}
	if s := readScope(tab); s.Picked != "" {
		t.Errorf("after All my tenants, %q is picked", s.Picked)
	}

	// A brand that does not exist is the error page.
	unknown := "00000000-0000-4000-8000-00000000b0b0"
	tab.Open("/dashboard?brand_id="+unknown, "main")
	if text := tab.Text("main"); !strings.Contains(text, "no brand with that id") {
		t.Errorf("an unknown brand's dashboard: %q", text)
	}
	if p := tab.Problems(); len(p) > 0 {
		// The refused page's own 404 is expected; nothing else is.
		for _, line := range p {
			if !strings.Contains(line, "404") {
				t.Errorf("problems on the pages:\n%s", strings.Join(p, "\n"))
				break
			}
		}
	}
}
