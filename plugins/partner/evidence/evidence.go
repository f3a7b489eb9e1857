// Package evidence keeps the evidence each tenant gathers for the partner's
// requirements: one record per tenant and requirement with its status,
// owner, due date, notes and links, the files uploaded for it (kept in a
// blob store under generated ids), an admin's review, and the daily job
// that marks accepted evidence past its expiry as expired.
//
// # Lifecycle
//
// A record's status moves only along these transitions:
//
//	not_started -> in_progress                 any caller who sees the tenant (PATCH)
//	in_progress -> submitted | not_started     any caller who sees the tenant (PATCH)
//	submitted   -> in_progress                 any caller who sees the tenant (PATCH: withdrawn)
//	rejected    -> in_progress                 any caller who sees the tenant (PATCH: reworked)
//	expired     -> in_progress                 any caller who sees the tenant (PATCH: renewed)
//	submitted   -> accepted | rejected         an admin, with a reason (POST .../review)
//	accepted    -> expired                     the daily expiry job, once expires_at has passed
//
// A PATCH that names accepted, rejected or expired is a 422 (those are set
// by a review or the schedule, never by an edit); a transition the table
// does not have from the current status is a 409, as is a review of
// evidence that is not submitted. While evidence is submitted or accepted
// its content (owner, due date, notes, links, expiry and files) is frozen,
// so what an admin reviews is what stays accepted: a change is a 409 unless
// the same PATCH moves the record back to in_progress.
package evidence

import (
	"embed"
	"io/fs"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the evidence tables, numbered from 0010, for the
// plugin to merge into its set with store.MergeMigrations.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// The statuses of evidence.
const (
	StatusNotStarted = "not_started"
	StatusInProgress = "in_progress"
	StatusSubmitted  = "submitted"
	StatusAccepted   = "accepted"
	StatusRejected   = "rejected"
	StatusExpired    = "expired"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []string{StatusNotStarted, StatusInProgress, StatusSubmitted, StatusAccepted, StatusRejected, StatusExpired}

// editTransitions are the moves a PATCH may make, from a status to the
// statuses it may go to.
var editTransitions = map[string][]string{
	StatusNotStarted: {StatusInProgress},
	StatusInProgress: {StatusSubmitted, StatusNotStarted},
	StatusSubmitted:  {StatusInProgress},
	StatusRejected:   {StatusInProgress},
	StatusExpired:    {StatusInProgress},
}

// Moves are the statuses a PATCH may move evidence to from status, in
// lifecycle order.
func Moves(status string) []string { return slices.Clone(editTransitions[status]) }

// canEdit reports whether a PATCH may move evidence from one status to
// another.
func canEdit(from, to string) bool { return slices.Contains(editTransitions[from], to) }

// frozen reports whether evidence of the status keeps its content as
// reviewed (or as put up for review).
func frozen(status string) bool { return status == StatusSubmitted || status == StatusAccepted }

// The review decisions.
const (
	DecisionAccepted = StatusAccepted
	DecisionRejected = StatusRejected
)

// Evidence is one tenant's record for one requirement.
type Evidence struct {
	bun.BaseModel `bun:"table:partner_evidence,alias:e"`

	ID            string     `bun:"id,pk"`
	TenantID      string     `bun:"tenant_id"`
	RequirementID string     `bun:"requirement_id"`
	Status        string     `bun:"status"`
	Owner         *string    `bun:"owner"`
	DueDate       *string    `bun:"due_date"`
	Notes         *string    `bun:"notes"`
	Links         []string   `bun:"links,type:text"`
	ExpiresAt     *time.Time `bun:"expires_at"`
	ReviewReason  *string    `bun:"review_reason"`
	ReviewedBy    *string    `bun:"reviewed_by"`
	ReviewedAt    *time.Time `bun:"reviewed_at"`
	CreatedBy     string     `bun:"created_by"`
	UpdatedBy     string     `bun:"updated_by"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`

	// FileCount is how many files the evidence has; lists fill it.
	FileCount int `bun:"file_count,scanonly"`
}

// File is a file uploaded for evidence.
type File struct {
	bun.BaseModel `bun:"table:partner_evidence_files,alias:f"`

	ID          string    `bun:"id,pk"`
	EvidenceID  string    `bun:"evidence_id"`
	TenantID    string    `bun:"tenant_id"`
	FileName    string    `bun:"file_name"`
	ContentType string    `bun:"content_type"`
	SizeBytes   int64     `bun:"size_bytes"`
	SHA256      string    `bun:"sha256"`
	UploadedBy  string    `bun:"uploaded_by"`
	UploadedAt  time.Time `bun:"uploaded_at"`
}
