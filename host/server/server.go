// Package server is the host's HTTP transport: the fiber app, its middleware
// (request ids, access log, metrics, recovery, security headers, rate
// limits, authentication, the control-character check of every input), the
// one error handler that writes RFC 9457 problem details, the dispatcher
// that hands every plugin route to its plugin, and /openapi.json, /docs and
// /metrics. Of the host's own operations it serves only health; the
// handlers of auth, API keys, tenancy, audit, onboarding, jobs and the
// plugin admin routes live beside their domains, which declare them through
// host/api and are registered here by New with their dependencies.
package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humafiber"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uptrace/bun"
	"golang.org/x/sync/semaphore"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/apikeys"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/authcache"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/jobs"
	"github.com/stewardhq/steward/host/notifications"
	"github.com/stewardhq/steward/host/oidc"
	"github.com/stewardhq/steward/host/onboarding"
	"github.com/stewardhq/steward/host/pages"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/ratelimit"
	"github.com/stewardhq/steward/host/redisconn"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/host/websession"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// APIVersion is the interface description's version.
const APIVersion = "2.5.0"

// Deps is everything the server serves from.
type Deps struct {
	Config      config.Config
	Version     string
	Logger      hclog.Logger
	DB          *bun.DB
	Cache       cache.Cache
	Limiter     *ratelimit.Limiter
	Issuer      *auth.Issuer
	Changes     *authcache.Changes // invalidates authentication's caches; the Tenancy and APIKeys stores report their writes to it
	Revocations auth.Revocations   // revoked access tokens: in Redis when the host has one, else in the database
	Redis       *redisconn.Conn    // the host's Redis connection, for health; nil without Redis
	OIDC        *oidc.RelyingParty // identity provider sign-in; nil when not configured (its routes answer 503)
	Tenancy     *tenancy.Store
	APIKeys     *apikeys.Store
	Audit       *audit.Store
	Freshness   *freshness.Store
	// Notifications serves the notification channels, subscriptions,
	// events and outbox.
	Notifications *notifications.Store
	Jobs          *jobs.Scheduler
	Plugins       *plugins.Supervisor
	Registry      *prometheus.Registry
	StartedAt     time.Time
	SchedulerUp   func() bool
	// Mount adds routes before the plugin dispatcher (see app.Options).
	Mount func(*fiber.App)

	// Cloud is the host's own cloud clients; onboarding checks delegations
	// with them. Nil leaves onboarding unable to verify (it answers 503).
	Cloud *cloud.Clients
	// PendingMigrations counts the host's migrations this binary holds that
	// the database has not applied; readiness asks it.
	PendingMigrations func(context.Context) (int, error)
	// ManagingTenantID is the directory tenant Steward signs in to, the
	// one customers delegate their subscriptions to.
	ManagingTenantID string
	// ConsentRedirectURI is where Entra ID sends a directory's
	// administrator back after admin consent: this host's
	// /onboarding/consent/callback as browsers reach it.
	ConsentRedirectURI string
	// SessionSecret keys the web pages' CSRF tokens (the token signing
	// secret, from which a key of their own is derived).
	SessionSecret string
}

// Server is the assembled HTTP app.
type Server struct {
	App  *fiber.App
	API  huma.API
	deps Deps

	openapiMu sync.Mutex
	openapi   atomic.Pointer[[]byte]
	// hostOps are the host's own operations, by method and path pattern.
	hostOps map[string]bool
	// authRoutes are the host operations on the sign-in rate budget.
	authRoutes []hostRoute
	metrics    *httpMetrics
	rec        *audit.Recorder
	// syncSlots bounds sync requests in flight on this replica (spec:
	// 5 concurrent requests on sync endpoints).
	syncSlots *semaphore.Weighted
	// revocations lists revoked access tokens for every replica, through
	// a cache every revocation drops (see authcache).
	revocations auth.Revocations
	// scopes and keys cache what authenticate reads from the stores (see
	// authcache).
	scopes *authcache.Cache[scopeKey, []string]
	keys   *authcache.Cache[[sha256.Size]byte, keyEntry]
	// draining is set by Drain: readiness fails, and connections close
	// after their current response.
	draining atomic.Bool
	// migrations caches readiness's look at the host's migrations.
	migrations migrationCheck
	// pages are the web UI; sessions its cookies and CSRF tokens.
	pages    *pages.Pages
	sessions *websession.Sessions
	// sync queues jobs, for the sync routes and plugins' trigger paths.
	sync jobs.Routes
}

// New assembles the app. Plugins' routes join through the dispatcher and
// their operations through AddPluginOperations.
func New(d Deps) *Server {
	s := &Server{deps: d, hostOps: map[string]bool{}, syncSlots: semaphore.NewWeighted(5), rec: audit.NewRecorder(d.Audit, d.Logger),
		scopes: authcache.NewCache[scopeKey, []string](d.Changes, authCacheSize),
		keys:   authcache.NewCache[[sha256.Size]byte, keyEntry](d.Changes, authCacheSize)}
	s.revocations = authcache.Revocations(d.Revocations, d.Changes, authCacheSize)
	s.metrics = newHTTPMetrics(d.Registry)
	app := fiber.New(fiber.Config{
		AppName:               "steward",
		BodyLimit:             d.Config.MaxBodyBytes,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		// Strings from the context (method, path, params, headers) are
		// otherwise views into buffers fasthttp reuses for the next
		// request; they end up in metric labels, log fields, audit entries
		// and cache keys that outlive the handler.
		Immutable: true,
		// One spelling per route: a case or slash variant would reach the
		// same handler under another rate class, cache key or audit path.
		CaseSensitive:  true,
		StrictRouting:  true,
		ReadTimeout:    60 * time.Second,
		WriteTimeout:   5 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		ReadBufferSize: 16 << 10,

		// A multipart body reaches a plugin as the client sent it: fasthttp
		// would otherwise parse it into a form (spilling files to temporary
		// files) and leave the request's body empty, so the proxy would
		// forward nothing. The host's own form handlers still parse a
		// multipart body on demand.
		DisablePreParseMultipartForm: true,
	})
	app.Use(assignRequestID)
	app.Use(s.closeWhileDraining)
	app.Use(s.accessLog)
	app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		d.Logger.Error("panic serving request", "path", c.Path(), "panic", fmt.Sprint(e), "request_id", requestID(c))
	}}))
	app.Use(securityHeaders)
	app.Use(s.authenticate)
	// Before the CSRF check, so that its refusal carries the rate limit's
	// headers as every answer does.
	app.Use(ratelimit.Middleware(d.Limiter, ratelimit.MiddlewareOptions{
		ClassOf: s.rateClass,
		KeyOf:   rateKey,
		OnLimited: func(c *fiber.Ctx, retry time.Duration) error {
			return writeProblem(c, http.StatusTooManyRequests, fmt.Sprintf("rate limit exceeded; retry after %d seconds", int(retry.Seconds())), nil)
		},
	}))
	app.Use(s.checkCSRF)
	app.Use(newCompression().handler)

	app.Get("/openapi.json", s.serveOpenAPI)
	app.Get("/docs", serveDocs)
	app.Get("/docs/:asset", serveDocsAsset)
	if d.Registry != nil {
		app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{})))
	}
	cfg := huma.DefaultConfig("Steward governance API", APIVersion)
	cfg.Info.Description = "Multi-tenant cloud governance hub: each enabled plugin's domain across the organisation's tenants, behind one API. Plugin operations are merged in at start-up."
	cfg.OpenAPIPath, cfg.DocsPath, cfg.SchemasPath = "", "", ""
	// Relative: the API is wherever this document was fetched from.
	cfg.Servers = []*huma.Server{{URL: "/", Description: "The host serving this document"}}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"OAuth2PasswordBearer": {Type: "oauth2", Flows: &huma.OAuthFlows{Password: &huma.OAuthFlow{TokenURL: "/api/v1/auth/login", Scopes: map[string]string{}}}},
		"APIKeyHeader":         {Type: "apiKey", In: "header", Name: "X-API-Key"},
	}
	cfg.CreateHooks = nil
	cfg.Formats["application/x-www-form-urlencoded"] = formFormat
	s.API = humafiber.New(app, cfg)
	s.API.UseMiddleware(s.requireAuth)
	s.App = app
	s.documentPlainRoutes()

	s.registerHealth()
	s.registerReady()
	signIn := auth.Routes{Config: d.Config, Issuer: d.Issuer, Tokens: auth.NewRefreshStore(d.DB, s.revocations), Tenancy: d.Tenancy, OIDC: d.OIDC,
		Cache: d.Cache, Audit: s.rec, Logger: d.Logger}
	signIn.Register(s.API)
	audit.Routes{Store: d.Audit}.Register(s.API)
	s.sync = jobs.Routes{Scheduler: d.Jobs, Cache: d.Cache, Audit: s.rec, StartedAt: d.StartedAt}
	s.sync.Register(s.API)
	tenancy.Routes{Store: d.Tenancy, Audit: s.rec}.Register(s.API)
	apikeys.Routes{Store: d.APIKeys, Audit: s.rec}.Register(s.API)
	notifications.Routes{Store: d.Notifications, Audit: s.rec}.Register(s.API)
	onboarding.Routes{Tenancy: d.Tenancy, Cloud: d.Cloud, ManagingTenantID: d.ManagingTenantID, ConsentRedirectURI: d.ConsentRedirectURI, Audit: s.rec}.Register(s.API)
	plugins.AdminRoutes{Supervisor: d.Plugins, Audit: s.rec}.Register(s.API)
	s.pages = s.newPages(signIn)
	s.pages.Mount(app)
	s.pages.MountFragments(app)
	s.documentPages()
	documentHeaders(s.API.OpenAPI())
	s.indexOperations()

	if d.Mount != nil {
		d.Mount(app)
	}
	app.Use(s.dispatch)
	app.Use(func(c *fiber.Ctx) error {
		if browserNavigation(c) {
			return s.pages.NotFound(c)
		}
		return writeProblem(c, http.StatusNotFound, "no route for "+c.Method()+" "+c.Path(), nil)
	})
	s.rebuildOpenAPI()
	return s
}

// browserNavigation reports whether a request is a browser opening a page
// (GET, asking for HTML, not htmx) outside the API, which an error answers
// with a page rather than a problem document; the API always answers
// problem+json.
func browserNavigation(c *fiber.Ctx) bool {
	return (c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead) && pages.WantsPage(c) && c.Path() != "/api" && !strings.HasPrefix(c.Path(), "/api/")
}

// formFormat lets huma read application/x-www-form-urlencoded bodies (the
// OAuth2 password form) through the same validation as JSON: the form
// becomes an object of strings, then the body's schema applies.
var formFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) },
	Unmarshal: func(data []byte, v any) error {
		form, err := url.ParseQuery(string(data))
		if err != nil {
			return err
		}
		obj := make(map[string]any, len(form))
		for k := range form {
			obj[k] = form.Get(k)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, v)
	},
}

// Reserved reports whether the host serves the route itself, so a plugin
// may not claim it.
func (s *Server) Reserved(method, path string) bool {
	return s.hostOps[method+" "+path]
}

// indexOperations lists the host's operations, as the document declares
// them, for Reserved and for the rate limit's classes.
func (s *Server) indexOperations() {
	for path, item := range s.API.OpenAPI().Paths {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
			if *protocol.OperationSlot(item, method) == nil {
				continue
			}
			s.hostOps[method+" "+path] = true
			if authRateClass(path) {
				s.authRoutes = append(s.authRoutes, hostRoute{method: method, segments: protocol.SplitPath(path)})
			}
		}
	}
}

// AddPluginOperations merges a plugin's operations into /openapi.json.
func (s *Server) AddPluginOperations() { s.rebuildOpenAPI() }

func (s *Server) rebuildOpenAPI() {
	s.openapiMu.Lock()
	defer s.openapiMu.Unlock()
	doc := *s.API.OpenAPI()
	paths := make(map[string]*huma.PathItem, len(doc.Paths))
	for p, item := range doc.Paths {
		cp := *item
		paths[p] = &cp
	}
	if s.deps.Plugins != nil {
		for _, r := range s.deps.Plugins.Routes().All() {
			if r.Operation == nil {
				continue
			}
			op := *r.Operation
			if len(op.Tags) == 0 {
				op.Tags = []string{r.Plugin}
			}
			authenticated := r.Auth != pluginAuthNone
			if authenticated {
				op.Security = api.BearerOrKey()
			} else {
				op.Security = []map[string][]string{}
			}
			if brandScoped(&r.Route) {
				brandParameter(&op)
			}
			op.Responses = s.pluginResponses(&op, r.Method, authenticated)
			if r.View == protocol.ViewPage {
				pageRefusal(op.Responses)
			}
			// A copy: the route's own operation is shared with the table.
			op.Extensions = maps.Clone(op.Extensions)
			if op.Extensions == nil {
				op.Extensions = map[string]any{}
			}
			op.Extensions["x-steward-plugin"] = r.Plugin
			if r.Auth == pluginv1.Auth_AUTH_ADMIN {
				op.Extensions[api.ExtAdmin] = true
			}
			if r.Tenant != nil {
				op.Extensions[api.ExtTenantScoped] = map[string]string{r.Tenant.In: r.Tenant.Name}
			} else if scope := pluginTenantScope(&op); r.TenantScoped && scope != nil {
				op.Extensions[api.ExtTenantScoped] = scope
			}
			item := paths[r.Pattern]
			if item == nil {
				item = &huma.PathItem{}
				paths[r.Pattern] = item
			}
			if slot := protocol.OperationSlot(item, r.Method); slot != nil {
				*slot = &op
			}
		}
	}
	doc.Paths = paths
	b, err := json.Marshal(&doc)
	if err != nil {
		s.deps.Logger.Error("openapi document", "error", err)
		return
	}
	s.openapi.Store(&b)
}

func (s *Server) serveOpenAPI(c *fiber.Ctx) error {
	b := s.openapi.Load()
	c.Set(fiber.HeaderContentType, "application/openapi+json")
	return c.Send(*b)
}

func requestID(c *fiber.Ctx) string {
	if v, ok := c.Locals(localRequestID).(string); ok {
		return v
	}
	return string(c.Response().Header.Peek(fiber.HeaderXRequestID))
}

// problem is an RFC 9457 body.
type problem struct {
	Type   string              `json:"type,omitempty"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Detail string              `json:"detail,omitempty"`
	Errors []*huma.ErrorDetail `json:"errors,omitempty"`
}

func writeProblem(c *fiber.Ctx, status int, detail string, errs []*huma.ErrorDetail) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, "application/problem+json")
	b, err := json.Marshal(problem{Title: http.StatusText(status), Status: status, Detail: detail, Errors: errs})
	if err != nil {
		return err
	}
	return c.Send(b)
}

// errorHandler is the one place errors become responses.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	// A request fasthttp could not read (a body over the limit) comes here
	// without the middleware having run; its answer has an id all the same.
	if requestID(c) == "" {
		c.Set(fiber.HeaderXRequestID, uuid.NewString())
	}
	var unavailable *plugins.UnavailableError
	var timedOut *plugins.TimeoutError
	var fe *fiber.Error
	var se huma.StatusError
	switch {
	case errors.As(err, &timedOut):
		s.deps.Logger.Warn("plugin request timed out; answered 504", "plugin", timedOut.Plugin, "request_timeout", timedOut.Timeout, "request_id", requestID(c))
		return writeProblem(c, http.StatusGatewayTimeout, fmt.Sprintf("plugin %s did not answer within %s", timedOut.Plugin, timedOut.Timeout), nil)
	case errors.As(err, &unavailable):
		s.deps.Logger.Warn("plugin unavailable; answered 503", "plugin", unavailable.Plugin, "cause", unavailable.Err, "request_id", requestID(c))
		if unavailable.Down != "" {
			// No Retry-After: only a host restart brings the plugin back.
			return writeProblem(c, http.StatusServiceUnavailable, fmt.Sprintf("plugin %s is down (%s)", unavailable.Plugin, unavailable.Down), nil)
		}
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(unavailable.RetryAfter.Seconds())))
		return writeProblem(c, http.StatusServiceUnavailable, fmt.Sprintf("plugin %s is not available; retry shortly", unavailable.Plugin), nil)
	case store.Unavailable(err):
		// An outage shows in health too, and the access log has every
		// 5xx; each request is not worth a line of its own.
		detail, retryAfter := protocol.DatabaseProblem(err)
		c.Set(fiber.HeaderRetryAfter, retryAfter)
		return writeProblem(c, http.StatusServiceUnavailable, detail, nil)
	case errors.Is(err, redisconn.ErrUnavailable):
		// Logged once per outage by the connection, not per request.
		c.Set(fiber.HeaderRetryAfter, redisRetryAfter)
		return writeProblem(c, http.StatusServiceUnavailable, redisUnavailable, nil)
	case errors.As(err, &fe):
		return writeProblem(c, fe.Code, fe.Message, nil)
	case errors.As(err, &se):
		return writeProblem(c, se.GetStatus(), se.Error(), nil)
	}
	s.deps.Logger.Error("request failed", "path", c.Path(), "error", err, "request_id", requestID(c))
	return writeProblem(c, http.StatusInternalServerError, "internal error; request id "+requestID(c), nil)
}

// The answer to a request that needs Redis while it is unreachable (see
// redisconn's failure policy).
const (
	redisUnavailable = "a shared store (Redis) is unavailable; retry shortly"
	redisRetryAfter  = "1"
)

func securityHeaders(c *fiber.Ctx) error {
	h := &c.Response().Header
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'")
	// Over TLS only, the host's own or a proxy's that says so
	// (X-Forwarded-Proto): browsers ignore the header over plain HTTP, and a
	// plain-HTTP deployment that sent it would promise what it does not do.
	if c.Protocol() == "https" {
		h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
	}
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	return c.Next()
}
