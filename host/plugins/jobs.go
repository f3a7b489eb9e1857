package plugins

import (
	"context"
	"errors"
	"fmt"
	"time"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// RunJob runs a plugin's job, for tenantIDs only when any, and relays its
// progress reports and alerts. A run cut short
// because a reload stopped its process past the drain timeout fails with
// ErrProcessReplaced: the job did not fail, and may run again on the new
// process.
func (s *Supervisor) RunJob(ctx context.Context, plugin, job, runID string, tenantIDs []string, ev protocol.JobEvents) (int64, error) {
	inst, ok := s.instance(plugin)
	if !ok {
		return 0, errors.New("unknown plugin " + plugin)
	}
	l, err := inst.acquire()
	if err != nil {
		return 0, err
	}
	defer l.release()
	t0 := time.Now()
	defer func() { s.metrics.rpc.WithLabelValues(plugin, "RunJob").Observe(time.Since(t0).Seconds()) }()
	stream, err := l.rpc.RunJob(ctx, &pluginv1.RunJobRequest{Job: job, RunId: runID, TenantIds: tenantIDs})
	if err != nil {
		return 0, err
	}
	n, err := protocol.RecvJob(stream, ev)
	if err != nil && l.gen.replaced.Load() {
		return n, fmt.Errorf("%w: %w", ErrProcessReplaced, err)
	}
	if err != nil && !errors.Is(err, protocol.ErrJobWithoutResult) {
		s.metrics.rpcErrors.WithLabelValues(plugin, "RunJob").Inc()
	}
	return n, err
}

// CheckHealth asks every running plugin for its health.
func (s *Supervisor) CheckHealth(ctx context.Context) map[string]*pluginv1.CheckHealthResponse {
	out := map[string]*pluginv1.CheckHealthResponse{}
	for _, inst := range s.instances() {
		rpc, _, err := inst.running()
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := rpc.CheckHealth(cctx, &pluginv1.CheckHealthRequest{})
		cancel()
		if err != nil {
			resp = &pluginv1.CheckHealthResponse{Status: pluginv1.HealthStatus_HEALTH_STATUS_ERROR, Message: err.Error()}
		}
		out[inst.name] = resp
	}
	return out
}

// CollectMetrics gathers each running plugin's metrics text.
func (s *Supervisor) CollectMetrics(ctx context.Context) map[string][]byte {
	out := map[string][]byte{}
	for _, inst := range s.instances() {
		rpc, _, err := inst.running()
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := rpc.CollectMetrics(cctx, &pluginv1.CollectMetricsRequest{})
		cancel()
		if err == nil {
			out[inst.name] = resp.PrometheusText
		}
	}
	return out
}
