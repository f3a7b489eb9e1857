// Package inventory keeps the resources the cloud's Resource Graph lists,
// one row a resource, and the lifecycle events (created, changed, deleted)
// that comparing each sync with the last one finds; its part of the
// resources page, and the resource page (ItemPath), where a resource's
// policy states and cost are read from the compliance and cost plugins'
// datasets through the host.
package inventory

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the inventory's schema, applied by the host. Their
// numbers follow the quota migrations', with which they form the plugin's
// migration set.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// UID is the stable id Steward gives a resource: the first 32 hex digits
// of the SHA-256 of its ARM id in lower case (ARM ids ignore case). ARM
// ids hold slashes, so they cannot be one path segment; this can.
func UID(resourceID string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(resourceID)))
	return hex.EncodeToString(sum[:16])
}

// Resource is one resource as last synced.
type Resource struct {
	bun.BaseModel  `bun:"table:resources_inventory"`
	UID            string    `bun:"uid,pk" json:"id"`
	TenantID       string    `bun:"tenant_id" json:"tenant_id"`
	SubscriptionID string    `bun:"subscription_id" json:"subscription_id"`
	ResourceID     string    `bun:"resource_id" json:"resource_id"`
	Name           string    `bun:"name" json:"name"`
	Type           string    `bun:"type" json:"type"`
	Location       string    `bun:"location" json:"location"`
	ResourceGroup  string    `bun:"resource_group" json:"resource_group"`
	SKU            string    `bun:"sku" json:"sku"`
	Tags           string    `bun:"tags" json:"-"`
	Properties     string    `bun:"properties" json:"-"`
	FirstSeen      time.Time `bun:"first_seen" json:"first_seen"`
	LastSeen       time.Time `bun:"last_seen" json:"last_seen"`
	ChangedAt      time.Time `bun:"changed_at" json:"changed_at"`
}

// The kinds of lifecycle event.
const (
	EventCreated = "created"
	EventChanged = "changed"
	EventDeleted = "deleted"
)

// Event is one lifecycle change a sync found.
type Event struct {
	bun.BaseModel  `bun:"table:resources_events"`
	ID             int64     `bun:"id,pk,autoincrement" json:"id"`
	TenantID       string    `bun:"tenant_id" json:"tenant_id"`
	SubscriptionID string    `bun:"subscription_id" json:"subscription_id"`
	UID            string    `bun:"uid" json:"resource"`
	ResourceID     string    `bun:"resource_id" json:"resource_id"`
	Name           string    `bun:"name" json:"name"`
	Type           string    `bun:"type" json:"type"`
	Kind           string    `bun:"kind" json:"kind"`
	Fields         string    `bun:"fields" json:"-"`
	At             time.Time `bun:"at" json:"at"`
}

// ChangedFields are the fields a changed event names, in the order the
// inventory's columns come.
func (e Event) ChangedFields() []string {
	if e.Fields == "" {
		return []string{}
	}
	return strings.Split(e.Fields, ",")
}

// RevisionTable is the inventory's revision table (see package revcache):
// a sync raises the revision of each tenant whose resources, tags or
// events it changes, in the transaction that changes them.
const RevisionTable = "resources_inventory_revisions"

// Store keeps the inventory. Its reads of pages and figures (List,
// CountBy, Coverage, Orphans, OrphanCounts) keep their results under the
// revision of the tenants' inventory, so a read repeated between two syncs
// costs a lookup of the revision; a sync through any Store on the same
// database raises it. The zero value with DB set is ready; it is safe for
// concurrent use.
type Store struct {
	DB *bun.DB
	// FlushRows is how many listed resources Replace holds in memory
	// before it writes them to its stage; DefaultFlushRows when zero.
	FlushRows int
	// rewritten counts the rows syncs rewrote since this process last
	// vacuumed (Vacuum).
	rewritten atomic.Int64

	once  sync.Once
	cache *caches
}

// cacheKeys bounds each of a Store's caches: the least recently used
// key is dropped first.
const cacheKeys = 256

// caches are a Store's results kept under the revision of the tenants'
// inventory, one cache for each read.
type caches struct {
	pages        *revcache.Cache[page]
	countsBy     *revcache.Cache[[]Count]
	coverage     *revcache.Cache[TagCoverage]
	orphanCounts *revcache.Cache[map[string]int64]
	orphans      *revcache.Cache[[]Orphan]
}

// page is a page of List and how many match in all.
type page struct {
	rows  []Resource
	total int64
}

// caches returns the Store's caches, created on first use.
func (s *Store) caches() *caches {
	s.once.Do(func() {
		s.cache = &caches{
			pages:        revcache.New[page](cacheKeys, revcache.MaxAge),
			countsBy:     revcache.New[[]Count](cacheKeys, revcache.MaxAge),
			coverage:     revcache.New[TagCoverage](cacheKeys, revcache.MaxAge),
			orphanCounts: revcache.New[map[string]int64](cacheKeys, revcache.MaxAge),
			orphans:      revcache.New[[]Orphan](cacheKeys, revcache.MaxAge),
		}
	})
	return s.cache
}

// revision is the revision of the tenants' inventory, read before the
// inventory itself (see revcache.Read).
func (s *Store) revision(ctx context.Context, tenantIDs []string) (string, error) {
	return revcache.Read(ctx, s.DB, RevisionTable, tenantIDs)
}

// cacheKey is the key of a read of the tenants with its parameters, each
// written with its Go syntax (strings quoted), so that no two lists of
// parameters give the same key.
func cacheKey(tenantIDs []string, params ...any) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = fmt.Sprintf("%#v", p)
	}
	return revcache.Key(tenantIDs, parts...)
}

// vacuumShare is the share of the inventory a process's syncs rewrite
// before Vacuum runs: a sync works tenant by tenant, and vacuuming the
// whole inventory after each of a hundred tenants cost more than the
// syncs themselves.
const vacuumShare = 0.1

// Vacuum has PostgreSQL vacuum and analyse the inventory and its tag
// rows once the syncs of this process have rewritten (listed) a tenth of
// them since it last did, counting rewritten, or when the tables were
// never analysed. A sync rewrites every row it lists, and until the dead
// versions are gone and the visibility map is set, a tag filter's count
// visits the table once per match (the benchmark measured 12-66 ms
// against 3-8 ms after), and the planner works from the counts before the
// sync. VACUUM takes no lock that blocks reads or writes. SQLite needs
// neither; there it does nothing. It reports whether it vacuumed.
func (s *Store) Vacuum(ctx context.Context, rewritten int64) (bool, error) {
	if s.DB.Dialect().Name() != dialect.PG {
		return false, nil
	}
	due := s.rewritten.Add(rewritten)
	// reltuples is -1 until the table is first vacuumed or analysed.
	var rows float64
	err := s.DB.NewRaw("SELECT reltuples FROM pg_class WHERE oid = to_regclass('resources_inventory')").Scan(ctx, &rows)
	if err != nil {
		return false, err
	}
	if rows >= 0 && float64(due) < vacuumShare*rows {
		return false, nil
	}
	if _, err := s.DB.ExecContext(ctx, "VACUUM (ANALYZE) resources_inventory, resources_inventory_tags"); err != nil {
		return false, err
	}
	s.rewritten.Add(-due)
	return true, nil
}
