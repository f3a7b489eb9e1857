package authcache

import "github.com/jellydator/ttlcache/v3"

// Cache holds at most a fixed number of values, each for the Changes' TTL
// and only until the next change.
//
// Dropping entries is a counter increment rather than a sweep: each entry
// remembers the epoch it was loaded in, and one from an earlier epoch is
// never served. The bound on the number of entries keeps the memory of
// those dead entries in check until they are evicted or overwritten.
type Cache[K comparable, V any] struct {
	changes *Changes
	items   *ttlcache.Cache[K, entry[V]]
}

type entry[V any] struct {
	value V
	epoch uint64
}

// NewCache returns a cache of at most capacity values that c invalidates.
func NewCache[K comparable, V any](c *Changes, capacity uint64) *Cache[K, V] {
	return &Cache[K, V]{changes: c, items: ttlcache.New(
		ttlcache.WithCapacity[K, entry[V]](capacity),
		ttlcache.WithTTL[K, entry[V]](c.ttl),
		// An entry's life runs from its load, however often it is read.
		ttlcache.WithDisableTouchOnHit[K, entry[V]](),
	)}
}

// Get returns the value for key, if one may be served.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	var zero V
	if !c.changes.usable() {
		return zero, false
	}
	it := c.items.Get(key)
	if it == nil {
		return zero, false
	}
	e := it.Value()
	if e.epoch != c.changes.epoch.Load() {
		return zero, false
	}
	return e.value, true
}

// Load returns the value for key, calling load on a miss and keeping what
// it returns. An error is returned as is and nothing is kept.
func (c *Cache[K, V]) Load(key K, load func() (V, error)) (V, error) {
	if v, ok := c.Get(key); ok {
		return v, nil
	}
	// The epoch is taken before loading: if a change lands while load
	// reads the old state, the entry is born stale and never served.
	epoch := c.changes.epoch.Load()
	v, err := load()
	if err != nil {
		return v, err
	}
	c.items.Set(key, entry[V]{value: v, epoch: epoch}, ttlcache.DefaultTTL)
	return v, nil
}
