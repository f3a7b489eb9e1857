package main

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/bench/stat"
)

// The targets.
const (
	targetRatio = 0.30                   // a plugin read's throughput per connection over /health's
	targetP99   = 100 * time.Millisecond // at 64 connections on PostgreSQL + Redis
	targetConns = 64
	errorsConns = 256 // no error at this many connections
)

// summaryRow is one run of the mix: a setup, a world, a connection count.
type summaryRow struct {
	setup    setup
	world    string
	tenants  int
	conns    int
	loadavg  string
	results  []classResult
	elapsed  time.Duration
	cpu      cpuUse
	postgres bool
	sessions int64
	// warmed is how long the warm-up before the window ran.
	warmed   time.Duration
	backends [2]int64
	fresh    int64
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (r summaryRow) throughput(c classResult) float64 {
	return float64(len(c.lat)) / r.elapsed.Seconds()
}

// ratio is c's throughput per connection over /health's, or 0 without
// /health in the mix.
func (r summaryRow) ratio(c classResult) float64 {
	i := slices.IndexFunc(r.results, func(h classResult) bool { return h.class.name == "health" })
	if i < 0 || len(r.results[i].lat) == 0 {
		return 0
	}
	h := r.results[i]
	return (r.throughput(c) / float64(c.conns)) / (r.throughput(h) / float64(h.conns))
}

func (r summaryRow) all() (lat []time.Duration, errs int, conns int) {
	for _, c := range r.results {
		lat = append(lat, c.lat...)
		errs += c.errorCount()
		conns += c.conns
	}
	slices.Sort(lat)
	return lat, errs, conns
}

func percentiles(lat []time.Duration) string {
	if len(lat) == 0 {
		return "| | |"
	}
	return fmt.Sprintf("%.1f | %.1f | %.1f", ms(stat.Percentile(lat, 0.50)), ms(stat.Percentile(lat, 0.95)), ms(stat.Percentile(lat, 0.99)))
}

// print writes one run's table, errors, CPU and PostgreSQL figures.
func (r summaryRow) print(fragments []string) {
	fmt.Printf("### %d connections, %s window after a %s warm-up, load average %s at its start\n\n", r.conns, r.elapsed.Round(100*time.Millisecond),
		r.warmed.Round(time.Second), r.loadavg)
	fmt.Println("| class | conns | requests | req/s | req/s per conn | x /health | p50 ms | p95 ms | p99 ms | errors | kB a response |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range r.results {
		ratio := "–"
		if x := r.ratio(c); x > 0 {
			ratio = fmt.Sprintf("%.2fx", x)
		}
		size := "–"
		if len(c.lat) > 0 {
			size = fmt.Sprintf("%.1f", float64(c.bytes)/float64(len(c.lat))/1000)
		}
		fmt.Printf("| %s | %d | %d | %.0f | %.1f | %s | %s | %d | %s |\n", c.class.name, c.conns, len(c.lat), r.throughput(c),
			r.throughput(c)/float64(c.conns), ratio, percentiles(c.lat), c.errorCount(), size)
	}
	lat, errs, conns := r.all()
	total := float64(len(lat)) / r.elapsed.Seconds()
	fmt.Printf("| all | %d | %d | %.0f | %.1f | | %s | %d | |\n\n", conns, len(lat), total, total/float64(conns), percentiles(lat), errs)
	fmt.Printf("The dashboard class: /dashboard and %d fragments (%s). Sizes are of the bodies as sent, gzip-compressed where the host compresses.\n",
		len(fragments), strings.Join(fragments, ", "))
	for _, c := range r.results {
		for _, kind := range slices.Sorted(maps.Keys(c.errors)) {
			fmt.Printf("Errors, %s: %d × %s, e.g. %s\n", c.class.name, c.errors[kind], kind, c.example[kind])
		}
	}
	avail := r.elapsed * time.Duration(runtime.NumCPU())
	perReq := "–"
	if len(lat) > 0 {
		perReq = fmt.Sprintf("%.0f µs", float64(r.cpu.steward().Microseconds())/float64(len(lat)))
	}
	fmt.Printf("CPU in the window (%.1f s of %d cores): Steward %.1f s (%s a request; hosts %.1f s, plugins %.1f s), PostgreSQL and Redis %.1f s, "+
		"this tool (load%s) %.1f s, other processes %.1f s.\n",
		avail.Seconds(), runtime.NumCPU(), r.cpu.steward().Seconds(), perReq, r.cpu.hosts.Seconds(), r.cpu.plugins.Seconds(),
		r.cpu.servers.Seconds(), balancerNote(r.setup), r.cpu.tool.Seconds(), r.cpu.others.Seconds())
	if r.postgres {
		fmt.Printf("PostgreSQL: %d backends forked for the run's database in the window (pg_stat_database.sessions), %d of them gone by its end; "+
			"%d connected when it opened, %d after it.\n", r.sessions, r.gone(), r.backends[0], r.backends[1])
	}
	fmt.Println()
}

// gone is how many backends forked in the window had closed by its end:
// a pool that grows forks, one that churns also closes.
func (r summaryRow) gone() int64 { return max(0, r.sessions-r.fresh) }

func balancerNote(s setup) string {
	if s.replicas > 1 {
		return " and the balancer"
	}
	return ""
}

// printSummary writes one line per run and the targets each missed.
func printSummary(o *options, rows []summaryRow) {
	if len(rows) == 0 {
		return
	}
	var reads []string
	for _, c := range o.mix {
		if c.read {
			reads = append(reads, c.name)
		}
	}
	fmt.Println("## Summary")
	fmt.Println()
	fmt.Printf("| setup | world | conns | load avg | req/s | /health req/s | %s | worst p99 ms | errors | PG backends forked | Steward CPU µs/req |\n",
		strings.Join(mapStrings(reads, func(s string) string { return s + " x" }), " | "))
	fmt.Printf("|---|---|---:|---|---:|---:|%s---:|---:|---:|---:|\n", strings.Repeat("---:|", len(reads)))
	var missed []string
	for _, r := range rows {
		lat, errs, _ := r.all()
		health := "–"
		var ratios []string
		worst, worstName := time.Duration(0), ""
		for _, c := range r.results {
			if c.class.name == "health" {
				health = fmt.Sprintf("%.0f", r.throughput(c))
			}
			if len(c.lat) > 0 {
				if p := stat.Percentile(c.lat, 0.99); p > worst {
					worst, worstName = p, c.class.name
				}
			}
		}
		label := fmt.Sprintf("%s, %s world, %d connections", r.setup.name, r.world, r.conns)
		var under []string
		for _, name := range reads {
			i := slices.IndexFunc(r.results, func(c classResult) bool { return c.class.name == name })
			x := r.ratio(r.results[i])
			ratios = append(ratios, fmt.Sprintf("%.2fx", x))
			if x > 0 && x < targetRatio {
				under = append(under, fmt.Sprintf("%s %.2fx (%.0f %% short)", name, x, 100*(targetRatio-x)/targetRatio))
			}
		}
		if len(under) > 0 {
			missed = append(missed, fmt.Sprintf("%s: under %.2fx of /health: %s", label, targetRatio, strings.Join(under, ", ")))
		}
		if r.postgres && r.conns == targetConns {
			var over []string
			for _, c := range r.results {
				if c.class.read && len(c.lat) > 0 && stat.Percentile(c.lat, 0.99) >= targetP99 {
					over = append(over, fmt.Sprintf("%s %.0f", c.class.name, ms(stat.Percentile(c.lat, 0.99))))
				}
			}
			if len(over) > 0 {
				missed = append(missed, fmt.Sprintf("%s: plugin reads' p99 over %.0f ms (ms): %s", label, ms(targetP99), strings.Join(over, ", ")))
			}
		}
		if errs > 0 && r.conns >= errorsConns {
			missed = append(missed, fmt.Sprintf("%s: %d errors", label, errs))
		}
		if r.postgres && r.sessions > 0 {
			missed = append(missed, fmt.Sprintf("%s: PostgreSQL forked %d backends in the window", label, r.sessions))
		}
		sessions := "–"
		if r.postgres {
			sessions = fmt.Sprintf("%d (%d gone)", r.sessions, r.gone())
		}
		perReq := 0.0
		if len(lat) > 0 {
			perReq = float64(r.cpu.steward().Microseconds()) / float64(len(lat))
		}
		fmt.Printf("| %s | %s (%d) | %d | %s | %.0f | %s | %s | %.0f (%s) | %d | %s | %.0f |\n", r.setup.name, r.world, r.tenants, r.conns, r.loadavg,
			float64(len(lat))/r.elapsed.Seconds(), health, strings.Join(ratios, " | "), ms(worst), worstName, errs, sessions, perReq)
	}
	fmt.Println()
	fmt.Printf("Targets: plugin reads ≥ %.2fx of /health's throughput per connection, and their p99 under %.0f ms at %d connections on PostgreSQL + Redis; "+
		"no error at %d connections; no PostgreSQL backend forked in the window.\n", targetRatio, ms(targetP99), targetConns, errorsConns)
	if len(missed) == 0 {
		fmt.Println("None missed in these runs.")
	}
	for _, m := range missed {
		fmt.Println("- missed:", m)
	}
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}
