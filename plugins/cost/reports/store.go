package reports

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Store runs the reads' aggregates on the ledger's tables. Every method
// takes the tenants to read; none means no rows, never every tenant.
//
// Totals, TopServices, ByTenant and Daily, which every summary, trend and
// dashboard card runs, keep their results under the revision of the
// tenants' rollups (ledger.RevisionTable), which each rollup raises: the
// same read again costs a read of the revision until a sync, on any
// replica, rolls one of its tenants up again. The slices they return are
// shared between callers, which must not change them. A Store must not be
// copied after first use.
//
// The totals converted into the reporting currency are not kept: they are
// converted on each read from the kept sums per day and currency, since
// the rates change apart from the tenants' revisions.
type Store struct {
	DB *bun.DB
	// Exchange converts multi-currency totals into the reporting
	// currency; nil reports in USD with conversion off.
	Exchange *exchange.Converter

	cacheOnce sync.Once
	cache     *caches
}

// cacheKeys is how many results each kind of kept read holds, the least
// recently used dropped first: a key is a set of tenants with a range.
const cacheKeys = 512

// caches are the kept results of each kind of read.
type caches struct {
	totals      *revcache.Cache[[]CurrencyTotal]
	topServices *revcache.Cache[[]ServiceTotal]
	byTenant    *revcache.Cache[[]TenantTotal]
	daily       *revcache.Cache[[]DayTotal]
	dailyIn     *revcache.Cache[[]DayTotal]
}

func (s *Store) caches() *caches {
	s.cacheOnce.Do(func() {
		s.cache = &caches{
			totals:      revcache.New[[]CurrencyTotal](cacheKeys, revcache.MaxAge),
			topServices: revcache.New[[]ServiceTotal](cacheKeys, revcache.MaxAge),
			byTenant:    revcache.New[[]TenantTotal](cacheKeys, revcache.MaxAge),
			daily:       revcache.New[[]DayTotal](cacheKeys, revcache.MaxAge),
			dailyIn:     revcache.New[[]DayTotal](cacheKeys, revcache.MaxAge),
		}
	})
	return s.cache
}

// kept returns the result of load for the tenants and the read's
// parameters (every value it depends on besides the tenants) from c when
// it was computed at the tenants' current revision, and otherwise loads
// and keeps it. The revision is read before load reads the ledger.
func kept[V any](ctx context.Context, s *Store, c *revcache.Cache[V], tenants []string, params []int, load func(context.Context) (V, error)) (V, error) {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = strconv.Itoa(p)
	}
	return c.Load(ctx, s.DB, ledger.RevisionTable, tenants, revcache.Key(tenants, parts...), load)
}

// Metric is which cost a read sums.
type Metric string

// The metrics.
const (
	// Actual is the cost as billed: a commitment's purchase on the day it
	// is bought, nothing for the usage it covers.
	Actual Metric = "actual"
	// Amortized spreads commitments over their terms: the usage they
	// cover costs its share, their unused part is a cost of its own.
	Amortized Metric = "amortized"
)

// Column is the ledger's column of the metric's cost.
func (m Metric) Column() string {
	if m == Amortized {
		return "amortized_cents"
	}
	return "cost_cents"
}

// param is the metric among a kept read's parameters.
func (m Metric) param() int {
	if m == Amortized {
		return 1
	}
	return 0
}

// sql is query with every cost_cents naming the metric's column: the
// ledger's tables keep both metrics in columns of the same shape.
func (m Metric) sql(query string) string {
	return strings.ReplaceAll(query, "cost_cents", m.Column())
}

// CurrencyTotal is the cost of some tenants over a range in one currency,
// beside the range before it of the same length.
type CurrencyTotal struct {
	Currency string        `bun:"currency"`
	Total    ledger.Amount `bun:"total"`
	Previous ledger.Amount `bun:"previous"`
	// Tenants is how many tenants have costs in the currency in the range.
	Tenants int `bun:"tenants"`
}

// Totals sums the tenants' costs over r and over r.Previous() per
// currency, for the currencies with costs in r. It reads the running
// totals (see the ledger): for each tenant the days r.To (or its last day,
// when earlier), r.From − 1 and r.Previous().From − 1, three rows per
// currency whatever the range's length.
func (s *Store) Totals(ctx context.Context, tenants []string, r Range, m Metric) ([]CurrencyTotal, error) {
	if len(tenants) == 0 {
		return []CurrencyTotal{}, nil
	}
	return kept(ctx, s, s.caches().totals, tenants, []int{int(r.From), int(r.To), m.param()}, func(ctx context.Context) ([]CurrencyTotal, error) {
		return s.totals(ctx, tenants, r, m)
	})
}

// totals is Totals read from the database.
func (s *Store) totals(ctx context.Context, tenants []string, r Range, m Metric) ([]CurrencyTotal, error) {
	out := []CurrencyTotal{}
	prev := r.Previous()
	err := s.DB.NewRaw(m.sql(`WITH bounds AS (SELECT tenant_id,
			CASE WHEN last_day < ? THEN last_day ELSE ? END AS hi,
			CASE WHEN last_day < ? THEN last_day ELSE ? END AS mid
			FROM cost_cumulative_extent WHERE tenant_id IN (?) AND last_day >= ?)
		SELECT currency, CAST(SUM(total) AS BIGINT) AS total, CAST(SUM(previous) AS BIGINT) AS previous,
			SUM(CASE WHEN days > 0 THEN 1 ELSE 0 END) AS tenants
		FROM (SELECT tenant_id, currency, SUM(cur) AS total, SUM(prev) AS previous, SUM(days) AS days FROM (
			SELECT c.tenant_id, c.currency, c.cost_cents AS cur, 0 AS prev, c.days FROM bounds b
				JOIN cost_tenant_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.hi
			UNION ALL SELECT c.tenant_id, c.currency, -c.cost_cents, c.cost_cents, -c.days FROM bounds b
				JOIN cost_tenant_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.mid
			UNION ALL SELECT c.tenant_id, c.currency, 0, -c.cost_cents, 0 FROM bounds b
				JOIN cost_tenant_cumulative c ON c.tenant_id = b.tenant_id AND c.day = ?) probes
			GROUP BY tenant_id, currency) per_tenant
		GROUP BY currency
		HAVING SUM(days) > 0
		ORDER BY currency`),
		r.To, r.To, r.From-1, r.From-1, bun.List(tenants), prev.From, prev.From-1).Scan(ctx, &out)
	return out, err
}

// ServiceTotal is a service's cost in one currency.
type ServiceTotal struct {
	Service  string        `bun:"service"`
	Currency string        `bun:"currency"`
	Total    ledger.Amount `bun:"total"`
}

// TopServices returns the n costliest services of each currency over r,
// costliest first within a currency, currencies in order; a service is
// among them when it has a row in r. It reads the running totals (see the
// ledger): for each tenant and service the day r.To (or the tenant's last
// day, when earlier) minus the day r.From − 1, two rows per series
// whatever the range's length.
func (s *Store) TopServices(ctx context.Context, tenants []string, r Range, n int, m Metric) ([]ServiceTotal, error) {
	if len(tenants) == 0 {
		return []ServiceTotal{}, nil
	}
	return kept(ctx, s, s.caches().topServices, tenants, []int{int(r.From), int(r.To), n, m.param()}, func(ctx context.Context) ([]ServiceTotal, error) {
		return s.topServices(ctx, tenants, r, n, m)
	})
}

// topServices is TopServices read from the database.
func (s *Store) topServices(ctx context.Context, tenants []string, r Range, n int, m Metric) ([]ServiceTotal, error) {
	out := []ServiceTotal{}
	err := s.DB.NewRaw(m.sql(`WITH bounds AS (SELECT tenant_id, CASE WHEN last_day < ? THEN last_day ELSE ? END AS hi
			FROM cost_cumulative_extent WHERE tenant_id IN (?) AND last_day >= ?)
		SELECT service, currency, total FROM (
			SELECT service, currency, CAST(SUM(cost_cents) AS BIGINT) AS total,
				ROW_NUMBER() OVER (PARTITION BY currency ORDER BY SUM(cost_cents) DESC, service) AS pos
			FROM (SELECT c.service, c.currency, c.cost_cents, c.days FROM bounds b
					JOIN cost_service_cumulative c ON c.tenant_id = b.tenant_id AND c.day = b.hi
				UNION ALL SELECT c.service, c.currency, -c.cost_cents, -c.days FROM bounds b
					JOIN cost_service_cumulative c ON c.tenant_id = b.tenant_id AND c.day = ?) probes
			GROUP BY service, currency
			HAVING SUM(days) > 0) ranked
		WHERE pos <= ?
		ORDER BY currency, total DESC, service`),
		r.To, r.To, bun.List(tenants), r.From, r.From-1, n).Scan(ctx, &out)
	return out, err
}

// TenantTotal is one tenant's cost in one currency.
type TenantTotal struct {
	TenantID string        `bun:"tenant_id"`
	Currency string        `bun:"currency"`
	Total    ledger.Amount `bun:"total"`
	// Days is how many days of r have costs in the currency.
	Days int `bun:"days"`
}

// ByTenant sums each tenant's costs over r per currency, ordered by
// currency and then costliest first.
func (s *Store) ByTenant(ctx context.Context, tenants []string, r Range, m Metric) ([]TenantTotal, error) {
	if len(tenants) == 0 {
		return []TenantTotal{}, nil
	}
	return kept(ctx, s, s.caches().byTenant, tenants, []int{int(r.From), int(r.To), m.param()}, func(ctx context.Context) ([]TenantTotal, error) {
		return s.byTenant(ctx, tenants, r, m)
	})
}

// byTenant is ByTenant read from the database.
func (s *Store) byTenant(ctx context.Context, tenants []string, r Range, m Metric) ([]TenantTotal, error) {
	out := []TenantTotal{}
	err := s.DB.NewRaw(m.sql(`SELECT tenant_id, currency, CAST(SUM(cost_cents) AS BIGINT) AS total, COUNT(*) AS days
		FROM cost_tenant_daily
		WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY tenant_id, currency
		ORDER BY currency, total DESC, tenant_id`),
		bun.List(tenants), r.From, r.To).Scan(ctx, &out)
	return out, err
}

// DayTotal is the cost of one day in one currency.
type DayTotal struct {
	Day      ledger.Day    `bun:"day"`
	Currency string        `bun:"currency"`
	Total    ledger.Amount `bun:"total"`
}

// Daily sums the tenants' costs per day and currency over r, for the days
// that have costs, in day and currency order.
func (s *Store) Daily(ctx context.Context, tenants []string, r Range, m Metric) ([]DayTotal, error) {
	if len(tenants) == 0 {
		return []DayTotal{}, nil
	}
	return kept(ctx, s, s.caches().daily, tenants, []int{int(r.From), int(r.To), m.param()}, func(ctx context.Context) ([]DayTotal, error) {
		return s.daily(ctx, tenants, r, m)
	})
}

// DailyIn is Daily of the currencies alone.
func (s *Store) DailyIn(ctx context.Context, tenants, currencies []string, r Range, m Metric) ([]DayTotal, error) {
	if len(tenants) == 0 || len(currencies) == 0 {
		return []DayTotal{}, nil
	}
	// The currencies come from the tenants' totals at the same revision,
	// so the revision and the range determine them.
	return kept(ctx, s, s.caches().dailyIn, tenants, []int{int(r.From), int(r.To), m.param()}, func(ctx context.Context) ([]DayTotal, error) {
		out := []DayTotal{}
		err := s.DB.NewRaw(m.sql(`SELECT day, currency, CAST(SUM(cost_cents) AS BIGINT) AS total
			FROM cost_tenant_daily
			WHERE tenant_id IN (?) AND currency IN (?) AND day BETWEEN ? AND ?
			GROUP BY day, currency
			ORDER BY day, currency`),
			bun.List(tenants), bun.List(currencies), r.From, r.To).Scan(ctx, &out)
		return out, err
	})
}

// daily is Daily read from the database.
func (s *Store) daily(ctx context.Context, tenants []string, r Range, m Metric) ([]DayTotal, error) {
	out := []DayTotal{}
	err := s.DB.NewRaw(m.sql(`SELECT day, currency, CAST(SUM(cost_cents) AS BIGINT) AS total
		FROM cost_tenant_daily
		WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY day, currency
		ORDER BY day, currency`),
		bun.List(tenants), r.From, r.To).Scan(ctx, &out)
	return out, err
}

// TenantDayTotal is a tenant's cost of one day in one currency.
type TenantDayTotal struct {
	TenantID string        `bun:"tenant_id"`
	Day      ledger.Day    `bun:"day"`
	Currency string        `bun:"currency"`
	Total    ledger.Amount `bun:"total"`
}

// TenantDays reads each tenant's costs per day in the currencies over r,
// in tenant, day and currency order.
func (s *Store) TenantDays(ctx context.Context, tenants, currencies []string, r Range, m Metric) ([]TenantDayTotal, error) {
	out := []TenantDayTotal{}
	if len(tenants) == 0 || len(currencies) == 0 {
		return out, nil
	}
	err := s.DB.NewRaw(m.sql(`SELECT tenant_id, day, currency, cost_cents AS total
		FROM cost_tenant_daily
		WHERE tenant_id IN (?) AND currency IN (?) AND day BETWEEN ? AND ?
		ORDER BY tenant_id, day, currency`),
		bun.List(tenants), bun.List(currencies), r.From, r.To).Scan(ctx, &out)
	return out, err
}

// reporting converts costs into the reporting currency: totals, per
// currency, whose part in the reporting currency needs no rate, and the
// sums per day of the other currencies, which days reads for them (in
// code order) when there are any.
func (s *Store) reporting(ctx context.Context, totals map[string]ledger.Amount, days func(ctx context.Context, foreign []string) ([]exchange.DayAmount, error)) (exchange.Reporting, error) {
	var foreign []string
	sums := []exchange.DayAmount{}
	for currency, total := range totals {
		if currency == s.Exchange.Code() {
			sums = append(sums, exchange.DayAmount{Currency: currency, Amount: total})
			continue
		}
		foreign = append(foreign, currency)
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		byDay, err := days(ctx, foreign)
		if err != nil {
			return exchange.Reporting{}, err
		}
		sums = append(sums, byDay...)
	}
	return s.Exchange.Report(ctx, sums)
}

// LastDay is the latest day on or before upTo with costs of the tenants;
// ok is false when they have none.
func (s *Store) LastDay(ctx context.Context, tenants []string, upTo ledger.Day) (day ledger.Day, ok bool, err error) {
	if len(tenants) == 0 {
		return 0, false, nil
	}
	var last sql.NullInt64
	err = s.DB.NewRaw(`SELECT MAX(day) FROM cost_tenant_daily WHERE tenant_id IN (?) AND day <= ?`,
		bun.List(tenants), upTo).Scan(ctx, &last)
	return ledger.Day(last.Int64), last.Valid, err
}

// TenantServiceTotal is a tenant's cost of one service in one currency.
type TenantServiceTotal struct {
	TenantID string        `bun:"tenant_id"`
	Service  string        `bun:"service"`
	Currency string        `bun:"currency"`
	Total    ledger.Amount `bun:"total"`
}

// ByTenantService sums the tenants' costs over r per tenant, service and
// currency, ordered by tenant, currency, costliest service first.
func (s *Store) ByTenantService(ctx context.Context, tenants []string, r Range, m Metric) ([]TenantServiceTotal, error) {
	out := []TenantServiceTotal{}
	if len(tenants) == 0 {
		return out, nil
	}
	err := s.DB.NewRaw(m.sql(`SELECT tenant_id, service, currency, CAST(SUM(cost_cents) AS BIGINT) AS total
		FROM cost_service_daily
		WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY tenant_id, service, currency
		ORDER BY tenant_id, currency, total DESC, service`),
		bun.List(tenants), r.From, r.To).Scan(ctx, &out)
	return out, err
}

// ServiceDay is one row of the service rollup: a tenant's cost of one
// service on one day in one currency.
type ServiceDay struct {
	TenantID string
	Day      ledger.Day
	Service  string
	Currency string
	Cost     ledger.Amount
}

// EachServiceDay calls fn with every service rollup row of the tenants in
// r, ordered by tenant, day, service and currency, reading them from a
// cursor one at a time; an error from fn stops the read and is returned.
func (s *Store) EachServiceDay(ctx context.Context, tenants []string, r Range, m Metric, fn func(ServiceDay) error) error {
	if len(tenants) == 0 {
		return nil
	}
	rows, err := s.DB.QueryContext(ctx, m.sql(`SELECT tenant_id, day, service, currency, cost_cents
		FROM cost_service_daily
		WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		ORDER BY tenant_id, day, service, currency`),
		bun.List(tenants), r.From, r.To)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var row ServiceDay
		if err := rows.Scan(&row.TenantID, &row.Day, &row.Service, &row.Currency, &row.Cost); err != nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

// MonthTotal is a tenant's cost of one calendar month in one currency.
type MonthTotal struct {
	TenantID string
	// Month is yyyymm.
	Month    int
	Currency string
	Total    ledger.Amount
	// Days is how many days of the month have costs in the currency.
	Days int
}

// EachMonth calls fn with the tenants' monthly totals from the day from
// on, ordered by tenant, month and currency, from a cursor.
func (s *Store) EachMonth(ctx context.Context, tenants []string, from ledger.Day, m Metric, fn func(MonthTotal) error) error {
	if len(tenants) == 0 {
		return nil
	}
	rows, err := s.DB.QueryContext(ctx, m.sql(`SELECT tenant_id, month, currency, CAST(SUM(cost_cents) AS BIGINT), COUNT(*)
		FROM cost_tenant_daily
		WHERE tenant_id IN (?) AND day >= ?
		GROUP BY tenant_id, month, currency
		ORDER BY tenant_id, month, currency`),
		bun.List(tenants), from)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var m MonthTotal
		if err := rows.Scan(&m.TenantID, &m.Month, &m.Currency, &m.Total, &m.Days); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Grains of reservation utilisation and of the cost analysis.
const (
	GrainDaily   = "daily"
	GrainMonthly = "monthly"
)

// ReservationUse is one reservation's utilisation over one day or month.
type ReservationUse struct {
	ReservationID      string `bun:"reservation_id"`
	ReservationOrderID string `bun:"reservation_order_id"`
	SKU                string `bun:"sku"`
	// Period is the day (days since 1970-01-01) or the month (yyyymm).
	Period         int     `bun:"period"`
	ReservedHours  float64 `bun:"reserved_hours"`
	UsedHours      float64 `bun:"used_hours"`
	MinUtilization float64 `bun:"min_utilization"`
	AvgUtilization float64 `bun:"avg_utilization"`
	MaxUtilization float64 `bun:"max_utilization"`
	// The hours times the SKU's normalised size ratio, its instance size
	// flexibility group and its ratio (the highest of the period's days,
	// which a SKU's reservation has one of).
	NormalizedReserved float64 `bun:"normalized_reserved"`
	NormalizedUsed     float64 `bun:"normalized_used"`
	FlexibilityGroup   string  `bun:"flexibility_group"`
	NormalizedRatio    float64 `bun:"normalized_ratio"`
	// Cost and Unused are in Currency, empty when no day was priced.
	Currency string        `bun:"currency"`
	Cost     ledger.Amount `bun:"cost"`
	Unused   ledger.Amount `bun:"unused"`
}

// period is the SQL of a row's period of grain: its day, or its month as
// YYYYMM.
func (s *Store) period(grain string) string {
	switch {
	case grain != GrainMonthly:
		return "day"
	case s.DB.Dialect().Name() == dialect.PG:
		return "CAST(to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMM') AS INTEGER)"
	default:
		return "CAST(strftime('%Y%m', day * 86400, 'unixepoch') AS INTEGER)"
	}
}

// Reservations sums a tenant's reservation hours over r per reservation
// and day or month (grain), in period and reservation order.
func (s *Store) Reservations(ctx context.Context, tenantID string, r Range, grain string) ([]ReservationUse, error) {
	period := s.period(grain)
	out := []ReservationUse{}
	err := s.DB.NewRaw(`SELECT reservation_id, MAX(reservation_order_id) AS reservation_order_id, MAX(sku) AS sku,
		`+period+` AS period,
		SUM(reserved_hours) AS reserved_hours, SUM(used_hours) AS used_hours,
		MIN(min_utilization) AS min_utilization, AVG(avg_utilization) AS avg_utilization, MAX(max_utilization) AS max_utilization,
		SUM(reserved_hours * normalized_ratio) AS normalized_reserved, SUM(used_hours * normalized_ratio) AS normalized_used,
		MAX(flexibility_group) AS flexibility_group, MAX(normalized_ratio) AS normalized_ratio, MAX(currency) AS currency,
		CAST(SUM(cost_cents) AS BIGINT) AS cost, CAST(SUM(unused_cents) AS BIGINT) AS unused
		FROM cost_reservations
		WHERE tenant_id = ? AND day BETWEEN ? AND ?
		GROUP BY reservation_id, period
		ORDER BY period, reservation_id`,
		tenantID, r.From, r.To).Scan(ctx, &out)
	return out, err
}
