package idp_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	contosoID  = "3f5c6a0e-8f0b-4c1e-9a57-1d2b3c4d5e6f"
	fabrikamID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	armAPI     = "https://management.azure.com"
)

func testWorld() *world.World {
	disabled := false
	return &world.World{
		Tenants: []world.Tenant{
			{Name: "Contoso", DirectoryTenantID: contosoID, Domains: []string{"contoso.example"}},
			{Name: "Fabrikam", DirectoryTenantID: fabrikamID},
		},
		Users: []world.User{
			{Email: "alice@contoso.example", Name: "Alice Admin", DirectoryTenantID: contosoID,
				Roles: []string{"Governance.Admin"}, Groups: []string{"cloud-admins"}},
			{Email: "bob@contoso.example", Name: "Bob Leaver", DirectoryTenantID: contosoID, AccountEnabled: &disabled},
			{Email: "carol@fabrikam.example", Name: "Carol Reader", DirectoryTenantID: fabrikamID,
				Roles: []string{"Governance.Reader"}},
		},
	}
}

type env struct {
	t     *testing.T
	sim   *cloudsim.Sim
	p     *idp.Provider
	clock *simtest.Clock
	// ctx carries an HTTP client that trusts the simulator, for go-oidc and
	// oauth2.
	ctx context.Context
	// browser does not follow redirects, so tests see where they go.
	browser *http.Client
}

// start runs a simulator with the provider, and a /probe route on ARM and
// Graph that authenticates its bearer token as those simulators do.
func start(t *testing.T, opts idp.Options) *env {
	t.Helper()
	clk := simtest.NewClock(time.Now())
	s, p := simtest.Start(t, testWorld(), cloudsim.Options{Now: clk.Now}, opts)
	for svc, audience := range map[cloudsim.Service]string{cloudsim.ARM: armAPI + "/", cloudsim.Graph: idp.GraphResource} {
		s.Handle(svc, "GET /probe", func(w http.ResponseWriter, r *http.Request) {
			c, err := p.VerifyAccessToken(r, audience)
			if err != nil {
				cloudsim.WriteError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", err.Error())
				return
			}
			cloudsim.WriteJSON(w, c)
		})
	}
	browser := s.HTTPClient()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &env{t: t, sim: s, p: p, clock: clk, ctx: oidc.ClientContext(t.Context(), s.HTTPClient()), browser: browser}
}

// probe calls a service's /probe route with a bearer token.
func (e *env) probe(svc cloudsim.Service, token string) (int, idp.Claims, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.sim.URLs[svc]+"/probe", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.sim.HTTPClient().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		idp.Claims
		Error struct{ Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, body.Claims, body.Error.Message
}

// discover is an OpenID Connect client of a directory tenant.
func (e *env) discover(tenantID string) *oidc.Provider {
	e.t.Helper()
	provider, err := oidc.NewProvider(e.ctx, e.p.Issuer(tenantID))
	if err != nil {
		e.t.Fatal(err)
	}
	return provider
}

func oauthConfig(provider *oidc.Provider, clientID, secret, redirect string, style oauth2.AuthStyle, scopes ...string) *oauth2.Config {
	ep := provider.Endpoint()
	ep.AuthStyle = style
	return &oauth2.Config{ClientID: clientID, ClientSecret: secret, Endpoint: ep, RedirectURL: redirect, Scopes: scopes}
}

// authorize runs the browser's part of an authorization request, which
// must redirect, and returns where to.
func (e *env) authorize(authURL string) *url.URL {
	e.t.Helper()
	resp, err := e.browser.Get(authURL)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		e.t.Fatalf("authorize: %d, want a redirect", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	return loc
}

// code gets an authorization code for a user, with PKCE.
func (e *env) code(cfg *oauth2.Config, email, verifier, nonce string) string {
	e.t.Helper()
	state := rand.Text()
	loc := e.authorize(cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("login_hint", email)))
	if loc.Query().Get("state") != state || loc.Query().Get("code") == "" {
		e.t.Fatalf("authorize redirected to %s", loc)
	}
	return loc.Query().Get("code")
}

// signIn runs the authorization code flow with PKCE for a user.
func (e *env) signIn(cfg *oauth2.Config, email string) (tok *oauth2.Token, nonce string) {
	e.t.Helper()
	verifier, nonce := oauth2.GenerateVerifier(), rand.Text()
	tok, err := cfg.Exchange(e.ctx, e.code(cfg, email, verifier, nonce), oauth2.VerifierOption(verifier))
	if err != nil {
		e.t.Fatal(err)
	}
	return tok, nonce
}

func idToken(t *testing.T, tok *oauth2.Token) string {
	t.Helper()
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no id_token in the token response")
	}
	return raw
}

// segment decodes one of a JWT's first two segments.
func segment(t *testing.T, raw string, i int) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(raw, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAuthorizationCodeFlowWithOIDC(t *testing.T) {
	const redirect = "https://steward.example/auth/callback"
	e := start(t, idp.Options{Clients: map[string]idp.Client{
		"steward-web": {Secret: "s3cret", RedirectURIs: []string{redirect}},
	}})
	provider := e.discover(contosoID)
	// Basic client authentication, as the oauth2 package sends it.
	cfg := oauthConfig(provider, "steward-web", "s3cret", redirect, oauth2.AuthStyleInHeader,
		oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess)
	verifier, nonce, state := oauth2.GenerateVerifier(), rand.Text(), rand.Text()
	loc := e.authorize(cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("login_hint", "Alice@Contoso.EXAMPLE")))
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirect || loc.Query().Get("state") != state {
		t.Fatalf("redirected to %s", loc)
	}
	tok, err := cfg.Exchange(e.ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || time.Until(tok.Expiry) < 50*time.Minute {
		t.Fatalf("token %+v", tok)
	}

	idt, err := provider.Verifier(&oidc.Config{ClientID: "steward-web"}).Verify(e.ctx, idToken(t, tok))
	if err != nil {
		t.Fatal(err)
	}
	if idt.Nonce != nonce {
		t.Fatalf("nonce %q, sent %q", idt.Nonce, nonce)
	}
	var claims struct {
		Tid, Oid, Name, Email, Ver string
		PreferredUsername          string `json:"preferred_username"`
		Roles, Groups              []string
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	alice, _ := e.p.Users().ByEmail("alice@contoso.example")
	if claims.Tid != contosoID || claims.Oid != idp.ObjectID(alice) || claims.Ver != "2.0" ||
		claims.Email != "alice@contoso.example" || claims.PreferredUsername != "alice@contoso.example" || claims.Name != "Alice Admin" ||
		!slices.Equal(claims.Roles, []string{"Governance.Admin"}) || !slices.Equal(claims.Groups, []string{"cloud-admins"}) {
		t.Fatalf("claims %+v", claims)
	}
	if idt.Subject == "" || idt.Subject == claims.Oid {
		t.Fatalf("sub %q must be pairwise, not the object id", idt.Subject)
	}

	// Without a resource scope the access token is for Microsoft Graph.
	status, ac, msg := e.probe(cloudsim.Graph, tok.AccessToken)
	if status != http.StatusOK || ac.Scope != "User.Read" || ac.AppID != "steward-web" || ac.IDType != "user" || ac.ObjectID != claims.Oid {
		t.Fatalf("Graph answered %d %q %+v", status, msg, ac)
	}
	if status, _, _ := e.probe(cloudsim.ARM, tok.AccessToken); status != http.StatusUnauthorized {
		t.Fatalf("ARM accepted a Graph token: %d", status)
	}
}

func TestIDTokenVerificationFailures(t *testing.T) {
	e := start(t, idp.Options{})
	provider := e.discover(contosoID)
	// A public client with no registration, as in development.
	cfg := oauthConfig(provider, "dev-app", "", "http://127.0.0.1:8400/callback", oauth2.AuthStyleInParams,
		oidc.ScopeOpenID, "profile")
	tok, nonce := e.signIn(cfg, "alice@contoso.example")
	raw := idToken(t, tok)
	verifier := provider.Verifier(&oidc.Config{ClientID: "dev-app", Now: e.clock.Now})
	if _, err := verifier.Verify(e.ctx, raw); err != nil {
		t.Fatal(err)
	}

	parts := strings.Split(raw, ".")
	claims := segment(t, raw, 1)
	claims["roles"] = []string{"Governance.Admin", "Global.Admin"}
	forged, _ := json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(forged)
	if _, err := verifier.Verify(e.ctx, strings.Join(parts, ".")); err == nil {
		t.Fatal("a tampered ID token verified")
	}

	if _, err := provider.Verifier(&oidc.Config{ClientID: "other-app"}).Verify(e.ctx, raw); err == nil {
		t.Fatal("an ID token for another client verified")
	}

	tok2, nonce2 := e.signIn(cfg, "alice@contoso.example")
	idt2, err := verifier.Verify(e.ctx, idToken(t, tok2))
	if err != nil {
		t.Fatal(err)
	}
	if idt2.Nonce != nonce2 || idt2.Nonce == nonce {
		t.Fatalf("nonce %q: the first sign-in's %q must not match, the second's %q must", idt2.Nonce, nonce, nonce2)
	}

	e.clock.Advance(idp.DefaultTokenLifetime + time.Second)
	var expired *oidc.TokenExpiredError
	if _, err := verifier.Verify(e.ctx, raw); !errors.As(err, &expired) {
		t.Fatalf("an expired ID token: %v", err)
	}
	if status, _, msg := e.probe(cloudsim.Graph, tok.AccessToken); status != http.StatusUnauthorized || !strings.Contains(msg, "expired") {
		t.Fatalf("an expired access token: %d %q", status, msg)
	}
}

func TestMultiTenantSignIn(t *testing.T) {
	e := start(t, idp.Options{})
	// As with Entra ID, organizations' discovery document has an issuer
	// template, which a client accepts and then checks against tid.
	template := e.p.Issuer("{tenantid}")
	ctx := oidc.InsecureIssuerURLContext(e.ctx, template)
	provider, err := oidc.NewProvider(ctx, e.p.Issuer("organizations"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauthConfig(provider, "dev-app", "", "http://localhost:8400/callback", oauth2.AuthStyleInParams,
		oidc.ScopeOpenID, "email")
	if !strings.HasSuffix(cfg.Endpoint.TokenURL, "/organizations/oauth2/v2.0/token") {
		t.Fatalf("token endpoint %s", cfg.Endpoint.TokenURL)
	}
	tok, _ := e.signIn(cfg, "carol@fabrikam.example")
	idt, err := provider.Verifier(&oidc.Config{ClientID: "dev-app", SkipIssuerCheck: true}).Verify(e.ctx, idToken(t, tok))
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Tid, Email, Name string }
	_ = idt.Claims(&claims)
	if claims.Tid != fabrikamID || idt.Issuer != e.p.Issuer(fabrikamID) || claims.Email != "carol@fabrikam.example" || claims.Name != "" {
		t.Fatalf("iss %s, claims %+v (name needs the profile scope)", idt.Issuer, claims)
	}

	// A tenant's own endpoints refuse another tenant's users.
	contoso := oauthConfig(e.discover(contosoID), "dev-app", "", "http://localhost:8400/callback", oauth2.AuthStyleInParams, oidc.ScopeOpenID)
	loc := e.authorize(contoso.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
		oauth2.SetAuthURLParam("login_hint", "carol@fabrikam.example")))
	if loc.Query().Get("error") != "access_denied" || !strings.Contains(loc.Query().Get("error_description"), "AADSTS50020") {
		t.Fatalf("redirected to %s", loc)
	}
}

func TestDiscoveryAndUsers(t *testing.T) {
	e := start(t, idp.Options{})
	get := func(path string) (int, map[string]any) {
		resp, err := e.sim.HTTPClient().Get(e.sim.URLs[cloudsim.IdP] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, doc
	}
	base := e.sim.URLs[cloudsim.IdP]
	_, doc := get("/contoso.example/v2.0/.well-known/openid-configuration")
	want := map[string]any{
		"issuer":                                base + "/" + contosoID + "/v2.0",
		"authorization_endpoint":                base + "/" + contosoID + "/oauth2/v2.0/authorize",
		"token_endpoint":                        base + "/" + contosoID + "/oauth2/v2.0/token",
		"jwks_uri":                              base + "/" + contosoID + "/discovery/v2.0/keys",
		"id_token_signing_alg_values_supported": []any{"RS256"},
		"code_challenge_methods_supported":      []any{"S256"},
		"response_types_supported":              []any{"code"},
	}
	for k, v := range want {
		if fmt.Sprint(doc[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, doc[k], v)
		}
	}
	for _, k := range []string{"subject_types_supported", "scopes_supported", "claims_supported"} {
		if _, ok := doc[k].([]any); !ok {
			t.Errorf("no %s", k)
		}
	}
	if _, doc := get("/common/v2.0/.well-known/openid-configuration"); doc["issuer"] != base+"/{tenantid}/v2.0" {
		t.Errorf("common issuer %v", doc["issuer"])
	}
	status, doc := get("/nowhere.example/v2.0/.well-known/openid-configuration")
	if codes, _ := doc["error_codes"].([]any); status != http.StatusBadRequest || doc["error"] != "invalid_tenant" ||
		len(codes) != 1 || codes[0] != float64(90002) || doc["trace_id"] == "" || doc["correlation_id"] == "" || doc["timestamp"] == "" {
		t.Errorf("unknown tenant: %d %v", status, doc)
	}

	users := e.p.Users()
	if u, ok := users.ByEmail("CAROL@Fabrikam.Example"); !ok || u.DirectoryTenantID != fabrikamID {
		t.Errorf("case-insensitive lookup: %v %+v", ok, u)
	}
	if _, ok := users.ByEmail("mallory@contoso.example"); ok {
		t.Error("found a user not in the world")
	}
	if in := users.InTenant(contosoID); len(in) != 2 || in[0].Email != "alice@contoso.example" {
		t.Errorf("contoso's users %+v", in)
	}
}
