// Package arm serves Azure Resource Manager's REST API on the simulated
// cloud's ARM service, from the world: subscriptions, Cost Management
// queries, compute and network usages, reservation summaries, savings
// plans with their utilisation and recommendations, policy definitions,
// policy states, Defender for Cloud's assessments and secure score, Resource
// Graph resources, budgets and Lighthouse delegations.
// Field names, paging (nextLink) and errors (the Azure error envelope, with
// ARM's codes) follow the real API, so the Azure SDK's clients work
// unchanged.
//
// Every route authenticates the bearer token for Resource Manager's
// audience and requires api-version, as ARM does. Authorization follows
// Lighthouse delegation (see managedservices.go): a token reaches its own
// tenant's subscriptions and, from the managing tenant, the delegated
// tenants'; role assignments are not modelled. Each resource provider has
// its own file and registers its routes from Register, so further
// providers slot in the same way.
package arm

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Audience is the resource ARM tokens are issued for, as in Azure's public
// cloud.
const Audience = "https://management.azure.com"

// Authenticator verifies a request's bearer token for an audience;
// *idp.Provider is one.
type Authenticator interface {
	VerifyAccessToken(r *http.Request, audience string) (idp.Claims, error)
}

// DefaultCostPageSize is how many rows a Cost Management query page holds,
// as the real API's default page.
const DefaultCostPageSize = 1000

// Option tunes Register, for tests that need small pages or a particular
// column order.
type Option func(*options)

type options struct {
	costPageSize    int
	costColumnOrder []string
}

// WithCostPageSize sets the rows per Cost Management query page.
func WithCostPageSize(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.costPageSize = n
		}
	}
}

// WithCostColumnOrder puts the named Cost Management query columns first,
// in this order; the others follow in the default order. Clients must read
// columns by name, and tests use this to prove they do.
func WithCostColumnOrder(names ...string) Option {
	return func(o *options) { o.costColumnOrder = names }
}

// server holds the routes' shared state.
type server struct {
	sim   *cloudsim.Sim
	auth  Authenticator
	opts  options
	costs costIndex
	// lastBucket spares the pages of a query the sums of the page
	// before.
	lastBucket bucketCache
}

// Register serves the ARM routes on the simulator's ARM service, checking
// tokens with auth.
func Register(s *cloudsim.Sim, auth Authenticator, opts ...Option) {
	srv := &server{sim: s, auth: auth, opts: options{costPageSize: DefaultCostPageSize}}
	for _, o := range opts {
		o(&srv.opts)
	}
	srv.registerSubscriptions()
	srv.registerCostManagement()
	srv.registerUsages()
	srv.registerConsumption()
	srv.registerBenefits()
	srv.registerPolicyInsights()
	srv.registerPolicyDefinitions()
	srv.registerSecurity()
	srv.registerResourceGraph()
	srv.registerBudgets()
	srv.registerManagedServices()
}

// handler is a route's handler, given the caller's verified claims.
type handler func(w http.ResponseWriter, r *http.Request, c idp.Claims)

// handle registers a route behind ARM's checks: a valid bearer token first
// (ARM answers 401 before looking at anything else), then api-version, then
// access to the {subscriptionId} the pattern names, if any.
func (srv *server) handle(pattern string, h handler) {
	srv.sim.Handle(cloudsim.ARM, pattern, func(w http.ResponseWriter, r *http.Request) {
		c, err := srv.auth.VerifyAccessToken(r, Audience)
		if err != nil {
			srv.unauthorized(w, err)
			return
		}
		if r.URL.Query().Get("api-version") == "" {
			cloudsim.WriteError(w, http.StatusBadRequest, "MissingApiVersionParameter",
				"The api-version query parameter (?api-version=) is required for all requests.")
			return
		}
		if !srv.authorized(w, r, c) {
			return
		}
		h(w, r, c)
	})
}

// unauthorized answers 401 with ARM's code for the failure and a bearer
// challenge naming the authority, as ARM does.
func (srv *server) unauthorized(w http.ResponseWriter, err error) {
	code, msg := "InvalidAuthenticationToken", "The access token is invalid."
	switch {
	case errors.Is(err, idp.ErrNoToken):
		code, msg = "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing."
	case errors.Is(err, idp.ErrExpiredToken):
		code, msg = "ExpiredAuthenticationToken", "The access token expiry UTC time is earlier than current UTC time: "+err.Error()
	}
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer authorization_uri="%s/", error="invalid_token", error_description="%s"`,
		srv.sim.URLs[cloudsim.IdP], strings.ReplaceAll(msg, `"`, `'`)))
	cloudsim.WriteError(w, http.StatusUnauthorized, code, msg)
}

// subscription finds a subscription of the world; ARM ids are
// case-insensitive.
func (srv *server) subscription(id string) (world.Tenant, world.Subscription, bool) {
	for _, t := range srv.sim.World().Tenants {
		for _, s := range t.Subscriptions {
			if strings.EqualFold(s.ID, id) {
				return t, s, true
			}
		}
	}
	return world.Tenant{}, world.Subscription{}, false
}

func subscriptionNotFound(w http.ResponseWriter, id string) {
	cloudsim.WriteError(w, http.StatusNotFound, "SubscriptionNotFound", fmt.Sprintf("The subscription '%s' could not be found.", id))
}

func badRequest(w http.ResponseWriter, format string, args ...any) {
	cloudsim.WriteError(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf(format, args...))
}

// nextLink is the absolute URL of the page after r's with the given
// $skiptoken, keeping r's other parameters (api-version, filters).
func (srv *server) nextLink(r *http.Request, token string) string {
	next := *r.URL
	q := next.Query()
	q.Set("$skiptoken", token)
	next.RawQuery = q.Encode()
	base, _ := url.Parse(srv.sim.URLs[cloudsim.ARM])
	next.Scheme, next.Host = base.Scheme, base.Host
	return next.String()
}

// truncated reports whether a TruncatePages fault applies to r, for routes
// whose tokens are not the offsets cloudsim.PageOf cuts. The fault reaches
// handlers only through PageOf, which, asked to cut two items into pages of
// one from the start, drops the second page's link only under that fault.
func truncated(r *http.Request) bool {
	probe := r.WithContext(r.Context())
	probe.URL = &url.URL{}
	return cloudsim.PageOf(probe, "", 2, 1).NextLink == ""
}
