package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/logsink"
)

// secret is the Redis password of these tests; no error, log line or
// response may contain it.
const secret = "s3cret-canary"

func redisConfig(t *testing.T, redisURL string) config.Config {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		"STEWARD_DATA_DIR":      dir,
		"STEWARD_PLUGINS_FILE":  filepath.Join(dir, "none.hcl"),
		"STEWARD_SIM_BOOTSTRAP": "false",
		"STEWARD_ACCESS_LOG":    "false",
		"STEWARD_REDIS_URL":     redisURL,
		"STEWARD_REDIS_PREFIX":  storetest.RedisPrefix(t, storetest.RedisURL(t)),
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStartWithUnreachableRedisNeverEchoesPassword(t *testing.T) {
	var logs logsink.Buffer
	// Port 1 on loopback refuses at once.
	cfg := redisConfig(t, "redis://:"+secret+"@127.0.0.1:1/0")
	h, err := Start(context.Background(), cfg, Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	if err == nil {
		h.Close()
		t.Fatal("the host started without its Redis")
	}
	if !strings.Contains(err.Error(), "STEWARD_REDIS_URL") {
		t.Errorf("the error does not name the setting: %v", err)
	}
	for what, text := range map[string]string{"error": err.Error(), "log": logs.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s repeats the Redis password: %s", what, text)
		}
	}
}

// TestRedisOutage: one client serves every part; while Redis is away the
// host answers by redisconn's failure policy — bearer tokens 503 with
// Retry-After, anonymous requests through with their rate-limit headers,
// health degraded — logs the outage once, and repeats the password nowhere.
func TestRedisOutage(t *testing.T) {
	proxy := storetest.NewRedisProxy(t, storetest.RedisUserURL(t, secret))
	var logs logsink.Buffer
	h, err := Start(context.Background(), redisConfig(t, proxy.URL), Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	// Only the host reaches Redis through the proxy, so every connection
	// the proxy forwarded must be one of the shared client's.
	eventually(t, "every connection of the host is the shared client's", func() bool {
		ps := h.redis.Client().PoolStats()
		return ps.TotalConns > 0 && proxy.Served() == int(ps.TotalConns+ps.StaleConns)
	})

	token := login(t, h)
	if resp, _ := call(t, h, http.MethodGet, "/api/v1/auth/me", token); resp.StatusCode != http.StatusOK {
		t.Fatalf("auth/me before the outage: %d", resp.StatusCode)
	}

	proxy.Cut()
	var bodies []string
	eventually(t, "a bearer token is refused with 503", func() bool {
		resp, body := call(t, h, http.MethodGet, "/api/v1/auth/me", token)
		bodies = append(bodies, body)
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
	})
	resp, body := call(t, h, http.MethodPost, "/api/v1/auth/logout", token)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("logout during the outage: %d %s", resp.StatusCode, body)
	}
	bodies = append(bodies, body)

	resp, body = call(t, h, http.MethodGet, "/api/v1/health/detailed", "")
	bodies = append(bodies, body)
	var detailed struct {
		Status     string         `json:"status"`
		Components map[string]any `json:"components"`
	}
	if err := json.Unmarshal([]byte(body), &detailed); err != nil {
		t.Fatalf("health: %v: %s", err, body)
	}
	if resp.StatusCode != http.StatusOK || detailed.Status != "degraded" || detailed.Components["redis"] != "unhealthy" || detailed.Components["cache"] != "degraded" {
		t.Errorf("health during the outage: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Error("rate-limit headers missing while the limiter fails open")
	}
	_, metrics := call(t, h, http.MethodGet, "/metrics", "")
	if !strings.Contains(metrics, "steward_redis_up 0") {
		t.Error("steward_redis_up is not 0 during the outage")
	}
	resp, body = call(t, h, http.MethodGet, "/api/v1/auth/idp/login", "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "sign-in is unavailable") {
		t.Errorf("identity-provider sign-in during the outage: %d %s", resp.StatusCode, body)
	}
	bodies = append(bodies, body)
	if strings.Contains(logs.String(), "sign-in state") {
		t.Errorf("a sign-in refused for the outage is logged on its own:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "Redis is unreachable"); n != 1 {
		t.Errorf("the outage is logged %d times, want once:\n%s", n, logs.String())
	}

	proxy.Restore()
	eventually(t, "the token is accepted again", func() bool {
		resp, _ := call(t, h, http.MethodGet, "/api/v1/auth/me", token)
		return resp.StatusCode == http.StatusOK
	})
	for _, text := range append(bodies, logs.String()) {
		if strings.Contains(text, secret) {
			t.Fatalf("the Redis password appears in: %s", text)
		}
	}
}

func login(t *testing.T, h *Host) string {
	t.Helper()
	form := url.Values{"username": {h.Config.DevUsername}, "password": {h.Config.DevPassword}}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/auth/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := h.Server.App.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

func call(t *testing.T, h *Host, method, path, token string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.Server.App.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
