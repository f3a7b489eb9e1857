// Package api is what the host's domains declare their HTTP operations
// with: the principal a request acts for and the request's audit details,
// as the server's middleware puts them into a handler's context; the
// operation metadata the server enforces (who may call, which parameter
// names a tenant); and [Handle], which adds an operation declared as a
// plugin's typed route is, with every status the host answers around its
// handler, so /openapi.json says what the server does.
//
// The server (host/server) routes, authenticates and maps errors; each
// domain (auth, tenancy, audit, onboarding, jobs, apikeys, plugins) keeps
// its own handlers and registers them on the server's huma API through this
// package. It imports none of them, so every one of them may import it:
// the principal is defined here rather than in host/auth for that reason,
// and host/audit's Recorder reads the principal from here.
package api

import (
	"context"
	"slices"

	"github.com/danielgtaylor/huma/v2"
)

// Principal kinds.
const (
	KindUser   = "user"
	KindAPIKey = "apikey"
)

// Principal is whoever a request acts for: a signed-in user or an API key.
type Principal struct {
	ID      string   `json:"id"`
	Email   string   `json:"email,omitempty"`
	Name    string   `json:"name,omitempty"`
	Roles   []string `json:"roles"`
	IsAdmin bool     `json:"is_admin"`
	// Kind is KindUser or KindAPIKey.
	Kind string `json:"kind"`
	// TenantIDs are the tenants a standard principal may see. Admins see
	// every tenant whatever this holds.
	TenantIDs []string `json:"tenant_ids"`
}

// CanSeeTenant reports whether p may see the tenant with the given id.
func (p Principal) CanSeeTenant(id string) bool {
	return p.IsAdmin || slices.Contains(p.TenantIDs, id)
}

// ActorID is p as the audit log names an actor: a user by its id, an API
// key as apikey:<id>.
func (p Principal) ActorID() string {
	if p.Kind == KindAPIKey {
		return "apikey:" + p.ID
	}
	return p.ID
}

// Meta is what audit entries need from the HTTP request.
type Meta struct {
	ClientAddr string
	RequestID  string
}

type principalKey struct{}

type metaKey struct{}

// WithRequest puts the request's principal (nil when anonymous) and meta
// into the context its operation's handler receives.
func WithRequest(ctx huma.Context, p *Principal, m Meta) huma.Context {
	return huma.WithValue(huma.WithValue(ctx, principalKey{}, p), metaKey{}, m)
}

// WithCaller is WithRequest for a handler outside huma, such as a web
// page's, which calls a domain's operations with a plain context.
func WithCaller(ctx context.Context, p *Principal, m Meta) context.Context {
	return context.WithValue(context.WithValue(ctx, principalKey{}, p), metaKey{}, m)
}

// PrincipalFrom is the principal of the request a handler serves; nil when
// the caller is anonymous, which only an operation declared with
// sdk.AuthNone sees.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// MetaFrom is the meta of the request a handler serves.
func MetaFrom(ctx context.Context) Meta {
	m, _ := ctx.Value(metaKey{}).(Meta)
	return m
}
