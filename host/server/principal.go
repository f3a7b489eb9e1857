package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humafiber"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/tenancy"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

const (
	localPrincipal = "steward.principal"
	localAuthError = "steward.auth_error"
	localRoute     = "steward.route"

	pluginAuthNone = pluginv1.Auth_AUTH_NONE
)

// authenticate resolves the caller from an API key or a bearer token. It
// never refuses a request itself: each route says whether it needs a
// principal, so that health checks and sign-in work without one.
func (s *Server) authenticate(c *fiber.Ctx) error {
	// An API key, when sent, decides alone: a request acts for one caller.
	if key := c.Get(headerAPIKey); key != "" {
		return s.authenticateAPIKey(c, key)
	}
	h := c.Get(fiber.HeaderAuthorization)
	var token string
	if h == "" {
		// A browser's session: its cookie carries the same access token,
		// and a request it authenticates must show the session's CSRF
		// token to change anything (checkCSRF).
		if token = s.sessionToken(c); token == "" {
			return c.Next()
		}
		c.Locals(localViaCookie, true)
	} else {
		scheme, t, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "bearer") || t == "" {
			c.Locals(localAuthError, "Authorization header must be \"Bearer <token>\"")
			return c.Next()
		}
		token = t
	}
	claims, err := s.deps.Issuer.Verify(token, auth.TypeAccess)
	if err != nil {
		c.Locals(localAuthError, "invalid or expired token")
		return c.Next()
	}
	// Checked on every request, through a cache that every revocation
	// drops on every replica (see authcache), so a logout applies within a
	// second everywhere. A failed lookup fails the request: without the
	// list, a revoked token cannot be told from a good one (a Redis outage
	// answers 503, see errorHandler).
	revoked, err := s.revocations.Revoked(c.UserContext(), claims.ID)
	if err != nil {
		return err
	}
	if revoked {
		c.Locals(localAuthError, "token has been revoked")
		return c.Next()
	}
	p := claims.Principal()
	scope, err := s.scopeOf(c.UserContext(), &p)
	if err != nil {
		return err
	}
	p.TenantIDs = scope
	c.Locals(localPrincipal, &p)
	return c.Next()
}

// authCacheSize bounds each of authentication's caches: the users, tokens
// and API keys active within an entry's lifetime, of which the least
// recently used are dropped beyond it.
const authCacheSize = 10_000

// scopeKey names a scope: every admin has the same one, so admins share it.
type scopeKey struct {
	admin  bool
	userID string
}

// scopeOf lists the tenants a principal may see, from the directory. It is
// cached, and every write to tenants, users or memberships drops the cache
// on every replica, so a membership change applies within a second.
func (s *Server) scopeOf(ctx context.Context, p *api.Principal) ([]string, error) {
	k := scopeKey{admin: true}
	if !p.IsAdmin {
		k = scopeKey{userID: p.ID}
	}
	return s.scopes.Load(k, func() ([]string, error) {
		var groups []string
		if !p.IsAdmin {
			u, err := s.deps.Tenancy.User(ctx, p.ID)
			switch {
			case err == nil:
				groups = u.Groups
			case !errors.Is(err, tenancy.ErrNotFound):
				// Not kept: a scope narrowed by a failed read would
				// outlive the failure.
				return nil, err
			}
		}
		return s.deps.Tenancy.Scope(ctx, p.ID, p.IsAdmin, groups)
	})
}

// PrincipalOf returns the caller authenticate resolved, or nil.
func PrincipalOf(c *fiber.Ctx) *api.Principal {
	p, _ := c.Locals(localPrincipal).(*api.Principal)
	return p
}

// requireAuth enforces each host operation's auth requirement and puts the
// principal into the handler's context.
func (s *Server) requireAuth(ctx huma.Context, next func(huma.Context)) {
	c := humafiber.Unwrap(ctx)
	need, _ := ctx.Operation().Metadata[api.MetaAuth].(string)
	p := PrincipalOf(c)
	if need != api.AuthNone {
		if p == nil {
			detail := "authentication required"
			if msg, ok := c.Locals(localAuthError).(string); ok {
				detail = msg
			}
			ctx.SetHeader("WWW-Authenticate", "Bearer")
			_ = huma.WriteErr(s.API, ctx, http.StatusUnauthorized, detail)
			return
		}
		if need == api.AuthAdmin && !p.IsAdmin {
			_ = huma.WriteErr(s.API, ctx, http.StatusForbidden, "admin role required")
			return
		}
	}
	if _, errs := inputErrors(c, c.AllParams()); len(errs) > 0 {
		details := make([]error, len(errs))
		for i, e := range errs {
			details[i] = e
		}
		_ = huma.WriteErr(s.API, ctx, http.StatusUnprocessableEntity, protocol.MsgValidationFailed, details...)
		return
	}
	next(api.WithRequest(ctx, p, api.Meta{ClientAddr: c.IP(), RequestID: requestID(c)}))
}

func rateKey(c *fiber.Ctx) string {
	if p := PrincipalOf(c); p != nil {
		return p.Kind + ":" + p.ID
	}
	return "ip:" + c.IP()
}

// toProto converts a principal for a plugin.
func toProto(p *api.Principal) *pluginv1.Principal {
	if p == nil {
		return nil
	}
	return &pluginv1.Principal{Id: p.ID, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Kind: p.Kind, TenantIds: p.TenantIDs}
}
