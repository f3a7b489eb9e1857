package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store/storetest"
)

// TestHelpIsNotAnError: every command answers --help, -h or help with its
// usage and success, before touching configuration, a database or a port.
func TestHelpIsNotAnError(t *testing.T) {
	t.Setenv("STEWARD_DATABASE_URL", "postgres://nowhere.invalid:1/none")
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"serve", "-h"},
		{"sim", "--help"}, {"sim", "--world", "x.json", "-h"},
		{"migrate", "--help"}, {"migrate", "up", "--help"},
		{"plugins", "--help"}, {"plugins", "list", "-h"}, {"plugins", "reload", "--help"},
		{"apikey", "--help"}, {"apikey", "create", "--help"}, {"apikey", "help"},
		{"version", "--help"},
	} {
		var out bytes.Buffer
		if err := run(args, &out); err != nil {
			t.Errorf("steward %s: %v", strings.Join(args, " "), err)
		}
		if !strings.HasPrefix(out.String(), "usage:") {
			t.Errorf("steward %s printed %q, want its usage", strings.Join(args, " "), out.String())
		}
	}
}

func TestUnknownCommandIsAnError(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"serv"}, &out); err == nil || !strings.Contains(err.Error(), `unknown command "serv"`) {
		t.Errorf("unknown command: %v", err)
	}
	if err := run(nil, &out); err == nil {
		t.Error("no command: want an error")
	}
}

// TestAnnounceChange: the apikey command tells running hosts through
// Redis, and an unreachable Redis is reported without its password.
func TestAnnounceChange(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	ctx := context.Background()
	if err := announceChange(ctx, config.Config{RedisURL: redisURL, RedisPrefix: prefix}); err != nil {
		t.Fatal(err)
	}
	if n, err := storetest.RedisClient(t).Exists(ctx, prefix+":auth:changed").Result(); err != nil || n != 1 {
		t.Errorf("no change token under the prefix: %d, %v", n, err)
	}

	err := announceChange(ctx, config.Config{RedisURL: "redis://:s3cret-canary@127.0.0.1:1/0", RedisPrefix: prefix})
	if err == nil || strings.Contains(err.Error(), "s3cret-canary") || !strings.Contains(err.Error(), "STEWARD_REDIS_URL") {
		t.Errorf("announcing to an unreachable Redis: %v", err)
	}
}
