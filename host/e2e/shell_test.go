package e2e

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var iconLinkRE = regexp.MustCompile(`<link rel="icon" href="(/static/favicon\.[0-9a-f]+\.svg)" type="image/svg\+xml">`)

// TestShellNotFoundAndFavicon: an address nothing serves is the error page
// to a browser opening it outside the API, and a problem document to
// everyone else; /favicon.ico and the icon the pages link to answer.
func TestShellNotFoundAndFavicon(t *testing.T) {
	h := startHost(t, hostOpts{})
	b := newBrowser(h)
	for _, path := range []string{"/no-such-page", "/dashboard/nothing?tenant_id=x"} {
		r := b.do(http.MethodGet, path, nil)
		body := string(r.body)
		if r.status != http.StatusNotFound || r.header.Get("Content-Type") != "text/html; charset=utf-8" ||
			!strings.Contains(body, "<h1>Not Found</h1>") || !strings.Contains(body, "There is no page at this address.") || !iconLinkRE.MatchString(body) {
			t.Errorf("a browser opening %s: %d %s %.300s", path, r.status, r.header.Get("Content-Type"), body)
		}
		if r.header.Get("X-Ratelimit-Limit") == "" || r.header.Get("Content-Security-Policy") == "" {
			t.Errorf("the error page of %s lacks the rate limit or security headers: %v", path, r.header)
		}
	}
	problems := []response{
		h.get("/no-such-page", ""),
		b.do(http.MethodGet, "/api/v1/no-such-route", nil),
		b.do(http.MethodGet, "/no-such-fragment", nil, "HX-Request", "true"),
		b.do(http.MethodPost, "/no-such-page", nil),
	}
	for i, r := range problems {
		if r.status != http.StatusNotFound && r.status != http.StatusForbidden || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("case %d: %d %s, want a problem document", i, r.status, r.header.Get("Content-Type"))
		}
	}

	icon := b.do(http.MethodGet, "/favicon.ico", nil, "Accept", "image/avif,image/webp,*/*")
	if icon.status != http.StatusOK || icon.header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(icon.body), "<svg") {
		t.Errorf("/favicon.ico: %d %s", icon.status, icon.header.Get("Content-Type"))
	}
	b.signIn("/dashboard")
	page := b.do(http.MethodGet, "/dashboard", nil)
	m := iconLinkRE.FindStringSubmatch(string(page.body))
	if m == nil {
		t.Fatalf("the dashboard links no icon: %.600s", page.body)
	}
	// The static assets are not operations of the OpenAPI document.
	asset, err := h.client.Get(h.url + m[1])
	if err != nil {
		t.Fatal(err)
	}
	asset.Body.Close()
	if asset.StatusCode != http.StatusOK || asset.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("%s: %d %s", m[1], asset.StatusCode, asset.Header.Get("Content-Type"))
	}
}

// TestSyncHistoryNamesWhoTriggered: the sync dashboard's history shows who
// asked for a run by name, not by user id.
func TestSyncHistoryNamesWhoTriggered(t *testing.T) {
	h := startHost(t, hostOpts{})
	admin := h.login()
	var me struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	h.get("/api/v1/auth/me", admin).json(t, &me)
	if me.ID == "" {
		t.Fatal("no user id")
	}
	if r := h.do(http.MethodPost, "/api/v1/sync/testplugin", admin, nil); r.status != http.StatusAccepted {
		t.Fatalf("sync: %d %s", r.status, r.body)
	}
	who := me.Name
	if who == "" {
		who = me.Email
	}
	r := h.get("/partials/sync-history-table", admin)
	body := string(r.body)
	if r.status != http.StatusOK || !strings.Contains(body, "Manual, by "+html.EscapeString(who)) || strings.Contains(body, me.ID) {
		t.Errorf("the history names the run's trigger as: %d %s", r.status, body)
	}
}
