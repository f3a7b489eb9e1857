package e2e

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
)

func formLogin(h *host, password string) response {
	form := url.Values{"username": {"admin@steward.local"}, "password": {password}}
	return h.do(http.MethodPost, "/api/v1/auth/login", "", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
}

func expectLimited(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("want 429, got %d %s", r.status, r.body)
	}
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 61 {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if r.header.Get("X-Ratelimit-Remaining") != "0" || r.header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("429 headers %v", r.header)
	}
}

// TestRateLimits: the 101st request of a client in a minute is a 429, and
// the 11th on the auth routes, whose budget is separate.
func TestRateLimits(t *testing.T) {
	h := startHost(t, hostOpts{})
	// startHost polled /health until ready; those requests count too, so
	// spend the rest of the minute's budget and check the headers count down.
	first := h.get("/health", "")
	remaining, err := strconv.Atoi(first.header.Get("X-Ratelimit-Remaining"))
	if err != nil || first.header.Get("X-Ratelimit-Limit") != "100" {
		t.Fatalf("headers %v", first.header)
	}
	reset, err := strconv.ParseInt(first.header.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil || reset < time.Now().Unix() || reset > time.Now().Add(61*time.Second).Unix() {
		t.Fatalf("X-RateLimit-Reset %q is not a Unix time within the minute", first.header.Get("X-Ratelimit-Reset"))
	}
	if reset-time.Now().Unix() < 2 {
		t.Skip("window about to reset; the count would straddle two windows")
	}
	for i := remaining; i > 0; i-- {
		r := h.get("/api/v1/testplugin/ping", "")
		if r.status != 200 || r.header.Get("X-Ratelimit-Remaining") != strconv.Itoa(i-1) {
			t.Fatalf("request with %d left: %d remaining=%s", i, r.status, r.header.Get("X-Ratelimit-Remaining"))
		}
	}
	expectLimited(t, h.get("/health", ""))
	expectLimited(t, h.get("/api/v1/testplugin/ping", ""))

	// Auth routes draw on their own budget of 10.
	for i := 0; i < 10; i++ {
		if r := formLogin(h, "wrong"); r.status != http.StatusUnauthorized || r.header.Get("X-Ratelimit-Limit") != "10" {
			t.Fatalf("auth attempt %d: %d limit=%s", i+1, r.status, r.header.Get("X-Ratelimit-Limit"))
		}
	}
	expectLimited(t, formLogin(h, "steward-dev"))
}

// TestRateLimitsSharedThroughRedis: two replicas on one Redis spend one
// budget per client.
func TestRateLimitsSharedThroughRedis(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	dbURL := storetest.PostgresURL(t)
	a := startHost(t, hostOpts{redisURL: redisURL, redisPrefix: prefix, databaseURL: dbURL})
	b := startHost(t, hostOpts{redisURL: redisURL, redisPrefix: prefix, databaseURL: dbURL})
	var detailed struct {
		CacheMetrics struct {
			Backend string `json:"backend"`
		} `json:"cache_metrics"`
	}
	a.get("/health/detailed", "").json(t, &detailed)
	if detailed.CacheMetrics.Backend != "redis" {
		t.Fatalf("cache backend %q with STEWARD_REDIS_URL set", detailed.CacheMetrics.Backend)
	}
	ra := a.get("/health", "")
	rb := b.get("/health", "")
	na, _ := strconv.Atoi(ra.header.Get("X-Ratelimit-Remaining"))
	nb, _ := strconv.Atoi(rb.header.Get("X-Ratelimit-Remaining"))
	if nb >= na {
		t.Fatalf("replica b's count (%d left) does not include replica a's requests (%d left)", nb, na)
	}
	for i := nb; i > 0; i-- {
		host := a
		if i%2 == 0 {
			host = b
		}
		if r := host.get("/health", ""); r.status != 200 {
			t.Fatalf("with %d left: %d", i, r.status)
		}
	}
	expectLimited(t, a.get("/health", ""))
	expectLimited(t, b.get("/health", ""))
}

// TestRoutingIsExact: a route answers only to its own spelling, so a case
// or trailing-slash variant of the sign-in route neither signs in nor
// spends the general budget on a sign-in; the budget follows the route.
func TestRoutingIsExact(t *testing.T) {
	h := startHost(t, hostOpts{})
	form := url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}}.Encode()
	for _, path := range []string{"/Api/V1/Auth/Login", "/API/V1/AUTH/LOGIN", "/api/v1/auth/login/", "/api/v1/Auth/login"} {
		r := h.do(http.MethodPost, path, "", strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded")
		if r.status != http.StatusNotFound || strings.Contains(string(r.body), "access_token") {
			t.Errorf("POST %s: %d %s, want 404", path, r.status, r.body)
		}
	}
	for _, path := range []string{"/api/v1/testplugin/ping/", "/API/v1/testplugin/ping", "/Health", "/health/"} {
		if r := h.get(path, ""); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.status)
		}
	}
	if r := h.get("/onboarding/", ""); r.status != http.StatusOK || r.header.Get("X-Ratelimit-Limit") != "10" {
		t.Errorf("GET /onboarding/ (the spec's spelling): %d on a budget of %s, want 200 on the sign-in budget", r.status, r.header.Get("X-Ratelimit-Limit"))
	}
	if r := formLogin(h, "wrong"); r.status != http.StatusUnauthorized || r.header.Get("X-Ratelimit-Limit") != "10" {
		t.Errorf("sign-in: %d on a budget of %s, want 401 on the sign-in budget", r.status, r.header.Get("X-Ratelimit-Limit"))
	}
	if r := h.get("/api/v1/testplugin/ping", ""); r.header.Get("X-Ratelimit-Limit") != "100" {
		t.Errorf("plugin route on a budget of %s, want 100", r.header.Get("X-Ratelimit-Limit"))
	}
}

// TestBrowserSignInOnTheSignInBudget: the browser's sign-in — the
// development form, the form that starts an identity-provider sign-in and
// the provider's return with a code — draws on the sign-in budget of 10
// with the API's: ten wrong attempts are answered, the 11th is a 429 with
// Retry-After, on each of them. Showing the sign-in page is not an attempt.
func TestBrowserSignInOnTheSignInBudget(t *testing.T) {
	h := startHost(t, hostOpts{})
	b := newBrowser(h)
	token := func(r response) string {
		t.Helper()
		m := csrfFieldRE.FindStringSubmatch(string(r.body))
		if m == nil {
			t.Fatalf("no sign-in form in %d %s", r.status, r.body)
		}
		return m[1]
	}
	page := b.do(http.MethodGet, "/login", nil)
	if page.header.Get("X-Ratelimit-Limit") != "600" {
		t.Errorf("the sign-in page on a budget of %s, want the page views' 600", page.header.Get("X-Ratelimit-Limit"))
	}
	csrf := token(page)
	attempts := []func() response{
		func() response {
			return b.do(http.MethodPost, "/auth/dev-login", url.Values{"username": {"admin@steward.local"}, "password": {"wrong"}, "csrf_token": {csrf}})
		},
		func() response {
			return b.do(http.MethodPost, "/auth/login", url.Values{"login_hint": {"nobody@example.com"}, "csrf_token": {csrf}})
		},
		func() response { return b.do(http.MethodGet, "/login?code=stolen&state=guessed", nil) },
	}
	for i := range 10 {
		r := attempts[i%len(attempts)]()
		if r.status == http.StatusTooManyRequests || r.header.Get("X-Ratelimit-Limit") != "10" || r.header.Get("X-Ratelimit-Remaining") != strconv.Itoa(9-i) {
			t.Fatalf("attempt %d: %d on a budget of %s with %s left", i+1, r.status, r.header.Get("X-Ratelimit-Limit"), r.header.Get("X-Ratelimit-Remaining"))
		}
		if r.status != http.StatusSeeOther {
			csrf = token(r)
		}
	}
	for i, attempt := range attempts {
		r := attempt()
		if r.status != http.StatusTooManyRequests {
			t.Errorf("attempt %d past the budget: %d %.200s, want 429", 11+i, r.status, r.body)
			continue
		}
		expectLimited(t, r)
	}
	// The right password is refused too until the minute is over.
	expectLimited(t, b.do(http.MethodPost, "/auth/dev-login", url.Values{"username": {"admin@steward.local"}, "password": {"steward-dev"}, "csrf_token": {csrf}}))
}
