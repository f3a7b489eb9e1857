package pages

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/websession"
	"github.com/stewardhq/steward/ui"
)

// cookieSignIn keeps a started identity-provider sign-in in the browser
// that started it: its state, PKCE verifier and the path to return to.
// It is HttpOnly and SameSite=Lax, so it comes back on the provider's
// redirect (a top-level navigation) and to nobody else.
const cookieSignIn = "steward_signin"

// signInTTL is how long a started sign-in can be finished, as long as the
// host keeps its state.
const signInTTL = 10 * time.Minute

func setCookies(c *fiber.Ctx, cookies ...websession.Cookie) {
	for _, k := range cookies {
		ck := &fiber.Cookie{Name: k.Name, Value: k.Value, Path: k.Path, MaxAge: k.MaxAge, Secure: k.Secure, HTTPOnly: k.HTTPOnly, SameSite: fiber.CookieSameSiteLaxMode}
		if k.MaxAge < 0 {
			ck.Expires = time.Unix(1, 0)
		}
		c.Cookie(ck)
	}
}

// SignInStep reports whether a request is one of a browser's sign-in
// attempts, which the host counts on the sign-in rate budget like the
// API's: a sign-in form's post (development credentials, or the start of
// an identity-provider sign-in) and the identity provider's return to the
// sign-in page, which redeems a code. Showing the sign-in page is not one.
func SignInStep(c *fiber.Ctx) bool {
	switch c.Method() + " " + c.Path() {
	case http.MethodPost + " " + devLoginPath, http.MethodPost + " " + startIdPPath:
		return true
	case http.MethodGet + " " + loginPath, http.MethodGet + " " + startIdPPath:
		return idpReturning(c)
	}
	return false
}

// idpReturning reports whether the identity provider has sent the browser
// back to the sign-in page, with a code or an error.
func idpReturning(c *fiber.Ctx) bool { return c.Query("code") != "" || c.Query("error") != "" }

// loginPage shows the sign-in page, or, when the identity provider has sent
// the browser back with a code, finishes that sign-in.
func (p *Pages) loginPage(c *fiber.Ctx) error {
	if idpReturning(c) {
		return p.idpReturn(c)
	}
	next := websession.SafeNext(c.Query("next"))
	if caller, ok := p.d.Caller(c); ok && caller.ViaCookie {
		return c.Redirect(next, http.StatusSeeOther)
	}
	return p.showLogin(c, http.StatusOK, next, "")
}

// showLogin renders the sign-in page with a fresh anonymous CSRF token.
func (p *Pages) showLogin(c *fiber.Ctx, status int, next, message string) error {
	csrf := p.d.Sessions.CSRFCookie(c.Hostname(), "")
	setCookies(c, csrf)
	return render(c, func(w http.ResponseWriter) error {
		if err := p.d.UI.Login(w, ui.LoginData{Next: next, Error: message, CSRFToken: csrf.Value}); err != nil {
			return err
		}
		if p.d.IdPOrigin != "" {
			// The sign-in form's answer sends the browser on to the
			// identity provider, which form-action must allow.
			csp := w.Header().Get("Content-Security-Policy")
			w.Header().Set("Content-Security-Policy", strings.Replace(csp, "form-action 'self'", "form-action 'self' "+p.d.IdPOrigin, 1))
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
		}
		return nil
	})
}

// anonymousCSRF checks the sign-in forms' CSRF token: it was issued to
// nobody, by this host, and matches the browser's cookie.
func (p *Pages) anonymousCSRF(c *fiber.Ctx) bool {
	return p.d.Sessions.ValidCSRF("", c.Cookies(websession.CookieCSRF), formField(c, websession.FormCSRF))
}

// startIdP sends the browser to the identity provider.
func (p *Pages) startIdP(c *fiber.Ctx) error {
	next := websession.SafeNext(c.FormValue("next"))
	if !p.anonymousCSRF(c) {
		return p.showLogin(c, http.StatusForbidden, next, "Your sign-in form expired. Please try again.")
	}
	redirect := p.d.IdPRedirectURI
	if redirect == "" {
		redirect = c.BaseURL() + "/login"
	}
	authURL, state, verifier, err := p.d.SignIn.BeginBrowserSignIn(p.d.Context(c), redirect, strings.TrimSpace(c.FormValue("login_hint")))
	if err != nil {
		p.d.Logger.Warn("browser sign-in could not start", "error", err)
		return p.showLogin(c, http.StatusServiceUnavailable, next, "Signing in with your identity provider is unavailable right now. Please try again shortly.")
	}
	secure := p.d.Sessions.Secure(c.Hostname())
	c.Cookie(&fiber.Cookie{Name: cookieSignIn, Value: state + " " + verifier + " " + next, Path: "/", MaxAge: int(signInTTL / time.Second),
		Secure: secure, HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode})
	return c.Redirect(authURL, http.StatusSeeOther)
}

// idpReturn finishes a sign-in the browser started here.
func (p *Pages) idpReturn(c *fiber.Ctx) error {
	state, verifier, next := "", "", websession.DefaultNext
	if parts := strings.SplitN(c.Cookies(cookieSignIn), " ", 3); len(parts) == 3 {
		state, verifier, next = parts[0], parts[1], websession.SafeNext(parts[2])
	}
	setCookies(c, websession.Cookie{Name: cookieSignIn, Path: "/", MaxAge: -1, Secure: p.d.Sessions.Secure(c.Hostname()), HTTPOnly: true})
	if c.Query("error") != "" {
		return p.showLogin(c, http.StatusUnauthorized, next, "The identity provider did not sign you in. Please try again.")
	}
	if state == "" || c.Query("state") != state {
		return p.showLogin(c, http.StatusUnauthorized, next, "This sign-in was not started in this browser, or it expired. Please start again.")
	}
	t, err := p.d.SignIn.FinishBrowserSignIn(p.d.Context(c), c.Query("code"), verifier, state)
	if err != nil {
		return p.signInFailed(c, next, err)
	}
	return p.finishSignIn(c, t, next)
}

// devLogin signs in with the development credentials.
func (p *Pages) devLogin(c *fiber.Ctx) error {
	next := websession.SafeNext(c.FormValue("next"))
	if !p.anonymousCSRF(c) {
		return p.showLogin(c, http.StatusForbidden, next, "Your sign-in form expired. Please try again.")
	}
	t, err := p.d.SignIn.DevSession(p.d.Context(c), c.FormValue("username"), c.FormValue("password"))
	if err != nil {
		return p.signInFailed(c, next, err)
	}
	return p.finishSignIn(c, t, next)
}

func (p *Pages) signInFailed(c *fiber.Ctx, next string, err error) error {
	if errors.Is(err, auth.ErrSignInRefused) {
		return p.showLogin(c, http.StatusUnauthorized, next, "Those credentials were not accepted.")
	}
	p.d.Logger.Warn("browser sign-in failed", "error", err)
	return p.showLogin(c, http.StatusServiceUnavailable, next, "Signing in is unavailable right now. Please try again shortly.")
}

func (p *Pages) finishSignIn(c *fiber.Ctx, t auth.Session, next string) error {
	setCookies(c, p.d.Sessions.SignIn(c.Hostname(), t.Subject, t.Access, t.AccessExpires, t.Refresh, t.RefreshExpires, time.Now())...)
	return c.Redirect(next, http.StatusSeeOther)
}

// logout ends the browser's session whatever its cookies hold — a good
// access token, an expired one, only the refresh token, garbage: what
// still verifies is revoked (see auth.Routes.EndSession), the cookies are
// cleared, and the browser goes to sign in. The request's cookies were
// not refreshed on the way in (see SessionToken).
func (p *Pages) logout(c *fiber.Ctx) error {
	if caller, ok := p.d.Caller(c); ok && !caller.ViaCookie {
		return p.d.Problem(c, http.StatusBadRequest, "this signs a browser out; an API client signs out with POST /api/v1/auth/logout")
	}
	if err := p.d.SignIn.EndSession(p.d.Context(c), c.Cookies(websession.CookieAccess), c.Cookies(websession.CookieRefresh)); err != nil {
		return err
	}
	setCookies(c, p.d.Sessions.SignOut(c.Hostname())...)
	return c.Redirect("/login", http.StatusSeeOther)
}
