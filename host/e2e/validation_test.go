package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEmptyBodyIs422: a required body that is missing is a validation
// failure naming the body, as for any other invalid input, not a 400.
func TestEmptyBodyIs422(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	for _, c := range []struct{ path, token, contentType string }{
		{"/api/v1/auth/login", "", "application/x-www-form-urlencoded"},
		{"/api/v1/auth/token", "", "application/x-www-form-urlencoded"},
		{"/api/v1/auth/refresh", "", "application/json"},
		{"/api/v1/auth/idp/callback", "", "application/json"},
		{"/api/v1/sync/alerts/1/resolve", admin, "application/json"},
		{"/onboarding/api/verify", "", "application/x-www-form-urlencoded"},
		// Without a content type as well: nothing was sent to decode.
		{"/api/v1/auth/refresh", "", ""},
	} {
		t.Run(strings.TrimPrefix(c.path, "/")+"/"+c.contentType, func(t *testing.T) {
			var header []string
			if c.contentType != "" {
				header = []string{"Content-Type", c.contentType}
			}
			expectInvalid(t, h.do(http.MethodPost, c.path, c.token, nil, header...), "body")
		})
	}
	// The page variant answers a page naming the missing fields, which a
	// browser shows, rather than a problem document.
	r := h.do(http.MethodPost, "/onboarding/verify", "", nil, "Content-Type", "application/x-www-form-urlencoded")
	if r.status != http.StatusUnprocessableEntity || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), "<strong>tenant_name</strong>") {
		t.Errorf("empty verification form: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
}

// TestLoginAcceptsOAuthPasswordForm: the password grant's standard fields,
// which the document's own OAuth2PasswordBearer flow sends, are accepted;
// a grant other than password is refused naming grant_type.
func TestLoginAcceptsOAuthPasswordForm(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000"}})
	form := url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}, "grant_type": {"password"}, "scope": {""}, "client_id": {"swagger"}, "client_secret": {""}}
	if r := h.postForm("/api/v1/auth/login", form); r.status != http.StatusOK {
		t.Fatalf("password form with the OAuth2 fields: %d %s", r.status, r.body)
	}
	form.Set("grant_type", "client_credentials")
	expectInvalid(t, h.postForm("/api/v1/auth/login", form), "body.grant_type")
}

// TestValidationNeverEchoesSecrets: a 422 names what is wrong but does not
// repeat a credential, nor the whole body an unexpected field arrived in.
func TestValidationNeverEchoesSecrets(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000"}})
	const secret = "s3cret-Pa55word"
	r := h.postForm("/api/v1/auth/login", url.Values{"username": {"admin@steward.local"}, "password": {secret}, "remember_me": {"yes"}})
	if r.status != http.StatusUnprocessableEntity || strings.Contains(string(r.body), secret) {
		t.Errorf("login with an unexpected field: %d %s, want 422 without the password", r.status, r.body)
	}
	r = h.do(http.MethodPost, "/api/v1/auth/refresh", "", strings.NewReader(`{"refresh_token":"`+secret+`","extra":1}`), "Content-Type", "application/json")
	if r.status != http.StatusUnprocessableEntity || strings.Contains(string(r.body), secret) {
		t.Errorf("refresh with an unexpected field: %d %s, want 422 without the token", r.status, r.body)
	}
	r = h.do(http.MethodPost, "/api/v1/auth/refresh", "", strings.NewReader(`{"refresh_token":7}`), "Content-Type", "application/json")
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "body.refresh_token") {
		t.Errorf("refresh with a number: %d %s, want 422 naming the field", r.status, r.body)
	}
}

// TestWireShapes: a body that does not parse is a 422 naming body on a host
// route and on a plugin route alike; an answer without a body (204) has no
// Content-Type, through the proxy too; and every answer carries the
// request id and the rate limit's headers the document declares.
func TestWireShapes(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	json := []string{"Content-Type", "application/json"}
	var answers []response
	for _, c := range []struct{ path, token, body string }{
		{"/api/v1/auth/refresh", "", `{"refresh_token": "`},
		{"/api/v1/auth/idp/callback", "", `{"code": "c",}`},
		{"/api/v1/api-keys", admin, `{"name": "k", "role": admin}`},
		{"/api/v1/testplugin/notes", admin, `{"note": "a"`},
		{"/api/v1/testplugin/notes", admin, `not json`},
	} {
		r := h.do(http.MethodPost, c.path, c.token, strings.NewReader(c.body), json...)
		t.Run(strings.TrimPrefix(c.path, "/")+"/"+c.body, func(t *testing.T) { expectInvalid(t, r, "body") })
		answers = append(answers, r)
	}

	var key struct {
		ID string `json:"id"`
	}
	h.do(http.MethodPost, "/api/v1/api-keys", admin, strings.NewReader(`{"name": "gone", "role": "admin"}`), json...).json(t, &key)
	for name, r := range map[string]response{
		"a plugin's answer without a body": h.do(http.MethodPost, "/api/v1/testplugin/notes", admin, strings.NewReader(`{"note": "a"}`), json...),
		"a plugin's, to no body":           h.do(http.MethodPost, "/api/v1/testplugin/notes", admin, nil),
		"a host operation's":               h.do(http.MethodDelete, "/api/v1/api-keys/"+key.ID, admin, nil),
	} {
		if r.status != http.StatusNoContent || len(r.body) != 0 || r.header.Get("Content-Type") != "" {
			t.Errorf("%s: %d %q, Content-Type %q; want 204 without either", name, r.status, r.body, r.header.Get("Content-Type"))
		}
		answers = append(answers, r)
	}

	answers = append(answers, h.get("/health", ""), h.get("/api/v1/testplugin/whoami", admin), h.get("/api/v1/tenants", ""))
	for _, r := range answers {
		for _, name := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if r.header.Get(name) == "" {
				t.Errorf("a %d answer without %s: %v", r.status, name, r.header)
			}
		}
	}
}
