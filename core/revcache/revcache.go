// Package revcache keeps results computed from a plugin's stored data under
// the revision of that data, so a read repeated between two syncs costs a
// lookup of the revision instead of the aggregate.
//
// A revision is a per-tenant counter in a table of the plugin's own
// storage, raised in the same transaction as every write that changes what
// the cached reads return ([Bump]). A read takes the revision of the
// tenants it covers ([Read]) before it reads the data, and a [Cache] keeps
// the result under both: a result is used again only while the revision it
// was read at is still the current one. As the revision lives in the
// database, a write on one replica is seen by every replica's next read;
// nothing has to be told. A result is also dropped past a maximum age
// ([MaxAge]), so one that missed a revision (a write by an older release
// during a rolling upgrade) does not outlive it by long.
//
// A revision table is created by the plugin's migrations as
//
//	CREATE TABLE <name> (tenant_id TEXT PRIMARY KEY, revision BIGINT NOT NULL)
package revcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jellydator/ttlcache/v3"
	"github.com/uptrace/bun"
	"golang.org/x/sync/singleflight"
)

// Cache keeps, for each key, one value and the revision it was computed
// at; the least recently used keys are dropped past its capacity, and
// every value after its maximum age. Values are shared between callers,
// which must not change them. The zero value is not usable: create one
// with [New]. It is safe for concurrent use.
type Cache[V any] struct {
	items  *ttlcache.Cache[string, entry[V]]
	maxAge time.Duration
	flight singleflight.Group
}

type entry[V any] struct {
	revision string
	value    V
}

// MaxAge is the maximum age the plugins give their caches. It bounds how
// long a result can outlive a write that did not raise the revision: one
// by a replica of a release from before a revision table was added, while
// a rolling upgrade runs both.
const MaxAge = time.Minute

// New returns a cache of at most capacity keys, each value computed at
// most maxAge ago: a value's age runs from its load, however often it is
// read since.
func New[V any](capacity uint64, maxAge time.Duration) *Cache[V] {
	return &Cache[V]{items: ttlcache.New(
		ttlcache.WithCapacity[string, entry[V]](capacity),
		ttlcache.WithDisableTouchOnHit[string, entry[V]](),
	), maxAge: maxAge}
}

// Get returns the value kept under key if it was computed at revision;
// otherwise it computes it with load, keeps it and returns it. Concurrent
// calls missing the same key and revision share one load. An error from
// load is returned and nothing is kept.
func (c *Cache[V]) Get(ctx context.Context, key, revision string, load func(context.Context) (V, error)) (V, error) {
	if it := c.items.Get(key); it != nil && it.Value().revision == revision {
		return it.Value().value, nil
	}
	v, err, _ := c.flight.Do(key+"\x00"+revision, func() (any, error) {
		v, err := load(ctx)
		if err != nil {
			return v, err
		}
		c.items.Set(key, entry[V]{revision: revision, value: v}, c.maxAge)
		return v, nil
	})
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The call that loaded gave up, not this one: load again.
		return load(ctx)
	}
	out, _ := v.(V)
	return out, err
}

// Load is Get for a read of the tenants' data whose revision is kept in
// table: it reads their revision (Read), then returns the value kept
// under key at that revision or loads it.
func (c *Cache[V]) Load(ctx context.Context, db bun.IDB, table string, tenants []string, key string, load func(context.Context) (V, error)) (V, error) {
	revision, err := Read(ctx, db, table, tenants)
	if err != nil {
		var zero V
		return zero, err
	}
	return c.Get(ctx, key, revision, load)
}

// Key is a cache key for a read of the tenants (in any order, repeats
// ignored) with the parts that further select it, such as its parameters.
// Each tenant and part is written with its length before it, so no two
// different reads share a key whatever their text holds.
func Key(tenants []string, parts ...string) string {
	ids := tenants
	if !slices.IsSorted(ids) {
		ids = slices.Sorted(slices.Values(tenants))
	}
	var b strings.Builder
	n := len(ids) + len(parts)
	for _, id := range ids {
		n += len(id) + 4
	}
	for _, p := range parts {
		n += len(p) + 4
	}
	b.Grow(n)
	for i, id := range ids {
		if i > 0 && id == ids[i-1] {
			continue
		}
		b.WriteString(strconv.Itoa(len(id)))
		b.WriteByte(':')
		b.WriteString(id)
	}
	b.WriteByte('|')
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// Bump raises the tenant's revision in table; call it in the transaction
// that changes the tenant's data, so the new revision and the new data
// are seen together. The table's name is the caller's constant, never
// input.
func Bump(ctx context.Context, db bun.IDB, table, tenantID string) error {
	_, err := db.NewRaw(`INSERT INTO `+table+` (tenant_id, revision) VALUES (?, 1)
		ON CONFLICT (tenant_id) DO UPDATE SET revision = `+table+`.revision + 1`, tenantID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("revcache: raise the revision of tenant %s: %w", tenantID, err)
	}
	return nil
}

// Read returns the revision of the tenants' data in table. It changes
// whenever Bump is called for any of them (revisions only rise, and a
// tenant's first Bump adds one to the count of those with a revision).
// Read it before the data, so a write between the two reads leaves a
// result kept under the older revision, read again next time, never a
// newer one.
//
// For more than wholeTableAbove tenants it reads the revision of the whole
// table instead, which changes whenever theirs does and also when another
// tenant's does: a read of every tenant, an administrator's, then costs
// one constant statement instead of a list of a hundred names to send and
// plan, for a kept result dropped a little more often.
func Read(ctx context.Context, db bun.IDB, table string, tenants []string) (string, error) {
	if len(tenants) == 0 {
		return "", nil
	}
	whole := len(tenants) > wholeTableAbove
	seen, _ := ctx.Value(readsKey{}).(*reads)
	var key string
	if seen != nil {
		key = table + "|*"
		if !whole {
			key = table + "|" + Key(tenants)
		}
		seen.mu.Lock()
		rev, ok := seen.m[key]
		seen.mu.Unlock()
		if ok {
			return rev, nil
		}
	}
	var rev struct {
		Tenants int   `bun:"tenants"`
		Sum     int64 `bun:"total"`
	}
	q := db.NewSelect().Table(table).ColumnExpr("COUNT(*) AS tenants, COALESCE(SUM(revision), 0) AS total")
	if !whole {
		q = q.Where("tenant_id IN (?)", bun.List(tenants))
	}
	if err := q.Scan(ctx, &rev); err != nil {
		return "", fmt.Errorf("revcache: read the revision of %d tenants: %w", len(tenants), err)
	}
	out := fmt.Sprintf("%d:%d", rev.Tenants, rev.Sum)
	if whole {
		out = "*" + out
	}
	if seen != nil {
		seen.mu.Lock()
		seen.m[key] = out
		seen.mu.Unlock()
	}
	return out, nil
}

// ReadEach returns the revision of each tenant's data in table, by tenant
// id, in one statement: what a read kept per tenant is checked against. A
// tenant never bumped has revision "0". Like Read, read it before the data.
func ReadEach(ctx context.Context, db bun.IDB, table string, tenants []string) (map[string]string, error) {
	out := make(map[string]string, len(tenants))
	if len(tenants) == 0 {
		return out, nil
	}
	var rows []struct {
		TenantID string `bun:"tenant_id"`
		Revision int64  `bun:"revision"`
	}
	if err := db.NewSelect().Table(table).Column("tenant_id", "revision").Where("tenant_id IN (?)", bun.List(tenants)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("revcache: read the revisions of %d tenants: %w", len(tenants), err)
	}
	for _, t := range tenants {
		out[t] = "0"
	}
	for _, r := range rows {
		out[r.TenantID] = strconv.FormatInt(r.Revision, 10)
	}
	return out, nil
}

// wholeTableAbove is the most tenants Read reads the revisions of by name.
const wholeTableAbove = 32

type readsKey struct{}

// reads are the revisions read under a context of OneRead.
type reads struct {
	mu sync.Mutex
	m  map[string]string
}

// OneRead returns a context under which Read answers a repeat of a read
// (one table, one set of tenants) with the revision it read first: the
// several kept reads a request makes then cost one read of the revision,
// and answer as of one revision. It is for one request, never longer.
func OneRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, readsKey{}, &reads{m: map[string]string{}})
}
