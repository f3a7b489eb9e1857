package authcache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/store/storetest"
)

func local(t *testing.T) *Changes {
	t.Helper()
	c, err := New("", "", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func shared(t *testing.T, redisURL, prefix string, log hclog.Logger) *Changes {
	t.Helper()
	c, err := New(redisURL, prefix, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
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
	a := shared(t, redisURL, prefix, hclog.NewNullLogger())
	b := shared(t, redisURL, prefix, hclog.NewNullLogger())
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
	b := shared(t, redisURL, prefix, hclog.NewNullLogger())
	cb := NewCache[string, string](b, 10)
	cached(t, cb, "k", &loader{value: "old"})
	if err := Announce(context.Background(), redisURL, prefix); err != nil {
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
	p := newProxy(t, redisURL)
	var logs syncBuffer
	b := shared(t, p.url, prefix, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	cb := NewCache[string, string](b, 10)
	l := &loader{value: "old"}
	cached(t, cb, "k", l)

	p.cut()
	eventually(t, "the cache is bypassed while Redis is unreachable", func() bool {
		_, ok := cb.Get("k")
		return !ok
	})
	mustLoad(t, cb, "k", l)
	if _, ok := cb.Get("k"); ok {
		t.Fatal("a value loaded while Redis is unreachable is served")
	}
	if !strings.Contains(logs.String(), "caches bypassed") {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}

	p.restore()
	cached(t, cb, "probe", &loader{value: "p"})
	if v, ok := cb.Get("k"); ok {
		t.Errorf("an entry from before the outage is served after it: %q", v)
	}
	if !strings.Contains(logs.String(), "in use again") {
		t.Errorf("the recovery is not logged:\n%s", logs.String())
	}
}

// TestChangeHeldBackByRedisIsRetried: a change made while Redis is
// unreachable reaches the other replicas once it is back.
func TestChangeHeldBackByRedisIsRetried(t *testing.T) {
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	p := newProxy(t, redisURL)
	a := shared(t, p.url, prefix, hclog.NewNullLogger())
	b := shared(t, redisURL, prefix, hclog.NewNullLogger())
	cb := NewCache[string, string](b, 10)

	p.cut()
	a.Changed(context.Background())
	cached(t, cb, "k", &loader{value: "old"})
	p.restore()
	eventually(t, "the held-back change reaches the other replica", func() bool {
		_, ok := cb.Get("k")
		return !ok
	})
}

// proxy forwards TCP connections to Redis until cut.
type proxy struct {
	t      *testing.T
	url    string
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newProxy(t *testing.T, redisURL string) *proxy {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: u.Host}
	u.Host = ln.Addr().String()
	p.url = u.String()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
