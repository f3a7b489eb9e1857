package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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
	// Rows is how many cost rows the costs stream emitted, ResourceRows
	// how many the resources stream did.
	Rows, ResourceRows int64
	// Batches is how many times emitted rows were flushed to a stage:
	// a stream is held in memory one batch at a time, never whole.
	Batches int
	// Changed is how many stored rows were inserted, updated or deleted;
	// streams that repeat what is stored change none.
	Changed int64
}

// DefaultFlushRows is how many emitted rows Replace holds in memory before
// it writes them to its stage, when Store.FlushRows is zero.
const DefaultFlushRows = 5000

// stageRows is how many rows one multi-row INSERT into a stage carries:
// seven columns a row keeps it far below both databases' parameter limits.
const stageRows = 1000

// Streams are a window's costs at the ledger's two grains, as the cloud
// reports them now.
type Streams struct {
	// Costs emits the window's rows of cost_daily: per day, service,
	// resource group and currency.
	Costs func(emit func(Cost) error) error
	// Resources emits its rows of cost_resource_daily: per day, resource,
	// service and currency. Nil emits none.
	Resources func(emit func(ResourceDay) error) error
}

// Replace makes the ledger hold, for the window's subscription and days,
// exactly the rows the streams emit, at both grains: rows of the same key
// are upserted (emitted twice, they are summed, so a stream may emit a
// day's actual cost and its amortised cost as two rows), stored rows a stream no
// longer reports are deleted, and the tenant's rollups and the
// subscription's sync state are refreshed for the window. A row's
// subscription, tenant and month are the window's, a resource row's
// resource group the one its id names; emitted rows outside the window's
// days are ignored.
//
// Rows are streamed into temporary stages on one connection, a batch
// (FlushRows) at a time — with COPY on PostgreSQL and multi-row inserts on
// SQLite, neither of which locks the shared tables — the costs first, then
// the resources, and moved into the ledger in one short transaction once
// both streams return. If a stream fails (a cloud call fails midway),
// nothing stored changes and its error is returned as is. On PostgreSQL
// the move holds a transaction-scoped advisory lock on the tenant, so two
// replicas syncing one tenant take turns at rebuilding its rollups.
func (s *Store) Replace(ctx context.Context, w Window, syncedAt time.Time, streams Streams) (Written, error) {
	var out Written
	if w.To < w.From {
		return out, errors.New("ledger: window ends before it starts")
	}
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Close()
	useCopy := s.DB.Dialect().Name() == dialect.PG && !s.stageByInsert
	st, err := openStage(ctx, conn, useCopy)
	if err != nil {
		return out, fmt.Errorf("ledger: stage: %w", err)
	}
	defer st.Drop()
	rst, err := openResourceStage(ctx, conn, useCopy)
	if err != nil {
		return out, fmt.Errorf("ledger: stage: %w", err)
	}
	defer rst.Drop()

	flush := s.FlushRows
	if flush <= 0 {
		flush = DefaultFlushRows
	}
	months := monthsOf(w)
	var batches int
	out.Rows, out.Batches, err = store.WriteBatches(flush, func(emit func(Cost) error) error {
		return streams.Costs(func(c Cost) error {
			if c.Day < w.From || c.Day > w.To {
				return nil
			}
			c.Month = months(c.Day)
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
	if streams.Resources != nil {
		out.ResourceRows, batches, err = store.WriteBatches(flush, func(emit func(ResourceDay) error) error {
			return streams.Resources(func(r ResourceDay) error {
				if r.Day < w.From || r.Day > w.To {
					return nil
				}
				r.Month = months(r.Day)
				r.ResourceID = strings.ToLower(r.ResourceID)
				r.ResourceGroup = ResourceGroupOf(r.ResourceID)
				return emit(r)
			})
		}, func(rows []ResourceDay) error {
			if err := rst.write(ctx, rows); err != nil {
				return fmt.Errorf("ledger: stage: %w", err)
			}
			return nil
		})
		out.Batches += batches
		if err != nil {
			return out, err
		}
	}
	out.Changed, err = st.move(ctx, rst, w, syncedAt)
	return out, err
}

// monthsOf returns the month (yyyymm) of a day of the window, worked out
// once a day: rows come day by day.
func monthsOf(w Window) func(Day) int {
	var last Day
	month := 0
	return func(d Day) int {
		if d != last || month == 0 {
			last, month = d, d.Month()
		}
		return month
	}
}

// ResourceGroupOf is the resource group an ARM resource id names, in the
// id's case: "" for an id that names none, such as the costs of no
// resource.
func ResourceGroupOf(id string) string {
	parts := strings.Split(id, "/")
	for i := 0; i+1 < len(parts); i++ {
		if strings.EqualFold(parts[i], "resourceGroups") {
			return parts[i+1]
		}
	}
	return ""
}

// stageColumns are the cost stage's columns, in the order rows are
// written.
var stageColumns = []string{"day", "service", "resource_group", "currency", "month", "cost_cents", "amortized_cents"}

// stage is the window's staging table of costs.
type stage struct{ *store.Stage }

func openStage(ctx context.Context, conn bun.Conn, useCopy bool) (stage, error) {
	st, err := store.OpenStage(ctx, conn, "cost_stage", `day INTEGER NOT NULL, service TEXT NOT NULL,
		 resource_group TEXT NOT NULL, currency TEXT NOT NULL, month INTEGER NOT NULL, cost_cents BIGINT NOT NULL,
		 amortized_cents BIGINT NOT NULL`, stageColumns, useCopy, stageRows)
	return stage{st}, err
}

func (st stage) write(ctx context.Context, rows []Cost) error {
	return st.Write(ctx, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{int32(r.Day), r.Service, r.ResourceGroup, r.Currency, int32(r.Month), int64(r.Cost), int64(r.Amortized)}
	})
}

// resourceStage is the window's staging table of costs by resource.
type resourceStage struct{ *store.Stage }

// resourceStageColumns are its columns, in the order rows are written.
var resourceStageColumns = []string{"day", "resource_id", "service", "currency", "resource_group", "month", "cost_cents", "amortized_cents"}

func openResourceStage(ctx context.Context, conn bun.Conn, useCopy bool) (resourceStage, error) {
	st, err := store.OpenStage(ctx, conn, "cost_resource_stage", `day INTEGER NOT NULL, resource_id TEXT NOT NULL, service TEXT NOT NULL,
		 currency TEXT NOT NULL, resource_group TEXT NOT NULL, month INTEGER NOT NULL, cost_cents BIGINT NOT NULL,
		 amortized_cents BIGINT NOT NULL`, resourceStageColumns, useCopy, stageRows)
	return resourceStage{st}, err
}

func (st resourceStage) write(ctx context.Context, rows []ResourceDay) error {
	return st.Write(ctx, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{int32(r.Day), r.ResourceID, r.Service, r.Currency, r.ResourceGroup, int32(r.Month), int64(r.Cost), int64(r.Amortized)}
	})
}

// move upserts the stages into cost_daily and cost_resource_daily,
// deletes the window's rows the stages lack, rebuilds the tenant's
// rollups of the window and records the sync state, in one transaction;
// it returns the rows changed.
func (st stage) move(ctx context.Context, rst resourceStage, w Window, syncedAt time.Time) (int64, error) {
	// The deletes below look rows up by their key in the stages.
	for _, q := range []string{
		`CREATE INDEX IF NOT EXISTS cost_stage_key ON cost_stage (day, service, resource_group, currency)`,
		`CREATE INDEX IF NOT EXISTS cost_resource_stage_key ON cost_resource_stage (day, resource_id, service, currency)`,
	} {
		if _, err := st.Conn.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("ledger: stage: %w", err)
		}
	}
	pg := st.Conn.Dialect().Name() == dialect.PG
	if pg {
		// Temporary tables are never analysed automatically; without
		// statistics the planner guesses a stage's size.
		if _, err := st.Conn.ExecContext(ctx, `ANALYZE cost_stage, cost_resource_stage`); err != nil {
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
		for _, q := range []string{
			`INSERT INTO cost_daily (subscription_id, day, service, resource_group, currency, tenant_id, month, cost_cents, amortized_cents)
			SELECT ?0, day, service, resource_group, currency, ?1, month, SUM(cost_cents), SUM(amortized_cents) FROM cost_stage
			WHERE day BETWEEN ?2 AND ?3
			GROUP BY day, service, resource_group, currency, month
			ON CONFLICT (subscription_id, day, service, resource_group, currency) DO UPDATE
			SET cost_cents = EXCLUDED.cost_cents, amortized_cents = EXCLUDED.amortized_cents, tenant_id = EXCLUDED.tenant_id, month = EXCLUDED.month
			WHERE cost_daily.cost_cents <> EXCLUDED.cost_cents OR cost_daily.amortized_cents <> EXCLUDED.amortized_cents
			OR cost_daily.tenant_id <> EXCLUDED.tenant_id`,
			`DELETE FROM cost_daily WHERE subscription_id = ?0 AND day BETWEEN ?2 AND ?3
			AND NOT EXISTS (SELECT 1 FROM cost_stage s WHERE s.day = cost_daily.day AND s.service = cost_daily.service
			AND s.resource_group = cost_daily.resource_group AND s.currency = cost_daily.currency)`,
			`INSERT INTO cost_resource_daily (subscription_id, day, resource_id, service, currency, tenant_id, resource_group, month, cost_cents, amortized_cents)
			SELECT ?0, day, resource_id, service, currency, ?1, resource_group, month, SUM(cost_cents), SUM(amortized_cents) FROM cost_resource_stage
			WHERE day BETWEEN ?2 AND ?3
			GROUP BY day, resource_id, service, currency, resource_group, month
			ON CONFLICT (subscription_id, day, resource_id, service, currency) DO UPDATE
			SET cost_cents = EXCLUDED.cost_cents, amortized_cents = EXCLUDED.amortized_cents, tenant_id = EXCLUDED.tenant_id, month = EXCLUDED.month
			WHERE cost_resource_daily.cost_cents <> EXCLUDED.cost_cents OR cost_resource_daily.amortized_cents <> EXCLUDED.amortized_cents
			OR cost_resource_daily.tenant_id <> EXCLUDED.tenant_id`,
			`DELETE FROM cost_resource_daily WHERE subscription_id = ?0 AND day BETWEEN ?2 AND ?3
			AND NOT EXISTS (SELECT 1 FROM cost_resource_stage s WHERE s.day = cost_resource_daily.day
			AND s.resource_id = cost_resource_daily.resource_id AND s.service = cost_resource_daily.service
			AND s.currency = cost_resource_daily.currency)`,
		} {
			res, err := tx.ExecContext(ctx, q, w.SubscriptionID, w.TenantID, w.From, w.To)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			changed += n
		}
		if err := rollup(ctx, tx, w.TenantID, w.From, w.To); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&SyncState{SubscriptionID: w.SubscriptionID, TenantID: w.TenantID, FirstDay: w.From, LastDay: w.To, SyncedAt: syncedAt.UTC(), GrainsComplete: true}).
			On("CONFLICT (subscription_id) DO UPDATE").
			Set("tenant_id = EXCLUDED.tenant_id").
			Set("first_day = CASE WHEN EXCLUDED.first_day < ?TableAlias.first_day THEN EXCLUDED.first_day ELSE ?TableAlias.first_day END").
			Set("last_day = EXCLUDED.last_day").
			Set("synced_at = EXCLUDED.synced_at").
			Set("grains_complete = EXCLUDED.grains_complete").
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
