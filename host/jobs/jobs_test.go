package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/migrations"
)

var t0 = time.Date(2025, 3, 1, 0, 10, 0, 0, time.UTC)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type jobFunc func(ctx context.Context, ev Events) (int64, error)

// fakeRunner stands in for the plugin supervisor. Jobs without a function
// succeed with one record.
type fakeRunner struct {
	mu        sync.Mutex
	funcs     map[string]jobFunc
	calls     map[string]int // by job key
	active    int
	maxActive int
}

func newFakeRunner(funcs map[string]jobFunc) *fakeRunner {
	return &fakeRunner{funcs: funcs, calls: map[string]int{}}
}

func (f *fakeRunner) RunJob(ctx context.Context, plugin, job, runID string, _ []string, ev Events) (int64, error) {
	key := plugin + "/" + job
	f.mu.Lock()
	fn := f.funcs[key]
	f.calls[key]++
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	if fn == nil {
		return 1, nil
	}
	return fn(ctx, ev)
}

func (f *fakeRunner) callCount(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

func (f *fakeRunner) activeCount() (active, maxActive int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active, f.maxActive
}

func openDB(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

func newScheduler(t *testing.T, db *bun.DB, runner Runner, clock *fakeClock, opts Options) *Scheduler {
	t.Helper()
	opts.Now = clock.Now
	s := New(db, runner, opts)
	t.Cleanup(s.Stop)
	return s
}

// eachDialect runs fn against a fresh, migrated database of every dialect.
func eachDialect(t *testing.T, fn func(t *testing.T, db *bun.DB)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, openDB(t, dialect)) })
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFinished waits until the run is completed or failed and returns it.
func waitFinished(t *testing.T, s *Scheduler, runID string) Run {
	t.Helper()
	var run Run
	waitFor(t, "run "+runID+" to finish", func() bool {
		var err error
		run, err = s.Get(context.Background(), runID)
		if err != nil {
			t.Fatalf("Get(%s): %v", runID, err)
		}
		return run.Status == StatusCompleted || run.Status == StatusFailed
	})
	return run
}

func waitStatus(t *testing.T, s *Scheduler, runID string, want RunStatus) {
	t.Helper()
	waitFor(t, fmt.Sprintf("run %s to be %s", runID, want), func() bool {
		run, err := s.Get(context.Background(), runID)
		if err != nil {
			t.Fatalf("Get(%s): %v", runID, err)
		}
		return run.Status == want
	})
}

func countRuns(t *testing.T, db *bun.DB, where string, args ...any) int {
	t.Helper()
	n, err := db.NewSelect().Model((*Run)(nil)).Where(where, args...).Count(context.Background())
	if err != nil {
		t.Fatalf("count runs: %v", err)
	}
	return int(n)
}

// counterValue reads a counter from the registry the way a scrape would, so
// that registration is checked along with the value.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labelValues ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			if len(labels) != len(labelValues) {
				continue
			}
			for i, l := range labels {
				if l.GetValue() != labelValues[i] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s%v in the registry", name, labelValues)
	return 0
}

func TestManualTriggerRunsEveryJobOfTheType(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		runner := newFakeRunner(map[string]jobFunc{
			"azure/costs": func(ctx context.Context, ev Events) (int64, error) {
				clock.Advance(30 * time.Second)
				ev.Progress(Progress{Done: 42, Total: 42, Message: "done"})
				return 42, nil
			},
		})
		reg := prometheus.NewRegistry()
		s := newScheduler(t, db, runner, clock, Options{Registerer: reg, Replica: "r1"})
		err := s.SetSpecs([]Spec{
			{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "@daily"},
			{Plugin: "aws", Name: "billing", JobType: "costs", DataDomain: "costs"},
			{Plugin: "azure", Name: "policies", DataDomain: "compliance"},
		})
		if err != nil {
			t.Fatal(err)
		}

		runs, err := s.Trigger(ctx, "costs", "user-1")
		if err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		if len(runs) != 2 {
			t.Fatalf("Trigger returned %d runs, want 2", len(runs))
		}
		for _, r := range runs {
			if r.Status != StatusQueued || r.Trigger != TriggerManual || r.JobType != "costs" ||
				r.TriggeredBy == nil || *r.TriggeredBy != "user-1" || r.ScheduledFor != nil || r.StartedAt != nil {
				t.Errorf("queued run = %+v", r)
			}
		}

		got := waitFinished(t, s, runs[0].ID)
		if got.JobKey != "azure/costs" {
			t.Fatalf("first run is for %s, want azure/costs", got.JobKey)
		}
		if got.Status != StatusCompleted || got.RecordsProcessed != 42 || got.ErrorMessage != nil {
			t.Errorf("finished run = %+v", got)
		}
		if got.StartedAt == nil || got.CompletedAt == nil || got.CompletedAt.Sub(*got.StartedAt) != 30*time.Second {
			t.Errorf("started %v completed %v, want 30s apart", got.StartedAt, got.CompletedAt)
		}
		if got.Progress != (Progress{Done: 42, Total: 42, Message: "done"}) {
			t.Errorf("progress = %+v", got.Progress)
		}
		if other := waitFinished(t, s, runs[1].ID); other.Status != StatusCompleted || other.RecordsProcessed != 1 {
			t.Errorf("aws/billing run = %+v", other)
		}
		if n := runner.callCount("azure/policies"); n != 0 {
			t.Errorf("compliance job ran %d times on a costs trigger", n)
		}

		alerts, err := s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(alerts.Alerts) != 0 {
			t.Errorf("successful runs raised alerts: %+v", alerts.Alerts)
		}
		// A run is counted just after its outcome commits, which is what
		// waitFinished sees: give the last count a moment.
		deadline := time.Now().Add(5 * time.Second)
		v := counterValue(t, reg, "steward_job_runs_total", "costs", "completed")
		for v < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			v = counterValue(t, reg, "steward_job_runs_total", "costs", "completed")
		}
		if v != 2 {
			t.Errorf("steward_job_runs_total{costs,completed} = %v, want 2", v)
		}

		status, err := s.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(status.Jobs) != 3 {
			t.Fatalf("status lists %d jobs, want 3", len(status.Jobs))
		}
		azure := status.Jobs[0]
		if azure.NextRun == nil || !azure.NextRun.Equal(time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("azure/costs next run = %v, want next midnight", azure.NextRun)
		}
		if azure.LastRun == nil || azure.LastRun.JobID != runs[0].ID || azure.LastRun.Status != StatusCompleted ||
			azure.LastRun.DurationSeconds == nil || *azure.LastRun.DurationSeconds != 30 {
			t.Errorf("azure/costs last run = %+v", azure.LastRun)
		}
		if policies := status.Jobs[2]; policies.NextRun != nil || policies.LastRun != nil || policies.JobType != "compliance" {
			t.Errorf("manual-only job without runs = %+v", policies)
		}
	})
}

func TestTriggerUnknownJobType(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newScheduler(t, db, newFakeRunner(nil), &fakeClock{now: t0}, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs"}}); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Trigger(context.Background(), "dmarc", "user-1")
		if !errors.Is(err, ErrUnknownJobType) || runs != nil {
			t.Fatalf("Trigger(dmarc) = %v, %v; want ErrUnknownJobType", runs, err)
		}
		if n := countRuns(t, db, "TRUE"); n != 0 {
			t.Errorf("%d runs stored for an unknown job type", n)
		}
	})
}

func TestFailedRunsRaiseAlerts(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		runner := newFakeRunner(map[string]jobFunc{
			"azure/users": func(context.Context, Events) (int64, error) {
				return 3, errors.New("graph API returned 503")
			},
			"okta/users": func(context.Context, Events) (int64, error) {
				panic("index out of range")
			},
		})
		s := newScheduler(t, db, runner, clock, Options{})
		err := s.SetSpecs([]Spec{
			{Plugin: "azure", Name: "users", DataDomain: "identity"},
			{Plugin: "okta", Name: "users", DataDomain: "identity"},
		})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := s.Trigger(ctx, "identity", "")
		if err != nil {
			t.Fatal(err)
		}
		if runs[0].TriggeredBy != nil {
			t.Errorf("empty actor stored as %q, want NULL", *runs[0].TriggeredBy)
		}

		failed := waitFinished(t, s, runs[0].ID)
		if failed.Status != StatusFailed || failed.ErrorMessage == nil || *failed.ErrorMessage != "graph API returned 503" ||
			failed.CompletedAt == nil {
			t.Errorf("failed run = %+v", failed)
		}
		panicked := waitFinished(t, s, runs[1].ID)
		if panicked.Status != StatusFailed || panicked.ErrorMessage == nil ||
			!strings.Contains(*panicked.ErrorMessage, "panicked") {
			t.Errorf("panicking run = %+v", panicked)
		}

		alerts, err := s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		byJob := map[string]Alert{}
		for _, a := range alerts.Alerts {
			byJob[a.JobID] = a
		}
		if len(alerts.Alerts) != 2 {
			t.Fatalf("got %d alerts, want 2: %+v", len(alerts.Alerts), alerts.Alerts)
		}
		a := byJob[runs[0].ID]
		if a.ID == 0 || a.JobType != "identity" || a.Severity != SeverityError || a.Resolved ||
			a.Message != "graph API returned 503" || !strings.Contains(a.Title, "azure/users") || !a.CreatedAt.Equal(t0) {
			t.Errorf("alert for failed run = %+v", a)
		}
		if _, ok := byJob[runs[1].ID]; !ok {
			t.Errorf("no alert for the panicking run")
		}
	})
}

// TestRunsRaiseAlerts: a completed run's alerts are recorded with its job
// id and type, up to maxRunAlerts, and one more says how many were
// dropped.
func TestRunsRaiseAlerts(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		runner := newFakeRunner(map[string]jobFunc{
			"mail/posture": func(_ context.Context, ev Events) (int64, error) {
				ev.Alert(RunAlert{Severity: "critical", Title: "DMARC policy relaxed: brand-a.example", Message: "p=reject became p=none"})
				return 1, nil
			},
			"mail/noisy": func(_ context.Context, ev Events) (int64, error) {
				for i := range maxRunAlerts + 5 {
					ev.Alert(RunAlert{Severity: "warning", Title: fmt.Sprintf("finding %d", i)})
				}
				return 1, nil
			},
		})
		s := newScheduler(t, db, runner, &fakeClock{now: t0}, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "mail", Name: "posture", JobType: "dmarc", DataDomain: "dmarc"}, {Plugin: "mail", Name: "noisy", DataDomain: "noisy"}}); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Trigger(ctx, "dmarc", "")
		if err != nil {
			t.Fatal(err)
		}
		if r := waitFinished(t, s, runs[0].ID); r.Status != StatusCompleted {
			t.Fatalf("run = %+v", r)
		}
		got, err := s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Alerts) != 1 {
			t.Fatalf("alerts = %+v, want the run's one", got.Alerts)
		}
		if a := got.Alerts[0]; a.JobID != runs[0].ID || a.JobType != "dmarc" || a.Severity != "critical" ||
			a.Title != "DMARC policy relaxed: brand-a.example" || a.Message != "p=reject became p=none" || a.Resolved || !a.CreatedAt.Equal(t0) {
			t.Errorf("alert = %+v", a)
		}
		runs, err = s.Trigger(ctx, "noisy", "")
		if err != nil {
			t.Fatal(err)
		}
		waitFinished(t, s, runs[0].ID)
		got, err = s.Alerts(ctx, 500)
		if err != nil {
			t.Fatal(err)
		}
		var noisy, dropped int
		for _, a := range got.Alerts {
			if a.JobID == runs[0].ID {
				noisy++
				if strings.Contains(a.Message, "5 alerts past the first 100") {
					dropped++
				}
			}
		}
		if noisy != maxRunAlerts+1 || dropped != 1 {
			t.Errorf("noisy run recorded %d alerts (%d saying what was dropped), want %d and 1", noisy, dropped, maxRunAlerts+1)
		}
	})
}

func TestResolveAlert(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		runner := newFakeRunner(map[string]jobFunc{
			"azure/costs": func(context.Context, Events) (int64, error) { return 0, errors.New("quota exceeded") },
		})
		s := newScheduler(t, db, runner, clock, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs"}}); err != nil {
			t.Fatal(err)
		}
		var runIDs []string
		for range 2 {
			runs, err := s.Trigger(ctx, "costs", "user-1")
			if err != nil {
				t.Fatal(err)
			}
			waitFinished(t, s, runs[0].ID)
			runIDs = append(runIDs, runs[0].ID)
			clock.Advance(time.Minute)
		}
		alerts, err := s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(alerts.Alerts) != 2 || alerts.Alerts[0].JobID != runIDs[1] {
			t.Fatalf("alerts = %+v, want newest first", alerts.Alerts)
		}
		older := alerts.Alerts[1]

		resolved, err := s.ResolveAlert(ctx, older.ID, "admin-1", "quota raised")
		if err != nil {
			t.Fatalf("ResolveAlert: %v", err)
		}
		if !resolved.Resolved || resolved.ResolvedAt == nil || !resolved.ResolvedAt.Equal(clock.Now()) ||
			resolved.ResolvedBy == nil || *resolved.ResolvedBy != "admin-1" ||
			resolved.ResolutionNotes == nil || *resolved.ResolutionNotes != "quota raised" {
			t.Errorf("resolved alert = %+v", resolved)
		}

		clock.Advance(time.Minute)
		_, err = s.ResolveAlert(ctx, older.ID, "admin-2", "again")
		if !errors.Is(err, ErrAlreadyResolved) {
			t.Errorf("second ResolveAlert error = %v, want ErrAlreadyResolved", err)
		}
		_, err = s.ResolveAlert(ctx, older.ID+1000, "admin-1", "")
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("ResolveAlert of a missing id error = %v, want ErrNotFound", err)
		}

		alerts, err = s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(alerts.Alerts) != 2 {
			t.Fatalf("got %d alerts, want 2", len(alerts.Alerts))
		}
		if alerts.Alerts[0].Resolved || alerts.Alerts[0].JobID != runIDs[1] {
			t.Errorf("first alert = %+v, want the unresolved one", alerts.Alerts[0])
		}
		kept := alerts.Alerts[1]
		if !kept.Resolved || *kept.ResolvedBy != "admin-1" || *kept.ResolutionNotes != "quota raised" {
			t.Errorf("rejected second resolution changed the alert: %+v", kept)
		}
	})
}

func TestReplicasClaimEachSlotOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		specs := []Spec{
			{Plugin: "azure", Name: "resources", DataDomain: "resources", Schedule: "@every 1h"},
			{Plugin: "azure", Name: "policies", DataDomain: "compliance", Schedule: "*/30 * * * *"},
		}
		runner := newFakeRunner(nil)
		var replicas []*Scheduler
		for _, name := range []string{"r1", "r2"} {
			s := newScheduler(t, db, runner, clock, Options{Replica: name})
			if err := s.SetSpecs(specs); err != nil {
				t.Fatal(err)
			}
			replicas = append(replicas, s)
			// The second replica starts later; "@every" slots must still
			// line up across replicas.
			clock.Advance(7 * time.Minute)
		}

		// tickAll runs one loop pass on every replica at once and lets the
		// claimed runs finish, so that no slot is skipped for overlapping
		// its predecessor.
		tickAll := func() {
			var wg sync.WaitGroup
			for _, s := range replicas {
				wg.Go(func() { s.tick(ctx) })
			}
			wg.Wait()
			waitFor(t, "claimed runs to finish", func() bool {
				return countRuns(t, db, "status IN (?)", bun.List(activeStatuses)) == 0
			})
		}
		// Now 00:24: nothing is due yet.
		tickAll()
		if n := countRuns(t, db, "TRUE"); n != 0 {
			t.Fatalf("%d runs claimed before any slot was due", n)
		}

		clock.Advance(6 * time.Minute) // 00:30: the half-hourly job
		tickAll()
		// A second pass in the same minute claims nothing more.
		tickAll()
		clock.Advance(30 * time.Minute) // 01:00: both jobs
		tickAll()
		clock.Advance(30 * time.Minute) // 01:30: the half-hourly job
		tickAll()

		var runs []Run
		if err := db.NewSelect().Model(&runs).Order("job_key", "scheduled_for").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		type slot struct {
			key string
			at  time.Time
		}
		want := []slot{
			{"azure/policies", time.Date(2025, 3, 1, 0, 30, 0, 0, time.UTC)},
			{"azure/policies", time.Date(2025, 3, 1, 1, 0, 0, 0, time.UTC)},
			{"azure/policies", time.Date(2025, 3, 1, 1, 30, 0, 0, time.UTC)},
			{"azure/resources", time.Date(2025, 3, 1, 1, 0, 0, 0, time.UTC)},
		}
		if len(runs) != len(want) {
			t.Fatalf("got %d runs, want %d: %+v", len(runs), len(want), runs)
		}
		for i, r := range runs {
			if r.JobKey != want[i].key || r.ScheduledFor == nil || !r.ScheduledFor.Equal(want[i].at) || r.Trigger != TriggerSchedule {
				t.Errorf("run %d = %s at %v, want %s at %v", i, r.JobKey, r.ScheduledFor, want[i].key, want[i].at)
			}
			if r.Status != StatusCompleted {
				t.Errorf("run %d status = %s", i, r.Status)
			}
		}
		if n := runner.callCount("azure/policies"); n != 3 {
			t.Errorf("azure/policies ran %d times, want 3", n)
		}
		if n := runner.callCount("azure/resources"); n != 1 {
			t.Errorf("azure/resources ran %d times, want 1", n)
		}
	})
}

func TestMissedSlotsCollapseIntoOneRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		clock := &fakeClock{now: t0}
		s := newScheduler(t, db, newFakeRunner(nil), clock, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "resources", DataDomain: "resources", Schedule: "@hourly"}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Hour) // 05:10, slots 01:00 to 05:00 missed
		s.tick(context.Background())

		var runs []Run
		if err := db.NewSelect().Model(&runs).Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || !runs[0].ScheduledFor.Equal(time.Date(2025, 3, 1, 5, 0, 0, 0, time.UTC)) {
			t.Fatalf("runs = %+v, want one for the 05:00 slot", runs)
		}
		status, err := s.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if next := status.Jobs[0].NextRun; next == nil || !next.Equal(time.Date(2025, 3, 1, 6, 0, 0, 0, time.UTC)) {
			t.Errorf("next run = %v, want 06:00", next)
		}
		waitFinished(t, s, runs[0].ID)
	})
}

func TestSlotSkippedWhilePreviousRunUnfinished(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		release := make(chan struct{})
		runner := newFakeRunner(map[string]jobFunc{
			"azure/costs": func(context.Context, Events) (int64, error) {
				<-release
				return 1, nil
			},
		})
		s := newScheduler(t, db, runner, clock, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "@hourly"}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(50 * time.Minute) // 01:00
		s.tick(ctx)
		var first Run
		if err := db.NewSelect().Model(&first).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, first.ID, StatusRunning)

		clock.Advance(time.Hour) // 02:00, the 01:00 run still busy
		s.tick(ctx)
		if n := countRuns(t, db, "TRUE"); n != 1 {
			t.Fatalf("%d runs after the overlapping slot, want 1", n)
		}

		close(release)
		waitFinished(t, s, first.ID)
		clock.Advance(time.Hour) // 03:00
		s.tick(ctx)
		if n := countRuns(t, db, "scheduled_for = ?", time.Date(2025, 3, 1, 3, 0, 0, 0, time.UTC)); n != 1 {
			t.Errorf("%d runs for the 03:00 slot, want 1", n)
		}
	})
}

func TestFailedClaimIsRetried(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		clock := &fakeClock{now: t0}
		s := newScheduler(t, db, newFakeRunner(nil), clock, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "@daily"}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour) // past midnight
		broken, cancel := context.WithCancel(context.Background())
		cancel() // every database call of this pass fails
		s.tick(broken)
		if n := countRuns(t, db, "TRUE"); n != 0 {
			t.Fatalf("%d runs claimed by a failing pass", n)
		}

		clock.Advance(time.Minute)
		s.tick(context.Background())
		var runs []Run
		if err := db.NewSelect().Model(&runs).Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || !runs[0].ScheduledFor.Equal(time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("runs after the retry = %+v, want one for midnight", runs)
		}
		waitFinished(t, s, runs[0].ID)
	})
}

func TestAbandonedRunsAreFailed(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		release := make(chan struct{})
		runner := newFakeRunner(map[string]jobFunc{
			"azure/costs": func(ctx context.Context, _ Events) (int64, error) {
				<-release
				return 5, nil
			},
		})
		s := newScheduler(t, db, runner, clock, Options{AbandonAfter: 5 * time.Minute})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs"}}); err != nil {
			t.Fatal(err)
		}

		// Runs left behind by other replicas: one crashed long ago, one is
		// alive and heartbeating.
		started := t0.Add(-time.Hour)
		crashed := Run{
			ID: "00000000-0000-7000-8000-000000000001", JobKey: "aws/costs", Plugin: "aws", JobName: "costs",
			JobType: "costs", Trigger: TriggerManual, Replica: "r-dead", Status: StatusRunning,
			QueuedAt: started, StartedAt: &started, HeartbeatAt: t0.Add(-10 * time.Minute),
		}
		alive := crashed
		alive.ID = "00000000-0000-7000-8000-000000000002"
		alive.Replica = "r-alive"
		alive.HeartbeatAt = t0.Add(-time.Minute)
		if _, err := db.NewInsert().Model(&[]Run{crashed, alive}).Exec(ctx); err != nil {
			t.Fatal(err)
		}

		// A run of this replica whose heartbeat would look stale once the
		// clock jumps, but which this replica knows to be alive.
		own, err := s.Trigger(ctx, "costs", "user-1")
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, own[0].ID, StatusRunning)

		s.tick(ctx)

		got, err := s.Get(ctx, crashed.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusFailed || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, "abandoned") ||
			!strings.Contains(*got.ErrorMessage, "r-dead") || got.CompletedAt == nil || !got.CompletedAt.Equal(t0) {
			t.Errorf("crashed run = %+v", got)
		}
		if got, err := s.Get(ctx, alive.ID); err != nil || got.Status != StatusRunning {
			t.Errorf("live run of another replica = %+v, %v; want still running", got, err)
		}
		alerts, err := s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(alerts.Alerts) != 1 || alerts.Alerts[0].JobID != crashed.ID {
			t.Errorf("alerts = %+v, want one for the crashed run", alerts.Alerts)
		}

		clock.Advance(time.Hour)
		s.tick(ctx)
		if got, err := s.Get(ctx, own[0].ID); err != nil || got.Status != StatusRunning {
			t.Errorf("own run after the clock jumped = %+v, %v; want still running", got, err)
		}
		if got, err := s.Get(ctx, alive.ID); err != nil || got.Status != StatusFailed {
			t.Errorf("other replica's run silent for an hour = %+v, %v; want failed", got, err)
		}
		close(release)
		if got := waitFinished(t, s, own[0].ID); got.Status != StatusCompleted {
			t.Errorf("own run = %+v, want completed", got)
		}
	})
}

func TestHeartbeatKeepsRunAlive(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		release := make(chan struct{})
		runner := newFakeRunner(map[string]jobFunc{
			"azure/costs": func(context.Context, Events) (int64, error) {
				<-release
				return 1, nil
			},
		})
		opts := Options{HeartbeatEvery: 5 * time.Millisecond, AbandonAfter: 5 * time.Minute}
		s := newScheduler(t, db, runner, clock, opts)
		other := newScheduler(t, db, runner, clock, opts)
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs"}}); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Trigger(ctx, "costs", "")
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, runs[0].ID, StatusRunning)

		clock.Advance(time.Hour)
		waitFor(t, "a heartbeat at the new time", func() bool {
			run, err := s.Get(ctx, runs[0].ID)
			return err == nil && run.HeartbeatAt.Equal(clock.Now())
		})
		other.tick(ctx)
		if got, err := s.Get(ctx, runs[0].ID); err != nil || got.Status != StatusRunning {
			t.Errorf("heartbeating run after another replica's pass = %+v, %v; want running", got, err)
		}
		close(release)
		waitFinished(t, s, runs[0].ID)
	})
}

func TestStartClaimsDueSlots(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := &fakeClock{now: t0}
		runner := newFakeRunner(nil)
		s := newScheduler(t, db, runner, clock, Options{PollEvery: 5 * time.Millisecond})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "resources", DataDomain: "resources", Schedule: "@hourly"}}); err != nil {
			t.Fatal(err)
		}
		s.Start(ctx)
		clock.Advance(50 * time.Minute) // 01:00
		waitFor(t, "the 01:00 slot to run", func() bool { return runner.callCount("azure/resources") == 1 })
		s.Stop()
		if n := countRuns(t, db, "status = ?", StatusCompleted); n != 1 {
			t.Errorf("%d completed runs, want 1", n)
		}
	})
}

func TestMaxConcurrentBoundsRuns(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		release := make(chan struct{})
		block := func(ctx context.Context, _ Events) (int64, error) {
			<-release
			return 1, nil
		}
		funcs := map[string]jobFunc{}
		var specs []Spec
		for i := range 5 {
			spec := Spec{Plugin: fmt.Sprintf("p%d", i), Name: "inventory", DataDomain: "resources"}
			funcs[spec.Key()] = block
			specs = append(specs, spec)
		}
		runner := newFakeRunner(funcs)
		s := newScheduler(t, db, runner, &fakeClock{now: t0}, Options{MaxConcurrent: 2})
		if err := s.SetSpecs(specs); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Trigger(ctx, "resources", "user-1")
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 5 {
			t.Fatalf("got %d runs, want 5", len(runs))
		}
		waitFor(t, "two runs to start", func() bool {
			return countRuns(t, db, "status = ?", StatusRunning) == 2
		})
		// Give a wrongly unbounded scheduler the chance to start more.
		time.Sleep(50 * time.Millisecond)
		if active, _ := runner.activeCount(); active != 2 {
			t.Errorf("%d jobs executing, want 2", active)
		}
		if n := countRuns(t, db, "status = ?", StatusQueued); n != 3 {
			t.Errorf("%d runs queued, want 3", n)
		}
		status, err := s.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var running, queued int
		for _, j := range status.Jobs {
			running += j.Running
			queued += j.Queued
		}
		if running != 2 || queued != 3 {
			t.Errorf("status counts %d running and %d queued, want 2 and 3", running, queued)
		}

		close(release)
		for _, r := range runs {
			if got := waitFinished(t, s, r.ID); got.Status != StatusCompleted {
				t.Errorf("run %s = %s", r.JobKey, got.Status)
			}
		}
		if _, maxActive := runner.activeCount(); maxActive != 2 {
			t.Errorf("at most %d jobs executed at once, want 2", maxActive)
		}
	})
}

func TestProgressIsThrottled(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		step := make(chan struct{})
		runner := newFakeRunner(map[string]jobFunc{
			"azure/resources": func(ctx context.Context, ev Events) (int64, error) {
				ev.Progress(Progress{Done: 1, Total: 10, Message: "listing"})
				ev.Progress(Progress{Done: 2, Total: 10, Message: "listing"}) // within a second: held back
				step <- struct{}{}
				<-step
				clock.Advance(2 * time.Second)
				ev.Progress(Progress{Done: 7, Total: 10, Message: "tagging"})
				step <- struct{}{}
				<-step
				ev.Progress(Progress{Done: 9, Total: 10, Message: "tagging"}) // held back, kept for the end
				return 9, nil
			},
		})
		s := newScheduler(t, db, runner, clock, Options{})
		if err := s.SetSpecs([]Spec{{Plugin: "azure", Name: "resources", DataDomain: "resources"}}); err != nil {
			t.Fatal(err)
		}
		runs, err := s.Trigger(ctx, "resources", "")
		if err != nil {
			t.Fatal(err)
		}
		progressOf := func() Progress {
			run, err := s.Get(ctx, runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			return run.Progress
		}

		<-step
		if p := progressOf(); p != (Progress{Done: 1, Total: 10, Message: "listing"}) {
			t.Errorf("progress after two quick reports = %+v, want the first", p)
		}
		step <- struct{}{}
		<-step
		if p := progressOf(); p.Done != 7 || p.Message != "tagging" {
			t.Errorf("progress two seconds later = %+v, want 7 tagging", p)
		}
		step <- struct{}{}
		got := waitFinished(t, s, runs[0].ID)
		if got.Progress.Done != 9 || got.RecordsProcessed != 9 {
			t.Errorf("finished run = %+v, want the last progress kept", got)
		}
	})
}

func TestHistoryNewestFirstWithLimit(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		runner := newFakeRunner(map[string]jobFunc{
			"m365/dmarc": func(context.Context, Events) (int64, error) { return 0, errors.New("no DNS") },
		})
		s := newScheduler(t, db, runner, clock, Options{})
		err := s.SetSpecs([]Spec{
			{Plugin: "azure", Name: "costs", DataDomain: "costs"},
			{Plugin: "m365", Name: "dmarc", JobType: "dmarc", DataDomain: "compliance"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, jobType := range []string{"costs", "dmarc", "costs"} {
			runs, err := s.Trigger(ctx, jobType, "user-1")
			if err != nil {
				t.Fatal(err)
			}
			waitFinished(t, s, runs[0].ID)
			ids = append(ids, runs[0].ID)
			clock.Advance(time.Minute)
		}

		all, err := s.History(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Logs) != 3 {
			t.Fatalf("history has %d runs, want 3", len(all.Logs))
		}
		for i, r := range all.Logs {
			if want := ids[len(ids)-1-i]; r.ID != want {
				t.Errorf("history[%d] = %s, want %s", i, r.ID, want)
			}
		}
		if dmarc := all.Logs[1]; dmarc.JobType != "dmarc" || dmarc.Plugin != "m365" || dmarc.JobName != "dmarc" ||
			dmarc.Status != StatusFailed || dmarc.ErrorMessage == nil || dmarc.Trigger != TriggerManual {
			t.Errorf("dmarc run in history = %+v", dmarc)
		}

		page, err := s.History(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Logs) != 2 || page.Logs[0].ID != ids[2] || page.Logs[1].ID != ids[1] {
			t.Errorf("history limited to 2 = %+v", page.Logs)
		}
	})
}

func TestMetricsPerJobType(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		var mu sync.Mutex
		outcomes := []struct {
			took time.Duration
			err  error
		}{{10 * time.Second, nil}, {20 * time.Second, nil}, {5 * time.Second, errors.New("throttled")}}
		runner := newFakeRunner(map[string]jobFunc{
			"azure/costs": func(context.Context, Events) (int64, error) {
				mu.Lock()
				o := outcomes[0]
				outcomes = outcomes[1:]
				mu.Unlock()
				clock.Advance(o.took)
				return 1, o.err
			},
		})
		s := newScheduler(t, db, runner, clock, Options{})
		err := s.SetSpecs([]Spec{
			{Plugin: "azure", Name: "costs", DataDomain: "costs"},
			{Plugin: "azure", Name: "policies", DataDomain: "compliance"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var lastSuccess time.Time
		for i := range 3 {
			runs, err := s.Trigger(ctx, "costs", "")
			if err != nil {
				t.Fatal(err)
			}
			if got := waitFinished(t, s, runs[0].ID); i == 1 {
				lastSuccess = *got.CompletedAt
			}
			clock.Advance(time.Hour)
		}

		m, err := s.Metrics(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Since != nil || len(m.JobTypes) != 2 {
			t.Fatalf("metrics = %+v, want compliance and costs", m)
		}
		compliance, costs := m.JobTypes[0], m.JobTypes[1]
		if compliance.JobType != "compliance" || compliance.TotalRuns != 0 || compliance.SuccessRatePercent != nil ||
			compliance.AvgDurationSeconds != nil || compliance.LastSuccessAt != nil {
			t.Errorf("compliance metrics = %+v", compliance)
		}
		if costs.TotalRuns != 3 || costs.Completed != 2 || costs.Failed != 1 {
			t.Errorf("costs counts = %+v", costs)
		}
		if r := costs.SuccessRatePercent; r == nil || *r < 66.66 || *r > 66.67 {
			t.Errorf("success rate = %v, want 66.67", r)
		}
		if a := costs.AvgDurationSeconds; a == nil || *a != 15 {
			t.Errorf("avg duration = %v, want 15", a)
		}
		if p := costs.P95DurationSeconds; p == nil || *p != 20 {
			t.Errorf("p95 duration = %v, want 20", p)
		}
		if l := costs.LastSuccessAt; l == nil || !l.Equal(lastSuccess) {
			t.Errorf("last success = %v, want %v", l, lastSuccess)
		}

		// Only the last run started within the window.
		recent, err := s.Metrics(ctx, t0.Add(90*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if c := recent.JobTypes[1]; c.TotalRuns != 1 || c.Failed != 1 || *c.SuccessRatePercent != 0 || c.LastSuccessAt != nil {
			t.Errorf("windowed costs metrics = %+v", c)
		}
	})
}

func TestStopFailsQueuedRunsAndRefusesNewOnes(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		untilCancelled := func(ctx context.Context, _ Events) (int64, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}
		runner := newFakeRunner(map[string]jobFunc{"azure/costs": untilCancelled, "aws/costs": untilCancelled})
		s := newScheduler(t, db, runner, &fakeClock{now: t0}, Options{MaxConcurrent: 1})
		err := s.SetSpecs([]Spec{
			{Plugin: "azure", Name: "costs", DataDomain: "costs"},
			{Plugin: "aws", Name: "costs", DataDomain: "costs"},
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Start(ctx)
		runs, err := s.Trigger(ctx, "costs", "")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "one run to start", func() bool {
			return countRuns(t, db, "status = ?", StatusRunning) == 1
		})
		running, queued := runs[0], runs[1]
		if got, err := s.Get(ctx, running.ID); err != nil || got.Status != StatusRunning {
			running, queued = queued, running
		}

		stopped := make(chan struct{})
		go func() {
			s.Stop()
			close(stopped)
		}()
		// The queued run gives up at once; the running one holds Stop until
		// the host's context ends.
		waitStatus(t, s, queued.ID, StatusFailed)
		select {
		case <-stopped:
			t.Fatal("Stop returned while a run was still executing")
		case <-time.After(20 * time.Millisecond):
		}
		cancel()
		<-stopped

		got, err := s.Get(context.Background(), running.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusFailed || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, "canceled") {
			t.Errorf("cancelled run = %+v", got)
		}
		gaveUp, err := s.Get(context.Background(), queued.ID)
		if err != nil {
			t.Fatal(err)
		}
		if gaveUp.StartedAt != nil || gaveUp.ErrorMessage == nil || !strings.Contains(*gaveUp.ErrorMessage, "stopped before the run started") {
			t.Errorf("queued run at stop = %+v", gaveUp)
		}
		if _, err := s.Trigger(context.Background(), "costs", ""); !errors.Is(err, ErrStopped) {
			t.Errorf("Trigger after Stop error = %v, want ErrStopped", err)
		}
	})
}

func TestGetUnknownRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newScheduler(t, db, newFakeRunner(nil), &fakeClock{now: t0}, Options{})
		if _, err := s.Get(context.Background(), "00000000-0000-7000-8000-000000000009"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a missing run error = %v, want ErrNotFound", err)
		}
	})
}

func TestSetSpecsValidation(t *testing.T) {
	cases := []struct {
		name    string
		specs   []Spec
		wantErr string
	}{
		{"bad cron", []Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "61 * * * *"}}, `job "azure/costs": invalid schedule "61 * * * *"`},
		{"bad descriptor", []Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "@fortnightly"}}, `job "azure/costs": invalid schedule`},
		{"never fires", []Spec{{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "0 0 30 2 *"}}, `never fires`},
		{"no type", []Spec{{Plugin: "azure", Name: "costs"}}, `job "azure/costs": job type or data domain is required`},
		{"no plugin", []Spec{{Name: "costs", DataDomain: "costs"}}, `plugin and name are required`},
		{"slash in plugin", []Spec{{Plugin: "a/b", Name: "costs", DataDomain: "costs"}}, `must not contain '/'`},
		{"duplicate", []Spec{
			{Plugin: "azure", Name: "costs", DataDomain: "costs"},
			{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "@hourly"},
		}, `job "azure/costs" is registered twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil, newFakeRunner(nil), Options{Now: (&fakeClock{now: t0}).Now})
			valid := []Spec{{Plugin: "azure", Name: "users", DataDomain: "identity"}}
			if err := s.SetSpecs(valid); err != nil {
				t.Fatal(err)
			}
			err := s.SetSpecs(tc.specs)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("SetSpecs error = %v, want one containing %q", err, tc.wantErr)
			}
			if len(s.jobs) != 1 || s.jobs[0].spec.Key() != "azure/users" {
				t.Errorf("a rejected SetSpecs changed the jobs")
			}
		})
	}
}

func TestSetSpecsKeepsNextSlotOfUnchangedJobs(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := New(nil, newFakeRunner(nil), Options{Now: clock.Now})
	hourly := Spec{Plugin: "azure", Name: "resources", DataDomain: "resources", Schedule: "@every 1h"}
	if err := s.SetSpecs([]Spec{hourly}); err != nil {
		t.Fatal(err)
	}
	if got := s.jobs[0].next; !got.Equal(time.Date(2025, 3, 1, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("first slot = %v, want 01:00", got)
	}
	clock.Advance(2 * time.Hour) // 02:10, the 01:00 slot not yet claimed
	daily := Spec{Plugin: "azure", Name: "costs", DataDomain: "costs", Schedule: "@daily"}
	if err := s.SetSpecs([]Spec{hourly, daily}); err != nil {
		t.Fatal(err)
	}
	if got := s.jobs[0].next; !got.Equal(time.Date(2025, 3, 1, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("unchanged job's slot moved to %v", got)
	}
	if got := s.jobs[1].next; !got.Equal(time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("new job's first slot = %v, want next midnight", got)
	}
	if s.jobs[0].spec.JobType != "resources" {
		t.Errorf("job type = %q, want it defaulted from the data domain", s.jobs[0].spec.JobType)
	}
}

// TestInterruptedRunsAreQueuedAgain: a run whose runner says it was
// interrupted (ErrRequeue) is started again, not failed, and completes;
// one interrupted on every start fails after MaxAttempts with the cause
// and an alert.
func TestInterruptedRunsAreQueuedAgain(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		interrupted := fmt.Errorf("%w: plugin process replaced", ErrRequeue)
		var once sync.Once
		runner := newFakeRunner(map[string]jobFunc{
			"azure/users": func(context.Context, Events) (int64, error) {
				var err error
				once.Do(func() { err = interrupted })
				if err != nil {
					return 0, err
				}
				return 7, nil
			},
			"azure/groups": func(context.Context, Events) (int64, error) { return 0, interrupted },
		})
		s := newScheduler(t, db, runner, &fakeClock{now: t0}, Options{})
		if err := s.SetSpecs([]Spec{
			{Plugin: "azure", Name: "users", JobType: "users"},
			{Plugin: "azure", Name: "groups", JobType: "groups"},
		}); err != nil {
			t.Fatal(err)
		}
		users, err := s.Trigger(ctx, "users", "ann")
		if err != nil {
			t.Fatal(err)
		}
		run := waitFinished(t, s, users[0].ID)
		if run.Status != StatusCompleted || run.Attempts != 2 || run.RecordsProcessed != 7 || run.ErrorMessage != nil ||
			runner.callCount("azure/users") != 2 {
			t.Fatalf("run interrupted once = %+v after %d calls", run, runner.callCount("azure/users"))
		}

		groups, err := s.Trigger(ctx, "groups", "ann")
		if err != nil {
			t.Fatal(err)
		}
		run = waitFinished(t, s, groups[0].ID)
		if run.Status != StatusFailed || run.Attempts != MaxAttempts || runner.callCount("azure/groups") != MaxAttempts ||
			run.ErrorMessage == nil || !strings.Contains(*run.ErrorMessage, "plugin process replaced") {
			t.Fatalf("run interrupted on every start = %+v after %d calls", run, runner.callCount("azure/groups"))
		}
		alerts, err := s.Alerts(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(alerts.Alerts) != 1 || alerts.Alerts[0].JobID != run.ID {
			t.Fatalf("alerts = %+v, want one for the run that never finished", alerts.Alerts)
		}
	})
}

func TestDataDomains(t *testing.T) {
	s := New(nil, newFakeRunner(nil), Options{Now: (&fakeClock{now: t0}).Now})
	if got := s.DataDomains(); len(got) != 0 {
		t.Fatalf("DataDomains without jobs = %v", got)
	}
	err := s.SetSpecs([]Spec{
		{Plugin: "resources", Name: "quotas", DataDomain: "resources", Schedule: "@every 1h"},
		{Plugin: "resources", Name: "inventory", DataDomain: "resources", Schedule: "@every 3h"},
		// 09:00 on weekdays: the longest gap is Friday to Monday.
		{Plugin: "acme", Name: "collect", DataDomain: "acme_evidence", Schedule: "0 9 * * 1-5"},
		{Plugin: "partner", Name: "partner", DataDomain: "partner"},
		{Plugin: "partner", Name: "expiry", JobType: "partner_evidence_expiry", Schedule: "@daily"},
		// A declared threshold wins over the schedule, the longest of a
		// domain's.
		{Plugin: "cost", Name: "costs", DataDomain: "costs", Schedule: "@every 6h", StaleAfter: 25 * time.Hour},
		{Plugin: "cost", Name: "backfill", DataDomain: "costs", Schedule: "@every 1h", StaleAfter: 2 * time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Twice the longest gap between runs, unless declared.
	want := map[string]time.Duration{"resources": 6 * time.Hour, "acme_evidence": 144 * time.Hour, "partner": 0, "costs": 25 * time.Hour}
	if got := s.DataDomains(); !maps.Equal(got, want) {
		t.Errorf("DataDomains = %v, want %v", got, want)
	}
}
