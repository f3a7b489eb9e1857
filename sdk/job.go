package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
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

// eachTenant runs job's EachTenant for each active tenant of run in turn
// (see Job.EachTenant).
func eachTenant(ctx context.Context, host *Host, job *Job, run *JobRun) (int64, error) {
	if host == nil {
		return 0, errors.New("no host to list the tenants from")
	}
	tenants, err := host.Tenants(ctx, run.TenantIDs...)
	if err != nil {
		return 0, fmt.Errorf("tenant directory: %w", err)
	}
	var records int64
	var failed []error
	for i, t := range tenants {
		if err := ctx.Err(); err != nil {
			return records, errors.Join(append(failed, err)...)
		}
		start := time.Now()
		n, err := job.EachTenant(ctx, run, t)
		records += n
		if job.DataDomain != "" {
			if err == nil {
				err = host.MarkFresh(ctx, t.ID, job.DataDomain, start)
			} else if markErr := host.MarkFailed(ctx, t.ID, job.DataDomain, start, err.Error()); markErr != nil {
				err = errors.Join(err, markErr)
			}
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("tenant %s (%s): %w", t.Name, t.ID, err))
		}
		run.Progress(int64(i+1), int64(len(tenants)), t.Name)
	}
	return records, errors.Join(failed...)
}

// Alert severities, mildest first.
const (
	AlertInfo     = "info"
	AlertWarning  = "warning"
	AlertError    = "error"
	AlertCritical = "critical"
)

// Alert raises a sync alert tied to this run, listed by the host's
// /api/v1/sync/alerts until an operator resolves it: for a finding of the
// run someone must act on (a domain's mail policy relaxed, a key removed),
// not for the run's own failure, which the host alerts on itself.
// severity is one of the Alert constants; title has 1 to 200 characters,
// message at most 4,000, neither with control characters but the
// message's line breaks. A job may call it from several goroutines.
func (r *JobRun) Alert(severity, title, message string) error {
	if err := protocol.CheckAlert(severity, title, message); err != nil {
		return fmt.Errorf("sdk: %w", err)
	}
	return r.send(&pluginv1.JobEvent{Event: &pluginv1.JobEvent_Alert{
		Alert: &pluginv1.JobAlert{Severity: severity, Title: title, Message: message},
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
