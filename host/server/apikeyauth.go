package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/apikeys"
)

// headerAPIKey carries an API key instead of a bearer token.
const headerAPIKey = "X-API-Key"

// keyEntry is what authenticating an API key found, as cached.
type keyEntry struct {
	p         api.Principal
	expiresAt *time.Time
}

// authenticateAPIKey resolves an X-API-Key header into a principal. Like
// authenticate it never refuses the request itself; a bad key leaves the
// reason for the route to answer 401 with.
func (s *Server) authenticateAPIKey(c *fiber.Ctx, token string) error {
	ctx := c.UserContext()
	// Cached by the key's digest, so a lookup compares digests, not
	// secrets, and the cache holds no usable key. Only keys that
	// authenticated are kept; a revocation or a tenant change drops them.
	e, err := s.keys.Load(sha256.Sum256([]byte(token)), func() (keyEntry, error) {
		k, err := s.deps.APIKeys.Authenticate(ctx, token)
		if err != nil {
			return keyEntry{}, err
		}
		p := api.Principal{ID: k.ID, Name: k.Name, Roles: []string{}, IsAdmin: k.Role == apikeys.RoleAdmin, Kind: api.KindAPIKey}
		if p.IsAdmin {
			p.TenantIDs, err = s.deps.Tenancy.Scope(ctx, "", true, nil)
		} else {
			p.TenantIDs, err = s.activeTenants(ctx, k.TenantIDs)
		}
		return keyEntry{p: p, expiresAt: k.ExpiresAt}, err
	})
	if err == nil && e.expiresAt != nil && !time.Now().Before(*e.expiresAt) {
		err = apikeys.ErrExpired
	}
	if errors.Is(err, apikeys.ErrInvalid) || errors.Is(err, apikeys.ErrRevoked) || errors.Is(err, apikeys.ErrExpired) {
		c.Locals(localAuthError, err.Error())
		return c.Next()
	}
	if err != nil {
		return err
	}
	p := e.p
	c.Locals(localPrincipal, &p)
	return c.Next()
}

// activeTenants narrows a key's scope to the tenants that still exist and
// are active, as a user's scope is.
func (s *Server) activeTenants(ctx context.Context, ids []string) ([]string, error) {
	// An empty id list would mean "every tenant" to Tenants.
	if len(ids) == 0 {
		return []string{}, nil
	}
	ts, err := s.deps.Tenancy.Tenants(ctx, ids, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out, nil
}
