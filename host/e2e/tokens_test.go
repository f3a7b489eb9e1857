package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
)

type tokenPair struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
}

// tokenEnv lets two replicas verify each other's tokens, and lifts the auth
// rate limit so the many sign-ins of a test are not refused.
func tokenEnv() map[string]string {
	return map[string]string{
		"STEWARD_JWT_SECRET":                 strings.Repeat("replicas-share-this-secret-", 2),
		"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000",
	}
}

func (h *host) signIn() tokenPair {
	h.t.Helper()
	form := url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}}
	r := h.do(http.MethodPost, "/api/v1/auth/login", "", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	if r.status != http.StatusOK {
		h.t.Fatalf("login: %d %s", r.status, r.body)
	}
	var p tokenPair
	r.json(h.t, &p)
	if p.AccessToken == "" || p.RefreshToken == "" {
		h.t.Fatalf("token response %s", r.body)
	}
	return p
}

func (h *host) refreshJSON(refresh string) response {
	h.t.Helper()
	return h.do(http.MethodPost, "/api/v1/auth/refresh", "", strings.NewReader(`{"refresh_token":"`+refresh+`"}`), "Content-Type", "application/json")
}

func (h *host) tokenForm(form url.Values) response {
	h.t.Helper()
	return h.do(http.MethodPost, "/api/v1/auth/token", "", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
}

// wantAccess checks whether an access token is accepted by a route that
// needs a signed-in user.
func wantAccess(t *testing.T, h *host, name, access string, want int) {
	t.Helper()
	if r := h.get("/api/v1/audit-logs?limit=1", access); r.status != want {
		t.Errorf("%s on %s: %d %s, want %d", name, h.url, r.status, r.body, want)
	}
}

func wantStatus(t *testing.T, what string, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Errorf("%s: %d %s, want %d", what, r.status, r.body, want)
	}
}

// replicas starts two hosts on one PostgreSQL database, sharing Redis when
// withRedis is set.
func replicas(t *testing.T, withRedis bool) (a, b *host) {
	dbURL := storetest.PostgresURL(t)
	o := hostOpts{databaseURL: dbURL, env: tokenEnv()}
	if withRedis {
		o.redisURL = storetest.RedisURL(t)
		o.redisPrefix = storetest.RedisPrefix(t, o.redisURL)
	}
	return startHost(t, o), startHost(t, o)
}

func TestRefreshRotationAcrossReplicas(t *testing.T) {
	a, b := replicas(t, true)

	first := a.signIn()
	r := a.refreshJSON(first.RefreshToken)
	wantStatus(t, "refresh on A", r, http.StatusOK)
	var second tokenPair
	r.json(t, &second)
	if second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.TokenType != "bearer" || second.ExpiresIn <= 0 {
		t.Fatalf("refresh did not rotate: %s", r.body)
	}
	wantAccess(t, b, "rotated access token", second.AccessToken, http.StatusOK)

	// Replaying the spent token on the other replica is reuse: the whole
	// sign-in dies, the rightful client's newest tokens included.
	r = b.tokenForm(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}})
	wantStatus(t, "reuse of the spent refresh token on B", r, http.StatusUnauthorized)
	wantStatus(t, "newest refresh token after reuse", a.refreshJSON(second.RefreshToken), http.StatusUnauthorized)
	wantAccess(t, a, "newest access token after reuse", second.AccessToken, http.StatusUnauthorized)
	wantAccess(t, b, "first access token after reuse", first.AccessToken, http.StatusUnauthorized)

	admin := b.signIn().AccessToken
	var page struct {
		Total int `json:"total"`
	}
	for action, min := range map[string]int{"auth.refresh.success": 1, "auth.token_reuse.failure": 1, "auth.refresh.failure": 1} {
		b.get("/api/v1/audit-logs?action="+action, admin).json(t, &page)
		if page.Total < min {
			t.Errorf("audit entries %s = %d, want at least %d", action, page.Total, min)
		}
	}
}

func TestLogoutAcrossReplicasWithRedis(t *testing.T) {
	a, b := replicas(t, true)
	testLogoutAcross(t, a, b, "redis")
}

func TestLogoutAcrossReplicasWithDatabase(t *testing.T) {
	a, b := replicas(t, false)
	testLogoutAcross(t, a, b, "database")
}

func testLogoutAcross(t *testing.T, a, b *host, backend string) {
	t.Helper()
	session := a.signIn()
	other := a.signIn()
	wantAccess(t, b, "access token before logout", session.AccessToken, http.StatusOK)

	r := a.do(http.MethodPost, "/api/v1/auth/logout", session.AccessToken, nil)
	wantStatus(t, "logout on A", r, http.StatusOK)
	var out struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	r.json(t, &out)
	if !out.Success || out.Message == "" {
		t.Errorf("logout response %s", r.body)
	}
	// B has accepted the token and may answer from its cache until the
	// logout reaches it, which it must within a second.
	withinASecond(t, "access token refused on B after logout", func() bool {
		return b.get("/api/v1/audit-logs?limit=1", session.AccessToken).status == http.StatusUnauthorized
	})
	wantAccess(t, a, "access token after logout", session.AccessToken, http.StatusUnauthorized)
	wantStatus(t, "refresh token after logout on B", b.refreshJSON(session.RefreshToken), http.StatusUnauthorized)
	wantAccess(t, b, "another sign-in after logout", other.AccessToken, http.StatusOK)

	var health struct {
		TokenBlacklist struct {
			Backend string `json:"backend"`
			Active  *int   `json:"active_revocations"`
		} `json:"token_blacklist"`
	}
	b.get("/api/v1/health/detailed", other.AccessToken).json(t, &health)
	if health.TokenBlacklist.Backend != backend || health.TokenBlacklist.Active == nil || *health.TokenBlacklist.Active < 1 {
		t.Errorf("token_blacklist = %+v, want backend %s with at least one active revocation", health.TokenBlacklist, backend)
	}
	health.TokenBlacklist.Active = nil
	b.get("/api/v1/health/detailed", "").json(t, &health)
	if health.TokenBlacklist.Active != nil {
		t.Error("token_blacklist shows the revocation count without authentication")
	}

	admin := a.signIn().AccessToken
	var page struct {
		Total int `json:"total"`
	}
	a.get("/api/v1/audit-logs?action=auth.logout.success", admin).json(t, &page)
	if page.Total != 1 {
		t.Errorf("auth.logout.success entries = %d, want 1", page.Total)
	}
}

func TestTokenGrants(t *testing.T) {
	h := startHost(t, hostOpts{env: tokenEnv()})
	session := h.signIn()

	r := h.tokenForm(url.Values{"grant_type": {"authorization_code"}, "code": {"abc"}})
	wantStatus(t, "authorization_code grant without verifier and state", r, http.StatusUnprocessableEntity)
	// The verifier binds the grant to its sign-in, so it is what is
	// missing; the state is optional beside it.
	if !strings.Contains(string(r.body), `"location":"body.code_verifier"`) {
		t.Errorf("authorization_code 422 does not name body.code_verifier: %s", r.body)
	}
	for _, field := range []string{"body.code", "body.state"} {
		if strings.Contains(string(r.body), `"location":"`+field+`"`) {
			t.Errorf("authorization_code 422 names %s: %s", field, r.body)
		}
	}
	r = h.tokenForm(url.Values{"grant_type": {"authorization_code"}, "code": {"abc"}, "code_verifier": {strings.Repeat("v", 43)}, "state": {"never-issued"}})
	wantStatus(t, "authorization_code grant with an unknown state", r, http.StatusUnauthorized)
	r = h.tokenForm(url.Values{"grant_type": {"authorization_code"}, "code": {"abc"}, "code_verifier": {strings.Repeat("v", 43)}})
	wantStatus(t, "authorization_code grant with a verifier of no sign-in", r, http.StatusUnauthorized)

	r = h.tokenForm(url.Values{"grant_type": {"refresh_token"}})
	wantStatus(t, "refresh grant without refresh_token", r, http.StatusUnprocessableEntity)
	var problem struct {
		Errors []struct {
			Location string `json:"location"`
		} `json:"errors"`
	}
	r.json(t, &problem)
	if len(problem.Errors) != 1 || problem.Errors[0].Location != "body.refresh_token" {
		t.Errorf("422 errors = %s, want one naming body.refresh_token", r.body)
	}
	wantStatus(t, "unknown grant type", h.tokenForm(url.Values{"grant_type": {"password"}}), http.StatusUnprocessableEntity)
	wantStatus(t, "refresh body without refresh_token", h.do(http.MethodPost, "/api/v1/auth/refresh", "", strings.NewReader(`{}`), "Content-Type", "application/json"), http.StatusUnprocessableEntity)
	wantStatus(t, "access token as a refresh token", h.refreshJSON(session.AccessToken), http.StatusUnauthorized)

	r = h.tokenForm(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {session.RefreshToken}, "client_id": {"cli"}})
	wantStatus(t, "refresh grant", r, http.StatusOK)
	var next tokenPair
	r.json(t, &next)
	wantAccess(t, h, "access token from the refresh grant", next.AccessToken, http.StatusOK)
	wantStatus(t, "logout without a token", h.do(http.MethodPost, "/api/v1/auth/logout", "", nil), http.StatusUnauthorized)
}

// TestSigningKeyRotation: after the secret rotates, tokens signed with the
// previous one keep working while it is listed in
// STEWARD_JWT_PREVIOUS_SECRETS, and stop once it is dropped.
func TestSigningKeyRotation(t *testing.T) {
	data := t.TempDir()
	oldSecret, newSecret := strings.Repeat("o", 40), strings.Repeat("n", 40)
	first := startHost(t, hostOpts{dataDir: data, env: map[string]string{"STEWARD_JWT_SECRET": oldSecret}})
	token := first.login()
	first.stop(syscall.SIGTERM)

	rotated := startHost(t, hostOpts{dataDir: data, env: map[string]string{"STEWARD_JWT_SECRET": newSecret, "STEWARD_JWT_PREVIOUS_SECRETS": oldSecret}})
	wantStatus(t, "old token with the previous secret listed", rotated.get("/api/v1/auth/me", token), http.StatusOK)
	fresh := rotated.login()
	rotated.stop(syscall.SIGTERM)

	dropped := startHost(t, hostOpts{dataDir: data, env: map[string]string{"STEWARD_JWT_SECRET": newSecret}})
	wantStatus(t, "old token once the previous secret is dropped", dropped.get("/api/v1/auth/me", token), http.StatusUnauthorized)
	wantStatus(t, "token of the current secret", dropped.get("/api/v1/auth/me", fresh), http.StatusOK)
}
