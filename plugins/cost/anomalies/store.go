package anomalies

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Anomaly is one row of cost_anomalies, and how the API shows it.
type Anomaly struct {
	bun.BaseModel    `bun:"table:cost_anomalies"`
	ID               int64         `bun:"id,pk,autoincrement" json:"id"`
	TenantID         string        `bun:"tenant_id" json:"tenant_id"`
	Service          string        `bun:"service" json:"service"`
	Currency         string        `bun:"currency" json:"currency"`
	Day              ledger.Day    `bun:"day" json:"date" format:"date" doc:"The day the cost was incurred"`
	Month            int           `bun:"month" json:"-"`
	Expected         ledger.Amount `bun:"expected_cents" json:"expected" doc:"The median cost of the same weekday in the four weeks before"`
	Actual           ledger.Amount `bun:"actual_cents" json:"actual"`
	Impact           ledger.Amount `bun:"impact_cents" json:"impact" doc:"actual − expected"`
	DeviationPercent float64       `bun:"deviation_percent" json:"deviation_percent" doc:"The impact as a percentage of the expected cost"`
	Score            float64       `bun:"score" json:"score" doc:"The rise in robust standard deviations (1.4826 × MAD of the four weeks' residuals)"`
	DetectedAt       time.Time     `bun:"detected_at" json:"detected_at" doc:"When the day was first flagged"`
	EvaluatedAt      time.Time     `bun:"evaluated_at" json:"evaluated_at" doc:"When the day was last judged; a restated day is judged again"`
	Acknowledged     bool          `bun:"acknowledged" json:"acknowledged"`
	AcknowledgedBy   *string       `bun:"acknowledged_by" json:"acknowledged_by" doc:"The id of the user or API key that acknowledged it"`
	AcknowledgedAt   *time.Time    `bun:"acknowledged_at" json:"acknowledged_at"`
	Note             *string       `bun:"acknowledgement_note" json:"note" doc:"The note given with the acknowledgement; null without one"`
}

// ListQuery narrows and orders a list of anomalies.
type ListQuery struct {
	TenantIDs []string
	// Acknowledged filters on the flag when set.
	Acknowledged *bool
	// From and To, when set, keep the anomalies of the days from through
	// to, both included.
	From, To *ledger.Day
	// SortBy is one of the keys of sortColumns.
	SortBy        string
	Desc          bool
	Limit, Offset int
}

// sortColumns maps the list's sort_by values to columns.
var sortColumns = map[string]string{
	"detected_at": "detected_at",
	"date":        "day",
	"impact":      "impact_cents",
	"deviation":   "deviation_percent",
	"score":       "score",
	"service":     "service",
}

// queries reads anomalies for the routes.
type queries struct{ db *bun.DB }

func (s queries) scoped(q *bun.SelectQuery, tenantIDs []string, acknowledged *bool) *bun.SelectQuery {
	q = q.Where("tenant_id IN (?)", bun.List(tenantIDs))
	if acknowledged != nil {
		q = q.Where("acknowledged = ?", *acknowledged)
	}
	return q
}

// between keeps the anomalies of the days of q's range.
func between(sel *bun.SelectQuery, q ListQuery) *bun.SelectQuery {
	if q.From != nil {
		sel = sel.Where("day >= ?", *q.From)
	}
	if q.To != nil {
		sel = sel.Where("day <= ?", *q.To)
	}
	return sel
}

// list returns a page of anomalies and how many match in all.
func (s queries) list(ctx context.Context, q ListQuery) ([]Anomaly, int64, error) {
	items := []Anomaly{}
	if len(q.TenantIDs) == 0 {
		return items, 0, nil
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	sel := between(s.scoped(s.db.NewSelect().Model(&items), q.TenantIDs, q.Acknowledged), q).OrderExpr(sortColumns[q.SortBy] + dir)
	// A sync flags a year of days at once: of those detected together,
	// the newest day comes first (or last).
	if q.SortBy == "detected_at" {
		sel = sel.OrderExpr("day" + dir)
	}
	total, err := sel.OrderExpr("id" + dir).
		Limit(int64(q.Limit)).Offset(int64(q.Offset)).ScanAndCount(ctx)
	return items, total, err
}

// top returns the n anomalies of largest impact.
func (s queries) top(ctx context.Context, tenantIDs []string, acknowledged *bool, n int) ([]Anomaly, error) {
	items := []Anomaly{}
	if len(tenantIDs) == 0 {
		return items, nil
	}
	err := s.scoped(s.db.NewSelect().Model(&items), tenantIDs, acknowledged).
		OrderExpr("impact_cents DESC, id ASC").Limit(int64(n)).Scan(ctx)
	return items, err
}

// monthRow is one month and currency of the trend.
type monthRow struct {
	Month        int           `bun:"month"`
	Currency     string        `bun:"currency"`
	Count        int64         `bun:"n"`
	Acknowledged int64         `bun:"acked"`
	Impact       ledger.Amount `bun:"impact"`
}

// byMonth counts anomalies and sums their impact per month (of the day
// the cost was incurred) and currency, for months from through to
// (yyyymm, inclusive).
func (s queries) byMonth(ctx context.Context, tenantIDs []string, from, to int) ([]monthRow, error) {
	rows := []monthRow{}
	if len(tenantIDs) == 0 {
		return rows, nil
	}
	err := s.scoped(s.db.NewSelect().Model((*Anomaly)(nil)), tenantIDs, nil).
		ColumnExpr("month, currency, COUNT(*) AS n").
		ColumnExpr("SUM(CASE WHEN acknowledged THEN 1 ELSE 0 END) AS acked").
		ColumnExpr("SUM(impact_cents) AS impact").
		Where("month BETWEEN ? AND ?", from, to).
		Group("month", "currency").Order("month", "currency").Scan(ctx, &rows)
	return rows, err
}

// ServiceCount is one service's anomalies in one currency.
type ServiceCount struct {
	Service      string        `bun:"service" json:"service"`
	Currency     string        `bun:"currency" json:"currency"`
	Count        int64         `bun:"n" json:"count"`
	Acknowledged int64         `bun:"acked" json:"acknowledged"`
	Impact       ledger.Amount `bun:"impact" json:"total_impact" doc:"The sum of the anomalies' impacts, in the currency"`
	MaxImpact    ledger.Amount `bun:"max_impact" json:"max_impact"`
	LastDay      ledger.Day    `bun:"last_day" json:"last_date" format:"date" doc:"The latest day with an anomaly"`
}

// byService groups anomalies by service and currency, most anomalies
// first, then largest total impact.
func (s queries) byService(ctx context.Context, tenantIDs []string, limit int) ([]ServiceCount, error) {
	rows := []ServiceCount{}
	if len(tenantIDs) == 0 {
		return rows, nil
	}
	err := s.scoped(s.db.NewSelect().Model((*Anomaly)(nil)), tenantIDs, nil).
		ColumnExpr("service, currency, COUNT(*) AS n").
		ColumnExpr("SUM(CASE WHEN acknowledged THEN 1 ELSE 0 END) AS acked").
		ColumnExpr("SUM(impact_cents) AS impact, MAX(impact_cents) AS max_impact, MAX(day) AS last_day").
		Group("service", "currency").
		OrderExpr("n DESC, impact DESC, service ASC, currency ASC").Limit(int64(limit)).Scan(ctx, &rows)
	return rows, err
}

// errNotFound is an anomaly that does not exist.
var errNotFound = errors.New("no such anomaly")

// forUpdate locks the rows q reads until the transaction ends, on
// PostgreSQL, so a sync cannot remove an anomaly between the read and the
// acknowledgement; a SQLite transaction that writes excludes the sync
// anyway.
func forUpdate(q *bun.SelectQuery) *bun.SelectQuery {
	if q.DB().Dialect().Name() == dialect.PG {
		return q.For("UPDATE")
	}
	return q
}

// get reads one anomaly and locks it, in tx.
func get(ctx context.Context, tx bun.IDB, id int64) (Anomaly, error) {
	var a Anomaly
	err := forUpdate(tx.NewSelect().Model(&a).Where("id = ?", id)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return a, errNotFound
	}
	return a, err
}

// acknowledge marks the anomalies of ids that are not yet acknowledged as
// acknowledged by actor at at, with the note (nil for none), and returns
// how many it marked.
func acknowledge(ctx context.Context, tx bun.IDB, ids []int64, actor string, at time.Time, note *string) (int64, error) {
	res, err := tx.NewUpdate().Model((*Anomaly)(nil)).
		Set("acknowledged = ?", true).Set("acknowledged_by = ?", actor).Set("acknowledged_at = ?", at).Set("acknowledgement_note = ?", note).
		Where("id IN (?)", bun.List(ids)).Where("acknowledged = ?", false).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// unacknowledge undoes the acknowledgement of the anomaly of the id, its
// note with it.
func unacknowledge(ctx context.Context, tx bun.IDB, id int64) error {
	_, err := tx.NewUpdate().Model((*Anomaly)(nil)).
		Set("acknowledged = ?", false).Set("acknowledged_by = NULL").Set("acknowledged_at = NULL").Set("acknowledgement_note = NULL").
		Where("id = ?", id).Exec(ctx)
	return err
}

// Store reads anomalies for the plugin's other parts, such as its views,
// with the queries the routes use.
type Store struct{ DB *bun.DB }

// List returns a page of the anomalies q selects, ordered by q.SortBy (one
// of the list route's sort_by values), and how many it selects in all.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Anomaly, int64, error) {
	return queries{s.DB}.list(ctx, q)
}

// Count is how many anomalies the tenants have, only those whose
// acknowledged flag is *acknowledged when it is set.
func (s *Store) Count(ctx context.Context, tenantIDs []string, acknowledged *bool) (int64, error) {
	if len(tenantIDs) == 0 {
		return 0, nil
	}
	q := queries{s.DB}
	n, err := q.scoped(s.DB.NewSelect().Model((*Anomaly)(nil)), tenantIDs, acknowledged).Count(ctx)
	return int64(n), err
}
