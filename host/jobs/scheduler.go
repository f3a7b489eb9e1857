// Package jobs schedules and records the sync jobs that domain plugins
// offer.
//
// A Scheduler keeps the registered job specs, claims due scheduled slots,
// queues manual runs, executes runs through a Runner with bounded
// concurrency, and writes every run's lifecycle to the job_runs table. Failed
// runs raise sync_alerts rows for operators.
//
// Several host replicas may share one PostgreSQL database. They agree on who
// runs a scheduled slot through the database alone: each slot is claimed by
// inserting a run keyed by (job_key, scheduled_for), and only the replica
// whose insert lands runs it. Runs of a replica that died are found by their
// stale heartbeat and marked failed by whichever replica looks first.
//
// [Routes] serve the jobs over HTTP: their state, history, metrics and
// alerts, and manual runs.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
)

// Runner executes one run of a plugin's job. The plugin supervisor
// implements it.
type Runner interface {
	RunJob(ctx context.Context, plugin, job, runID string, tenantIDs []string, ev Events) (recordsProcessed int64, err error)
}

// Events receive what a run reports while it runs. Each may be called any
// number of times, from any goroutine, until RunJob returns.
type Events struct {
	Progress func(Progress)
	// Alert raises a sync alert tied to the run: a finding of the job an
	// operator should act on.
	Alert func(RunAlert)
}

// RunAlert is an alert a run raises.
type RunAlert struct {
	Severity, Title, Message string
}

// Options tunes a Scheduler. Zero values select the defaults.
type Options struct {
	Logger hclog.Logger
	// Now is the clock; tests inject one they control.
	Now func() time.Time
	// MaxConcurrent bounds the runs this replica executes at once,
	// scheduled and manual together. Defaults to 5.
	MaxConcurrent int
	// PollEvery is how often the loop started by Start looks for due slots
	// and abandoned runs. Defaults to 10s.
	PollEvery time.Duration
	// HeartbeatEvery is how often an unfinished run proves its replica is
	// alive. Defaults to 30s.
	HeartbeatEvery time.Duration
	// AbandonAfter is how old a heartbeat may get before the run is taken
	// for the remains of a crashed replica and marked failed. Defaults to
	// 5m; it should be several HeartbeatEvery long so that a slow database
	// write does not get a live run reaped.
	AbandonAfter time.Duration
	// Registerer receives the Prometheus metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
	// Replica names this host process in runs and logs. Defaults to
	// hostname and process id.
	Replica string
}

const (
	defaultMaxConcurrent  = 5
	defaultPollEvery      = 10 * time.Second
	defaultHeartbeatEvery = 30 * time.Second
	defaultAbandonAfter   = 5 * time.Minute

	// progressEvery throttles progress writes: jobs may report on every
	// record, and the history only needs a coarse view.
	progressEvery = time.Second
	// writeTimeout bounds the bookkeeping writes that must happen even
	// after the run's own context was cancelled.
	writeTimeout = 10 * time.Second
	// maxRunAlerts bounds the alerts one run raises: past it, one more
	// alert says how many were dropped.
	maxRunAlerts = 100
)

// Scheduler runs registered jobs on their schedules and on demand.
type Scheduler struct {
	db     *bun.DB
	runner Runner
	opts   Options
	log    hclog.Logger
	prom   promMetrics

	// sem holds one token per executing run.
	sem chan struct{}
	// runCtx is the parent of every run's context; it ends when Start's
	// context does.
	runCtx    context.Context
	cancelRun context.CancelFunc
	// stopping is closed by Stop: the loop exits and queued runs give up.
	stopping chan struct{}
	// runs counts launched runs that have not finished their bookkeeping.
	runs sync.WaitGroup

	mu   sync.Mutex
	jobs []*job
	// producers are, by job key, the keys of the jobs producing what the
	// job reads; replaced whole by SetSpecs.
	producers map[string][]string
	started   bool
	stopped   bool
	loopDone  chan struct{}
	// stopAfter detaches runCtx from Start's context.
	stopAfter func() bool
	// inflight holds this replica's unfinished runs, which it knows to be
	// alive whatever their heartbeat says.
	inflight map[string]struct{}
	// spread, when set by Spread, runs PerTenant jobs tenant by tenant
	// across the replicas.
	spread *spreader
}

// New returns a Scheduler without jobs. Call SetSpecs to register jobs and
// Start to begin the scheduling loop.
func New(db *bun.DB, runner Runner, opts Options) *Scheduler {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = defaultMaxConcurrent
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = defaultPollEvery
	}
	if opts.HeartbeatEvery <= 0 {
		opts.HeartbeatEvery = defaultHeartbeatEvery
	}
	if opts.AbandonAfter <= 0 {
		opts.AbandonAfter = defaultAbandonAfter
	}
	if opts.Replica == "" {
		host, _ := os.Hostname()
		opts.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	log := opts.Logger.Named("jobs")
	runCtx, cancel := context.WithCancel(context.Background())
	return &Scheduler{
		db:        db,
		runner:    runner,
		opts:      opts,
		log:       log,
		prom:      newPromMetrics(opts.Registerer, log),
		sem:       make(chan struct{}, opts.MaxConcurrent),
		runCtx:    runCtx,
		cancelRun: cancel,
		stopping:  make(chan struct{}),
		inflight:  map[string]struct{}{},
	}
}

// now returns the clock in UTC at the precision both databases store, so
// that a Run handed out equals the Run read back.
func (s *Scheduler) now() time.Time {
	return s.opts.Now().UTC().Truncate(time.Microsecond)
}

// SetSpecs replaces the registered jobs. It validates every spec first and
// changes nothing if one is invalid. A job whose schedule is unchanged keeps
// its next slot; runs already under way are not affected.
func (s *Scheduler) SetSpecs(specs []Spec) error {
	now := s.now()
	compiled := make([]*job, 0, len(specs))
	seen := make(map[string]bool, len(specs))
	for _, spec := range specs {
		j, err := compile(spec)
		if err != nil {
			return err
		}
		if seen[spec.Key()] {
			return fmt.Errorf("jobs: job %q is registered twice", spec.Key())
		}
		seen[spec.Key()] = true
		if j.sched != nil {
			// cron gives up after five years without a match, which only
			// happens for impossible dates such as February 30.
			if j.next = j.sched.Next(now); j.next.IsZero() {
				return fmt.Errorf("jobs: job %q: schedule %q never fires", spec.Key(), spec.Schedule)
			}
		}
		compiled = append(compiled, j)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	previous := make(map[string]*job, len(s.jobs))
	for _, j := range s.jobs {
		previous[j.spec.Key()] = j
	}
	for _, j := range compiled {
		if old, ok := previous[j.spec.Key()]; ok && j.sched != nil && old.spec.Schedule == j.spec.Schedule {
			j.next = old.next
		}
	}
	s.jobs = compiled
	s.producers = s.producersOf(compiled)
	return nil
}

// Start begins the loop that claims due scheduled slots and fails abandoned
// runs. Cancelling ctx ends the loop and cancels the runs under way; Stop
// waits for them. Start has no effect after the first call or after Stop.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	s.stopAfter = context.AfterFunc(ctx, s.cancelRun)
	if s.spread != nil {
		// Stopped by Stop, which hands the tenants under way back first.
		if err := s.spread.client.Start(context.WithoutCancel(ctx)); err != nil {
			s.log.Error("starting the queue of spread runs failed; their tenants wait for another replica", "error", err)
		}
	}
	s.loopDone = make(chan struct{})
	go s.loop(ctx)
}

func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.loopDone)
	ticker := time.NewTicker(s.opts.PollEvery)
	defer ticker.Stop()
	for {
		s.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.stopping:
			return
		case <-ticker.C:
		}
	}
}

// Stop ends the scheduling loop, fails runs still waiting for a
// concurrency slot, and waits until the runs under way finish or are
// cancelled through Start's context. Later Trigger calls fail with
// ErrStopped.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	close(s.stopping)
	loopDone := s.loopDone
	s.mu.Unlock()

	if loopDone != nil {
		<-loopDone
	}
	if s.spread != nil && s.started {
		// The tenants under way are cancelled and handed back to the queue
		// (runTenant), for another replica to take.
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		if err := s.spread.client.StopAndCancel(ctx); err != nil {
			s.log.Warn("stopping the queue of spread runs", "error", err)
		}
		cancel()
	}
	s.runs.Wait()
	if s.stopAfter != nil {
		s.stopAfter()
	}
	s.cancelRun()
}

// tick is one pass of the loop: fail runs of crashed replicas, then claim
// and launch the slots that are due.
func (s *Scheduler) tick(ctx context.Context) {
	now := s.now()
	if err := s.reapAbandoned(ctx, now); err != nil {
		s.log.Error("looking for abandoned runs failed", "error", err)
	}
	if s.spread != nil {
		if err := s.sweepTenants(ctx); err != nil {
			s.log.Error("looking for tenants the queue gave up on failed", "error", err)
		}
	}
	for _, d := range s.dueSlots(now) {
		if err := s.claim(ctx, d.spec, d.slot); err != nil {
			s.log.Error("claiming a scheduled run failed; retrying on the next pass",
				"job", d.spec.Key(), "slot", d.slot, "error", err)
			s.retrySlot(d.spec, d.slot)
		}
	}
}

// retrySlot makes a slot whose claim failed due again, so that a passing
// database error does not cost a daily job its whole day.
func (s *Scheduler) retrySlot(spec Spec, slot time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.spec.Key() == spec.Key() && j.spec.Schedule == spec.Schedule && slot.Before(j.next) {
			j.next = slot
		}
	}
}

type dueSlot struct {
	spec Spec
	slot time.Time
}

// dueSlots advances every job whose next slot has come and returns the slot
// to run for each. Slots missed while the host was down or busy are skipped
// in favour of the latest one: a sync brings data up to date, so running it
// once is as good as running it for every missed slot.
func (s *Scheduler) dueSlots(now time.Time) []dueSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []dueSlot
	for _, j := range s.jobs {
		if j.sched == nil || j.next.After(now) {
			continue
		}
		slot := j.next
		for next := j.sched.Next(slot); !next.After(now); next = j.sched.Next(slot) {
			slot = next
		}
		j.next = j.sched.Next(slot)
		due = append(due, dueSlot{spec: j.spec, slot: slot})
	}
	return due
}

// claim inserts the run for a scheduled slot and launches it, unless another
// replica's insert for the same slot landed first.
//
// A slot is skipped while an earlier run of the same job is unfinished: a
// sync slower than its interval would otherwise pile up runs that compete
// for the same plugin and cloud API quota. The check can race with another
// replica, which at worst lets one overlap through; the slot itself is
// still run at most once.
func (s *Scheduler) claim(ctx context.Context, spec Spec, slot time.Time) error {
	active, err := s.db.NewSelect().Model((*Run)(nil)).
		Where("job_key = ?", spec.Key()).
		Where("status IN (?)", bun.List(activeStatuses)).
		Exists(ctx)
	if err != nil {
		return err
	}
	if active {
		s.log.Info("skipping scheduled slot: the previous run is unfinished", "job", spec.Key(), "slot", slot)
		return nil
	}

	run := s.newRun(spec, TriggerSchedule, "", &slot)
	if !s.reserve(run.ID) {
		return nil
	}
	res, err := s.db.NewInsert().Model(&run).
		On("CONFLICT (job_key, scheduled_for) DO NOTHING").
		Exec(ctx)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil || n == 0 {
		s.release(run.ID)
		if err == nil {
			s.log.Debug("slot already claimed by another replica", "job", spec.Key(), "slot", slot)
		}
		return err
	}
	s.log.Info("claimed scheduled run", "job", spec.Key(), "slot", slot, "run_id", run.ID)
	go s.execute(&run)
	return nil
}

// Trigger queues a manual run of every registered job of jobType and
// returns the queued runs at once; they execute in the background, sharing
// the MaxConcurrent bound with scheduled runs.
func (s *Scheduler) Trigger(ctx context.Context, jobType, triggeredBy string) ([]Run, error) {
	var specs []Spec
	s.mu.Lock()
	for _, j := range s.jobs {
		if j.spec.JobType == jobType {
			specs = append(specs, j.spec)
		}
	}
	s.mu.Unlock()
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w %q", ErrUnknownJobType, jobType)
	}
	return s.queue(ctx, specs, triggeredBy)
}

// queue records a manual run of each spec and launches them.
func (s *Scheduler) queue(ctx context.Context, specs []Spec, triggeredBy string) ([]Run, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	runs := make([]Run, len(specs))
	ids := make([]string, len(specs))
	for i, spec := range specs {
		runs[i] = s.newRun(spec, TriggerManual, triggeredBy, nil)
		ids[i] = runs[i].ID
	}
	if !s.reserve(ids...) {
		return nil, ErrStopped
	}
	if _, err := s.db.NewInsert().Model(&runs).Exec(ctx); err != nil {
		for _, r := range runs {
			s.release(r.ID)
		}
		return nil, fmt.Errorf("jobs: queue %s runs: %w", specs[0].JobType, err)
	}
	for _, r := range runs {
		s.log.Info("queued manual run", "job", r.JobKey, "run_id", r.ID, "triggered_by", triggeredBy)
		go s.execute(&r)
	}
	return runs, nil
}

func (s *Scheduler) newRun(spec Spec, trigger Trigger, triggeredBy string, slot *time.Time) Run {
	now := s.now()
	return Run{
		ID:           uuid.Must(uuid.NewV7()).String(),
		JobKey:       spec.Key(),
		Plugin:       spec.Plugin,
		JobName:      spec.Name,
		JobType:      spec.JobType,
		Trigger:      trigger,
		ScheduledFor: slot,
		Replica:      s.opts.Replica,
		Status:       StatusQueued,
		QueuedAt:     now,
		HeartbeatAt:  now,
		Attempts:     1,
		TriggeredBy:  nullString(triggeredBy),
	}
}

// reserve accounts for runs about to be inserted and launched: Stop waits
// for them, and this replica's reaper leaves them alone even before their
// first heartbeat. It fails once Stop has begun.
func (s *Scheduler) reserve(runIDs ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	for _, id := range runIDs {
		s.inflight[id] = struct{}{}
	}
	s.runs.Add(len(runIDs))
	return true
}

// release ends the accounting for one reserved or launched run.
func (s *Scheduler) release(runID string) {
	s.mu.Lock()
	delete(s.inflight, runID)
	s.mu.Unlock()
	s.runs.Done()
}

// execute takes a queued run through its lifecycle. It is the only writer
// of the run's row until the run finishes, apart from the reaper of another
// replica should this one stop heartbeating.
func (s *Scheduler) execute(run *Run) {
	defer s.release(run.ID)
	if s.perTenant(run) {
		s.spreadRun(run)
		return
	}

	hbCtx, stopHeartbeat := context.WithCancel(s.runCtx)
	heartbeatDone := make(chan struct{})
	go func() {
		defer close(heartbeatDone)
		s.heartbeat(hbCtx, run.ID)
	}()
	defer func() {
		stopHeartbeat()
		<-heartbeatDone
	}()

	if !s.acquire() {
		s.finish(run, 0, Progress{}, errors.New("the host stopped before the run started"))
		return
	}
	defer func() { <-s.sem }()

	if err := s.markRunning(run); err != nil {
		s.log.Error("recording run start failed", "job", run.JobKey, "run_id", run.ID, "error", err)
		s.finish(run, 0, Progress{}, fmt.Errorf("recording run start: %w", err))
		return
	}
	s.prom.running.Inc()
	defer s.prom.running.Dec()

	pw := &progressWriter{s: s, runID: run.ID}
	aw := &alertWriter{s: s, run: run}
	records, err := s.invoke(run, Events{Progress: pw.report, Alert: aw.raise})
	for errors.Is(err, ErrRequeue) && run.Attempts < MaxAttempts {
		pw.close()
		if werr := s.requeue(run, err); werr != nil {
			s.log.Error("re-queueing the run failed", "job", run.JobKey, "run_id", run.ID, "error", werr)
			break
		}
		pw = &progressWriter{s: s, runID: run.ID}
		records, err = s.invoke(run, Events{Progress: pw.report, Alert: aw.raise})
	}
	aw.close()
	s.finish(run, records, pw.close(), err)
}

// requeue puts an interrupted run back in the queue and starts it again
// at once: it keeps its concurrency slot, and the cause of the
// interruption is what the next start avoids (a new plugin process now
// serves).
func (s *Scheduler) requeue(run *Run, cause error) error {
	ctx, cancel := s.writeCtx()
	defer cancel()
	s.log.Warn("run interrupted; queued again", "job", run.JobKey, "run_id", run.ID, "attempt", run.Attempts, "cause", cause)
	run.Status = StatusQueued
	run.StartedAt = nil
	run.Progress = Progress{Message: fmt.Sprintf("queued again after attempt %d was interrupted: %v", run.Attempts, cause)}
	_, err := s.db.NewUpdate().Model(run).
		Column("status", "started_at", "progress_done", "progress_total", "progress_message").
		WherePK().
		Where("status = ?", StatusRunning).
		Exec(ctx)
	if err != nil {
		return err
	}
	select {
	case <-s.stopping:
		return ErrStopped
	default:
	}
	run.Attempts++
	return s.markRunning(run)
}

// acquire waits for a concurrency slot and gives up when the host stops.
func (s *Scheduler) acquire() bool {
	select {
	case s.sem <- struct{}{}:
		return true
	case <-s.stopping:
	case <-s.runCtx.Done():
	}
	return false
}

// invoke calls the runner, turning a panic into the run's error: one broken
// job must not take the host and every other run down with it.
func (s *Scheduler) invoke(run *Run, ev Events) (records int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("job panicked", "job", run.JobKey, "run_id", run.ID, "panic", r, "stack", string(debug.Stack()))
			records, err = 0, fmt.Errorf("job panicked: %v", r)
		}
	}()
	return s.runner.RunJob(s.runCtx, run.Plugin, run.JobName, run.ID, nil, ev)
}

func (s *Scheduler) markRunning(run *Run) error {
	ctx, cancel := s.writeCtx()
	defer cancel()
	now := s.now()
	run.Status = StatusRunning
	run.StartedAt = &now
	run.HeartbeatAt = now
	_, err := s.db.NewUpdate().Model(run).
		Column("status", "started_at", "heartbeat_at", "attempts").
		WherePK().
		Exec(ctx)
	return err
}

// finish records the outcome of a run and raises an alert when it failed.
// The update only applies to a run still unfinished: if another replica
// already declared it abandoned, that verdict and its alert stand.
func (s *Scheduler) finish(run *Run, records int64, progress Progress, runErr error) {
	if !s.finishOnce(run, records, progress, runErr) {
		s.log.Warn("run was already finished by another replica; outcome discarded",
			"job", run.JobKey, "run_id", run.ID, "status", run.Status)
	}
}

// finishOnce is finish, reporting whether this call finished the run
// rather than logging that it did not: the replicas finishing a spread
// run's last tenants at once may all try.
func (s *Scheduler) finishOnce(run *Run, records int64, progress Progress, runErr error) bool {
	ctx, cancel := s.writeCtx()
	defer cancel()
	now := s.now()
	run.CompletedAt = &now
	run.HeartbeatAt = now
	run.RecordsProcessed = records
	run.Progress = progress
	run.Status = StatusCompleted
	if runErr != nil {
		run.Status = StatusFailed
		msg := runErr.Error()
		run.ErrorMessage = &msg
	}

	applied := false
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model(run).
			Column("status", "completed_at", "heartbeat_at", "records_processed", "error_message",
				"progress_done", "progress_total", "progress_message").
			WherePK().
			Where("status IN (?)", bun.List(activeStatuses)).
			Exec(ctx)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		applied = true
		if runErr == nil {
			return nil
		}
		return insertAlert(ctx, tx, run, now)
	})
	if err != nil {
		s.log.Error("recording run outcome failed", "job", run.JobKey, "run_id", run.ID, "error", err)
		return true
	}
	if !applied {
		return false
	}

	s.prom.runs.WithLabelValues(run.JobType, string(run.Status)).Inc()
	if d := run.Duration(); d != nil {
		s.prom.duration.WithLabelValues(run.JobType).Observe(d.Seconds())
	}
	if runErr != nil {
		s.log.Warn("run failed", "job", run.JobKey, "run_id", run.ID, "error", runErr)
	} else {
		s.log.Info("run completed", "job", run.JobKey, "run_id", run.ID, "records", records)
	}
	// Even a failed run may have synced some tenants: the readers of its
	// data read them.
	s.runDependents(ctx, run.JobKey, now)
	return true
}

// alertWriter records the alerts a run raises, up to maxRunAlerts; close
// records one more saying how many were dropped past it.
type alertWriter struct {
	s       *Scheduler
	run     *Run
	mu      sync.Mutex
	raised  int
	dropped int
}

func (w *alertWriter) raise(a RunAlert) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.raised >= maxRunAlerts {
		w.dropped++
		return
	}
	w.raised++
	w.insert(Alert{Severity: a.Severity, Title: a.Title, Message: a.Message})
}

func (w *alertWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dropped > 0 {
		w.insert(Alert{Severity: "warning", Title: fmt.Sprintf("%s run raised more alerts than recorded", w.run.JobType),
			Message: fmt.Sprintf("%d alerts past the first %d of run %s were dropped", w.dropped, maxRunAlerts, w.run.ID)})
	}
}

func (w *alertWriter) insert(a Alert) {
	ctx, cancel := w.s.writeCtx()
	defer cancel()
	a.JobID, a.JobType, a.CreatedAt = w.run.ID, w.run.JobType, w.s.now()
	if _, err := w.s.db.NewInsert().Model(&a).Exec(ctx); err != nil {
		w.s.log.Warn("recording a run's alert failed", "job", w.run.JobKey, "run_id", w.run.ID, "title", a.Title, "error", err)
	}
}

func insertAlert(ctx context.Context, db bun.IDB, run *Run, now time.Time) error {
	alert := Alert{
		JobID:     run.ID,
		JobType:   run.JobType,
		Severity:  SeverityError,
		Title:     fmt.Sprintf("%s sync failed: %s", run.JobType, run.JobKey),
		CreatedAt: now,
	}
	if run.ErrorMessage != nil {
		alert.Message = *run.ErrorMessage
	}
	_, err := db.NewInsert().Model(&alert).Exec(ctx)
	return err
}

// writeCtx bounds a bookkeeping write without inheriting cancellation: a run
// cancelled by shutdown must still be recorded as failed.
func (s *Scheduler) writeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(s.runCtx), writeTimeout)
}

// heartbeat keeps an unfinished run's heartbeat_at fresh until ctx ends.
func (s *Scheduler) heartbeat(ctx context.Context, runID string) {
	ticker := time.NewTicker(s.opts.HeartbeatEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		_, err := s.db.NewUpdate().Model((*Run)(nil)).
			Set("heartbeat_at = ?", s.now()).
			Where("id = ?", runID).
			Where("status IN (?)", bun.List(activeStatuses)).
			Exec(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("heartbeat failed", "run_id", runID, "error", err)
		}
	}
}

// reapAbandoned fails the unfinished runs whose heartbeat is older than
// AbandonAfter, raising an alert for each. Replicas may reap concurrently;
// the conditional update lets exactly one of them win each run.
func (s *Scheduler) reapAbandoned(ctx context.Context, now time.Time) error {
	cutoff := now.Add(-s.opts.AbandonAfter)
	var stale []Run
	q := s.db.NewSelect().Model(&stale).
		Where("status IN (?)", bun.List(activeStatuses)).
		Where("heartbeat_at < ?", cutoff).
		// A spread run lives in its tenants, which the queue rescues when
		// their replica dies (see sweepTenants).
		Where("NOT EXISTS (SELECT 1 FROM job_run_tenants rt WHERE rt.run_id = run.id)")
	if own := s.inflightIDs(); len(own) > 0 {
		q = q.Where("id NOT IN (?)", bun.List(own))
	}
	if err := q.Scan(ctx); err != nil {
		return err
	}

	for i := range stale {
		run := &stale[i]
		msg := fmt.Sprintf("abandoned: no heartbeat from replica %q since %s",
			run.Replica, run.HeartbeatAt.UTC().Format(time.RFC3339))
		run.Status = StatusFailed
		run.ErrorMessage = &msg
		run.CompletedAt = &now
		won := false
		err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			res, err := tx.NewUpdate().Model(run).
				Column("status", "error_message", "completed_at").
				WherePK().
				Where("status IN (?)", bun.List(activeStatuses)).
				Where("heartbeat_at < ?", cutoff).
				Exec(ctx)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil || n == 0 {
				return err
			}
			won = true
			return insertAlert(ctx, tx, run, now)
		})
		if err != nil {
			return fmt.Errorf("fail abandoned run %s: %w", run.ID, err)
		}
		if won {
			s.log.Warn("marked abandoned run failed", "job", run.JobKey, "run_id", run.ID, "replica", run.Replica)
			s.prom.runs.WithLabelValues(run.JobType, string(StatusFailed)).Inc()
		}
	}
	return nil
}

func (s *Scheduler) inflightIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.inflight))
	for id := range s.inflight {
		ids = append(ids, id)
	}
	return ids
}

// progressWriter stores a run's progress reports, writing at most one per
// progressEvery; close hands the latest report to the final write so that
// nothing reported is lost.
type progressWriter struct {
	s     *Scheduler
	runID string

	mu        sync.Mutex
	latest    Progress
	lastWrite time.Time
	closed    bool
}

func (w *progressWriter) report(p Progress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.latest = p
	now := w.s.now()
	if !w.lastWrite.IsZero() && now.Sub(w.lastWrite) < progressEvery {
		return
	}
	w.lastWrite = now
	ctx, cancel := w.s.writeCtx()
	defer cancel()
	_, err := w.s.db.NewUpdate().Model((*Run)(nil)).
		Set("progress_done = ?", p.Done).
		Set("progress_total = ?", p.Total).
		Set("progress_message = ?", p.Message).
		Set("heartbeat_at = ?", now).
		Where("id = ?", w.runID).
		Where("status = ?", StatusRunning).
		Exec(ctx)
	if err != nil {
		w.s.log.Warn("recording progress failed", "run_id", w.runID, "error", err)
	}
}

func (w *progressWriter) close() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.latest
}
