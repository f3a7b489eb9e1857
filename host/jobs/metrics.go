package jobs

import (
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/internal/promreg"
)

// promMetrics are the Scheduler's Prometheus collectors. They exist even
// without a Registerer so that recording never needs a nil check.
type promMetrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	running  prometheus.Gauge
	tenants  *prometheus.CounterVec
}

func newPromMetrics(reg prometheus.Registerer, log hclog.Logger) promMetrics {
	m := promMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_job_runs_total",
			Help: "Finished sync job runs by job type and final status.",
		}, []string{"job_type", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "steward_job_duration_seconds",
			Help: "Execution time of finished sync job runs.",
			// Syncs range from seconds for small tenants to hours for a
			// full export of a large one.
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200},
		}, []string{"job_type"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "steward_jobs_running",
			Help: "Sync job runs, and tenants of spread runs, executing on this replica.",
		}),
		tenants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_job_tenants_total",
			Help: "Tenants of spread sync runs this replica finished, by job type and status.",
		}, []string{"job_type", "status"}),
	}
	if reg == nil {
		return m
	}
	m.runs = promreg.Register(reg, m.runs, log)
	m.duration = promreg.Register(reg, m.duration, log)
	m.running = promreg.Register(reg, m.running, log)
	m.tenants = promreg.Register(reg, m.tenants, log)
	return m
}
