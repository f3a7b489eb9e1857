package bench

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// The unloaded latency a hop adds is a difference of two medians of about
// the same size as this machine's drift between windows a few seconds
// apart. Paired runs measure it as the median of many differences, each
// between two windows taken back to back on the same host (the in-host
// path and the plugin's), in alternating order so that drift in either
// direction cancels.
var pairedRounds = flag.Int("rounds", 7, "rounds of BenchmarkHopPaired, each an in-host and a proxied window")

const (
	pairedWindow = time.Second
	pairedWarmup = 200 * time.Millisecond
	pairedPlane  = "socket"
	pairedConns  = 1
)

// pairedWorkloads are the workloads whose unloaded latency has a target.
var pairedWorkloads = []string{"ping", "items"}

type pairedResult struct {
	inHost, proxied time.Duration // medians of the windows' p50s
	added           []time.Duration
}

func (p pairedResult) median() time.Duration { return medianOf(p.added) }

var pairedResults = struct {
	sync.Mutex
	m map[string]pairedResult
}{m: map[string]pairedResult{}}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkHopPaired measures each paired workload's unloaded p50 added
// by the plugin hop: -rounds rounds of one window of the handler in
// the host and one through the plugin, at one connection.
func BenchmarkHopPaired(b *testing.B) {
	for _, name := range pairedWorkloads {
		i := slices.IndexFunc(workloads, func(w workload) bool { return w.name == name })
		w := workloads[i]
		b.Run(w.name+"/"+pairedPlane, func(b *testing.B) {
			bh := hostFor(b, pairedPlane)
			window := func(path string) time.Duration {
				spec := loadSpec{URL: bh.url + path, Conns: pairedConns, Warmup: pairedWarmup, Measure: pairedWindow}
				if w.auth {
					spec.Token = bh.token
				}
				res, _, err := runLoad(spec)
				if err != nil {
					b.Fatal(err)
				}
				if res.Errors > 0 || res.Requests == 0 {
					b.Fatalf("%d requests failed, %d succeeded; last: %s", res.Errors, res.Requests, res.LastErr)
				}
				return res.P50
			}
			var r pairedResult
			var in, out []time.Duration
			for round := range *pairedRounds {
				var a, p time.Duration
				if round%2 == 0 {
					a, p = window(inHostPrefix+w.path()), window(w.path())
				} else {
					p, a = window(w.path()), window(inHostPrefix+w.path())
				}
				in, out = append(in, a), append(out, p)
				r.added = append(r.added, p-a)
			}
			r.inHost, r.proxied = medianOf(in), medianOf(out)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(micros(r.median()), "p50-added-µs")
			pairedResults.Lock()
			pairedResults.m[w.name] = r
			pairedResults.Unlock()
		})
	}
}

// printPaired reports the paired runs and their targets.
func printPaired(out io.Writer) {
	pairedResults.Lock()
	defer pairedResults.Unlock()
	if len(pairedResults.m) == 0 {
		return
	}
	fmt.Fprintf(out, "\nUnloaded p50 added by the %s hop, paired (%d rounds of %s windows, alternating)\n", pairedPlane, *pairedRounds, pairedWindow)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tin-host p50 µs\tproxied p50 µs\tadded, median µs\tadded, each round µs\t")
	var verdicts []string
	for _, name := range pairedWorkloads {
		r, ok := pairedResults.m[name]
		if !ok {
			continue
		}
		rounds := ""
		for i, d := range r.added {
			if i > 0 {
				rounds += " "
			}
			rounds += fmt.Sprintf("%+.0f", micros(d))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%+.0f\t%s\t\n", name, micros(r.inHost), micros(r.proxied), micros(r.median()), rounds)
		verdict := "met"
		if r.median() > targetAddedP50 {
			verdict = "MISSED"
		}
		verdicts = append(verdicts, fmt.Sprintf("  %-6s %-44s %-8s %s", pairedPlane, fmt.Sprintf("%s, 1 conn: p50 added <= %d µs (paired)", name, targetAddedP50.Microseconds()),
			fmt.Sprintf("%+.0f µs", micros(r.median())), verdict))
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nTargets (paired)")
	for _, v := range verdicts {
		fmt.Fprintln(out, v)
	}
}
