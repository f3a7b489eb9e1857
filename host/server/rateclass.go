package server

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/pages"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/ratelimit"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// hostRoute is a host operation's method and path pattern, matched the way
// the router and the plugin route table match them.
type hostRoute struct {
	method   string
	segments []string
}

// authRateClass reports whether a host operation draws on the sign-in
// budget. Onboarding is there too: it is anonymous, and its verification
// calls the cloud.
func authRateClass(pattern string) bool {
	return strings.HasPrefix(pattern, "/api/v1/auth/") || strings.HasPrefix(pattern, "/onboarding/")
}

// rateClass picks the budget of the route the request matches — a host
// operation or a plugin route — never from the path's text alone, so a
// variant spelling cannot move a sign-in onto the larger budget or a dry
// run off the costly one. Routing is case-sensitive and strict about
// slashes, so the route matched here is the one that serves the request.
func (s *Server) rateClass(c *fiber.Ctx) ratelimit.Class {
	method, path := c.Method(), c.Path()
	// An auth route's pattern begins with its literal prefix, so only such
	// a path can match one.
	if authRateClass(path) {
		segs := protocol.SplitPath(path)
		for _, r := range s.authRoutes {
			if r.method != method {
				continue
			}
			if _, ok := protocol.MatchSegments(r.segments, segs); ok {
				return ratelimit.Auth
			}
		}
	}
	if pages.SignInStep(c) {
		return ratelimit.Auth
	}
	if r, _ := s.matchPlugin(c); r != nil {
		switch r.RateClass {
		case pluginv1.RateClass_RATE_CLASS_AUTH:
			return ratelimit.Auth
		case pluginv1.RateClass_RATE_CLASS_COSTLY:
			return ratelimit.Costly
		}
		if r.View != "" && browserView(c) {
			return ratelimit.UI
		}
		return ratelimit.Default
	}
	if pages.HostView(c.Path()) && browserView(c) {
		return ratelimit.UI
	}
	return ratelimit.Default
}

// browserView reports whether a request for a page, a fragment or an
// asset comes from a browser, and so draws on the UI budget: a read by the
// browser's session cookie, or by nobody yet (sent to sign in). An API
// client reading the same HTML with a Bearer token or an API key stays on
// the default budget, so that it cannot add the two together.
func browserView(c *fiber.Ctx) bool {
	if m := c.Method(); m != fiber.MethodGet && m != fiber.MethodHead {
		return false
	}
	via, _ := c.Locals(localViaCookie).(bool)
	return via || PrincipalOf(c) == nil
}

const localPluginMatch = "steward.plugin_match"

type pluginMatch struct {
	route  *plugins.Route
	params map[string]string
}

// matchPlugin finds the plugin route of the request once, for the rate
// limiter and the dispatcher both; nil when no plugin serves it.
func (s *Server) matchPlugin(c *fiber.Ctx) (*plugins.Route, map[string]string) {
	if s.deps.Plugins == nil {
		return nil, nil
	}
	if m, ok := c.Locals(localPluginMatch).(pluginMatch); ok {
		return m.route, m.params
	}
	r, params := s.deps.Plugins.Routes().Match(c.Method(), c.Path())
	c.Locals(localPluginMatch, pluginMatch{route: r, params: params})
	return r, params
}
