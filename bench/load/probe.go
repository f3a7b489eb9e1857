package main

import (
	"context"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/bench/stat"
)

// snapshot is the machine as the window opens or closes.
type snapshot struct {
	at      time.Time
	loadavg string // /proc/loadavg's 1, 5 and 15 minute averages
	machine time.Duration
	procs   map[int]stat.Proc
	// PostgreSQL: sessions ever established to the run's database, and
	// the backends connected to it now (fresh: those started since the
	// window opened).
	sessions, backends, fresh int64
}

// cpuUse is the CPU time spent inside the window, by whom.
type cpuUse struct {
	hosts, plugins, servers, tool, others, machine time.Duration
}

func (u cpuUse) steward() time.Duration { return u.hosts + u.plugins }

// prober takes snapshots: of the host processes' trees, and of the
// run's PostgreSQL database through a connection of its own to another
// database of the server (so that it is not one of those counted).
type prober struct {
	hosts  []int
	pg     *bun.DB
	dbName string
}

// take reads the processes' and the machine's CPU time and the load
// average.
func (p *prober) take() snapshot {
	s := snapshot{at: time.Now(), machine: stat.MachineCPU(), procs: map[int]stat.Proc{}}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		s.loadavg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	for _, pr := range stat.Procs() {
		s.procs[pr.PID] = pr
	}
	return s
}

// takePostgres adds the PostgreSQL figures to s; fresh counts the backends
// started since the time given.
func (p *prober) takePostgres(ctx context.Context, s *snapshot, since time.Time) error {
	if p.pg == nil {
		return nil
	}
	if err := p.pg.NewRaw("SELECT sessions FROM pg_stat_database WHERE datname = ?", p.dbName).Scan(ctx, &s.sessions); err != nil {
		return err
	}
	return p.pg.NewRaw("SELECT count(*), count(*) FILTER (WHERE backend_start >= ?) FROM pg_stat_activity WHERE datname = ?",
		since, p.dbName).Scan(ctx, &s.backends, &s.fresh)
}

// Pools are steady when PostgreSQL has forked no backend for the run's
// database for settledFor; the warm-up waits at most maxWarmup for it.
const (
	settledFor = 10 * time.Second
	maxWarmup  = 90 * time.Second
)

// warm runs the warm-up and answers how long it took: at least least,
// and on PostgreSQL until the pools of the host and the plugins have
// stopped growing (no backend forked for settledFor) or maxWarmup has
// passed, so that the window measures them full. A pool grows on demand;
// 64 connections fill the host's and every plugin's only after a while.
func (p *prober) warm(ctx context.Context, least time.Duration) time.Duration {
	start := time.Now()
	sleep(ctx, least)
	if p.pg == nil {
		return time.Since(start)
	}
	var last int64 = -1
	still := time.Now()
	for ctx.Err() == nil && time.Since(start) < maxWarmup {
		var s snapshot
		if err := p.takePostgres(ctx, &s, start); err != nil {
			break
		}
		if s.sessions != last {
			last, still = s.sessions, time.Now()
		} else if time.Since(still) >= settledFor {
			break
		}
		sleep(ctx, time.Second)
	}
	return time.Since(start)
}

// cpu attributes the CPU time between two snapshots: the hosts and their
// plugins, the database servers (PostgreSQL and Redis), this tool (the
// load and, with two replicas, the balancer), and the rest of the machine.
// A process that started inside the window counts whole; one that ended
// inside it is lost to "others".
func (p *prober) cpu(a, b snapshot) cpuUse {
	ours := map[int]bool{}
	for _, h := range p.hosts {
		ours[h] = true
	}
	hosts := maps.Clone(ours)
	// Descendants, in either snapshot: a plugin restarted in the window
	// is still the host's.
	for changed := true; changed; {
		changed = false
		for _, snap := range []snapshot{a, b} {
			for pid, pr := range snap.procs {
				if !ours[pid] && ours[pr.PPID] {
					ours[pid] = true
					changed = true
				}
			}
		}
	}
	u := cpuUse{machine: b.machine - a.machine}
	self := os.Getpid()
	for pid, end := range b.procs {
		d := end.CPU - a.procs[pid].CPU
		switch {
		case hosts[pid]:
			u.hosts += d
		case ours[pid]:
			u.plugins += d
		case pid == self:
			u.tool += d
		case end.Comm == "postgres" || end.Comm == "redis-server":
			u.servers += d
		}
	}
	u.others = max(0, u.machine-u.steward()-u.tool-u.servers)
	return u
}
