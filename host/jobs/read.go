package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/uptrace/bun"
)

// History page sizes.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 500
)

// StatusResponse lists every registered job with its scheduling state.
type StatusResponse struct {
	Jobs []JobStatus `json:"jobs"`
}

// JobStatus is one registered job. Running and Queued count runs on every
// replica.
type JobStatus struct {
	Plugin     string `json:"plugin"`
	Name       string `json:"name"`
	JobType    string `json:"job_type"`
	DataDomain string `json:"data_domain"`
	Schedule   string `json:"schedule"`
	// NextRun is nil for jobs that only run when triggered.
	NextRun *time.Time  `json:"next_run"`
	Running int         `json:"running"`
	Queued  int         `json:"queued"`
	LastRun *RunSummary `json:"last_run"`
}

// TransformSchema lets last_run be null, as it is for a job that never ran;
// huma's nullable tag does not apply to a referenced schema.
func (JobStatus) TransformSchema(_ huma.Registry, sch *huma.Schema) *huma.Schema {
	if r := sch.Properties["last_run"]; r != nil && r.Ref != "" {
		sch.Properties["last_run"] = &huma.Schema{Description: "The job's latest run; null when it never ran",
			OneOf: []*huma.Schema{r, {Type: "null"}}}
	}
	return sch
}

// RunSummary is the short form of a run shown next to its job.
type RunSummary struct {
	JobID            string     `json:"job_id"`
	Status           RunStatus  `json:"status"`
	Trigger          Trigger    `json:"trigger"`
	QueuedAt         time.Time  `json:"queued_at"`
	StartedAt        *time.Time `json:"started_at"`
	CompletedAt      *time.Time `json:"completed_at"`
	DurationSeconds  *float64   `json:"duration_seconds"`
	RecordsProcessed int64      `json:"records_processed"`
	ErrorMessage     *string    `json:"error_message"`
}

// HistoryResponse lists runs, newest first.
type HistoryResponse struct {
	Logs []Run `json:"logs"`
}

// MetricsResponse summarises the runs started at or after Since (all runs
// when Since is nil), one entry per job type.
type MetricsResponse struct {
	Since    *time.Time       `json:"since"`
	JobTypes []JobTypeMetrics `json:"job_types"`
}

// JobTypeMetrics summarises the runs of one job type. Rates and durations
// are nil when there is no run to compute them from; durations only count
// completed runs, since a failure's duration says little about the sync.
type JobTypeMetrics struct {
	JobType            string     `json:"job_type"`
	TotalRuns          int        `json:"total_runs"`
	Running            int        `json:"running"`
	Completed          int        `json:"completed"`
	Failed             int        `json:"failed"`
	SuccessRatePercent *float64   `json:"success_rate_percent"`
	AvgDurationSeconds *float64   `json:"avg_duration_seconds"`
	P95DurationSeconds *float64   `json:"p95_duration_seconds"`
	LastSuccessAt      *time.Time `json:"last_success_at"`
}

// AlertsResponse lists alerts, unresolved first, newest first within each
// group.
type AlertsResponse struct {
	Alerts []Alert `json:"alerts"`
}

// Get returns the run with the given id, or ErrNotFound.
func (s *Scheduler) Get(ctx context.Context, runID string) (Run, error) {
	var run Run
	if err := s.db.NewSelect().Model(&run).Where("id = ?", runID).Scan(ctx); err != nil {
		return Run{}, fmt.Errorf("jobs: run %s: %w", runID, errNoRows(err))
	}
	return run, nil
}

// Status reports every registered job, in registration order.
func (s *Scheduler) Status(ctx context.Context) (StatusResponse, error) {
	s.mu.Lock()
	out := StatusResponse{Jobs: make([]JobStatus, 0, len(s.jobs))}
	keys := make([]string, 0, len(s.jobs))
	for _, j := range s.jobs {
		st := JobStatus{
			Plugin:     j.spec.Plugin,
			Name:       j.spec.Name,
			JobType:    j.spec.JobType,
			DataDomain: j.spec.DataDomain,
			Schedule:   j.spec.Schedule,
		}
		if j.sched != nil {
			next := j.next
			st.NextRun = &next
		}
		out.Jobs = append(out.Jobs, st)
		keys = append(keys, j.spec.Key())
	}
	s.mu.Unlock()
	if len(keys) == 0 {
		return out, nil
	}

	var counts []struct {
		JobKey string    `bun:"job_key"`
		Status RunStatus `bun:"status"`
		N      int       `bun:"n"`
	}
	err := s.db.NewSelect().Model((*Run)(nil)).
		Column("job_key", "status").
		ColumnExpr("COUNT(*) AS n").
		Where("status IN (?)", bun.List(activeStatuses)).
		Where("job_key IN (?)", bun.List(keys)).
		Group("job_key", "status").
		Scan(ctx, &counts)
	if err != nil {
		return StatusResponse{}, fmt.Errorf("jobs: count active runs: %w", err)
	}

	latest := s.db.NewSelect().Model((*Run)(nil)).
		Column("job_key").
		ColumnExpr("MAX(queued_at)").
		Where("job_key IN (?)", bun.List(keys)).
		Group("job_key")
	var last []Run
	if err := s.db.NewSelect().Model(&last).Where("(job_key, queued_at) IN (?)", latest).Scan(ctx); err != nil {
		return StatusResponse{}, fmt.Errorf("jobs: load last runs: %w", err)
	}

	byKey := make(map[string]*JobStatus, len(out.Jobs))
	for i := range out.Jobs {
		byKey[keys[i]] = &out.Jobs[i]
	}
	for _, c := range counts {
		switch c.Status {
		case StatusRunning:
			byKey[c.JobKey].Running = c.N
		case StatusQueued:
			byKey[c.JobKey].Queued = c.N
		}
	}
	for _, r := range last {
		st := byKey[r.JobKey]
		// Two runs queued in the same microsecond tie on queued_at; the
		// time-ordered id breaks the tie.
		if st.LastRun != nil && st.LastRun.JobID > r.ID {
			continue
		}
		st.LastRun = summarize(r)
	}
	return out, nil
}

func summarize(r Run) *RunSummary {
	sum := &RunSummary{
		JobID:            r.ID,
		Status:           r.Status,
		Trigger:          r.Trigger,
		QueuedAt:         r.QueuedAt,
		StartedAt:        r.StartedAt,
		CompletedAt:      r.CompletedAt,
		RecordsProcessed: r.RecordsProcessed,
		ErrorMessage:     r.ErrorMessage,
	}
	if d := r.Duration(); d != nil {
		secs := d.Seconds()
		sum.DurationSeconds = &secs
	}
	return sum
}

// History returns the most recent runs, newest first. limit is clamped to
// [1, MaxHistoryLimit]; zero or less selects DefaultHistoryLimit.
func (s *Scheduler) History(ctx context.Context, limit int) (HistoryResponse, error) {
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	limit = min(limit, MaxHistoryLimit)
	out := HistoryResponse{Logs: []Run{}}
	err := s.db.NewSelect().Model(&out.Logs).
		Order("queued_at DESC", "id DESC").
		Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return HistoryResponse{}, fmt.Errorf("jobs: load history: %w", err)
	}
	return out, nil
}

// Metrics summarises runs started at or after since, per job type; a zero
// since covers every run. Registered job types without runs are listed too,
// so that a job that never ran stands out.
func (s *Scheduler) Metrics(ctx context.Context, since time.Time) (MetricsResponse, error) {
	var runs []Run
	q := s.db.NewSelect().Model(&runs).
		Column("job_type", "status", "started_at", "completed_at")
	if since.IsZero() {
		q = q.Where("started_at IS NOT NULL")
	} else {
		q = q.Where("started_at >= ?", since.UTC())
	}
	if err := q.Scan(ctx); err != nil {
		return MetricsResponse{}, fmt.Errorf("jobs: load runs for metrics: %w", err)
	}

	type acc struct {
		m         JobTypeMetrics
		durations []float64
	}
	byType := map[string]*acc{}
	get := func(jobType string) *acc {
		a := byType[jobType]
		if a == nil {
			a = &acc{m: JobTypeMetrics{JobType: jobType}}
			byType[jobType] = a
		}
		return a
	}
	s.mu.Lock()
	for _, j := range s.jobs {
		get(j.spec.JobType)
	}
	s.mu.Unlock()

	for _, r := range runs {
		a := get(r.JobType)
		a.m.TotalRuns++
		switch r.Status {
		case StatusRunning:
			a.m.Running++
		case StatusFailed:
			a.m.Failed++
		case StatusCompleted:
			a.m.Completed++
			if d := r.Duration(); d != nil {
				a.durations = append(a.durations, d.Seconds())
			}
			if a.m.LastSuccessAt == nil || r.CompletedAt.After(*a.m.LastSuccessAt) {
				a.m.LastSuccessAt = r.CompletedAt
			}
		}
	}

	out := MetricsResponse{JobTypes: make([]JobTypeMetrics, 0, len(byType))}
	if !since.IsZero() {
		utc := since.UTC()
		out.Since = &utc
	}
	for _, a := range byType {
		if finished := a.m.Completed + a.m.Failed; finished > 0 {
			rate := 100 * float64(a.m.Completed) / float64(finished)
			a.m.SuccessRatePercent = &rate
		}
		if n := len(a.durations); n > 0 {
			slices.Sort(a.durations)
			var sum float64
			for _, d := range a.durations {
				sum += d
			}
			avg := sum / float64(n)
			// Nearest-rank percentile: the smallest duration that at
			// least 95% of the runs do not exceed.
			p95 := a.durations[int(math.Ceil(0.95*float64(n)))-1]
			a.m.AvgDurationSeconds = &avg
			a.m.P95DurationSeconds = &p95
		}
		out.JobTypes = append(out.JobTypes, a.m)
	}
	sort.Slice(out.JobTypes, func(i, j int) bool { return out.JobTypes[i].JobType < out.JobTypes[j].JobType })
	return out, nil
}

// Alerts returns up to limit alerts, unresolved first; limit follows the
// same rules as in History.
func (s *Scheduler) Alerts(ctx context.Context, limit int) (AlertsResponse, error) {
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	limit = min(limit, MaxHistoryLimit)
	out := AlertsResponse{Alerts: []Alert{}}
	err := s.db.NewSelect().Model(&out.Alerts).
		Order("resolved ASC", "created_at DESC", "id DESC").
		Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return AlertsResponse{}, fmt.Errorf("jobs: load alerts: %w", err)
	}
	return out, nil
}

// ResolveAlert marks an alert resolved and returns it. It fails with
// ErrNotFound for an unknown id and ErrAlreadyResolved when the alert was
// resolved before, leaving the earlier resolution intact.
func (s *Scheduler) ResolveAlert(ctx context.Context, id int64, resolvedBy, notes string) (Alert, error) {
	var alert Alert
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*Alert)(nil)).
			Set("resolved = ?", true).
			Set("resolved_at = ?", s.now()).
			Set("resolved_by = ?", nullString(resolvedBy)).
			Set("resolution_notes = ?", nullString(notes)).
			Where("id = ?", id).
			Where("resolved = ?", false).
			Exec(ctx)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if err := tx.NewSelect().Model(&alert).Where("id = ?", id).Scan(ctx); err != nil {
			return errNoRows(err)
		}
		if n == 0 {
			return ErrAlreadyResolved
		}
		return nil
	})
	if err != nil {
		return Alert{}, fmt.Errorf("jobs: resolve alert %d: %w", id, err)
	}
	return alert, nil
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// errNoRows maps a missing row to ErrNotFound.
func errNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
