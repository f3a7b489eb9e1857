package ledger

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"
)

// UpsertReservations writes reservation days in one transaction, a
// multi-row insert per thousand rows; a day already stored for the same
// tenant and reservation takes the new figures.
func (s *Store) UpsertReservations(ctx context.Context, rows []Reservation) error {
	if len(rows) == 0 {
		return nil
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += batchRows {
			batch := rows[start:min(start+batchRows, len(rows))]
			q := tx.NewInsert().Model(&batch).On("CONFLICT (tenant_id, reservation_id, day) DO UPDATE")
			for _, col := range []string{"reservation_order_id", "sku", "reserved_hours", "used_hours",
				"min_utilization", "avg_utilization", "max_utilization", "synced_at"} {
				q = q.Set(col + " = EXCLUDED." + col)
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// LastReservationDay is the latest day of a tenant's stored reservation
// utilisation; ok is false when none is stored.
func (s *Store) LastReservationDay(ctx context.Context, tenantID string) (day Day, ok bool, err error) {
	var last sql.NullInt32
	err = s.DB.NewSelect().Table("cost_reservations").ColumnExpr("MAX(day)").Where("tenant_id = ?", tenantID).Scan(ctx, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	return Day(last.Int32), last.Valid, nil
}
