package sdk

import (
	"context"
	"slices"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Principal is the caller the host authenticated.
type Principal struct {
	ID      string   `json:"id"`
	Email   string   `json:"email"`
	Name    string   `json:"name"`
	Roles   []string `json:"roles"`
	IsAdmin bool     `json:"is_admin"`
	// Kind is "user" or "apikey".
	Kind string `json:"kind"`
	// TenantIDs are the internal ids of the tenants the principal may see.
	// For an admin it lists every tenant.
	TenantIDs []string `json:"tenant_ids"`
}

// Anonymous reports whether no principal was authenticated (a route with
// AuthNone called without credentials).
func (p Principal) Anonymous() bool { return p.ID == "" }

// CanSee reports whether the principal may see the tenant.
func (p Principal) CanSee(tenantID string) bool {
	return slices.Contains(p.TenantIDs, tenantID)
}

func principalFromProto(p *pluginv1.Principal) Principal {
	if p == nil {
		return Principal{}
	}
	return Principal{ID: p.Id, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Kind: p.Kind, TenantIDs: p.TenantIds}
}

func principalProto(p Principal) *pluginv1.Principal {
	return &pluginv1.Principal{Id: p.ID, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Kind: p.Kind, TenantIds: p.TenantIDs}
}

// RequestInfo is what the host tells the plugin about a request beyond the
// HTTP request itself.
type RequestInfo struct {
	Principal Principal
	RequestID string
	// Route is the declared route pattern the request matched.
	Route string
}

type requestInfoKey struct{}

// WithRequestInfo returns a context carrying info, as the SDK hands a
// handler its request; a unit test of a handler uses it to call the
// handler as a given principal.
func WithRequestInfo(ctx context.Context, info RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// Info returns what the host said about the request.
func Info(ctx context.Context) RequestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(RequestInfo)
	return info
}

// PrincipalFrom returns the verified caller of a request.
func PrincipalFrom(ctx context.Context) Principal { return Info(ctx).Principal }
