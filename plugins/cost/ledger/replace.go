package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/store"
)

// Window is one subscription's days, From through To (inclusive), whose
// costs a sync replaces with what the cloud reports for them now.
type Window struct {
	TenantID       string
	SubscriptionID string
	From, To       Day
}

// Written is what Replace did.
type Written struct {
	// Rows is how many cost rows the stream emitted.
	Rows int64
	// Batches is how many times emitted rows were flushed to the stage:
	// the stream is held in memory one batch at a time, never whole.
	Batches int
	// Changed is how many stored rows were inserted, updated or deleted;
	// a stream that repeats what is stored changes none.
	Changed int64
}

// DefaultFlushRows is how many emitted rows Replace holds in memory before
// it writes them to its stage, when Store.FlushRows is zero.
const DefaultFlushRows = 5000

// stageRows is how many rows one multi-row INSERT into the stage carries:
// six columns a row keeps it far below both databases' parameter limits.
const stageRows = 1000

// stageColumns are the stage's columns, in the order rows are written.
var stageColumns = []string{"day", "service", "resource_group", "currency", "month", "cost_cents"}

// Replace makes the ledger hold, for the window's subscription and days,
// exactly the rows stream emits: rows of the same subscription, day,
// service, resource group and currency are upserted (emitted twice, they
// are summed), stored rows the stream no longer reports are deleted, and
// the tenant's rollups and the subscription's sync state are refreshed
// for the window. A row's subscription, tenant and month are the
// window's; emitted rows outside the window's days are ignored.
//
// Rows are streamed into a temporary stage on one connection, a batch
// (FlushRows) at a time — with COPY on PostgreSQL and multi-row inserts on
// SQLite, neither of which locks the shared tables — and moved into the
// ledger in one short transaction once stream returns. If stream fails
// (a cloud call fails midway), nothing stored changes and its error is
// returned as is. On PostgreSQL the move holds a transaction-scoped
// advisory lock on the tenant, so two replicas syncing one tenant take
// turns at rebuilding its rollups.
func (s *Store) Replace(ctx context.Context, w Window, syncedAt time.Time, stream func(emit func(Cost) error) error) (Written, error) {
	var out Written
	if w.To < w.From {
		return out, errors.New("ledger: window ends before it starts")
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Close()
	st, err := openStage(ctx, conn, s.DB.Dialect().Name() == dialect.PG && !s.stageByInsert)
	if err != nil {
		return out, fmt.Errorf("ledger: stage: %w", err)
	}
	defer st.Drop()

	flush := s.FlushRows
	if flush <= 0 {
		flush = DefaultFlushRows
	}
	var lastDay Day
	lastMonth := 0
	out.Rows, out.Batches, err = store.WriteBatches(flush, func(emit func(Cost) error) error {
		return stream(func(c Cost) error {
			if c.Day < w.From || c.Day > w.To {
				return nil
			}
			// Rows come day by day: a month is worked out once a day.
			if c.Day != lastDay || lastMonth == 0 {
				lastDay, lastMonth = c.Day, c.Day.Month()
			}
			c.Month = lastMonth
			return emit(c)
		})
	}, func(rows []Cost) error {
		if err := st.write(ctx, rows); err != nil {
			return fmt.Errorf("ledger: stage: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	out.Changed, err = st.move(ctx, w, syncedAt)
	return out, err
}

// stage is the window's staging table.
type stage struct{ *store.Stage }

func openStage(ctx context.Context, conn bun.Conn, useCopy bool) (stage, error) {
	st, err := store.OpenStage(ctx, conn, "cost_stage", `day INTEGER NOT NULL, service TEXT NOT NULL,
		 resource_group TEXT NOT NULL, currency TEXT NOT NULL, month INTEGER NOT NULL, cost_cents BIGINT NOT NULL`, stageColumns, useCopy, stageRows)
	return stage{st}, err
}

func (st stage) write(ctx context.Context, rows []Cost) error {
	return st.Write(ctx, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{int32(r.Day), r.Service, r.ResourceGroup, r.Currency, int32(r.Month), int64(r.Cost)}
	})
}

// move upserts the stage into cost_daily, deletes the window's rows the
// stage lacks, rebuilds the tenant's rollups of the window and records the
// sync state, in one transaction; it returns the rows changed.
func (st stage) move(ctx context.Context, w Window, syncedAt time.Time) (int64, error) {
	// The delete below looks rows up by their key in the stage.
	if _, err := st.Conn.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS cost_stage_key ON cost_stage (day, service, resource_group, currency)`); err != nil {
		return 0, fmt.Errorf("ledger: stage: %w", err)
	}
	pg := st.Conn.Dialect().Name() == dialect.PG
	if pg {
		// Temporary tables are never analysed automatically; without
		// statistics the planner guesses the stage's size.
		if _, err := st.Conn.ExecContext(ctx, `ANALYZE cost_stage`); err != nil {
			return 0, fmt.Errorf("ledger: stage: %w", err)
		}
	}
	var changed int64
	err := st.Conn.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		if pg {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`, "cost_rollup:"+w.TenantID); err != nil {
				return err
			}
		}
		// An unchanged row is not rewritten, so re-fetching the restated
		// days costs no writes for the days that did not change.
		res, err := tx.ExecContext(ctx, `INSERT INTO cost_daily (subscription_id, day, service, resource_group, currency, tenant_id, month, cost_cents)
			SELECT ?, day, service, resource_group, currency, ?, month, SUM(cost_cents) FROM cost_stage
			WHERE day BETWEEN ? AND ?
			GROUP BY day, service, resource_group, currency, month
			ON CONFLICT (subscription_id, day, service, resource_group, currency) DO UPDATE
			SET cost_cents = EXCLUDED.cost_cents, tenant_id = EXCLUDED.tenant_id, month = EXCLUDED.month
			WHERE cost_daily.cost_cents <> EXCLUDED.cost_cents OR cost_daily.tenant_id <> EXCLUDED.tenant_id`,
			w.SubscriptionID, w.TenantID, w.From, w.To)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		changed += n
		res, err = tx.ExecContext(ctx, `DELETE FROM cost_daily WHERE subscription_id = ? AND day BETWEEN ? AND ?
			AND NOT EXISTS (SELECT 1 FROM cost_stage s WHERE s.day = cost_daily.day AND s.service = cost_daily.service
			AND s.resource_group = cost_daily.resource_group AND s.currency = cost_daily.currency)`,
			w.SubscriptionID, w.From, w.To)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		changed += n
		if err := rollup(ctx, tx, w.TenantID, w.From, w.To); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&SyncState{SubscriptionID: w.SubscriptionID, TenantID: w.TenantID, FirstDay: w.From, LastDay: w.To, SyncedAt: syncedAt.UTC()}).
			On("CONFLICT (subscription_id) DO UPDATE").
			Set("tenant_id = EXCLUDED.tenant_id").
			Set("first_day = CASE WHEN EXCLUDED.first_day < ?TableAlias.first_day THEN EXCLUDED.first_day ELSE ?TableAlias.first_day END").
			Set("last_day = EXCLUDED.last_day").
			Set("synced_at = EXCLUDED.synced_at").
			Exec(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: replace %s %s..%s: %w", w.SubscriptionID, w.From, w.To, err)
	}
	return changed, nil
}

// SyncStates returns every subscription's sync state, by subscription id.
func (s *Store) SyncStates(ctx context.Context) (map[string]SyncState, error) {
	var rows []SyncState
	if err := s.DB.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]SyncState, len(rows))
	for _, r := range rows {
		out[r.SubscriptionID] = r
	}
	return out, nil
}
