package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
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
	// Cost is the actual cost, Amortized the amortised cost.
	Cost      Amount `bun:"cost_cents"`
	Amortized Amount `bun:"amortized_cents"`
}

// SyncState is how far a subscription's costs have been synced.
type SyncState struct {
	bun.BaseModel  `bun:"table:cost_sync_state"`
	SubscriptionID string    `bun:"subscription_id,pk"`
	TenantID       string    `bun:"tenant_id"`
	FirstDay       Day       `bun:"first_day"`
	LastDay        Day       `bun:"last_day"`
	SyncedAt       time.Time `bun:"synced_at"`
	// GrainsComplete is whether the subscription's costs were fetched at
	// both grains, actual and amortised, since its first day: false on a
	// ledger synced before it kept them, until a sync from the first day.
	GrainsComplete bool `bun:"grains_complete"`
}

// ResourceDay is one row of cost_resource_daily: a resource's cost under a
// service on a day.
type ResourceDay struct {
	bun.BaseModel  `bun:"table:cost_resource_daily"`
	SubscriptionID string `bun:"subscription_id,pk"`
	Day            Day    `bun:"day,pk"`
	// ResourceID is lower case; empty for the costs of no resource.
	ResourceID    string `bun:"resource_id,pk"`
	Service       string `bun:"service,pk"`
	Currency      string `bun:"currency,pk"`
	TenantID      string `bun:"tenant_id"`
	ResourceGroup string `bun:"resource_group"`
	Month         int    `bun:"month"`
	Cost          Amount `bun:"cost_cents"`
	Amortized     Amount `bun:"amortized_cents"`
}

// Reservation is one reservation's utilisation on one day.
type Reservation struct {
	bun.BaseModel      `bun:"table:cost_reservations"`
	TenantID           string  `bun:"tenant_id,pk"`
	ReservationID      string  `bun:"reservation_id,pk"`
	Day                Day     `bun:"day,pk"`
	ReservationOrderID string  `bun:"reservation_order_id"`
	SKU                string  `bun:"sku"`
	ReservedHours      float64 `bun:"reserved_hours"`
	UsedHours          float64 `bun:"used_hours"`
	MinUtilization     float64 `bun:"min_utilization"`
	AvgUtilization     float64 `bun:"avg_utilization"`
	MaxUtilization     float64 `bun:"max_utilization"`
	// FlexibilityGroup and NormalizedRatio are the SKU's instance size
	// flexibility: a reserved hour counts as NormalizedRatio hours of the
	// group's smallest size.
	FlexibilityGroup string  `bun:"flexibility_group"`
	NormalizedRatio  float64 `bun:"normalized_ratio"`
	// Cost is the day's share of the purchase price in Currency, and
	// Unused the part of it the unused hours wasted; both 0 and Currency
	// empty when the purchase is not known.
	Currency string    `bun:"currency"`
	Cost     Amount    `bun:"cost_cents"`
	Unused   Amount    `bun:"unused_cents"`
	SyncedAt time.Time `bun:"synced_at"`
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
				Set("amortized_cents = EXCLUDED.amortized_cents").
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
// (inclusive) from cost_daily, and the tenant's running totals from the
// day from on, in one transaction, so a reader sees the old figures or
// the new, never a mix.
func (s *Store) Rollup(ctx context.Context, tenantID string, from, to Day) error {
	if to < from {
		return errors.New("ledger: rollup range ends before it starts")
	}
	return s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		return rollup(ctx, tx, tenantID, from, to)
	})
}

// RevisionTable is the table of each tenant's revision of its rollups and
// running totals (see core/revcache): every rollup raises it in its
// transaction, so results read from them can be kept until it changes.
const RevisionTable = "cost_tenant_revisions"

// rollup rebuilds the rollups of a tenant's days, and its running totals
// from the first of them on, inside the caller's transaction, and raises
// the tenant's revision there.
func rollup(ctx context.Context, tx bun.IDB, tenantID string, from, to Day) error {
	if err := revcache.Bump(ctx, tx, RevisionTable, tenantID); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM cost_service_daily WHERE tenant_id = ? AND day BETWEEN ? AND ?`,
		`INSERT INTO cost_service_daily (tenant_id, day, service, currency, month, cost_cents, amortized_cents)
		 SELECT tenant_id, day, service, currency, month, SUM(cost_cents), SUM(amortized_cents) FROM cost_daily
		 WHERE tenant_id = ? AND day BETWEEN ? AND ? GROUP BY tenant_id, day, service, currency, month`,
		`DELETE FROM cost_tenant_daily WHERE tenant_id = ? AND day BETWEEN ? AND ?`,
		`INSERT INTO cost_tenant_daily (tenant_id, day, currency, month, cost_cents, amortized_cents)
		 SELECT tenant_id, day, currency, month, SUM(cost_cents), SUM(amortized_cents) FROM cost_service_daily
		 WHERE tenant_id = ? AND day BETWEEN ? AND ? GROUP BY tenant_id, day, currency, month`,
	} {
		if _, err := tx.ExecContext(ctx, q, tenantID, from, to); err != nil {
			return err
		}
	}
	return cumulate(ctx, tx, tenantID, from)
}

// cumulative is a table of running totals (see the migration
// 0004_cumulative) and the daily rollup it sums.
type cumulative struct {
	table, daily string
	// series are the columns, beside tenant_id, that name a series.
	series []string
}

var cumulatives = []cumulative{
	{table: "cost_service_cumulative", daily: "cost_service_daily", series: []string{"service", "currency"}},
	{table: "cost_tenant_cumulative", daily: "cost_tenant_daily", series: []string{"currency"}},
}

// matches is the join condition of two relations on the series columns.
func (c cumulative) matches(a, b string) string {
	conds := make([]string, len(c.series))
	for i, col := range c.series {
		conds[i] = a + "." + col + " = " + b + "." + col
	}
	return strings.Join(conds, " AND ")
}

// cumulate rebuilds a tenant's running totals from the day from on, after
// its daily rollups changed from that day on — from an earlier day when
// the totals end before from, so they stay dense. Each series starts from
// its total of the day before and adds every day's cost, counting the days
// with a row, through the tenant's last day with costs. Rows are written
// day by day, so the rows of one day, which a read fetches together, lie
// together.
func cumulate(ctx context.Context, tx bun.IDB, tenantID string, from Day) error {
	var extent []int64
	if err := tx.NewRaw(`SELECT last_day FROM cost_cumulative_extent WHERE tenant_id = ?`, tenantID).Scan(ctx, &extent); err != nil {
		return err
	}
	start := from
	if len(extent) == 1 && Day(extent[0])+1 < start {
		start = Day(extent[0]) + 1
	}
	var last sql.NullInt64
	if err := tx.NewRaw(`SELECT MAX(day) FROM cost_tenant_daily WHERE tenant_id = ?`, tenantID).Scan(ctx, &last); err != nil {
		return err
	}
	if !last.Valid {
		// No costs at all: no running totals either.
		for _, table := range []string{"cost_service_cumulative", "cost_tenant_cumulative", "cost_cumulative_extent"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ?`, tenantID); err != nil {
				return err
			}
		}
		return nil
	}
	for _, c := range cumulatives {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+c.table+` WHERE tenant_id = ? AND day >= ?`, tenantID, start); err != nil {
			return err
		}
		if Day(last.Int64) < start {
			continue
		}
		cols := strings.Join(c.series, ", ")
		_, err := tx.ExecContext(ctx, `INSERT INTO `+c.table+` (tenant_id, day, `+cols+`, cost_cents, amortized_cents, days)
			WITH RECURSIVE span (day) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT day + 1 FROM span WHERE day < ?),
			base AS (SELECT `+cols+`, cost_cents, amortized_cents, days FROM `+c.table+` WHERE tenant_id = ? AND day = ?),
			series AS (SELECT `+cols+` FROM base UNION SELECT `+cols+` FROM `+c.daily+` WHERE tenant_id = ? AND day >= ?)
			SELECT ?, span.day, series.`+strings.Join(c.series, ", series.")+`,
				COALESCE(base.cost_cents, 0) + SUM(COALESCE(d.cost_cents, 0)) OVER w,
				COALESCE(base.amortized_cents, 0) + SUM(COALESCE(d.amortized_cents, 0)) OVER w, COALESCE(base.days, 0) + COUNT(d.day) OVER w
			FROM series CROSS JOIN span
			LEFT JOIN base ON `+c.matches("base", "series")+`
			LEFT JOIN `+c.daily+` d ON d.tenant_id = ? AND d.day = span.day AND `+c.matches("d", "series")+`
			WINDOW w AS (PARTITION BY series.`+strings.Join(c.series, ", series.")+` ORDER BY span.day ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
			ORDER BY span.day`,
			start, last.Int64, tenantID, start-1, tenantID, start, tenantID, tenantID)
		if err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO cost_cumulative_extent (tenant_id, last_day)
		SELECT tenant_id, MAX(day) FROM cost_tenant_cumulative WHERE tenant_id = ? GROUP BY tenant_id
		ON CONFLICT (tenant_id) DO UPDATE SET last_day = EXCLUDED.last_day`, tenantID)
	return err
}
