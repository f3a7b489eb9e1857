package idp_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// page fetches an authorization request in the browser.
func (e *env) page(u string) (status int, body, location string) {
	e.t.Helper()
	resp, err := e.browser.Get(u)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusFound && ct != "text/html; charset=utf-8" {
		e.t.Fatalf("%d answered as %q", resp.StatusCode, ct)
	}
	return resp.StatusCode, string(b), resp.Header.Get("Location")
}

var links = regexp.MustCompile(`href="([^"]+)"`)

func TestAuthorizePages(t *testing.T) {
	const redirect = "http://localhost:8400/callback"
	e := start(t, idp.Options{Clients: map[string]idp.Client{"steward-web": {Secret: "s", RedirectURIs: []string{redirect}}}})
	// authURL is an authorization request, with overrides as key, value
	// pairs; an empty value drops the parameter.
	authURL := func(tenant string, overrides ...string) string {
		q := url.Values{"response_type": {"code"}, "client_id": {"steward-web"}, "redirect_uri": {redirect},
			"scope": {"openid profile"}, "state": {"st"}, "nonce": {"n"},
			"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
		for i := 0; i < len(overrides); i += 2 {
			if overrides[i+1] == "" {
				q.Del(overrides[i])
			} else {
				q.Set(overrides[i], overrides[i+1])
			}
		}
		return e.sim.URLs[cloudsim.IdP] + "/" + tenant + "/oauth2/v2.0/authorize?" + q.Encode()
	}

	status, body, _ := e.page(authURL(contosoID))
	if status != http.StatusOK || !strings.Contains(body, "alice@contoso.example") || !strings.Contains(body, "bob@contoso.example") ||
		!strings.Contains(body, "(disabled)") || strings.Contains(body, "carol@fabrikam.example") {
		t.Fatalf("picker %d:\n%s", status, body)
	}
	found := links.FindAllStringSubmatch(body, -1)
	if len(found) != 2 {
		t.Fatalf("picker links %v", found)
	}
	pick := html.UnescapeString(found[0][1])
	if !strings.Contains(pick, "login_hint=alice%40contoso.example") {
		t.Fatalf("first link %s", pick)
	}
	loc := e.authorize(e.sim.URLs[cloudsim.IdP] + pick)
	if loc.Host != "localhost:8400" || loc.Query().Get("code") == "" || loc.Query().Get("state") != "st" {
		t.Fatalf("picking alice redirected to %s", loc)
	}
	if _, body, _ := e.page(authURL("organizations")); !strings.Contains(body, "carol@fabrikam.example") || !strings.Contains(body, "alice@contoso.example") {
		t.Fatalf("organizations' picker:\n%s", body)
	}

	for name, tc := range map[string]struct {
		overrides   []string
		code, error string
	}{
		"unknown user":  {[]string{"login_hint", "mallory@contoso.example"}, "AADSTS50034", "access_denied"},
		"disabled user": {[]string{"login_hint", "bob@contoso.example"}, "AADSTS50057", "access_denied"},
		"silent":        {[]string{"prompt", "none"}, "AADSTS50058", "login_required"},
		"implicit":      {[]string{"response_type", "id_token"}, "AADSTS700054", "unsupported_response_type"},
		"form_post":     {[]string{"response_mode", "form_post"}, "AADSTS9002313", "invalid_request"},
		"no openid":     {[]string{"scope", "profile"}, "AADSTS70011", "invalid_scope"},
	} {
		loc := e.authorize(authURL(contosoID, tc.overrides...))
		q := loc.Query()
		if !strings.HasPrefix(loc.String(), redirect+"?") || q.Get("error") != tc.error || q.Get("state") != "st" ||
			q.Get("code") != "" || !strings.HasPrefix(q.Get("error_description"), tc.code+":") {
			t.Errorf("%s: redirected to %s", name, loc)
		}
	}

	// Until the redirect URI is known good, errors are shown, never sent.
	for name, tc := range map[string]struct {
		tenant    string
		overrides []string
		code      string
	}{
		"unregistered redirect URI": {contosoID, []string{"redirect_uri", "https://evil.example/callback"}, "AADSTS50011"},
		"no redirect URI":           {contosoID, []string{"redirect_uri", ""}, "AADSTS900144"},
		"unknown client":            {contosoID, []string{"client_id", "nobody"}, "AADSTS700016"},
		"no client":                 {contosoID, []string{"client_id", ""}, "AADSTS900144"},
		"unknown tenant":            {"nowhere.example", nil, "AADSTS90002"},
	} {
		status, body, location := e.page(authURL(tc.tenant, tc.overrides...))
		if status != http.StatusBadRequest || location != "" || !strings.Contains(body, tc.code+":") {
			t.Errorf("%s: %d Location=%q\n%s", name, status, location, body)
		}
	}
}

func TestDevelopmentClients(t *testing.T) {
	e := start(t, idp.Options{})
	// Any client id, secret and loopback redirect URI will do.
	cfg := oauthConfig(e.discover(contosoID), "any-app", "any-secret", "http://[::1]:8400/callback", oauth2.AuthStyleInParams,
		"openid", "api://any-app/.default")
	tok, _ := e.signIn(cfg, alice)
	// A token for the client's own API carries the user's app roles.
	if claims := segment(t, tok.AccessToken, 1); claims["aud"] != "api://any-app" || claims["scp"] != "user_impersonation" ||
		fmt.Sprint(claims["roles"]) != "[Governance.Admin]" {
		t.Fatalf("access token for the client's API: %v", claims)
	}
	cfg.RedirectURL = "https://steward.example/callback"
	status, body, location := e.page(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if status != http.StatusBadRequest || location != "" || !strings.Contains(body, "loopback") {
		t.Fatalf("a non-loopback redirect URI with no registered clients: %d %q\n%s", status, location, body)
	}
}

// TestSameAddressInTwoDirectories: two directories each with a user of one
// address are two users with their own tid and oid; login_hint alone makes
// the user pick, domain_hint picks.
func TestSameAddressInTwoDirectories(t *testing.T) {
	w := testWorld()
	w.Users = append(w.Users, world.User{Email: "alice@contoso.example", Name: "Alice Elsewhere", DirectoryTenantID: fabrikamID})
	s, p := simtest.Start(t, w, cloudsim.Options{}, idp.Options{})
	browser := s.HTTPClient()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	e := &env{t: t, sim: s, p: p, ctx: oidc.ClientContext(t.Context(), s.HTTPClient()), browser: browser}
	base := s.URLs[cloudsim.IdP] + "/organizations/oauth2/v2.0/"
	cfg := &oauth2.Config{ClientID: "steward-web", RedirectURL: "http://localhost:8400/cb", Scopes: []string{"openid", "profile", "email"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "authorize", TokenURL: base + "token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	authURL := func(extra ...oauth2.AuthCodeOption) string {
		opts := append([]oauth2.AuthCodeOption{oidc.Nonce("n"), oauth2.S256ChallengeOption(verifier),
			oauth2.SetAuthURLParam("login_hint", "Alice@contoso.example")}, extra...)
		return cfg.AuthCodeURL("st", opts...)
	}
	claimsOf := func(loc *url.URL) map[string]any {
		t.Helper()
		tok, err := cfg.Exchange(e.ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		return segment(t, idToken(t, tok), 1)
	}

	status, body, _ := e.page(authURL())
	found := links.FindAllStringSubmatch(body, -1)
	if status != http.StatusOK || len(found) != 2 {
		t.Fatalf("an address of two directories: %d with links %v, want the picker with both\n%s", status, found, body)
	}
	oids := map[string]string{}
	for _, l := range found {
		c := claimsOf(e.authorize(s.URLs[cloudsim.IdP] + html.UnescapeString(l[1])))
		tid, _ := c["tid"].(string)
		oid, _ := c["oid"].(string)
		oids[tid] = oid
	}
	for tid, name := range map[string]string{contosoID: "Alice Admin", fabrikamID: "Alice Elsewhere"} {
		u := p.Users().Accounts("alice@contoso.example", tid)
		if len(u) != 1 || u[0].Name != name || oids[tid] != idp.ObjectID(u[0]) {
			t.Errorf("directory %s: accounts %+v, oid signed in %q", tid, u, oids[tid])
		}
	}
	if oids[contosoID] == oids[fabrikamID] {
		t.Errorf("both accounts have oid %s", oids[contosoID])
	}

	c := claimsOf(e.authorize(authURL(oauth2.SetAuthURLParam("domain_hint", fabrikamID))))
	if c["tid"] != fabrikamID || c["name"] != "Alice Elsewhere" {
		t.Errorf("domain_hint %s signed in %v", fabrikamID, c)
	}
}
