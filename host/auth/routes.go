package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/oidc"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk"
)

// AdminRole is the identity provider app role that makes an admin.
const AdminRole = "Governance.Admin"

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type" enum:"bearer"`
	ExpiresIn    int    `json:"expires_in" doc:"Seconds until the access token expires"`
}

type loginInput struct {
	Body struct {
		Username string `json:"username" minLength:"1" maxLength:"320"`
		Password string `json:"password" minLength:"1" maxLength:"1024"`
		// The rest of the OAuth 2.0 password grant's form (RFC 6749
		// section 4.3.2), which OAuth2 clients, the document's own
		// OAuth2PasswordBearer flow among them, send as a matter of course.
		GrantType    string `json:"grant_type,omitempty" enum:"password" doc:"When sent, must be password"`
		Scope        string `json:"scope,omitempty" maxLength:"1024" doc:"Accepted and ignored: a token carries the user's roles, not scopes"`
		ClientID     string `json:"client_id,omitempty" maxLength:"256" doc:"Accepted and ignored"`
		ClientSecret string `json:"client_secret,omitempty" maxLength:"1024" doc:"Accepted and ignored"`
	} `contentType:"application/x-www-form-urlencoded"`
}

type tenantRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type userInfo struct {
	ID      string      `json:"id"`
	Email   string      `json:"email"`
	Name    string      `json:"name"`
	Roles   []string    `json:"roles"`
	IsAdmin bool        `json:"is_admin"`
	Tenants []tenantRef `json:"tenants"`
}

// Routes serve sign-in: the development login, the identity provider's
// sign-in, the token grants, logout, and who the caller is.
type Routes struct {
	Config config.Config
	Issuer *Issuer
	// Tokens records refresh tokens and revokes sign-ins, on the
	// revocation list every replica reads.
	Tokens  *RefreshStore
	Tenancy *tenancy.Store
	// OIDC is the identity provider's relying party; nil when none is
	// configured, and its routes answer 503.
	OIDC *oidc.RelyingParty
	// Cache is the shared cache that keeps started sign-ins, so that any
	// replica can finish them.
	Cache  cache.Cache
	Audit  *audit.Recorder
	Logger hclog.Logger
}

// Register adds the sign-in operations to a.
func (r Routes) Register(a huma.API) {
	r.registerSession(a)
	r.registerTokens(a)
	r.registerIdP(a)
}

func (r Routes) registerSession(a huma.API) {
	api.Post(a, "/api/v1/auth/login", sdk.Op{ID: "auth-login", Tags: []string{"auth"}, Auth: sdk.AuthNone,
		Summary:     "Sign in with the development credential pair",
		Description: "OAuth2 password form (application/x-www-form-urlencoded: username, password; grant_type, when sent, must be password; scope, client_id and client_secret are accepted and ignored). Accepted only when STEWARD_ENV=development; refused with 403 in staging and production.",
		Errors:      []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity},
	}, r.login)
	api.Get(a, "/api/v1/auth/me", sdk.Op{ID: "auth-me", Summary: "The signed-in user and its tenants", Tags: []string{"auth"}},
		func(ctx context.Context, _ *struct{}) (*userInfo, error) {
			p := api.PrincipalFrom(ctx)
			info := userInfo{ID: p.ID, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Tenants: []tenantRef{}}
			if info.Roles == nil {
				info.Roles = []string{}
			}
			if len(p.TenantIDs) > 0 {
				tenants, err := r.Tenancy.Tenants(ctx, p.TenantIDs, false)
				if err != nil {
					return nil, err
				}
				for _, t := range tenants {
					info.Tenants = append(info.Tenants, tenantRef{ID: t.ID, Name: t.Name})
				}
			}
			return &info, nil
		})
	api.Get(a, "/api/v1/auth/health", sdk.Op{ID: "auth-health", Summary: "Auth components", Tags: []string{"auth"}, Auth: sdk.AuthNone},
		func(ctx context.Context, _ *struct{}) (*map[string]any, error) {
			return &map[string]any{
				"status":            "healthy",
				"jwt_configured":    r.Issuer != nil,
				"dev_login_enabled": r.Config.DevLoginEnabled(),
			}, nil
		})
}

func (r Routes) login(ctx context.Context, in *loginInput) (*struct{ Body tokenResponse }, error) {
	username := strings.TrimSpace(in.Body.Username)
	err := CheckDevCredentials(r.Config.Env, r.Config.DevUsername, r.Config.DevPassword, username, in.Body.Password)
	switch {
	case errors.Is(err, ErrDevLoginDisabled):
		r.Audit.Record(ctx, audit.Entry{Action: "auth.login.failure", Status: audit.StatusFailure, ActorEmail: username, ResourceType: "session", Details: map[string]any{"reason": "password login disabled"}})
		return nil, huma.Error403Forbidden("password login is disabled outside development; sign in through the identity provider")
	case err != nil:
		r.Audit.Record(ctx, audit.Entry{Action: "auth.login.failure", Status: audit.StatusFailure, ActorEmail: username, ResourceType: "session", Details: map[string]any{"reason": "bad credentials"}})
		return nil, huma.Error401Unauthorized("wrong username or password")
	}
	u := &tenancy.User{DirectoryTenantID: tenancy.LocalDirectory, Subject: strings.ToLower(username), Email: username,
		Name: "Development admin", IsAdmin: true, Roles: []string{AdminRole}}
	if err := r.Tenancy.UpsertUser(ctx, u); err != nil {
		return nil, err
	}
	p := api.Principal{ID: u.ID, Email: u.Email, Name: u.Name, Roles: u.Roles, IsAdmin: true, Kind: api.KindUser}
	out, err := r.issueTokens(ctx, p)
	if err != nil {
		return nil, err
	}
	r.Audit.Record(ctx, audit.Entry{Action: "auth.login.success", Status: audit.StatusSuccess, ActorID: u.ID, ActorEmail: u.Email, ResourceType: "session"})
	return out, nil
}

// issueTokens signs a new sign-in's token pair and records its refresh
// token as the first of a new family, so it can be rotated and revoked.
func (r Routes) issueTokens(ctx context.Context, p api.Principal) (*struct{ Body tokenResponse }, error) {
	pair, out, err := r.mintPair(p)
	if err != nil {
		return nil, err
	}
	if err := r.Tokens.Start(ctx, pair); err != nil {
		return nil, err
	}
	return out, nil
}
