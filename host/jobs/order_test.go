package jobs

import (
	"time"

	"context"
	"sync"
	"testing"

	"github.com/uptrace/bun"
)

// TestReadersRunAfterTheirProducers: at start-up the reader of two
// producers' datasets waits for both and then runs once; the producers and
// a job of its own run at once; a later producer run queues the reader
// again; a cycle of readers is left unordered instead of running forever.
func TestReadersRunAfterTheirProducers(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		release := make(chan struct{})
		runner := newFakeRunner(map[string]jobFunc{
			"compliance/states": func(ctx context.Context, _ Events) (int64, error) {
				<-release
				return 1, nil
			},
			"partner/partner": func(context.Context, Events) (int64, error) { return 5, nil },
		})
		clock := &fakeClock{now: t0}
		s := newScheduler(t, db, runner, clock, Options{})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock) // before the scheduler stops
		err := s.SetSpecs([]Spec{
			{Plugin: "identity", Name: "directory", DataDomain: "identity", Produces: []string{"identity.mfa"}},
			{Plugin: "compliance", Name: "states", DataDomain: "compliance", Produces: []string{"compliance.scores", "compliance.frameworks"}},
			{Plugin: "partner", Name: "partner", DataDomain: "partner", Produces: []string{"partner.maturity"},
				Reads: []string{"identity.mfa", "compliance.frameworks", "nobody.publishes"}},
			{Plugin: "dmarc", Name: "dmarc", DataDomain: "dmarc"},
			{Plugin: "a", Name: "a", DataDomain: "a", Produces: []string{"a.x"}, Reads: []string{"b.x"}},
			{Plugin: "b", Name: "b", DataDomain: "b", Produces: []string{"b.x"}, Reads: []string{"a.x"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := s.FirstSync(ctx, "system")
		if err != nil {
			t.Fatal(err)
		}
		queued := map[string]bool{}
		for _, r := range runs {
			queued[r.JobKey] = true
		}
		for _, key := range []string{"identity/directory", "compliance/states", "dmarc/dmarc", "a/a", "b/b"} {
			if !queued[key] {
				t.Errorf("first sync left %s out", key)
			}
		}
		if queued["partner/partner"] || len(runs) != 5 {
			t.Fatalf("first sync queued %v, want the partner job to wait", queued)
		}

		// Identity is done, compliance is still running: the reader waits.
		waitFor(t, "identity's first run", func() bool { return runner.callCount("identity/directory") == 1 })
		waitFor(t, "identity's run recorded", func() bool {
			return countRuns(t, db, "job_key = ? AND status = ?", "identity/directory", StatusCompleted) == 1
		})
		if n := countRuns(t, db, "job_key = ?", "partner/partner"); n != 0 {
			t.Fatalf("the reader was queued %d times before compliance finished", n)
		}
		unblock()
		waitFor(t, "the reader's run", func() bool {
			return countRuns(t, db, "job_key = ? AND status = ?", "partner/partner", StatusCompleted) == 1
		})
		waitFor(t, "the cycle's runs", func() bool { return runner.callCount("a/a") == 1 && runner.callCount("b/b") == 1 })

		// A later run of a producer queues the reader again, once.
		clock.Advance(time.Minute)
		again, err := s.Trigger(ctx, "identity", "user-1")
		if err != nil {
			t.Fatal(err)
		}
		waitFinished(t, s, again[0].ID)
		waitFor(t, "the reader's second run", func() bool {
			return countRuns(t, db, "job_key = ? AND status = ?", "partner/partner", StatusCompleted) == 2
		})
		if n := runner.callCount("a/a") + runner.callCount("b/b"); n != 2 {
			t.Errorf("the jobs reading each other ran %d times, want once each", n)
		}
	})
}

// TestLateProducerCheckDoesNotRerunTheReader: a producer's check of its
// readers that comes after another producer's finish queued the reader,
// and after that run completed, queues nothing more, as the run read both
// producers' data. A producer that completes later does queue it.
func TestLateProducerCheckDoesNotRerunTheReader(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		runner := newFakeRunner(map[string]jobFunc{})
		clock := &fakeClock{now: t0}
		s := newScheduler(t, db, runner, clock, Options{})
		err := s.SetSpecs([]Spec{
			{Plugin: "identity", Name: "directory", DataDomain: "identity", Produces: []string{"identity.mfa"}},
			{Plugin: "compliance", Name: "states", DataDomain: "compliance", Produces: []string{"compliance.frameworks"}},
			{Plugin: "partner", Name: "partner", DataDomain: "partner", Reads: []string{"identity.mfa", "compliance.frameworks"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		identityDone := clock.Now()
		clock.Advance(time.Second)
		s.runDependents(ctx, "compliance/states", clock.Now())
		waitFor(t, "the reader's run", func() bool {
			return countRuns(t, db, "job_key = ? AND status = ?", "partner/partner", StatusCompleted) == 1
		})
		// identity finished first, but its check comes only now.
		s.runDependents(ctx, "identity/directory", identityDone)
		if n := countRuns(t, db, "job_key = ?", "partner/partner"); n != 1 {
			t.Fatalf("a late check queued the reader again: %d runs", n)
		}
		clock.Advance(time.Second)
		s.runDependents(ctx, "identity/directory", clock.Now())
		waitFor(t, "the reader's second run", func() bool {
			return countRuns(t, db, "job_key = ? AND status = ?", "partner/partner", StatusCompleted) == 2
		})
	})
}
