package e2e

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

const (
	// dirA is the idp world's first tenant, with the simulated cloud the
	// managing directory.
	dirA = "11111111-1111-1111-1111-111111111111"
	dirB = "22222222-2222-2222-2222-222222222222"
)

// idpWorld has two tenants, each visible to one group: a standard user in
// Brand A's group only, an admin by app role in the managing directory
// (Brand A's, the world's first), a user granted the admin role by Brand
// B's directory, and two users of one address, one in each directory.
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
			{Email: "sam@shared.example", Name: "Sam of A", DirectoryTenantID: dirA},
			{Email: "sam@shared.example", Name: "Sam of B", DirectoryTenantID: dirB},
		},
	}
	return writeWorld(t, w)
}

type idpLogin struct {
	AuthorizationURL    string `json:"authorization_url"`
	State               string `json:"state"`
	CodeVerifier        string `json:"code_verifier"`
	CodeChallenge       string `json:"code_challenge"`
	CodeChallengeMethod string `json:"code_challenge_method"`
}

// idpCallback is the callback body; a field left empty is left out.
type idpCallback struct {
	Code         string `json:"code,omitempty"`
	CodeVerifier string `json:"code_verifier,omitempty"`
	State        string `json:"state,omitempty"`
}

// authorize does the browser's part: starts a sign-in at the host, follows
// the authorization URL to the simulated identity provider, which signs the
// hinted user in at once, and reads code and state from its redirect
// without following it.
func authorize(t *testing.T, h *host, email string) (idpLogin, idpCallback) {
	t.Helper()
	return authorizeIn(t, h, email, "")
}

// authorizeIn is authorize for the account of an address in one directory,
// which the browser names to the identity provider with domain_hint (an
// address of several directories needs it).
func authorizeIn(t *testing.T, h *host, email, dir string) (idpLogin, idpCallback) {
	t.Helper()
	r := h.get("/api/v1/auth/idp/login?login_hint="+url.QueryEscape(email), "")
	if r.status != http.StatusOK {
		t.Fatalf("idp login: %d %s", r.status, r.body)
	}
	var login idpLogin
	r.json(t, &login)
	if login.State == "" || len(login.CodeVerifier) < 43 || login.CodeChallenge == "" || login.CodeChallengeMethod != "S256" {
		t.Fatalf("idp login answer %s", r.body)
	}
	au, err := url.Parse(login.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	q := au.Query()
	if q.Get("state") != login.State || q.Get("code_challenge") != login.CodeChallenge || q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" {
		t.Fatalf("authorization URL lacks the sign-in's parameters: %s", login.AuthorizationURL)
	}
	// The simulated cloud runs inside the host process with a CA made at
	// start-up, which the host does not hand out. Certificate checks are
	// skipped for that loopback simulator only; the host itself verifies
	// the simulator's certificate when it redeems the code.
	if ip := net.ParseIP(au.Hostname()); au.Scheme != "https" || ip == nil || !ip.IsLoopback() {
		t.Fatalf("authorization URL is not the loopback simulator: %s", login.AuthorizationURL)
	}
	browser := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	authURL := login.AuthorizationURL
	if dir != "" {
		authURL += "&domain_hint=" + url.QueryEscape(dir)
	}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("authorize answered %s without a redirect: %v", resp.Status, err)
	}
	back := loc.Query()
	if back.Get("code") == "" || back.Get("state") != login.State {
		t.Fatalf("redirect %s lacks code or the sign-in's state", loc)
	}
	return login, idpCallback{Code: back.Get("code"), CodeVerifier: login.CodeVerifier, State: back.Get("state")}
}

func postCallback(t *testing.T, h *host, body idpCallback) response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return h.do(http.MethodPost, "/api/v1/auth/idp/callback", "", strings.NewReader(string(b)), "Content-Type", "application/json")
}

type meInfo struct {
	ID      string   `json:"id"`
	Email   string   `json:"email"`
	Name    string   `json:"name"`
	Roles   []string `json:"roles"`
	IsAdmin bool     `json:"is_admin"`
	Tenants []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"tenants"`
}

// signIn runs the whole browser sign-in and answers who the host says the
// user is.
func signIn(t *testing.T, h *host, email string) meInfo {
	t.Helper()
	me, _ := signInTo(t, h, email, "")
	return me
}

// signInTo signs in the account of an address in a directory ("" for the
// only one) and answers who the host says it is and its access token.
func signInTo(t *testing.T, h *host, email, dir string) (meInfo, string) {
	t.Helper()
	_, cb := authorizeIn(t, h, email, dir)
	r := postCallback(t, h, cb)
	if r.status != http.StatusOK {
		t.Fatalf("callback for %s: %d %s", email, r.status, r.body)
	}
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int    `json:"expires_in"`
	}
	r.json(t, &tok)
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "bearer" || tok.ExpiresIn <= 0 {
		t.Fatalf("token response %s", r.body)
	}
	r = h.get("/api/v1/auth/me", tok.AccessToken)
	if r.status != http.StatusOK {
		t.Fatalf("me: %d %s", r.status, r.body)
	}
	var me meInfo
	r.json(t, &me)
	return me, tok.AccessToken
}

func expectStatus(t *testing.T, what string, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: want %d, got %d %s", what, want, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); want >= 400 && !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("%s: content type %q, want problem details", what, ct)
	}
}

// TestIdPSignIn: the browser sign-in through the simulated identity
// provider over HTTPS, the ID token's groups and roles deciding what the
// user sees, and each way a callback is refused; on both databases, as
// users are found through a unique index of each.
func TestIdPSignIn(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testIdPSignIn(t, dialect) })
	}
}

func testIdPSignIn(t *testing.T, dialect string) {
	o := hostOpts{env: map[string]string{
		"STEWARD_SIM_WORLD": idpWorld(t), "STEWARD_SIM_BOOTSTRAP": "true",
		// Every step of a sign-in is an auth route; the default limit of
		// ten a minute would stop this test, not a user.
		"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000",
	}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)

	t.Run("standard user sees the tenants of its groups", func(t *testing.T) {
		me := signIn(t, h, "Ann@Brand-A.example")
		if me.Email != "ann@brand-a.example" || me.Name != "Ann Analyst" || me.IsAdmin || len(me.Roles) != 0 {
			t.Fatalf("me %+v", me)
		}
		if len(me.Tenants) != 1 || me.Tenants[0].Name != "Brand A" {
			t.Fatalf("tenants %+v, want exactly Brand A", me.Tenants)
		}
	})

	t.Run("admin role of the managing directory makes an admin", func(t *testing.T) {
		me := signIn(t, h, "max@brand-a.example")
		if !me.IsAdmin || len(me.Roles) != 1 || me.Roles[0] != "Governance.Admin" {
			t.Fatalf("me %+v", me)
		}
		if len(me.Tenants) != 2 {
			t.Fatalf("an admin sees every tenant, got %+v", me.Tenants)
		}
	})

	t.Run("admin role of another directory makes no admin", func(t *testing.T) {
		me, tok := signInTo(t, h, "olga@brand-b.example", "")
		if me.IsAdmin || len(me.Tenants) != 0 {
			t.Fatalf("a user given %s by Brand B's own directory: me %+v, want a standard user seeing no tenant", "Governance.Admin", me)
		}
		expectStatus(t, "an admin route", h.get("/api/v1/api-keys", tok), http.StatusForbidden)
		expectStatus(t, "another tenant's members", h.get("/api/v1/tenants/"+tenantID(t, h, dirA)+"/members", tok), http.StatusForbidden)
	})

	t.Run("one address in two directories is two users", func(t *testing.T) {
		admin := h.login()
		samA, tokA := signInTo(t, h, "sam@shared.example", dirA)
		samB, tokB := signInTo(t, h, "sam@shared.example", dirB)
		if samA.ID == "" || samA.ID == samB.ID || samA.Name != "Sam of A" || samB.Name != "Sam of B" {
			t.Fatalf("Sam of A %+v and Sam of B %+v must be two users", samA, samB)
		}
		brandA := tenantID(t, h, dirA)
		expectStatus(t, "assign Sam of A to Brand A", h.do(http.MethodPut, "/api/v1/tenants/"+brandA+"/members/"+samA.ID, admin, nil), http.StatusOK)
		if me := meOf(t, h, tokA); len(me.Tenants) != 1 || me.Tenants[0].ID != brandA {
			t.Fatalf("Sam of A after the assignment: %+v, want Brand A", me)
		}
		if me := meOf(t, h, tokB); me.ID != samB.ID || len(me.Tenants) != 0 {
			t.Fatalf("Sam of B after Sam of A's assignment: %+v, want no tenant", me)
		}
		expectStatus(t, "Sam of B reads Brand A", h.get("/api/v1/tenants/"+brandA, tokB), http.StatusForbidden)
		// Signing in again finds each one's own user.
		if again, _ := signInTo(t, h, "sam@shared.example", dirB); again.ID != samB.ID || len(again.Tenants) != 0 {
			t.Fatalf("Sam of B again: %+v, want %s with no tenant", again, samB.ID)
		}
		if again, _ := signInTo(t, h, "sam@shared.example", dirA); again.ID != samA.ID || len(again.Tenants) != 1 {
			t.Fatalf("Sam of A again: %+v, want %s with Brand A", again, samA.ID)
		}
	})

	t.Run("the token route's authorization_code grant finishes a sign-in", func(t *testing.T) {
		_, cb := authorize(t, h, "ann@brand-a.example")
		form := url.Values{"grant_type": {"authorization_code"}, "code": {cb.Code}, "code_verifier": {cb.CodeVerifier}, "state": {cb.State}}
		r := h.do(http.MethodPost, "/api/v1/auth/token", "", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		expectStatus(t, "authorization_code grant", r, http.StatusOK)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		r.json(t, &tok)
		if me := h.get("/api/v1/auth/me", tok.AccessToken); me.status != http.StatusOK || !strings.Contains(string(me.body), "ann@brand-a.example") {
			t.Fatalf("me after the grant: %d %s", me.status, me.body)
		}
		again := h.do(http.MethodPost, "/api/v1/auth/token", "", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		expectStatus(t, "the same code and state again", again, http.StatusUnauthorized)
	})

	t.Run("replayed state", func(t *testing.T) {
		_, cb := authorize(t, h, "ann@brand-a.example")
		expectStatus(t, "first callback", postCallback(t, h, cb), http.StatusOK)
		expectStatus(t, "replay", postCallback(t, h, cb), http.StatusUnauthorized)
	})

	t.Run("without state, the verifier binds the callback", func(t *testing.T) {
		_, cb := authorize(t, h, "ann@brand-a.example")
		cb.State = ""
		expectStatus(t, "a callback without state", postCallback(t, h, cb), http.StatusOK)
		expectStatus(t, "the same verifier again", postCallback(t, h, cb), http.StatusUnauthorized)
	})

	t.Run("wrong verifier", func(t *testing.T) {
		_, cb := authorize(t, h, "ann@brand-a.example")
		cb.CodeVerifier = strings.Repeat("w", 43)
		expectStatus(t, "wrong verifier", postCallback(t, h, cb), http.StatusUnauthorized)
	})

	t.Run("tampered state", func(t *testing.T) {
		_, cb := authorize(t, h, "ann@brand-a.example")
		cb.State += "x"
		expectStatus(t, "tampered state", postCallback(t, h, cb), http.StatusUnauthorized)
	})

	t.Run("bad code", func(t *testing.T) {
		_, cb := authorize(t, h, "ann@brand-a.example")
		cb.Code = "not-a-code"
		expectStatus(t, "bad code", postCallback(t, h, cb), http.StatusUnauthorized)
	})

	t.Run("missing field", func(t *testing.T) {
		r := postCallback(t, h, idpCallback{Code: "c", State: "s"})
		expectStatus(t, "missing code_verifier", r, http.StatusUnprocessableEntity)
		var p struct {
			Errors []struct {
				Location string `json:"location"`
				Message  string `json:"message"`
			} `json:"errors"`
		}
		r.json(t, &p)
		if len(p.Errors) != 1 || !strings.HasPrefix(p.Errors[0].Location, "body") || !strings.Contains(p.Errors[0].Message, "code_verifier") {
			t.Fatalf("422 does not name code_verifier: %s", r.body)
		}
	})

	t.Run("foreign redirect URI", func(t *testing.T) {
		r := h.get("/api/v1/auth/idp/login?redirect_uri="+url.QueryEscape("https://attacker.example/cb"), "")
		expectStatus(t, "foreign redirect", r, http.StatusUnprocessableEntity)
	})

	t.Run("audited", func(t *testing.T) {
		admin := h.login()
		var page struct {
			Items []struct {
				ActorEmail string         `json:"actor_email"`
				Status     string         `json:"status"`
				Details    map[string]any `json:"details"`
			} `json:"items"`
		}
		h.get("/api/v1/audit-logs?action=auth.idp_login.success", admin).json(t, &page)
		signedIn := map[string]bool{}
		for _, e := range page.Items {
			signedIn[e.ActorEmail] = e.Status == "success"
		}
		if !signedIn["ann@brand-a.example"] || !signedIn["max@brand-a.example"] || !signedIn["olga@brand-b.example"] {
			t.Fatalf("success entries %+v", page.Items)
		}
		h.get("/api/v1/audit-logs?action=auth.idp_login.failure", admin).json(t, &page)
		reasons := map[string]bool{}
		for _, e := range page.Items {
			r, _ := e.Details["reason"].(string)
			reasons[r] = e.Status == "failure"
		}
		for _, want := range []string{"unknown, expired or already used state", "code verifier does not match the sign-in", "authorization code rejected"} {
			if !reasons[want] {
				t.Fatalf("no failure entry with reason %q in %+v", want, page.Items)
			}
		}
	})
}

// tenantID is the id of the tenant with a directory id, as an admin sees it.
func tenantID(t *testing.T, h *host, dir string) string {
	t.Helper()
	var tenants []struct {
		ID                string `json:"id"`
		DirectoryTenantID string `json:"directory_tenant_id"`
	}
	h.get("/api/v1/tenants", h.login()).json(t, &tenants)
	for _, tn := range tenants {
		if tn.DirectoryTenantID == dir {
			return tn.ID
		}
	}
	t.Fatalf("no tenant of directory %s in %+v", dir, tenants)
	return ""
}

func meOf(t *testing.T, h *host, token string) meInfo {
	t.Helper()
	r := h.get("/api/v1/auth/me", token)
	expectStatus(t, "me", r, http.StatusOK)
	var me meInfo
	r.json(t, &me)
	return me
}

// TestIdPRegisteredOnly: with STEWARD_OIDC_REGISTERED_ONLY, users of the
// managing directory and of registered tenants' directories sign in, and a
// directory whose tenant is no longer active is refused.
func TestIdPRegisteredOnly(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{
		"STEWARD_SIM_WORLD": idpWorld(t), "STEWARD_SIM_BOOTSTRAP": "true",
		"STEWARD_OIDC_REGISTERED_ONLY": "true", "STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000",
	}})
	if me := signIn(t, h, "ann@brand-a.example"); me.Email != "ann@brand-a.example" {
		t.Fatalf("a user of the managing directory: %+v", me)
	}
	if me := signIn(t, h, "olga@brand-b.example"); me.Email != "olga@brand-b.example" || me.IsAdmin {
		t.Fatalf("a user of a registered tenant's directory: %+v", me)
	}

	admin := h.login()
	expectStatus(t, "deactivate Brand B", h.do(http.MethodDelete, "/api/v1/tenants/"+tenantID(t, h, dirB), admin, nil), http.StatusNoContent)
	_, cb := authorize(t, h, "olga@brand-b.example")
	r := postCallback(t, h, cb)
	expectStatus(t, "a user of a directory no active tenant has", r, http.StatusForbidden)
	if !strings.Contains(string(r.body), "directory") {
		t.Fatalf("the refusal does not say why: %s", r.body)
	}
	var page struct {
		Items []struct {
			Details map[string]any `json:"details"`
		} `json:"items"`
	}
	h.get("/api/v1/audit-logs?action=auth.idp_login.failure", admin).json(t, &page)
	if len(page.Items) != 1 || page.Items[0].Details["reason"] != "directory not registered" || page.Items[0].Details["directory_tenant_id"] != dirB {
		t.Fatalf("audit of the refusal: %+v", page.Items)
	}
}
