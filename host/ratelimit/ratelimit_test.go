package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"

	"github.com/stewardhq/steward/core/store/storetest"
)

// redisClient is a client of the test Redis, as the host builds it: one
// that honours context deadlines.
func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func mustNew(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func send(t *testing.T, app *fiber.App, method, path string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func headerInt(t *testing.T, resp *http.Response, name string) int64 {
	t.Helper()
	v := resp.Header.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("header %s = %q, want an integer", name, v)
	}
	return n
}

// byClientHeader keys requests by a header so one test can play several
// clients; every request made through app.Test comes from the same address.
func byClientHeader(c *fiber.Ctx) string { return "client:" + c.Get("X-Client") }

func authClass(c *fiber.Ctx) Class {
	if strings.HasPrefix(c.Path(), "/auth/") {
		return Auth
	}
	return Default
}

func costlyClass(c *fiber.Ctx) Class {
	if strings.HasPrefix(c.Path(), "/costly/") {
		return Costly
	}
	return Default
}

func TestHeadersOnEveryResponse(t *testing.T) {
	app := fiber.New(fiber.Config{
		ErrorHandler: func(c *fiber.Ctx, err error) error {
			code := fiber.StatusInternalServerError
			var fe *fiber.Error
			if errors.As(err, &fe) {
				code = fe.Code
			}
			c.Set(fiber.HeaderContentType, "application/problem+json")
			return c.Status(code).SendString(`{"title":"` + err.Error() + `"}`)
		},
	})
	app.Use(Middleware(mustNew(t, Config{}), MiddlewareOptions{}))
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/ok", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/fail", func(c *fiber.Ctx) error { return fiber.NewError(fiber.StatusConflict, "conflict") })
	app.Get("/boom", func(c *fiber.Ctx) error { return errors.New("boom") })
	app.Get("/replace", func(c *fiber.Ctx) error {
		// Stands in for a proxy that copies a whole upstream response.
		c.Response().Reset()
		return c.SendString("replaced")
	})

	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/ok", fiber.StatusOK, "ok"},
		{"/healthz", fiber.StatusOK, "ok"},
		{"/fail", fiber.StatusConflict, `{"title":"conflict"}`},
		{"/boom", fiber.StatusInternalServerError, `{"title":"boom"}`},
		{"/missing", fiber.StatusNotFound, `{"title":"Cannot GET /missing"}`},
		{"/replace", fiber.StatusOK, "replaced"},
	}
	for i, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			before := time.Now()
			resp := send(t, app, http.MethodGet, tt.path, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus || string(body) != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if got := headerInt(t, resp, HeaderLimit); got != DefaultPerMinute {
				t.Errorf("%s = %d, want %d", HeaderLimit, got, DefaultPerMinute)
			}
			if got, want := headerInt(t, resp, HeaderRemaining), int64(DefaultPerMinute-1-i); got != want {
				t.Errorf("%s = %d, want %d", HeaderRemaining, got, want)
			}
			reset := time.Unix(headerInt(t, resp, HeaderReset), 0)
			if !reset.After(before) || reset.After(before.Add(DefaultWindow+time.Second)) {
				t.Errorf("%s = %v, want within one window of %v", HeaderReset, reset, before)
			}
		})
	}
}

func TestDefaultBudgetExhausted(t *testing.T) {
	var handled atomic.Int64
	app := fiber.New()
	app.Use(Middleware(mustNew(t, Config{}), MiddlewareOptions{}))
	app.Get("/", func(c *fiber.Ctx) error {
		handled.Add(1)
		return c.SendStatus(fiber.StatusNoContent)
	})

	for i := 1; i <= DefaultPerMinute; i++ {
		resp := send(t, app, http.MethodGet, "/", nil)
		if resp.StatusCode != fiber.StatusNoContent {
			t.Fatalf("request %d: status %d, want 204", i, resp.StatusCode)
		}
	}
	resp := send(t, app, http.MethodGet, "/", nil)
	if resp.StatusCode != fiber.StatusTooManyRequests {
		t.Fatalf("request %d: status %d, want 429", DefaultPerMinute+1, resp.StatusCode)
	}
	if got := headerInt(t, resp, HeaderRemaining); got != 0 {
		t.Errorf("%s = %d, want 0", HeaderRemaining, got)
	}
	retry := headerInt(t, resp, fiber.HeaderRetryAfter)
	if retry < 1 || retry > int64((DefaultWindow+time.Second)/time.Second) {
		t.Errorf("Retry-After = %d, want 1..61", retry)
	}
	if ct := resp.Header.Get(fiber.HeaderContentType); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var p problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatalf("decode problem: %v", err)
	}
	want := problem{
		Type:   "about:blank",
		Title:  "Too Many Requests",
		Status: 429,
		Detail: "rate limit exceeded; retry after " + strconv.FormatInt(retry, 10) + " seconds",
	}
	if p != want {
		t.Errorf("problem = %+v, want %+v", p, want)
	}
	if got := handled.Load(); got != DefaultPerMinute {
		t.Errorf("handler ran %d times, want %d", got, DefaultPerMinute)
	}
}

func TestAuthBudgetIsSeparate(t *testing.T) {
	app := fiber.New()
	app.Use(Middleware(mustNew(t, Config{}), MiddlewareOptions{ClassOf: authClass}))
	app.Post("/auth/login", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })
	app.Get("/tenants", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	for i := 1; i <= DefaultAuthPerMinute; i++ {
		resp := send(t, app, http.MethodPost, "/auth/login", nil)
		if resp.StatusCode != fiber.StatusNoContent {
			t.Fatalf("login %d: status %d, want 204", i, resp.StatusCode)
		}
		if got := headerInt(t, resp, HeaderLimit); got != DefaultAuthPerMinute {
			t.Fatalf("login %d: %s = %d, want %d", i, HeaderLimit, got, DefaultAuthPerMinute)
		}
	}
	resp := send(t, app, http.MethodPost, "/auth/login", nil)
	if resp.StatusCode != fiber.StatusTooManyRequests {
		t.Fatalf("login %d: status %d, want 429", DefaultAuthPerMinute+1, resp.StatusCode)
	}

	resp = send(t, app, http.MethodGet, "/tenants", nil)
	if resp.StatusCode != fiber.StatusNoContent {
		t.Fatalf("default route after auth exhaustion: status %d, want 204", resp.StatusCode)
	}
	if got := headerInt(t, resp, HeaderRemaining); got != DefaultPerMinute-1 {
		t.Errorf("default %s = %d, want %d: auth requests must not spend the default budget", HeaderRemaining, got, DefaultPerMinute-1)
	}
}

// TestUIBudgetIsItsOwn: pages and fragments spend the UI budget alone, so
// a browser that has used all of it still has its API budget, and one that
// has used its API budget can still load its pages.
func TestUIBudgetIsItsOwn(t *testing.T) {
	l := mustNew(t, Config{DefaultPerMinute: 2, UIPerMinute: 3})
	ctx := context.Background()
	take := func(class Class, key string) Result {
		t.Helper()
		res, err := l.Take(ctx, class, key)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range 3 {
		if res := take(UI, "a"); !res.Allowed || res.Limit != 3 || res.Remaining != int64(2-i) {
			t.Fatalf("UI request %d: %+v", i+1, res)
		}
	}
	if res := take(UI, "a"); res.Allowed {
		t.Fatalf("a fourth UI request was allowed: %+v", res)
	}
	if res := take(Default, "a"); !res.Allowed || res.Remaining != 1 {
		t.Errorf("the API after the UI budget was spent: %+v", res)
	}
	take(Default, "b")
	take(Default, "b")
	if res := take(Default, "b"); res.Allowed {
		t.Fatalf("a third API request was allowed: %+v", res)
	}
	if res := take(UI, "b"); !res.Allowed || res.Remaining != 2 {
		t.Errorf("a page after the API budget was spent: %+v", res)
	}
	if d := mustNew(t, Config{}); d.classes[UI].Rate.Limit != DefaultUIPerMinute {
		t.Errorf("the UI budget defaults to %d", d.classes[UI].Rate.Limit)
	}
}

// TestCostlyBudgetNarrowsDefault: past the costly budget a costly route is
// 429 with Retry-After while ordinary routes still pass; every costly
// request, the refused one too, was also counted against the default
// budget.
func TestCostlyBudgetNarrowsDefault(t *testing.T) {
	const costly = 3
	var handled atomic.Int64
	app := fiber.New()
	app.Use(Middleware(mustNew(t, Config{CostlyPerMinute: costly}), MiddlewareOptions{ClassOf: costlyClass}))
	app.Post("/costly/dry-run", func(c *fiber.Ctx) error {
		handled.Add(1)
		return c.SendStatus(fiber.StatusOK)
	})
	app.Get("/tenants", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	for i := 1; i <= costly; i++ {
		resp := send(t, app, http.MethodPost, "/costly/dry-run", nil)
		if resp.StatusCode != fiber.StatusOK {
			t.Fatalf("costly request %d: status %d, want 200", i, resp.StatusCode)
		}
		if got := headerInt(t, resp, HeaderLimit); got != costly {
			t.Errorf("costly request %d: %s = %d, want %d", i, HeaderLimit, got, costly)
		}
		if got := headerInt(t, resp, HeaderRemaining); got != int64(costly-i) {
			t.Errorf("costly request %d: %s = %d, want %d", i, HeaderRemaining, got, costly-i)
		}
	}
	resp := send(t, app, http.MethodPost, "/costly/dry-run", nil)
	if resp.StatusCode != fiber.StatusTooManyRequests {
		t.Fatalf("costly request %d: status %d, want 429", costly+1, resp.StatusCode)
	}
	if retry := headerInt(t, resp, fiber.HeaderRetryAfter); retry < 1 || retry > int64((DefaultWindow+time.Second)/time.Second) {
		t.Errorf("Retry-After = %d, want 1..61", retry)
	}
	if headerInt(t, resp, HeaderLimit) != costly || headerInt(t, resp, HeaderRemaining) != 0 {
		t.Errorf("429 headers %v, want the costly budget's, spent", resp.Header)
	}
	if got := handled.Load(); got != costly {
		t.Errorf("handler ran %d times, want %d", got, costly)
	}

	resp = send(t, app, http.MethodGet, "/tenants", nil)
	if resp.StatusCode != fiber.StatusNoContent {
		t.Fatalf("default route after the costly budget is spent: status %d, want 204", resp.StatusCode)
	}
	if got, want := headerInt(t, resp, HeaderRemaining), int64(DefaultPerMinute-costly-2); got != want {
		t.Errorf("default %s = %d, want %d: each costly request spends the default budget too", HeaderRemaining, got, want)
	}
}

// TestCostlyHeadersFollowTheBindingBudget: when the default budget has
// fewer requests left than the costly one, the headers describe it, and a
// costly request it refuses takes nothing of the costly budget.
func TestCostlyHeadersFollowTheBindingBudget(t *testing.T) {
	l := mustNew(t, Config{DefaultPerMinute: 2, CostlyPerMinute: 5})
	app := fiber.New()
	app.Use(Middleware(l, MiddlewareOptions{ClassOf: costlyClass, KeyOf: byClientHeader}))
	app.Post("/costly/export", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })

	for i := 1; i <= 2; i++ {
		resp := send(t, app, http.MethodPost, "/costly/export", nil)
		if resp.StatusCode != fiber.StatusOK || headerInt(t, resp, HeaderLimit) != 2 || headerInt(t, resp, HeaderRemaining) != int64(2-i) {
			t.Fatalf("request %d: %d %v, want 200 with the default budget's headers", i, resp.StatusCode, resp.Header)
		}
	}
	resp := send(t, app, http.MethodPost, "/costly/export", nil)
	if resp.StatusCode != fiber.StatusTooManyRequests || headerInt(t, resp, HeaderLimit) != 2 || resp.Header.Get(fiber.HeaderRetryAfter) == "" {
		t.Fatalf("request 3: %d %v, want 429 from the default budget", resp.StatusCode, resp.Header)
	}
	res, err := l.Take(context.Background(), Costly, "client:") // the key of a request without X-Client
	if err != nil || res.Remaining != 5-3 {
		t.Errorf("costly budget after two allowed requests: %+v, %v; want 2 left", res, err)
	}
}

func TestKeysIsolateClients(t *testing.T) {
	app := fiber.New()
	app.Use(Middleware(mustNew(t, Config{DefaultPerMinute: 2}), MiddlewareOptions{KeyOf: byClientHeader}))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	alice := map[string]string{"X-Client": "alice"}
	bob := map[string]string{"X-Client": "bob"}
	for range 2 {
		send(t, app, http.MethodGet, "/", alice)
	}
	if resp := send(t, app, http.MethodGet, "/", alice); resp.StatusCode != fiber.StatusTooManyRequests {
		t.Fatalf("alice's third request: status %d, want 429", resp.StatusCode)
	}
	resp := send(t, app, http.MethodGet, "/", bob)
	if resp.StatusCode != fiber.StatusNoContent {
		t.Fatalf("bob's first request: status %d, want 204", resp.StatusCode)
	}
	if got := headerInt(t, resp, HeaderRemaining); got != 1 {
		t.Errorf("bob's %s = %d, want 1", HeaderRemaining, got)
	}
}

// TestBudgetReturnsAtReset checks that the advertised reset is honest: a
// client that waits until X-RateLimit-Reset gets a fresh budget.
func TestBudgetReturnsAtReset(t *testing.T) {
	l := mustNew(t, Config{DefaultPerMinute: 1, Window: 500 * time.Millisecond})
	ctx := context.Background()
	if res, err := l.Take(ctx, Default, "k"); err != nil || !res.Allowed {
		t.Fatalf("first take: %+v, %v", res, err)
	}
	res, err := l.Take(ctx, Default, "k")
	if err != nil || res.Allowed {
		t.Fatalf("second take: %+v, %v; want refused", res, err)
	}
	time.Sleep(time.Until(res.Reset))
	if res, err := l.Take(ctx, Default, "k"); err != nil || !res.Allowed || res.Remaining != 0 {
		t.Fatalf("take after reset: %+v, %v; want allowed with 0 remaining", res, err)
	}
}

func TestTakeUnknownClass(t *testing.T) {
	l := mustNew(t, Config{})
	if _, err := l.Take(context.Background(), Class(7), "k"); err == nil {
		t.Fatal("Take with an unknown class succeeded")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	unreachable := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = unreachable.Close() })
	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative default budget", Config{DefaultPerMinute: -1}},
		{"negative auth budget", Config{AuthPerMinute: -1}},
		{"negative costly budget", Config{CostlyPerMinute: -1}},
		{"negative UI budget", Config{UIPerMinute: -1}},
		{"negative window", Config{Window: -time.Second}},
		{"negative store timeout", Config{StoreTimeout: -time.Second}},
		{"unreachable redis", Config{Redis: unreachable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}

type failingStore struct{ err error }

func (s failingStore) Get(context.Context, string, limiter.Rate) (limiter.Context, error) {
	return limiter.Context{}, s.err
}

func (s failingStore) Peek(context.Context, string, limiter.Rate) (limiter.Context, error) {
	return limiter.Context{}, s.err
}

func (s failingStore) Reset(context.Context, string, limiter.Rate) (limiter.Context, error) {
	return limiter.Context{}, s.err
}

func (s failingStore) Increment(context.Context, string, int64, limiter.Rate) (limiter.Context, error) {
	return limiter.Context{}, s.err
}

func TestStoreFailureFailsOpen(t *testing.T) {
	storeErr := errors.New("connection refused")
	cfg, err := withDefaults(Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := newLimiter(failingStore{storeErr}, cfg)

	var reported []error
	app := fiber.New()
	app.Use(Middleware(l, MiddlewareOptions{
		ClassOf:      authClass,
		OnStoreError: func(_ *fiber.Ctx, err error) { reported = append(reported, err) },
	}))
	app.Post("/auth/login", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	before := time.Now()
	for i := 0; i <= DefaultAuthPerMinute; i++ {
		resp := send(t, app, http.MethodPost, "/auth/login", nil)
		if resp.StatusCode != fiber.StatusNoContent {
			t.Fatalf("request %d: status %d, want 204 while the store is down", i+1, resp.StatusCode)
		}
		if got := headerInt(t, resp, HeaderLimit); got != DefaultAuthPerMinute {
			t.Errorf("%s = %d, want %d", HeaderLimit, got, DefaultAuthPerMinute)
		}
		if got := headerInt(t, resp, HeaderRemaining); got != DefaultAuthPerMinute-1 {
			t.Errorf("%s = %d, want %d", HeaderRemaining, got, DefaultAuthPerMinute-1)
		}
		reset := time.Unix(headerInt(t, resp, HeaderReset), 0)
		if reset.Before(before.Add(DefaultWindow)) || reset.After(time.Now().Add(DefaultWindow+time.Second)) {
			t.Errorf("%s = %v, want one window from now", HeaderReset, reset)
		}
	}
	if len(reported) != DefaultAuthPerMinute+1 || !errors.Is(reported[0], storeErr) {
		t.Errorf("OnStoreError got %v, want %d reports of %v", reported, DefaultAuthPerMinute+1, storeErr)
	}
}

// TestRedisReplicasShareBudget: two replicas on one Redis spend one
// default budget and one costly budget per client.
func TestRedisReplicasShareBudget(t *testing.T) {
	url := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, url)
	const budget, costly = 6, 2

	newApp := func() *fiber.App {
		l := mustNew(t, Config{Redis: redisClient(t, url), Prefix: prefix, DefaultPerMinute: budget, CostlyPerMinute: costly})
		app := fiber.New()
		app.Use(Middleware(l, MiddlewareOptions{ClassOf: costlyClass, KeyOf: byClientHeader}))
		app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })
		app.Post("/costly/dry-run", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
		return app
	}
	replicas := []*fiber.App{newApp(), newApp()}
	alice := map[string]string{"X-Client": "alice"}

	for i := range budget {
		resp := send(t, replicas[i%2], http.MethodGet, "/", alice)
		if resp.StatusCode != fiber.StatusNoContent {
			t.Fatalf("request %d: status %d, want 204", i+1, resp.StatusCode)
		}
		if got, want := headerInt(t, resp, HeaderRemaining), int64(budget-1-i); got != want {
			t.Fatalf("request %d on replica %d: %s = %d, want %d", i+1, i%2, HeaderRemaining, got, want)
		}
	}
	for i, app := range replicas {
		resp := send(t, app, http.MethodGet, "/", alice)
		if resp.StatusCode != fiber.StatusTooManyRequests {
			t.Errorf("replica %d after shared budget spent: status %d, want 429", i, resp.StatusCode)
		}
		if resp.Header.Get(fiber.HeaderRetryAfter) == "" {
			t.Errorf("replica %d: 429 without Retry-After", i)
		}
	}
	if resp := send(t, replicas[1], http.MethodGet, "/", map[string]string{"X-Client": "bob"}); resp.StatusCode != fiber.StatusNoContent {
		t.Errorf("bob on the shared store: status %d, want 204", resp.StatusCode)
	}

	// Carol's costly requests, one on each replica, spend the costly
	// budget they share; then each replica refuses her the next one, but
	// not an ordinary request.
	carol := map[string]string{"X-Client": "carol"}
	for i := range costly {
		resp := send(t, replicas[i%2], http.MethodPost, "/costly/dry-run", carol)
		if resp.StatusCode != fiber.StatusOK || headerInt(t, resp, HeaderLimit) != costly || headerInt(t, resp, HeaderRemaining) != int64(costly-1-i) {
			t.Fatalf("carol's costly request %d on replica %d: %d %v", i+1, i%2, resp.StatusCode, resp.Header)
		}
	}
	for i, app := range replicas {
		resp := send(t, app, http.MethodPost, "/costly/dry-run", carol)
		if resp.StatusCode != fiber.StatusTooManyRequests || resp.Header.Get(fiber.HeaderRetryAfter) == "" {
			t.Errorf("replica %d after the shared costly budget is spent: %d, Retry-After %q; want 429 with one",
				i, resp.StatusCode, resp.Header.Get(fiber.HeaderRetryAfter))
		}
	}
	if resp := send(t, replicas[1], http.MethodGet, "/", carol); resp.StatusCode != fiber.StatusNoContent {
		t.Errorf("carol's ordinary request: status %d, want 204", resp.StatusCode)
	}
}

func TestRedisPrefixesAndClassesSeparateBudgets(t *testing.T) {
	url := storetest.RedisURL(t)
	ctx := context.Background()
	client := redisClient(t, url)
	a := mustNew(t, Config{Redis: client, Prefix: storetest.RedisPrefix(t, url), DefaultPerMinute: 1, AuthPerMinute: 1, CostlyPerMinute: 1})
	b := mustNew(t, Config{Redis: client, Prefix: storetest.RedisPrefix(t, url), DefaultPerMinute: 1, AuthPerMinute: 1, CostlyPerMinute: 1})

	takes := []struct {
		l           *Limiter
		class       Class
		wantAllowed bool
	}{
		{a, Default, true},
		{a, Default, false},
		{a, Auth, true},
		{a, Auth, false},
		{a, Costly, true},
		{a, Costly, false},
		{b, Default, true},
	}
	for i, tt := range takes {
		res, err := tt.l.Take(ctx, tt.class, "ip:10.0.0.1")
		if err != nil {
			t.Fatalf("take %d: %v", i, err)
		}
		if res.Allowed != tt.wantAllowed {
			t.Errorf("take %d (%s): allowed = %v, want %v", i, tt.class, res.Allowed, tt.wantAllowed)
		}
	}
}

func TestRedisFailureAfterStartFailsOpen(t *testing.T) {
	url := storetest.RedisURL(t)
	proxy := storetest.NewRedisProxy(t, url)
	l := mustNew(t, Config{Redis: redisClient(t, proxy.URL), Prefix: storetest.RedisPrefix(t, url)})
	proxy.Cut()
	var reported atomic.Int64
	app := fiber.New()
	app.Use(Middleware(l, MiddlewareOptions{OnStoreError: func(*fiber.Ctx, error) { reported.Add(1) }}))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	resp := send(t, app, http.MethodGet, "/", nil)
	if resp.StatusCode != fiber.StatusNoContent || resp.Header.Get(HeaderLimit) != "100" {
		t.Fatalf("status %d, %s %q; want 204 with limit 100", resp.StatusCode, HeaderLimit, resp.Header.Get(HeaderLimit))
	}
	if reported.Load() != 1 {
		t.Errorf("OnStoreError called %d times, want 1", reported.Load())
	}
}

func TestRetryAfterFrom(t *testing.T) {
	now := time.Unix(1_000, 0)
	tests := []struct {
		reset time.Time
		want  time.Duration
	}{
		{now.Add(30 * time.Second), 30 * time.Second},
		{now.Add(29*time.Second + time.Millisecond), 30 * time.Second},
		{now.Add(time.Millisecond), time.Second},
		{now, time.Second},
		{now.Add(-time.Second), time.Second},
	}
	for _, tt := range tests {
		if got := retryAfterFrom(tt.reset, now); got != tt.want {
			t.Errorf("retryAfterFrom(now+%v) = %v, want %v", tt.reset.Sub(now), got, tt.want)
		}
	}
}
