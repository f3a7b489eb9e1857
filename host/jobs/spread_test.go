package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
)

// tenantRunner stands in for the plugin supervisor of one replica: it runs
// each tenant through work and records which replica ran which tenant.
type tenantRunner struct {
	replica string
	log     *tenantLog
	work    func(ctx context.Context, tenant string) (int64, error)
}

type tenantLog struct {
	mu   sync.Mutex
	runs map[string][]string // tenant → replicas that ran it to the end
}

func (l *tenantLog) add(tenant, replica string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[tenant] = append(l.runs[tenant], replica)
}

func (l *tenantLog) snapshot() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string, len(l.runs))
	for k, v := range l.runs {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func (r *tenantRunner) RunJob(ctx context.Context, _, _, _ string, tenantIDs []string, _ Events) (int64, error) {
	if len(tenantIDs) != 1 {
		return 0, fmt.Errorf("a spread run's piece names %d tenants, want 1", len(tenantIDs))
	}
	n, err := r.work(ctx, tenantIDs[0])
	if ctx.Err() == nil {
		r.log.add(tenantIDs[0], r.replica)
	}
	return n, err
}

func tenantIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%02d", i)
	}
	return ids
}

// newSpreadScheduler starts a replica working spread runs of the job
// "p/sync" over tenants.
func newSpreadScheduler(t *testing.T, db *bun.DB, replica string, runner Runner, tenants []string, reg prometheus.Registerer) *Scheduler {
	t.Helper()
	s := New(db, runner, Options{Replica: replica, MaxConcurrent: 3, Registerer: reg, PollEvery: 100 * time.Millisecond})
	t.Cleanup(s.Stop)
	if err := s.SetSpecs([]Spec{{Plugin: "p", Name: "sync", JobType: "things", DataDomain: "things", PerTenant: true}}); err != nil {
		t.Fatal(err)
	}
	err := s.Spread(context.Background(), SpreadOptions{PollEvery: 50 * time.Millisecond, PieceTimeout: 20 * time.Second,
		Tenants: func(context.Context) ([]string, error) { return tenants, nil }})
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	return s
}

func runTenants(t *testing.T, db *bun.DB, runID string) []RunTenant {
	t.Helper()
	var out []RunTenant
	if err := db.NewSelect().Model(&out).Where("run_id = ?", runID).Order("tenant_id").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSpreadRunsEachTenantOnceAcrossReplicas: a run triggered on one
// replica is worked by both, each tenant once, and finishes with the sum of
// its tenants' records.
func TestSpreadRunsEachTenantOnceAcrossReplicas(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		tenants := tenantIDs(24)
		log := &tenantLog{runs: map[string][]string{}}
		work := func(ctx context.Context, tenant string) (int64, error) {
			time.Sleep(40 * time.Millisecond)
			return 2, nil
		}
		regA := prometheus.NewRegistry()
		a := newSpreadScheduler(t, db, "a", &tenantRunner{replica: "a", log: log, work: work}, tenants, regA)
		regB := prometheus.NewRegistry()
		newSpreadScheduler(t, db, "b", &tenantRunner{replica: "b", log: log, work: work}, tenants, regB)

		runs, err := a.Trigger(context.Background(), "things", "tester")
		if err != nil || len(runs) != 1 {
			t.Fatalf("Trigger: %v %v", runs, err)
		}
		run := waitFinished(t, a, runs[0].ID)
		if run.Status != StatusCompleted || run.RecordsProcessed != 48 || run.Progress.Done != 24 || run.Progress.Total != 24 ||
			run.Progress.Message != "24 of 24 tenants synced" {
			t.Fatalf("run %+v; want completed with 48 records, 24 of 24 tenants", run)
		}
		got := log.snapshot()
		byReplica := map[string]int{}
		for _, id := range tenants {
			if len(got[id]) != 1 {
				t.Errorf("tenant %s ran on %v; want exactly once", id, got[id])
				continue
			}
			byReplica[got[id][0]]++
		}
		if byReplica["a"] == 0 || byReplica["b"] == 0 {
			t.Errorf("tenants by replica %v; want both replicas working", byReplica)
		}
		for _, p := range runTenants(t, db, run.ID) {
			if p.Status != StatusCompleted || p.Replica == "" || p.Attempts != 1 || p.RecordsProcessed != 2 {
				t.Errorf("tenant row %+v; want completed once with 2 records and its replica", p)
			}
		}
		if a, b := counterValue(t, regA, "steward_job_tenants_total", "things", "completed"), counterValue(t, regB, "steward_job_tenants_total", "things", "completed"); a+b != 24 || a == 0 || b == 0 {
			t.Errorf("tenants counted %v on a and %v on b; want 24 between both, each some", a, b)
		}
	})
}

// TestSpreadRunFailsNamingItsFailedTenants: one failing tenant fails the
// run, with its error and an alert, while the others are synced.
func TestSpreadRunFailsNamingItsFailedTenants(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		log := &tenantLog{runs: map[string][]string{}}
		s := newSpreadScheduler(t, db, "a", &tenantRunner{replica: "a", log: log, work: func(_ context.Context, tenant string) (int64, error) {
			if tenant == "t03" {
				return 0, errors.New("tenant t03: subscription not visible to Steward")
			}
			return 1, nil
		}}, tenantIDs(6), nil)
		runs, err := s.Trigger(context.Background(), "things", "tester")
		if err != nil {
			t.Fatal(err)
		}
		run := waitFinished(t, s, runs[0].ID)
		if run.Status != StatusFailed || run.ErrorMessage == nil || !strings.Contains(*run.ErrorMessage, "1 of 6 tenants failed: tenant t03: subscription not visible") ||
			run.RecordsProcessed != 5 {
			t.Fatalf("run %+v (error %v); want failed naming t03, 5 records", run, deref(run.ErrorMessage))
		}
		alerts, err := s.Alerts(context.Background(), 10)
		if err != nil || len(alerts.Alerts) != 1 || !strings.Contains(alerts.Alerts[0].Message, "t03") {
			t.Fatalf("alerts %+v %v; want one naming t03", alerts, err)
		}
	})
}

// TestSpreadHandsTenantsBackOnStop: a replica that stops while syncing a
// tenant hands it back to the queue, and the other replica syncs it; the
// run completes with every tenant.
func TestSpreadHandsTenantsBackOnStop(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		tenants := tenantIDs(4)
		log := &tenantLog{runs: map[string][]string{}}
		started := make(chan struct{}, len(tenants))
		a := newSpreadScheduler(t, db, "a", &tenantRunner{replica: "a", log: log, work: func(ctx context.Context, _ string) (int64, error) {
			started <- struct{}{}
			<-ctx.Done()
			return 0, ctx.Err()
		}}, tenants, nil)
		runs, err := a.Trigger(context.Background(), "things", "tester")
		if err != nil {
			t.Fatal(err)
		}
		<-started
		a.Stop()
		b := newSpreadScheduler(t, db, "b", &tenantRunner{replica: "b", log: log, work: func(context.Context, string) (int64, error) { return 1, nil }}, tenants, nil)
		run := waitFinished(t, b, runs[0].ID)
		if run.Status != StatusCompleted || run.RecordsProcessed != 4 {
			t.Fatalf("run %+v (error %v); want completed with the 4 tenants", run, deref(run.ErrorMessage))
		}
		for id, replicas := range log.snapshot() {
			if len(replicas) != 1 || replicas[0] != "b" {
				t.Errorf("tenant %s finished on %v; want once, on b", id, replicas)
			}
		}
	})
}

// TestSpreadWithoutTenants: a run with no active tenant completes at once.
func TestSpreadWithoutTenants(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB) {
		s := newSpreadScheduler(t, db, "a", &tenantRunner{replica: "a", log: &tenantLog{runs: map[string][]string{}}, work: func(context.Context, string) (int64, error) {
			return 0, errors.New("no tenant should run")
		}}, nil, nil)
		runs, err := s.Trigger(context.Background(), "things", "tester")
		if err != nil {
			t.Fatal(err)
		}
		if run := waitFinished(t, s, runs[0].ID); run.Status != StatusCompleted || run.Progress.Message != "no active tenant" {
			t.Fatalf("run %+v; want completed with no active tenant", run)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
