// Package pages serves Steward's web pages: sign-in and sign-out for a
// browser, the dashboard, the sync dashboard, the design system, plugins'
// pages inside the host's layout (or laid out by the host from a slot's
// fragments), and the host's own fragments. Pages are rendered by ui; fragments are loaded by htmx into a
// page's slots, each from its own route, so one plugin that is down leaves
// one slot unavailable and never the page.
//
// A browser holds its session in cookies (see websession); every page and
// fragment also answers an API client with a Bearer token or an API key.
// Without credentials a browser is sent to sign in and come back (303 to
// /login?next=…), an htmx request is told to do so (HX-Redirect), and any
// other caller gets 401.
package pages

import (
	"bytes"
	"context"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/jobs"
	"github.com/stewardhq/steward/host/notifications"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/host/websession"
	"github.com/stewardhq/steward/ui"
)

// Caller is the signed-in user or API key a request acts for, as pages
// need it.
type Caller struct {
	ID        string
	Name      string
	Email     string
	Admin     bool
	TenantIDs []string
	// ViaCookie is set when the browser's session cookie authenticated the
	// request (so it must carry a CSRF token to change anything).
	ViaCookie bool
}

// CanSee reports whether the caller may see the tenant.
func (c Caller) CanSee(tenantID string) bool {
	return c.Admin || slices.Contains(c.TenantIDs, tenantID)
}

// SignIn is what the sign-in pages ask of the host's authentication
// (auth.Routes): the operations of its API, with the same checks and audit
// entries. Refusals are auth.ErrSignInRefused, outages
// auth.ErrSignInUnavailable.
type SignIn interface {
	DevSession(ctx context.Context, username, password string) (auth.Session, error)
	BeginBrowserSignIn(ctx context.Context, redirectURI, loginHint string) (authorizationURL, state, verifier string, err error)
	FinishBrowserSignIn(ctx context.Context, code, verifier, state string) (auth.Session, error)
	RefreshSession(ctx context.Context, refreshToken string) (auth.Session, error)
	EndSession(ctx context.Context, accessToken, refreshToken string) error
}

// Deps are what the pages are served from.
type Deps struct {
	UI       *ui.UI
	Sessions *websession.Sessions
	SignIn   SignIn
	Plugins  *plugins.Supervisor
	Jobs     *jobs.Scheduler
	// Freshness and Tenancy back the tenant sync status and the picker.
	Freshness *freshness.Store
	// FreshnessThresholds gives the data domains tenants are judged on and
	// their thresholds; nil means freshness.DefaultThresholds.
	FreshnessThresholds func() map[string]time.Duration
	Tenancy             *tenancy.Store
	// Notifications backs the Notifications page.
	Notifications *notifications.Store
	Logger        hclog.Logger
	// Caller returns who the request acts for, false for nobody.
	Caller func(*fiber.Ctx) (Caller, bool)
	// Problem writes the host's problem response; Invalid its 422 naming
	// one field.
	Problem func(c *fiber.Ctx, status int, detail string) error
	Invalid func(c *fiber.Ctx, location, msg string) error
	// Audit records a successful change made through a page.
	Audit func(c *fiber.Ctx, action, resourceType, resourceID string)
	// IdPRedirectURI is where the identity provider returns the browser:
	// the host's /login; empty (development) means this host's /login as
	// the browser reached it. IdPOrigin is the provider's origin, which the
	// sign-in page's form may be sent on to.
	IdPRedirectURI string
	IdPOrigin      string
	// Context is the request's context with its principal and audit meta,
	// for the operations the pages call.
	Context func(*fiber.Ctx) context.Context
}

// Pages serves the web pages.
type Pages struct {
	d Deps
}

// New returns the pages.
func New(d Deps) *Pages { return &Pages{d: d} }

// render writes a ui rendering through fiber.
func render(c *fiber.Ctx, f func(http.ResponseWriter) error) error {
	w := &bufferWriter{header: http.Header{}, status: http.StatusOK}
	if err := f(w); err != nil {
		return err
	}
	for k, vs := range w.header {
		for _, v := range vs {
			c.Set(k, v)
		}
	}
	c.Status(w.status)
	return c.Send(w.body.Bytes())
}

// writeFragment answers a fragment's HTML.
func writeFragment(c *fiber.Ctx, status int, html template.HTML) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Content-Security-Policy", ui.ContentSecurityPolicy)
	c.Status(status)
	return c.SendString(string(html))
}

type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header         { return w.header }
func (w *bufferWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *bufferWriter) WriteHeader(status int)      { w.status = status }

// WantsPage reports whether a request is a browser's navigation, which is
// sent to sign in rather than answered 401.
func WantsPage(c *fiber.Ctx) bool {
	if c.Get("HX-Request") != "" {
		return false
	}
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/html")
}

// Unauthenticated answers a caller without credentials on a page or
// fragment: a browser's navigation is sent to sign in and come back, an
// htmx request is told to send the whole page there, any other caller gets
// the problem the host answers elsewhere.
func Unauthenticated(c *fiber.Ctx, problem func() error) error {
	if WantsPage(c) {
		return c.Redirect(websession.LoginURL(c.OriginalURL()), http.StatusSeeOther)
	}
	if c.Get("HX-Request") != "" {
		next := c.OriginalURL()
		if u := c.Get("HX-Current-URL"); u != "" {
			if i := strings.Index(u, "://"); i >= 0 {
				if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
					next = u[i+3+j:]
				}
			}
		}
		c.Set("HX-Redirect", websession.LoginURL(next))
	}
	return problem()
}
