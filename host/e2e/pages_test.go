package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// pagePaths are the host's pages and fragments, and the test plugin's.
// The domain plugins' views are theirs, tested with each plugin.
var pagePaths = []string{
	"/dashboard", "/sync-dashboard", "/design-system", "/notifications", "/testplugin",
	"/partials/sync-status-card", "/partials/sync-history-table", "/partials/tenant-sync-status", "/partials/active-alerts",
	"/partials/testplugin-items",
}

// browser is an HTTP client that keeps cookies and does not follow
// redirects, as the tests read each one.
type browser struct {
	h      *host
	client *http.Client
}

func newBrowser(h *host) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{h: h, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values, header ...string) response {
	b.h.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.h.url+path, body)
	if err != nil {
		b.h.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.h.t.Fatal(err)
	}
	b.h.conform(req, resp.StatusCode, resp.Header, out)
	return response{status: resp.StatusCode, header: resp.Header, body: out}
}

func (b *browser) cookie(name string) *http.Cookie {
	u, _ := url.Parse(b.h.url)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

var csrfFieldRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// signIn signs the browser in with the development form and returns the
// session's CSRF token.
func (b *browser) signIn(next string) response {
	b.h.t.Helper()
	page := b.do(http.MethodGet, "/login?next="+url.QueryEscape(next), nil)
	m := csrfFieldRE.FindStringSubmatch(string(page.body))
	if page.status != http.StatusOK || m == nil {
		b.h.t.Fatalf("login page: %d %s", page.status, page.body)
	}
	return b.do(http.MethodPost, "/auth/dev-login", url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}, "next": {next}, "csrf_token": {m[1]}})
}

var metaCSRFRE = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)"`)

// TestPagesAskForSignIn: every page and fragment answers HTML to a Bearer
// token; without credentials a browser is sent to sign in and come back,
// htmx is told to send the page there, and an API client gets 401.
func TestPagesAskForSignIn(t *testing.T) {
	h := startHost(t, hostOpts{})
	token := h.login()
	for _, path := range pagePaths {
		r := h.get(path, token)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("%s with a token: %d %s", path, r.status, r.header.Get("Content-Type"))
		}
		b := newBrowser(h)
		if r := b.do(http.MethodGet, path+"?tenant_id=x", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next="+url.QueryEscape(path+"?tenant_id=x") {
			t.Errorf("%s, browser without a session: %d Location %q", path, r.status, r.header.Get("Location"))
		}
		if r := h.get(path, ""); r.status != http.StatusUnauthorized {
			t.Errorf("%s, API client without credentials: %d", path, r.status)
		}
		if r := b.do(http.MethodGet, path, nil, "HX-Request", "true", "HX-Current-URL", h.url+"/dashboard?tenant_id=a"); r.status != http.StatusUnauthorized ||
			r.header.Get("HX-Redirect") != "/login?next="+url.QueryEscape("/dashboard?tenant_id=a") {
			t.Errorf("%s, htmx without a session: %d HX-Redirect %q", path, r.status, r.header.Get("HX-Redirect"))
		}
	}
	if r := h.get("/partials/sync-history-table?limit=101", token); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "query.limit") {
		t.Errorf("history limit 101: %d %s", r.status, r.body)
	}
	for _, limit := range []string{"0", "1001", "x"} {
		if r := h.get("/partials/tenant-sync-status?limit="+limit, token); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "query.limit") {
			t.Errorf("tenant sync status limit %s: %d %s", limit, r.status, r.body)
		}
	}
	if r := newBrowser(h).do(http.MethodGet, "/", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/dashboard" {
		t.Errorf("/: %d %q", r.status, r.header.Get("Location"))
	}
}

// TestBrowserSession signs a browser in with the development form and
// uses the session: cookies as the contract says, CSRF required on every
// state change, silent refresh, sign-out, and no open redirect.
func TestBrowserSession(t *testing.T) {
	h := startHost(t, hostOpts{})
	b := newBrowser(h)
	r := b.signIn("/sync-dashboard")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/sync-dashboard" {
		t.Fatalf("sign-in: %d Location %q %s", r.status, r.header.Get("Location"), r.body)
	}
	for _, c := range r.header.Values("Set-Cookie") {
		lc := strings.ToLower(c)
		if !strings.Contains(lc, "samesite=lax") || strings.Contains(lc, "secure") {
			t.Errorf("cookie on loopback in development: %s", c)
		}
		if (strings.HasPrefix(c, "steward_access=") || strings.HasPrefix(c, "steward_refresh=")) && !strings.Contains(lc, "httponly") {
			t.Errorf("token cookie readable by scripts: %s", c)
		}
	}
	page := b.do(http.MethodGet, "/sync-dashboard", nil)
	m := metaCSRFRE.FindStringSubmatch(string(page.body))
	if page.status != http.StatusOK || m == nil {
		t.Fatalf("sync dashboard: %d %s", page.status, page.body)
	}
	csrf := m[1]
	if r := b.do(http.MethodPost, "/api/v1/sync/testplugin", nil); r.status != http.StatusForbidden {
		t.Errorf("sync without a CSRF token: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodPost, "/api/v1/sync/testplugin", nil, "X-CSRF-Token", csrf+"x"); r.status != http.StatusForbidden {
		t.Errorf("sync with a wrong CSRF token: %d", r.status)
	}
	if r := b.do(http.MethodPost, "/api/v1/sync/testplugin", nil, "X-CSRF-Token", csrf); r.status != http.StatusAccepted {
		t.Errorf("sync with the CSRF token: %d %s", r.status, r.body)
	}
	// A Bearer client needs no CSRF token.
	if r := h.do(http.MethodPost, "/api/v1/sync/testplugin", h.login(), nil); r.status != http.StatusAccepted {
		t.Errorf("sync with a bearer token: %d %s", r.status, r.body)
	}

	// Without its access cookie, the session refreshes silently.
	u, _ := url.Parse(h.url)
	refresh := b.cookie("steward_refresh")
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "steward_access", Value: "", MaxAge: -1, Path: "/"}})
	if r := b.do(http.MethodGet, "/dashboard", nil); r.status != http.StatusOK || !strings.Contains(strings.Join(r.header.Values("Set-Cookie"), ";"), "steward_access=") {
		t.Errorf("dashboard after the access cookie expired: %d %v", r.status, r.header.Values("Set-Cookie"))
	}
	if b.cookie("steward_refresh").Value == refresh.Value {
		t.Error("the refresh token was not rotated")
	}

	// Sign-out needs the token, revokes the session and clears it.
	current := b.cookie("steward_refresh").Value
	if r := b.do(http.MethodPost, "/auth/logout", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("sign-out without a CSRF token: %d", r.status)
	}
	if r := b.do(http.MethodPost, "/auth/logout", url.Values{"csrf_token": {csrf}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Errorf("sign-out: %d %q", r.status, r.header.Get("Location"))
	}
	if r := b.do(http.MethodGet, "/dashboard", nil); r.status != http.StatusSeeOther {
		t.Errorf("dashboard after sign-out: %d", r.status)
	}
	old := newBrowser(h)
	old.client.Jar.SetCookies(u, []*http.Cookie{{Name: "steward_refresh", Value: current, Path: "/"}})
	if r := old.do(http.MethodGet, "/dashboard", nil); r.status != http.StatusSeeOther {
		t.Errorf("a refresh cookie of the signed-out session: %d", r.status)
	}

	// A sign-in returns only to this origin.
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
		if r := newBrowser(h).signIn(next); r.status != http.StatusSeeOther || r.header.Get("Location") != "/dashboard" {
			t.Errorf("sign-in with next %q: %d Location %q", next, r.status, r.header.Get("Location"))
		}
	}
	// A sign-in form without its token is refused.
	if r := newBrowser(h).do(http.MethodPost, "/auth/dev-login", url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}}); r.status != http.StatusForbidden {
		t.Errorf("sign-in without a CSRF token: %d", r.status)
	}
}

// TestPageForms uses the sync dashboard's and the alerts fragment's forms
// and the identity provider's return with what a browser could send wrong.
func TestPageForms(t *testing.T) {
	h := startHost(t, hostOpts{})
	admin := h.login()
	if r := h.do(http.MethodPost, "/partials/sync-now/testplugin", admin, nil); r.status != http.StatusAccepted || !strings.Contains(string(r.body), "testplugin sync queued") {
		t.Errorf("sync now: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPost, "/partials/sync-now/nosuchjob", admin, nil); r.status != http.StatusNotFound {
		t.Errorf("sync now of an unknown job type: %d %s", r.status, r.body)
	}
	form := url.Values{"resolution_notes": {"done"}}.Encode()
	if r := h.do(http.MethodPost, "/partials/active-alerts/999999/resolve", admin, strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded"); r.status != http.StatusNotFound {
		t.Errorf("resolve an unknown alert: %d %s", r.status, r.body)
	}
	long := url.Values{"resolution_notes": {strings.Repeat("x", 4001)}}.Encode()
	if r := h.do(http.MethodPost, "/partials/active-alerts/1/resolve", admin, strings.NewReader(long), "Content-Type", "application/x-www-form-urlencoded"); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "body.resolution_notes") {
		t.Errorf("resolve with notes too long: %d %s", r.status, r.body)
	}

	// The provider's return finishes only a sign-in this browser started.
	b := newBrowser(h)
	for _, query := range []string{"code=abc&state=forged", "error=access_denied&state=x"} {
		r := b.do(http.MethodGet, "/login?"+query, nil)
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "Please") || b.cookie("steward_access") != nil {
			t.Errorf("/login?%s: %d %s", query, r.status, r.body)
		}
	}
}

// TestCSRFTokenNotFromTheQuery: the CSRF token counts only from the
// X-CSRF-Token header or a form field; the same good token in the query
// string is refused, by a session's state change and by a sign-in form.
func TestCSRFTokenNotFromTheQuery(t *testing.T) {
	h := startHost(t, hostOpts{})
	b := newBrowser(h)
	b.signIn("/sync-dashboard")
	page := b.do(http.MethodGet, "/sync-dashboard", nil)
	m := metaCSRFRE.FindStringSubmatch(string(page.body))
	if m == nil {
		t.Fatalf("sync dashboard: %d %s", page.status, page.body)
	}
	q := "?csrf_token=" + url.QueryEscape(m[1])
	if r := b.do(http.MethodPost, "/api/v1/sync/testplugin"+q, nil); r.status != http.StatusForbidden {
		t.Errorf("sync with the token in the query: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodPost, "/auth/logout"+q, url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("sign-out with the token in the query: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodGet, "/dashboard", nil); r.status != http.StatusOK {
		t.Errorf("the session after the refused sign-out: %d", r.status)
	}
	if r := b.do(http.MethodPost, "/api/v1/sync/testplugin", url.Values{"csrf_token": {m[1]}}); r.status != http.StatusAccepted {
		t.Errorf("sync with the token in the form: %d %s", r.status, r.body)
	}

	anon := newBrowser(h)
	login := anon.do(http.MethodGet, "/login", nil)
	f := csrfFieldRE.FindStringSubmatch(string(login.body))
	if f == nil {
		t.Fatalf("login page: %d %s", login.status, login.body)
	}
	r := anon.do(http.MethodPost, "/auth/dev-login?csrf_token="+url.QueryEscape(f[1]), url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}})
	if r.status != http.StatusForbidden || anon.cookie("steward_access") != nil {
		t.Errorf("sign-in with the form's token in the query: %d", r.status)
	}
}
