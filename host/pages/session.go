package pages

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/singleflight"

	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/websession"
)

// refreshes shares one rotation among a browser's concurrent requests: a
// page's fragments load together, and when the access token has just
// expired each would otherwise present the same refresh token, the second
// of which the rotation takes for a replayed token and revokes the
// sign-in. Requests on other replicas are not joined; the window is the
// few milliseconds of one rotation.
var refreshes singleflight.Group

// refreshResult is a rotation shared by the requests that joined it.
type refreshResult struct {
	tokens auth.Session
	at     time.Time
}

// SessionToken is the access token of a browser's session: the access
// cookie's, or, when that has expired and the refresh cookie is still
// good, a new one from a silent refresh, whose cookies the response
// carries. accessValid tells whether the access cookie's token is still
// good. It returns "" when the browser has no usable session. Signing
// out never refreshes: a rotation would extend the very session being
// ended and hand the browser fresh cookies.
func (p *Pages) SessionToken(c *fiber.Ctx, accessValid func(string) bool) string {
	if access := c.Cookies(websession.CookieAccess); access != "" && accessValid(access) {
		return access
	}
	refresh := c.Cookies(websession.CookieRefresh)
	if refresh == "" || (c.Method() == http.MethodPost && c.Path() == logoutPath) {
		return ""
	}
	key := sha256.Sum256([]byte(refresh))
	v, err, _ := refreshes.Do(string(key[:]), func() (any, error) {
		t, err := p.d.SignIn.RefreshSession(p.d.Context(c), refresh)
		return refreshResult{tokens: t, at: time.Now()}, err
	})
	if err != nil {
		if !errors.Is(err, auth.ErrSignInRefused) {
			p.d.Logger.Warn("session refresh failed", "error", err)
		}
		setCookies(c, p.d.Sessions.SignOut(c.Hostname())...)
		return ""
	}
	r := v.(refreshResult)
	setCookies(c, p.d.Sessions.Refreshed(c.Hostname(), r.tokens.Access, r.tokens.AccessExpires, r.tokens.Refresh, r.tokens.RefreshExpires, r.at)...)
	return r.tokens.Access
}

// unsafeMethod reports whether a method may change state.
func unsafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// CheckCSRF refuses a state-changing request that a browser's session
// cookie authenticated without the session's CSRF token (in the
// X-CSRF-Token header or the body's csrf_token form field, never the
// query string): such a request may
// have been sent by another site's page. Requests with a Bearer token or
// an API key need none, as a browser never adds those by itself; the
// sign-in forms check their own, anonymous, token.
func (p *Pages) CheckCSRF(c *fiber.Ctx, caller Caller) bool {
	if !caller.ViaCookie || !unsafeMethod(c.Method()) {
		return true
	}
	presented := c.Get(websession.HeaderCSRF)
	if presented == "" {
		presented = formField(c, websession.FormCSRF)
	}
	return p.d.Sessions.ValidCSRF(caller.ID, c.Cookies(websession.CookieCSRF), presented)
}

// formField is a field of the request's form body, URL-encoded or
// multipart, and never of its query string, where fiber's FormValue looks
// first: a token in a URL is written to access logs, browser history and
// Referer headers, and can be planted in a link.
func formField(c *fiber.Ctx, name string) string {
	ct := strings.ToLower(string(c.Request().Header.ContentType()))
	switch {
	case strings.HasPrefix(ct, fiber.MIMEApplicationForm):
		return string(c.Request().PostArgs().Peek(name))
	case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		if f, err := c.MultipartForm(); err == nil && len(f.Value[name]) > 0 {
			return f.Value[name][0]
		}
	}
	return ""
}

// csrfToken is the token a page hands its forms and htmx: the browser's
// CSRF cookie when it was issued to this user, else a new one, set now.
func (p *Pages) csrfToken(c *fiber.Ctx, caller Caller) string {
	if caller.ViaCookie {
		if tok := c.Cookies(websession.CookieCSRF); p.d.Sessions.CSRFFor(caller.ID, tok) {
			return tok
		}
		ck := p.d.Sessions.CSRFCookie(c.Hostname(), caller.ID)
		setCookies(c, ck)
		return ck.Value
	}
	return ""
}
