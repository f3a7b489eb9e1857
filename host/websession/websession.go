// Package websession keeps a browser signed in: Steward's own access and
// refresh tokens in HttpOnly cookies, a CSRF token that every
// state-changing request carried by those cookies must repeat, the `next`
// path a sign-in returns to, and the tenant the pages are scoped to.
//
// API clients (a Bearer token or an API key) never meet any of this: their
// credentials are not sent by a browser on its own, so they need no CSRF
// token.
//
// The CSRF token is a signed double-submit token: a random value bound by
// an HMAC to the user it was issued to (or to nobody, before sign-in), kept
// in a cookie that pages read into a <meta> tag and forms, and checked
// against that cookie and the caller on every POST, PUT, PATCH and DELETE.
// Another origin can neither read the cookie nor forge a token for the
// victim without the host's key, and a token planted through a sibling
// domain's cookie does not verify for the signed-in user.
package websession

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/url"
	"strings"
	"time"
)

// Cookie names.
const (
	CookieAccess  = "steward_access"
	CookieRefresh = "steward_refresh"
	CookieCSRF    = "steward_csrf"
	// CookieTenant holds the tenant the browser's pages are scoped to, or
	// the brand as "brand:<id>" (as the picker names it, ui.BrandOption),
	// which only the pages read; an API request never does.
	CookieTenant = "steward_tenant"
)

// HeaderCSRF carries the CSRF token of an htmx or script request; a form
// carries it in the field FormCSRF.
const (
	HeaderCSRF = "X-CSRF-Token"
	FormCSRF   = "csrf_token"
)

// DefaultNext is where a sign-in lands without a usable next path.
const DefaultNext = "/dashboard"

// csrfTTL is how long a CSRF cookie lives; a longer session gets a new one
// at its next page.
const csrfTTL = 12 * time.Hour

// Cookie is a cookie to set (MaxAge > 0, or 0 for as long as the browser
// session) or clear (MaxAge < 0), in the form the host's HTTP layer
// writes. Every one is SameSite=Lax: sent on a top-level navigation to
// Steward (a link from elsewhere opens the user's dashboard), never on
// another site's form post, image or script request.
type Cookie struct {
	Name     string
	Value    string
	Path     string
	MaxAge   int
	Secure   bool
	HTTPOnly bool
}

// Sessions issues and checks a browser's session cookies and CSRF tokens.
type Sessions struct {
	key []byte
	// development allows cookies without Secure for a loopback host.
	development bool
}

// New returns Sessions whose CSRF tokens are signed with a key derived
// from secret (the host's token signing secret; derived, so the two keys
// never sign each other's messages).
func New(secret string, development bool) *Sessions {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("steward websession csrf v1"))
	return &Sessions{key: m.Sum(nil), development: development}
}

// Secure reports whether cookies for a request to host must be Secure:
// always, except in development on a loopback address, where the host is
// reached over plain HTTP.
func (s *Sessions) Secure(host string) bool {
	if !s.development {
		return true
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

// SignIn returns the cookies of a new or refreshed session: the access and
// refresh tokens, each living as long as the token, and a CSRF token bound
// to the user (a fresh one at every sign-in, so a token planted before it
// is worth nothing after).
func (s *Sessions) SignIn(host, subject, access string, accessExp time.Time, refresh string, refreshExp time.Time, now time.Time) []Cookie {
	secure := s.Secure(host)
	return []Cookie{
		{Name: CookieAccess, Value: access, Path: "/", MaxAge: maxAge(accessExp, now), Secure: secure, HTTPOnly: true},
		{Name: CookieRefresh, Value: refresh, Path: "/", MaxAge: maxAge(refreshExp, now), Secure: secure, HTTPOnly: true},
		s.CSRFCookie(host, subject),
		// A new sign-in, perhaps another user's, starts on all its tenants.
		s.TenantCookie(host, ""),
	}
}

// Refreshed returns the cookies of a silently refreshed session: new
// tokens, and the user's CSRF token unchanged so that pages already open
// keep working.
func (s *Sessions) Refreshed(host, access string, accessExp time.Time, refresh string, refreshExp time.Time, now time.Time) []Cookie {
	secure := s.Secure(host)
	return []Cookie{
		{Name: CookieAccess, Value: access, Path: "/", MaxAge: maxAge(accessExp, now), Secure: secure, HTTPOnly: true},
		{Name: CookieRefresh, Value: refresh, Path: "/", MaxAge: maxAge(refreshExp, now), Secure: secure, HTTPOnly: true},
	}
}

// SignOut returns the cookies that end a session in the browser.
func (s *Sessions) SignOut(host string) []Cookie {
	secure := s.Secure(host)
	return []Cookie{
		{Name: CookieAccess, Path: "/", MaxAge: -1, Secure: secure, HTTPOnly: true},
		{Name: CookieRefresh, Path: "/", MaxAge: -1, Secure: secure, HTTPOnly: true},
		{Name: CookieCSRF, Path: "/", MaxAge: -1, Secure: secure},
		s.TenantCookie(host, ""),
	}
}

// TenantCookie returns the cookie that scopes the browser's pages to a
// tenant (or to a brand, given "brand:<id>"), or, for "", the one that
// clears the scope. It lasts as long as
// the browser session: the scope is a view setting, and the pages check
// on every request that the caller may still see the tenant.
func (s *Sessions) TenantCookie(host, tenantID string) Cookie {
	if tenantID == "" {
		return Cookie{Name: CookieTenant, Path: "/", MaxAge: -1, Secure: s.Secure(host), HTTPOnly: true}
	}
	return Cookie{Name: CookieTenant, Value: tenantID, Path: "/", Secure: s.Secure(host), HTTPOnly: true}
}

// CSRFCookie returns a cookie holding a new CSRF token for subject (empty
// before sign-in). It is not HttpOnly: the page's own script reads no
// cookie, but a page may be rendered from it.
func (s *Sessions) CSRFCookie(host, subject string) Cookie {
	return Cookie{Name: CookieCSRF, Value: s.NewCSRF(subject), Path: "/", MaxAge: int(csrfTTL / time.Second), Secure: s.Secure(host)}
}

// NewCSRF returns a new CSRF token for subject: a random nonce and its
// HMAC with the subject.
func (s *Sessions) NewCSRF(subject string) string {
	nonce := make([]byte, 18)
	_, _ = rand.Read(nonce)
	n := base64.RawURLEncoding.EncodeToString(nonce)
	return n + "." + s.sign(subject, n)
}

// ValidCSRF reports whether a request may change state: the token it
// presents equals its CSRF cookie and was issued to subject (the caller the
// request's cookies authenticate, empty for none).
func (s *Sessions) ValidCSRF(subject, cookie, presented string) bool {
	if cookie == "" || !hmac.Equal([]byte(cookie), []byte(presented)) {
		return false
	}
	return s.CSRFFor(subject, cookie)
}

// CSRFFor reports whether a CSRF token was issued to subject by this host.
func (s *Sessions) CSRFFor(subject, token string) bool {
	n, mac, ok := strings.Cut(token, ".")
	if !ok || n == "" {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(s.sign(subject, n)))
}

func (s *Sessions) sign(subject, nonce string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(subject))
	m.Write([]byte{0})
	m.Write([]byte(nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func maxAge(exp, now time.Time) int {
	if d := exp.Sub(now); d > time.Second {
		return int(d / time.Second)
	}
	return 1
}

// SafeNext returns raw if it is a path on this host to return to after
// sign-in, else DefaultNext: an absolute path, not a scheme-relative
// "//host" or "/\host" (which browsers treat alike), with no scheme, host
// or control character, and not a sign-in page itself. It never yields an
// address on another origin.
func SafeNext(raw string) string {
	if raw == "" || len(raw) > maxNext || raw[0] != '/' || strings.HasPrefix(raw, "//") || strings.HasPrefix(raw, "/\\") {
		return DefaultNext
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return DefaultNext
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return DefaultNext
	}
	switch u.Path {
	case "/login", "/auth/login", "/logout", "/auth/logout":
		return DefaultNext
	}
	// Written again by net/url, a path holding an encoded slash and a
	// character net/url escapes comes back with the slash decoded
	// ("/%2Fevil.example/|" as "//evil.example/%7C", which a browser reads
	// as an address on evil.example), and longer.
	next := u.RequestURI()
	if strings.HasPrefix(next, "//") || len(next) > maxNext {
		return DefaultNext
	}
	return next
}

// maxNext bounds the length of a next path, as sent and as returned.
const maxNext = 2048

// LoginURL is the sign-in page that returns to next.
func LoginURL(next string) string {
	return "/login?next=" + url.QueryEscape(SafeNext(next))
}
