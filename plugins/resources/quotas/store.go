package quotas

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/sdk"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the quota table's schema, applied by the host.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Usage is one synced quota usage.
type Usage struct {
	bun.BaseModel  `bun:"table:resources_quota_usages"`
	TenantID       string `bun:"tenant_id"`
	SubscriptionID string `bun:"subscription_id,pk"`
	// SubscriptionName is the subscription's display name, "" when the
	// cloud gave none.
	SubscriptionName string    `bun:"subscription_name"`
	Location         string    `bun:"location,pk"`
	Provider         string    `bun:"provider,pk"`
	Name             string    `bun:"name,pk"`
	LocalizedName    string    `bun:"localized_name"`
	CurrentValue     float64   `bun:"current_value"`
	Limit            float64   `bun:"limit_value"`
	Unit             string    `bun:"unit"`
	SyncedAt         time.Time `bun:"synced_at"`
}

// RevisionTable is the quotas' revision table (see package revcache):
// Replace raises the revision of each tenant whose usages it changes, in
// the transaction that changes them.
const RevisionTable = "resources_quota_revisions"

// cacheKeys bounds each of a Store's caches: the least recently used key
// is dropped first.
const cacheKeys = 256

// Store keeps the synced usages. Its reads (Counts, Overview, MostUsed,
// List) keep their results under the revision of the tenants' usages, so
// a read repeated between two syncs costs a lookup of the revision; a
// Replace through any Store on the same database raises it. It is safe
// for concurrent use.
type Store struct {
	db        *bun.DB
	counts    *revcache.Cache[Counts]
	overviews *revcache.Cache[Overview]
	mostUsed  *revcache.Cache[[]Usage]
	lists     *revcache.Cache[[]Usage]
	pages     *revcache.Cache[*List]
}

// NewStore returns a Store on db.
func NewStore(db *bun.DB) *Store {
	return &Store{db: db, counts: revcache.New[Counts](cacheKeys, revcache.MaxAge), overviews: revcache.New[Overview](cacheKeys, revcache.MaxAge),
		mostUsed: revcache.New[[]Usage](cacheKeys, revcache.MaxAge), lists: revcache.New[[]Usage](cacheKeys, revcache.MaxAge),
		pages: revcache.New[*List](cacheKeys, revcache.MaxAge)}
}

// Replace stores the usages of one subscription, location and provider as
// one unit: quotas the cloud no longer reports disappear, and a reader
// never sees half a sync. The same transaction raises the revision of the
// tenants of the usages replaced and of those stored. Two Replaces of one
// subscription, location and provider at once (two runs, or two replicas)
// take turns.
func (s *Store) Replace(ctx context.Context, subscriptionID, location, provider string, usages []Usage) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if s.db.Dialect().Name() == dialect.PG {
			// Without it the second one's delete misses the rows the
			// first inserted, and its insert then collides with them.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`,
				"resources_quotas:"+subscriptionID+"/"+location+"/"+provider); err != nil {
				return err
			}
		}
		var tenants []string
		err := tx.NewSelect().Model((*Usage)(nil)).Distinct().Column("tenant_id").
			Where("subscription_id = ? AND location = ? AND provider = ?", subscriptionID, location, provider).Scan(ctx, &tenants)
		if err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Usage)(nil)).
			Where("subscription_id = ? AND location = ? AND provider = ?", subscriptionID, location, provider).Exec(ctx); err != nil {
			return err
		}
		if len(usages) > 0 {
			if _, err := tx.NewInsert().Model(&usages).Exec(ctx); err != nil {
				return err
			}
		}
		for _, u := range usages {
			tenants = append(tenants, u.TenantID)
		}
		// In one order, so that two syncs raising the same tenants wait
		// for each other rather than deadlock.
		slices.Sort(tenants)
		for _, id := range slices.Compact(tenants) {
			if err := revcache.Bump(ctx, tx, RevisionTable, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// key is the cache key of a read of the query's usages with further
// parameters: the tenants, then every other field of the query and the
// parameters in Go syntax (strings quoted), so that no two reads give the
// same key.
func (q Query) key(params ...any) string {
	rest := q
	rest.TenantIDs = nil
	parts := []string{fmt.Sprintf("%#v", rest)}
	for _, p := range params {
		parts = append(parts, fmt.Sprintf("%#v", p))
	}
	return revcache.Key(q.TenantIDs, parts...)
}

// Query narrows a read.
type Query struct {
	TenantIDs      []string
	SubscriptionID string
	Location       string
	// Provider is compute or network; empty means both.
	Provider string
	// Limit, when positive, pages List from Offset.
	Limit, Offset int
}

// healthRank is a usage's health in SQL, 0 ok, 1 warning, 2 critical, as
// Health(UsagePercent(current, limit)) gives it in Go: the percentage is
// rounded to hundredths there, so v = current/limit*100*100 (the same
// operations, in the same order, on the same doubles) is critical from
// Round(v) = 9000, that is from v = 8999.5, and warning from 7499.5.
const healthRank = `CASE WHEN limit_value <= 0 THEN CASE WHEN current_value > 0 THEN 2 ELSE 0 END
	WHEN current_value / limit_value * 100 * 100 >= 8999.5 THEN 2
	WHEN current_value / limit_value * 100 * 100 >= 7499.5 THEN 1
	ELSE 0 END`

// where narrows sel to the query's usages.
func (q Query) where(sel *bun.SelectQuery) *bun.SelectQuery {
	sel = sel.Where("tenant_id IN (?)", bun.List(q.TenantIDs)).Where("location = ?", q.Location)
	if q.Provider != "" {
		sel = sel.Where("provider = ?", q.Provider)
	}
	if q.SubscriptionID != "" {
		sel = sel.Where("subscription_id = ?", q.SubscriptionID)
	}
	return sel
}

// usagePercent is UsagePercent in SQL, before its rounding: the order of
// the quotas nearest their limits.
const usagePercent = `CASE WHEN limit_value <= 0 THEN CASE WHEN current_value > 0 THEN 100 ELSE 0 END
	ELSE current_value / limit_value * 100 END`

// MostUsed returns the query's n usages nearest their limits, by usage
// percentage (unrounded) from the highest, then by subscription, provider
// and name. They are kept under the usages' revision, the query and n.
func (s *Store) MostUsed(ctx context.Context, q Query, n int) ([]Usage, error) {
	if len(q.TenantIDs) == 0 || n <= 0 {
		return []Usage{}, nil
	}
	out, err := s.mostUsed.Load(ctx, s.db, RevisionTable, q.TenantIDs, q.key(n), func(ctx context.Context) ([]Usage, error) {
		return s.readMostUsed(ctx, q, n)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// readMostUsed reads MostUsed's usages from the database.
func (s *Store) readMostUsed(ctx context.Context, q Query, n int) ([]Usage, error) {
	out := []Usage{}
	err := q.where(s.db.NewSelect().Model(&out)).OrderExpr(usagePercent+" DESC").
		Order("subscription_id", "provider", "name").Limit(int64(n)).Scan(ctx)
	return out, err
}

// Overview is the query's usages counted by health for each provider, and
// the subscriptions they belong to.
type Overview struct {
	ByProvider    map[string]Counts
	Subscriptions int
}

// Overview counts the query's usages by provider and health, in the
// database, and keeps the counts under the usages' revision and the
// query.
func (s *Store) Overview(ctx context.Context, q Query) (Overview, error) {
	if len(q.TenantIDs) == 0 {
		return Overview{ByProvider: map[string]Counts{}}, nil
	}
	out, err := s.overviews.Load(ctx, s.db, RevisionTable, q.TenantIDs, q.key(), func(ctx context.Context) (Overview, error) {
		return s.readOverview(ctx, q)
	})
	if err != nil {
		return Overview{}, err
	}
	out.ByProvider = maps.Clone(out.ByProvider)
	return out, nil
}

// readOverview reads Overview's counts from the database.
func (s *Store) readOverview(ctx context.Context, q Query) (Overview, error) {
	out := Overview{ByProvider: map[string]Counts{}}
	var err error
	if out.ByProvider, err = s.byProvider(ctx, q); err != nil {
		return out, err
	}
	err = q.where(s.db.NewSelect().Model((*Usage)(nil)).ColumnExpr("COUNT(DISTINCT subscription_id)")).Scan(ctx, &out.Subscriptions)
	return out, err
}

// Counts counts the query's usages by health, in the database, and keeps
// the counts under the usages' revision and the query.
func (s *Store) Counts(ctx context.Context, q Query) (Counts, error) {
	if len(q.TenantIDs) == 0 {
		return Counts{}, nil
	}
	return s.counts.Load(ctx, s.db, RevisionTable, q.TenantIDs, q.key(), func(ctx context.Context) (Counts, error) {
		var all Counts
		by, err := s.byProvider(ctx, q)
		for _, c := range by {
			all = all.plus(c)
		}
		return all, err
	})
}

// byProvider counts the query's usages by provider and health.
func (s *Store) byProvider(ctx context.Context, q Query) (map[string]Counts, error) {
	var rows []struct {
		Provider string `bun:"provider"`
		Counts
	}
	ranks := q.where(s.db.NewSelect().Model((*Usage)(nil)).Column("provider").ColumnExpr(healthRank + " AS r"))
	err := s.db.NewSelect().TableExpr("(?) AS u", ranks).Column("provider").
		ColumnExpr("COUNT(*) AS total").
		ColumnExpr("SUM(CASE WHEN r = 0 THEN 1 ELSE 0 END) AS ok").
		ColumnExpr("SUM(CASE WHEN r = 1 THEN 1 ELSE 0 END) AS warning").
		ColumnExpr("SUM(CASE WHEN r = 2 THEN 1 ELSE 0 END) AS critical").
		Group("provider").Scan(ctx, &rows)
	out := make(map[string]Counts, len(rows))
	for _, r := range rows {
		out[r.Provider] = r.Counts
	}
	return out, err
}

// List returns usages of the query's tenants ordered by subscription and
// name, kept under the usages' revision and the query (its page
// included).
func (s *Store) List(ctx context.Context, q Query) ([]Usage, error) {
	if len(q.TenantIDs) == 0 {
		return []Usage{}, nil
	}
	out, err := s.lists.Load(ctx, s.db, RevisionTable, q.TenantIDs, q.key(), func(ctx context.Context) ([]Usage, error) {
		return s.list(ctx, q)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// Page returns the quota list's body for the query's page (Limit and
// Offset) of usages, with the counts of all of them. It is kept under the
// usages' revision and the query, encoded (sdk.Prepared): the body a
// request gets is shared by every request of its revision, not to be
// changed.
func (s *Store) Page(ctx context.Context, q Query) (*List, error) {
	if len(q.TenantIDs) == 0 {
		return s.page(ctx, q)
	}
	return s.pages.Load(ctx, s.db, RevisionTable, q.TenantIDs, q.key(), func(ctx context.Context) (*List, error) {
		return s.page(ctx, q)
	})
}

// page builds Page's body from the usages' counts and page.
func (s *Store) page(ctx context.Context, q Query) (*List, error) {
	all := q
	all.Limit, all.Offset = 0, 0
	counts, err := s.Counts(ctx, all)
	if err != nil {
		return nil, err
	}
	usages, err := s.List(ctx, q)
	if err != nil {
		return nil, err
	}
	items := make([]Entry, 0, len(usages))
	for _, u := range usages {
		items = append(items, entryOf(u))
	}
	out := &List{Location: q.Location, Provider: q.Provider, SubscriptionID: q.SubscriptionID, Items: items,
		Total: counts.Total, Limit: q.Limit, Offset: q.Offset, Summary: counts}
	return out, sdk.Prepare(out)
}

// list reads List's usages from the database.
func (s *Store) list(ctx context.Context, q Query) ([]Usage, error) {
	out := []Usage{}
	sel := q.where(s.db.NewSelect().Model(&out)).Order("subscription_id", "provider", "name")
	if q.Limit > 0 {
		sel = sel.Limit(int64(q.Limit)).Offset(int64(q.Offset))
	}
	err := sel.Scan(ctx)
	return out, err
}

// TenantOf returns the tenant a synced subscription belongs to, or "".
func (s *Store) TenantOf(ctx context.Context, subscriptionID string) (string, error) {
	var tenant []string
	err := s.db.NewSelect().Model((*Usage)(nil)).Column("tenant_id").Where("subscription_id = ?", subscriptionID).Limit(1).Scan(ctx, &tenant)
	if err != nil || len(tenant) == 0 {
		return "", err
	}
	return tenant[0], nil
}
