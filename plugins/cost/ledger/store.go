package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// Cost is one row of cost_daily.
type Cost struct {
	bun.BaseModel  `bun:"table:cost_daily"`
	SubscriptionID string `bun:"subscription_id,pk"`
	Day            Day    `bun:"day,pk"`
	Service        string `bun:"service,pk"`
	ResourceGroup  string `bun:"resource_group,pk"`
	Currency       string `bun:"currency,pk"`
	TenantID       string `bun:"tenant_id"`
	Month          int    `bun:"month"`
	Cost           Amount `bun:"cost_cents"`
}

// SyncState is how far a subscription's costs have been synced.
type SyncState struct {
	bun.BaseModel  `bun:"table:cost_sync_state"`
	SubscriptionID string    `bun:"subscription_id,pk"`
	TenantID       string    `bun:"tenant_id"`
	FirstDay       Day       `bun:"first_day"`
	LastDay        Day       `bun:"last_day"`
	SyncedAt       time.Time `bun:"synced_at"`
}

// Reservation is one reservation's utilisation on one day.
type Reservation struct {
	bun.BaseModel      `bun:"table:cost_reservations"`
	TenantID           string    `bun:"tenant_id,pk"`
	ReservationID      string    `bun:"reservation_id,pk"`
	Day                Day       `bun:"day,pk"`
	ReservationOrderID string    `bun:"reservation_order_id"`
	SKU                string    `bun:"sku"`
	ReservedHours      float64   `bun:"reserved_hours"`
	UsedHours          float64   `bun:"used_hours"`
	MinUtilization     float64   `bun:"min_utilization"`
	AvgUtilization     float64   `bun:"avg_utilization"`
	MaxUtilization     float64   `bun:"max_utilization"`
	SyncedAt           time.Time `bun:"synced_at"`
}

// Store reads and writes the cost tables.
type Store struct {
	DB *bun.DB
	// FlushRows is how many streamed rows Replace holds in memory at once;
	// zero means DefaultFlushRows.
	FlushRows int

	// stageByInsert stages rows on PostgreSQL with multi-row inserts
	// instead of COPY, for the benchmark that compares the two.
	stageByInsert bool
}

// batchRows is how many rows one INSERT carries: well under SQLite's and
// PostgreSQL's bound-parameter limits at eight columns a row.
const batchRows = 1000

// Upsert writes raw cost rows in one transaction, a multi-row insert per
// thousand rows; a row already stored for the same subscription, day,
// service, resource group and currency takes the new cost, so writing the
// same days twice never doubles them. Month is filled from Day.
func (s *Store) Upsert(ctx context.Context, rows []Cost) error {
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		rows[i].Month = rows[i].Day.Month()
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += batchRows {
			batch := rows[start:min(start+batchRows, len(rows))]
			_, err := tx.NewInsert().Model(&batch).
				On("CONFLICT (subscription_id, day, service, resource_group, currency) DO UPDATE").
				Set("cost_cents = EXCLUDED.cost_cents").
				Set("tenant_id = EXCLUDED.tenant_id").
				Exec(ctx)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Rollup rebuilds both rollups for a tenant's days from through to
// (inclusive) from cost_daily, in one transaction, so a reader sees the
// old figures or the new, never a mix.
func (s *Store) Rollup(ctx context.Context, tenantID string, from, to Day) error {
	if to < from {
		return errors.New("ledger: rollup range ends before it starts")
	}
	return s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		return rollup(ctx, tx, tenantID, from, to)
	})
}

// rollup rebuilds the rollups of a tenant's days inside the caller's
// transaction.
func rollup(ctx context.Context, tx bun.IDB, tenantID string, from, to Day) error {
	for _, q := range []string{
		`DELETE FROM cost_service_daily WHERE tenant_id = ? AND day BETWEEN ? AND ?`,
		`INSERT INTO cost_service_daily (tenant_id, day, service, currency, month, cost_cents)
		 SELECT tenant_id, day, service, currency, month, SUM(cost_cents) FROM cost_daily
		 WHERE tenant_id = ? AND day BETWEEN ? AND ? GROUP BY tenant_id, day, service, currency, month`,
		`DELETE FROM cost_tenant_daily WHERE tenant_id = ? AND day BETWEEN ? AND ?`,
		`INSERT INTO cost_tenant_daily (tenant_id, day, currency, month, cost_cents)
		 SELECT tenant_id, day, currency, month, SUM(cost_cents) FROM cost_service_daily
		 WHERE tenant_id = ? AND day BETWEEN ? AND ? GROUP BY tenant_id, day, currency, month`,
	} {
		if _, err := tx.ExecContext(ctx, q, tenantID, from, to); err != nil {
			return err
		}
	}
	return nil
}
