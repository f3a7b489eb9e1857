package websession_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/host/websession"
)

func TestSafeNext(t *testing.T) {
	for raw, want := range map[string]string{
		"":                              "/dashboard",
		"/sync-dashboard":               "/sync-dashboard",
		"/dashboard?tenant_id=t-1":      "/dashboard?tenant_id=t-1",
		"/resources#quotas":             "/resources",
		"//evil.example/x":              "/dashboard",
		"/\\evil.example":               "/dashboard",
		"/a\\b":                         "/dashboard",
		"https://evil.example/":         "/dashboard",
		"javascript:alert(1)":           "/dashboard",
		"dashboard":                     "/dashboard",
		"/x\r\nLocation: http://e/":     "/dashboard",
		"/login?next=/dmarc":            "/dashboard",
		"/auth/login":                   "/dashboard",
		"/%2F%2Fevil.example":           "/%2F%2Fevil.example",
		"/%2Fevil.example/|":            "/dashboard",
		"/%2Fevil.example/é":            "/dashboard",
		"/" + strings.Repeat("a", 3000): "/dashboard",
	} {
		if got := websession.SafeNext(raw); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := websession.LoginURL("/dmarc?tenant_id=a b"); got != "/login?next=%2Fdmarc%3Ftenant_id%3Da+b" {
		t.Errorf("LoginURL = %q", got)
	}
}

func TestCSRF(t *testing.T) {
	s := websession.New("0123456789abcdef0123456789abcdef", false)
	tok := s.NewCSRF("user-1")
	if !s.ValidCSRF("user-1", tok, tok) {
		t.Fatal("a token does not verify for its user")
	}
	if s.NewCSRF("user-1") == tok {
		t.Error("two tokens are equal")
	}
	for name, ok := range map[string]bool{
		"another user":       s.ValidCSRF("user-2", tok, tok),
		"anonymous":          s.ValidCSRF("", tok, tok),
		"no cookie":          s.ValidCSRF("user-1", "", tok),
		"nothing presented":  s.ValidCSRF("user-1", tok, ""),
		"another token":      s.ValidCSRF("user-1", tok, s.NewCSRF("user-1")),
		"another host's key": websession.New("another secret, 32 bytes or more!", false).ValidCSRF("user-1", tok, tok),
		"tampered nonce":     s.ValidCSRF("user-1", "x"+tok, "x"+tok),
		"no signature":       s.ValidCSRF("user-1", "abc", "abc"),
		"empty nonce":        s.ValidCSRF("user-1", "."+strings.SplitN(tok, ".", 2)[1], "."+strings.SplitN(tok, ".", 2)[1]),
	} {
		if ok {
			t.Errorf("%s: accepted", name)
		}
	}
	anon := s.NewCSRF("")
	if !s.ValidCSRF("", anon, anon) || s.ValidCSRF("user-1", anon, anon) {
		t.Error("a sign-in form's token must verify for nobody but the anonymous caller")
	}
}

func TestCookies(t *testing.T) {
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	dev := websession.New("0123456789abcdef0123456789abcdef", true)
	prod := websession.New("0123456789abcdef0123456789abcdef", false)
	for host, secure := range map[string]bool{"127.0.0.1:8000": false, "localhost:8000": false, "[::1]:8000": false, "localhost": false,
		"steward.example.com": true, "10.0.0.5:8000": true} {
		if got := dev.Secure(host); got != secure {
			t.Errorf("development, %s: Secure %v", host, got)
		}
		if !prod.Secure(host) {
			t.Errorf("production, %s: not Secure", host)
		}
	}
	cs := prod.SignIn("steward.example.com", "user-1", "acc", now.Add(15*time.Minute), "ref", now.Add(7*24*time.Hour), now)
	if len(cs) != 4 {
		t.Fatalf("%d cookies", len(cs))
	}
	byName := map[string]websession.Cookie{}
	for _, c := range cs {
		byName[c.Name] = c
		if !c.Secure || c.Path != "/" {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	if a := byName[websession.CookieAccess]; a.Value != "acc" || a.MaxAge != 900 || !a.HTTPOnly {
		t.Errorf("access cookie %+v", a)
	}
	if r := byName[websession.CookieRefresh]; r.Value != "ref" || r.MaxAge != 7*24*3600 || !r.HTTPOnly {
		t.Errorf("refresh cookie %+v", r)
	}
	if c := byName[websession.CookieCSRF]; !prod.CSRFFor("user-1", c.Value) {
		t.Errorf("csrf cookie %+v is not the user's", c)
	}
	if c := byName[websession.CookieTenant]; c.MaxAge >= 0 || c.Value != "" {
		t.Errorf("a sign-in must start on all the user's tenants: %+v", c)
	}
	if rc := prod.Refreshed("steward.example.com", "a2", now.Add(time.Minute), "r2", now.Add(time.Hour), now); len(rc) != 2 {
		t.Errorf("a refresh must keep the CSRF token: %+v", rc)
	}
	out := prod.SignOut("steward.example.com")
	for _, c := range out {
		if c.MaxAge >= 0 || c.Value != "" {
			t.Errorf("sign-out cookie %+v", c)
		}
	}
	if !slices.ContainsFunc(out, func(c websession.Cookie) bool { return c.Name == websession.CookieTenant }) {
		t.Error("sign-out leaves the tenant scope")
	}
	if c := prod.TenantCookie("steward.example.com", "t-1"); c.Value != "t-1" || c.MaxAge != 0 || !c.HTTPOnly || !c.Secure {
		t.Errorf("tenant cookie %+v", c)
	}
}
