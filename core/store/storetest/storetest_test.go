package storetest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stewardhq/steward/core/store/storetest"
)

func TestUnreachableServicesSkip(t *testing.T) {
	t.Setenv("STEWARD_TEST_REQUIRE_SERVICES", "")
	// Port 1 on loopback refuses at once.
	t.Setenv("STEWARD_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
	t.Setenv("STEWARD_TEST_REDIS_URL", "redis://127.0.0.1:1/0")

	for name, use := range map[string]func(testing.TB){
		"postgres": func(t testing.TB) { storetest.Open(t, "postgres") },
		"redis":    func(t testing.TB) { storetest.RedisURL(t) },
	} {
		var inner *testing.T
		t.Run(name, func(t *testing.T) {
			inner = t
			use(t)
		})
		if !inner.Skipped() {
			t.Errorf("%s: unreachable service did not skip the test", name)
		}
	}
}

func TestPostgresSchemaIsPrivateAndDropped(t *testing.T) {
	observer := storetest.Open(t, "postgres")
	ctx := context.Background()

	var schemas [2]string
	for i := range schemas {
		t.Run("user", func(t *testing.T) {
			db := storetest.Open(t, "postgres")
			if err := db.NewRaw("SELECT current_schema()").Scan(ctx, &schemas[i]); err != nil {
				t.Fatal(err)
			}
		})
	}
	if schemas[0] == schemas[1] {
		t.Errorf("two tests shared schema %s", schemas[0])
	}
	for _, s := range schemas {
		var n int
		if err := observer.NewRaw("SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", s).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("schema %s still exists after its test ended", s)
		}
	}
}

func TestRedisPrefixIsCleanedUp(t *testing.T) {
	url := storetest.RedisURL(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ctx := context.Background()

	var prefixes [2]string
	for i := range prefixes {
		t.Run("user", func(t *testing.T) {
			prefixes[i] = storetest.RedisPrefix(t, url)
			if err := client.Set(ctx, prefixes[i]+":k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if prefixes[0] == prefixes[1] {
		t.Errorf("two tests got the same prefix %s", prefixes[0])
	}
	for _, p := range prefixes {
		if n, err := client.Exists(ctx, p+":k").Result(); err != nil || n != 0 {
			t.Errorf("key under %s survived its test (exists=%d, err=%v)", p, n, err)
		}
	}
}
