package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Env != Development || c.HTTPAddr != "127.0.0.1:8000" || c.Cloud != "sim" {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	if c.DatabaseURL != "sqlite://data/steward.db" {
		t.Fatalf("database url %q", c.DatabaseURL)
	}
	if c.RateLimitPerMinute != 100 || c.AuthRateLimitPerMinute != 10 || c.CostlyRateLimitPerMinute != 10 {
		t.Fatalf("rate limits %d/%d/%d", c.RateLimitPerMinute, c.AuthRateLimitPerMinute, c.CostlyRateLimitPerMinute)
	}
	if !c.DevLoginEnabled() {
		t.Fatal("dev login must be on in development")
	}
	if c.TLS() || c.DrainDelay != 0 || c.ShutdownGrace != 30*time.Second {
		t.Fatalf("TLS %v, drain delay %v, grace %v; want plain HTTP, no delay in development, 30s", c.TLS(), c.DrainDelay, c.ShutdownGrace)
	}
	if c.OIDC.AdminTenants != nil || c.OIDC.RegisteredOnly {
		t.Fatalf("OIDC admin tenants %v, registered only %v; want none (the host's default) and false", c.OIDC.AdminTenants, c.OIDC.RegisteredOnly)
	}
}

func TestOIDCAdminTenants(t *testing.T) {
	c, err := Load(env(map[string]string{"STEWARD_OIDC_ADMIN_TENANTS": " dir-a, dir-b,,dir-c ", "STEWARD_OIDC_REGISTERED_ONLY": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.OIDC.AdminTenants, "|") != "dir-a|dir-b|dir-c" || !c.OIDC.RegisteredOnly {
		t.Fatalf("admin tenants %q, registered only %v", c.OIDC.AdminTenants, c.OIDC.RegisteredOnly)
	}
}

func TestDebugAddr(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1:6060", "[::1]:6060", "localhost:0"} {
		c, err := Load(env(map[string]string{"STEWARD_DEBUG_ADDR": addr}))
		if err != nil || c.DebugAddr != addr {
			t.Errorf("STEWARD_DEBUG_ADDR=%q: %q, %v", addr, c.DebugAddr, err)
		}
	}
}

func TestCostlyRateLimit(t *testing.T) {
	c, err := Load(env(map[string]string{"STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE": "3"}))
	if err != nil || c.CostlyRateLimitPerMinute != 3 || c.RateLimitPerMinute != 100 {
		t.Fatalf("costly %d, default %d, %v; want 3 and 100", c.CostlyRateLimitPerMinute, c.RateLimitPerMinute, err)
	}
}

func TestUIRateLimit(t *testing.T) {
	if c, err := Load(env(nil)); err != nil || c.UIRateLimitPerMinute != 600 {
		t.Fatalf("default UI budget %d, %v; want 600", c.UIRateLimitPerMinute, err)
	}
	c, err := Load(env(map[string]string{"STEWARD_UI_RATE_LIMIT_PER_MINUTE": "5"}))
	if err != nil || c.UIRateLimitPerMinute != 5 || c.RateLimitPerMinute != 100 {
		t.Fatalf("UI %d, default %d, %v; want 5 and 100", c.UIRateLimitPerMinute, c.RateLimitPerMinute, err)
	}
}

func TestRefusals(t *testing.T) {
	secret := strings.Repeat("k", 32)
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"production without secret", map[string]string{"STEWARD_ENV": "production"}, "STEWARD_JWT_SECRET must be set"},
		{"staging short secret", map[string]string{"STEWARD_ENV": "staging", "STEWARD_JWT_SECRET": "short"}, "at least 32 bytes"},
		{"production with sim", map[string]string{"STEWARD_ENV": "production", "STEWARD_JWT_SECRET": secret, "STEWARD_CLOUD": "sim"}, "simulated cloud"},
		{"bad env", map[string]string{"STEWARD_ENV": "prod"}, "STEWARD_ENV must be"},
		{"bad cloud", map[string]string{"STEWARD_CLOUD": "aws"}, "STEWARD_CLOUD must be"},
		{"bad rate", map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "0"}, "STEWARD_RATE_LIMIT_PER_MINUTE"},
		{"zero UI rate", map[string]string{"STEWARD_UI_RATE_LIMIT_PER_MINUTE": "0"}, "STEWARD_UI_RATE_LIMIT_PER_MINUTE must be an integer of at least 1"},
		{"zero costly rate", map[string]string{"STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE": "0"}, "STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE must be an integer of at least 1"},
		{"costly rate not a number", map[string]string{"STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE": "ten"}, "STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE"},
		{"bad ttl", map[string]string{"STEWARD_ACCESS_TOKEN_TTL": "soon"}, "STEWARD_ACCESS_TOKEN_TTL"},
		{"bad registered-only switch", map[string]string{"STEWARD_OIDC_REGISTERED_ONLY": "yes"}, "STEWARD_OIDC_REGISTERED_ONLY"},
		{"oidc issuer without client", map[string]string{"STEWARD_OIDC_ISSUER": "https://idp.example/v2.0"}, "STEWARD_OIDC_CLIENT_ID"},
		{"oidc production without redirect", map[string]string{"STEWARD_ENV": "production", "STEWARD_JWT_SECRET": secret,
			"STEWARD_OIDC_ISSUER": "https://idp.example/v2.0", "STEWARD_OIDC_CLIENT_ID": "app"}, "STEWARD_OIDC_REDIRECT_URL"},
		{"redis URL that does not parse", map[string]string{"STEWARD_REDIS_URL": "redis://:hunter2@127.0.0.1:port/0"}, "STEWARD_REDIS_URL must be a URL"},
		{"TLS certificate without key", map[string]string{"STEWARD_TLS_CERT_FILE": "/etc/steward/tls.crt"}, "STEWARD_TLS_CERT_FILE and STEWARD_TLS_KEY_FILE must be set together"},
		{"TLS key without certificate", map[string]string{"STEWARD_TLS_KEY_FILE": "/etc/steward/tls.key"}, "must be set together"},
		{"bad grace", map[string]string{"STEWARD_SHUTDOWN_GRACE": "-1s"}, "STEWARD_SHUTDOWN_GRACE must be a duration"},
		{"bad drain delay", map[string]string{"STEWARD_DRAIN_DELAY": "a while"}, "STEWARD_DRAIN_DELAY must be a duration"},
		{"debug address without a port", map[string]string{"STEWARD_DEBUG_ADDR": "127.0.0.1"}, "STEWARD_DEBUG_ADDR must be host:port"},
		{"debug address on every interface", map[string]string{"STEWARD_DEBUG_ADDR": ":6060"}, "STEWARD_DEBUG_ADDR must be on a loopback address"},
		{"debug address on a public interface", map[string]string{"STEWARD_DEBUG_ADDR": "10.0.0.5:6060"}, "its profiles are unauthenticated"},
		{"redis URL of another scheme", map[string]string{"STEWARD_REDIS_URL": "http://:hunter2@127.0.0.1:6379/0"}, "STEWARD_REDIS_URL must start with redis://"},
		{"zero notify poll interval", map[string]string{"STEWARD_NOTIFY_POLL_INTERVAL": "0s"}, "STEWARD_NOTIFY_POLL_INTERVAL must be a positive duration"},
		{"bad notify timeout", map[string]string{"STEWARD_NOTIFY_TIMEOUT": "ten"}, "STEWARD_NOTIFY_TIMEOUT must be a positive duration"},
		{"notify retry min above max", map[string]string{"STEWARD_NOTIFY_RETRY_MIN": "2h"}, "STEWARD_NOTIFY_RETRY_MIN (2h0m0s) must not exceed STEWARD_NOTIFY_RETRY_MAX (1h0m0s)"},
		{"zero notify attempts", map[string]string{"STEWARD_NOTIFY_MAX_ATTEMPTS": "0"}, "STEWARD_NOTIFY_MAX_ATTEMPTS must be an integer of at least 1"},
		{"bad private networks switch", map[string]string{"STEWARD_NOTIFY_ALLOW_PRIVATE_NETWORKS": "yes"}, "STEWARD_NOTIFY_ALLOW_PRIVATE_NETWORKS must be true or false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error must be one line: %q", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error repeats a password: %q", err)
			}
		})
	}
}

func TestProductionAccepted(t *testing.T) {
	c, err := Load(env(map[string]string{"STEWARD_ENV": "production", "STEWARD_JWT_SECRET": strings.Repeat("k", 32)}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DrainDelay != 5*time.Second {
		t.Fatalf("drain delay %v outside development; want 5s", c.DrainDelay)
	}
	if c.Cloud != "azure" || c.DevLoginEnabled() {
		t.Fatalf("production must default to azure without dev login: %+v", c)
	}
	if c.Notify.AllowPrivateNetworks {
		t.Fatal("production must refuse notification channels on private networks by default")
	}
}

func TestNotifyDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := NotifyConfig{PollInterval: 5 * time.Second, RetryMin: 30 * time.Second, RetryMax: time.Hour, MaxAttempts: 10, Timeout: 10 * time.Second, AllowPrivateNetworks: true}
	if c.Notify != want {
		t.Fatalf("notify %+v; want %+v", c.Notify, want)
	}
	c, err = Load(env(map[string]string{"STEWARD_NOTIFY_POLL_INTERVAL": "1s", "STEWARD_NOTIFY_RETRY_MIN": "1s", "STEWARD_NOTIFY_RETRY_MAX": "1s",
		"STEWARD_NOTIFY_MAX_ATTEMPTS": "3", "STEWARD_NOTIFY_ALLOW_PRIVATE_NETWORKS": "false", "STEWARD_NOTIFY_CA_FILE": "/etc/steward/relay-ca.pem"}))
	if err != nil {
		t.Fatal(err)
	}
	want = NotifyConfig{PollInterval: time.Second, RetryMin: time.Second, RetryMax: time.Second, MaxAttempts: 3, Timeout: 10 * time.Second, CAFile: "/etc/steward/relay-ca.pem"}
	if c.Notify != want {
		t.Fatalf("notify %+v; want %+v", c.Notify, want)
	}
}
