package jobs

import (
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
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
	m.runs = register(reg, m.runs, log)
	m.duration = register(reg, m.duration, log)
	m.running = register(reg, m.running, log)
	m.tenants = register(reg, m.tenants, log)
	return m
}

// register registers c, or returns the collector registered before under
// the same name, so that a second Scheduler on one registry (a restart of
// the scheduler within the process) shares the series instead of failing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, log hclog.Logger) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	log.Warn("registering job metrics failed; they will not be exported", "error", err)
	return c
}
