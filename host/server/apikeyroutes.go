package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/apikeys"
	"github.com/stewardhq/steward/host/audit"
)

// headerAPIKey carries an API key instead of a bearer token.
const headerAPIKey = "X-API-Key"

type apiKeyCreateInput struct {
	Body struct {
		Name      string     `json:"name" minLength:"1" maxLength:"200"`
		Role      string     `json:"role" enum:"admin,standard" doc:"admin sees every tenant and may call admin routes; standard sees only tenant_ids"`
		TenantIDs []string   `json:"tenant_ids,omitempty" maxItems:"1000" doc:"Internal tenant ids a standard key may see; required for a standard key, refused for an admin key"`
		ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"When the key stops working; must be in the future. Without it the key works until revoked."`
	}
}

// createdAPIKey is the only response that shows the key itself.
type createdAPIKey struct {
	apikeys.Key
	Secret string `json:"key" doc:"The key to send in X-API-Key; shown only in this response"`
}

func (s *Server) registerAPIKeys() {
	admin := api.AdminOnly()
	api.Register(s.API, huma.Operation{OperationID: "api-keys-create", Method: http.MethodPost, Path: "/api/v1/api-keys", Tags: []string{"api-keys"},
		Summary:       "Create an API key",
		Description:   "The response carries the key as stw_<id>_<secret>, once: only a hash of the secret is stored. Send it in the X-API-Key header; the key acts with its role and tenant scope, and its audit entries name the actor apikey:<id>.",
		DefaultStatus: http.StatusCreated, Metadata: admin},
		func(ctx context.Context, in *apiKeyCreateInput) (*struct{ Body createdAPIKey }, error) {
			k, secret, err := s.deps.APIKeys.Create(ctx, apikeys.NewKey{
				Name: in.Body.Name, Role: in.Body.Role, TenantIDs: in.Body.TenantIDs, CreatedBy: api.PrincipalFrom(ctx).ActorID(), ExpiresAt: in.Body.ExpiresAt,
			})
			var ve *apikeys.ValidationError
			if errors.As(err, &ve) {
				return nil, huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "body." + ve.Field, Message: ve.Reason, Value: ve.Value})
			}
			if err != nil {
				return nil, err
			}
			s.rec.Record(ctx, audit.Entry{Action: "apikey.create.success", Status: audit.StatusSuccess, ResourceType: "api_key", ResourceID: k.ID,
				Details: map[string]any{"name": k.Name, "role": k.Role, "tenant_ids": k.TenantIDs, "expires_at": k.ExpiresAt}})
			return &struct{ Body createdAPIKey }{createdAPIKey{Key: k, Secret: secret}}, nil
		})
	api.Register(s.API, huma.Operation{OperationID: "api-keys-list", Method: http.MethodGet, Path: "/api/v1/api-keys", Tags: []string{"api-keys"},
		Summary: "API keys, newest first", Description: "Revoked and expired keys are listed too. Neither the key nor its hash is ever shown.", Metadata: admin},
		func(ctx context.Context, _ *struct{}) (*struct{ Body []apikeys.Key }, error) {
			keys, err := s.deps.APIKeys.List(ctx)
			return &struct{ Body []apikeys.Key }{keys}, err
		})
	api.Register(s.API, huma.Operation{OperationID: "api-keys-revoke", Method: http.MethodDelete, Path: "/api/v1/api-keys/{key_id}", Tags: []string{"api-keys"},
		Summary: "Revoke an API key", Description: "The key is refused from the next request on. Revoking a revoked key changes nothing.",
		DefaultStatus: http.StatusNoContent, Metadata: admin, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *struct {
			KeyID string `path:"key_id" maxLength:"64"`
		}) (*struct{}, error) {
			err := s.deps.APIKeys.Revoke(ctx, in.KeyID)
			if errors.Is(err, apikeys.ErrNotFound) {
				return nil, huma.Error404NotFound("no API key with that id")
			}
			if err != nil {
				return nil, err
			}
			s.rec.Record(ctx, audit.Entry{Action: "apikey.revoke.success", Status: audit.StatusSuccess, ResourceType: "api_key", ResourceID: in.KeyID})
			return &struct{}{}, nil
		})
}

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

// actorOf is the audit actor id of p, as record writes it.
func actorOf(p *api.Principal) string {
	if p.Kind == api.KindAPIKey {
		return "apikey:" + p.ID
	}
	return p.ID
}
