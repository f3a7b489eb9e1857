package checks

import (
	"context"
	"embed"
	"io/fs"
	"slices"
	"time"

	"github.com/uptrace/bun"
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

// Store keeps the assessments in the host's database.
type Store struct {
	DB *bun.DB
}

// Replace stores a tenant's assessment of snap's day, replacing that day's
// earlier one, in one transaction.
func (s *Store) Replace(ctx context.Context, snap Snapshot, results []ResultRow) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
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
func (s *Store) Latest(ctx context.Context, tenants []string, w Window) ([]Snapshot, int, error) {
	out := []Snapshot{}
	if len(tenants) == 0 {
		return out, 0, nil
	}
	n, err := s.DB.NewSelect().Model(&out).
		Join("JOIN (?) AS l ON l.tenant_id = s.tenant_id AND l.day = s.day", s.latest(tenants)).
		OrderExpr(w.order(SnapshotSorts[w.SortBy])).OrderExpr("s.tenant_id").
		Limit(int64(w.Limit)).Offset(int64(w.Offset)).ScanAndCount(ctx)
	return out, int(n), err
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
// tenant and requirement, and how many match.
func (s *Store) Results(ctx context.Context, f ResultFilter, w Window) ([]ResultRow, int, error) {
	out := []ResultRow{}
	if len(f.Tenants) == 0 || len(f.Requirements) == 0 {
		return out, 0, nil
	}
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
	return out, int(n), err
}

// Trend returns the tenants' snapshots from the day from on (YYYY-MM-DD),
// by day and tenant.
func (s *Store) Trend(ctx context.Context, tenants []string, from string) ([]Snapshot, error) {
	out := []Snapshot{}
	if len(tenants) == 0 {
		return out, nil
	}
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
