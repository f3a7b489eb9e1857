// Package cache provides a byte-value cache with per-entry expiry, backed by
// Redis when the deployment has one and by process memory otherwise.
//
// A single replica can run without Redis; several replicas share Redis so
// that a value computed by one (and a "clear cache" issued on one) is seen
// by all. Callers treat the cache as an optimisation: an error from it should
// lead to recomputing the value, not to failing the request.
package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jellydator/ttlcache/v3"
	"github.com/redis/go-redis/v9"
)

// Backend names reported in [Stats].
const (
	BackendMemory = "memory"
	BackendRedis  = "redis"
)

// Cache stores byte values under string keys.
//
// A ttl of zero or less means the entry does not expire on its own; the
// in-memory backend may still evict it to stay within its bounds.
type Cache interface {
	// Get returns the value for key and whether it was present.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every entry whose key starts with prefix; an
	// empty prefix clears the whole namespace.
	DeletePrefix(ctx context.Context, prefix string) error
	Stats() Stats
}

// Stats reports the cache's effectiveness since it was created.
type Stats struct {
	Backend string `json:"backend"`
	Hits    uint64 `json:"hits"`
	Misses  uint64 `json:"misses"`
	// HitRatePercent is Hits as a percentage of lookups, 0 when there were
	// none.
	HitRatePercent float64 `json:"hit_rate_percent"`
}

// In-memory bounds. Values are typically serialized API responses of a few
// kilobytes, so the byte bound is the one expected to bite.
const (
	memoryMaxEntries = 10_000
	memoryMaxBytes   = 64 << 20
)

// New returns a cache on client, keeping its keys under namespace, and an
// in-memory cache when client is nil. The client is the caller's: the cache
// never closes it. namespace is required for both so that configuration
// mistakes show up before a deployment grows a Redis; it keeps several
// deployments or components sharing one Redis database apart, and bounds
// what DeletePrefix can reach.
func New(client redis.UniversalClient, namespace string) (Cache, error) {
	if namespace == "" {
		return nil, errors.New("cache: namespace must not be empty")
	}
	if client == nil {
		return newMemory(), nil
	}
	return &redisCache{client: client, prefix: namespace + ":"}, nil
}

// counters tracks lookups; it is shared by both backends.
type counters struct {
	hits, misses atomic.Uint64
}

func (c *counters) record(hit bool) {
	if hit {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
}

func (c *counters) stats(backend string) Stats {
	s := Stats{Backend: backend, Hits: c.hits.Load(), Misses: c.misses.Load()}
	if total := s.Hits + s.Misses; total > 0 {
		s.HitRatePercent = float64(s.Hits) * 100 / float64(total)
	}
	return s
}

type memoryCache struct {
	counters
	items *ttlcache.Cache[string, []byte]
}

func newMemory() *memoryCache {
	return &memoryCache{
		items: ttlcache.New(
			ttlcache.WithCapacity[string, []byte](memoryMaxEntries),
			ttlcache.WithMaxCost(memoryMaxBytes, entryCost),
			// A read must not extend an entry's life: the TTL bounds how
			// stale a value can get, however often it is read.
			ttlcache.WithDisableTouchOnHit[string, []byte](),
		),
	}
}

func entryCost(item ttlcache.CostItem[string, []byte]) uint64 {
	return uint64(len(item.Key) + len(item.Value))
}

func (m *memoryCache) Get(_ context.Context, key string) ([]byte, bool, error) {
	item := m.items.Get(key)
	m.record(item != nil)
	if item == nil {
		return nil, false, nil
	}
	// Copied so a caller modifying the result cannot alter the cached value.
	return bytes.Clone(item.Value()), true, nil
}

func (m *memoryCache) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	if uint64(len(key)+len(val)) > memoryMaxBytes {
		// The library would evict everything and then fail to make room.
		// Not caching is the right outcome; dropping the old value keeps
		// readers from seeing one the caller meant to replace.
		m.items.Delete(key)
		return nil
	}
	if ttl <= 0 {
		ttl = ttlcache.NoTTL
	}
	m.items.Set(key, bytes.Clone(val), ttl)
	return nil
}

func (m *memoryCache) Delete(_ context.Context, key string) error {
	m.items.Delete(key)
	return nil
}

func (m *memoryCache) DeletePrefix(_ context.Context, prefix string) error {
	for _, key := range m.items.Keys() {
		if strings.HasPrefix(key, prefix) {
			m.items.Delete(key)
		}
	}
	return nil
}

func (m *memoryCache) Stats() Stats { return m.stats(BackendMemory) }

type redisCache struct {
	counters
	client redis.UniversalClient
	// prefix is the namespace followed by ':'.
	prefix string
}

// scanBatch is how many keys DeletePrefix asks Redis for per SCAN step: large
// enough to finish quickly, small enough not to stall the server.
const scanBatch = 500

func (r *redisCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	val, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		r.record(false)
		return nil, false, nil
	}
	if err != nil {
		// Not counted: a failed lookup says nothing about the hit rate.
		return nil, false, fmt.Errorf("cache: get: %w", err)
	}
	r.record(true)
	return val, true, nil
}

func (r *redisCache) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if ttl < 0 {
		// Only 0 means "no expiry" to go-redis; -1 would keep the old TTL.
		ttl = 0
	}
	if err := r.client.Set(ctx, r.prefix+key, val, ttl).Err(); err != nil {
		return fmt.Errorf("cache: set: %w", err)
	}
	return nil
}

func (r *redisCache) Delete(ctx context.Context, key string) error {
	if err := r.client.Unlink(ctx, r.prefix+key).Err(); err != nil {
		return fmt.Errorf("cache: delete: %w", err)
	}
	return nil
}

// DeletePrefix walks matching keys with SCAN rather than KEYS so a large
// namespace does not block Redis, and removes them with UNLINK, which frees
// memory in the background.
func (r *redisCache) DeletePrefix(ctx context.Context, prefix string) error {
	pattern := escapeGlob(r.prefix+prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := r.client.Scan(ctx, cursor, pattern, scanBatch).Result()
		if err != nil {
			return fmt.Errorf("cache: scan: %w", err)
		}
		if len(keys) > 0 {
			if err := r.client.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("cache: delete: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func (r *redisCache) Stats() Stats { return r.stats(BackendRedis) }

// escapeGlob makes s match itself literally in a Redis MATCH pattern, so a
// key containing '*' or '[' cannot widen a prefix delete.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
