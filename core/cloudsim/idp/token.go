package idp

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

// authCode is an issued authorization code and the request it answers.
type authCode struct {
	clientID    string
	redirectURI string
	challenge   string
	nonce       string
	scope       scope
	email       string
	// dir is the user's directory: an address may be in several.
	dir     string
	tenant  tenant
	expires time.Time
	// redeemed codes stay until they expire so a replay is told apart
	// from a made-up code.
	redeemed bool
}

// refreshGrant is what an outstanding refresh token stands for.
type refreshGrant struct {
	clientID string
	email    string
	dir      string
	scope    scope
	expires  time.Time
}

// tokenResponse is the token endpoint's answer.
type tokenResponse struct {
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
	ExpiresIn    int    `json:"expires_in"`
	ExtExpiresIn int    `json:"ext_expires_in"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
}

// oauthError is an OAuth 2.0 error with Entra ID's AADSTS number, which
// client libraries and people look up.
type oauthError struct {
	status  int
	code    string
	aadsts  int
	message string
}

func newError(status int, code string, aadsts int, format string, args ...any) *oauthError {
	return &oauthError{status: status, code: code, aadsts: aadsts, message: fmt.Sprintf(format, args...)}
}

func (e *oauthError) description() string { return fmt.Sprintf("AADSTS%d: %s", e.aadsts, e.message) }

func missingParameter(name string) *oauthError {
	return newError(http.StatusBadRequest, "invalid_request", 900144,
		"The request body must contain the following parameter: '%s'.", name)
}

func unknownTenant(seg string) *oauthError {
	return newError(http.StatusBadRequest, "invalid_tenant", 90002,
		"Tenant '%s' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.", seg)
}

func invalidGrant(aadsts int, format string, args ...any) *oauthError {
	return newError(http.StatusBadRequest, "invalid_grant", aadsts, format, args...)
}

// writeTokenError answers in Entra ID's JSON error shape. The correlation
// id is the client's client-request-id when it sent one, as there.
func (p *Provider) writeTokenError(w http.ResponseWriter, r *http.Request, e *oauthError) {
	trace := uuid.NewString()
	correlation := r.Header.Get("client-request-id")
	if uuid.Validate(correlation) != nil {
		correlation = uuid.NewString()
	}
	ts := p.sim.Now().UTC().Format("2006-01-02 15:04:05Z")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": e.code,
		"error_description": fmt.Sprintf("%s\r\nTrace ID: %s\r\nCorrelation ID: %s\r\nTimestamp: %s",
			e.description(), trace, correlation, ts),
		"error_codes":    []int{e.aadsts},
		"timestamp":      ts,
		"trace_id":       trace,
		"correlation_id": correlation,
	})
}

func (p *Provider) handleToken(w http.ResponseWriter, r *http.Request) {
	seg := r.PathValue("tenant")
	t, ok := p.resolveTenant(seg)
	if !ok {
		p.writeTokenError(w, r, unknownTenant(seg))
		return
	}
	var (
		resp tokenResponse
		oe   *oauthError
	)
	switch grant := r.PostFormValue("grant_type"); grant {
	case "authorization_code":
		resp, oe = p.codeGrant(r, t)
	case "refresh_token":
		resp, oe = p.refreshTokenGrant(r, t)
	case "client_credentials":
		resp, oe = p.clientCredentialsGrant(r, t)
	case "":
		oe = missingParameter("grant_type")
	default:
		oe = newError(http.StatusBadRequest, "unsupported_grant_type", 70003,
			"The app requested an unsupported grant type '%s'.", grant)
	}
	if oe != nil {
		p.writeTokenError(w, r, oe)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(resp)
}

// authenticateClient identifies a token request's client by a client
// assertion, HTTP Basic credentials or the client_id and client_secret
// parameters. needCredential is set for the client credentials grant,
// where the secret or assertion is the only proof of the client.
func (p *Provider) authenticateClient(r *http.Request, t tenant, needCredential bool) (string, Client, *oauthError) {
	if r.PostFormValue("client_assertion_type") != "" || r.PostFormValue("client_assertion") != "" {
		return p.authenticateAssertion(r, t)
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		// RFC 6749 form-encodes the credentials inside the Basic header.
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return "", Client{}, newError(http.StatusUnauthorized, "invalid_client", 9002313,
				"Invalid request. The client credentials in the Authorization header are not form-encoded.")
		}
	} else {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if id == "" {
		return "", Client{}, missingParameter("client_id")
	}
	noCredential := newError(http.StatusUnauthorized, "invalid_client", 7000218,
		"The request body must contain the following parameter: 'client_assertion' or 'client_secret'.")
	if len(p.opts.Clients) == 0 {
		if needCredential && secret == "" {
			return "", Client{}, noCredential
		}
		return id, Client{}, nil
	}
	c, ok := p.opts.Clients[id]
	switch {
	case !ok:
		return "", Client{}, unknownClient(id)
	case !c.confidential() && secret != "":
		return "", Client{}, publicClient()
	case secret == "" && (needCredential || c.confidential()):
		return "", Client{}, noCredential
	case subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) != 1:
		return "", Client{}, newError(http.StatusUnauthorized, "invalid_client", 7000215,
			"Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '%s'.", id)
	}
	return id, c, nil
}

// confidential reports whether a client authenticates itself, with a
// secret or a certificate, rather than being public.
func (c Client) confidential() bool { return c.Secret != "" || len(c.Certificates) > 0 }

func unknownClient(id string) *oauthError {
	return newError(http.StatusBadRequest, "unauthorized_client", 700016,
		"Application with identifier '%s' was not found in the directory.", id)
}

func publicClient() *oauthError {
	return newError(http.StatusUnauthorized, "invalid_client", 700025,
		"Client is public so neither 'client_assertion' nor 'client_secret' should be presented.")
}

func (p *Provider) codeGrant(r *http.Request, t tenant) (tokenResponse, *oauthError) {
	clientID, _, oe := p.authenticateClient(r, t, false)
	if oe != nil {
		return tokenResponse{}, oe
	}
	code := r.PostFormValue("code")
	if code == "" {
		return tokenResponse{}, missingParameter("code")
	}
	// A code is spent by its first redemption, successful or not, so a
	// stolen code cannot be tried against guessed verifiers.
	p.mu.Lock()
	ac, ok := p.codes[code]
	replay := ok && ac.redeemed
	if ok {
		ac.redeemed = true
	}
	p.mu.Unlock()
	switch {
	case !ok:
		return tokenResponse{}, invalidGrant(9002313, "Invalid request. The authorization code is malformed or was not issued.")
	case replay:
		return tokenResponse{}, invalidGrant(54005, "OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.")
	case !p.sim.Now().Before(ac.expires):
		return tokenResponse{}, invalidGrant(70008, "The provided authorization code or refresh token has expired due to inactivity. Send a new interactive authorization request for this user and resource.")
	case ac.clientID != clientID:
		return tokenResponse{}, invalidGrant(70000, "The authorization code was issued to another client.")
	case ac.tenant != t:
		return tokenResponse{}, invalidGrant(700005, "Provided Authorization Code is intended to use against other tenant, thus rejected.")
	case r.PostFormValue("redirect_uri") != ac.redirectURI:
		return tokenResponse{}, invalidGrant(70000, "The redirect URI '%s' does not match the redirect URI of the authorization request.", r.PostFormValue("redirect_uri"))
	case s256(r.PostFormValue("code_verifier")) != ac.challenge:
		return tokenResponse{}, invalidGrant(501481, "The Code_Verifier does not match the code_challenge supplied in the authorization request.")
	}
	u, oe := p.signInUser(ac.email, ac.dir, t, "invalid_grant")
	if oe != nil {
		return tokenResponse{}, oe
	}
	return p.userTokens(clientID, u, ac.scope, ac.nonce, ac.scope.offline)
}

// s256 is the PKCE S256 transformation of a code verifier.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (p *Provider) refreshTokenGrant(r *http.Request, t tenant) (tokenResponse, *oauthError) {
	clientID, _, oe := p.authenticateClient(r, t, false)
	if oe != nil {
		return tokenResponse{}, oe
	}
	rt := r.PostFormValue("refresh_token")
	if rt == "" {
		return tokenResponse{}, missingParameter("refresh_token")
	}
	// Refresh tokens rotate: each is redeemed once, and the answer carries
	// its successor.
	p.mu.Lock()
	g, ok := p.refresh[rt]
	delete(p.refresh, rt)
	p.mu.Unlock()
	switch {
	case !ok:
		return tokenResponse{}, invalidGrant(9002313, "Invalid request. The refresh token was already redeemed, or was not issued.")
	case !p.sim.Now().Before(g.expires):
		return tokenResponse{}, invalidGrant(700082, "The refresh token has expired due to inactivity.")
	case g.clientID != clientID:
		return tokenResponse{}, invalidGrant(70000, "The refresh token was issued to another client.")
	}
	u, oe := p.signInUser(g.email, g.dir, t, "invalid_grant")
	if oe != nil {
		return tokenResponse{}, oe
	}
	// A refresh token serves any resource, as Entra ID's do: the scope
	// parameter picks the new access token's.
	sc := g.scope
	if raw := r.PostFormValue("scope"); raw != "" {
		if sc, oe = parseScope(raw); oe != nil {
			return tokenResponse{}, oe
		}
	}
	return p.userTokens(clientID, u, sc, "", true)
}

func (p *Provider) clientCredentialsGrant(r *http.Request, t tenant) (tokenResponse, *oauthError) {
	clientID, c, oe := p.authenticateClient(r, t, true)
	if oe != nil {
		return tokenResponse{}, oe
	}
	if t.any {
		return tokenResponse{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. The client credentials grant needs a directory tenant, not '%s'.", t.id)
	}
	if !p.sim.Consents(t.id) {
		// A multi-tenant application has a service principal only in the
		// directories that consented to it; Entra ID answers a token
		// request in any other as for an application it does not know.
		return tokenResponse{}, newError(http.StatusBadRequest, "unauthorized_client", 700016,
			"Application with identifier '%s' was not found in the directory '%s'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.", clientID, t.id)
	}
	raw := r.PostFormValue("scope")
	sc, oe := parseScope(raw)
	if oe != nil {
		return tokenResponse{}, oe
	}
	if sc.resource == "" || !slices.Equal(sc.perms, []string{".default"}) {
		return tokenResponse{}, newError(http.StatusBadRequest, "invalid_scope", 1002012,
			"The provided value for scope %s is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).", raw)
	}
	now := p.sim.Now()
	oid := servicePrincipalID(t.id, clientID)
	at, err := p.sign(Claims{
		Issuer: p.Issuer(t.id), Subject: oid, Audience: sc.resource,
		IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(p.opts.TokenLifetime).Unix(), Version: "2.0",
		TenantID: t.id, ObjectID: oid, AppID: clientID, IDType: "app", Roles: c.Roles,
	})
	if err != nil {
		return tokenResponse{}, signingFailed(err)
	}
	secs := int(p.opts.TokenLifetime / time.Second)
	return tokenResponse{TokenType: "Bearer", Scope: sc.resource + "/.default", ExpiresIn: secs, ExtExpiresIn: secs, AccessToken: at}, nil
}

func signingFailed(err error) *oauthError {
	return newError(http.StatusInternalServerError, "server_error", 50000, "There was an error issuing a token: %v", err)
}

// signInUser finds the user a sign-in at t names by address, in directory
// dir or, when dir is empty, in whichever directory has it, refusing whom
// Entra ID refuses, with the OAuth error code of the endpoint asking.
func (p *Provider) signInUser(email, dir string, t tenant, code string) (world.User, *oauthError) {
	all := p.Users().Accounts(email, dir)
	admitted := all.AdmittedAt(t)
	switch {
	case len(all) == 0:
		return world.User{}, newError(http.StatusBadRequest, code, 50034,
			"The user account %s does not exist in the directory. To sign into this application, the account must be added to the directory.", email)
	case len(admitted) == 0:
		return world.User{}, newError(http.StatusBadRequest, code, 50020,
			"User account '%s' from identity provider does not exist in tenant '%s' and cannot access the application.", email, t.id)
	case len(admitted) > 1:
		return world.User{}, newError(http.StatusBadRequest, code, 16000,
			"More than one account has the address %s; name its directory with domain_hint.", email)
	case !enabled(admitted[0]):
		return world.User{}, newError(http.StatusBadRequest, code, 50057,
			"The user account is disabled. The account %s has been disabled by an administrator.", email)
	}
	return admitted[0], nil
}

// userTokens issues a signed-in user's tokens to a client.
func (p *Provider) userTokens(clientID string, u world.User, sc scope, nonce string, withRefresh bool) (tokenResponse, *oauthError) {
	now := p.sim.Now()
	oid := ObjectID(u)
	base := Claims{
		Issuer: p.Issuer(u.DirectoryTenantID), Subject: pairwiseSubject(clientID, oid),
		IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(p.opts.TokenLifetime).Unix(), Version: "2.0",
		TenantID: u.DirectoryTenantID, ObjectID: oid, Groups: u.Groups,
	}
	if sc.profile {
		base.Name, base.PreferredUsername = u.Name, u.Email
	}
	resource, perms := sc.delegated()
	access := base
	access.Audience, access.AppID, access.IDType, access.Scope = resource, clientID, "user", strings.Join(perms, " ")
	// A user's app roles are roles of the client's own application, so
	// only its tokens for itself carry them.
	if sameResource(resource, clientID) || sameResource(resource, "api://"+clientID) {
		access.Roles = u.Roles
	}
	at, err := p.sign(access)
	if err != nil {
		return tokenResponse{}, signingFailed(err)
	}
	secs := int(p.opts.TokenLifetime / time.Second)
	resp := tokenResponse{TokenType: "Bearer", Scope: sc.granted(), ExpiresIn: secs, ExtExpiresIn: secs, AccessToken: at}
	if sc.openID {
		id := base
		id.Audience, id.Nonce, id.Roles = clientID, nonce, u.Roles
		if sc.email {
			id.Email = u.Email
		}
		if resp.IDToken, err = p.sign(id); err != nil {
			return tokenResponse{}, signingFailed(err)
		}
	}
	if withRefresh {
		resp.RefreshToken = p.issueRefreshToken(&refreshGrant{clientID: clientID, email: u.Email, dir: u.DirectoryTenantID, scope: sc,
			expires: now.Add(p.opts.RefreshTokenLifetime)})
	}
	return resp, nil
}

// pairwiseSubject is the sub claim: unique per user and client, as on Entra
// ID, so a client that mistakes it for the user's object id finds out here.
func pairwiseSubject(clientID, oid string) string {
	sum := sha256.Sum256([]byte(clientID + "\x00" + oid))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// issueCode stores a code, dropping those that have expired.
func (p *Provider) issueCode(ac *authCode) string {
	code := rand.Text()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.sim.Now()
	maps.DeleteFunc(p.codes, func(_ string, c *authCode) bool { return !now.Before(c.expires) })
	p.codes[code] = ac
	return code
}

// issueRefreshToken stores a refresh token, dropping those that have
// expired.
func (p *Provider) issueRefreshToken(g *refreshGrant) string {
	rt := rand.Text() + rand.Text()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.sim.Now()
	maps.DeleteFunc(p.refresh, func(_ string, g *refreshGrant) bool { return !now.Before(g.expires) })
	p.refresh[rt] = g
	return rt
}
