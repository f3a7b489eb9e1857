package e2e

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stewardhq/steward/host/websession"
)

// TestPageViewsOnTheirOwnBudget: a browser's pages and fragments, the
// host's and a plugin's, draw on the UI budget and never on the API's, and
// API calls never on the UI's; an API client reading a fragment with a
// token stays on the API budget.
func TestPageViewsOnTheirOwnBudget(t *testing.T) {
	f := newFixtureOn(t, "sqlite", hostOpts{env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "4", "STEWARD_UI_RATE_LIMIT_PER_MINUTE": "6"}})
	h := f.h
	u, _ := url.Parse(h.url)
	browse := func(token string) *browser {
		b := newBrowser(h)
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: websession.CookieAccess, Value: token, Path: "/"}})
		return b
	}
	budget := func(what string, r response, status int, limit string, remaining int) {
		t.Helper()
		if r.status != status || r.header.Get("X-Ratelimit-Limit") != limit || r.header.Get("X-Ratelimit-Remaining") != strconv.Itoa(remaining) {
			t.Errorf("%s: %d on a budget of %s with %s left, want %d on %s with %d left", what, r.status,
				r.header.Get("X-Ratelimit-Limit"), r.header.Get("X-Ratelimit-Remaining"), status, limit, remaining)
		}
	}
	hx := []string{"HX-Request", "true"}

	// The admin's browser spends the whole UI budget of 6...
	admin := browse(f.admin)
	views := []struct {
		path   string
		header []string
	}{
		{"/dashboard", nil}, {"/partials/sync-status-card", hx}, {"/partials/testplugin-items", hx},
		{"/testplugin", nil}, {"/testplugin", hx}, {"/sync-dashboard", nil},
	}
	for i, v := range views {
		budget(v.path, admin.do(http.MethodGet, v.path, nil, v.header...), http.StatusOK, "6", 5-i)
	}
	limited := admin.do(http.MethodGet, "/partials/active-alerts", nil, hx...)
	budget("a seventh page view", limited, http.StatusTooManyRequests, "6", 0)
	if limited.header.Get("Retry-After") == "" {
		t.Error("a refused page view has no Retry-After")
	}
	// ...and still has all of its API budget.
	budget("the API after the page views", admin.do(http.MethodGet, "/api/v1/tenants", nil, "Accept", "application/json"), http.StatusOK, "4", 3)
	budget("a fragment read with a token", h.get("/partials/sync-status-card", f.admin), http.StatusOK, "4", 2)

	// Alice spends her API budget and can still load her pages.
	alice := browse(f.tokenA)
	for i := range 4 {
		budget("Alice's API call", alice.do(http.MethodGet, "/api/v1/tenants", nil, "Accept", "application/json"), http.StatusOK, "4", 3-i)
	}
	budget("Alice's fifth API call", alice.do(http.MethodGet, "/api/v1/testplugin/ping", nil, "Accept", "application/json"), http.StatusTooManyRequests, "4", 0)
	budget("Alice's page after her API budget", alice.do(http.MethodGet, "/dashboard", nil), http.StatusOK, "6", 5)
	budget("Alice's fragment", alice.do(http.MethodGet, "/partials/testplugin-items?tenant_id="+f.tenantA.ID, nil, hx...), http.StatusOK, "6", 4)
}
