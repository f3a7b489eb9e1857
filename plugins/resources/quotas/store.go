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
}

// List returns usages of the query's tenants ordered by subscription and
// name.
func (s *Store) List(ctx context.Context, q Query) ([]Usage, error) {
	out := []Usage{}
	if len(q.TenantIDs) == 0 {
		return out, nil
	}
	sel := s.db.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(q.TenantIDs)).Where("location = ?", q.Location)
	if q.Provider != "" {
		sel = sel.Where("provider = ?", q.Provider)
	}
	if q.SubscriptionID != "" {
		sel = sel.Where("subscription_id = ?", q.SubscriptionID)
	}
	err := sel.Order("subscription_id", "provider", "name").Scan(ctx)
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
