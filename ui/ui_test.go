package ui

import (
	"html/template"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

const evil = `<script>alert(1)</script>`

func testUI(t *testing.T, env string) *UI {
	t.Helper()
	u, err := New(Options{Environment: env, Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func samplePage() PageData {
	return PageData{
		Title: "Costs", Path: "/costs/budgets/42",
		User:    User{Name: "Ada", Email: "ada@example.com", Admin: true},
		Tenants: []Tenant{{ID: "t1", Name: "Contoso"}, {ID: "t 2", Name: "Fabrikam"}}, TenantID: "t 2",
		Nav: []NavEntry{
			{Label: "Evidence", Path: "/acme/evidence", Order: 50},
			{Label: "Dashboard", Path: "/", Order: 0},
			{Label: "Budgets", Path: "/costs/budgets", Order: 11},
			{Label: "Costs", Path: "/costs", Order: 10},
		},
		Slots: []Slot{
			{Title: "Quotas", Path: "/fragments/quotas", RefreshSeconds: 30},
			{Title: "Findings", Path: "/fragments/acme/findings?limit=5"},
		},
		CSRFToken: "tok-123", BrandColor: "#0a66c2",
	}
}

func render(t *testing.T, f func(w http.ResponseWriter) error) (*httptest.ResponseRecorder, string) {
	t.Helper()
	w := httptest.NewRecorder()
	if err := f(w); err != nil {
		t.Fatal(err)
	}
	return w, w.Body.String()
}

func mustContain(t *testing.T, page string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

func TestPageLayout(t *testing.T) {
	u := testUI(t, "production")
	w, page := render(t, func(w http.ResponseWriter) error { return u.Page(w, samplePage()) })
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/html; charset=utf-8" ||
		w.Header().Get("Content-Security-Policy") != ContentSecurityPolicy || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("status %d, headers %v", w.Code, w.Header())
	}
	css, _ := u.Assets().URL("app.css")
	js, _ := u.Assets().URL("app.js")
	mustContain(t, page,
		`<a class="skip-link" href="#main">`, `<main id="main"`,
		`<link rel="stylesheet" href="`+css+`">`, `<script src="`+js+`" defer></script>`,
		`<link rel="stylesheet" href="/static/brand.0a66c2.css">`,
		`<meta name="csrf-token" content="tok-123">`,
		`<title>Costs · Steward</title>`,
		`<option value="t1">Contoso</option>`, `<option value="t 2" selected>Fabrikam</option>`,
		`<form class="tenant-picker" method="get" action="/costs/budgets/42">`,
		`<form method="post" action="/auth/logout">`, `<input type="hidden" name="csrf_token" value="tok-123">`,
		`<span class="badge health-ok">Admin</span>`,
		`<footer class="footer">Steward v1.2.3</footer>`,
	)
	if strings.Contains(page, "env-badge") {
		t.Error("production shows an environment badge")
	}
}

func TestNavIsOrderedAndMarksTheActiveEntry(t *testing.T) {
	_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, samplePage()) })
	nav := regexp.MustCompile(`<li><a href="([^"]*)"( aria-current="page")?>`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, m := range nav {
		got = append(got, m[1]+m[2])
	}
	// Each link carries the selected tenant, so the next page opens
	// scoped as this one.
	want := []string{"/?tenant_id=t&#43;2", "/costs?tenant_id=t&#43;2", `/costs/budgets?tenant_id=t&#43;2 aria-current="page"`, "/acme/evidence?tenant_id=t&#43;2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("nav = %q, want %q", got, want)
	}
	d := samplePage()
	d.TenantID, d.Path = "", "/"
	_, page = render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, d) })
	if !strings.Contains(page, `<a href="/" aria-current="page">`) || strings.Count(page, "aria-current") != 1 {
		t.Error("on / only the dashboard entry should be current")
	}
	d.Path = "/costsheet"
	_, page = render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, d) })
	if strings.Contains(page, "aria-current") {
		t.Error("/costsheet should match no entry")
	}
}

func TestSlotsLoadTheirFragmentsWithTheTenant(t *testing.T) {
	_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, samplePage()) })
	mustContain(t, page,
		`hx-get="/fragments/quotas?tenant_id=t&#43;2" hx-trigger="load, every 30s, retry" hx-indicator="#slot-1-indicator"`,
		`hx-get="/fragments/acme/findings?limit=5&amp;tenant_id=t&#43;2" hx-trigger="load, retry"`,
		`aria-labelledby="slot-1-title"`, `<h2 class="slot-title" id="slot-1-title">Quotas</h2>`,
		`class="loading" role="status"><span class="visually-hidden">Loading Quotas</span>`,
		`<div class="card-body slot-status" hidden><div class="error-state" role="status">`, `Quotas is unavailable.`, `Retrying…`,
	)
	d := samplePage()
	d.TenantID = ""
	_, page = render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, d) })
	mustContain(t, page, `hx-get="/fragments/quotas" `)
	for _, bad := range []string{"https://elsewhere.example/f", "//elsewhere.example/f", `/\elsewhere`, "fragments/x"} {
		d.Slots = []Slot{{Title: "x", Path: bad}}
		if err := testUI(t, "").Page(httptest.NewRecorder(), d); err == nil {
			t.Errorf("a slot at %q was accepted", bad)
		}
	}
}

// TestWideSlotTakesTheRow: a slot of a wide table spans the grid's row.
func TestWideSlotTakesTheRow(t *testing.T) {
	d := samplePage()
	d.Slots = []Slot{{Title: "Runs", Path: "/runs", Wide: true}, {Title: "Alerts", Path: "/alerts"}}
	_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, d) })
	mustContain(t, page, `<section class="card slot card-wide" aria-labelledby="slot-1-title"`, `<section class="card slot" aria-labelledby="slot-2-title"`)
}

// TestMainSlotHasThePageHeading: a page whose one slot is its content
// (a plugin's page) has one heading, the page's, which names the slot.
func TestMainSlotHasThePageHeading(t *testing.T) {
	d := samplePage()
	d.Slots = []Slot{{Title: d.Title, Path: "/costs/budgets/42", Main: true}}
	_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, d) })
	mustContain(t, page, `<h1 id="page-title">Costs</h1>`, `<section class="card slot slot-main" aria-labelledby="page-title" aria-busy="true">`,
		`hx-indicator="#slot-1-indicator"`, `id="slot-1-indicator"`, `Costs is unavailable.`)
	if n := strings.Count(page, "<h1") + strings.Count(page, "<h2"); n != 1 {
		t.Errorf("the page has %d headings, want the one h1", n)
	}
}

func TestTextIsEscaped(t *testing.T) {
	u := testUI(t, "development")
	d := samplePage()
	d.Title, d.Description, d.User.Name, d.User.Email = evil, evil, evil, evil
	d.Tenants = []Tenant{{ID: `"><script>`, Name: evil}}
	d.Nav = []NavEntry{{Label: evil, Path: "/x"}}
	d.Slots = []Slot{{Title: evil, Path: "/f"}}
	d.CSRFToken = `"><script>`
	d.BrandColor = `#000;}body{display:none`
	pages := map[string]func(w http.ResponseWriter) error{
		"page": func(w http.ResponseWriter) error { return u.Page(w, d) },
		"login": func(w http.ResponseWriter) error {
			return u.Login(w, LoginData{Next: `/x"><script>`, Error: evil, CSRFToken: evil})
		},
		"error":  func(w http.ResponseWriter) error { return u.Error(w, http.StatusForbidden, evil) },
		"design": func(w http.ResponseWriter) error { return u.DesignSystem(w, d) },
	}
	for name, f := range pages {
		_, page := render(t, f)
		if strings.Contains(page, "<script>") {
			t.Errorf("%s: unescaped script", name)
		}
		if !strings.Contains(page, "&lt;script&gt;") {
			t.Errorf("%s: the escaped text is missing", name)
		}
		if strings.Contains(page, "brand.") {
			t.Errorf("%s: an invalid brand colour reached the page", name)
		}
	}
}

func TestContentIsTrustedHTML(t *testing.T) {
	d := samplePage()
	d.Content = template.HTML(`<div class="card">plugin page</div>`)
	_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").Page(w, d) })
	mustContain(t, page, `<div class="card">plugin page</div>`)
}

func TestLoginShowsTheDevelopmentFormOnlyInDevelopment(t *testing.T) {
	data := LoginData{Next: "/costs?x=1", Error: "That did not work.", CSRFToken: "tok"}
	_, dev := render(t, func(w http.ResponseWriter) error { return testUI(t, "development").Login(w, data) })
	mustContain(t, dev,
		`<form method="post" action="/auth/login">`, `Sign in with your identity provider`,
		`<input type="hidden" name="next" value="/costs?x=1">`, `<input type="hidden" name="csrf_token" value="tok">`,
		`<p class="alert" role="alert">That did not work.</p>`,
		`<form class="dev-login" method="post" action="/auth/dev-login">`, `type="password"`,
	)
	for _, env := range []string{"production", "staging", ""} {
		_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, env).Login(w, data) })
		if strings.Contains(page, "dev-login") || strings.Contains(page, "password") {
			t.Errorf("%q: the login page shows the development form", env)
		}
		mustContain(t, page, `Sign in with your identity provider`)
	}
	for _, next := range []string{"https://evil.example/", "//evil.example", `/\evil.example`, "javascript:alert(1)", ""} {
		_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").Login(w, LoginData{Next: next}) })
		mustContain(t, page, `<input type="hidden" name="next" value="/">`)
	}
}

func TestErrorPage(t *testing.T) {
	w, page := render(t, func(w http.ResponseWriter) error {
		return testUI(t, "").Error(w, http.StatusServiceUnavailable, "The database is unreachable; try again shortly.")
	})
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d", w.Code)
	}
	mustContain(t, page, `<p class="error-code">503</p>`, `<h1>Service Unavailable</h1>`, "The database is unreachable; try again shortly.", `href="/"`)
	if strings.Contains(page, `class="nav"`) || strings.Contains(page, "Sign out") {
		t.Error("the error page shows the signed-in chrome")
	}
}

func TestDesignSystemShowsEveryState(t *testing.T) {
	_, page := render(t, func(w http.ResponseWriter) error { return testUI(t, "").DesignSystem(w, samplePage()) })
	mustContain(t, page, "<h1>Design system</h1>",
		`class="badge health-ok"`, `class="badge health-warning"`, `class="badge health-critical"`, `class="badge health-unknown"`,
		`class="stat health-ok"`, `class="stat health-warning"`, `class="stat health-critical"`, `class="stat health-unknown"`,
		`class="gauge health-ok"`, `class="gauge health-critical"`, `class="bars"`, `class="chart"`, `class="chart-band"`,
		`class="table-empty"`, `class="empty"`, `class="error-state"`, "Retrying…", `class="loading"`, `class="btn btn-primary"`,
	)
	if strings.Contains(page, "hx-get") {
		t.Error("the design-system page loads data")
	}
}

// inlineCode matches what the Content-Security-Policy would block: inline
// scripts, style elements and attributes, event-handler attributes and
// javascript: URLs.
var (
	scriptTag  = regexp.MustCompile(`<script[^>]*>`)
	inlineCode = regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|javascript:`)
)

func TestNoInlineScriptOrStyle(t *testing.T) {
	for _, env := range []string{"development", "production"} {
		u := testUI(t, env)
		d := samplePage()
		d.Content = "<p>plugin</p>"
		pages := map[string]func(w http.ResponseWriter) error{
			"page":   func(w http.ResponseWriter) error { return u.Page(w, d) },
			"login":  func(w http.ResponseWriter) error { return u.Login(w, LoginData{Error: "x"}) },
			"error":  func(w http.ResponseWriter) error { return u.Error(w, http.StatusNotFound, "x") },
			"design": func(w http.ResponseWriter) error { return u.DesignSystem(w, d) },
		}
		for name, f := range pages {
			_, page := render(t, f)
			if m := inlineCode.FindString(page); m != "" {
				t.Errorf("%s (%s): inline code %q", name, env, m)
			}
			for _, tag := range scriptTag.FindAllString(page, -1) {
				if !regexp.MustCompile(`^<script src="/static/[a-z]+\.[0-9a-f]{8}\.js" defer>$`).MatchString(tag) {
					t.Errorf("%s (%s): script %s is not an asset", name, env, tag)
				}
			}
			if strings.Count(page, "<script") != strings.Count(page, `defer></script>`) {
				t.Errorf("%s (%s): a script element has content", name, env)
			}
		}
	}
}

func TestPageWithoutHTMX(t *testing.T) {
	fsys := testFS(t)
	a, err := newAssets(fsys)
	if err != nil {
		t.Fatal(err)
	}
	u, err := newUI(Options{}, fsys, a)
	if err != nil {
		t.Fatal(err)
	}
	_, page := render(t, func(w http.ResponseWriter) error { return u.Page(w, samplePage()) })
	if strings.Contains(page, "/static/htmx.") {
		t.Error("the page links htmx, which this build lacks")
	}
	mustContain(t, page, `/static/app.`)
}

// testFS is a copy of the embedded tree without htmx.
func testFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "static/vendor/htmx.min.js" {
			return err
		}
		b, err := fs.ReadFile(files, p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
