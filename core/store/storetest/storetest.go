// Package storetest gives tests real, isolated databases and Redis key
// spaces.
//
// Tests run against a real SQLite file and a real PostgreSQL server rather
// than fakes, so dialect differences surface in tests. PostgreSQL and Redis
// are located through environment variables:
//
//	STEWARD_TEST_POSTGRES_URL      default postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	STEWARD_TEST_REDIS_URL         default redis://127.0.0.1:6379/0
//	STEWARD_TEST_REQUIRE_SERVICES  "1" turns "service unreachable" from a skip into a failure
//
// Without STEWARD_TEST_REQUIRE_SERVICES a developer without the services
// still gets a green SQLite-only run; a run that must cover every backend
// sets it so that a missing service cannot pass silently.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

const (
	defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	defaultRedisURL    = "redis://127.0.0.1:6379/0"

	// connectTimeout keeps a missing service from stalling the suite.
	connectTimeout = 5 * time.Second
)

// Dialects lists the dialects to run table tests against.
func Dialects() []string {
	return []string{store.DialectSQLite, store.DialectPostgres}
}

// Open returns an empty database of the given dialect, private to t and
// closed when t ends.
//
// For "sqlite" it is a new file in t.TempDir(). For "postgres" it is a
// freshly created schema with a unique name, selected through the
// connection's search_path and dropped with everything in it when t ends.
func Open(t testing.TB, dialect string) *bun.DB {
	t.Helper()
	switch dialect {
	case store.DialectSQLite:
		return openSQLite(t)
	case store.DialectPostgres:
		return openPostgres(t)
	default:
		t.Fatalf("storetest: unknown dialect %q", dialect)
		return nil
	}
}

func openSQLite(t testing.TB) *bun.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "steward.db"), store.Options{})
	if err != nil {
		t.Fatalf("storetest: open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func openPostgres(t testing.TB) *bun.DB {
	t.Helper()
	rawURL, schema := newSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	db, err := store.Open(ctx, rawURL, store.Options{SearchPath: schema})
	if err != nil {
		t.Fatalf("storetest: open postgres schema %s: %v", schema, err)
	}
	// Cleanups run last-in first-out, so this closes before the schema drop.
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// PostgresURL returns a connection URL whose search_path is a fresh schema
// dropped when the test ends, for handing to another process (a host under
// test). It skips or fails like Open when PostgreSQL is unreachable.
func PostgresURL(t testing.TB) string {
	t.Helper()
	rawURL, schema := newSchema(t)
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// newSchema creates a uniquely named schema and drops it (CASCADE) when
// the test ends.
func newSchema(t testing.TB) (rawURL, schema string) {
	t.Helper()
	rawURL = envOr("STEWARD_TEST_POSTGRES_URL", defaultPostgresURL)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()

	admin, err := store.Open(ctx, rawURL, store.Options{MaxOpenConns: 1})
	if err != nil {
		unavailable(t, "PostgreSQL", "STEWARD_TEST_POSTGRES_URL", rawURL, err)
	}
	schema = "steward_test_" + randomHex()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA ?", bun.Ident(schema)); err != nil {
		_ = admin.Close()
		t.Fatalf("storetest: create schema: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		if _, err := admin.ExecContext(dctx, "DROP SCHEMA IF EXISTS ? CASCADE", bun.Ident(schema)); err != nil {
			t.Errorf("storetest: drop schema %s: %v", schema, err)
		}
	})
	return rawURL, schema
}

// RedisURL returns the URL of the test Redis server after checking that it
// answers, skipping t (or failing it when services are required) otherwise.
func RedisURL(t testing.TB) string {
	t.Helper()
	rawURL := envOr("STEWARD_TEST_REDIS_URL", defaultRedisURL)
	client, err := redisClient(rawURL)
	if err != nil {
		t.Fatalf("storetest: STEWARD_TEST_REDIS_URL: %v", err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		unavailable(t, "Redis", "STEWARD_TEST_REDIS_URL", rawURL, err)
	}
	return rawURL
}

// RedisClient returns a client of the test Redis server, closed when t
// ends, skipping t like RedisURL when there is none.
func RedisClient(t testing.TB) *redis.Client {
	t.Helper()
	client, err := redisClient(RedisURL(t))
	if err != nil {
		t.Fatalf("storetest: STEWARD_TEST_REDIS_URL: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// RedisUserURL creates a user of the test Redis server that signs in with
// password, deleted when t ends, and returns the server's URL signing in as
// it: for tests of what a Redis password must never reach.
func RedisUserURL(t testing.TB, password string) string {
	t.Helper()
	admin := RedisClient(t)
	name := "steward_test_" + randomHex()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := admin.Do(ctx, "ACL", "SETUSER", name, "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("storetest: create Redis user: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		if err := admin.Do(ctx, "ACL", "DELUSER", name).Err(); err != nil {
			t.Errorf("storetest: delete Redis user: %v", err)
		}
	})
	u, err := url.Parse(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, password)
	return u.String()
}

// RedisPrefix returns a key prefix unique to t, for use as a namespace on
// the Redis server at redisURL. Keys starting with it are deleted when t
// ends, so tests neither see nor leave behind each other's keys.
func RedisPrefix(t testing.TB, redisURL string) string {
	t.Helper()
	prefix := "steward_test_" + randomHex()
	t.Cleanup(func() {
		client, err := redisClient(redisURL)
		if err != nil {
			t.Errorf("storetest: redis cleanup: %v", err)
			return
		}
		defer client.Close()

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := client.Unlink(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("storetest: redis cleanup of %s: %v", prefix, err)
				return
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("storetest: redis cleanup of %s: %v", prefix, err)
		}
	})
	return prefix
}

func redisClient(rawURL string) (*redis.Client, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.DialTimeout = connectTimeout
	return redis.NewClient(opts), nil
}

func unavailable(t testing.TB, service, envVar, rawURL string, err error) {
	t.Helper()
	msg := fmt.Sprintf("storetest: %s not reachable at %s (set %s to point elsewhere): %v",
		service, redact(rawURL), envVar, err)
	if os.Getenv("STEWARD_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipping (set STEWARD_TEST_REQUIRE_SERVICES=1 to fail instead)")
}

func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// randomHex yields lower-case names, which PostgreSQL needs unquoted in a
// search_path.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails; it aborts the program instead
	return hex.EncodeToString(b[:])
}
