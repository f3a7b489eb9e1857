package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/pages"
	"github.com/stewardhq/steward/host/websession"
	"github.com/stewardhq/steward/ui"
)

// localViaCookie marks a request the browser's session cookie
// authenticated.
const localViaCookie = "steward.via_cookie"

// newPages assembles the web pages on the server's stores.
func (s *Server) newPages(signIn pages.SignIn) *pages.Pages {
	d := s.deps
	u, err := ui.New(ui.Options{Version: d.Version, Environment: d.Config.Env})
	if err != nil {
		// The templates are embedded: they parse in every build that
		// passed its tests.
		panic("ui: " + err.Error())
	}
	s.sessions = websession.New(d.SessionSecret, d.Config.Env == config.Development)
	return pages.New(pages.Deps{
		UI: u, Sessions: s.sessions, SignIn: signIn, Plugins: d.Plugins, Jobs: d.Jobs, Freshness: d.Freshness,
		FreshnessThresholds: s.freshnessThresholds, Tenancy: d.Tenancy, Notifications: d.Notifications, Logger: d.Logger, IdPRedirectURI: d.Config.OIDC.RedirectURL,
		IdPOrigin: s.idpOrigin(),
		Caller:    callerOf,
		Context: func(c *fiber.Ctx) context.Context {
			return api.WithCaller(c.UserContext(), PrincipalOf(c), api.Meta{ClientAddr: c.IP(), RequestID: requestID(c)})
		},
		Problem: func(c *fiber.Ctx, status int, detail string) error { return writeProblem(c, status, detail, nil) },
		Invalid: func(c *fiber.Ctx, location, msg string) error {
			return writeProblem(c, http.StatusUnprocessableEntity, "validation failed", []*huma.ErrorDetail{{Location: location, Message: msg}})
		},
		Audit: func(c *fiber.Ctx, action, resourceType, resourceID string) {
			ctx := api.WithCaller(c.UserContext(), PrincipalOf(c), api.Meta{ClientAddr: c.IP(), RequestID: requestID(c)})
			s.rec.Record(ctx, audit.Entry{Action: action, Status: audit.StatusSuccess, ResourceType: resourceType, ResourceID: resourceID})
		},
	})
}

// callerOf is the request's principal as the pages see it.
func callerOf(c *fiber.Ctx) (pages.Caller, bool) {
	p := PrincipalOf(c)
	if p == nil {
		return pages.Caller{}, false
	}
	via, _ := c.Locals(localViaCookie).(bool)
	return pages.Caller{ID: p.ID, Name: p.Name, Email: p.Email, Admin: p.IsAdmin, TenantIDs: p.TenantIDs, ViaCookie: via}, true
}

// idpOrigin is the identity provider's origin, "" without one.
func (s *Server) idpOrigin() string {
	if s.deps.OIDC == nil {
		return ""
	}
	return originOf(s.deps.OIDC.Issuer())
}

// originOf is the scheme and host of an address, "" for none.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// sessionToken is the access token of a browser's session cookie, after
// a silent refresh when it has expired; "" without a session.
func (s *Server) sessionToken(c *fiber.Ctx) string {
	if c.Cookies(websession.CookieAccess) == "" && c.Cookies(websession.CookieRefresh) == "" {
		return ""
	}
	return s.pages.SessionToken(c, func(tok string) bool {
		_, err := s.deps.Issuer.Verify(tok, auth.TypeAccess)
		return err == nil
	})
}

// checkCSRF refuses a state-changing request that the browser's session
// cookie authenticated without the session's CSRF token (see
// pages.CheckCSRF).
func (s *Server) checkCSRF(c *fiber.Ctx) error {
	via, _ := c.Locals(localViaCookie).(bool)
	p := PrincipalOf(c)
	if !via || p == nil {
		return c.Next()
	}
	if !s.pages.CheckCSRF(c, pages.Caller{ID: p.ID, ViaCookie: true}) {
		return writeProblem(c, http.StatusForbidden, "missing or invalid CSRF token: a browser session must send the page's token in X-CSRF-Token or the csrf_token field", nil)
	}
	return c.Next()
}

// pagePaths are the host's pages and fragments as the OpenAPI document
// lists them: path, summary, whether it takes tenant_id.
var pagePaths = []struct {
	path, summary string
	tenant        bool
	limit         *huma.Param
}{
	{"/dashboard", "Dashboard: sync status, alerts, data freshness and every plugin's dashboard fragment", true, nil},
	{"/sync-dashboard", "Sync monitoring: status card refreshed every 30 s, history, alerts, sync now", true, nil},
	{"/design-system", "Every component of the UI kit in every state, without data", false, nil},
	{"/notifications", "Notifications: channels and what they hear, dead letters with Retry, recent deliveries, and forms to add a channel and a subscription", true, nil},
	{"/partials/sync-status-card", "Fragment: the state of every sync job", false, nil},
	{"/partials/sync-history-table", "Fragment: the latest sync runs", false,
		&huma.Param{Name: "limit", In: "query", Description: "How many runs", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(1), Maximum: floatPtr(pages.HistoryMax), Default: pages.HistoryDefault}}},
	{"/partials/tenant-sync-status", "Fragment: how fresh each data domain of the caller's tenants is", true,
		&huma.Param{Name: "limit", In: "query", Description: "How many tenants the table shows, those that need attention first; every tenant when absent",
			Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(1), Maximum: floatPtr(pages.MaxTenantRows)}}},
	{"/partials/active-alerts", "Fragment: unresolved sync alerts, with resolve for admins", false, nil},
}

// documentPages declares the pages and fragments in the OpenAPI document.
func (s *Server) documentPages() {
	doc := s.API.OpenAPI()
	problem := func(desc string) *huma.Response {
		return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}}
	}
	html := &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString, Description: "HTML"}}
	redirect := &huma.Response{Description: "A browser without a session is sent to sign in: Location is /login?next=<this path>",
		Headers: map[string]*huma.Param{"Location": {Schema: &huma.Schema{Type: huma.TypeString}}}}
	// A browser's navigation gets the error page, anyone else the problem.
	refused := problem("The caller may not see the tenant it named")
	refused.Content[api.MimeHTML] = html
	tenantParam := &huma.Param{Name: "tenant_id", In: "query", Description: "Scopes the view to one tenant the caller may see. " +
		"The tenant picker names a brand as brand:<brand_id>, which a page answers with a 303 to the same address with brand_id", Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}
	brandParam := &huma.Param{Name: "brand_id", In: "query", Description: "Scopes the view to the tenants of one brand (GET /api/v1/brands) that the caller may see",
		Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}
	noBrand := problem("The caller cannot see the brand it named, or there is none")
	noBrand.Content[api.MimeHTML] = html
	view := func(path, summary string, params []*huma.Param, extra map[string]*huma.Response) {
		rs := map[string]*huma.Response{
			"200": {Description: "HTML", Content: map[string]*huma.MediaType{api.MimeHTML: html}},
			"303": redirect,
			"401": problem("Authentication required (an htmx request also gets HX-Redirect to the sign-in page)"),
			"403": refused,
			"429": problem(http.StatusText(http.StatusTooManyRequests)),
		}
		for k, v := range extra {
			rs[k] = v
		}
		op := &huma.Operation{OperationID: "page" + strings.ReplaceAll(path, "/", "-"), Method: http.MethodGet, Path: path, Tags: []string{"pages"},
			Summary: summary, Security: api.BearerOrKey(), Parameters: params, Responses: rs}
		if len(params) > 0 && params[0].Name == "tenant_id" {
			op.Extensions = map[string]any{api.ExtTenantScoped: map[string]string{"query": "tenant_id"}}
		}
		doc.AddOperation(op)
	}
	for _, p := range pagePaths {
		var params []*huma.Param
		extra := map[string]*huma.Response{}
		if p.tenant {
			params = append(params, tenantParam, brandParam)
			extra["404"] = noBrand
		}
		if p.limit != nil {
			params = append(params, p.limit)
			extra["422"] = problem("limit is out of bounds")
		}
		view(p.path, p.summary, params, extra)
	}
	anonymous := []map[string][]string{}
	page := map[string]*huma.MediaType{api.MimeHTML: html}
	s.documentForms(problem, page, redirect)
	doc.AddOperation(&huma.Operation{OperationID: "page-root", Method: http.MethodGet, Path: "/", Tags: []string{"pages"}, Security: anonymous,
		Summary: "Sends the browser to the dashboard", Responses: map[string]*huma.Response{"303": {Description: "To /dashboard",
			Headers: map[string]*huma.Param{"Location": {Schema: &huma.Schema{Type: huma.TypeString}}}}, "429": problem(http.StatusText(http.StatusTooManyRequests))}})
	doc.AddOperation(&huma.Operation{OperationID: "page-favicon", Method: http.MethodGet, Path: ui.FaviconPath, Tags: []string{"pages"}, Security: anonymous,
		Summary: "The site's icon (SVG), where browsers look for it; the pages link to it under a hashed name",
		Responses: map[string]*huma.Response{"200": {Description: "The icon", Content: map[string]*huma.MediaType{"image/svg+xml": {Schema: &huma.Schema{Type: huma.TypeString}}}},
			"304": {Description: "Not modified"}, "429": problem(http.StatusText(http.StatusTooManyRequests))}})
	for _, path := range []string{"/login", "/auth/login"} {
		doc.AddOperation(&huma.Operation{OperationID: "page" + strings.ReplaceAll(path, "/", "-"), Method: http.MethodGet, Path: path, Tags: []string{"pages"}, Security: anonymous,
			Summary: "Sign-in page; the identity provider's return with code and state finishes a sign-in started here",
			Parameters: []*huma.Param{{Name: "next", In: "query", Description: "Path on this host to return to", Schema: &huma.Schema{Type: huma.TypeString}},
				{Name: "code", In: "query", Schema: &huma.Schema{Type: huma.TypeString}}, {Name: "state", In: "query", Schema: &huma.Schema{Type: huma.TypeString}},
				{Name: "error", In: "query", Schema: &huma.Schema{Type: huma.TypeString}}},
			Responses: map[string]*huma.Response{"200": {Description: "The sign-in page", Content: page}, "303": redirect,
				"401": {Description: "The sign-in was refused; the page says so", Content: page}, "429": problem(http.StatusText(http.StatusTooManyRequests)),
				"503": {Description: "Signing in is unavailable now; the page says so", Content: page}}})
	}
}

// documentForms declares the forms the pages post to.
func (s *Server) documentForms(problem func(string) *huma.Response, page map[string]*huma.MediaType, redirect *huma.Response) {
	doc := s.API.OpenAPI()
	anonymous := []map[string][]string{}
	form := func(fields ...string) *huma.RequestBody {
		props := map[string]*huma.Schema{}
		for _, f := range fields {
			props[f] = &huma.Schema{Type: huma.TypeString}
		}
		return &huma.RequestBody{Content: map[string]*huma.MediaType{"application/x-www-form-urlencoded": {Schema: &huma.Schema{Type: huma.TypeObject, Properties: props}}}}
	}
	limited := problem(http.StatusText(http.StatusTooManyRequests))
	doc.AddOperation(&huma.Operation{OperationID: "page-auth-login-start", Method: http.MethodPost, Path: "/auth/login", Tags: []string{"pages"}, Security: anonymous,
		Summary: "Start signing a browser in with the identity provider", RequestBody: form("next", "csrf_token", "login_hint"),
		Responses: map[string]*huma.Response{"303": {Description: "To the identity provider", Headers: redirect.Headers},
			"403": {Description: "The form's CSRF token is missing or expired; the sign-in page says so", Content: page},
			"429": limited, "503": {Description: "The identity provider is unavailable; the sign-in page says so", Content: page}}})
	doc.AddOperation(&huma.Operation{OperationID: "page-auth-dev-login", Method: http.MethodPost, Path: "/auth/dev-login", Tags: []string{"pages"}, Security: anonymous,
		Summary: "Sign a browser in with the development credentials (development only)", RequestBody: form("username", "password", "next", "csrf_token"),
		Responses: map[string]*huma.Response{"303": {Description: "To next, signed in", Headers: redirect.Headers},
			"401": {Description: "Credentials refused (or development sign-in disabled); the sign-in page says so", Content: page},
			"403": {Description: "The form's CSRF token is missing or expired", Content: page}, "429": limited,
			"503": {Description: "Signing in is unavailable now", Content: page}}})
	doc.AddOperation(&huma.Operation{OperationID: "page-auth-logout", Method: http.MethodPost, Path: "/auth/logout", Tags: []string{"pages"}, Security: anonymous,
		Summary: "Sign a browser out: its tokens are revoked and its cookies cleared", RequestBody: form("csrf_token"),
		Description: "Ends the session whatever state its cookies are in — a good access token, an expired one, the refresh token alone, garbage: " +
			"what still verifies is revoked (the access token and every token of its sign-in, found from either cookie), both cookies are cleared " +
			"and the browser is sent to /login. The cookies are never refreshed on the way. A session a good access cookie carries must send its CSRF token.",
		Responses: map[string]*huma.Response{"303": {Description: "To /login", Headers: redirect.Headers},
			"400": problem("The caller is an API client, which signs out with POST /api/v1/auth/logout"),
			"403": problem("The session's CSRF token is missing or wrong"), "429": limited}})
	admin := map[string]any{api.ExtAdmin: true}
	doc.AddOperation(&huma.Operation{OperationID: "page-resolve-alert", Method: http.MethodPost, Path: "/partials/active-alerts/{alert_id}/resolve", Tags: []string{"pages"},
		Security: api.BearerOrKey(), Extensions: admin, Summary: "Resolve a sync alert from the alerts fragment; answers the fragment",
		Parameters:  []*huma.Param{{Name: "alert_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(1)}}},
		RequestBody: form("resolution_notes", "csrf_token"),
		Responses: map[string]*huma.Response{"200": {Description: "The active alerts fragment", Content: page}, "303": redirect,
			"401": problem("Authentication required"), "403": problem("Admin role or CSRF token required"), "404": problem("No such alert"),
			"422": problem("A field is invalid"), "429": limited}})
	refusedForm := &huma.Response{Description: "The form is refused: the Notifications page again, saying why, with what was sent (secrets left out); a body that is no form is the problem",
		Content: map[string]*huma.MediaType{api.MimeHTML: page[api.MimeHTML], api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}}
	done := &huma.Response{Description: "Done: to /notifications (or, without a session, to sign in)", Headers: redirect.Headers}
	for _, f := range []struct {
		id, path, summary string
		fields            []string
	}{
		{"page-notifications-add-channel", pages.NotificationChannelsFormPath, "Add a notification channel from the Notifications page",
			[]string{"name", "kind", "tenant_id", "smtp_host", "smtp_port", "tls", "username", "password", "from", "to", "url", "signing_secret", "csrf_token"}},
		{"page-notifications-add-subscription", pages.NotificationSubsFormPath, "Add a subscription from the Notifications page",
			[]string{"channel_id", "event_types", "min_severity", "digest", "csrf_token"}},
	} {
		doc.AddOperation(&huma.Operation{OperationID: f.id, Method: http.MethodPost, Path: f.path, Tags: []string{"pages"}, Security: api.BearerOrKey(),
			Summary: f.summary, Description: "Checked as the API's create is (POST /api/v1/notifications/...), with the same scope.", RequestBody: form(f.fields...),
			Responses: map[string]*huma.Response{"303": done, "401": problem("Authentication required"), "403": problem("CSRF token required"),
				"422": refusedForm, "429": limited}})
	}
	pageOrProblem := func(desc string) *huma.Response {
		r := problem(desc)
		r.Content[api.MimeHTML] = page[api.MimeHTML]
		return r
	}
	doc.AddOperation(&huma.Operation{OperationID: "page-notifications-retry", Method: http.MethodPost, Path: "/notifications/deliveries/{delivery_id}/retry", Tags: []string{"pages"},
		Security: api.BearerOrKey(), Summary: "Retry a dead delivery from the Notifications page",
		Parameters:  []*huma.Param{{Name: "delivery_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(1)}}},
		RequestBody: form("csrf_token"),
		Responses: map[string]*huma.Response{"303": done, "401": problem("Authentication required"), "403": problem("CSRF token required"),
			"404": pageOrProblem("No delivery with that id to a channel the caller sees"), "409": pageOrProblem("The delivery is not dead"),
			"422": problem("delivery_id is not a positive integer"), "429": limited}})
	doc.AddOperation(&huma.Operation{OperationID: "page-sync-now", Method: http.MethodPost, Path: "/partials/sync-now/{job_type}", Tags: []string{"pages"},
		Security: api.BearerOrKey(), Extensions: admin, Summary: "Queue a sync from the sync dashboard; answers a status line",
		Parameters: []*huma.Param{{Name: "job_type", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString, Pattern: "^[a-z][a-z0-9_-]{0,39}$"}}},
		Responses: map[string]*huma.Response{"202": {Description: "Queued", Content: page}, "303": redirect,
			"401": problem("Authentication required"), "403": problem("Admin role or CSRF token required"),
			"404": problem("No enabled plugin provides the job type"), "429": limited}})
}

func intPtr(n int) *int           { return &n }
func floatPtr(f float64) *float64 { return &f }
