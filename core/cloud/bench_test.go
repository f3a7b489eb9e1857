package cloud_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// BenchmarkDailyCosts ingests daily costs through DailyCosts from the
// simulator over HTTPS, from a world holding a tenant-year (1 subscription
// × 365 days × 275 service/resource group pairs = 100,375 rows): the whole
// year (101 pages), and one month of it for comparison. It reports rows per
// second and the heap while streaming, sampled: the peak, and its rise over
// the idle heap (which holds the simulator's world). The rise is the same
// for a month as for the year because rows stream a page at a time; what
// remains is garbage the collector lets accumulate before it runs.
func BenchmarkDailyCosts(b *testing.B) {
	const days, pairs = 365, 275
	w := baseWorld()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addCosts(w, subID(0), start, days, pairs)
	_, c := startSim(b, w)
	for _, bc := range []struct {
		name string
		days int
	}{{"month", 31}, {"year", days}} {
		b.Run(bc.name, func(b *testing.B) {
			benchmarkIngest(b, c, start, start.AddDate(0, 0, bc.days-1), bc.days*pairs)
		})
	}
}

func benchmarkIngest(b *testing.B, c *cloud.Clients, from, to time.Time, want int) {
	ctx := context.Background()
	ingest := func() int {
		n := 0
		if err := c.DailyCosts(ctx, subID(0), cloud.ActualCost, from, to, func(cloud.CostRow) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("%d rows, want %d", n, want)
		}
		return n
	}
	// The first run gets the token and builds the simulator's cost index.
	ingest()
	runtime.GC()
	var idle runtime.MemStats
	runtime.ReadMemStats(&idle)

	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	rows := 0
	for b.Loop() {
		rows += ingest()
	}
	elapsed := b.Elapsed()
	close(stop)
	<-sampled
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), idle.HeapInuse))/(1<<20), "heap-rise-MB")
	if hwm, ok := peakRSS(); ok {
		b.ReportMetric(hwm/(1<<20), "peak-rss-MB")
	}
}

// peakRSS is the process's resident-set high-water mark (VmHWM), which
// includes the simulator serving the rows in this same process.
func peakRSS() (float64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// BenchmarkResourceCosts sums a subscription's 30 days by resource through
// ResourceCosts from the simulator over HTTPS: 10,000 resources costed
// every day (300,000 rows of the world) answer as 10,000 rows in 10 pages.
// Beside BenchmarkDailyCosts' month it shows what the daily query by
// resource adds to a subscription's sync.
func BenchmarkResourceCosts(b *testing.B) {
	const days, resources = 30, 10_000
	w := baseWorld()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := 0; d < days; d++ {
		date := start.AddDate(0, 0, d).Format(time.DateOnly)
		for i := 0; i < resources; i++ {
			w.Costs = append(w.Costs, world.Cost{SubscriptionID: subID(0), Date: date, Service: "Storage", ResourceGroup: "rg-00",
				ResourceID: fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-00/providers/Microsoft.Compute/disks/disk-%05d", subID(0), i),
				Cost:       float64(i%500) / 100, Currency: "USD"})
		}
	}
	_, c := startSim(b, w)
	ctx := context.Background()
	query := func() int {
		n := 0
		if err := c.ResourceCosts(ctx, subID(0), start, start.AddDate(0, 0, days-1), func(cloud.ResourceCost) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != resources {
			b.Fatalf("%d resources, want %d", n, resources)
		}
		return n
	}
	// The first run gets the token and builds the simulator's cost index.
	query()
	rows := 0
	for b.Loop() {
		rows += query()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "resources/s")
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(rows/resources), "ms/query")
}
