// Package audit stores the host's audit log: who did what, to which tenant
// and resource, from where, and with what outcome.
//
// The log is append-only by construction: [Store] can add and read entries
// but offers no way to change or delete one, apart from [Store.Prune], which
// removes entries past the retention period as a whole.
//
// [Recorder] appends the entries of the host's operations, naming the
// request's principal, and [Routes] serve the log to its readers
// (/api/v1/audit-logs and its summary).
package audit

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Entry statuses.
const (
	StatusSuccess = "success"
	StatusFailure = "failure"
	StatusWarning = "warning"
)

// List page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Entry is one audit record.
type Entry struct {
	bun.BaseModel `bun:"table:audit_logs"`

	// ID is assigned by the database and increases with insertion order.
	ID int64 `bun:"id,pk,autoincrement" json:"id"`
	// Timestamp is when the audited event happened, stored in UTC with
	// microsecond precision.
	Timestamp  time.Time `bun:"timestamp,notnull" json:"timestamp"`
	ActorID    string    `bun:"actor_id" json:"actor_id"`
	ActorEmail string    `bun:"actor_email" json:"actor_email"`
	// Action names the event as "<category>.<name>.<outcome>", for example
	// "tenant.create.success".
	Action string `bun:"action" json:"action"`
	// Category is the first segment of Action; Append derives it.
	Category string `bun:"category" json:"category"`
	// Status is one of StatusSuccess, StatusFailure and StatusWarning.
	Status string `bun:"status" json:"status"`
	// TenantID is nil for events that concern no single tenant.
	TenantID     *string        `bun:"tenant_id" json:"tenant_id,omitempty"`
	ResourceType string         `bun:"resource_type" json:"resource_type"`
	ResourceID   string         `bun:"resource_id" json:"resource_id"`
	ClientAddr   string         `bun:"client_addr" json:"client_addr"`
	RequestID    string         `bun:"request_id" json:"request_id"`
	Details      map[string]any `bun:"details" json:"details"`
}

// ValidationError reports an entry or filter that the store refuses as
// malformed: a mistake of the caller (HTTP 422), not a storage failure.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("audit: invalid %s: %s", e.Field, e.Reason)
}

func validStatus(s string) bool {
	return protocol.CheckAuditStatus(s) == nil
}

// Store reads and appends audit entries.
type Store struct {
	db *bun.DB
}

// NewStore returns a Store over db, which must carry the host schema.
func NewStore(db *bun.DB) *Store {
	return &Store{db: db}
}

// Append records e. It fills in Category from Action and, when zero,
// Timestamp with the current time; any ID set by the caller is ignored.
// A malformed Action or Status yields a *ValidationError.
func (s *Store) Append(ctx context.Context, e Entry) error {
	if err := protocol.CheckAuditAction(e.Action); err != nil {
		return &ValidationError{Field: "action", Reason: err.Error()}
	}
	if err := protocol.CheckAuditStatus(e.Status); err != nil {
		return &ValidationError{Field: "status", Reason: err.Error()}
	}

	e.ID = 0
	e.Category, _, _ = strings.Cut(e.Action, ".")
	if e.Timestamp.IsZero() {
		e.Timestamp = time.Now()
	}
	// One zone and PostgreSQL's precision on both databases, so that
	// timestamps read back equal and, on SQLite, sort correctly as text.
	e.Timestamp = e.Timestamp.UTC().Truncate(time.Microsecond)
	if e.TenantID != nil && *e.TenantID == "" {
		e.TenantID = nil
	}
	if e.Details == nil {
		e.Details = map[string]any{}
	}

	if _, err := s.db.NewInsert().Model(&e).Exec(ctx); err != nil {
		return fmt.Errorf("audit: append: %w", err)
	}
	return nil
}

// Filter selects entries for [Store.List]. Zero-valued fields do not
// filter.
type Filter struct {
	ActorID string
	// ActorEmail matches case-insensitively, as e-mail addresses do.
	ActorEmail string
	// Action matches exactly; ActionPrefix matches the start of the action,
	// so "tenant." selects a whole category.
	Action       string
	ActionPrefix string
	TenantID     string
	ResourceType string
	Status       string
	// Since and Until bound Timestamp as [Since, Until).
	Since *time.Time
	Until *time.Time
	// Limit defaults to DefaultLimit and may not exceed MaxLimit.
	Limit  int
	Offset int
}

// List returns one page of the entries matching f, newest first, and the
// number of matching entries across all pages.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, int, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return nil, 0, &ValidationError{Field: "limit", Reason: fmt.Sprintf("must be between 1 and %d", MaxLimit)}
	}
	if f.Offset < 0 {
		return nil, 0, &ValidationError{Field: "offset", Reason: "must not be negative"}
	}
	if f.Status != "" && !validStatus(f.Status) {
		return nil, 0, &ValidationError{Field: "status", Reason: fmt.Sprintf("%q is not a known status", f.Status)}
	}

	items := []Entry{}
	q := s.db.NewSelect().Model(&items)
	if f.ActorID != "" {
		q = q.Where("actor_id = ?", f.ActorID)
	}
	if f.ActorEmail != "" {
		q = q.Where("lower(actor_email) = lower(?)", f.ActorEmail)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if f.ActionPrefix != "" {
		// substr instead of LIKE: '_' occurs in actions and is a LIKE
		// wildcard, and escaping differs between the databases.
		q = q.Where("substr(action, 1, ?) = ?", utf8.RuneCountInString(f.ActionPrefix), f.ActionPrefix)
	}
	if f.TenantID != "" {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.ResourceType != "" {
		q = q.Where("resource_type = ?", f.ResourceType)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Since != nil {
		q = q.Where(`"timestamp" >= ?`, f.Since.UTC())
	}
	if f.Until != nil {
		q = q.Where(`"timestamp" < ?`, f.Until.UTC())
	}

	// id breaks ties between entries stamped in the same microsecond, in
	// insertion order.
	total, err := q.OrderExpr(`"timestamp" DESC, id DESC`).Limit(int64(limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: list: %w", err)
	}
	return items, int(total), nil
}

// SummaryFilter selects entries for [Store.Summary].
type SummaryFilter struct {
	// TenantIDs restricts the count to these tenants; nil counts all
	// entries, tenant-less ones included, while an empty non-nil slice
	// counts nothing.
	TenantIDs []string
	// ActorID restricts the count to one actor when set.
	ActorID string
	// Since excludes entries stamped before it when set.
	Since *time.Time
}

// Summary counts the entries matching f by category.
func (s *Store) Summary(ctx context.Context, f SummaryFilter) (map[string]int, error) {
	counts := map[string]int{}
	if f.TenantIDs != nil && len(f.TenantIDs) == 0 {
		return counts, nil
	}

	var rows []struct {
		Category string `bun:"category"`
		N        int    `bun:"n"`
	}
	q := s.db.NewSelect().
		Model((*Entry)(nil)).
		Column("category").
		ColumnExpr("count(*) AS n").
		Group("category")
	if f.TenantIDs != nil {
		q = q.Where("tenant_id IN (?)", bun.List(f.TenantIDs))
	}
	if f.ActorID != "" {
		q = q.Where("actor_id = ?", f.ActorID)
	}
	if f.Since != nil {
		q = q.Where(`"timestamp" >= ?`, f.Since.UTC())
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("audit: summary: %w", err)
	}
	for _, r := range rows {
		counts[r.Category] = r.N
	}
	return counts, nil
}

// Prune deletes entries stamped before olderThan, for retention, and
// returns how many it removed.
func (s *Store) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	res, err := s.db.NewDelete().
		Model((*Entry)(nil)).
		Where(`"timestamp" < ?`, olderThan.UTC()).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("audit: prune: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("audit: prune: %w", err)
	}
	return n, nil
}
