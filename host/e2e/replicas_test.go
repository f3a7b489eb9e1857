package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
)

// spreadTenants is the number of tenants of the spread world.
const spreadTenants = 100

// spreadWorld has n tenants, each its own directory with one
// subscription.
func spreadWorld(t *testing.T, n int) string {
	w := world.World{}
	for i := range n {
		w.Tenants = append(w.Tenants, world.Tenant{
			Name:              fmt.Sprintf("Brand %03d", i),
			DirectoryTenantID: fmt.Sprintf("%08d-0000-4000-8000-%012d", i+1, i+1),
			Subscriptions:     []world.Subscription{{ID: fmt.Sprintf("%08d-1111-4000-8000-%012d", i+1, i+1), Name: fmt.Sprintf("Brand %03d prod", i)}},
			Delegated:         i > 0,
		})
	}
	return writeWorld(t, w)
}

// holdPlugins declares the test plugin holding each tenant of its
// hold_tenants job for hold, with its sync job scheduled every 10s.
func holdPlugins(hold time.Duration) string {
	return fmt.Sprintf(`plugin "testplugin" {
  binary = %q
  restart {
    backoff_initial = "100ms"
    backoff_max     = "500ms"
  }
  config {
    hold_job_seconds = %g
  }
  job "sync" {
    schedule = "@every 10s"
  }
}
`, filepath.Join(binDir, "plugins", "testplugin"), hold.Seconds())
}

type spreadRun struct {
	id      string
	took    time.Duration
	tenants map[string]int // replica → tenants it finished
}

// TestSyncSpreadsOverReplicas: two replicas on one PostgreSQL and one
// Redis. A 100-tenant sync triggered on one is worked by both, in about
// half the time one replica alone takes; a replica killed mid-run loses no
// tenant (the queue rescues its tenants for the other); a scheduled slot
// and a manual sync each run once.
func TestSyncSpreadsOverReplicas(t *testing.T) {
	// Its tenants hold without working, and it waits for scheduled slots.
	t.Parallel()
	dbURL := storetest.PostgresURL(t)
	redisURL := storetest.RedisURL(t)
	env := tokenEnv()
	env["STEWARD_SIM_WORLD"] = spreadWorld(t, spreadTenants)
	env["STEWARD_RATE_LIMIT_PER_MINUTE"] = "100000"
	// A tenant holds for 200ms: a replica that dies holding one has it
	// rescued after the timeout plus a fifth of it.
	env["STEWARD_SYNC_TENANT_TIMEOUT"] = "3s"
	o := hostOpts{databaseURL: dbURL, redisURL: redisURL, redisPrefix: storetest.RedisPrefix(t, redisURL), pluginsHCL: holdPlugins(200 * time.Millisecond)}
	o.env = maps.Clone(env)
	o.env["STEWARD_SIM_BOOTSTRAP"] = "true"
	a := startHost(t, o)
	admin := a.login()
	a.waitFor("the world's tenants registered", 15*time.Second, func() bool {
		var list []struct{ ID string }
		a.get("/api/v1/tenants", admin).json(t, &list)
		return len(list) == spreadTenants
	})

	alone := syncOnce(t, a, admin, "testplugin-hold-tenants")
	if len(alone.tenants) != 1 {
		t.Fatalf("the run on one replica was worked by %v", alone.tenants)
	}

	o.env = maps.Clone(env)
	b := startHost(t, o)
	both := syncOnce(t, b, admin, "testplugin-hold-tenants")
	if len(both.tenants) != 2 {
		t.Fatalf("the run on two replicas was worked by %v; want both", both.tenants)
	}
	ratio := float64(both.took) / float64(alone.took)
	t.Logf("100 tenants: %s on one replica, %s on two (%.2fx); tenants by replica %v", alone.took.Round(time.Millisecond), both.took.Round(time.Millisecond), ratio, both.tenants)
	if ratio > 0.8 {
		t.Errorf("two replicas took %.2fx the time of one; want about half", ratio)
	}
	for _, h := range []*host{a, b} {
		if !regexp.MustCompile(`steward_job_tenants_total\{job_type="testplugin-hold-tenants",status="completed"\} [1-9]`).MatchString(h.get("/metrics", "").String()) {
			t.Errorf("replica %s's metrics count no tenant it synced", h.url)
		}
	}

	// A replica killed mid-run. (The steps run in the test itself, not as
	// subtests: the hosts' helpers fail the test that started them.)
	{
		id := (&fixture{h: a, admin: admin}).trigger(t, "testplugin-hold-tenants")
		db := a.db()
		a.waitFor("b to hold tenants of the run", 20*time.Second, func() bool {
			n, err := db.NewSelect().Table("job_run_tenants").Where("run_id = ? AND status = 'running' AND replica <> ?", id, replicaOf(t, a, id)).Count(context.Background())
			return err == nil && n > 0
		})
		if err := b.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-b.exited
		r := (&fixture{h: a, admin: admin}).waitRunWithin(t, id, 90*time.Second)
		if r.Status != "completed" || r.RecordsProcessed != spreadTenants {
			t.Fatalf("the run after a replica died: %+v (%s); want completed with every tenant", r, deref(r.ErrorMessage))
		}
		var retried int
		if err := db.NewSelect().Table("job_run_tenants").ColumnExpr("count(*)").Where("run_id = ? AND attempts > 1", id).Scan(context.Background(), &retried); err != nil {
			t.Fatal(err)
		}
		if retried == 0 {
			t.Fatal("no tenant was run again after its replica was killed")
		}
		t.Logf("%d tenants of the killed replica were rescued and run again", retried)
	}

	// A scheduled slot and a manual sync run once.
	{
		db := a.db()
		ctx := context.Background()
		a.waitFor("two scheduled slots of the sync job", 40*time.Second, func() bool {
			n, _ := db.NewSelect().Table("job_runs").Where("job_key = 'testplugin/sync' AND \"trigger\" = 'schedule' AND status = 'completed'").Count(ctx)
			return n >= 2
		})
		var dup []struct {
			ScheduledFor time.Time `bun:"scheduled_for"`
			N            int       `bun:"n"`
		}
		err := db.NewSelect().Table("job_runs").ColumnExpr("scheduled_for, count(*) AS n").
			Where("job_key = 'testplugin/sync' AND \"trigger\" = 'schedule'").Group("scheduled_for").Having("count(*) > 1").Scan(ctx, &dup)
		if err != nil || len(dup) > 0 {
			t.Fatalf("slots run more than once: %+v %v", dup, err)
		}
		id := (&fixture{h: a, admin: admin}).trigger(t, "testplugin")
		(&fixture{h: a, admin: admin}).waitRunWithin(t, id, 15*time.Second)
		n, err := db.NewSelect().Table("job_runs").Where("job_key = 'testplugin/sync' AND \"trigger\" = 'manual' AND queued_at >= (SELECT queued_at FROM job_runs WHERE id = ?)", id).Count(ctx)
		if err != nil || n != 1 {
			t.Fatalf("%d manual runs after one trigger (%v); want 1", n, err)
		}
	}
}

// syncOnce triggers jobType on h and waits for its run, which must
// complete with one record per tenant, each tenant finished once.
func syncOnce(t *testing.T, h *host, admin, jobType string) spreadRun {
	t.Helper()
	start := time.Now()
	id := (&fixture{h: h, admin: admin}).trigger(t, jobType)
	r := (&fixture{h: h, admin: admin}).waitRunWithin(t, id, 60*time.Second)
	out := spreadRun{id: id, took: time.Since(start), tenants: map[string]int{}}
	if r.Status != "completed" || r.RecordsProcessed != spreadTenants {
		t.Fatalf("run %+v (%s); want completed with %d records", r, deref(r.ErrorMessage), spreadTenants)
	}
	var rows []struct {
		Replica  string `bun:"replica"`
		Status   string `bun:"status"`
		Attempts int    `bun:"attempts"`
	}
	if err := h.db().NewSelect().Table("job_run_tenants").Column("replica", "status", "attempts").Where("run_id = ?", id).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != spreadTenants {
		t.Fatalf("the run has %d tenants; want %d", len(rows), spreadTenants)
	}
	for _, row := range rows {
		if row.Status != "completed" || row.Attempts != 1 {
			t.Errorf("tenant %+v; want completed at the first attempt", row)
		}
		out.tenants[row.Replica]++
	}
	return out
}

// replicaOf names the replica that queued the run.
func replicaOf(t *testing.T, h *host, runID string) string {
	t.Helper()
	var replica string
	if err := h.db().NewSelect().Table("job_runs").Column("replica").Where("id = ?", runID).Scan(context.Background(), &replica); err != nil {
		t.Fatal(err)
	}
	return replica
}
