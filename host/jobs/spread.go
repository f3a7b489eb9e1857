package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

// A run of a PerTenant job is spread over the replicas: it is split into
// one piece per active tenant, each a job of River's queue
// (github.com/riverqueue/river) in the host's own database, which every
// replica works from with its own concurrency. River brings what a
// distributed queue needs and host/jobs would otherwise grow: a piece is
// taken by one replica at a time, retried with backoff when its plugin
// process was replaced, handed back when its replica stops, and rescued
// when its replica died (after the piece timeout). The run's row stays the
// view of it (history, status, metrics, alerts): each piece is a row of
// job_run_tenants, and the replica that finishes the last piece finishes
// the run.

const (
	// tenantQueue is River's queue of the pieces.
	tenantQueue = "sync_tenants"
	// pieceMaxAttempts bounds the starts of one piece: retries after its
	// plugin process was replaced or its replica died.
	pieceMaxAttempts = 5
	// defaultPieceTimeout bounds one tenant's sync.
	defaultPieceTimeout = 30 * time.Minute
)

// tenantArgs is the queue job of one tenant of a run.
type tenantArgs struct {
	RunID  string `json:"run_id"`
	Plugin string `json:"plugin"`
	Job    string `json:"job"`
	Tenant string `json:"tenant_id"`
}

func (tenantArgs) Kind() string { return "steward_sync_tenant" }

func (tenantArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: tenantQueue, MaxAttempts: pieceMaxAttempts}
}

// RunTenant is one tenant of a spread run, as stored.
type RunTenant struct {
	bun.BaseModel `bun:"table:job_run_tenants,alias:rt"`

	RunID            string     `bun:"run_id,pk"`
	TenantID         string     `bun:"tenant_id,pk"`
	Status           RunStatus  `bun:"status,notnull"`
	Replica          string     `bun:"replica,notnull"`
	Attempts         int        `bun:"attempts,notnull"`
	RecordsProcessed int64      `bun:"records_processed,notnull"`
	ErrorMessage     *string    `bun:"error_message"`
	StartedAt        *time.Time `bun:"started_at"`
	CompletedAt      *time.Time `bun:"completed_at"`
	QueueJobID       int64      `bun:"queue_job_id,notnull"`
}

// SpreadOptions configure Spread.
type SpreadOptions struct {
	// Tenants lists the ids of the active tenants a run covers.
	Tenants func(context.Context) ([]string, error)
	// PieceTimeout bounds one tenant's sync; a piece whose replica died is
	// run again a little after it (a fifth of it, at most a minute, plus
	// the queue's rescue pass, every 30s). Defaults to 30 minutes.
	PieceTimeout time.Duration
	// PollEvery is how often each replica looks for pieces. Defaults to 1s.
	PollEvery time.Duration
}

type spreader struct {
	client  *river.Client[*sql.Tx]
	tenants func(context.Context) ([]string, error)
}

// Spread makes the scheduler run PerTenant jobs tenant by tenant through
// the queue in the scheduler's database, migrating the queue's tables
// first. Every replica sharing the database must call it, before Start.
func (s *Scheduler) Spread(ctx context.Context, o SpreadOptions) error {
	if o.Tenants == nil {
		return errors.New("jobs: Spread needs Tenants")
	}
	timeout := o.PieceTimeout
	if timeout <= 0 {
		timeout = defaultPieceTimeout
	}
	var driver riverdriver.Driver[*sql.Tx]
	switch d := store.DialectName(s.db); d {
	case store.DialectPostgres:
		driver = riverdatabasesql.New(s.db.DB)
	case store.DialectSQLite:
		driver = riversqlite.New(s.db.DB)
	default:
		return fmt.Errorf("jobs: no queue driver for database %s", d)
	}
	logger := riverLogger(s.log)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("jobs: queue migrations: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: queue migrations: %w", err)
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &tenantWorker{s: s}); err != nil {
		return err
	}
	client, err := river.NewClient(driver, &river.Config{
		ID:                   s.opts.Replica,
		Logger:               logger,
		PollOnly:             true,
		FetchPollInterval:    cmpOr(o.PollEvery, time.Second),
		FetchCooldown:        min(cmpOr(o.PollEvery, time.Second), 100*time.Millisecond),
		JobTimeout:           timeout,
		RescueStuckJobsAfter: timeout + min(timeout/5, time.Minute),
		MaxAttempts:          pieceMaxAttempts,
		Queues:               map[string]river.QueueConfig{tenantQueue: {MaxWorkers: s.opts.MaxConcurrent}},
		Workers:              workers,
	})
	if err != nil {
		return fmt.Errorf("jobs: queue client: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spread = &spreader{client: client, tenants: o.Tenants}
	return nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// riverLogger passes River's warnings and errors to the scheduler's log.
func riverLogger(l hclog.Logger) *slog.Logger {
	w := l.Named("queue").StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// perTenant reports whether the run's job is spread tenant by tenant.
func (s *Scheduler) perTenant(run *Run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spread == nil {
		return false
	}
	for _, j := range s.jobs {
		if j.spec.Key() == run.JobKey {
			return j.spec.PerTenant
		}
	}
	return false
}

// spreadRun queues one piece per active tenant of a queued run and marks
// the run running, in one transaction: the run is spread, or stays as it
// was and fails.
func (s *Scheduler) spreadRun(run *Run) {
	ctx, cancel := s.writeCtx()
	defer cancel()
	tenants, err := s.spread.tenants(ctx)
	if err != nil {
		s.finish(run, 0, Progress{}, fmt.Errorf("listing the tenants to sync: %w", err))
		return
	}
	if len(tenants) == 0 {
		if err := s.markRunning(run); err != nil {
			s.finish(run, 0, Progress{}, fmt.Errorf("recording run start: %w", err))
			return
		}
		s.finish(run, 0, Progress{Message: "no active tenant"}, nil)
		return
	}
	now := s.now()
	run.Status, run.StartedAt, run.HeartbeatAt = StatusRunning, &now, now
	run.Progress = Progress{Total: int64(len(tenants)), Message: tenantProgress(0, len(tenants))}
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		params := make([]river.InsertManyParams, len(tenants))
		for i, t := range tenants {
			params[i] = river.InsertManyParams{Args: tenantArgs{RunID: run.ID, Plugin: run.Plugin, Job: run.JobName, Tenant: t}}
		}
		res, err := s.spread.client.InsertManyTx(ctx, tx.Tx, params)
		if err != nil {
			return err
		}
		pieces := make([]RunTenant, len(tenants))
		for i, t := range tenants {
			pieces[i] = RunTenant{RunID: run.ID, TenantID: t, Status: StatusQueued, QueueJobID: res[i].Job.ID}
		}
		if _, err := tx.NewInsert().Model(&pieces).Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model(run).
			Column("status", "started_at", "heartbeat_at", "attempts", "progress_done", "progress_total", "progress_message").
			WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		s.finish(run, 0, Progress{}, fmt.Errorf("queueing the run's tenants: %w", err))
		return
	}
	s.log.Info("spread run over the replicas", "job", run.JobKey, "run_id", run.ID, "tenants", len(tenants))
}

func tenantProgress(done, total int) string {
	return fmt.Sprintf("%d of %d tenants synced", done, total)
}

type tenantWorker struct {
	river.WorkerDefaults[tenantArgs]
	s *Scheduler
}

func (w *tenantWorker) Work(ctx context.Context, job *river.Job[tenantArgs]) error {
	return w.s.runTenant(ctx, job.Args, job.Attempt, job.MaxAttempts)
}

// runTenant syncs one tenant of a spread run on this replica and, when it
// was the run's last, finishes the run.
func (s *Scheduler) runTenant(ctx context.Context, a tenantArgs, attempt, maxAttempts int) error {
	wctx, cancel := s.writeCtx()
	defer cancel()
	var run Run
	if err := s.db.NewSelect().Model(&run).Where("id = ?", a.RunID).Scan(wctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	}
	if run.Status != StatusRunning {
		// Failed meanwhile (abandoned, or its queue job discarded): the
		// tenant's work is no longer wanted.
		return nil
	}
	now := s.now()
	res, err := s.db.NewUpdate().Model((*RunTenant)(nil)).
		Set("status = ?", StatusRunning).Set("replica = ?", s.opts.Replica).Set("attempts = ?", attempt).Set("started_at = ?", now).
		Where("run_id = ? AND tenant_id = ?", a.RunID, a.Tenant).
		Where("status IN (?)", bun.List(activeStatuses)).
		Exec(wctx)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	s.prom.running.Inc()
	defer s.prom.running.Dec()

	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	heartbeatDone := make(chan struct{})
	go func() {
		defer close(heartbeatDone)
		s.heartbeat(hbCtx, run.ID)
	}()
	aw := &alertWriter{s: s, run: &run}
	records, runErr := s.runner.RunJob(ctx, a.Plugin, a.Job, a.RunID, []string{a.Tenant}, Events{Progress: func(Progress) {}, Alert: aw.raise})
	stopHeartbeat()
	<-heartbeatDone
	aw.close()

	select {
	case <-s.stopping:
		// This replica is stopping: the tenant goes back to the queue for
		// another one, and the attempt does not count.
		s.requeueTenant(a)
		return river.JobSnooze(0)
	default:
	}
	if errors.Is(runErr, ErrRequeue) && attempt < maxAttempts {
		s.requeueTenant(a)
		return runErr
	}
	status := StatusCompleted
	var msg *string
	if runErr != nil {
		status = StatusFailed
		m := runErr.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			m = "the tenant's sync took longer than its timeout: " + m
		}
		msg = &m
	}
	s.prom.tenants.WithLabelValues(run.JobType, string(status)).Inc()
	done := s.now()
	_, err = s.db.NewUpdate().Model((*RunTenant)(nil)).
		Set("status = ?", status).Set("records_processed = ?", records).Set("error_message = ?", msg).Set("completed_at = ?", done).
		Where("run_id = ? AND tenant_id = ?", a.RunID, a.Tenant).
		Exec(wctx)
	if err != nil {
		return err
	}
	s.settle(wctx, &run)
	return nil
}

// requeueTenant puts an interrupted tenant back to queued.
func (s *Scheduler) requeueTenant(a tenantArgs) {
	ctx, cancel := s.writeCtx()
	defer cancel()
	_, err := s.db.NewUpdate().Model((*RunTenant)(nil)).
		Set("status = ?", StatusQueued).Set("started_at = NULL").
		Where("run_id = ? AND tenant_id = ?", a.RunID, a.Tenant).
		Where("status = ?", StatusRunning).
		Exec(ctx)
	if err != nil {
		s.log.Warn("handing a tenant back to the queue failed", "run_id", a.RunID, "tenant_id", a.Tenant, "error", err)
	}
}

// settle updates a spread run's progress from its tenants and finishes it
// once none is left: failed, naming each failed tenant's error, when any
// failed.
func (s *Scheduler) settle(ctx context.Context, run *Run) {
	var pieces []RunTenant
	if err := s.db.NewSelect().Model(&pieces).Where("run_id = ?", run.ID).Order("tenant_id").Scan(ctx); err != nil {
		s.log.Warn("reading a run's tenants failed", "run_id", run.ID, "error", err)
		return
	}
	var (
		finished int
		records  int64
		failures []string
	)
	for _, p := range pieces {
		switch p.Status {
		case StatusCompleted, StatusFailed:
			finished++
			records += p.RecordsProcessed
			if p.ErrorMessage != nil {
				failures = append(failures, *p.ErrorMessage)
			}
		}
	}
	progress := Progress{Done: int64(finished), Total: int64(len(pieces)), Message: tenantProgress(finished, len(pieces))}
	if finished < len(pieces) {
		_, err := s.db.NewUpdate().Model((*Run)(nil)).
			Set("progress_done = ?", progress.Done).Set("progress_total = ?", progress.Total).Set("progress_message = ?", progress.Message).
			Set("heartbeat_at = ?", s.now()).
			Where("id = ?", run.ID).Where("status = ?", StatusRunning).
			Exec(ctx)
		if err != nil {
			s.log.Warn("recording a run's progress failed", "run_id", run.ID, "error", err)
		}
		return
	}
	var runErr error
	if len(failures) > 0 {
		runErr = fmt.Errorf("%d of %d tenants failed: %s", len(failures), len(pieces), strings.Join(failures, "; "))
	}
	s.finishOnce(run, records, progress, runErr)
}

// sweepTenants fails the unfinished tenants whose queue job the queue gave
// up on (discarded after its last attempt, or cancelled), and settles their
// runs: without it such a run would wait for them for ever.
func (s *Scheduler) sweepTenants(ctx context.Context) error {
	var lost []RunTenant
	err := s.db.NewSelect().Model(&lost).
		Where("rt.status IN (?)", bun.List(activeStatuses)).
		Where("NOT EXISTS (SELECT 1 FROM river_job j WHERE j.id = rt.queue_job_id AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled'))").
		Scan(ctx)
	if err != nil {
		return err
	}
	runs := map[string]bool{}
	for _, p := range lost {
		msg := fmt.Sprintf("tenant %s: the queue gave up on it after %d attempts", p.TenantID, p.Attempts)
		_, err := s.db.NewUpdate().Model((*RunTenant)(nil)).
			Set("status = ?", StatusFailed).Set("error_message = ?", msg).Set("completed_at = ?", s.now()).
			Where("run_id = ? AND tenant_id = ?", p.RunID, p.TenantID).
			Where("status IN (?)", bun.List(activeStatuses)).
			Exec(ctx)
		if err != nil {
			return err
		}
		runs[p.RunID] = true
	}
	for id := range runs {
		var run Run
		if err := s.db.NewSelect().Model(&run).Where("id = ?", id).Scan(ctx); err != nil {
			return err
		}
		s.settle(ctx, &run)
	}
	return nil
}
