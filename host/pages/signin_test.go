package pages

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestSignInStep: the browser's sign-in attempts are the forms' posts and
// the identity provider's return; showing the sign-in page, signing out
// and other spellings of the paths are not.
func TestSignInStep(t *testing.T) {
	app := fiber.New(fiber.Config{CaseSensitive: true, StrictRouting: true})
	app.Use(func(c *fiber.Ctx) error {
		if SignInStep(c) {
			return c.SendString("sign-in")
		}
		return c.SendString("other")
	})
	for target, want := range map[string]bool{
		"POST /auth/dev-login":                   true,
		"POST /auth/login":                       true,
		"GET /login?code=abc&state=x":            true,
		"GET /auth/login?code=abc&state=x":       true,
		"GET /login?error=access_denied":         true,
		"GET /login":                             false,
		"GET /login?next=/dashboard":             false,
		"GET /auth/dev-login":                    false,
		"POST /login":                            false,
		"POST /auth/logout":                      false,
		"POST /auth/dev-login/":                  false,
		"POST /Auth/Dev-Login":                   false,
		"GET /dashboard?code=abc":                false,
		"POST /api/v1/compliance/rules?code=abc": false,
	} {
		method, path, _ := strings.Cut(target, " ")
		resp, err := app.Test(httptest.NewRequest(method, path, nil))
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 16)
		n, _ := resp.Body.Read(body)
		if got := string(body[:n]) == "sign-in"; got != want || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: sign-in step %v, want %v", target, got, want)
		}
	}
}

// TestFormField: a CSRF token is read from a form body, URL-encoded or
// multipart, and never from the query string.
func TestFormField(t *testing.T) {
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error { return c.SendString(formField(c, "csrf_token")) })
	var multipart strings.Builder
	multipart.WriteString("--b\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\nfrom-multipart\r\n--b--\r\n")
	for _, c := range []struct {
		name, target, contentType, body, want string
	}{
		{"query only", "/?csrf_token=from-query", "", "", ""},
		{"query beside an empty form", "/?csrf_token=from-query", "application/x-www-form-urlencoded", "notes=x", ""},
		{"query beside a JSON body", "/?csrf_token=from-query", "application/json", `{"csrf_token":"from-json"}`, ""},
		{"URL-encoded form", "/?csrf_token=from-query", "application/x-www-form-urlencoded; charset=UTF-8", "csrf_token=from-form", "from-form"},
		{"multipart form", "/?csrf_token=from-query", "multipart/form-data; boundary=b", multipart.String(), "from-multipart"},
	} {
		req := httptest.NewRequest(http.MethodPost, c.target, strings.NewReader(c.body))
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
