package domains

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
)

// Filter narrows and orders a list of domains.
type Filter struct {
	TenantIDs []string
	// Grade keeps the domains of one grade.
	Grade string
	// MinScore and MaxScore bound the score, both ends included; a
	// domain not checked yet has no score and is left out by either.
	MinScore, MaxScore *int
	// Problem keeps the domains whose latest check found a problem of
	// this code.
	Problem string
	// Source keeps the directory's or the admins' domains.
	Source string
	// SortBy is score, domain or checked_at; domains not checked yet
	// come last either way.
	SortBy        string
	Desc          bool
	Limit, Offset int
}

// sortColumns are the columns a list sorts by.
var sortColumns = map[string]string{"score": "d.score", "domain": "d.domain", "checked_at": "d.checked_at"}

// List returns a page of the domains the filter keeps, and how many it
// keeps in all.
func (s *Store) List(ctx context.Context, f Filter) ([]Domain, int, error) {
	out := []Domain{}
	if len(f.TenantIDs) == 0 {
		return out, 0, nil
	}
	q := s.DB.NewSelect().Model(&out).Where("d.tenant_id IN (?)", bun.List(f.TenantIDs))
	if f.Grade != "" {
		q = q.Where("d.grade = ?", f.Grade)
	}
	if f.MinScore != nil {
		q = q.Where("d.score >= ?", *f.MinScore)
	}
	if f.MaxScore != nil {
		q = q.Where("d.score <= ?", *f.MaxScore)
	}
	if f.Source != "" {
		q = q.Where("d.source = ?", f.Source)
	}
	if f.Problem != "" {
		q = q.Where("EXISTS (SELECT 1 FROM dmarc_findings AS f WHERE f.domain_id = d.id AND f.tenant_id = d.tenant_id AND f.code = ?)", f.Problem)
	}
	col, ok := sortColumns[f.SortBy]
	if !ok {
		col = sortColumns["score"]
	}
	dir := " ASC"
	if f.Desc {
		dir = " DESC"
	}
	q = q.OrderExpr("CASE WHEN " + col + " IS NULL THEN 1 ELSE 0 END").OrderExpr(col + dir).OrderExpr("d.domain ASC").
		Limit(int64(f.Limit)).Offset(int64(f.Offset))
	total, err := q.ScanAndCount(ctx)
	return out, int(total), err
}

// FindingsOf returns the findings of the domains, by domain id, each
// domain's in the order its check gave them.
func (s *Store) FindingsOf(ctx context.Context, ids []string) (map[string][]Finding, error) {
	out := map[string][]Finding{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []Finding
	if err := s.DB.NewSelect().Model(&rows).Where("f.domain_id IN (?)", bun.List(ids)).Order("f.domain_id", "f.position").Scan(ctx); err != nil {
		return nil, err
	}
	for _, f := range rows {
		out[f.DomainID] = append(out[f.DomainID], f)
	}
	return out, nil
}

// TenantFigures are one tenant's posture figures, counted in the
// database.
type TenantFigures struct {
	TenantID string `bun:"tenant_id"`
	Domains  int64  `bun:"domains"`
	// Checked counts the domains checked at least once, which the other
	// figures are of.
	Checked    int64 `bun:"checked"`
	ScoreSum   int64 `bun:"score_sum"`
	Reject     int64 `bun:"reject"`
	Quarantine int64 `bun:"quarantine"`
	NoPolicy   int64 `bun:"no_policy"`
	WithDKIM   int64 `bun:"with_dkim"`
	DNSErrors  int64 `bun:"dns_errors"`
	// Grades counts the checked domains by grade.
	Grades map[string]int64 `bun:"-"`
}

// Figures counts each tenant's domains and their posture, tenants with
// domains only, by tenant id. The counts are kept under the tenants'
// revision; what it returns is the caller's own.
func (s *Store) Figures(ctx context.Context, tenants []string) ([]TenantFigures, error) {
	if len(tenants) == 0 {
		return []TenantFigures{}, nil
	}
	kept, err := s.caches().figures.Load(ctx, s.DB, RevisionTable, tenants, revcache.Key(tenants), func(ctx context.Context) ([]TenantFigures, error) {
		return s.readFigures(ctx, tenants)
	})
	if err != nil {
		return nil, err
	}
	out := slices.Clone(kept)
	for i := range out {
		out[i].Grades = maps.Clone(out[i].Grades)
	}
	return out, nil
}

// readFigures counts Figures' figures in the database.
func (s *Store) readFigures(ctx context.Context, tenants []string) ([]TenantFigures, error) {
	out := []TenantFigures{}
	err := s.DB.NewSelect().Model((*Domain)(nil)).
		Column("d.tenant_id").
		ColumnExpr("COUNT(*) AS domains").
		ColumnExpr("COUNT(d.score) AS checked").
		ColumnExpr("COALESCE(SUM(d.score), 0) AS score_sum").
		ColumnExpr("COALESCE(SUM(CASE WHEN d.dmarc_policy = 'reject' THEN 1 ELSE 0 END), 0) AS reject").
		ColumnExpr("COALESCE(SUM(CASE WHEN d.dmarc_policy = 'quarantine' THEN 1 ELSE 0 END), 0) AS quarantine").
		ColumnExpr("COALESCE(SUM(CASE WHEN d.score IS NOT NULL AND d.dmarc_policy NOT IN ('reject', 'quarantine') THEN 1 ELSE 0 END), 0) AS no_policy").
		ColumnExpr("COALESCE(SUM(CASE WHEN d.dkim_present > 0 THEN 1 ELSE 0 END), 0) AS with_dkim").
		ColumnExpr("COALESCE(SUM(CASE WHEN d.dns_error <> '' THEN 1 ELSE 0 END), 0) AS dns_errors").
		Where("d.tenant_id IN (?)", bun.List(tenants)).
		Group("d.tenant_id").Order("d.tenant_id").
		Scan(ctx, &out)
	if err != nil {
		return nil, err
	}
	var grades []struct {
		TenantID string `bun:"tenant_id"`
		Grade    string `bun:"grade"`
		N        int64  `bun:"n"`
	}
	err = s.DB.NewSelect().Model((*Domain)(nil)).Column("d.tenant_id", "d.grade").ColumnExpr("COUNT(*) AS n").
		Where("d.tenant_id IN (?)", bun.List(tenants)).Where("d.grade IS NOT NULL").
		Group("d.tenant_id", "d.grade").Scan(ctx, &grades)
	if err != nil {
		return nil, err
	}
	byTenant := map[string]*TenantFigures{}
	for i := range out {
		out[i].Grades = map[string]int64{}
		byTenant[out[i].TenantID] = &out[i]
	}
	for _, g := range grades {
		if t := byTenant[g.TenantID]; t != nil {
			t.Grades[g.Grade] = g.N
		}
	}
	return out, nil
}

// History returns the domain's checks from a time on, oldest first.
func (s *Store) History(ctx context.Context, domainID string, from time.Time) ([]Point, error) {
	out := []Point{}
	err := s.DB.NewSelect().Model(&out).Where("h.domain_id = ?", domainID).Where("h.checked_at >= ?", from.UTC()).
		Order("h.checked_at").Scan(ctx)
	return out, err
}

// EventFilter narrows a list of posture events.
type EventFilter struct {
	TenantIDs     []string
	DomainID      string
	Severity      string
	Since         time.Time
	Limit, Offset int
}

// eventPage is a page of events with how many the filter keeps in all.
type eventPage struct {
	rows  []Event
	total int
}

// Events returns a page of the events the filter keeps, newest first,
// and how many it keeps in all. Without Since, as the DMARC page asks,
// the page is kept under the tenants' revision and the filter. With Since,
// as the API asks, it is read from the database and not kept: Since is
// then the caller's now less some days, an instant no later read asks
// again, so a kept page would only push out those read again.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]Event, int, error) {
	if len(f.TenantIDs) == 0 {
		return []Event{}, 0, nil
	}
	if !f.Since.IsZero() {
		return s.readEvents(ctx, f)
	}
	key := revcache.Key(f.TenantIDs, f.DomainID, f.Severity, strconv.Itoa(f.Limit), strconv.Itoa(f.Offset))
	page, err := s.caches().events.Load(ctx, s.DB, RevisionTable, f.TenantIDs, key, func(ctx context.Context) (eventPage, error) {
		rows, total, err := s.readEvents(ctx, f)
		return eventPage{rows: rows, total: total}, err
	})
	if err != nil {
		return nil, 0, err
	}
	return slices.Clone(page.rows), page.total, nil
}

// readEvents reads Events' page from the database.
func (s *Store) readEvents(ctx context.Context, f EventFilter) ([]Event, int, error) {
	out := []Event{}
	q := s.DB.NewSelect().Model(&out).Where("e.tenant_id IN (?)", bun.List(f.TenantIDs))
	if f.DomainID != "" {
		q = q.Where("e.domain_id = ?", f.DomainID)
	}
	if f.Severity != "" {
		q = q.Where("e.severity = ?", f.Severity)
	}
	if !f.Since.IsZero() {
		q = q.Where("e.occurred_at >= ?", f.Since.UTC())
	}
	total, err := q.OrderExpr("e.occurred_at DESC, e.id DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
	return out, int(total), err
}

// DayScore is the checks of one day (UTC): their scores summed and
// counted, for the average.
type DayScore struct {
	Day      string `bun:"day"`
	ScoreSum int64  `bun:"score_sum"`
	Checks   int64  `bun:"checks"`
}

// Trend sums the scores of the tenants' checks by day (UTC) from a time
// on, oldest first; a day without checks is absent. The sums are kept
// under the tenants' revision and from: they have no end in time, so only
// a write, a check or a domain gone with its history, changes them, and it
// raises the revision.
func (s *Store) Trend(ctx context.Context, tenants []string, from time.Time) ([]DayScore, error) {
	if len(tenants) == 0 {
		return []DayScore{}, nil
	}
	key := revcache.Key(tenants, from.UTC().Format(time.RFC3339Nano))
	out, err := s.caches().trends.Load(ctx, s.DB, RevisionTable, tenants, key, func(ctx context.Context) ([]DayScore, error) {
		return s.readTrend(ctx, tenants, from)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// readTrend sums Trend's scores in the database.
func (s *Store) readTrend(ctx context.Context, tenants []string, from time.Time) ([]DayScore, error) {
	out := []DayScore{}
	// SQLite keeps a time as text that starts with its UTC date.
	day := "substr(h.checked_at, 1, 10)"
	if s.DB.Dialect().Name() == dialect.PG {
		day = "to_char(h.checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	err := s.DB.NewSelect().Model((*Point)(nil)).
		ColumnExpr(day+" AS day").
		ColumnExpr("COALESCE(SUM(h.score), 0) AS score_sum").
		ColumnExpr("COUNT(h.score) AS checks").
		Where("h.tenant_id IN (?)", bun.List(tenants)).Where("h.checked_at >= ?", from.UTC()).
		GroupExpr(day).OrderExpr(day).
		Scan(ctx, &out)
	return out, err
}
