// Package graph serves Microsoft Graph's REST API on the simulated cloud's
// Graph service, from the world: users with their sign-in activity, the
// authentication methods registration report, directory roles and their
// members, access reviews with their instances and decisions, domains,
// Intune managed devices, Conditional Access policies, the security
// defaults policy, Privileged Identity Management's role assignment and
// eligibility schedule instances, groups' members, Identity Protection's
// risky users, and application registrations and service principals with
// their credentials, and the messages of mailboxes' folders with their
// file attachments. Every route is served under /v1.0 and /beta, as
// Graph serves both. Answers are OData JSON (@odata.context, value and
// @odata.nextLink, honouring $top) and errors use Graph's envelope with its
// innerError, so Graph clients work unchanged.
//
// Every route authenticates the bearer token for Graph's audience, and the
// token's tenant (tid) is the directory it reads: a token of one tenant
// never sees another's users, as Steward holds one token per customer
// tenant. A directory that withdrew its consent to the application
// (world.Tenant.Consented) answers its tokens 403. Permissions (User.Read.All and the like, licences for sign-in
// activity and Intune) are not modelled: a valid token reads its whole
// directory.
//
// The world has no creation dates, role assignments or devices, so the
// simulator derives them deterministically from each user; CreatedDateTime
// and Devices expose the derivation for tests and other simulators.
package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Audience is the resource Graph tokens are issued for.
const Audience = idp.GraphResource

// versions are the API versions served; both answer the same routes.
var versions = []string{"v1.0", "beta"}

// maxTop is the largest page Graph lets a client ask for.
const maxTop = 999

// Authenticator verifies a request's bearer token for an audience;
// *idp.Provider is one.
type Authenticator interface {
	VerifyAccessToken(r *http.Request, audience string) (idp.Claims, error)
}

// server holds the routes' shared state.
type server struct {
	sim  *cloudsim.Sim
	auth Authenticator

	// mu guards world and dirs: the directories of the world last
	// served, by lower-cased directory tenant id.
	mu    sync.Mutex
	world *world.World
	dirs  map[string]*directory
}

// directory is one tenant's users in one world, and the devices derived
// for them once asked for. It is built on the first request for the
// tenant and kept while the simulator serves that world, so paging
// through a directory of many thousand users goes over the world's users
// once rather than once a page.
type directory struct {
	users       idp.Users
	devicesOnce sync.Once
	devices     []ownedDevice
}

// ownedDevice is a derived device with the index of its user.
type ownedDevice struct {
	user int
	Device
}

// directoryOf is a tenant's directory in the world w.
func (srv *server) directoryOf(w *world.World, t world.Tenant) *directory {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.world != w {
		srv.world, srv.dirs = w, map[string]*directory{}
	}
	key := strings.ToLower(t.DirectoryTenantID)
	d, ok := srv.dirs[key]
	if !ok {
		d = &directory{users: idp.Users(w.Users).InTenant(t.DirectoryTenantID)}
		srv.dirs[key] = d
	}
	return d
}

// managedDevices are the directory's devices, user by user.
func (d *directory) managedDevices() []ownedDevice {
	d.devicesOnce.Do(func() {
		for i, u := range d.users {
			for _, dev := range Devices(u) {
				d.devices = append(d.devices, ownedDevice{user: i, Device: dev})
			}
		}
	})
	return d.devices
}

// Register serves the Graph routes on the simulator's Graph service,
// checking tokens with auth.
func Register(s *cloudsim.Sim, auth Authenticator) {
	srv := &server{sim: s, auth: auth}
	for _, v := range versions {
		srv.registerUsers(v)
		srv.registerDirectory(v)
		srv.registerAccessReviews(v)
		srv.registerDevices(v)
		srv.registerPolicies(v)
		srv.registerPIM(v)
		srv.registerRisk(v)
		srv.registerApps(v)
		srv.registerMail(v)
		// Anything else under a version is answered as Graph answers an
		// unknown segment, rather than with the mux's plain-text 404.
		srv.handle("/"+v+"/", unknownSegment)
	}
}

// call is one authenticated request: the world it reads, the directory
// tenant its token names and the API version it was sent to.
type call struct {
	w       http.ResponseWriter
	r       *http.Request
	srv     *server
	version string
	world   *world.World
	tenant  world.Tenant
}

// handle registers a route behind Graph's authentication: a valid bearer
// token for Graph whose tenant is a directory of the world.
func (srv *server) handle(pattern string, h func(*call)) {
	srv.sim.Handle(cloudsim.Graph, pattern, func(w http.ResponseWriter, r *http.Request) {
		c := &call{w: w, r: r, srv: srv}
		c.version, _, _ = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		claims, err := srv.auth.VerifyAccessToken(r, Audience)
		if err != nil {
			c.unauthorized(err)
			return
		}
		// The request reads one world throughout, though the simulator's
		// may be replaced while it is served.
		c.world = srv.sim.World()
		t, ok := tenantOf(c.world, claims.TenantID)
		if !ok {
			c.unauthorized(fmt.Errorf("%w: tenant %q has no directory here", idp.ErrInvalidToken, claims.TenantID))
			return
		}
		if !srv.sim.Consents(t.DirectoryTenantID) {
			// The directory withdrew its consent: the application's service
			// principal is gone, with the permissions granted to it.
			c.error(http.StatusForbidden, "Authorization_RequestDenied", "Insufficient privileges to complete the operation.")
			return
		}
		c.tenant = t
		h(c)
	})
}

func tenantOf(w *world.World, id string) (world.Tenant, bool) {
	for _, t := range w.Tenants {
		if strings.EqualFold(t.DirectoryTenantID, id) {
			return t, true
		}
	}
	return world.Tenant{}, false
}

// directory is the call's tenant's directory.
func (c *call) directory() *directory { return c.srv.directoryOf(c.world, c.tenant) }

// users are the directory's users: the world's users of the call's tenant,
// guests included, as a guest is a user object of the inviting tenant.
func (c *call) users() idp.Users { return c.directory().users }

// today is the simulator's calendar day at midnight UTC, which the derived
// dates are relative to, as the demo world's ages are.
func (c *call) today() time.Time { return c.srv.sim.Now().UTC().Truncate(24 * time.Hour) }

// unauthorized answers 401 as Graph does: always InvalidAuthenticationToken,
// the message telling why, and a bearer challenge naming the authority.
func (c *call) unauthorized(err error) {
	msg := "Access token validation failure."
	switch {
	case errors.Is(err, idp.ErrNoToken):
		msg = "Access token is empty."
	case errors.Is(err, idp.ErrExpiredToken):
		msg = "Access token has expired or is not yet valid."
	// The provider has no sentinel for a token of another resource; its
	// message names the audience.
	case strings.Contains(err.Error(), "audience"):
		msg = "Access token validation failure. Invalid audience."
	}
	c.w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="", authorization_uri="%s/common/oauth2/authorize", client_id="00000003-0000-0000-c000-000000000000"`,
		c.srv.sim.URLs[cloudsim.IdP]))
	c.error(http.StatusUnauthorized, "InvalidAuthenticationToken", msg)
}

// unknownSegment answers a path no route serves.
func unknownSegment(c *call) {
	if c.r.Method != http.MethodGet {
		c.error(http.StatusMethodNotAllowed, "Request_BadRequest", "Specified HTTP method is not allowed for the request target.")
		return
	}
	segs := strings.Split(strings.Trim(c.r.URL.Path, "/"), "/")
	c.error(http.StatusBadRequest, "BadRequest", fmt.Sprintf("Resource not found for the segment '%s'.", segs[len(segs)-1]))
}

func (c *call) notFound(id string) {
	c.error(http.StatusNotFound, "Request_ResourceNotFound",
		fmt.Sprintf("Resource '%s' does not exist or one of its queried reference-property objects are not present.", id))
}

// error answers in Graph's error envelope. Its innerError carries the
// request ids clients log to correlate with the service: the
// client-request-id the client sent is echoed, as Graph does.
func (c *call) error(status int, code, message string) {
	reqID := c.requestIDs()
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	writeBody(c.w, map[string]any{"error": map[string]any{
		"code":    code,
		"message": message,
		"innerError": map[string]string{
			"date":              c.srv.sim.Now().UTC().Format(time.RFC3339),
			"request-id":        reqID,
			"client-request-id": c.w.Header().Get("client-request-id"),
		},
	}})
}

// requestIDs sets the request-id and client-request-id headers Graph puts
// on every answer and returns the request id.
func (c *call) requestIDs() string {
	reqID := uuid.NewString()
	clientID := c.r.Header.Get("client-request-id")
	if clientID == "" {
		clientID = reqID
	}
	c.w.Header().Set("request-id", reqID)
	c.w.Header().Set("client-request-id", clientID)
	return reqID
}

// context is the @odata.context of an answer about an entity set or
// entity path, e.g. "users".
func (c *call) context(path string) string {
	return c.srv.sim.URLs[cloudsim.Graph] + "/" + c.version + "/$metadata#" + path
}

func (c *call) ok(body any) {
	c.requestIDs()
	c.w.Header().Set("Content-Type", "application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8")
	c.w.Header().Set("OData-Version", "4.0")
	writeBody(c.w, body)
}

// list answers a collection of n items, item building the i-th: the items
// passing the request's $filter (over the properties props gives each
// item; nil props accepts no filter), cut into pages at $top and the
// simulator's default page size, with the OData context and the next
// page's link. Without a $filter only the page's items are built, so a
// page of a large collection costs its own items alone.
func list[T any](c *call, path string, n int, item func(int) T, props func(T) map[string]any) {
	if raw := c.r.URL.Query().Get("$top"); raw != "" {
		if top, err := strconv.Atoi(raw); err != nil || top < 1 || top > maxTop {
			c.error(http.StatusBadRequest, "Request_BadRequest",
				fmt.Sprintf("Invalid page size specified: '%s'. Must be between 1 and %d inclusive.", raw, maxTop))
			return
		}
	}
	if raw := c.r.URL.Query().Get("$filter"); raw != "" {
		if props == nil {
			c.error(http.StatusBadRequest, "Request_UnsupportedQuery", "Unsupported query: $filter is not supported on "+path+".")
			return
		}
		// A zero item names the filterable properties.
		var zero T
		f, err := parseFilter(raw, props(zero))
		if err != nil {
			c.error(http.StatusBadRequest, "Request_UnsupportedQuery", err.Error())
			return
		}
		kept := make([]T, 0, n)
		for i := range n {
			if it := item(i); f.matches(props(it)) {
				kept = append(kept, it)
			}
		}
		n, item = len(kept), func(i int) T { return kept[i] }
	}
	p := cloudsim.PageOf(c.r, c.srv.sim.URLs[cloudsim.Graph], n, cloudsim.DefaultPageSize)
	page := make([]T, 0, p.End-p.Start)
	for i := p.Start; i < p.End; i++ {
		page = append(page, item(i))
	}
	body := map[string]any{"@odata.context": c.context(path), "value": page}
	if p.NextLink != "" {
		body["@odata.nextLink"] = p.NextLink
	}
	c.ok(body)
}

// listOf answers a collection held whole, as list does.
func listOf[T any](c *call, path string, items []T, props func(T) map[string]any) {
	list(c, path, len(items), func(i int) T { return items[i] }, props)
}

// objectIDs is the namespace of the ids the simulator derives for objects
// the world does not name: roles, review instances, decisions, devices.
var objectIDs = uuid.MustParse("b3c1f0e6-5d2a-4b8e-9f47-0a6e2d9c41f5")

func derivedID(kind string, parts ...string) string {
	return uuid.NewSHA1(objectIDs, []byte(kind+":"+strings.ToLower(strings.Join(parts, "/")))).String()
}

// stamp formats a Graph DateTimeOffset.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func writeBody(w http.ResponseWriter, body any) {
	_ = json.NewEncoder(w).Encode(body)
}
