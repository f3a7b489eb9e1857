package jobs

import (
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// RunStatus is the lifecycle state of a run: queued, then running, then
// completed or failed.
type RunStatus string

const (
	StatusQueued    RunStatus = "queued"
	StatusRunning   RunStatus = "running"
	StatusCompleted RunStatus = "completed"
	StatusFailed    RunStatus = "failed"
)

// activeStatuses are the states of a run that has not finished; such a run
// must keep its heartbeat fresh.
var activeStatuses = []RunStatus{StatusQueued, StatusRunning}

// Trigger says what started a run.
type Trigger string

const (
	TriggerSchedule Trigger = "schedule"
	TriggerManual   Trigger = "manual"
)

// SeverityError is the severity of the alert raised for a failed run.
const SeverityError = "error"

var (
	// ErrUnknownJobType is returned by Trigger when no registered job has
	// the requested job type.
	ErrUnknownJobType = errors.New("jobs: unknown job type")
	// ErrNotFound is returned when a run or alert does not exist.
	ErrNotFound = errors.New("jobs: not found")
	// ErrAlreadyResolved is returned by ResolveAlert for an alert that was
	// resolved before.
	ErrAlreadyResolved = errors.New("jobs: alert already resolved")
	// ErrStopped is returned by Trigger once Stop has been called.
	ErrStopped = errors.New("jobs: scheduler stopped")
	// ErrRequeue, wrapped in a Runner's error, says the run was cut short
	// by something other than the job itself (an upgrade stopped its
	// plugin's process): the scheduler starts the run again, up to
	// MaxAttempts starts in all, instead of failing it.
	ErrRequeue = errors.New("jobs: run interrupted; queue it again")
)

// MaxAttempts bounds the starts of one run that ErrRequeue interrupts.
const MaxAttempts = 3

// Progress is what a running job reports about itself.
type Progress struct {
	Done    int64  `bun:"done,notnull" json:"done"`
	Total   int64  `bun:"total,notnull" json:"total"`
	Message string `bun:"message,notnull" json:"message"`
}

// Run is one execution of a job, as stored and as listed in the history.
type Run struct {
	bun.BaseModel `bun:"table:job_runs,alias:run" json:"-"`

	ID      string  `bun:"id,pk" json:"job_id"`
	JobKey  string  `bun:"job_key,notnull" json:"job_key"`
	Plugin  string  `bun:"plugin,notnull" json:"plugin"`
	JobName string  `bun:"job_name,notnull" json:"job_name"`
	JobType string  `bun:"job_type,notnull" json:"job_type"`
	Trigger Trigger `bun:"trigger,notnull" json:"trigger"`
	// TriggeredBy is the actor who asked for a manual run.
	TriggeredBy *string `bun:"triggered_by" json:"triggered_by"`
	// ScheduledFor is the slot a scheduled run was claimed for.
	ScheduledFor *time.Time `bun:"scheduled_for" json:"scheduled_for"`
	// Replica names the host process that executes the run.
	Replica          string     `bun:"replica,notnull" json:"replica"`
	Status           RunStatus  `bun:"status,notnull" json:"status"`
	QueuedAt         time.Time  `bun:"queued_at,notnull" json:"queued_at"`
	StartedAt        *time.Time `bun:"started_at" json:"started_at"`
	CompletedAt      *time.Time `bun:"completed_at" json:"completed_at"`
	HeartbeatAt      time.Time  `bun:"heartbeat_at,notnull" json:"heartbeat_at"`
	ErrorMessage     *string    `bun:"error_message" json:"error_message"`
	RecordsProcessed int64      `bun:"records_processed,notnull" json:"records_processed"`
	// Attempts counts the run's starts: more than one when an upgrade of
	// its plugin interrupted it and it was queued again.
	Attempts int      `bun:"attempts,notnull,default:1" json:"attempts"`
	Progress Progress `bun:"embed:progress_" json:"progress"`
}

// Duration is how long a finished run executed, or nil while it has not
// both started and finished.
func (r Run) Duration() *time.Duration {
	if r.StartedAt == nil || r.CompletedAt == nil {
		return nil
	}
	d := r.CompletedAt.Sub(*r.StartedAt)
	return &d
}

// Alert is raised for every failed run and stays until an operator resolves
// it.
type Alert struct {
	bun.BaseModel `bun:"table:sync_alerts,alias:alert" json:"-"`

	ID              int64      `bun:"id,pk,autoincrement" json:"alert_id"`
	JobID           string     `bun:"job_id,notnull" json:"job_id"`
	JobType         string     `bun:"job_type,notnull" json:"job_type"`
	Severity        string     `bun:"severity,notnull" json:"severity"`
	Title           string     `bun:"title,notnull" json:"title"`
	Message         string     `bun:"message,notnull" json:"message"`
	CreatedAt       time.Time  `bun:"created_at,notnull" json:"created_at"`
	Resolved        bool       `bun:"resolved,notnull" json:"resolved"`
	ResolvedAt      *time.Time `bun:"resolved_at" json:"resolved_at"`
	ResolvedBy      *string    `bun:"resolved_by" json:"resolved_by"`
	ResolutionNotes *string    `bun:"resolution_notes" json:"resolution_notes"`
}
