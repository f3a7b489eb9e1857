package e2e

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/stewardhq/steward/host/app"
	"github.com/stewardhq/steward/host/auth"
)

// expiredAccess is an access token of subject signed with the host's key
// that expired five minutes ago, past the verifier's leeway.
func expiredAccess(t *testing.T, h *host, subject string) string {
	t.Helper()
	secret, err := os.ReadFile(filepath.Join(h.dataDir, auth.DevSecretFile))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := app.SigningKeys(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-20 * time.Minute)
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, auth.Claims{Type: auth.TypeAccess, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: "steward", Subject: subject, ID: uuid.NewString(), IssuedAt: jwt.NewNumericDate(then), NotBefore: jwt.NewNumericDate(then),
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(-5 * time.Minute))}})
	tok.Header["kid"] = keys.Current
	signed, err := tok.SignedString(keys.Keys[keys.Current])
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// wantSignedOut fails the test unless a sign-out answered 303 to /login,
// cleared both token cookies and set neither anew.
func wantSignedOut(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Fatalf("sign-out: %d Location %q %s", r.status, r.header.Get("Location"), r.body)
	}
	cleared := map[string]bool{}
	for _, line := range r.header.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil || (c.Name != "steward_access" && c.Name != "steward_refresh") {
			continue
		}
		if c.Value != "" || (c.MaxAge >= 0 && c.Expires.After(time.Now())) {
			t.Errorf("sign-out set a session cookie: %s", line)
			continue
		}
		cleared[c.Name] = true
	}
	if !cleared["steward_access"] || !cleared["steward_refresh"] {
		t.Errorf("sign-out cleared %v of the token cookies: %v", cleared, r.header.Values("Set-Cookie"))
	}
}

// TestSignOutInEveryState: the browser's sign-out ends its session
// whatever its cookies hold — a good access token, an expired one, the
// refresh token alone, a garbage access token, garbage alone: 303 to
// /login with both token cookies cleared and none set anew, and every
// token of the session refused afterwards.
func TestSignOutInEveryState(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "100"}})
	u, _ := url.Parse(h.url)
	for _, c := range []struct {
		name    string
		cookies func(b *browser, subject string) []*http.Cookie
	}{
		{"a good access token", func(*browser, string) []*http.Cookie { return nil }},
		{"an expired access token", func(b *browser, subject string) []*http.Cookie {
			return []*http.Cookie{{Name: "steward_access", Value: expiredAccess(t, h, subject), Path: "/"}}
		}},
		{"the refresh token alone", func(*browser, string) []*http.Cookie {
			return []*http.Cookie{{Name: "steward_access", Path: "/", MaxAge: -1}}
		}},
		{"a garbage access token", func(*browser, string) []*http.Cookie {
			return []*http.Cookie{{Name: "steward_access", Value: "garbage", Path: "/"}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBrowser(h)
			b.signIn("/dashboard")
			page := b.do(http.MethodGet, "/dashboard", nil)
			m := metaCSRFRE.FindStringSubmatch(string(page.body))
			if m == nil {
				t.Fatalf("dashboard: %d %s", page.status, page.body)
			}
			access, refresh := b.cookie("steward_access").Value, b.cookie("steward_refresh").Value
			var me struct {
				ID string `json:"id"`
			}
			h.get("/api/v1/auth/me", access).json(t, &me)
			b.client.Jar.SetCookies(u, c.cookies(b, me.ID))

			wantSignedOut(t, b.do(http.MethodPost, "/auth/logout", url.Values{"csrf_token": {m[1]}}))
			if r := h.do(http.MethodPost, "/api/v1/auth/refresh", "", strings.NewReader(`{"refresh_token":"`+refresh+`"}`), "Content-Type", "application/json"); r.status != http.StatusUnauthorized {
				t.Errorf("the session's refresh token after sign-out: %d %s", r.status, r.body)
			}
			if r := h.get("/api/v1/auth/me", access); r.status != http.StatusUnauthorized {
				t.Errorf("the session's access token after sign-out: %d %s", r.status, r.body)
			}
			if r := b.do(http.MethodGet, "/dashboard", nil); r.status != http.StatusSeeOther {
				t.Errorf("dashboard after sign-out: %d", r.status)
			}
		})
	}
	t.Run("garbage alone", func(t *testing.T) {
		b := newBrowser(h)
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "steward_access", Value: "garbage", Path: "/"}, {Name: "steward_refresh", Value: "garbage", Path: "/"}})
		wantSignedOut(t, b.do(http.MethodPost, "/auth/logout", url.Values{}))
	})
}
