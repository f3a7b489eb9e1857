package auth_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/tenancy"
)

type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
}

func TestAuthRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	own := h.Tenant("Own", "dir-own")
	h.Tenant("Other", "dir-other")
	_, user := h.User("user@own.example", own)

	signIn := func() tokens {
		t.Helper()
		var tok tokens
		a := h.Form("/api/v1/auth/login", "", url.Values{"username": {" " + apptest.AdminEmail + " "}, "password": {apptest.AdminPassword}, "grant_type": {"password"}, "scope": {"x"}})
		if a.Expect(t, "login", http.StatusOK) {
			a.Decode(t, &tok)
		}
		if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "bearer" || tok.ExpiresIn <= 0 {
			t.Fatalf("login: %+v", tok)
		}
		return tok
	}
	refresh := func(path, token string) apptest.Answer {
		t.Helper()
		if path == "/api/v1/auth/refresh" {
			return h.JSON(http.MethodPost, path, "", `{"refresh_token":"`+token+`"}`)
		}
		return h.Form(path, "", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}})
	}

	t.Run("login", func(t *testing.T) {
		signIn()
		if es := h.Audit("auth.login.success"); len(es) != 1 || es[0].ActorEmail != apptest.AdminEmail || es[0].ActorID == "" {
			t.Errorf("login audit: %+v", es)
		}
		a := h.Form("/api/v1/auth/login", "", url.Values{"username": {apptest.AdminEmail}, "password": {"wrong"}})
		if a.Expect(t, "a wrong password", http.StatusUnauthorized) && a.Problem(t).Detail != "wrong username or password" {
			t.Errorf("a wrong password: %s", a.Body)
		}
		if es := h.Audit("auth.login.failure"); len(es) != 1 || es[0].Details["reason"] != "bad credentials" {
			t.Errorf("failed login audit: %+v", es)
		}
		for form, location := range map[string]string{
			"username=a&password=b&grant_type=client_credentials": "body.grant_type",
			"username=a": "body.password",
		} {
			if a := h.Do(http.MethodPost, "/api/v1/auth/login", "", "application/x-www-form-urlencoded", form); a.Expect(t, form, http.StatusUnprocessableEntity) && !a.Problem(t).Names(location) {
				t.Errorf("%s: %s does not name %s", form, a.Body, location)
			}
		}
	})

	t.Run("who the caller is", func(t *testing.T) {
		var me struct {
			Email   string `json:"email"`
			IsAdmin bool   `json:"is_admin"`
			Roles   []string
			Tenants []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"tenants"`
		}
		if a := h.Do(http.MethodGet, "/api/v1/auth/me", signIn().AccessToken, "", ""); a.Expect(t, "me as the admin", http.StatusOK) {
			a.Decode(t, &me)
			if !me.IsAdmin || me.Email != apptest.AdminEmail || len(me.Tenants) != 2 || len(me.Roles) != 1 || me.Roles[0] != "Governance.Admin" {
				t.Errorf("me as the admin: %s", a.Body)
			}
		}
		if a := h.Do(http.MethodGet, "/api/v1/auth/me", user, "", ""); a.Expect(t, "me as a user", http.StatusOK) {
			me.Tenants = nil
			a.Decode(t, &me)
			if me.IsAdmin || len(me.Tenants) != 1 || me.Tenants[0].ID != own.ID || me.Roles == nil {
				t.Errorf("me as a user: %s", a.Body)
			}
		}
		a := h.Do(http.MethodGet, "/api/v1/auth/me", "", "", "")
		if a.Expect(t, "me anonymous", http.StatusUnauthorized) && a.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("me anonymous: %v", a.Header)
		}
		if a := h.Do(http.MethodGet, "/api/v1/auth/health", "", "", ""); a.Expect(t, "auth health", http.StatusOK) &&
			!strings.Contains(string(a.Body), `"dev_login_enabled":true`) || !strings.Contains(string(a.Body), `"jwt_configured":true`) {
			t.Errorf("auth health: %s", a.Body)
		}
	})

	t.Run("a refresh token works once", func(t *testing.T) {
		for _, path := range []string{"/api/v1/auth/refresh", "/api/v1/auth/token"} {
			first := signIn()
			var next tokens
			if a := refresh(path, first.RefreshToken); a.Expect(t, path, http.StatusOK) {
				a.Decode(t, &next)
			}
			if next.AccessToken == "" || next.RefreshToken == first.RefreshToken {
				t.Fatalf("%s: %+v", path, next)
			}
			// Presenting the spent token again revokes the whole sign-in.
			a := refresh(path, first.RefreshToken)
			if a.Expect(t, path+" reusing a spent token", http.StatusUnauthorized) && a.Problem(t).Detail != "refresh token already used; the sign-in has been revoked" {
				t.Errorf("%s reusing a spent token: %s", path, a.Body)
			}
			refresh(path, next.RefreshToken).Expect(t, path+" with the revoked sign-in's newer token", http.StatusUnauthorized)
		}
		if es := h.Audit("auth.token_reuse.failure"); len(es) != 2 {
			t.Errorf("reuse audited %d times, want 2", len(es))
		}
		if es := h.Audit("auth.refresh.success"); len(es) != 2 {
			t.Errorf("refresh audited %d times, want 2", len(es))
		}
		refresh("/api/v1/auth/refresh", "not-a-token").Expect(t, "a malformed refresh token", http.StatusUnauthorized)
		// An access token is no refresh token.
		refresh("/api/v1/auth/refresh", signIn().AccessToken).Expect(t, "an access token as a refresh token", http.StatusUnauthorized)
	})

	t.Run("the token endpoint's grants", func(t *testing.T) {
		for form, locations := range map[string][]string{
			"grant_type=refresh_token":      {"body.refresh_token"},
			"grant_type=authorization_code": {"body.code", "body.code_verifier"},
			"grant_type=password":           {"body.grant_type"},
		} {
			a := h.Do(http.MethodPost, "/api/v1/auth/token", "", "application/x-www-form-urlencoded", form)
			if !a.Expect(t, form, http.StatusUnprocessableEntity) {
				continue
			}
			p := a.Problem(t)
			for _, l := range locations {
				if !p.Names(l) {
					t.Errorf("%s: %s does not name %s", form, a.Body, l)
				}
			}
			// The verifier binds a code grant to its sign-in; its state
			// is optional.
			if p.Names("body.state") {
				t.Errorf("%s: %s names body.state", form, a.Body)
			}
		}
	})

	t.Run("logout revokes the sign-in", func(t *testing.T) {
		tok := signIn()
		h.Do(http.MethodGet, "/api/v1/auth/me", tok.AccessToken, "", "").Expect(t, "me before logout", http.StatusOK)
		h.Do(http.MethodPost, "/api/v1/auth/logout", tok.AccessToken, "", "").Expect(t, "logout", http.StatusOK)
		if es := h.Audit("auth.logout.success"); len(es) != 1 || es[0].ActorEmail != apptest.AdminEmail {
			t.Errorf("logout audit: %+v", es)
		}
		a := h.Do(http.MethodGet, "/api/v1/auth/me", tok.AccessToken, "", "")
		if a.Expect(t, "me after logout", http.StatusUnauthorized) && a.Problem(t).Detail != "token has been revoked" {
			t.Errorf("me after logout: %s", a.Body)
		}
		refresh("/api/v1/auth/refresh", tok.RefreshToken).Expect(t, "refresh after logout", http.StatusUnauthorized)
		h.Do(http.MethodPost, "/api/v1/auth/logout", "", "", "").Expect(t, "logout anonymous", http.StatusUnauthorized)

		var key struct {
			Secret string `json:"key"`
		}
		h.JSON(http.MethodPost, "/api/v1/api-keys", signIn().AccessToken, `{"name":"k","role":"admin"}`).Decode(t, &key)
		req := httptest.NewRequest(http.MethodPost, "/api/v1/auth/logout", nil)
		req.Header.Set("X-API-Key", key.Secret)
		if a := h.Send(req); a.Expect(t, "logout with an API key", http.StatusBadRequest) && !strings.Contains(a.Problem(t).Detail, "API keys are revoked through the API-key routes") {
			t.Errorf("logout with an API key: %s", a.Body)
		}
	})
}

const (
	dirA = "11111111-1111-1111-1111-111111111111"
	dirB = "22222222-2222-2222-2222-222222222222"
)

// idpWorld is a simulated cloud whose identity provider knows a standard
// user of Brand A's group, an admin by app role in the managing directory
// (Brand A's, the world's first) and a user Brand B's directory grants the
// admin role.
func idpWorld(t *testing.T) string {
	w := world.World{
		Tenants: []world.Tenant{
			{Name: "Brand A", DirectoryTenantID: dirA, Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}}, AccessGroups: []string{"grp-a"}},
			{Name: "Brand B", DirectoryTenantID: dirB, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
		},
		Users: []world.User{
			{Email: "ann@brand-a.example", Name: "Ann Analyst", DirectoryTenantID: dirA, Groups: []string{"grp-a"}},
			{Email: "max@brand-a.example", Name: "Max Manager", DirectoryTenantID: dirA, Roles: []string{"Governance.Admin"}},
			{Email: "olga@brand-b.example", Name: "Olga Operator", DirectoryTenantID: dirB, Roles: []string{"Governance.Admin"}},
		},
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "world.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type callback struct {
	Code         string `json:"code"`
	CodeVerifier string `json:"code_verifier"`
	State        string `json:"state"`
}

// authorize does the browser's part of a sign-in: starts it at the host,
// follows the authorization URL to the simulated identity provider, which
// signs the hinted user in at once, and reads code and state from its
// redirect.
func authorize(t *testing.T, h *apptest.Host, email string) callback {
	t.Helper()
	var login struct {
		AuthorizationURL string `json:"authorization_url"`
		State            string `json:"state"`
		CodeVerifier     string `json:"code_verifier"`
	}
	a := h.Do(http.MethodGet, "/api/v1/auth/idp/login?login_hint="+url.QueryEscape(email), "", "", "")
	if !a.Expect(t, "idp login", http.StatusOK) {
		t.FailNow()
	}
	a.Decode(t, &login)
	// The simulator's certificate comes from a CA made at its start; the
	// host verifies it when it redeems the code, the browser need not.
	browser := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := browser.Get(login.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || loc.Query().Get("state") != login.State || loc.Query().Get("code") == "" {
		t.Fatalf("authorize answered %s, %v", resp.Status, err)
	}
	return callback{Code: loc.Query().Get("code"), CodeVerifier: login.CodeVerifier, State: login.State}
}

func TestIdPRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{Env: map[string]string{"STEWARD_SIM_WORLD": idpWorld(t)}})
	post := func(cb callback) apptest.Answer {
		t.Helper()
		b, err := json.Marshal(cb)
		if err != nil {
			t.Fatal(err)
		}
		return h.JSON(http.MethodPost, "/api/v1/auth/idp/callback", "", string(b))
	}
	me := func(a apptest.Answer) (isAdmin bool, tenants int) {
		t.Helper()
		var tok tokens
		a.Decode(t, &tok)
		var info struct {
			IsAdmin bool       `json:"is_admin"`
			Tenants []struct{} `json:"tenants"`
		}
		h.Do(http.MethodGet, "/api/v1/auth/me", tok.AccessToken, "", "").Decode(t, &info)
		return info.IsAdmin, len(info.Tenants)
	}
	brandA := tenancy.Tenant{Name: "Brand A", DirectoryTenantID: dirA, AccessGroups: []string{"grp-a"}, IsActive: true}
	if err := tenancy.New(h.DB).CreateTenant(t.Context(), &brandA); err != nil {
		t.Fatal(err)
	}

	t.Run("sign-in", func(t *testing.T) {
		if a := post(authorize(t, h, "ann@brand-a.example")); a.Expect(t, "a standard user", http.StatusOK) {
			if admin, tenants := me(a); admin || tenants != 1 {
				t.Errorf("ann: admin %v, %d tenants, want a standard user of Brand A", admin, tenants)
			}
		}
		// The code grant of the token endpoint does the same.
		cb := authorize(t, h, "max@brand-a.example")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {cb.Code}, "code_verifier": {cb.CodeVerifier}, "state": {cb.State}}
		if a := h.Form("/api/v1/auth/token", "", form); a.Expect(t, "an admin of the managing directory", http.StatusOK) {
			if admin, _ := me(a); !admin {
				t.Error("max is not an admin")
			}
		}
		// Another directory may not make an admin.
		if a := post(authorize(t, h, "olga@brand-b.example")); a.Expect(t, "an admin role of another directory", http.StatusOK) {
			if admin, _ := me(a); admin {
				t.Error("olga is an admin")
			}
		}
		if es := h.Audit("auth.idp_login.success"); len(es) != 3 {
			t.Errorf("sign-ins audited %d times, want 3", len(es))
		}
	})

	t.Run("refusals", func(t *testing.T) {
		cb := authorize(t, h, "ann@brand-a.example")
		wrong := cb
		wrong.CodeVerifier = strings.Repeat("x", 43)
		post(wrong).Expect(t, "a wrong verifier", http.StatusUnauthorized)
		// The state was spent by the refused attempt.
		post(cb).Expect(t, "a spent state", http.StatusUnauthorized)
		cb = authorize(t, h, "ann@brand-a.example")
		cb.Code = "bad"
		post(cb).Expect(t, "a bad code", http.StatusUnauthorized)
		if es := h.Audit("auth.idp_login.failure"); len(es) != 3 {
			t.Errorf("refusals audited %d times, want 3", len(es))
		}
		if a := post(callback{Code: "c", CodeVerifier: "short", State: "s"}); a.Expect(t, "a short verifier", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.code_verifier") {
			t.Errorf("a short verifier: %s", a.Body)
		}
		if a := h.Do(http.MethodGet, "/api/v1/auth/idp/login?redirect_uri="+url.QueryEscape("https://evil.example/cb"), "", "", ""); a.Expect(t, "a foreign redirect", http.StatusUnprocessableEntity) &&
			!a.Problem(t).Names("query.redirect_uri") {
			t.Errorf("a foreign redirect: %s", a.Body)
		}
	})

	// PKCE binds a callback to its sign-in, so the state may be left out;
	// a sign-in still works once, whichever way it is finished.
	t.Run("without state", func(t *testing.T) {
		withoutState := func(cb callback) string {
			return `{"code": "` + cb.Code + `", "code_verifier": "` + cb.CodeVerifier + `"}`
		}
		cb := authorize(t, h, "ann@brand-a.example")
		h.JSON(http.MethodPost, "/api/v1/auth/idp/callback", "", withoutState(cb)).Expect(t, "a callback without state", http.StatusOK)
		h.JSON(http.MethodPost, "/api/v1/auth/idp/callback", "", withoutState(cb)).Expect(t, "the same verifier again", http.StatusUnauthorized)
		post(cb).Expect(t, "the state of a sign-in finished without it", http.StatusUnauthorized)

		cb = authorize(t, h, "max@brand-a.example")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {cb.Code}, "code_verifier": {cb.CodeVerifier}}
		h.Form("/api/v1/auth/token", "", form).Expect(t, "a code grant without state", http.StatusOK)
		h.JSON(http.MethodPost, "/api/v1/auth/idp/callback", "", withoutState(cb)).Expect(t, "a sign-in finished through the token route", http.StatusUnauthorized)

		// A state given must be the sign-in's; refused, it spends the
		// sign-in its verifier belongs to no more than any other refusal.
		first, second := authorize(t, h, "ann@brand-a.example"), authorize(t, h, "ann@brand-a.example")
		mixed := first
		mixed.State = second.State
		post(mixed).Expect(t, "the state of another sign-in", http.StatusUnauthorized)

		// Without a verifier nothing binds the request: it is refused
		// naming the verifier, state or not.
		for _, body := range []string{`{"code": "c", "state": "` + first.State + `"}`, `{"code": "c"}`} {
			if a := h.JSON(http.MethodPost, "/api/v1/auth/idp/callback", "", body); a.Expect(t, "a callback without verifier", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.code_verifier") {
				t.Errorf("a callback without verifier: %s", a.Body)
			}
		}
		form = url.Values{"grant_type": {"authorization_code"}, "code": {"c"}, "state": {first.State}}
		if a := h.Form("/api/v1/auth/token", "", form); a.Expect(t, "a code grant without verifier", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.code_verifier") {
			t.Errorf("a code grant without verifier: %s", a.Body)
		}
	})
}
