package cache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/core/store/storetest"
)

// backends runs fn once per backend, each with a fresh cache.
func backends(t *testing.T, fn func(t *testing.T, newCache func() cache.Cache)) {
	t.Run(cache.BackendMemory, func(t *testing.T) {
		fn(t, func() cache.Cache {
			c, err := cache.New(nil, "steward")
			if err != nil {
				t.Fatalf("New memory: %v", err)
			}
			return c
		})
	})
	t.Run(cache.BackendRedis, func(t *testing.T) {
		client := storetest.RedisClient(t)
		fn(t, func() cache.Cache {
			c, err := cache.New(client, storetest.RedisPrefix(t, storetest.RedisURL(t)))
			if err != nil {
				t.Fatalf("New redis: %v", err)
			}
			return c
		})
	})
}

func mustSet(t *testing.T, c cache.Cache, key, val string, ttl time.Duration) {
	t.Helper()
	if err := c.Set(context.Background(), key, []byte(val), ttl); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

// lookup returns the value and presence of key, failing t on error.
func lookup(t *testing.T, c cache.Cache, key string) (string, bool) {
	t.Helper()
	val, ok, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(val), ok
}

func TestGetSetDelete(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		ctx := context.Background()

		if _, ok := lookup(t, c, "k"); ok {
			t.Fatal("empty cache reported a hit")
		}
		mustSet(t, c, "k", "v1", time.Minute)
		if got, ok := lookup(t, c, "k"); !ok || got != "v1" {
			t.Fatalf("Get after Set = %q, %v; want v1, true", got, ok)
		}
		mustSet(t, c, "k", "v2", time.Minute)
		if got, _ := lookup(t, c, "k"); got != "v2" {
			t.Errorf("Get after overwrite = %q, want v2", got)
		}

		if err := c.Delete(ctx, "k"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, ok := lookup(t, c, "k"); ok {
			t.Error("Get after Delete reported a hit")
		}
		if err := c.Delete(ctx, "never-set"); err != nil {
			t.Errorf("Delete of a missing key: %v", err)
		}

		mustSet(t, c, "empty", "", time.Minute)
		if got, ok := lookup(t, c, "empty"); !ok || got != "" {
			t.Errorf("empty value = %q, %v; want a hit with no bytes", got, ok)
		}
	})
}

func TestValuesAreNotAliased(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		ctx := context.Background()
		buf := []byte("original")
		if err := c.Set(ctx, "k", buf, time.Minute); err != nil {
			t.Fatal(err)
		}
		copy(buf, "CHANGED!")
		got, _, err := c.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		copy(got, "CHANGED!")
		if again, _ := lookup(t, c, "k"); again != "original" {
			t.Errorf("cached value became %q after callers modified their slices", again)
		}
	})
}

func TestExpiry(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		const ttl = 500 * time.Millisecond
		mustSet(t, c, "short", "v", ttl)
		mustSet(t, c, "forever", "v", 0)
		mustSet(t, c, "reset", "v", ttl)
		// A negative TTL must clear the earlier expiry, not keep it.
		mustSet(t, c, "reset", "v", -time.Second)

		time.Sleep(ttl * 6 / 10)
		// Reading must not extend the entry's life: were it to, the entry
		// would outlive the check below.
		if _, ok := lookup(t, c, "short"); !ok {
			t.Fatal("entry expired before its TTL")
		}
		time.Sleep(ttl * 6 / 10)

		if _, ok := lookup(t, c, "short"); ok {
			t.Error("entry still present after its TTL")
		}
		if _, ok := lookup(t, c, "forever"); !ok {
			t.Error("entry with zero TTL expired")
		}
		if _, ok := lookup(t, c, "reset"); !ok {
			t.Error("entry re-set with a negative TTL kept its old expiry")
		}
	})
}

func TestDeletePrefix(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		ctx := context.Background()
		keys := []string{"preflight:t1", "preflight:t2", "preflights", "other:t1", "glob*key", "globXkey"}
		for _, k := range keys {
			mustSet(t, c, k, "v", time.Minute)
		}

		if err := c.DeletePrefix(ctx, "preflight:"); err != nil {
			t.Fatalf("DeletePrefix: %v", err)
		}
		// Glob characters in the prefix are literal.
		if err := c.DeletePrefix(ctx, "glob*"); err != nil {
			t.Fatalf("DeletePrefix: %v", err)
		}

		wantGone := map[string]bool{"preflight:t1": true, "preflight:t2": true, "glob*key": true}
		for _, k := range keys {
			_, ok := lookup(t, c, k)
			if ok == wantGone[k] {
				t.Errorf("after DeletePrefix, %q present = %v, want %v", k, ok, !wantGone[k])
			}
		}

		if err := c.DeletePrefix(ctx, ""); err != nil {
			t.Fatalf("DeletePrefix(\"\"): %v", err)
		}
		for _, k := range keys {
			if _, ok := lookup(t, c, k); ok {
				t.Errorf("%q survived clearing the whole namespace", k)
			}
		}
	})
}

func TestDeletePrefixManyKeys(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		// More keys than one SCAN batch, so the cursor loop must continue.
		const n = 1200
		for i := range n {
			mustSet(t, c, fmt.Sprintf("bulk:%04d", i), "v", time.Minute)
		}
		if err := c.DeletePrefix(context.Background(), "bulk:"); err != nil {
			t.Fatalf("DeletePrefix: %v", err)
		}
		for i := range n {
			if _, ok := lookup(t, c, fmt.Sprintf("bulk:%04d", i)); ok {
				t.Fatalf("bulk:%04d survived DeletePrefix", i)
			}
		}
	})
}

func TestStats(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		backend := t.Name()[strings.LastIndex(t.Name(), "/")+1:]

		if got := c.Stats(); got != (cache.Stats{Backend: backend}) {
			t.Errorf("fresh Stats = %+v, want zero figures for %s", got, backend)
		}

		mustSet(t, c, "k", "v", time.Minute)
		lookup(t, c, "k")
		lookup(t, c, "k")
		lookup(t, c, "k")
		lookup(t, c, "missing")

		want := cache.Stats{Backend: backend, Hits: 3, Misses: 1, HitRatePercent: 75}
		if got := c.Stats(); got != want {
			t.Errorf("Stats = %+v, want %+v", got, want)
		}
	})
}

func TestStatsUnderConcurrency(t *testing.T) {
	backends(t, func(t *testing.T, newCache func() cache.Cache) {
		c := newCache()
		mustSet(t, c, "k", "v", time.Minute)
		const workers, each = 8, 50
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					key := "k"
					if (w+i)%2 == 0 {
						key = "missing"
					}
					if _, _, err := c.Get(context.Background(), key); err != nil {
						t.Errorf("Get: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		st := c.Stats()
		if st.Hits+st.Misses != workers*each || st.Hits != workers*each/2 {
			t.Errorf("Stats = %+v, want %d hits and %d misses", st, workers*each/2, workers*each/2)
		}
	})
}

func TestRedisNamespacesAreIsolated(t *testing.T) {
	url := storetest.RedisURL(t)
	client := storetest.RedisClient(t)
	newCache := func(ns string) cache.Cache {
		c, err := cache.New(client, ns)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return c
	}
	a := newCache(storetest.RedisPrefix(t, url))
	b := newCache(storetest.RedisPrefix(t, url))

	mustSet(t, a, "k", "from-a", time.Minute)
	if _, ok := lookup(t, b, "k"); ok {
		t.Fatal("a key set in one namespace is visible in another")
	}
	mustSet(t, b, "k", "from-b", time.Minute)
	if err := b.DeletePrefix(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if got, ok := lookup(t, a, "k"); !ok || got != "from-a" {
		t.Errorf("clearing one namespace affected another: %q, %v", got, ok)
	}
}

func TestMemoryIsBounded(t *testing.T) {
	c, err := cache.New(nil, "steward")
	if err != nil {
		t.Fatal(err)
	}

	// The least recently used entry gives way once the entry bound is hit.
	mustSet(t, c, "first", "v", 0)
	for i := range 10_000 {
		mustSet(t, c, fmt.Sprintf("k%d", i), "v", 0)
	}
	if _, ok := lookup(t, c, "first"); ok {
		t.Error("cache grew past its entry bound")
	}

	// A value larger than the whole cache is not stored, and does not leave
	// the previous value for its key behind either.
	mustSet(t, c, "big", "small", 0)
	if err := c.Set(context.Background(), "big", make([]byte, 64<<20+1), 0); err != nil {
		t.Fatalf("Set oversized: %v", err)
	}
	if _, ok := lookup(t, c, "big"); ok {
		t.Error("oversized value (or the one it replaced) is still served")
	}
	if _, ok := lookup(t, c, "k9999"); !ok {
		t.Error("an oversized Set evicted unrelated entries")
	}
}

// TestNewNeedsNamespace: a namespace is required with and without Redis,
// so the mistake shows before a deployment grows one.
func TestNewNeedsNamespace(t *testing.T) {
	if _, err := cache.New(nil, ""); err == nil || !strings.Contains(err.Error(), "namespace must not be empty") {
		t.Errorf("memory without namespace: err = %v", err)
	}
	if _, err := cache.New(storetest.RedisClient(t), ""); err == nil || !strings.Contains(err.Error(), "namespace must not be empty") {
		t.Errorf("redis without namespace: err = %v", err)
	}
}
