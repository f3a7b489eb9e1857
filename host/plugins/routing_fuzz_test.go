package plugins

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/valyala/fasthttp"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// routed is what a handler of routingPlugin answers: which route served
// the request, and what the request named.
type routed struct {
	Route   string   `json:"route"`
	ID      string   `json:"id,omitempty"`
	Tenant  string   `json:"tenant,omitempty"`
	Tenants []string `json:"tenants,omitempty"`
}

type idIn struct {
	ID string `path:"id" maxLength:"64"`
}

type tenantPathIn struct {
	Tenant sdk.TenantID `path:"tenant_id"`
}

type tenantsQueryIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Limit   int           `query:"limit" minimum:"1" maximum:"500" default:"50"`
}

type tenantQueryIn struct {
	Tenant sdk.TenantID `query:"tenant_id"`
}

// routingPlugin has what the host's routing must keep apart: a free-form
// path parameter (as a domain's id), a more specific literal beside it, an
// admin route, and tenants named in the path and in the query, each
// trusted by its handler to have been checked by the host.
func routingPlugin() *sdk.Plugin {
	fixed := func(path, id string, auth sdk.Auth) sdk.Route {
		return sdk.Get(path, sdk.Op{ID: id, Auth: auth}, func(context.Context, *sdk.Empty) (*routed, error) {
			return &routed{Route: path}, nil
		})
	}
	return &sdk.Plugin{Routes: []sdk.Route{
		sdk.Get("/api/v1/items/{id}", sdk.Op{ID: "item"}, func(_ context.Context, in *idIn) (*routed, error) {
			return &routed{Route: "/api/v1/items/{id}", ID: in.ID}, nil
		}),
		sdk.Get("/api/v1/items/{id}/history", sdk.Op{ID: "item-history"}, func(_ context.Context, in *idIn) (*routed, error) {
			return &routed{Route: "/api/v1/items/{id}/history", ID: in.ID}, nil
		}),
		fixed("/api/v1/items/summary", "items-summary", sdk.AuthUser),
		fixed("/api/v1/admin/files", "admin-files", sdk.AuthAdmin),
		sdk.Get("/api/v1/tenants/{tenant_id}/report", sdk.Op{ID: "tenant-report"}, func(_ context.Context, in *tenantPathIn) (*routed, error) {
			return &routed{Route: "/api/v1/tenants/{tenant_id}/report", Tenant: string(in.Tenant)}, nil
		}),
		sdk.Get("/api/v1/reports", sdk.Op{ID: "reports"}, func(_ context.Context, in *tenantsQueryIn) (*routed, error) {
			return &routed{Route: "/api/v1/reports", Tenants: in.Tenants}, nil
		}),
		sdk.Get("/api/v1/report", sdk.Op{ID: "report"}, func(_ context.Context, in *tenantQueryIn) (*routed, error) {
			return &routed{Route: "/api/v1/report", Tenant: string(in.Tenant)}, nil
		}),
	}}
}

// routingUser is the caller of every fuzzed request: a user, not an admin,
// of two tenants.
var routingUser = &pluginv1.Principal{Id: "u-1", Kind: "user", TenantIds: []string{"t-1", "t-2"}}

// routingHost is a host in front of routingPlugin on both data planes.
type routingHost struct {
	app    *fiber.App
	table  *RouteTable
	planes map[string]func(c *fiber.Ctx, r *Route, params map[string]string) error
}

func newRoutingHost(tb testing.TB) *routingHost {
	p := routingPlugin()
	stream := plugintest.New(tb, sdk.Definition{Name: "p"}, built(p), plugintest.Options{})
	table := newRouteTable()
	if err := table.set("p", protocol.AllRoutes(stream.Describe()), nil); err != nil {
		tb.Fatal(err)
	}
	socket := socketPlugin(tb, p)
	rpc := &protocol.Client{PluginClient: stream.Client()}
	limit := bodyLimit{plugin: "p", max: DefaultMaxResponseBytes, log: hclog.NewNullLogger()}
	return &routingHost{
		// As the host's server is configured (host/server): routing on the
		// path as sent.
		app:   fiber.New(fiber.Config{CaseSensitive: true, StrictRouting: true, Immutable: true, DisablePreParseMultipartForm: true}),
		table: table,
		planes: map[string]func(*fiber.Ctx, *Route, map[string]string) error{
			"socket": func(c *fiber.Ctx, r *Route, _ map[string]string) error {
				return proxySocket(c, socket, r, routingUser, "req-1", DefaultRequestTimeout, limit)
			},
			"grpc": func(c *fiber.Ctx, r *Route, params map[string]string) error {
				return proxyStream(c, rpc, r, params, routingUser, "req-1", DefaultRequestTimeout, limit)
			},
		},
	}
}

// admit is what the host's dispatch (host/server) decides before it
// proxies a request to a plugin route: the route's auth, the path
// parameters decoded, no control characters, the declared parameters, the
// tenants named. It returns the route and its decoded path parameters, or
// nil when the host answers the request itself.
func (h *routingHost) admit(c *fiber.Ctx) (*Route, map[string]string) {
	r, raw := h.table.Match(c.Method(), c.Path())
	if r == nil {
		return nil, nil
	}
	if status, _ := r.Admit(routingUser); status != 0 {
		return nil, nil
	}
	params, errs := protocol.DecodePathParams(raw)
	if len(errs) > 0 {
		return nil, nil
	}
	in := protocol.Inputs{PathParams: params}
	for k, v := range c.Context().QueryArgs().All() {
		in.Query = append(in.Query, [2]string{string(k), string(v)})
	}
	query := func(name string) []string {
		var out []string
		for _, v := range c.Context().QueryArgs().PeekMulti(name) {
			out = append(out, string(v))
		}
		return out
	}
	if len(protocol.InputErrors(in)) > 0 || len(r.Validate(query, params)) > 0 {
		return nil, nil
	}
	if r.CheckTenant(routingUser, query, params, nil) != 0 {
		return nil, nil
	}
	return r, params
}

// exchange sends a GET of uri, read as the host's server reads a request,
// through the host's checks to the plugin over plane. ok is false when
// the host answers the request itself (or its server refuses it);
// otherwise it returns the route the host matched, the path parameters it
// decoded and the plugin's answer.
func (h *routingHost) exchange(tb testing.TB, plane, uri string) (r *Route, params map[string]string, status int, body []byte, ok bool) {
	tb.Helper()
	var req fasthttp.Request
	if req.Read(bufio.NewReader(strings.NewReader("GET "+uri+" HTTP/1.1\r\nHost: steward\r\n\r\n"))) != nil {
		return nil, nil, 0, nil, false
	}
	var fctx fasthttp.RequestCtx
	fctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
	c := h.app.AcquireCtx(&fctx)
	defer h.app.ReleaseCtx(c)
	if r, params = h.admit(c); r == nil {
		return nil, nil, 0, nil, false
	}
	if err := h.planes[plane](c, r, params); err != nil {
		tb.Fatalf("%s plane: %s %q: %v", plane, r.Pattern, uri, err)
	}
	return r, params, fctx.Response.StatusCode(), fctx.Response.Body(), true
}

// TestPluginServesTheRouteTheHostChecked: a path spelled so that a URL
// normalizer or parser would split it otherwise than the host reaches, on
// either data plane, the route the host matched and checked, with the
// path parameters it decoded — not another route, whose auth or tenant
// the host did not check. Before the host sent a plugin the path it
// matched in its canonical form (protocol.PluginPath), the socket's client
// decoded and resolved it, and /items/..%2Fadmin%2Ffiles, which a user may
// call as /items/{id}, reached the admin route.
func TestPluginServesTheRouteTheHostChecked(t *testing.T) {
	h := newRoutingHost(t)
	for _, c := range []struct{ uri, route, id string }{
		{"/api/v1/items/..%2Fadmin%2Ffiles", "/api/v1/items/{id}", "../admin/files"},
		{"/api/v1/items/..%2Ftenants%2Ft-3%2Freport", "/api/v1/items/{id}", "../tenants/t-3/report"},
		{"/api/v1/items/./history", "/api/v1/items/{id}/history", "."},
		{"/api/v1/items/%2e%2e", "/api/v1/items/{id}", ".."},
		{"/api/v1/items/a%2Fb", "/api/v1/items/{id}", "a/b"},
		{"/api/v1/items/caf%C3%A9", "/api/v1/items/{id}", "café"},
		{"/api/v1/items/café%2Fhistory", "/api/v1/items/{id}", "café/history"},
		{`/api/v1/items/"%2Fhistory`, "/api/v1/items/{id}", `"/history`},
	} {
		for plane := range h.planes {
			r, _, status, body, ok := h.exchange(t, plane, c.uri)
			var got routed
			if !ok || r.Pattern != c.route || status != fiber.StatusOK || json.Unmarshal(body, &got) != nil {
				t.Fatalf("%s plane: %q: admitted %v, as %v: %d %s", plane, c.uri, ok, r, status, body)
			}
			if got.Route != c.route || got.ID != c.id {
				t.Errorf("%s plane: %q reached %s with id %q, want %s with %q", plane, c.uri, got.Route, got.ID, c.route, c.id)
			}
		}
	}
	// A name without a value is an empty value, to the host and to the
	// plugin alike (huma's own query parser reads it as "true").
	for plane := range h.planes {
		_, _, status, body, _ := h.exchange(t, plane, "/api/v1/report?tenant_id")
		var got routed
		if status != fiber.StatusOK || json.Unmarshal(body, &got) != nil || got.Tenant != "" {
			t.Errorf("%s plane: ?tenant_id answered %d %s", plane, status, body)
		}
	}
}

// FuzzPluginRouting sends a request the host would pass to a plugin over
// each data plane. Whatever the path's spelling (percent-encoding, dot
// segments, characters a URL parser re-encodes) and the query's, the
// handler that answers must be the route the host matched and checked,
// with the path parameters the host decoded, and with no tenant the caller
// may not see: a plugin trusts the host for its routes' auth and tenant
// inputs.
func FuzzPluginRouting(f *testing.F) {
	for _, seed := range []string{
		"/api/v1/items/example.com",
		"/api/v1/items/summary",
		"/api/v1/items/a%20b/history",
		"/api/v1/items/a%2Fb",
		"/api/v1/items/caf%C3%A9",
		"/api/v1/items/%2e%2e",
		"/api/v1/items/./history",
		"/api/v1/admin/files",
		"/api/v1/tenants/t-1/report",
		"/api/v1/tenants/t-3/report",
		"/api/v1/reports?tenant_ids=t-1,t-2&limit=10",
		"/api/v1/reports?tenant_ids=t-1&tenant_ids=t-2",
		"/api/v1/reports?tenant_ids=t-3",
		"/api/v1/reports?tenant_ids=t-1;tenant_ids=t-3",
		"/api/v1/report?tenant_id=t-2",
		"/api/v1/report?tenant_id=t-1&tenant_id=t-3",
		"/api/v1/report?tenant%5Fid=t-1",
	} {
		f.Add(seed)
	}
	h := newRoutingHost(f)
	f.Fuzz(func(t *testing.T, uri string) {
		for plane := range h.planes {
			r, params, status, body, ok := h.exchange(t, plane, uri)
			if !ok {
				continue
			}
			var got routed
			if status != fiber.StatusOK || json.Unmarshal(body, &got) != nil {
				t.Fatalf("%s plane: the host matched %s for %q with %v; the plugin answered %d %s", plane, r.Pattern, uri, params, status, body)
			}
			if got.Route != r.Pattern {
				t.Fatalf("%s plane: the host matched %s for %q; the plugin served %s", plane, r.Pattern, uri, got.Route)
			}
			if id, ok := params["id"]; ok && got.ID != id {
				t.Fatalf("%s plane: %q: the host checked id %q; the plugin's handler got %q", plane, uri, id, got.ID)
			}
			for _, id := range append(got.Tenants, got.Tenant) {
				if id != "" && !slices.Contains(routingUser.TenantIds, id) {
					t.Fatalf("%s plane: %q reached %s with tenant %q of another", plane, uri, got.Route, id)
				}
			}
		}
	})
}
