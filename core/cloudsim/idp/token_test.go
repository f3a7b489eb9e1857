package idp_test

import (
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
	"golang.org/x/oauth2/clientcredentials"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
)

const alice = "alice@contoso.example"

// postToken posts a token request and decodes the answer.
func (e *env) postToken(tenant string, form url.Values) (int, map[string]any) {
	e.t.Helper()
	return simtest.PostToken(e.t, e.sim, tenant, form)
}

// isError reports whether a token endpoint answer is an error in Entra
// ID's shape.
func isError(status int, body map[string]any, wantStatus int, code string, aadsts int) bool {
	codes, _ := body["error_codes"].([]any)
	desc, _ := body["error_description"].(string)
	return status == wantStatus && body["error"] == code && len(codes) == 1 && codes[0] == float64(aadsts) &&
		strings.HasPrefix(desc, fmt.Sprintf("AADSTS%d: ", aadsts)) &&
		body["trace_id"] != nil && body["correlation_id"] != nil && body["timestamp"] != nil
}

func TestPKCEAndCodes(t *testing.T) {
	e := start(t, idp.Options{})
	cfg := oauthConfig(e.discover(contosoID), "dev-app", "", "http://127.0.0.1:8400/callback", oauth2.AuthStyleInParams,
		oidc.ScopeOpenID)
	exchangeFails := func(name string, cfg *oauth2.Config, code, aadsts string, opts ...oauth2.AuthCodeOption) {
		t.Helper()
		_, err := cfg.Exchange(e.ctx, code, opts...)
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || !strings.HasPrefix(re.ErrorDescription, aadsts+":") {
			t.Errorf("%s: %v, want invalid_grant %s", name, err, aadsts)
		}
	}
	v := oauth2.GenerateVerifier()
	exchangeFails("wrong verifier", cfg, e.code(cfg, alice, v, ""), "AADSTS501481", oauth2.VerifierOption(oauth2.GenerateVerifier()))
	exchangeFails("no verifier", cfg, e.code(cfg, alice, v, ""), "AADSTS501481")

	code := e.code(cfg, alice, v, "")
	if _, err := cfg.Exchange(e.ctx, code, oauth2.VerifierOption(v)); err != nil {
		t.Fatal(err)
	}
	exchangeFails("code used twice", cfg, code, "AADSTS54005", oauth2.VerifierOption(v))

	elsewhere := *cfg
	elsewhere.RedirectURL = "http://127.0.0.1:8400/elsewhere"
	exchangeFails("redirect_uri mismatch", &elsewhere, e.code(cfg, alice, v, ""), "AADSTS70000", oauth2.VerifierOption(v))

	otherApp := *cfg
	otherApp.ClientID = "other-app"
	exchangeFails("another client", &otherApp, e.code(cfg, alice, v, ""), "AADSTS70000", oauth2.VerifierOption(v))

	code = e.code(cfg, alice, v, "")
	e.clock.Advance(idp.DefaultCodeLifetime)
	exchangeFails("expired code", cfg, code, "AADSTS70008", oauth2.VerifierOption(v))
	exchangeFails("made-up code", cfg, "not-a-code", "AADSTS9002313", oauth2.VerifierOption(v))

	organizations := *cfg
	organizations.Endpoint.TokenURL = strings.Replace(cfg.Endpoint.TokenURL, contosoID, "organizations", 1)
	exchangeFails("another tenant's endpoint", &organizations, e.code(cfg, alice, v, ""), "AADSTS700005", oauth2.VerifierOption(v))

	// Authorization requests without S256 PKCE go back with an error.
	for name, opts := range map[string][]oauth2.AuthCodeOption{
		"plain":        {oauth2.SetAuthURLParam("code_challenge", v), oauth2.SetAuthURLParam("code_challenge_method", "plain")},
		"no method":    {oauth2.SetAuthURLParam("code_challenge", oauth2.S256ChallengeFromVerifier(v))},
		"no challenge": nil,
		"not a hash":   {oauth2.SetAuthURLParam("code_challenge", "abc"), oauth2.SetAuthURLParam("code_challenge_method", "S256")},
	} {
		loc := e.authorize(cfg.AuthCodeURL("st", append(opts, oauth2.SetAuthURLParam("login_hint", alice))...))
		q := loc.Query()
		if q.Get("error") != "invalid_request" || q.Get("state") != "st" || q.Get("code") != "" ||
			!strings.Contains(q.Get("error_description"), "S256") && !strings.Contains(q.Get("error_description"), "SHA-256") {
			t.Errorf("%s: redirected to %s", name, loc)
		}
	}
}

func TestRefreshTokensRotate(t *testing.T) {
	e := start(t, idp.Options{})
	cfg := oauthConfig(e.discover(contosoID), "dev-app", "", "http://127.0.0.1:8400/callback", oauth2.AuthStyleInParams,
		oidc.ScopeOpenID, "profile", oidc.ScopeOfflineAccess)
	tok, _ := e.signIn(cfg, alice)

	// The oauth2 package refreshes a token past its expiry.
	stale := *tok
	stale.Expiry = time.Now().Add(-time.Minute)
	fresh, err := cfg.TokenSource(e.ctx, &stale).Token()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.RefreshToken == "" || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh token not rotated: %q", fresh.RefreshToken)
	}
	if claims := segment(t, idToken(t, fresh), 1); claims["preferred_username"] != alice || claims["nonce"] != nil {
		t.Fatalf("refreshed ID token %v", claims)
	}

	status, body := e.postToken(contosoID, url.Values{"grant_type": {"refresh_token"}, "client_id": {"dev-app"},
		"refresh_token": {tok.RefreshToken}})
	if !isError(status, body, http.StatusBadRequest, "invalid_grant", 9002313) {
		t.Fatalf("a redeemed refresh token: %d %v", status, body)
	}

	// A refresh token serves another resource, as Entra ID's do.
	status, body = e.postToken(contosoID, url.Values{"grant_type": {"refresh_token"}, "client_id": {"dev-app"},
		"refresh_token": {fresh.RefreshToken}, "scope": {armAPI + "/user_impersonation offline_access"}})
	if status != http.StatusOK || body["scope"] != armAPI+"/user_impersonation offline_access" || body["refresh_token"] == nil || body["id_token"] != nil {
		t.Fatalf("refresh for ARM: %d %v", status, body)
	}
	if status, c, msg := e.probe(cloudsim.ARM, body["access_token"].(string)); status != http.StatusOK ||
		c.Scope != "user_impersonation" || c.TenantID != contosoID || c.IDType != "user" {
		t.Fatalf("ARM answered %d %q %+v", status, msg, c)
	}

	status, body = e.postToken(contosoID, url.Values{"grant_type": {"refresh_token"}, "client_id": {"other-app"},
		"refresh_token": {body["refresh_token"].(string)}})
	if !isError(status, body, http.StatusBadRequest, "invalid_grant", 70000) {
		t.Fatalf("another client's refresh token: %d %v", status, body)
	}

	// Refresh tokens take offline_access, as on Entra ID.
	noOffline := *cfg
	noOffline.Scopes = []string{oidc.ScopeOpenID}
	if tok, _ := e.signIn(&noOffline, alice); tok.RefreshToken != "" {
		t.Fatal("a refresh token without offline_access")
	}
}

func TestClientCredentials(t *testing.T) {
	e := start(t, idp.Options{TokenLifetime: 5 * time.Minute, Clients: map[string]idp.Client{
		"steward-worker": {Secret: "w0rker", Roles: []string{"Governance.Collector"}},
		"steward-cli":    {RedirectURIs: []string{"http://localhost:8400/callback"}},
	}})
	tokenURL := e.sim.URLs[cloudsim.IdP] + "/" + contosoID + "/oauth2/v2.0/token"
	cc := clientcredentials.Config{ClientID: "steward-worker", ClientSecret: "w0rker", TokenURL: tokenURL,
		Scopes: []string{armAPI + "/.default"}}
	tok, err := cc.Token(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken != "" || time.Until(tok.Expiry) > 5*time.Minute {
		t.Fatalf("token %+v", tok)
	}
	if aud := segment(t, tok.AccessToken, 1)["aud"]; aud != armAPI {
		t.Fatalf("aud %v", aud)
	}
	status, c, msg := e.probe(cloudsim.ARM, tok.AccessToken)
	if status != http.StatusOK || c.TenantID != contosoID || c.AppID != "steward-worker" || c.IDType != "app" ||
		c.ObjectID == "" || c.Subject != c.ObjectID || c.Scope != "" || !slices.Equal(c.Roles, []string{"Governance.Collector"}) {
		t.Fatalf("ARM answered %d %q %+v", status, msg, c)
	}
	if status, _, msg := e.probe(cloudsim.Graph, tok.AccessToken); status != http.StatusUnauthorized || !strings.Contains(msg, "audience") {
		t.Fatalf("Graph answered an ARM token with %d %q", status, msg)
	}

	// MSAL appends OpenID Connect scopes, and ARM's resource often keeps
	// its trailing slash.
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"steward-worker"}, "client_secret": {"w0rker"},
		"scope": {armAPI + "//.default openid offline_access profile"}}
	status, body := e.postToken(contosoID, form)
	if status != http.StatusOK || body["token_type"] != "Bearer" || body["expires_in"] != float64(300) ||
		body["ext_expires_in"] != float64(300) || body["refresh_token"] != nil || body["id_token"] != nil {
		t.Fatalf("MSAL-shaped request: %d %v", status, body)
	}

	with := func(k, v string) url.Values {
		f := url.Values{}
		for key, vs := range form {
			f[key] = vs
		}
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	for name, tc := range map[string]struct {
		tenant string
		form   url.Values
		status int
		code   string
		aadsts int
	}{
		"wrong secret":      {contosoID, with("client_secret", "guess"), 401, "invalid_client", 7000215},
		"no secret":         {contosoID, with("client_secret", ""), 401, "invalid_client", 7000218},
		"public client":     {contosoID, with("client_id", "steward-cli"), 401, "invalid_client", 700025},
		"unknown client":    {contosoID, with("client_id", "nobody"), 400, "unauthorized_client", 700016},
		"no client id":      {contosoID, with("client_id", ""), 400, "invalid_request", 900144},
		"organizations":     {"organizations", form, 400, "invalid_request", 9002313},
		"unknown tenant":    {"nowhere.example", form, 400, "invalid_tenant", 90002},
		"not .default":      {contosoID, with("scope", armAPI+"/user_impersonation"), 400, "invalid_scope", 1002012},
		"two resources":     {contosoID, with("scope", armAPI+"/.default https://graph.microsoft.com/.default"), 400, "invalid_scope", 28000},
		"unsupported grant": {contosoID, with("grant_type", "password"), 400, "unsupported_grant_type", 70003},
		"no grant":          {contosoID, with("grant_type", ""), 400, "invalid_request", 900144},
	} {
		if status, body := e.postToken(tc.tenant, tc.form); !isError(status, body, tc.status, tc.code, tc.aadsts) {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}
	form.Set("client_id", "steward-cli")
	form.Del("client_secret")
	if status, body := e.postToken(contosoID, form); !isError(status, body, 401, "invalid_client", 7000218) {
		t.Errorf("public client without a secret: %d %v", status, body)
	}

	// The expired-tokens fault makes every token fail.
	e.sim.Faults.Set(cloudsim.ARM, "/probe", cloudsim.Fault{ExpireTokens: true})
	if status, _, msg := e.probe(cloudsim.ARM, tok.AccessToken); status != http.StatusUnauthorized || !strings.Contains(msg, "expired") {
		t.Fatalf("under the fault: %d %q", status, msg)
	}
	e.sim.Faults.Clear()
	if status, _, msg := e.probe(cloudsim.ARM, tok.AccessToken); status != http.StatusOK {
		t.Fatalf("after the fault: %d %q", status, msg)
	}
	if status, _, msg := e.probe(cloudsim.ARM, ""); status != http.StatusUnauthorized || msg != idp.ErrNoToken.Error() {
		t.Fatalf("without a token: %d %q", status, msg)
	}
}
