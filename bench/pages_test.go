package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/bench/stat"
)

// pageRequests is how many times each page or fragment is fetched.
const pageRequests = 200

// BenchmarkPages times the web UI as `make run` serves it: the real binary
// with the repository's plugins.hcl, the demo world of the simulated cloud
// and its first syncs done, and the admin, who sees every tenant. Each page
// and fragment is fetched pageRequests times in a row over one kept-alive
// connection with a Bearer token; the figures are the time from sending a
// request to its last byte, which for the resources plugin's views
// includes the plugin hop.
func BenchmarkPages(b *testing.B) {
	bin := binDir(b)
	base, env := repoEnv(b, bin, "STEWARD_ACCESS_LOG=false", "STEWARD_RATE_LIMIT_PER_MINUTE=100000")
	s, err := serve(filepath.Join(bin, "steward"), env, base)
	if err != nil {
		b.Fatal(err)
	}
	defer s.stop()
	token, err := login(base)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (int, int, error) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, int(n), err
	}
	for _, job := range []string{"resources", "costs"} {
		if err := waitForSync(base, token, job, 60*time.Second); err != nil {
			b.Fatalf("%v\nhost log:\n%s", err, s.log.String())
		}
	}

	paths := []string{
		"/dashboard", "/sync-dashboard", "/resources",
		"/partials/sync-status-card", "/partials/sync-history-table", "/partials/tenant-sync-status",
		"/partials/active-alerts", "/partials/resource-stats", "/partials/cost-summary-card",
		"/costs", "/costs/analysis",
	}
	b.ResetTimer()
	for _, path := range paths {
		var times []time.Duration
		size := 0
		for i := range pageRequests + 10 {
			t0 := time.Now()
			status, n, err := get(path)
			d := time.Since(t0)
			if err != nil || status != http.StatusOK {
				b.Fatalf("%s: %d %v", path, status, err)
			}
			if i >= 10 { // the first requests warm the caches and connection
				times = append(times, d)
			}
			size = n
		}
		slices.Sort(times)
		name := strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "-")
		b.ReportMetric(ms(stat.Percentile(times, 0.50)), name+"-p50-ms")
		b.ReportMetric(ms(stat.Percentile(times, 0.95)), name+"-p95-ms")
		b.Logf("%-32s p50 %6.2f ms  p95 %6.2f ms  max %6.2f ms  %6d bytes", path, ms(stat.Percentile(times, 0.50)), ms(stat.Percentile(times, 0.95)), ms(times[len(times)-1]), size)
	}
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitForSync waits until a run of the job type has completed.
func waitForSync(base, token, jobType string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/sync/history?limit=100", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var hist struct {
				Logs []struct {
					JobType string `json:"job_type"`
					Status  string `json:"status"`
				} `json:"logs"`
			}
			err = json.NewDecoder(resp.Body).Decode(&hist)
			resp.Body.Close()
			for _, r := range hist.Logs {
				if err == nil && r.JobType == jobType && r.Status == "completed" {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("no %s sync completed within %s", jobType, limit)
}
