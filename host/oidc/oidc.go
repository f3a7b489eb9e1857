// Package oidc is Steward's OpenID Connect relying party: it sends a user to
// the identity provider with PKCE (S256) and a nonce, redeems the
// authorization code, and verifies the ID token it gets back. It keeps no
// state between the two steps; the caller remembers the state, nonce and
// redirect URI of a sign-in (the host keeps them in its shared cache, so any
// replica can finish a sign-in another one started).
package oidc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// tenantPlaceholder is how a multi-tenant issuer (Entra ID's organizations
// and common endpoints) writes the signing-in user's tenant in its
// discovery document.
const tenantPlaceholder = "{tenantid}"

// Errors of Finish. Each wraps the underlying cause.
var (
	// ErrCodeRejected: the identity provider refused the code (unknown,
	// spent, expired, issued to another client or redirect URI, or the
	// verifier does not match its challenge).
	ErrCodeRejected = errors.New("the identity provider rejected the authorization code")
	// ErrInvalidIDToken: the ID token is missing, or fails signature,
	// issuer, audience, expiry or nonce checks, or names no user.
	ErrInvalidIDToken = errors.New("the ID token is not valid")
	// ErrUnavailable: the identity provider could not be reached or
	// answered something that is not OpenID Connect.
	ErrUnavailable = errors.New("the identity provider is unavailable")
	// ErrRedirectURI: a sign-in asked for a redirect URI it may not use.
	ErrRedirectURI = errors.New("redirect URI not allowed")
)

// Config is the relying party's registration with the identity provider.
type Config struct {
	// Issuer is the provider's issuer URL, where discovery starts; for
	// Entra ID's multi-tenant sign-in, https://login.microsoftonline.com/organizations/v2.0.
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is where the provider sends the browser back to.
	RedirectURL string
	// AllowLoopbackRedirect lets a sign-in name any http(s) loopback
	// redirect URI instead of RedirectURL: development tools run on
	// ports of their own.
	AllowLoopbackRedirect bool
	// HTTPClient talks to the provider; nil is http.DefaultClient.
	HTTPClient *http.Client
}

// RelyingParty signs users in with one identity provider. It is safe for
// concurrent use.
type RelyingParty struct {
	cfg Config

	// Discovery happens on first use, not at start-up, so the host starts
	// while the provider is unreachable and recovers once it answers.
	mu       sync.Mutex
	provider *oidc.Provider
	// issuer is the discovered issuer: Config.Issuer, or a template with
	// tenantPlaceholder for a multi-tenant endpoint.
	issuer string
}

// New checks the configuration; it does not contact the provider.
func New(cfg Config) (*RelyingParty, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("OIDC issuer %q is not an absolute http(s) URL", cfg.Issuer)
	}
	if cfg.ClientID == "" {
		return nil, errors.New("OIDC client id is required")
	}
	if _, err := checkRedirect(cfg.RedirectURL); err != nil {
		return nil, fmt.Errorf("OIDC redirect URL: %w", err)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	cfg.Issuer = strings.TrimSuffix(cfg.Issuer, "/")
	return &RelyingParty{cfg: cfg}, nil
}

// Issuer is the configured issuer URL.
func (rp *RelyingParty) Issuer() string { return rp.cfg.Issuer }

// RedirectURI resolves the redirect URI of a sign-in: the configured one
// when none is asked for; otherwise the one asked for, if it is the
// configured one or, where allowed, a loopback URI.
func (rp *RelyingParty) RedirectURI(requested string) (string, error) {
	if requested == "" || requested == rp.cfg.RedirectURL {
		return rp.cfg.RedirectURL, nil
	}
	u, err := checkRedirect(requested)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrRedirectURI, err)
	}
	if !rp.cfg.AllowLoopbackRedirect || !isLoopback(u.Hostname()) {
		return "", fmt.Errorf("%w: %s is not the configured redirect URL", ErrRedirectURI, requested)
	}
	return requested, nil
}

func checkRedirect(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL without a fragment", raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// Request is a started sign-in: what the browser needs and what the caller
// must remember until Finish.
type Request struct {
	AuthorizationURL string
	State            string
	Nonce            string
	CodeVerifier     string
	// CodeChallenge is the S256 transformation of CodeVerifier.
	CodeChallenge string
	RedirectURI   string
}

// Begin starts a sign-in: fresh state, nonce and PKCE verifier, and the
// authorization URL that carries them. redirectURI must come from
// RedirectURI; loginHint, when set, names the user.
func (rp *RelyingParty) Begin(ctx context.Context, redirectURI, loginHint string) (Request, error) {
	p, err := rp.discover(ctx)
	if err != nil {
		return Request{}, err
	}
	// rand.Text is 128 bits from the system's generator: unguessable.
	state, nonce := rand.Text(), rand.Text()
	verifier := oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)}
	if loginHint != "" {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", loginHint))
	}
	return Request{
		AuthorizationURL: rp.oauth2Config(p, redirectURI).AuthCodeURL(state, opts...),
		State:            state, Nonce: nonce, CodeVerifier: verifier,
		CodeChallenge: oauth2.S256ChallengeFromVerifier(verifier), RedirectURI: redirectURI,
	}, nil
}

// VerifierMatches reports whether verifier is the one challenge was made
// from, in constant time.
func VerifierMatches(verifier, challenge string) bool {
	return subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(verifier)), []byte(challenge)) == 1
}

// Identity is the user an ID token names.
type Identity struct {
	Issuer  string
	Subject string
	// TenantID is the user's directory tenant (Entra ID's tid), if given.
	TenantID string
	// ObjectID is the user's immutable id in its directory (Entra ID's
	// oid), if given. Entra ID's sub is pairwise: another id per client.
	ObjectID string
	// Email is the email claim, or preferred_username without one (Entra
	// ID sends email only when the user has a mailbox address).
	Email  string
	Name   string
	Roles  []string
	Groups []string
}

// Directory is the directory the user belongs to: its tid, or for a
// provider without tenants its issuer, which is never empty.
func (id Identity) Directory() string {
	if id.TenantID != "" {
		return id.TenantID
	}
	return id.Issuer
}

// UserID is the user's immutable id within Directory: its oid, or sub for a
// provider that sends none. With Directory it names the user for good; an
// e-mail address does not (another directory may have the same one, and it
// can change).
func (id Identity) UserID() string {
	if id.ObjectID != "" {
		return id.ObjectID
	}
	return id.Subject
}

// HasRoleIn reports whether the token grants role and was issued for one of
// directories (compared without regard to case, as directory ids are
// GUIDs). An app role is granted by the user's own directory, so any
// directory can give its users any role of a multi-tenant application:
// only the directories that manage Steward may confer its privileges.
func (id Identity) HasRoleIn(role string, directories []string) bool {
	if !slices.Contains(id.Roles, role) {
		return false
	}
	return slices.ContainsFunc(directories, func(d string) bool { return d != "" && strings.EqualFold(d, id.Directory()) })
}

// Finish redeems the code of a sign-in begun with the given redirect URI and
// nonce, verifies the ID token and returns whom it names.
func (rp *RelyingParty) Finish(ctx context.Context, code, verifier, redirectURI, nonce string) (Identity, error) {
	p, err := rp.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	tok, err := rp.oauth2Config(p, redirectURI).Exchange(rp.clientContext(ctx), code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return Identity{}, fmt.Errorf("%w: %s", ErrCodeRejected, describe(re))
		}
		return Identity{}, fmt.Errorf("%w: token request: %v", ErrUnavailable, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("%w: the token response has no id_token", ErrInvalidIDToken)
	}
	return rp.verify(ctx, p, raw, nonce)
}

func describe(re *oauth2.RetrieveError) string {
	if re.ErrorCode != "" {
		return re.ErrorCode
	}
	if re.Response != nil {
		return re.Response.Status
	}
	return "error response"
}

type idClaims struct {
	TenantID          string   `json:"tid"`
	ObjectID          string   `json:"oid"`
	Email             string   `json:"email"`
	PreferredUsername string   `json:"preferred_username"`
	Name              string   `json:"name"`
	Roles             []string `json:"roles"`
	Groups            []string `json:"groups"`
}

// verify checks an ID token: signature against the provider's published
// keys, audience, expiry, issuer and nonce.
//
// A multi-tenant endpoint's discovery document cannot name the issuer: each
// token is issued by the user's own tenant, and the document shows the
// issuer with a {tenantid} placeholder. As Microsoft prescribes for
// multi-tenant applications, the library's exact issuer comparison is
// skipped for those and replaced by this one: the token's iss must be the
// template with the token's own tid in it. The signature already proves the
// token comes from the provider (one key set signs for every tenant); the
// issuer check then binds it to the tenant it claims, so a token cannot
// present one tenant in tid while being issued by another.
func (rp *RelyingParty) verify(ctx context.Context, p *oidc.Provider, raw, nonce string) (Identity, error) {
	multiTenant := strings.Contains(rp.issuer, tenantPlaceholder)
	v := p.Verifier(&oidc.Config{ClientID: rp.cfg.ClientID, SkipIssuerCheck: multiTenant})
	t, err := v.Verify(rp.clientContext(ctx), raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidIDToken, err)
	}
	var c idClaims
	if err := t.Claims(&c); err != nil {
		return Identity{}, fmt.Errorf("%w: claims: %v", ErrInvalidIDToken, err)
	}
	if multiTenant {
		if c.TenantID == "" || strings.ContainsAny(c.TenantID, "/?#{}") {
			return Identity{}, fmt.Errorf("%w: the token of a multi-tenant issuer has no valid tid", ErrInvalidIDToken)
		}
		if want := strings.ReplaceAll(rp.issuer, tenantPlaceholder, c.TenantID); t.Issuer != want {
			return Identity{}, fmt.Errorf("%w: issuer %q is not %q", ErrInvalidIDToken, t.Issuer, want)
		}
	}
	if subtle.ConstantTimeCompare([]byte(t.Nonce), []byte(nonce)) != 1 {
		return Identity{}, fmt.Errorf("%w: nonce does not match the sign-in", ErrInvalidIDToken)
	}
	email := c.Email
	if email == "" {
		email = c.PreferredUsername
	}
	if email == "" {
		return Identity{}, fmt.Errorf("%w: neither email nor preferred_username is present", ErrInvalidIDToken)
	}
	if t.Subject == "" {
		return Identity{}, fmt.Errorf("%w: the token has no sub", ErrInvalidIDToken)
	}
	return Identity{Issuer: t.Issuer, Subject: t.Subject, TenantID: c.TenantID, ObjectID: c.ObjectID, Email: email, Name: c.Name,
		Roles: c.Roles, Groups: c.Groups}, nil
}

// discover reads the provider's discovery document once it answers.
func (rp *RelyingParty) discover(ctx context.Context) (*oidc.Provider, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.provider != nil {
		return rp.provider, nil
	}
	pc, err := rp.fetchDiscovery(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery: %v", ErrUnavailable, err)
	}
	if !issuerMatches(rp.cfg.Issuer, pc.IssuerURL) {
		return nil, fmt.Errorf("%w: discovery names issuer %q, not %q", ErrUnavailable, pc.IssuerURL, rp.cfg.Issuer)
	}
	if pc.AuthURL == "" || pc.TokenURL == "" || pc.JWKSURL == "" {
		return nil, fmt.Errorf("%w: discovery document lacks an authorization, token or jwks endpoint", ErrUnavailable)
	}
	rp.provider, rp.issuer = pc.NewProvider(rp.clientContext(ctx)), pc.IssuerURL
	return rp.provider, nil
}

// fetchDiscovery reads the discovery document itself rather than through
// oidc.NewProvider, which insists that the document's issuer equals the
// URL asked, and so refuses multi-tenant endpoints.
func (rp *RelyingParty) fetchDiscovery(ctx context.Context) (*oidc.ProviderConfig, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rp.cfg.Issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	resp, err := rp.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", req.URL, resp.Status)
	}
	var pc oidc.ProviderConfig
	if err := json.Unmarshal(body, &pc); err != nil {
		return nil, fmt.Errorf("discovery document: %w", err)
	}
	return &pc, nil
}

// issuerMatches accepts a discovered issuer equal to the configured one, or
// a multi-tenant template that becomes the configured issuer when its
// placeholder is read as the configured tenant segment (organizations,
// common): https://host/{tenantid}/v2.0 for https://host/organizations/v2.0.
func issuerMatches(configured, discovered string) bool {
	if discovered == configured {
		return true
	}
	before, after, ok := strings.Cut(discovered, tenantPlaceholder)
	if !ok || strings.Contains(after, tenantPlaceholder) {
		return false
	}
	seg, ok := strings.CutPrefix(configured, before)
	if !ok {
		return false
	}
	seg, ok = strings.CutSuffix(seg, after)
	return ok && seg != "" && !strings.Contains(seg, "/")
}

func (rp *RelyingParty) oauth2Config(p *oidc.Provider, redirectURI string) *oauth2.Config {
	ep := p.Endpoint()
	// Confidential clients send their secret in the form body, which Entra
	// ID and every provider here accept; auto-detection would spend a
	// single-use code on a first attempt that fails.
	ep.AuthStyle = oauth2.AuthStyleInParams
	return &oauth2.Config{ClientID: rp.cfg.ClientID, ClientSecret: rp.cfg.ClientSecret, Endpoint: ep,
		RedirectURL: redirectURI, Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
}

// clientContext carries the HTTP client to both libraries, which take it
// from the context.
func (rp *RelyingParty) clientContext(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, rp.cfg.HTTPClient)
	return oidc.ClientContext(ctx, rp.cfg.HTTPClient)
}

// StateKey is the storage key of a sign-in's state: a digest, so that a
// state presented by a caller, whatever its characters, is never used as a
// key as is.
func StateKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
