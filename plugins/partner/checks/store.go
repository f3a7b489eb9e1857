package checks

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the checks' schema, numbered 0001 to 0009; the evidence
// part's migrations start at 0010.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Snapshot is a tenant's assessment on a day.
type Snapshot struct {
	bun.BaseModel    `bun:"table:partner_snapshots,alias:s"`
	TenantID         string    `bun:"tenant_id,pk"`
	Day              string    `bun:"day,pk"`
	Maturity         float64   `bun:"maturity"`
	TargetMaturity   float64   `bun:"target_maturity"`
	Requirements     int       `bun:"requirements"`
	Met              int       `bun:"met"`
	NotMet           int       `bun:"not_met"`
	Unknown          int       `bun:"unknown"`
	AwaitingEvidence int       `bun:"awaiting_evidence"`
	Gaps             int       `bun:"gaps"`
	CriticalGaps     int       `bun:"critical_gaps"`
	DaysLeft         int       `bun:"days_left"`
	CheckedAt        time.Time `bun:"checked_at"`
}

// ResultRow is a requirement's result for a tenant on a day. Category and
// priority are copied from the catalogue so that the lists filter and
// order in the database.
type ResultRow struct {
	bun.BaseModel  `bun:"table:partner_results,alias:r"`
	TenantID       string   `bun:"tenant_id,pk"`
	Day            string   `bun:"day,pk"`
	RequirementID  string   `bun:"requirement_id,pk"`
	Category       string   `bun:"category"`
	Priority       string   `bun:"priority"`
	PriorityRank   int      `bun:"priority_rank"`
	Status         string   `bun:"status"`
	StatusRank     int      `bun:"status_rank"`
	CheckStatus    string   `bun:"check_status"`
	Metric         string   `bun:"metric"`
	Framework      string   `bun:"framework"`
	Value          *float64 `bun:"value"`
	Target         *float64 `bun:"target"`
	Reason         string   `bun:"reason"`
	EvidenceStatus string   `bun:"evidence_status"`
}

// RevisionTable is the assessments' revision table (see package
// revcache): Replace raises the tenant's revision in the transaction that
// stores its assessment, the only write of the snapshots and results.
const RevisionTable = "partner_tenant_revisions"

// cacheKeys bounds each of a Store's caches: the least recently used key
// is dropped first.
const cacheKeys = 256

// Store keeps the assessments in the host's database.
//
// Its reads (Latest, Results and Trend), which the dashboard's card, the
// partner page and the read routes run on every request, keep their
// results under the revision of the tenants' assessments: the same read
// again costs a read of the revision until a run, on any replica, stores
// one of the tenants' assessments again. The slices they return are
// shared between callers, which must not change them (nor the values the
// results' pointers point to). A Store must not be copied after first
// use.
type Store struct {
	DB *bun.DB

	cacheOnce sync.Once
	cache     *caches
}

// caches are the kept results of each kind of read.
type caches struct {
	latest  *revcache.Cache[page[Snapshot]]
	results *revcache.Cache[page[ResultRow]]
	trend   *revcache.Cache[[]Snapshot]
}

// page is a page of a list and how many rows the whole list holds.
type page[T any] struct {
	rows  []T
	total int
}

func (s *Store) caches() *caches {
	s.cacheOnce.Do(func() {
		s.cache = &caches{
			latest:  revcache.New[page[Snapshot]](cacheKeys, revcache.MaxAge),
			results: revcache.New[page[ResultRow]](cacheKeys, revcache.MaxAge),
			trend:   revcache.New[[]Snapshot](cacheKeys, revcache.MaxAge),
		}
	})
	return s.cache
}

// key is the cache key of a read of the tenants with its parameters,
// written in Go syntax (strings quoted, every field named), so that no
// two reads share a key.
func key(tenants []string, params ...any) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = fmt.Sprintf("%#v", p)
	}
	return revcache.Key(tenants, parts...)
}

// Replace stores a tenant's assessment of snap's day, replacing that day's
// earlier one, and raises the tenant's revision, in one transaction.
func (s *Store) Replace(ctx context.Context, snap Snapshot, results []ResultRow) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The revision first: on PostgreSQL its row stays locked until
		// the commit, so two Replaces of one tenant (two replicas' runs)
		// take turns, and the second's delete sees the rows the first
		// inserted instead of its insert colliding with them.
		if err := revcache.Bump(ctx, tx, RevisionTable, snap.TenantID); err != nil {
			return err
		}
		for _, model := range []any{(*ResultRow)(nil), (*Snapshot)(nil)} {
			if _, err := tx.NewDelete().Model(model).Where("tenant_id = ? AND day = ?", snap.TenantID, snap.Day).Exec(ctx); err != nil {
				return err
			}
		}
		if _, err := tx.NewInsert().Model(&snap).Exec(ctx); err != nil {
			return err
		}
		if len(results) == 0 {
			return nil
		}
		_, err := tx.NewInsert().Model(&results).Exec(ctx)
		return err
	})
}

// latest selects each tenant's latest day among tenants.
func (s *Store) latest(tenants []string) *bun.SelectQuery {
	return s.DB.NewSelect().Table("partner_snapshots").ColumnExpr("tenant_id, MAX(day) AS day").
		Where("tenant_id IN (?)", bun.List(tenants)).Group("tenant_id")
}

// Window is a list's page and order.
type Window struct {
	Limit, Offset int
	// SortBy is a column of the list; Desc reverses it.
	SortBy string
	Desc   bool
}

func (w Window) order(column string) string {
	if w.Desc {
		return column + " DESC"
	}
	return column + " ASC"
}

// SnapshotSorts are the orders of Latest, by the name the API gives them.
var SnapshotSorts = map[string]string{"maturity": "s.maturity", "gaps": "s.gaps", "critical_gaps": "s.critical_gaps", "checked_at": "s.checked_at"}

// Latest returns a page of the tenants' latest snapshots, ordered by
// w.SortBy (a key of SnapshotSorts) then tenant, and how many there are.
// They are kept under the tenants' revision and w.
func (s *Store) Latest(ctx context.Context, tenants []string, w Window) ([]Snapshot, int, error) {
	if len(tenants) == 0 {
		return []Snapshot{}, 0, nil
	}
	p, err := s.caches().latest.Load(ctx, s.DB, RevisionTable, tenants, key(tenants, w), func(ctx context.Context) (page[Snapshot], error) {
		return s.readLatest(ctx, tenants, w)
	})
	return p.rows, p.total, err
}

// readLatest reads Latest's page from the database.
func (s *Store) readLatest(ctx context.Context, tenants []string, w Window) (page[Snapshot], error) {
	out := []Snapshot{}
	n, err := s.DB.NewSelect().Model(&out).
		Join("JOIN (?) AS l ON l.tenant_id = s.tenant_id AND l.day = s.day", s.latest(tenants)).
		OrderExpr(w.order(SnapshotSorts[w.SortBy])).OrderExpr("s.tenant_id").
		Limit(int64(w.Limit)).Offset(int64(w.Offset)).ScanAndCount(ctx)
	return page[Snapshot]{rows: out, total: int(n)}, err
}

// ResultFilter narrows the results.
type ResultFilter struct {
	Tenants []string
	// Requirements are the catalogue's ids: a result of a requirement the
	// catalogue no longer holds is left out.
	Requirements []string
	Statuses     []string
	Priority     string
	Category     string
}

// ResultSorts are the orders of Results, by the name the API gives them.
var ResultSorts = map[string]string{"priority": "r.priority_rank", "status": "r.status_rank", "requirement_id": "r.requirement_id",
	"category": "r.category", "value": "r.value"}

// Results returns a page of the results of the tenants' latest
// assessments, ordered by w.SortBy (a key of ResultSorts), then priority,
// tenant and requirement, and how many match. They are kept under the
// tenants' revision, the rest of the filter and w.
func (s *Store) Results(ctx context.Context, f ResultFilter, w Window) ([]ResultRow, int, error) {
	if len(f.Tenants) == 0 || len(f.Requirements) == 0 {
		return []ResultRow{}, 0, nil
	}
	rest := f
	rest.Tenants = nil
	p, err := s.caches().results.Load(ctx, s.DB, RevisionTable, f.Tenants, key(f.Tenants, rest, w), func(ctx context.Context) (page[ResultRow], error) {
		return s.readResults(ctx, f, w)
	})
	return p.rows, p.total, err
}

// readResults reads Results' page from the database.
func (s *Store) readResults(ctx context.Context, f ResultFilter, w Window) (page[ResultRow], error) {
	out := []ResultRow{}
	q := s.DB.NewSelect().Model(&out).
		Join("JOIN (?) AS l ON l.tenant_id = r.tenant_id AND l.day = r.day", s.latest(f.Tenants)).
		Where("r.requirement_id IN (?)", bun.List(f.Requirements))
	if len(f.Statuses) > 0 {
		q = q.Where("r.status IN (?)", bun.List(f.Statuses))
	}
	if f.Priority != "" {
		q = q.Where("r.priority = ?", f.Priority)
	}
	if f.Category != "" {
		q = q.Where("r.category = ?", f.Category)
	}
	sortBy := ResultSorts[w.SortBy]
	if sortBy == "r.value" {
		// A result without a value comes last either way.
		q = q.OrderExpr("CASE WHEN r.value IS NULL THEN 1 ELSE 0 END")
	}
	q = q.OrderExpr(w.order(sortBy))
	for _, tie := range []string{"r.priority_rank", "r.tenant_id", "r.requirement_id"} {
		if tie != sortBy {
			q = q.OrderExpr(tie)
		}
	}
	n, err := q.Limit(int64(w.Limit)).Offset(int64(w.Offset)).ScanAndCount(ctx)
	return page[ResultRow]{rows: out, total: int(n)}, err
}

// Trend returns the tenants' snapshots from the day from on (YYYY-MM-DD),
// by day and tenant. They are kept under the tenants' revision and from,
// which the callers count back from today: a new day reads again.
func (s *Store) Trend(ctx context.Context, tenants []string, from string) ([]Snapshot, error) {
	if len(tenants) == 0 {
		return []Snapshot{}, nil
	}
	return s.caches().trend.Load(ctx, s.DB, RevisionTable, tenants, key(tenants, from), func(ctx context.Context) ([]Snapshot, error) {
		return s.readTrend(ctx, tenants, from)
	})
}

// readTrend reads Trend's snapshots from the database.
func (s *Store) readTrend(ctx context.Context, tenants []string, from string) ([]Snapshot, error) {
	out := []Snapshot{}
	err := s.DB.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(tenants)).Where("day >= ?", from).
		Order("day", "tenant_id").Scan(ctx)
	return out, err
}

// rowsOf are an assessment's results as rows of the day.
func rowsOf(tenantID, day string, a Assessment) []ResultRow {
	rows := make([]ResultRow, len(a.Results))
	for i, r := range a.Results {
		req := r.Requirement
		row := ResultRow{TenantID: tenantID, Day: day, RequirementID: req.ID, Category: req.Category, Priority: string(req.Priority),
			PriorityRank: req.Priority.Rank(), Status: r.Status, StatusRank: slices.Index(Statuses, r.Status) + 1, CheckStatus: r.CheckStatus,
			Value: r.Value, Reason: r.Reason, EvidenceStatus: r.EvidenceStatus}
		if c := req.Check; c != nil {
			target := c.Target
			row.Metric, row.Framework, row.Target = string(c.Metric), c.Framework, &target
		}
		rows[i] = row
	}
	return rows
}
