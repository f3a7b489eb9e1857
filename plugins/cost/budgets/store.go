package budgets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// ErrDuplicate is a budget whose name another budget of the same tenant and
// scope (the whole tenant, or the same subscription) already has.
var ErrDuplicate = errors.New("a budget of that name already exists in the tenant and scope")

// Store keeps budgets and their alerts.
type Store struct{ db *bun.DB }

// NewStore returns a Store on db, migrated with ledger.Migrations.
func NewStore(db *bun.DB) *Store { return &Store{db: db} }

// nameKey is how names compare: case-insensitively, as the provider's do.
func nameKey(name string) string { return strings.ToLower(name) }

// isUniqueViolation reports whether err is a unique index refusing a row.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		return liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || liteErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// Create stores a new budget; a duplicate name is ErrDuplicate.
func (s *Store) Create(ctx context.Context, b *Budget) error {
	b.NameKey = nameKey(b.Name)
	_, err := s.db.NewInsert().Model(b).Exec(ctx)
	if err != nil && isUniqueViolation(err) {
		return ErrDuplicate
	}
	return err
}

// Update writes every column of b; a duplicate name is ErrDuplicate.
func (s *Store) Update(ctx context.Context, b *Budget) error {
	b.NameKey = nameKey(b.Name)
	_, err := s.db.NewUpdate().Model(b).WherePK().Exec(ctx)
	if err != nil && isUniqueViolation(err) {
		return ErrDuplicate
	}
	return err
}

// Get returns the budget of the id, whatever its tenant, or nil: the
// caller decides what may be seen of it.
func (s *Store) Get(ctx context.Context, id string) (*Budget, error) {
	var b Budget
	err := s.db.NewSelect().Model(&b).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// Delete removes a budget and its alerts together.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*Alert)(nil)).Where("budget_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*Budget)(nil)).Where("id = ?", id).Exec(ctx)
		return err
	})
}

// Sort keys of the budget list and what they order by: status by
// severity, name case-insensitively.
var sortColumns = map[string]string{
	"created_at":          "created_at",
	"updated_at":          "updated_at",
	"name":                "name_key",
	"amount":              "amount_cents",
	"current_spend":       "current_spend_cents",
	"utilization_percent": "utilization_percent",
	"status":              "CASE status WHEN 'active' THEN 0 WHEN 'warning' THEN 1 WHEN 'critical' THEN 2 ELSE 3 END",
}

// SortKeys are the sort_by values of the budget list.
var SortKeys = []string{"created_at", "updated_at", "name", "amount", "current_spend", "utilization_percent", "status"}

// ListQuery narrows and orders the budget list.
type ListQuery struct {
	TenantIDs       []string
	SubscriptionIDs []string
	Status          string
	SortBy          string
	Desc            bool
	Limit, Offset   int
}

// List returns a page of the budgets and how many match in all.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Budget, int, error) {
	out := []Budget{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.db.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(q.TenantIDs))
	if len(q.SubscriptionIDs) > 0 {
		sel = sel.Where("subscription_id IN (?)", bun.List(q.SubscriptionIDs))
	}
	if q.Status != "" {
		sel = sel.Where("status = ?", q.Status)
	}
	col, ok := sortColumns[q.SortBy]
	if !ok {
		col = "created_at"
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	// The id breaks ties, so pages neither repeat nor skip a budget.
	sel = sel.OrderExpr(col + dir).OrderExpr("id" + dir).Limit(int64(q.Limit)).Offset(int64(q.Offset))
	total, err := sel.ScanAndCount(ctx)
	return out, int(total), err
}

// CurrencyTotal is the budgets of one currency, summed.
type CurrencyTotal struct {
	Currency     string        `json:"currency" bun:"currency"`
	Budgets      int           `json:"budgets" bun:"budgets"`
	TotalAmount  ledger.Amount `json:"total_amount" bun:"total_amount"`
	CurrentSpend ledger.Amount `json:"current_spend" bun:"current_spend"`
}

// Summary is the budgets of some tenants by status and currency, and
// their alerts by status and type.
type Summary struct {
	TotalBudgets int             `json:"total_budgets"`
	ByStatus     map[string]int  `json:"by_status" doc:"Budgets in each status; every status is present"`
	ByCurrency   []CurrencyTotal `json:"by_currency" doc:"Amounts and current spend summed per currency, never across currencies"`
	Alerts       AlertCounts     `json:"alerts"`
}

// AlertCounts counts alerts by status and by type.
type AlertCounts struct {
	Total    int            `json:"total"`
	ByStatus map[string]int `json:"by_status" doc:"Alerts in each status; every status is present"`
	ByType   map[string]int `json:"by_type" doc:"Pending alerts of each type"`
}

type keyCount struct {
	Key   string `bun:"key"`
	Count int    `bun:"n"`
}

// Summary counts and sums the tenants' budgets and alerts in the database.
func (s *Store) Summary(ctx context.Context, tenantIDs []string) (Summary, error) {
	out := Summary{ByStatus: map[string]int{}, ByCurrency: []CurrencyTotal{},
		Alerts: AlertCounts{ByStatus: map[string]int{}, ByType: map[string]int{AlertThreshold: 0, AlertForecast: 0}}}
	for _, st := range Statuses {
		out.ByStatus[st] = 0
	}
	for _, st := range AlertStatuses {
		out.Alerts.ByStatus[st] = 0
	}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	in := bun.List(tenantIDs)
	var counts []keyCount
	if err := s.db.NewSelect().Model((*Budget)(nil)).ColumnExpr("status AS key, COUNT(*) AS n").
		Where("tenant_id IN (?)", in).Group("status").Scan(ctx, &counts); err != nil {
		return out, err
	}
	for _, c := range counts {
		out.ByStatus[c.Key] = c.Count
		out.TotalBudgets += c.Count
	}
	if err := s.db.NewSelect().Model((*Budget)(nil)).
		ColumnExpr("currency, COUNT(*) AS budgets, CAST(SUM(amount_cents) AS BIGINT) AS total_amount, CAST(SUM(current_spend_cents) AS BIGINT) AS current_spend").
		Where("tenant_id IN (?)", in).Group("currency").Order("currency").Scan(ctx, &out.ByCurrency); err != nil {
		return out, err
	}
	counts = nil
	if err := s.db.NewSelect().Model((*Alert)(nil)).ColumnExpr("status AS key, COUNT(*) AS n").
		Where("tenant_id IN (?)", in).Group("status").Scan(ctx, &counts); err != nil {
		return out, err
	}
	for _, c := range counts {
		out.Alerts.ByStatus[c.Key] = c.Count
		out.Alerts.Total += c.Count
	}
	counts = nil
	if err := s.db.NewSelect().Model((*Alert)(nil)).ColumnExpr("alert_type AS key, COUNT(*) AS n").
		Where("tenant_id IN (?)", in).Where("status = ?", AlertPending).Group("alert_type").Scan(ctx, &counts); err != nil {
		return out, err
	}
	for _, c := range counts {
		out.Alerts.ByType[c.Key] = c.Count
	}
	return out, nil
}

// AlertRow is an alert with its budget's name and subscription.
type AlertRow struct {
	Alert          `bun:",extend"`
	BudgetName     string `bun:"budget_name"`
	SubscriptionID string `bun:"subscription_id"`
}

// AlertQuery narrows the alert list.
type AlertQuery struct {
	TenantIDs     []string
	BudgetID      string
	Types         []string
	Status        string
	Limit, Offset int
}

// Alerts returns a page of alerts, newest first, and how many match.
func (s *Store) Alerts(ctx context.Context, q AlertQuery) ([]AlertRow, int, error) {
	out := []AlertRow{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.alertSelect(&out).Where("a.tenant_id IN (?)", bun.List(q.TenantIDs))
	if q.BudgetID != "" {
		sel = sel.Where("a.budget_id = ?", q.BudgetID)
	}
	if len(q.Types) > 0 {
		sel = sel.Where("a.alert_type IN (?)", bun.List(q.Types))
	}
	if q.Status != "" {
		sel = sel.Where("a.status = ?", q.Status)
	}
	total, err := sel.OrderExpr("a.created_at DESC").OrderExpr("a.id DESC").Limit(int64(q.Limit)).Offset(int64(q.Offset)).ScanAndCount(ctx)
	return out, int(total), err
}

func (s *Store) alertSelect(dst *[]AlertRow) *bun.SelectQuery {
	return s.db.NewSelect().Model(dst).ColumnExpr("a.*").ColumnExpr("b.name AS budget_name, b.subscription_id AS subscription_id").
		Join("JOIN cost_budgets AS b ON b.id = a.budget_id")
}

// AlertsByID returns the alerts of the ids that belong to the tenants.
func (s *Store) AlertsByID(ctx context.Context, ids []int64, tenantIDs []string) ([]AlertRow, error) {
	out := []AlertRow{}
	if len(ids) == 0 || len(tenantIDs) == 0 {
		return out, nil
	}
	err := s.alertSelect(&out).Where("a.id IN (?)", bun.List(ids)).Where("a.tenant_id IN (?)", bun.List(tenantIDs)).OrderExpr("a.id").Scan(ctx)
	return out, err
}

// AckError refuses an acknowledgement as a whole: some alerts are not
// visible to the caller, or are closed (resolved or dismissed).
type AckError struct {
	Missing []int64
	Closed  []int64
}

func (e *AckError) Error() string {
	if len(e.Missing) > 0 {
		return fmt.Sprintf("no budget alert %s", joinIDs(e.Missing))
	}
	return fmt.Sprintf("budget alert %s is resolved or dismissed and cannot be acknowledged", joinIDs(e.Closed))
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

// Acknowledge moves the pending alerts among ids to acknowledged with the
// note, all or none: if any id is not an alert of the tenants, or is
// resolved or dismissed, nothing changes and an *AckError names them.
// Alerts already acknowledged stay as they are. It returns the alerts as
// they are afterwards and the ids it acknowledged.
func (s *Store) Acknowledge(ctx context.Context, ids []int64, tenantIDs []string, by string, note *string, now time.Time) ([]AlertRow, []int64, error) {
	var rows []AlertRow
	var changed []int64
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var found []Alert
		if len(tenantIDs) > 0 {
			if err := tx.NewSelect().Model(&found).Column("id", "status").Where("id IN (?)", bun.List(ids)).
				Where("tenant_id IN (?)", bun.List(tenantIDs)).Scan(ctx); err != nil {
				return err
			}
		}
		status := map[int64]string{}
		for _, a := range found {
			status[a.ID] = a.Status
		}
		var ae AckError
		changed = nil
		for _, id := range ids {
			switch st, ok := status[id]; {
			case !ok:
				ae.Missing = append(ae.Missing, id)
			case st == AlertResolved || st == AlertDismissed:
				ae.Closed = append(ae.Closed, id)
			case st == AlertPending:
				changed = append(changed, id)
			}
		}
		if len(ae.Missing) > 0 || len(ae.Closed) > 0 {
			return &ae
		}
		if len(changed) == 0 {
			return nil
		}
		_, err := tx.NewUpdate().Model((*Alert)(nil)).
			Set("status = ?", AlertAcknowledged).Set("acknowledged_at = ?", now).Set("acknowledged_by = ?", by).Set("resolution_note = ?", note).
			Where("id IN (?)", bun.List(changed)).Where("status = ?", AlertPending).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	rows, err = s.AlertsByID(ctx, ids, tenantIDs)
	return rows, changed, err
}

// Spend sums the budget's ledger costs of the days in its currency: the
// tenant's rollup for a budget of the whole tenant, the subscription's
// raw costs for a subscription budget.
func (s *Store) Spend(ctx context.Context, b *Budget, days Period) (ledger.Amount, error) {
	if days.End < days.Start {
		return 0, nil
	}
	table, where, args := "cost_tenant_daily", "tenant_id = ?", []any{b.TenantID}
	if b.SubscriptionID != "" {
		table, where, args = "cost_daily", "subscription_id = ? AND tenant_id = ?", []any{b.SubscriptionID, b.TenantID}
	}
	var sum int64
	err := s.db.NewSelect().Table(table).ColumnExpr("CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT)").
		Where(where, args...).Where("currency = ?", b.Currency).Where("day BETWEEN ? AND ?", days.Start, days.End).Scan(ctx, &sum)
	return ledger.Amount(sum), err
}

// DailySpend is the budget's cost on each day of days, in its currency,
// summed in the database as Spend sums the period's; a day without costs
// reads 0.
func (s *Store) DailySpend(ctx context.Context, b *Budget, days Period) ([]ledger.Amount, error) {
	out := make([]ledger.Amount, max(0, days.Days()))
	if days.End < days.Start {
		return out, nil
	}
	table, where, args := "cost_tenant_daily", "tenant_id = ?", []any{b.TenantID}
	if b.SubscriptionID != "" {
		table, where, args = "cost_daily", "subscription_id = ? AND tenant_id = ?", []any{b.SubscriptionID, b.TenantID}
	}
	var rows []struct {
		Day  ledger.Day    `bun:"day"`
		Cost ledger.Amount `bun:"cost"`
	}
	err := s.db.NewSelect().Table(table).Column("day").ColumnExpr("CAST(SUM(cost_cents) AS BIGINT) AS cost").
		Where(where, args...).Where("currency = ?", b.Currency).Where("day BETWEEN ? AND ?", days.Start, days.End).
		Group("day").Scan(ctx, &rows)
	for _, r := range rows {
		out[r.Day-days.Start] = r.Cost
	}
	return out, err
}

// HasCosts reports whether the ledger holds costs of the subscription for
// the tenant, which makes it a subscription of the tenant.
func (s *Store) HasCosts(ctx context.Context, tenantID, subscriptionID string) (bool, error) {
	return s.db.NewSelect().Table("cost_daily").Where("subscription_id = ? AND tenant_id = ?", subscriptionID, tenantID).Exists(ctx)
}

// TenantBudgets returns every budget of a tenant.
func (s *Store) TenantBudgets(ctx context.Context, tenantID string) ([]Budget, error) {
	out := []Budget{}
	err := s.db.NewSelect().Model(&out).Where("tenant_id = ?", tenantID).Order("created_at", "id").Scan(ctx)
	return out, err
}

// Evaluation is a budget's figures as of an evaluation, and the alerts it
// raises.
type Evaluation struct {
	Period          Period
	Spend           ledger.Amount
	Forecast        ledger.Amount
	Status          string
	Utilization     float64
	Alerts          []Alert
	ReachedActual   []int
	ReachedForecast []int
	At              time.Time
}

// SaveEvaluation stores an evaluation of b in one transaction: the
// budget's spend and status, each alert unless its crossing already has
// one, pending alerts of earlier periods resolved, and pending alerts of
// this period whose threshold is no longer reached dismissed. It returns
// how many alerts it raised.
func (s *Store) SaveEvaluation(ctx context.Context, b *Budget, ev Evaluation) (int, error) {
	raised := 0
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*Budget)(nil)).Where("id = ?", b.ID).
			Set("period_start = ?", ev.Period.Start).Set("current_spend_cents = ?", ev.Spend).Set("forecast_spend_cents = ?", ev.Forecast).
			Set("utilization_percent = ?", ev.Utilization).Set("status = ?", ev.Status).Set("evaluated_at = ?", ev.At).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // deleted meanwhile
		}
		if len(ev.Alerts) > 0 {
			res, err := tx.NewInsert().Model(&ev.Alerts).On("CONFLICT (budget_id, period_start, alert_type, threshold) DO NOTHING").Exec(ctx)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			raised = int(n)
		}
		note := "the budget's period ended"
		if _, err := tx.NewUpdate().Model((*Alert)(nil)).Set("status = ?", AlertResolved).Set("resolution_note = ?", note).
			Where("budget_id = ? AND status = ? AND period_start < ?", b.ID, AlertPending, ev.Period.Start).Exec(ctx); err != nil {
			return err
		}
		for typ, reached := range map[string][]int{AlertThreshold: ev.ReachedActual, AlertForecast: ev.ReachedForecast} {
			q := tx.NewUpdate().Model((*Alert)(nil)).Set("status = ?", AlertDismissed).
				Set("resolution_note = ?", "the threshold is no longer reached").
				Where("budget_id = ? AND status = ? AND period_start = ? AND alert_type = ?", b.ID, AlertPending, ev.Period.Start, typ)
			if len(reached) > 0 {
				q = q.Where("threshold NOT IN (?)", bun.List(reached))
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	return raised, err
}

// ProviderBudgets returns the tenant's budgets of the subscription that
// have a provider counterpart, by their provider name in lower case.
func (s *Store) ProviderBudgets(ctx context.Context, tenantID, subscriptionID string) (map[string]*Budget, error) {
	var rows []Budget
	if err := s.db.NewSelect().Model(&rows).Where("tenant_id = ? AND subscription_id = ? AND provider_name <> ''", tenantID, subscriptionID).
		Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]*Budget, len(rows))
	for i := range rows {
		out[strings.ToLower(rows[i].ProviderName)] = &rows[i]
	}
	return out, nil
}

// recentAlerts is how many alerts a budget's detail shows.
const recentAlerts = 10

// Recent returns a budget's newest alerts.
func (s *Store) Recent(ctx context.Context, b *Budget) ([]AlertRow, error) {
	rows, _, err := s.Alerts(ctx, AlertQuery{TenantIDs: []string{b.TenantID}, BudgetID: b.ID, Limit: recentAlerts})
	return rows, err
}

// sortedUnique returns the ids sorted without repeats.
func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
