package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/stewardhq/steward/bench/stat"
)

// loadgenEnv carries a loadSpec to the load generator process.
const loadgenEnv = "STEWARD_BENCH_LOADGEN"

// warmup precedes every measured window: connections are open, pools and
// caches are filled and the runtime has grown its heaps before counting.
const warmup = time.Second

type loadSpec struct {
	URL     string        `json:"url"`
	Token   string        `json:"token"`
	Conns   int           `json:"conns"`
	Warmup  time.Duration `json:"warmup"`
	Measure time.Duration `json:"measure"`
}

// loadResult covers the requests that completed inside the window.
type loadResult struct {
	Requests int64         `json:"requests"`
	Errors   int64         `json:"errors"`
	LastErr  string        `json:"last_error,omitempty"`
	Elapsed  time.Duration `json:"elapsed"`
	P50      time.Duration `json:"p50"`
	P99      time.Duration `json:"p99"`
}

func (r loadResult) throughput() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// Lines the generator prints when the window opens and closes, so that the
// parent samples process CPU at the same instants.
const (
	lineStart = "window-start"
	lineStop  = "window-stop"
)

func loadgenMain(raw string) int {
	var s loadSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen spec:", err)
		return 2
	}
	res, err := generate(s, func(line string) { fmt.Println(line) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	return 0
}

// generate keeps s.Conns requests in flight over as many keep-alive
// connections, each goroutine sending its next request as soon as the last
// one answered (a closed loop), and records the latency of every request that
// completes inside the window.
func generate(s loadSpec, announce func(string)) (loadResult, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return loadResult{}, err
	}
	client := &fasthttp.HostClient{
		Addr:                u.Host,
		MaxConns:            s.Conns,
		MaxIdleConnDuration: time.Minute,
		ReadTimeout:         10 * time.Second,
		WriteTimeout:        10 * time.Second,
	}
	const (
		warming = iota
		measuring
		stopped
	)
	var (
		phase   atomic.Int32
		errs    atomic.Int64
		lastErr atomic.Value
		wg      sync.WaitGroup
	)
	lat := make([][]time.Duration, s.Conns)
	for i := range s.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(s.URL)
			if s.Token != "" {
				req.Header.Set("Authorization", "Bearer "+s.Token)
			}
			mine := make([]time.Duration, 0, 1<<14)
			for phase.Load() != stopped {
				t0 := time.Now()
				err := client.Do(req, resp)
				d := time.Since(t0)
				if phase.Load() != measuring {
					continue
				}
				switch {
				case err != nil:
					errs.Add(1)
					lastErr.Store(err.Error())
				case resp.StatusCode() != fasthttp.StatusOK:
					errs.Add(1)
					lastErr.Store(fmt.Sprintf("status %d: %.200s", resp.StatusCode(), resp.Body()))
				default:
					mine = append(mine, d)
				}
			}
			lat[i] = mine
		}()
	}
	time.Sleep(s.Warmup)
	phase.Store(measuring)
	t0 := time.Now()
	announce(lineStart)
	time.Sleep(s.Measure)
	phase.Store(stopped)
	elapsed := time.Since(t0)
	announce(lineStop)
	wg.Wait()

	all := slices.Concat(lat...)
	slices.Sort(all)
	res := loadResult{Requests: int64(len(all)), Errors: errs.Load(), Elapsed: elapsed}
	if v, ok := lastErr.Load().(string); ok {
		res.LastErr = v
	}
	if len(all) > 0 {
		res.P50, res.P99 = stat.Percentile(all, 0.50), stat.Percentile(all, 0.99)
	}
	return res, nil
}

// cpuSample is CPU time used: by each watched process, and by user and
// kernel code of any process on the whole machine.
type cpuSample struct {
	procs   map[int]time.Duration
	machine time.Duration
}

// others is the CPU time used by processes other than the watched ones;
// anything much above zero means the figures were disturbed.
func (c cpuSample) others() time.Duration {
	d := c.machine
	for _, t := range c.procs {
		d -= t
	}
	return max(d, 0)
}

// runLoad starts the load generator and samples CPU time when the window
// opens and closes; it returns the load result and the CPU time used inside
// the window by pids, the generator itself and the machine.
func runLoad(s loadSpec, pids ...int) (loadResult, cpuSample, error) {
	var used cpuSample
	raw, err := json.Marshal(s)
	if err != nil {
		return loadResult{}, used, err
	}
	exe, err := os.Executable()
	if err != nil {
		return loadResult{}, used, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), loadgenEnv+"="+string(raw))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return loadResult{}, used, err
	}
	if err := cmd.Start(); err != nil {
		return loadResult{}, used, err
	}
	watched := append(slices.Clone(pids), cmd.Process.Pid)
	var (
		start  cpuSample
		res    loadResult
		resErr = errors.New("load generator printed no result")
	)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		switch line := sc.Text(); line {
		case lineStart:
			start = sampleCPU(watched)
		case lineStop:
			used = sampleCPU(watched)
			for pid, t := range used.procs {
				used.procs[pid] = t - start.procs[pid]
			}
			used.machine -= start.machine
		default:
			resErr = json.Unmarshal([]byte(line), &res)
		}
	}
	if err := cmd.Wait(); err != nil {
		return res, used, fmt.Errorf("load generator: %v: %s", err, stderr.String())
	}
	if resErr != nil {
		return res, used, resErr
	}
	if used.procs == nil {
		return res, used, errors.New("load generator never closed its window")
	}
	return res, used, nil
}

func sampleCPU(pids []int) cpuSample {
	s := cpuSample{procs: map[int]time.Duration{}, machine: stat.MachineCPU()}
	for _, pid := range pids {
		s.procs[pid] = stat.ProcessCPU(pid)
	}
	return s
}
