package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/websession"
)

// TestTenantScopeSticks: a tenant picked in a browser's session scopes
// every page opened after it without tenant_id (303 to the same address
// with it), the nav links carry it, "All my tenants" clears it, a tenant
// the user was removed from is dropped rather than refused, a tenant never
// visible is refused, and an API client never meets the scope.
func TestTenantScopeSticks(t *testing.T) {
	f := newFixture(t, "sqlite")
	h := f.h
	b := newBrowser(h)
	u, _ := url.Parse(h.url)
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: websession.CookieAccess, Value: f.tokenA, Path: "/"}})
	member := "/api/v1/tenants/" + f.tenantB.ID + "/members/" + f.userA.ID
	if r := h.do(http.MethodPut, member, f.admin, nil); r.status != http.StatusOK {
		t.Fatalf("assign Alice to Brand B: %d %s", r.status, r.body)
	}
	scoped := "tenant_id=" + url.QueryEscape(f.tenantB.ID)
	selected := `<option value="` + f.tenantB.ID + `" selected>Brand B</option>`

	if r := b.do(http.MethodGet, "/dashboard?"+scoped, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), selected) {
		t.Fatalf("picking Brand B: %d %s", r.status, r.body)
	}
	if c := b.cookie(websession.CookieTenant); c == nil || c.Value != f.tenantB.ID {
		t.Fatalf("the session keeps %+v, want Brand B", c)
	}
	for _, path := range []string{"/dashboard", "/sync-dashboard", "/design-system", "/sync-dashboard?x=1"} {
		r := b.do(http.MethodGet, path, nil)
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		if want := path + sep + scoped; r.status != http.StatusSeeOther || r.header.Get("Location") != want {
			t.Errorf("%s typed in: %d Location %q, want %q", path, r.status, r.header.Get("Location"), want)
			continue
		}
		page := b.do(http.MethodGet, r.header.Get("Location"), nil)
		body := string(page.body)
		if page.status != http.StatusOK || !strings.Contains(body, selected) {
			t.Errorf("%s scoped: %d, Brand B not selected", path, page.status)
		}
		if !strings.Contains(body, `<a href="/sync-dashboard?`+scoped+`"`) {
			t.Errorf("%s: the nav links do not carry Brand B", path)
		}
	}
	// Fragments take the tenant from their slot's query alone, and the
	// API never reads the session's scope.
	if r := b.do(http.MethodGet, "/partials/tenant-sync-status", nil, "HX-Request", "true"); r.status != http.StatusOK || !strings.Contains(string(r.body), "Brand A") {
		t.Errorf("a fragment without tenant_id: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodGet, "/api/v1/tenants", nil, "Accept", "application/json"); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), "Brand A") || !strings.Contains(string(r.body), "Brand B") {
		t.Errorf("the API under a scoped session: %d %s", r.status, r.body)
	}
	// An API client's page has no session scope.
	if r := h.get("/dashboard", f.tokenA); r.status != http.StatusOK || strings.Contains(string(r.body), selected) {
		t.Errorf("the dashboard for a Bearer token: %d", r.status)
	}

	// "All my tenants" clears it.
	if r := b.do(http.MethodGet, "/dashboard?tenant_id=", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `<option value="" selected>All my tenants</option>`) {
		t.Errorf("All my tenants: %d", r.status)
	}
	if c := b.cookie(websession.CookieTenant); c != nil {
		t.Errorf("All my tenants left %+v", c)
	}
	if r := b.do(http.MethodGet, "/sync-dashboard", nil); r.status != http.StatusOK {
		t.Errorf("a page after All my tenants: %d Location %q", r.status, r.header.Get("Location"))
	}

	// Removed from Brand B, Alice's next page opens on all her tenants,
	// not on a refusal.
	b.do(http.MethodGet, "/dashboard?"+scoped, nil)
	if r := h.do(http.MethodDelete, member, f.admin, nil); r.status != http.StatusNoContent && r.status != http.StatusOK {
		t.Fatalf("remove Alice from Brand B: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodGet, "/dashboard", nil); r.status != http.StatusOK || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("the dashboard after Alice lost Brand B: %d, Location %q", r.status, r.header.Get("Location"))
	}
	if c := b.cookie(websession.CookieTenant); c != nil {
		t.Errorf("the session still holds %+v", c)
	}
	// A nav link of a page shown before, naming Brand B, is refused with
	// the error page, and drops Brand B from the session too.
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: websession.CookieTenant, Value: f.tenantB.ID, Path: "/"}})
	if r := b.do(http.MethodGet, "/testplugin?"+scoped, nil); r.status != http.StatusForbidden ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("a plugin's page naming Brand B: %d %s", r.status, r.header.Get("Content-Type"))
	}
	if c := b.cookie(websession.CookieTenant); c != nil {
		t.Errorf("the session still holds %+v after the refusal", c)
	}
	if r := b.do(http.MethodGet, "/testplugin", nil); r.status != http.StatusOK {
		t.Errorf("the plugin's page after the refusal: %d Location %q", r.status, r.header.Get("Location"))
	}
	// Naming it is still refused, without its name.
	if r := b.do(http.MethodGet, "/dashboard?"+scoped, nil); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("Brand B named by Alice: %d", r.status)
	}
	if c := b.cookie(websession.CookieTenant); c != nil {
		t.Errorf("a refused tenant was kept: %+v", c)
	}
}
