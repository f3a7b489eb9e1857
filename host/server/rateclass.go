package server

import (
	"strings"

	"github.com/gofiber/fiber/v2"

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
// variant spelling cannot move a sign-in onto the larger budget. Routing
// is case-sensitive and strict about slashes, so the route matched here
// is the one that serves the request.
func (s *Server) rateClass(c *fiber.Ctx) ratelimit.Class {
	method, path := c.Method(), c.Path()
	segs := protocol.SplitPath(path)
	for _, r := range s.authRoutes {
		if r.method != method {
			continue
		}
		if _, ok := protocol.MatchSegments(r.segments, segs); ok {
			return ratelimit.Auth
		}
	}
	if s.deps.Plugins != nil {
		if r, _ := s.deps.Plugins.Routes().Match(method, path); r != nil && r.RateClass == pluginv1.RateClass_RATE_CLASS_AUTH {
			return ratelimit.Auth
		}
	}
	return ratelimit.Default
}
