package apikeys

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

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
	Key
	Secret string `json:"key" doc:"The key to send in X-API-Key; shown only in this response"`
}

// Routes serve the API keys to admins: creation, listing and revocation.
type Routes struct {
	Store *Store
	Audit *audit.Recorder
}

// Register adds the API key operations to a.
func (r Routes) Register(a huma.API) {
	api.Post(a, "/api/v1/api-keys", sdk.Op{ID: "api-keys-create", Tags: []string{"api-keys"},
		Summary:     "Create an API key",
		Description: "The response carries the key as stw_<id>_<secret>, once: only a hash of the secret is stored. Send it in the X-API-Key header; the key acts with its role and tenant scope, and its audit entries name the actor apikey:<id>.",
		Status:      http.StatusCreated, Auth: sdk.AuthAdmin},
		func(ctx context.Context, in *apiKeyCreateInput) (*createdAPIKey, error) {
			k, secret, err := r.Store.Create(ctx, NewKey{
				Name: in.Body.Name, Role: in.Body.Role, TenantIDs: in.Body.TenantIDs, CreatedBy: api.PrincipalFrom(ctx).ActorID(), ExpiresAt: in.Body.ExpiresAt,
			})
			var ve *ValidationError
			if errors.As(err, &ve) {
				return nil, huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "body." + ve.Field, Message: ve.Reason, Value: ve.Value})
			}
			if err != nil {
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "apikey.create.success", Status: audit.StatusSuccess, ResourceType: "api_key", ResourceID: k.ID,
				Details: map[string]any{"name": k.Name, "role": k.Role, "tenant_ids": k.TenantIDs, "expires_at": k.ExpiresAt}})
			return &createdAPIKey{Key: k, Secret: secret}, nil
		})
	api.Get(a, "/api/v1/api-keys", sdk.Op{ID: "api-keys-list", Tags: []string{"api-keys"},
		Summary: "API keys, newest first", Description: "Revoked and expired keys are listed too. Neither the key nor its hash is ever shown.", Auth: sdk.AuthAdmin},
		func(ctx context.Context, _ *struct{}) (*[]Key, error) {
			keys, err := r.Store.List(ctx)
			return &keys, err
		})
	api.Delete(a, "/api/v1/api-keys/{key_id}", sdk.Op{ID: "api-keys-revoke", Tags: []string{"api-keys"},
		Summary: "Revoke an API key", Description: "The key is refused from the next request on. Revoking a revoked key changes nothing.",
		Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *struct {
			KeyID string `path:"key_id" maxLength:"64"`
		}) (*sdk.Empty, error) {
			err := r.Store.Revoke(ctx, in.KeyID)
			if errors.Is(err, ErrNotFound) {
				return nil, huma.Error404NotFound("no API key with that id")
			}
			if err != nil {
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "apikey.revoke.success", Status: audit.StatusSuccess, ResourceType: "api_key", ResourceID: in.KeyID})
			return &sdk.Empty{}, nil
		})
}
