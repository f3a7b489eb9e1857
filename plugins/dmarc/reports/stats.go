package reports

import (
	"context"
	"math"
	"time"

	"github.com/uptrace/bun"
)

// GroupBy is what the statistics are grouped by: a column of the records.
var groupColumns = map[string]string{
	"source_ip":   "source_ip",
	"header_from": "header_from",
	"alignment":   "alignment",
	"disposition": "disposition",
	"day":         "day",
}

// GroupByValues are the statistics' groupings, in the order the API
// documents them.
var GroupByValues = []string{"day", "source_ip", "header_from", "alignment", "disposition"}

// StatsFilter narrows the statistics: the records of reports of the
// tenants (and policy domain) that begin on a day from From to To,
// inclusive.
type StatsFilter struct {
	TenantIDs []string
	Domain    string
	From, To  time.Time
}

// Rate is one group's messages and how many passed DMARC.
type Rate struct {
	Key      string
	Messages int64
	Passed   int64
}

// Failed is the group's messages that failed DMARC.
func (r Rate) Failed() int64 { return r.Messages - r.Passed }

// PassPercent is the share of messages that passed, in percent to two
// decimals; nil without messages.
func (r Rate) PassPercent() *float64 {
	if r.Messages == 0 {
		return nil
	}
	p := math.Round(float64(r.Passed)*10000/float64(r.Messages)) / 100
	return &p
}

// Stats is one grouping of the records' rates.
type Stats struct {
	// Total is the rates over every group; Groups counts them.
	Total  Rate
	Groups int
	Items  []Rate
}

// Stats aggregates the records in the database: the groups by groupBy (a
// key of groupColumns), by day in day order, otherwise the most failed
// messages first, at most limit of them, and the totals over all.
func (s *Store) Stats(ctx context.Context, f StatsFilter, groupBy string, limit int) (*Stats, error) {
	out := &Stats{Items: []Rate{}}
	col, ok := groupColumns[groupBy]
	if !ok || len(f.TenantIDs) == 0 {
		return out, nil
	}
	where := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("tenant_id IN (?)", bun.List(f.TenantIDs)).
			Where("day >= ?", f.From.Format(time.DateOnly)).Where("day <= ?", f.To.Format(time.DateOnly))
		if f.Domain != "" {
			q = q.Where("domain = ?", f.Domain)
		}
		return q
	}
	var total struct {
		Groups   int64
		Messages int64
		Passed   int64
	}
	err := where(s.DB.NewSelect().TableExpr("dmarc_report_records").
		ColumnExpr("COUNT(DISTINCT ?) AS n_groups", bun.Ident(col)).
		ColumnExpr("CAST(COALESCE(SUM(count), 0) AS BIGINT) AS messages").
		ColumnExpr("CAST(COALESCE(SUM(CASE WHEN pass THEN count ELSE 0 END), 0) AS BIGINT) AS passed")).
		Scan(ctx, &total.Groups, &total.Messages, &total.Passed)
	if err != nil {
		return nil, err
	}
	out.Total = Rate{Messages: total.Messages, Passed: total.Passed}
	out.Groups = int(total.Groups)
	q := where(s.DB.NewSelect().TableExpr("dmarc_report_records").
		ColumnExpr("? AS group_key", bun.Ident(col)).
		ColumnExpr("CAST(SUM(count) AS BIGINT) AS messages").
		ColumnExpr("CAST(SUM(CASE WHEN pass THEN count ELSE 0 END) AS BIGINT) AS passed")).
		GroupExpr("?", bun.Ident(col)).Limit(int64(limit))
	if groupBy == "day" {
		q = q.OrderExpr("? ASC", bun.Ident(col))
	} else {
		q = q.OrderExpr("SUM(CASE WHEN pass THEN 0 ELSE count END) DESC, SUM(count) DESC, ? ASC", bun.Ident(col))
	}
	rows, err := q.Rows(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r Rate
		if err := rows.Scan(&r.Key, &r.Messages, &r.Passed); err != nil {
			return nil, err
		}
		out.Items = append(out.Items, r)
	}
	return out, rows.Err()
}

// DayRate is one day's messages and DMARC outcome.
type DayRate struct {
	Day         string
	Messages    int64
	Passed      int64
	Failed      int64
	PassPercent *float64
}

// PassRates is the tenants' DMARC outcome per day from from to to
// (inclusive), the days with reports only.
func (s *Store) PassRates(ctx context.Context, tenantIDs []string, from, to time.Time) ([]DayRate, error) {
	st, err := s.Stats(ctx, StatsFilter{TenantIDs: tenantIDs, From: from, To: to}, "day", 1000)
	if err != nil {
		return nil, err
	}
	out := make([]DayRate, 0, len(st.Items))
	for _, r := range st.Items {
		out = append(out, DayRate{Day: r.Key, Messages: r.Messages, Passed: r.Passed, Failed: r.Failed(), PassPercent: r.PassPercent()})
	}
	return out, nil
}

// Source is a sending address with the messages it sent and how many
// failed DMARC.
type Source struct {
	SourceIP    string
	Messages    int64
	Passed      int64
	Failed      int64
	PassPercent *float64
}

// TopFailingSources are the sources with the most messages failing DMARC
// from from to to (inclusive), at most limit of them; sources without a
// failure are left out.
func (s *Store) TopFailingSources(ctx context.Context, tenantIDs []string, from, to time.Time, limit int) ([]Source, error) {
	st, err := s.Stats(ctx, StatsFilter{TenantIDs: tenantIDs, From: from, To: to}, "source_ip", limit)
	if err != nil {
		return nil, err
	}
	out := []Source{}
	for _, r := range st.Items {
		if r.Failed() == 0 {
			break
		}
		out = append(out, Source{SourceIP: r.Key, Messages: r.Messages, Passed: r.Passed, Failed: r.Failed(), PassPercent: r.PassPercent()})
	}
	return out, nil
}
