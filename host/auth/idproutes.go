package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"golang.org/x/oauth2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/oidc"
	"github.com/stewardhq/steward/host/redisconn"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk"
)

// idpStateTTL is how long a started sign-in can be finished: as long as the
// identity provider's codes live.
const idpStateTTL = 10 * time.Minute

// A started sign-in is kept in the cache twice: under its state and under
// its PKCE challenge, so that a callback without the state finds it by the
// verifier it presents. Whichever finishes it drops both.
const (
	idpStatePrefix     = "idp-state:"
	idpChallengePrefix = "idp-challenge:"
)

type idpLoginInput struct {
	LoginHint   string `query:"login_hint" maxLength:"320" doc:"E-mail address of the user, passed to the identity provider so it can skip its account picker"`
	RedirectURI string `query:"redirect_uri" maxLength:"2048" doc:"Where the identity provider returns the browser: the configured redirect URL (the default), or in development any loopback URL"`
}

type idpLoginResponse struct {
	AuthorizationURL    string `json:"authorization_url" doc:"Send the browser here"`
	State               string `json:"state" doc:"Comes back on the redirect; single use, valid for 10 minutes"`
	CodeVerifier        string `json:"code_verifier" doc:"PKCE verifier: keep it and send it with the code to the callback"`
	CodeChallenge       string `json:"code_challenge" doc:"S256 transformation of code_verifier, already in authorization_url"`
	CodeChallengeMethod string `json:"code_challenge_method" enum:"S256"`
}

type idpCallbackInput struct {
	Body struct {
		Code         string `json:"code" minLength:"1" maxLength:"8192" doc:"The code from the identity provider's redirect"`
		CodeVerifier string `json:"code_verifier" minLength:"43" maxLength:"128" doc:"The code_verifier the login route gave (RFC 7636: 43 to 128 characters); it binds the request to its sign-in"`
		State        string `json:"state,omitempty" required:"false" minLength:"1" maxLength:"512" doc:"Optional: the state from the redirect; when given it must be the sign-in's"`
	}
}

// pendingSignIn is what the host remembers of a started sign-in, under
// its state and its challenge, in the shared cache so any replica can
// finish it. The verifier itself stays with the client; only its challenge
// is kept, so the callback can refuse a wrong verifier before spending the
// code.
type pendingSignIn struct {
	Nonce         string `json:"nonce"`
	CodeChallenge string `json:"code_challenge"`
	RedirectURI   string `json:"redirect_uri"`
	// StateKey is the state's digest (oidc.StateKey), the key of the
	// sign-in's other entry.
	StateKey string `json:"state_key"`
}

func (r Routes) registerIdP(a huma.API) {
	api.Get(a, "/api/v1/auth/idp/login", sdk.Op{ID: "auth-idp-login", Tags: []string{"auth"}, Auth: sdk.AuthNone,
		Summary: "Start a sign-in with the identity provider",
		Description: "Answers the identity provider's authorization URL (authorization code flow with PKCE S256 and a nonce) with its state and PKCE parameters. " +
			"After the provider redirects back with code and state, POST them with code_verifier to /api/v1/auth/idp/callback within 10 minutes.",
		Errors: []int{http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusServiceUnavailable},
	}, r.idpLogin)
	api.Post(a, "/api/v1/auth/idp/callback", sdk.Op{ID: "auth-idp-callback", Tags: []string{"auth"}, Auth: sdk.AuthNone,
		Summary: "Finish a sign-in with the identity provider",
		Description: "Redeems the authorization code with the PKCE verifier, verifies the ID token (signature, issuer, audience, expiry, nonce) and answers Steward's own tokens. " +
			"The user is the ID token's directory and object id (tid, oid), never its e-mail address. " +
			"Its roles and groups come from the ID token: the app role " + AdminRole + " makes an admin only in a token of a managing directory (STEWARD_OIDC_ADMIN_TENANTS), and groups give access to the tenants that list them. " +
			"state is optional: code_verifier already binds the request to the sign-in the login route started (RFC 7636), whose S256 challenge the host keeps it under; " +
			"a state given must be that sign-in's. A sign-in works once, with or without its state. " +
			"Any refusal (unknown or used state or verifier, a verifier of another sign-in, code or ID token rejected) is a 401; " +
			"with STEWARD_OIDC_REGISTERED_ONLY, a user of a directory that is neither managing nor a registered tenant's is refused with 403.",
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusServiceUnavailable},
	}, r.idpCallback)
}

var errIdPNotConfigured = huma.Error503ServiceUnavailable("sign-in with an identity provider is not configured (STEWARD_OIDC_ISSUER)")

func (r Routes) idpLogin(ctx context.Context, in *idpLoginInput) (*struct{ Body idpLoginResponse }, error) {
	rp := r.OIDC
	if rp == nil {
		return nil, errIdPNotConfigured
	}
	redirect, err := rp.RedirectURI(in.RedirectURI)
	if err != nil {
		return nil, huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "query.redirect_uri", Message: err.Error()})
	}
	req, err := rp.Begin(ctx, redirect, in.LoginHint)
	if err != nil {
		r.Logger.Warn("identity provider sign-in could not start", "error", err)
		return nil, huma.Error502BadGateway("the identity provider is unavailable")
	}
	stateKey := oidc.StateKey(req.State)
	pending, err := json.Marshal(pendingSignIn{Nonce: req.Nonce, CodeChallenge: req.CodeChallenge, RedirectURI: req.RedirectURI, StateKey: stateKey})
	if err != nil {
		return nil, err
	}
	for _, key := range []string{idpStatePrefix + stateKey, idpChallengePrefix + req.CodeChallenge} {
		if err := r.Cache.Set(ctx, key, pending, idpStateTTL); err != nil {
			r.logUnlessOutage("sign-in state not stored", err)
			return nil, huma.Error503ServiceUnavailable("sign-in is unavailable: its state cannot be stored")
		}
	}
	return &struct{ Body idpLoginResponse }{idpLoginResponse{
		AuthorizationURL: req.AuthorizationURL, State: req.State, CodeVerifier: req.CodeVerifier,
		CodeChallenge: req.CodeChallenge, CodeChallengeMethod: "S256",
	}}, nil
}

func (r Routes) idpCallback(ctx context.Context, in *idpCallbackInput) (*struct{ Body tokenResponse }, error) {
	rp := r.OIDC
	if rp == nil {
		return nil, errIdPNotConfigured
	}
	pending, err := r.takeSignIn(ctx, in.Body.State, in.Body.CodeVerifier)
	if err != nil {
		return nil, err
	}
	if pending == nil {
		reason := "unknown, expired or already used state"
		if in.Body.State == "" {
			reason = "no sign-in started for the code verifier, or one expired or already used"
		}
		return nil, r.idpRefuse(ctx, "", reason, "the sign-in is unknown, expired or already used; start again")
	}
	if !oidc.VerifierMatches(in.Body.CodeVerifier, pending.CodeChallenge) {
		return nil, r.idpRefuse(ctx, "", "code verifier does not match the sign-in", "the code verifier does not belong to this sign-in; start again")
	}
	id, err := rp.Finish(ctx, in.Body.Code, in.Body.CodeVerifier, pending.RedirectURI, pending.Nonce)
	switch {
	case errors.Is(err, oidc.ErrUnavailable):
		r.Logger.Warn("identity provider sign-in could not finish", "error", err)
		r.Audit.Record(ctx, audit.Entry{Action: "auth.idp_login.failure", Status: audit.StatusFailure, ResourceType: "session",
			Details: map[string]any{"reason": "identity provider unavailable", "error": err.Error()}})
		return nil, huma.Error502BadGateway("the identity provider is unavailable; start again")
	case errors.Is(err, oidc.ErrCodeRejected):
		return nil, r.idpRefuse(ctx, err.Error(), "authorization code rejected", "the identity provider rejected the authorization code; start again")
	case err != nil:
		return nil, r.idpRefuse(ctx, err.Error(), "ID token rejected", "the identity provider's ID token is not valid")
	}

	if r.Config.OIDC.RegisteredOnly {
		ok, err := r.directoryMaySignIn(ctx, id.Directory())
		if err != nil {
			return nil, err
		}
		if !ok {
			r.Audit.Record(ctx, audit.Entry{Action: "auth.idp_login.failure", Status: audit.StatusFailure, ActorEmail: id.Email, ResourceType: "session",
				Details: map[string]any{"reason": "directory not registered", "directory_tenant_id": id.Directory()}})
			return nil, huma.Error403Forbidden("users of your directory may not sign in: it manages no tenant registered with Steward")
		}
	}

	name := id.Name
	if name == "" {
		name = id.Email
	}
	// Every directory can grant its own users the admin app role of a
	// multi-tenant application, so the role counts only from a managing one.
	isAdmin := id.HasRoleIn(AdminRole, r.Config.OIDC.AdminTenants)
	u := &tenancy.User{DirectoryTenantID: id.Directory(), Subject: id.UserID(), Email: id.Email, Name: name, IsAdmin: isAdmin,
		Roles: id.Roles, Groups: id.Groups}
	if err := r.Tenancy.UpsertUser(ctx, u); err != nil {
		return nil, err
	}
	p := api.Principal{ID: u.ID, Email: u.Email, Name: u.Name, Roles: u.Roles, IsAdmin: isAdmin, Kind: api.KindUser}
	out, err := r.issueTokens(ctx, p)
	if err != nil {
		return nil, err
	}
	r.Audit.Record(ctx, audit.Entry{Action: "auth.idp_login.success", Status: audit.StatusSuccess, ActorID: u.ID, ActorEmail: u.Email,
		ResourceType: "session", Details: map[string]any{"issuer": id.Issuer, "directory_tenant_id": id.Directory(), "is_admin": isAdmin}})
	return out, nil
}

// directoryMaySignIn reports whether users of a directory may sign in
// under STEWARD_OIDC_REGISTERED_ONLY: a managing directory, or that of an
// active registered tenant.
func (r Routes) directoryMaySignIn(ctx context.Context, dir string) (bool, error) {
	if slices.ContainsFunc(r.Config.OIDC.AdminTenants, func(d string) bool { return strings.EqualFold(d, dir) }) {
		return true, nil
	}
	return r.Tenancy.ManagesDirectory(ctx, dir)
}

// takeSignIn looks a started sign-in up by its state or, without one, by
// the challenge of the verifier presented, and deletes both its entries,
// so a sign-in works once; nil means there is none. The cache has no
// atomic get-and-delete, so two callbacks racing with one sign-in could
// both get it; the identity provider then redeems the code for one of
// them only, as a code is single use too.
func (r Routes) takeSignIn(ctx context.Context, state, verifier string) (*pendingSignIn, error) {
	key := idpChallengePrefix + oauth2.S256ChallengeFromVerifier(verifier)
	if state != "" {
		key = idpStatePrefix + oidc.StateKey(state)
	}
	unavailable := func(err error) error {
		r.logUnlessOutage("sign-in state unavailable", err)
		return huma.Error503ServiceUnavailable("sign-in is unavailable: its state cannot be read")
	}
	b, ok, err := r.Cache.Get(ctx, key)
	if err == nil && ok {
		err = r.Cache.Delete(ctx, key)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	if !ok {
		return nil, nil
	}
	var p pendingSignIn
	if err := json.Unmarshal(b, &p); err != nil {
		// Only this file writes the key; an entry that does not decode
		// is treated as absent rather than failing the request.
		r.Logger.Warn("sign-in state unreadable", "error", err)
		return nil, nil
	}
	other := idpChallengePrefix + p.CodeChallenge
	if state == "" {
		other = idpStatePrefix + p.StateKey
	}
	if err := r.Cache.Delete(ctx, other); err != nil {
		return nil, unavailable(err)
	}
	return &p, nil
}

// idpRefuse audits a refused sign-in and returns its 401. detail is the
// underlying error for the audit entry; the caller only learns msg.
func (r Routes) idpRefuse(ctx context.Context, detail, reason, msg string) error {
	details := map[string]any{"reason": reason}
	if detail != "" {
		details["error"] = detail
	}
	r.Audit.Record(ctx, audit.Entry{Action: "auth.idp_login.failure", Status: audit.StatusFailure, ResourceType: "session", Details: details})
	return huma.Error401Unauthorized(msg)
}

// logUnlessOutage logs err unless Redis's being unreachable explains it:
// the connection logs an outage once, not once per request it fails.
func (r Routes) logUnlessOutage(msg string, err error) {
	if !errors.Is(err, redisconn.ErrUnavailable) {
		r.Logger.Error(msg, "error", err)
	}
}
