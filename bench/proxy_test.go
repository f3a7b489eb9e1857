package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// workload is a plugin route measured proxied and in the host.
type workload struct {
	name  string
	route string
	query string
	// items is how many rows the answer must hold; 0 for no check.
	items int
	// auth sends the admin's token. A route that needs none is called
	// without: a token costs verification and a scope lookup per request,
	// which would hide the hop of a trivial handler.
	auth bool
}

func (w workload) path() string { return w.route + w.query }

var workloads = []workload{
	// A trivial handler: what is left is the cost of the hop itself.
	{name: "ping", route: "/api/v1/testplugin/ping"},
	// The same with the admin's token: the difference from ping is what
	// authenticating a request costs, which every authenticated route pays.
	{name: "ping-token", route: "/api/v1/testplugin/ping", auth: true},
	// A realistic read: a store query returning 100 rows as JSON.
	{name: "items", route: "/api/v1/testplugin/items", query: "?limit=100", items: 100, auth: true},
}

var (
	planes = []string{"socket", "grpc"}
	// One connection shows the unloaded latency; 64 saturate both cores.
	connections = []int{1, 64}
)

const inHost = "in-host"

// BenchmarkHop measures each workload at each connection count three ways
// back to back: the handler served in the host (InHost/…) and from the
// plugin process over each data plane (Proxy/…/socket/…, Proxy/…/grpc/…).
// Running the three side by side, rather than every in-host run first, keeps
// drift of the machine out of the ratios. The names hold slashes so that
// they read, and filter with -bench, like nested sub-benchmarks.
func BenchmarkHop(b *testing.B) {
	for _, w := range workloads {
		for _, c := range connections {
			conns := "c" + strconv.Itoa(c)
			b.Run("InHost/"+w.name+"/"+conns, func(b *testing.B) {
				bh := hostFor(b, planes[0])
				measure(b, key{w.name, inHost, c}, bh, w, inHostPrefix+w.path(), c, os.Getpid())
			})
			for _, plane := range planes {
				b.Run("Proxy/"+w.name+"/"+plane+"/"+conns, func(b *testing.B) {
					bh := hostFor(b, plane)
					measure(b, key{w.name, plane, c}, bh, w, w.path(), c, os.Getpid(), bh.pluginPID)
				})
			}
		}
	}
}

// key names one measurement: workload, variant (in-host or a data plane)
// and connections.
type key struct {
	workload string
	variant  string
	conns    int
}

type measurement struct {
	rps      float64
	p50, p99 time.Duration
	// hostCPU and pluginCPU are CPU time per request of the host process
	// (this one) and of the plugin process.
	hostCPU, pluginCPU time.Duration
	// disturbed: other processes used a noticeable share of the machine.
	disturbed bool
}

// Other processes using more than 1/disturbedShare of the machine during a
// window disturb it; a load run is tried this many times for a clean one.
const (
	disturbedShare = 20
	attempts       = 3
)

var results = struct {
	sync.Mutex
	m map[key]measurement
}{m: map[key]measurement{}}

// measure runs one load window against path and reports it. pids[0] is the
// host process, pids[1], when given, the plugin's.
func measure(b *testing.B, k key, bh *benchHost, w workload, path string, conns int, pids ...int) {
	spec := loadSpec{URL: bh.url + path, Conns: conns, Warmup: warmup, Measure: *window}
	if w.auth {
		spec.Token = bh.token
	}
	var m measurement
	// The load would share the machine with anything else running on it: a
	// window that others disturbed is measured again, whichever way it
	// moved the figures, and flagged if it never ran undisturbed.
	for attempt := 1; ; attempt++ {
		res, cpu, err := runLoad(spec, pids...)
		if err != nil {
			b.Fatal(err)
		}
		if res.Errors > 0 {
			b.Fatalf("%d requests failed (%d succeeded); last: %s", res.Errors, res.Requests, res.LastErr)
		}
		if res.Requests == 0 {
			b.Fatal("no request completed inside the window")
		}
		perReq := func(pid int) time.Duration { return cpu.procs[pid] / time.Duration(res.Requests) }
		m = measurement{rps: res.throughput(), p50: res.P50, p99: res.P99, hostCPU: perReq(pids[0])}
		if len(pids) > 1 {
			m.pluginCPU = perReq(pids[1])
		}
		other := cpu.others()
		if other <= res.Elapsed*time.Duration(runtime.NumCPU())/disturbedShare {
			break
		}
		b.Logf("other processes used %.0f%% of a CPU during window %d", 100*other.Seconds()/res.Elapsed.Seconds(), attempt)
		if attempt == attempts {
			m.disturbed = true
			b.Logf("no undisturbed window in %d attempts: these figures are disturbed", attempts)
			break
		}
	}
	// Wall time per run says nothing here; the metrics below do.
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(m.rps, "req/s")
	b.ReportMetric(micros(m.p50), "p50-µs")
	b.ReportMetric(micros(m.p99), "p99-µs")
	b.ReportMetric(micros(m.hostCPU), "host-cpu-µs/req")
	if len(pids) > 1 {
		b.ReportMetric(micros(m.pluginCPU), "plugin-cpu-µs/req")
	}
	results.Lock()
	results.m[k] = m
	results.Unlock()
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Targets the hop must meet.
const (
	targetReadThroughput = 0.80 // items at 64 connections, proxied/in-host
	targetPingThroughput = 0.35 // ping at 64 connections, proxied/in-host
	targetAddedP50       = 150 * time.Microsecond
)

// printSummary puts every measurement beside its in-host counterpart with
// the ratios the targets are stated in.
func printSummary(out io.Writer) {
	results.Lock()
	defer results.Unlock()
	if len(results.m) == 0 {
		return
	}
	fmt.Fprintf(out, "\nPlugin hop against the same handler in the host (%s windows after %s warm-up)\n", *window, warmup)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	disturbed := false
	fmt.Fprintln(tw, "workload\tconns\tvariant\treq/s\tp50 µs\tp99 µs\thost CPU µs/req\tplugin CPU µs/req\tx in-host req/s\tp50 added µs\t")
	for _, w := range workloads {
		for _, c := range connections {
			base, haveBase := results.m[key{w.name, inHost, c}]
			for _, v := range append([]string{inHost}, planes...) {
				m, ok := results.m[key{w.name, v, c}]
				if !ok {
					continue
				}
				ratio, added, plugin, variant := "", "", "", v
				if v != inHost {
					plugin = fmt.Sprintf("%.1f", micros(m.pluginCPU))
					if haveBase {
						ratio = fmt.Sprintf("%.2fx", m.rps/base.rps)
					}
					// Under load the difference of medians is queueing, not the hop.
					if haveBase && c == 1 {
						added = fmt.Sprintf("%+.0f", micros(m.p50-base.p50))
					}
				}
				if m.disturbed {
					variant += "*"
					disturbed = true
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%.1f\t%s\t%s\t%s\t\n",
					w.name, c, variant, m.rps, micros(m.p50), micros(m.p99), micros(m.hostCPU), plugin, ratio, added)
			}
		}
	}
	_ = tw.Flush()
	if disturbed {
		fmt.Fprintln(out, "* other processes used a noticeable share of the machine in every attempt at this window")
	}

	var verdicts []string
	for _, plane := range planes {
		check := func(what string, k key, ok func(m, base measurement) (string, bool)) {
			m, have := results.m[k]
			base, haveBase := results.m[key{k.workload, inHost, k.conns}]
			if !have || !haveBase {
				return
			}
			got, met := ok(m, base)
			verdict := "met"
			if !met {
				verdict = "MISSED"
			}
			verdicts = append(verdicts, fmt.Sprintf("  %-6s %-44s %-8s %s", plane, what, got, verdict))
		}
		ratio := func(target float64) func(m, base measurement) (string, bool) {
			return func(m, base measurement) (string, bool) {
				r := m.rps / base.rps
				return fmt.Sprintf("%.2fx", r), r >= target
			}
		}
		added := func(m, base measurement) (string, bool) {
			d := m.p50 - base.p50
			return fmt.Sprintf("%+.0f µs", micros(d)), d <= targetAddedP50
		}
		check(fmt.Sprintf("items, 64 conns: req/s >= %.2fx in-host", targetReadThroughput), key{"items", plane, 64}, ratio(targetReadThroughput))
		check(fmt.Sprintf("items, 1 conn: p50 added <= %d µs", targetAddedP50.Microseconds()), key{"items", plane, 1}, added)
		check(fmt.Sprintf("ping, 1 conn: p50 added <= %d µs", targetAddedP50.Microseconds()), key{"ping", plane, 1}, added)
		check(fmt.Sprintf("ping, 64 conns: req/s >= %.2fx in-host", targetPingThroughput), key{"ping", plane, 64}, ratio(targetPingThroughput))
	}
	if len(verdicts) > 0 {
		fmt.Fprintln(out, "\nTargets")
		for _, v := range verdicts {
			fmt.Fprintln(out, v)
		}
	}
}
