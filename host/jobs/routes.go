package jobs

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

type syncAccepted struct {
	Status int
	Body   Accepted
}

// Accepted is the answer to a sync trigger.
type Accepted struct {
	JobID   string   `json:"job_id"`
	JobType string   `json:"job_type"`
	Status  string   `json:"status" enum:"queued"`
	JobIDs  []string `json:"job_ids" doc:"Every run queued, when several plugins provide the job type"`
}

type resolveInput struct {
	AlertID int64 `path:"alert_id" minimum:"1"`
	Body    struct {
		ResolvedBy      string `json:"resolved_by" minLength:"1" maxLength:"255"`
		ResolutionNotes string `json:"resolution_notes,omitempty" maxLength:"4000"`
	}
}

// redactionNote documents what a standard user sees of runs and alerts.
const redactionNote = "A run covers every tenant, so its free text (error and progress messages, alert messages, resolution notes) and the actor who triggered it are shown to admins only; a standard user sees \"" + RedactedText + "\" in their place."

// Routes serve the sync jobs: their state, history, metrics and alerts,
// and manual runs.
type Routes struct {
	Scheduler *Scheduler
	// Cache is the host's shared cache, whose preflight entries an admin
	// may clear.
	Cache cache.Cache
	Audit *audit.Recorder
	// StartedAt is when the host started; metrics cover the 30 days
	// before it.
	StartedAt time.Time
}

// Register adds the sync operations to a.
func (r Routes) Register(a huma.API) {
	api.Get(a, "/api/v1/sync/status", sdk.Op{ID: "sync-status", Tags: []string{"sync"}, Summary: "Registered sync jobs and their state",
		Description: redactionNote},
		func(ctx context.Context, _ *struct{}) (*StatusResponse, error) {
			st, err := r.Scheduler.Status(ctx)
			if !api.PrincipalFrom(ctx).IsAdmin {
				st = st.Redacted()
			}
			return &st, err
		})
	api.Get(a, "/api/v1/sync/history", sdk.Op{ID: "sync-history", Tags: []string{"sync"}, Summary: "Sync runs, newest first",
		Description: redactionNote},
		func(ctx context.Context, in *struct {
			Limit int `query:"limit" minimum:"1" maximum:"500" default:"50"`
		}) (*HistoryResponse, error) {
			h, err := r.Scheduler.History(ctx, in.Limit)
			if !api.PrincipalFrom(ctx).IsAdmin {
				h = h.Redacted()
			}
			return &h, err
		})
	api.Get(a, "/api/v1/sync/metrics", sdk.Op{ID: "sync-metrics", Tags: []string{"sync"}, Summary: "Sync performance by job type"},
		func(ctx context.Context, _ *struct{}) (*MetricsResponse, error) {
			m, err := r.Scheduler.Metrics(ctx, r.StartedAt.AddDate(0, 0, -30))
			return &m, err
		})
	api.Get(a, "/api/v1/sync/alerts", sdk.Op{ID: "sync-alerts", Tags: []string{"sync"}, Summary: "Sync alerts, unresolved first",
		Description: redactionNote},
		func(ctx context.Context, _ *struct{}) (*AlertsResponse, error) {
			a, err := r.Scheduler.Alerts(ctx, 200)
			if !api.PrincipalFrom(ctx).IsAdmin {
				a = a.Redacted()
			}
			return &a, err
		})
	api.Post(a, "/api/v1/sync/alerts/{alert_id}/resolve", sdk.Op{ID: "sync-alert-resolve", Tags: []string{"sync"},
		Summary: "Resolve a sync alert", Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound, http.StatusConflict}},
		func(ctx context.Context, in *resolveInput) (*Alert, error) {
			a, err := r.Scheduler.ResolveAlert(ctx, in.AlertID, in.Body.ResolvedBy, in.Body.ResolutionNotes)
			switch {
			case errors.Is(err, ErrNotFound):
				return nil, huma.Error404NotFound("no sync alert with that id")
			case errors.Is(err, ErrAlreadyResolved):
				return nil, huma.Error409Conflict("the alert is already resolved")
			case err != nil:
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "sync.alert_resolve.success", Status: audit.StatusSuccess, ResourceType: "sync_alert", ResourceID: strconv.FormatInt(in.AlertID, 10)})
			return &a, nil
		})
	api.Post(a, "/api/v1/sync/{job_type}", sdk.Op{ID: "sync-trigger", Tags: []string{"sync"},
		Summary:     "Trigger a manual sync",
		Description: "job_type is a job type an enabled plugin declares (GET /api/v1/sync/status lists them). Answers 202 at once; follow the run in /api/v1/sync/history.",
		Status:      http.StatusAccepted, Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *struct {
			JobType string `path:"job_type" pattern:"^[a-z][a-z0-9_-]{0,39}$"`
		}) (*syncAccepted, error) {
			body, err := r.Trigger(ctx, in.JobType)
			if err != nil {
				return nil, err
			}
			return &syncAccepted{Status: http.StatusAccepted, Body: *body}, nil
		})
	api.Post(a, "/api/v1/preflight/clear-cache", sdk.Op{ID: "preflight-clear-cache", Tags: []string{"sync"},
		Summary: "Clear the preflight cache", Auth: sdk.AuthAdmin},
		func(ctx context.Context, _ *struct{}) (*map[string]any, error) {
			if err := r.Cache.DeletePrefix(ctx, "preflight:"); err != nil {
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "cache.clear.success", Status: audit.StatusSuccess, ResourceType: "cache", ResourceID: "preflight"})
			return &map[string]any{"success": true, "message": "preflight cache cleared"}, nil
		})
}

// Trigger queues every enabled job of jobType for the caller in ctx and
// audits it: the sync route's work, which a plugin's trigger path shares.
// An unknown job type is a 404 (a huma status error).
func (r Routes) Trigger(ctx context.Context, jobType string) (*Accepted, error) {
	runs, err := r.Scheduler.Trigger(ctx, jobType, api.PrincipalFrom(ctx).ID)
	if errors.Is(err, ErrUnknownJobType) {
		r.Audit.Record(ctx, audit.Entry{Action: "sync.trigger.failure", Status: audit.StatusFailure, ResourceType: "sync_job", Details: map[string]any{"job_type": jobType, "reason": "no plugin provides it"}})
		return nil, huma.Error404NotFound("no enabled plugin provides the " + jobType + " sync")
	}
	if err != nil {
		return nil, err
	}
	out := &Accepted{JobType: jobType, Status: "queued"}
	for _, r := range runs {
		out.JobIDs = append(out.JobIDs, r.ID)
	}
	out.JobID = out.JobIDs[0]
	r.Audit.Record(ctx, audit.Entry{Action: "sync.trigger.success", Status: audit.StatusSuccess, ResourceType: "sync_job", ResourceID: out.JobID, Details: map[string]any{"job_type": jobType}})
	return out, nil
}
