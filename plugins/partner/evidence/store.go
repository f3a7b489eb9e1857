package evidence

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// Store keeps evidence records and their files' metadata.
type Store struct {
	DB *bun.DB
	// Now is the clock Statuses reads expiry against; nil is time.Now.
	Now func() time.Time
}

// ErrExists is Create's error when the tenant already has evidence for
// the requirement.
var ErrExists = errors.New("evidence: the tenant already has evidence for the requirement")

// ErrChanged is the error of a write whose record is gone or no longer in
// the status it was read in (another request moved it meanwhile), or is
// frozen for review.
var ErrChanged = errors.New("evidence: the record changed meanwhile")

// Create stores new evidence; ErrExists when the tenant has evidence for
// the requirement already.
func (s *Store) Create(ctx context.Context, e *Evidence) error {
	if e.Links == nil {
		e.Links = []string{}
	}
	_, err := s.DB.NewInsert().Model(e).Exec(ctx)
	if err == nil {
		return nil
	}
	// Both databases name a unique violation differently; a row of the
	// tenant and requirement found after the failure is the conflict.
	n, cerr := s.DB.NewSelect().Model((*Evidence)(nil)).Where("tenant_id = ?", e.TenantID).Where("requirement_id = ?", e.RequirementID).Count(ctx)
	if cerr == nil && n > 0 {
		return ErrExists
	}
	return err
}

// Get returns the evidence if it belongs to one of the tenants, else nil.
func (s *Store) Get(ctx context.Context, id string, tenantIDs []string) (*Evidence, error) {
	if len(tenantIDs) == 0 {
		return nil, nil
	}
	var e Evidence
	err := s.withFileCount(s.DB.NewSelect().Model(&e)).Where("e.id = ?", id).Where("e.tenant_id IN (?)", bun.List(tenantIDs)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

func (s *Store) withFileCount(q *bun.SelectQuery) *bun.SelectQuery {
	files := s.DB.NewSelect().TableExpr("partner_evidence_files AS f").ColumnExpr("COUNT(*)").Where("f.evidence_id = e.id")
	return q.ColumnExpr("e.*").ColumnExpr("(?) AS file_count", files)
}

// editColumns are what a PATCH writes.
var editColumns = []string{"status", "owner", "due_date", "notes", "links", "expires_at", "updated_by", "updated_at"}

// Update writes an edit of the evidence, provided it is still in status
// from; ErrChanged if it is not.
func (s *Store) Update(ctx context.Context, e *Evidence, from string) error {
	if e.Links == nil {
		e.Links = []string{}
	}
	res, err := s.DB.NewUpdate().Model(e).Column(editColumns...).WherePK().Where("status = ?", from).Exec(ctx)
	return changed(res, err)
}

// Review records an admin's decision on submitted evidence: its status,
// the reason, who and when, and the expiry it sets; ErrChanged if the
// evidence is no longer submitted.
func (s *Store) Review(ctx context.Context, e *Evidence) error {
	res, err := s.DB.NewUpdate().Model(e).
		Column("status", "review_reason", "reviewed_by", "reviewed_at", "expires_at", "updated_by", "updated_at").
		WherePK().Where("status = ?", StatusSubmitted).Exec(ctx)
	return changed(res, err)
}

func changed(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrChanged
	}
	return nil
}

// Expire marks accepted evidence whose expires_at is at or before now as
// expired by actor, of the tenants when any are given, and returns the
// records it changed. Evidence marked
// already, or accepted again since, is left alone, so a run repeated is
// a no-op.
func (s *Store) Expire(ctx context.Context, now time.Time, actor string, tenantIDs []string) ([]Evidence, error) {
	out := []Evidence{}
	q := s.DB.NewUpdate().Model((*Evidence)(nil)).
		Set("status = ?", StatusExpired).Set("updated_by = ?", actor).Set("updated_at = ?", now).
		Where("status = ?", StatusAccepted).Where("expires_at IS NOT NULL").Where("expires_at <= ?", now)
	if len(tenantIDs) > 0 {
		q = q.Where("tenant_id IN (?)", bun.List(tenantIDs))
	}
	_, err := q.Returning("id, tenant_id, requirement_id, status, expires_at, updated_by, updated_at").Exec(ctx, &out)
	return out, err
}

// Expiring returns the accepted evidence of the tenants (every tenant when
// none are given) that expires after now and by until, soonest first.
func (s *Store) Expiring(ctx context.Context, now, until time.Time, tenantIDs []string) ([]Evidence, error) {
	out := []Evidence{}
	q := s.DB.NewSelect().Model(&out).Column("id", "tenant_id", "requirement_id", "status", "expires_at").
		Where("status = ?", StatusAccepted).Where("expires_at IS NOT NULL").Where("expires_at > ?", now).Where("expires_at <= ?", until).
		Order("expires_at", "id")
	if len(tenantIDs) > 0 {
		q = q.Where("tenant_id IN (?)", bun.List(tenantIDs))
	}
	return out, q.Scan(ctx)
}

// SortKeys are the list's sort keys.
var SortKeys = []string{"updated_at", "created_at", "due_date", "requirement_id", "status"}

// ListQuery narrows the evidence list.
type ListQuery struct {
	TenantIDs      []string
	RequirementIDs []string
	Statuses       []string
	// SortBy is one of SortKeys; empty is updated_at.
	SortBy        string
	Desc          bool
	Limit, Offset int
}

// order is the ORDER BY of the query's sort. Evidence without a due date
// sorts last either way, on both databases; the id breaks ties.
func (q ListQuery) order() string {
	key := q.SortBy
	if !slices.Contains(SortKeys, key) {
		key = SortKeys[0]
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	order := "e." + key + dir
	if key == "due_date" {
		order = "(e.due_date IS NULL) ASC, " + order
	}
	return order + ", e.id ASC"
}

// List returns a page of the tenants' evidence and how many match in all.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Evidence, int, error) {
	out := []Evidence{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.withFileCount(s.DB.NewSelect().Model(&out)).Where("e.tenant_id IN (?)", bun.List(q.TenantIDs))
	if len(q.RequirementIDs) > 0 {
		sel = sel.Where("e.requirement_id IN (?)", bun.List(q.RequirementIDs))
	}
	if len(q.Statuses) > 0 {
		sel = sel.Where("e.status IN (?)", bun.List(q.Statuses))
	}
	total, err := sel.OrderExpr(q.order()).Limit(int64(q.Limit)).Offset(int64(q.Offset)).ScanAndCount(ctx)
	return out, int(total), err
}

// Statuses returns the status of each requirement the tenant has
// evidence for, by requirement id. A requirement without evidence is
// absent, which reads as not_started. Accepted evidence whose expires_at
// has passed reads as expired, though the daily expiry has not marked it
// yet, so it never meets a requirement past its expiry.
func (s *Store) Statuses(ctx context.Context, tenantID string) (map[string]string, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	var rows []struct {
		RequirementID string `bun:"requirement_id"`
		Status        string `bun:"status"`
	}
	err := s.DB.NewSelect().Model((*Evidence)(nil)).Column("requirement_id").
		ColumnExpr("CASE WHEN status = ? AND expires_at IS NOT NULL AND expires_at <= ? THEN ? ELSE status END AS status",
			StatusAccepted, now().UTC(), StatusExpired).
		Where("tenant_id = ?", tenantID).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.RequirementID] = r.Status
	}
	return out, nil
}

// ErrTooManyFiles is AddFile's error when the evidence has its most
// files already.
var ErrTooManyFiles = errors.New("evidence: too many files")

// AddFile records an uploaded file and touches its evidence, in one
// transaction; ErrChanged if the evidence is frozen for review,
// ErrTooManyFiles if it has maxFiles files already.
func (s *Store) AddFile(ctx context.Context, f *File, maxFiles int) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := touch(ctx, tx, f.EvidenceID, f.UploadedBy, f.UploadedAt); err != nil {
			return err
		}
		n, err := tx.NewSelect().Model((*File)(nil)).Where("evidence_id = ?", f.EvidenceID).Count(ctx)
		if err != nil {
			return err
		}
		if n >= int64(maxFiles) {
			return ErrTooManyFiles
		}
		_, err = tx.NewInsert().Model(f).Exec(ctx)
		return err
	})
}

// DeleteFile removes a file's record and touches its evidence, in one
// transaction; ErrChanged if the evidence is frozen for review or the
// file is gone.
func (s *Store) DeleteFile(ctx context.Context, f *File, by string, at time.Time) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := touch(ctx, tx, f.EvidenceID, by, at); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model(f).WherePK().Exec(ctx)
		return changed(res, err)
	})
}

// touch marks evidence updated, provided it is not frozen; the update
// also holds the row until the transaction ends, so a review cannot
// accept evidence whose files are changing.
func touch(ctx context.Context, tx bun.Tx, evidenceID, by string, at time.Time) error {
	res, err := tx.NewUpdate().Model((*Evidence)(nil)).Set("updated_by = ?", by).Set("updated_at = ?", at).
		Where("id = ?", evidenceID).Where("status NOT IN (?)", bun.List([]string{StatusSubmitted, StatusAccepted})).Exec(ctx)
	return changed(res, err)
}

// Files returns the evidence's files, oldest first.
func (s *Store) Files(ctx context.Context, evidenceID string) ([]File, error) {
	out := []File{}
	err := s.DB.NewSelect().Model(&out).Where("evidence_id = ?", evidenceID).OrderExpr("uploaded_at ASC, id ASC").Scan(ctx)
	return out, err
}

// FilesOf returns the files of the evidence records, oldest first.
func (s *Store) FilesOf(ctx context.Context, evidenceIDs []string) ([]File, error) {
	out := []File{}
	if len(evidenceIDs) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Model(&out).Where("evidence_id IN (?)", bun.List(evidenceIDs)).OrderExpr("uploaded_at ASC, id ASC").Scan(ctx)
	return out, err
}

// File returns one file of the evidence, or nil.
func (s *Store) File(ctx context.Context, evidenceID, fileID string) (*File, error) {
	var f File
	err := s.DB.NewSelect().Model(&f).Where("id = ?", fileID).Where("evidence_id = ?", evidenceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &f, nil
}
