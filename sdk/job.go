package sdk

import (
	"encoding/json"
	"sync"

	"github.com/hashicorp/go-hclog"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// JobRun is one run of a job.
type JobRun struct {
	ID string
	// TenantIDs restricts the run; empty means every tenant.
	TenantIDs []string
	Params    json.RawMessage
	Logger    hclog.Logger

	mu     sync.Mutex
	stream interface {
		Send(*pluginv1.JobEvent) error
	}
}

// Progress reports how far the run is; the host shows it in the sync views.
// A job may call it from several goroutines at once.
func (r *JobRun) Progress(done, total int64, message string) {
	_ = r.send(&pluginv1.JobEvent{Event: &pluginv1.JobEvent_Progress{
		Progress: &pluginv1.JobProgress{Done: done, Total: total, Message: message},
	}})
}

// send serializes a run's events: a gRPC stream must not be sent on
// concurrently, and a job that syncs tenants in parallel reports progress
// from every worker.
func (r *JobRun) send(e *pluginv1.JobEvent) error {
	if r.stream == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream.Send(e)
}
