package quotas

import (
	"context"
	"embed"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
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
	TenantID       string    `bun:"tenant_id"`
	SubscriptionID string    `bun:"subscription_id,pk"`
	Location       string    `bun:"location,pk"`
	Provider       string    `bun:"provider,pk"`
	Name           string    `bun:"name,pk"`
	LocalizedName  string    `bun:"localized_name"`
	CurrentValue   float64   `bun:"current_value"`
	Limit          float64   `bun:"limit_value"`
	Unit           string    `bun:"unit"`
	SyncedAt       time.Time `bun:"synced_at"`
}

// Store keeps the synced usages.
type Store struct{ db *bun.DB }

// NewStore returns a Store on db.
func NewStore(db *bun.DB) *Store { return &Store{db: db} }

// Replace stores the usages of one subscription, location and provider as
// one unit: quotas the cloud no longer reports disappear, and a reader
// never sees half a sync.
func (s *Store) Replace(ctx context.Context, subscriptionID, location, provider string, usages []Usage) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*Usage)(nil)).
			Where("subscription_id = ? AND location = ? AND provider = ?", subscriptionID, location, provider).Exec(ctx); err != nil {
			return err
		}
		if len(usages) == 0 {
			return nil
		}
		_, err := tx.NewInsert().Model(&usages).Exec(ctx)
		return err
	})
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
// and name.
func (s *Store) MostUsed(ctx context.Context, q Query, n int) ([]Usage, error) {
	out := []Usage{}
	if len(q.TenantIDs) == 0 || n <= 0 {
		return out, nil
	}
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
// database.
func (s *Store) Overview(ctx context.Context, q Query) (Overview, error) {
	out := Overview{ByProvider: map[string]Counts{}}
	if len(q.TenantIDs) == 0 {
		return out, nil
	}
	var err error
	if out.ByProvider, err = s.byProvider(ctx, q); err != nil {
		return out, err
	}
	err = q.where(s.db.NewSelect().Model((*Usage)(nil)).ColumnExpr("COUNT(DISTINCT subscription_id)")).Scan(ctx, &out.Subscriptions)
	return out, err
}

// Counts counts the query's usages by health, in the database.
func (s *Store) Counts(ctx context.Context, q Query) (Counts, error) {
	var all Counts
	if len(q.TenantIDs) == 0 {
		return all, nil
	}
	by, err := s.byProvider(ctx, q)
	for _, c := range by {
		all = all.plus(c)
	}
	return all, err
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
// name.
func (s *Store) List(ctx context.Context, q Query) ([]Usage, error) {
	out := []Usage{}
	if len(q.TenantIDs) == 0 {
		return out, nil
	}
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
