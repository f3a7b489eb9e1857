package plugins

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

// AdminRoutes serve the plugins to admins: their state, and upgrades in place.
type AdminRoutes struct {
	// Supervisor is nil on a host that runs no plugins.
	Supervisor *Supervisor
	Audit      *audit.Recorder
}

// Register adds the plugin operations to a.
func (r AdminRoutes) Register(a huma.API) {
	api.Get(a, "/api/v1/plugins", sdk.Op{ID: "plugins-list", Tags: []string{"plugins"},
		Summary: "Declared plugins and their state", Auth: sdk.AuthAdmin},
		func(ctx context.Context, _ *struct{}) (*[]Status, error) {
			out := []Status{}
			if r.Supervisor != nil {
				out = r.Supervisor.Statuses()
			}
			return &out, nil
		})
	api.Post(a, "/api/v1/plugins/{name}/reload", sdk.Op{ID: "plugins-reload", Tags: []string{"plugins"},
		Summary: "Upgrade a plugin in place",
		Description: "Starts the binary plugins.hcl declares for the plugin beside the running process (its sha256 verified again when declared), " +
			"describes, migrates and configures it, swaps the plugin's routes to it in one step, then lets the old process finish its requests, " +
			"streams and jobs (at most its drain_timeout, 30 s by default, after which a job still running is cancelled) and stops it. " +
			"A plugin the host gave up on (state failed) is started afresh, with no old process to drain. " +
			"409: the plugin is starting, restarting, stopped or disabled, or the new binary fails its checksum, speaks another protocol or plugin name, describes a config schema its config block does not meet (the answer names plugins.hcl's line and the key), or declares a route another plugin or the host serves. " +
			"502: the new binary failed to start, describe, migrate or configure. In both cases the old process goes on serving and the detail says why.",
		Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusBadGateway}},
		func(ctx context.Context, in *struct {
			Name string `path:"name" maxLength:"100"`
		}) (*Reloaded, error) {
			if r.Supervisor == nil {
				return nil, huma.Error404NotFound("no plugin named " + in.Name)
			}
			res, err := r.Supervisor.Reload(ctx, in.Name)
			var failed *ReloadError
			switch {
			case errors.Is(err, ErrUnknownPlugin):
				return nil, huma.Error404NotFound("no plugin named " + in.Name)
			case errors.As(err, &failed):
				r.Audit.Record(ctx, audit.Entry{Action: "plugin.reload.failure", Status: audit.StatusFailure, ResourceType: "plugin", ResourceID: in.Name,
					Details: map[string]any{"reason": failed.Err.Error()}})
				if failed.Conflict {
					return nil, huma.Error409Conflict(failed.Error())
				}
				return nil, huma.Error502BadGateway(failed.Error())
			case err != nil:
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "plugin.reload.success", Status: audit.StatusSuccess, ResourceType: "plugin", ResourceID: in.Name,
				Details: map[string]any{"old_version": res.OldVersion, "new_version": res.NewVersion, "duration_ms": res.Duration.Milliseconds()}})
			return &res, nil
		})
}
