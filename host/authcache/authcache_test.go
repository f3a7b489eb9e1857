package authcache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/redisconn"
)

func local(t *testing.T) *Changes {
	t.Helper()
	return New(nil, "", hclog.NewNullLogger())
}

// client is a client of the Redis at redisURL built as the host builds its
// own, closed when t ends.
func client(t *testing.T, redisURL string) *redis.Client {
	t.Helper()
	opts, _, err := redisconn.Options(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// shared is one replica's Changes on its own client of the Redis at
// redisURL.
func shared(t *testing.T, redisURL, prefix string) *Changes {
	t.Helper()
	c := New(client(t, redisURL), prefix, hclog.NewNullLogger())
	t.Cleanup(c.Close)
	return c
}

// loader counts its calls and answers the value it holds.
type loader struct {
	mu    sync.Mutex
	value string
	calls int
}

func (l *loader) set(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.value = v
}

func (l *loader) load() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	return l.value, nil
}

func mustLoad(t *testing.T, c *Cache[string, string], key string, l *loader) string {
	t.Helper()
	v, err := c.Load(key, l.load)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLocalChangeDropsEntries(t *testing.T) {
	ch := local(t)
	c := NewCache[string, string](ch, 10)
	l := &loader{value: "old"}
	mustLoad(t, c, "k", l)
	if v := mustLoad(t, c, "k", l); v != "old" || l.calls != 1 {
		t.Fatalf("second load = %q after %d reads, want the cached value after one", v, l.calls)
	}
	l.set("new")
	ch.Changed(context.Background())
	if v, ok := c.Get("k"); ok {
		t.Fatalf("after a change the cache still serves %q", v)
	}
	if v := mustLoad(t, c, "k", l); v != "new" || l.calls != 2 {
		t.Fatalf("load after a change = %q after %d reads, want new after 2", v, l.calls)
	}
}

func TestLocalEntriesExpire(t *testing.T) {
	c := NewCache[string, string](local(t), 10)
	l := &loader{value: "old"}
	mustLoad(t, c, "k", l)
	l.set("changed elsewhere")
	if v := mustLoad(t, c, "k", l); v != "old" {
		t.Fatalf("within LocalTTL the cache reads again: %q", v)
	}
	time.Sleep(LocalTTL + 50*time.Millisecond)
	if v := mustLoad(t, c, "k", l); v != "changed elsewhere" {
		t.Fatalf("after LocalTTL the cache serves %q", v)
	}
}

// TestChangeDuringLoad: a load that read the old state while a change was
// committed must not leave the old state behind.
func TestChangeDuringLoad(t *testing.T) {
	ch := local(t)
	c := NewCache[string, string](ch, 10)
	v, err := c.Load("k", func() (string, error) {
		ch.Changed(context.Background())
		return "read before the change", nil
	})
	if err != nil || v != "read before the change" {
		t.Fatalf("load = %q, %v", v, err)
	}
	if v, ok := c.Get("k"); ok {
		t.Fatalf("a value loaded across a change is served: %q", v)
	}
}

func TestLoadErrorIsNotKept(t *testing.T) {
	c := NewCache[string, string](local(t), 10)
	boom := errors.New("store down")
	if _, err := c.Load("k", func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("load error = %v, want %v", err, boom)
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("a failed load left an entry")
	}
}

func TestCapacityBoundsEntries(t *testing.T) {
	c := NewCache[string, string](local(t), 2)
	l := &loader{value: "v"}
	for _, k := range []string{"a", "b", "c"} {
		mustLoad(t, c, k, l)
	}
	if _, ok := c.Get("a"); ok {
		t.Error("the least recently used entry was kept beyond the capacity")
	}
	for _, k := range []string{"b", "c"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("entry %s was dropped", k)
		}
	}
}

// eventually polls cond for up to a second.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a second: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cached loads key until the cache serves it, which with Redis takes the
// first read of the change token.
func cached(t *testing.T, c *Cache[string, string], key string, l *loader) {
	t.Helper()
	eventually(t, "the cache serves "+key, func() bool {
		mustLoad(t, c, key, l)
		_, ok := c.Get(key)
		return ok
	})
}

func TestChangeReachesAnotherReplica(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	a := shared(t, redisURL, prefix)
	b := shared(t, redisURL, prefix)
	cb := NewCache[string, string](b, 10)
	l := &loader{value: "old"}
	cached(t, cb, "k", l)

	a.Changed(context.Background())
	eventually(t, "a change on one replica drops the other's entry", func() bool {
		_, ok := cb.Get("k")
		return !ok
	})
	// Only the change dropped it: the entry's own life is far longer.
	if SharedTTL < 5*time.Second {
		t.Fatalf("SharedTTL %s would pass this test without the change token", SharedTTL)
	}
	cached(t, cb, "k", l)
}

func TestAnnounceReachesReplicas(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	b := shared(t, redisURL, prefix)
	cb := NewCache[string, string](b, 10)
	cached(t, cb, "k", &loader{value: "old"})
	if err := Announce(context.Background(), client(t, redisURL), prefix); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an announcement from outside drops the entry", func() bool {
		_, ok := cb.Get("k")
		return !ok
	})
}

// TestRedisFailureBypassesCaches: while the change token cannot be read,
// nothing cached is served, and what was cached before is not served again
// once it can: a change may have been missed meanwhile.
func TestRedisFailureBypassesCaches(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	p := storetest.NewRedisProxy(t, redisURL)
	b := shared(t, p.URL, prefix)
	cb := NewCache[string, string](b, 10)
	l := &loader{value: "old"}
	cached(t, cb, "k", l)

	p.Cut()
	eventually(t, "the cache is bypassed while Redis is unreachable", func() bool {
		_, ok := cb.Get("k")
		return !ok
	})
	mustLoad(t, cb, "k", l)
	if _, ok := cb.Get("k"); ok {
		t.Fatal("a value loaded while Redis is unreachable is served")
	}

	p.Restore()
	cached(t, cb, "probe", &loader{value: "p"})
	if v, ok := cb.Get("k"); ok {
		t.Errorf("an entry from before the outage is served after it: %q", v)
	}
}

// TestChangeHeldBackByRedisIsRetried: a change made while Redis is
// unreachable reaches the other replicas once it is back.
func TestChangeHeldBackByRedisIsRetried(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	p := storetest.NewRedisProxy(t, redisURL)
	a := shared(t, p.URL, prefix)
	b := shared(t, redisURL, prefix)
	cb := NewCache[string, string](b, 10)

	p.Cut()
	a.Changed(context.Background())
	cached(t, cb, "k", &loader{value: "old"})
	p.Restore()
	eventually(t, "the held-back change reaches the other replica", func() bool {
		_, ok := cb.Get("k")
		return !ok
	})
}
