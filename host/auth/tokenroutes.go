package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk"
)

type refreshInput struct {
	Body struct {
		RefreshToken string `json:"refresh_token" minLength:"1" maxLength:"4096"`
	}
}

// tokenInput is the OAuth2 token form. The refresh grant reads
// refresh_token; the authorization_code grant reads code plus the PKCE
// code_verifier (RFC 7636's addition to the form), which binds the request
// to the sign-in the login route started, and optionally that sign-in's
// state, as the IdP callback does. The other fields are accepted so that
// standard OAuth2 clients can post their usual form.
type tokenInput struct {
	Body struct {
		GrantType    string `json:"grant_type" enum:"refresh_token,authorization_code"`
		RefreshToken string `json:"refresh_token,omitempty" maxLength:"4096" doc:"Required when grant_type is refresh_token"`
		Code         string `json:"code,omitempty" maxLength:"8192" doc:"Required when grant_type is authorization_code"`
		CodeVerifier string `json:"code_verifier,omitempty" maxLength:"128" doc:"Required when grant_type is authorization_code: the verifier GET /api/v1/auth/idp/login gave"`
		State        string `json:"state,omitempty" maxLength:"512" doc:"Optional with grant_type authorization_code: the state from the identity provider's redirect; when given it must be the sign-in's"`
		RedirectURI  string `json:"redirect_uri,omitempty" maxLength:"2048"`
		ClientID     string `json:"client_id,omitempty" maxLength:"256"`
		ClientSecret string `json:"client_secret,omitempty" maxLength:"1024"`
	} `contentType:"application/x-www-form-urlencoded"`
}

type logoutInput struct {
	Authorization string `header:"Authorization" doc:"Bearer access token to revoke"`
}

type logoutResponse struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// registerTokens adds refresh, the token grant and logout, on the
// revocation list shared by every replica (see Routes.Tokens).
func (r Routes) registerTokens(a huma.API) {
	api.Post(a, "/api/v1/auth/refresh", sdk.Op{ID: "auth-refresh", Tags: []string{"auth"}, Auth: sdk.AuthNone,
		Summary:     "Exchange a refresh token for a new token pair",
		Description: "Refresh tokens are single use: the presented one is spent and a new pair returned. Presenting a spent refresh token again revokes every token descended from the same sign-in and answers 401.",
		Errors:      []int{http.StatusUnauthorized, http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *refreshInput) (*struct{ Body tokenResponse }, error) {
		return r.refresh(ctx, in.Body.RefreshToken)
	})
	api.Post(a, "/api/v1/auth/token", sdk.Op{ID: "auth-token", Tags: []string{"auth"}, Auth: sdk.AuthNone,
		Summary: "OAuth2 token endpoint",
		Description: "Form (application/x-www-form-urlencoded). grant_type refresh_token requires refresh_token and behaves as POST /api/v1/auth/refresh. " +
			"grant_type authorization_code requires code and code_verifier and behaves as POST /api/v1/auth/idp/callback: state is optional, as code_verifier binds the request to its sign-in (a state given must be that sign-in's). " +
			"client_id, client_secret and redirect_uri are accepted and ignored: Steward has no registered OAuth2 clients.",
		Errors: []int{http.StatusUnauthorized, http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *tokenInput) (*struct{ Body tokenResponse }, error) {
		if in.Body.GrantType == "authorization_code" {
			var missing []error
			for _, f := range []struct{ name, value string }{{"code", in.Body.Code}, {"code_verifier", in.Body.CodeVerifier}} {
				if f.value == "" {
					missing = append(missing, &huma.ErrorDetail{Location: "body." + f.name, Message: "required when grant_type is authorization_code"})
				}
			}
			if len(missing) > 0 {
				return nil, huma.Error422UnprocessableEntity("code and code_verifier are required when grant_type is authorization_code", missing...)
			}
			cb := &idpCallbackInput{}
			cb.Body.Code, cb.Body.CodeVerifier, cb.Body.State = in.Body.Code, in.Body.CodeVerifier, in.Body.State
			return r.idpCallback(ctx, cb)
		}
		if in.Body.RefreshToken == "" {
			return nil, huma.Error422UnprocessableEntity("refresh_token is required when grant_type is refresh_token",
				&huma.ErrorDetail{Location: "body.refresh_token", Message: "required when grant_type is refresh_token"})
		}
		return r.refresh(ctx, in.Body.RefreshToken)
	})
	api.Post(a, "/api/v1/auth/logout", sdk.Op{ID: "auth-logout", Tags: []string{"auth"},
		Summary:     "Sign out",
		Description: "Revokes the presented access token until its expiry and every refresh token of its sign-in, on every replica.",
		Errors:      []int{http.StatusBadRequest},
	}, r.logout)
}

// mintPair signs an access and a refresh token for p without recording them.
func (r Routes) mintPair(p api.Principal) (Pair, *struct{ Body tokenResponse }, error) {
	access, ac, err := r.Issuer.IssueAccess(p)
	if err != nil {
		return Pair{}, nil, err
	}
	refresh, rc, err := r.Issuer.IssueRefresh(p)
	if err != nil {
		return Pair{}, nil, err
	}
	expires := int(ac.ExpiresAt.Time.Sub(ac.IssuedAt.Time).Seconds())
	out := &struct{ Body tokenResponse }{tokenResponse{AccessToken: access, RefreshToken: refresh, TokenType: "bearer", ExpiresIn: expires}}
	return Pair{Refresh: refresh, RefreshClaims: rc, AccessClaims: ac}, out, nil
}

func (r Routes) refresh(ctx context.Context, token string) (*struct{ Body tokenResponse }, error) {
	fail := func(actor, reason string) error {
		r.Audit.Record(ctx, audit.Entry{Action: "auth.refresh.failure", Status: audit.StatusFailure, ActorID: actor, ResourceType: "session", Details: map[string]any{"reason": reason}})
		return huma.Error401Unauthorized("invalid, expired or revoked refresh token")
	}
	claims, err := r.Issuer.Verify(token, TypeRefresh)
	if err != nil {
		return nil, fail("", "invalid or expired token")
	}
	// The user is reloaded so changed roles or a removed account apply now
	// rather than when the refresh token expires.
	u, err := r.Tenancy.User(ctx, claims.Subject)
	if errors.Is(err, tenancy.ErrNotFound) {
		return nil, fail(claims.Subject, "user no longer exists")
	}
	if err != nil {
		return nil, err
	}
	p := api.Principal{ID: u.ID, Email: u.Email, Name: u.Name, Roles: u.Roles, IsAdmin: u.IsAdmin, Kind: api.KindUser}
	pair, out, err := r.mintPair(p)
	if err != nil {
		return nil, err
	}
	err = r.Tokens.Rotate(ctx, token, claims, pair)
	switch {
	case errors.Is(err, ErrRefreshReused):
		r.Audit.Record(ctx, audit.Entry{Action: "auth.token_reuse.failure", Status: audit.StatusFailure, ActorID: u.ID, ActorEmail: u.Email, ResourceType: "session",
			Details: map[string]any{"reason": "spent refresh token presented again; every token of its sign-in revoked", "jti": claims.ID}})
		return nil, huma.Error401Unauthorized("refresh token already used; the sign-in has been revoked")
	case errors.Is(err, ErrRefreshRejected):
		return nil, fail(u.ID, "unknown or revoked token")
	case err != nil:
		return nil, err
	}
	r.Audit.Record(ctx, audit.Entry{Action: "auth.refresh.success", Status: audit.StatusSuccess, ActorID: u.ID, ActorEmail: u.Email, ResourceType: "session"})
	return out, nil
}

func (r Routes) logout(ctx context.Context, in *logoutInput) (*struct{ Body logoutResponse }, error) {
	p := api.PrincipalFrom(ctx)
	scheme, token, _ := strings.Cut(in.Authorization, " ")
	if p.Kind != api.KindUser || !strings.EqualFold(scheme, "bearer") {
		return nil, huma.Error400BadRequest("logout ends a session signed in with a bearer token; API keys are revoked through the API-key routes")
	}
	// authenticate has verified the token already; this only recovers its
	// jti and expiry, which the principal does not carry.
	claims, err := r.Issuer.Verify(token, TypeAccess)
	if err != nil {
		return nil, huma.Error401Unauthorized("invalid or expired token")
	}
	if err := r.Tokens.Logout(ctx, claims); err != nil {
		return nil, err
	}
	r.Audit.Record(ctx, audit.Entry{Action: "auth.logout.success", Status: audit.StatusSuccess, ResourceType: "session"})
	return &struct{ Body logoutResponse }{logoutResponse{Success: true, Message: "signed out; the access token and its refresh tokens are revoked"}}, nil
}
