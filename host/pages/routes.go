package pages

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/host/websession"
	"github.com/stewardhq/steward/sdk/protocol"
	"github.com/stewardhq/steward/ui"
)

// hostNav are the host's own entries of the navigation; plugins' follow
// by their order.
var hostNav = []ui.NavEntry{
	{Label: "Dashboard", Path: "/dashboard", Order: 0},
	{Label: "Sync", Path: syncDashboardPath, Order: 10},
	{Label: "Notifications", Path: NotificationsPath, Order: 90},
	{Label: "Design system", Path: "/design-system", Order: 100},
}

// The sign-in pages' paths: the page (also the identity provider's
// return), the same page under /auth where the form to start an identity
// provider's sign-in posts, the development form's, and the sign-out.
const (
	loginPath    = "/login"
	startIdPPath = "/auth/login"
	devLoginPath = "/auth/dev-login"
	logoutPath   = "/auth/logout"
)

// partialsPrefix is where the host's fragments are.
const partialsPrefix = "/partials/"

// Mount adds the pages, the host's fragments and the static assets to app.
func (p *Pages) Mount(app *fiber.App) {
	app.Get(ui.StaticPrefix+"*", adaptor.HTTPHandler(p.d.UI.Assets()))
	app.Get(ui.FaviconPath, adaptor.HTTPHandler(p.d.UI.Assets().Favicon()))
	app.Get("/", func(c *fiber.Ctx) error { return c.Redirect("/dashboard", http.StatusSeeOther) })
	app.Get(loginPath, p.loginPage)
	app.Get(startIdPPath, p.loginPage)
	app.Post(startIdPPath, p.startIdP)
	app.Post(devLoginPath, p.devLogin)
	app.Post(logoutPath, p.logout)

	app.Get("/dashboard", p.signedIn(p.dashboard))
	app.Get(syncDashboardPath, p.signedIn(p.syncDashboard))
	app.Get("/design-system", p.signedIn(p.designSystem))
	app.Get(NotificationsPath, p.signedIn(p.notificationsPage))
	app.Post(NotificationChannelsFormPath, p.signedIn(p.addChannel))
	app.Post(NotificationSubsFormPath, p.signedIn(p.addSubscription))
	app.Post("/notifications/deliveries/:delivery_id/retry", p.signedIn(p.retryDelivery))
}

// NotFound answers a browser's navigation to an address nothing serves
// with the error page, for a person to find their way back from.
func (p *Pages) NotFound(c *fiber.Ctx) error {
	return render(c, func(w http.ResponseWriter) error {
		return p.d.UI.Error(w, http.StatusNotFound, "There is no page at this address. It may have moved, or the link may be mistyped.")
	})
}

// HostView reports whether a path is one of the host's own pages,
// fragments or static assets, which a browser's page views load (the
// host's rate limit gives them a budget of their own).
func HostView(path string) bool {
	switch path {
	case "/", "/dashboard", syncDashboardPath, "/design-system", NotificationsPath, loginPath, startIdPPath, ui.FaviconPath:
		return true
	}
	return strings.HasPrefix(path, partialsPrefix) || strings.HasPrefix(path, ui.StaticPrefix)
}

// signedIn runs h for a caller with credentials; others are sent to sign
// in (see Unauthenticated).
func (p *Pages) signedIn(h func(*fiber.Ctx, Caller) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		caller, ok := p.d.Caller(c)
		if !ok {
			return Unauthenticated(c, func() error { return p.d.Problem(c, http.StatusUnauthorized, "authentication required") })
		}
		return h(c, caller)
	}
}

// page prepares a page's layout for the caller: who they are, the tenants
// and brands they may pick, the selected one (see scope), the navigation
// and the CSRF token. A tenant_id the caller may not see is refused with
// 403, a brand_id with 404, neither named. redirect is set, and d is
// empty, when the browser is to be sent to the page's address with its
// session's scope instead.
func (p *Pages) page(c *fiber.Ctx, caller Caller, title string) (d ui.PageData, redirect string, err error) {
	d = ui.PageData{Title: title, Path: c.Path(), User: ui.User{Name: caller.Name, Email: caller.Email, Admin: caller.Admin},
		CSRFToken: p.csrfToken(c, caller)}
	var ids []string
	if !caller.Admin {
		ids = caller.TenantIDs
	}
	var colours map[string]string
	if caller.Admin || len(ids) > 0 {
		tenants, err := p.d.Tenancy.Tenants(c.UserContext(), ids, false)
		if err != nil {
			return d, "", err
		}
		colours = make(map[string]string, len(tenants))
		for _, t := range tenants {
			d.Tenants = append(d.Tenants, ui.Tenant{ID: t.ID, Name: t.Name})
			colours[t.ID] = t.BrandColor
		}
		if d.Brands, err = p.brands(c, tenants); err != nil {
			return d, "", err
		}
	}
	sc, redirect, err := p.scope(c, caller, d.Tenants, d.Brands)
	if err != nil || redirect != "" {
		return ui.PageData{}, redirect, err
	}
	d.TenantID, d.BrandID, d.BrandColor = sc.tenant, sc.brand, colours[sc.tenant]
	d.Nav = append(d.Nav, hostNav...)
	for _, n := range p.d.Plugins.Views().Nav {
		d.Nav = append(d.Nav, ui.NavEntry{Label: n.Label, Path: n.Path, Order: n.Order})
	}
	slices.SortStableFunc(d.Nav, func(a, b ui.NavEntry) int { return a.Order - b.Order })
	return d, "", nil
}

// brands are the brands of the tenants given, the caller's, by name: a
// brand is the caller's to pick when it may see one of its tenants.
// The tenants name their brands, so only the names are read.
func (p *Pages) brands(c *fiber.Ctx, tenants []tenancy.Tenant) ([]ui.Brand, error) {
	var ids []string
	for _, t := range tenants {
		if t.BrandID != nil && !slices.Contains(ids, *t.BrandID) {
			ids = append(ids, *t.BrandID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	named, err := p.d.Tenancy.BrandNames(c.UserContext(), ids)
	if err != nil {
		return nil, err
	}
	out := make([]ui.Brand, len(named))
	for i, b := range named {
		out[i] = ui.Brand{ID: b.ID, Name: b.Name}
	}
	return out, nil
}

// pageScope is what a page shows: one tenant, one brand's tenants, or,
// both empty, all the caller's.
type pageScope struct{ tenant, brand string }

// kept is the scope as the session's cookie keeps it.
func (s pageScope) kept() string {
	if s.brand != "" {
		return ui.BrandOption + s.brand
	}
	return s.tenant
}

// keptScope reads the session cookie's scope.
func keptScope(v string) pageScope {
	if id, ok := strings.CutPrefix(v, ui.BrandOption); ok {
		return pageScope{brand: id}
	}
	return pageScope{tenant: v}
}

// scope is the tenant or brand a page shows, neither for all the caller's.
// A tenant_id or brand_id in the query is an explicit choice (the
// picker's, or a link's), which a browser's session keeps: an empty one,
// "All my tenants", clears it. The picker names a brand as
// tenant_id=brand:<id>, which is sent (303) to the same address with
// brand_id=<id> instead. A page asked for with neither shows the
// session's scope, as long as the caller may still see it (a tenant it
// was removed from, or a brand none of whose tenants it still sees, is
// dropped, not refused). A browser's navigation is then sent (303) to the
// same address with that tenant_id or brand_id, rather than rendered with
// it: the address bar names the scope in force, so a bookmark or a link
// copied to a colleague opens the same view, and the page's own links,
// forms and htmx requests, which read the page's query, see the same scope
// as its slots. Only a session cookie has a scope: an API client's page
// never depends on one.
func (p *Pages) scope(c *fiber.Ctx, caller Caller, tenants []ui.Tenant, brands []ui.Brand) (sc pageScope, redirect string, err error) {
	visible := func(sc pageScope) bool {
		if sc.brand != "" {
			return slices.ContainsFunc(brands, func(b ui.Brand) bool { return b.ID == sc.brand })
		}
		return slices.ContainsFunc(tenants, func(t ui.Tenant) bool { return t.ID == sc.tenant })
	}
	saved := pageScope{}
	if caller.ViaCookie {
		saved = keptScope(c.Cookies(websession.CookieTenant))
	}
	args := c.Context().QueryArgs()
	if id, ok := strings.CutPrefix(c.Query("tenant_id"), ui.BrandOption); ok {
		return sc, pickedBrandURI(c.OriginalURL(), id), nil
	}
	var asked pageScope
	switch {
	case args.Has("tenant_id"):
		asked = pageScope{tenant: c.Query("tenant_id")}
	case args.Has("brand_id"):
		asked = pageScope{brand: c.Query("brand_id")}
	default:
		if saved == (pageScope{}) {
			return sc, "", nil
		}
		if !visible(saved) {
			p.keepScope(c, pageScope{})
			return sc, "", nil
		}
		if WantsPage(c) && c.Method() == http.MethodGet {
			name, id := "tenant_id", saved.tenant
			if saved.brand != "" {
				name, id = "brand_id", saved.brand
			}
			return sc, withScopeQuery(c.OriginalURL(), name, id), nil
		}
		return saved, "", nil
	}
	if asked != (pageScope{}) && !visible(asked) {
		if saved == asked {
			p.keepScope(c, pageScope{})
		}
		if asked.brand != "" {
			return sc, "", fiber.NewError(http.StatusNotFound, MsgNoBrand)
		}
		return sc, "", fiber.NewError(http.StatusForbidden, protocol.MsgNoTenantAccess)
	}
	if caller.ViaCookie && saved != asked {
		p.keepScope(c, asked)
	}
	return asked, "", nil
}

// MsgNoBrand answers a brand_id that names no brand the caller can see,
// whether it exists or not.
const MsgNoBrand = "no brand with that id"

// RefuseTenant answers a browser's navigation to a plugin's page scoped to
// a tenant the caller may not see with the error page, and drops that
// tenant from the browser's session if it is the one kept there (a link
// of a page shown before the caller lost it), so the next page opens on
// all the caller's tenants.
func (p *Pages) RefuseTenant(c *fiber.Ctx, status int) error {
	if id := c.Query("tenant_id"); id != "" && c.Cookies(websession.CookieTenant) == id {
		p.keepScope(c, pageScope{})
	}
	return p.refuse(c, fiber.NewError(status, protocol.MsgNoTenantAccess))
}

// RefuseBrand is RefuseTenant for a brand the caller cannot see, which is
// a 404.
func (p *Pages) RefuseBrand(c *fiber.Ctx) error {
	if id := c.Query("brand_id"); id != "" && c.Cookies(websession.CookieTenant) == ui.BrandOption+id {
		p.keepScope(c, pageScope{})
	}
	return p.refuse(c, fiber.NewError(http.StatusNotFound, MsgNoBrand))
}

// PickedBrand is where a browser's navigation whose tenant_id is a
// picked brand's (tenant_id=brand:<id>) is sent: the same address with
// brand_id=<id>; "" for any other request.
func PickedBrand(c *fiber.Ctx) string {
	if id, ok := strings.CutPrefix(c.Query("tenant_id"), ui.BrandOption); ok && WantsPage(c) {
		return pickedBrandURI(c.OriginalURL(), id)
	}
	return ""
}

// keepScope sets the browser session's scope, or clears it.
func (p *Pages) keepScope(c *fiber.Ctx, sc pageScope) {
	setCookies(c, p.d.Sessions.TenantCookie(c.Hostname(), sc.kept()))
}

// withScopeQuery adds the query parameter name=id to a request URI that
// names no scope.
func withScopeQuery(uri, name, id string) string {
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + name + "=" + url.QueryEscape(id)
}

// pickedBrandURI is a request URI whose tenant_id names a picked brand
// with brand_id instead: the picker's form sends only tenant_id.
func pickedBrandURI(uri, brandID string) string {
	path, query, _ := strings.Cut(uri, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		q = url.Values{}
	}
	q.Del("tenant_id")
	q.Del("brand_id")
	q.Set("brand_id", brandID)
	return path + "?" + q.Encode()
}

// prepare is page for a handler: done is set once a refusal or a
// redirect to the session's tenant has been answered.
func (p *Pages) prepare(c *fiber.Ctx, caller Caller, title string) (d ui.PageData, done bool, err error) {
	d, redirect, err := p.page(c, caller, title)
	if fe, ok := err.(*fiber.Error); ok {
		return d, true, p.refuse(c, fe)
	}
	if err != nil {
		return d, true, err
	}
	if redirect != "" {
		return d, true, c.Redirect(redirect, http.StatusSeeOther)
	}
	return d, false, nil
}

// show renders a page, answering a refused tenant with the error page.
func (p *Pages) show(c *fiber.Ctx, caller Caller, title string, fill func(*ui.PageData)) error {
	d, done, err := p.prepare(c, caller, title)
	if done {
		return err
	}
	fill(&d)
	return render(c, func(w http.ResponseWriter) error { return p.d.UI.Page(w, d) })
}

func (p *Pages) dashboard(c *fiber.Ctx, caller Caller) error {
	return p.show(c, caller, "Dashboard", func(d *ui.PageData) {
		d.Description = "Every plugin's figures and the state of their syncs across your tenants."
		d.Slots = DashboardSlots(p.d.Plugins.Views())
	})
}

func (p *Pages) syncDashboard(c *fiber.Ctx, caller Caller) error {
	types, err := p.jobTypes(c)
	if err != nil {
		return err
	}
	return p.show(c, caller, "Sync", func(d *ui.PageData) {
		d.Description = "Runs of every sync job, their history and the alerts failed runs raised."
		d.Content, d.Slots = SyncDashboardBody(types, caller.Admin)
	})
}

// SlotPage answers a plugin's page that the host lays out itself (a Page
// with a Slot): the layout, the page's description and the fragments
// declared for the slot.
func (p *Pages) SlotPage(c *fiber.Ctx, caller Caller, title, description, slot string) error {
	return p.show(c, caller, title, func(d *ui.PageData) {
		d.Description = description
		d.Content, d.Slots = SlotBody(p.d.Plugins.Views(), slot)
	})
}

// refuse answers a page the caller may not have: a browser's navigation
// gets the error page, anyone else the host's problem.
func (p *Pages) refuse(c *fiber.Ctx, fe *fiber.Error) error {
	if WantsPage(c) {
		return render(c, func(w http.ResponseWriter) error { return p.d.UI.Error(w, fe.Code, fe.Message) })
	}
	return p.d.Problem(c, fe.Code, fe.Message)
}

func (p *Pages) designSystem(c *fiber.Ctx, caller Caller) error {
	d, done, err := p.prepare(c, caller, "Design system")
	if done {
		return err
	}
	return render(c, func(w http.ResponseWriter) error { return p.d.UI.DesignSystem(w, d) })
}

// PluginPage answers a browser's navigation to a plugin's page: the
// host's layout, whose main slot loads the plugin's HTML from the same
// path and query (htmx asks for it, and the dispatcher then proxies it),
// so a plugin that is down leaves its page in the layout, unavailable and
// retrying. The layout adds the picked tenant_id or brand_id to the slot's
// query itself.
func (p *Pages) PluginPage(c *fiber.Ctx, caller Caller, title string) error {
	path := c.Path()
	if q, err := url.ParseQuery(string(c.Request().URI().QueryString())); err == nil {
		q.Del("tenant_id")
		q.Del("brand_id")
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
	}
	return p.show(c, caller, title, func(d *ui.PageData) {
		d.Slots = []ui.Slot{{Title: title, Path: path, Main: true}}
	})
}

// jobTypes are the job types of the registered sync jobs, for "sync now".
func (p *Pages) jobTypes(c *fiber.Ctx) ([]string, error) {
	st, err := p.d.Jobs.Status(c.UserContext())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, j := range st.Jobs {
		if !slices.Contains(out, j.JobType) {
			out = append(out, j.JobType)
		}
	}
	slices.Sort(out)
	return out, nil
}
