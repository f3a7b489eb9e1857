package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/tenancy"
)

func (s *Server) registerTenants() {
	api.Register(s.API, huma.Operation{OperationID: "tenants-list", Method: http.MethodGet, Path: "/api/v1/tenants", Tags: []string{"tenants"},
		Summary: "Tenants the caller may see"},
		func(ctx context.Context, _ *struct{}) (*struct{ Body []tenancy.Tenant }, error) {
			p := api.PrincipalFrom(ctx)
			if len(p.TenantIDs) == 0 {
				return &struct{ Body []tenancy.Tenant }{[]tenancy.Tenant{}}, nil
			}
			ts, err := s.deps.Tenancy.Tenants(ctx, p.TenantIDs, false)
			return &struct{ Body []tenancy.Tenant }{ts}, err
		})
	api.Register(s.API, huma.Operation{OperationID: "tenants-get", Method: http.MethodGet, Path: "/api/v1/tenants/{tenant_id}", Tags: []string{"tenants"},
		Summary: "One tenant", Errors: []int{http.StatusNotFound}, Extensions: api.TenantScoped("path", "tenant_id")},
		func(ctx context.Context, in *struct {
			TenantID string `path:"tenant_id" format:"uuid"`
		}) (*struct{ Body tenancy.Tenant }, error) {
			p := api.PrincipalFrom(ctx)
			t, err := s.deps.Tenancy.Tenant(ctx, in.TenantID)
			if errors.Is(err, tenancy.ErrNotFound) {
				if !p.IsAdmin {
					return nil, huma.Error403Forbidden(api.ErrNoTenantAccess)
				}
				return nil, huma.Error404NotFound("no tenant with that id")
			}
			if err != nil {
				return nil, err
			}
			if !p.CanSeeTenant(t.ID) {
				return nil, huma.Error403Forbidden(api.ErrNoTenantAccess)
			}
			return &struct{ Body tenancy.Tenant }{t}, nil
		})
}

func (s *Server) registerPlugins() {
	api.Register(s.API, huma.Operation{OperationID: "plugins-list", Method: http.MethodGet, Path: "/api/v1/plugins", Tags: []string{"plugins"},
		Summary: "Declared plugins and their state", Metadata: api.AdminOnly()},
		func(ctx context.Context, _ *struct{}) (*struct{ Body []plugins.Status }, error) {
			out := []plugins.Status{}
			if s.deps.Plugins != nil {
				out = s.deps.Plugins.Statuses()
			}
			return &struct{ Body []plugins.Status }{out}, nil
		})
	api.Register(s.API, huma.Operation{OperationID: "plugins-reload", Method: http.MethodPost, Path: "/api/v1/plugins/{name}/reload", Tags: []string{"plugins"},
		Summary: "Upgrade a plugin in place",
		Description: "Starts the binary plugins.hcl declares for the plugin beside the running process (its sha256 verified again when declared), " +
			"describes, migrates and configures it, swaps the plugin's routes to it in one step, then lets the old process finish its requests, " +
			"streams and jobs (at most its drain_timeout, 30 s by default, after which a job still running is cancelled) and stops it. " +
			"A plugin the host gave up on (state failed) is started afresh, with no old process to drain. " +
			"409: the plugin is starting, restarting, stopped or disabled, or the new binary fails its checksum, speaks another protocol or plugin name, or declares a route another plugin or the host serves. " +
			"502: the new binary failed to start, describe, migrate or configure. In both cases the old process goes on serving and the detail says why.",
		Metadata: api.AdminOnly(), Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusBadGateway}},
		func(ctx context.Context, in *struct {
			Name string `path:"name" maxLength:"100"`
		}) (*struct{ Body plugins.Reloaded }, error) {
			if s.deps.Plugins == nil {
				return nil, huma.Error404NotFound("no plugin named " + in.Name)
			}
			res, err := s.deps.Plugins.Reload(ctx, in.Name)
			var failed *plugins.ReloadError
			switch {
			case errors.Is(err, plugins.ErrUnknownPlugin):
				return nil, huma.Error404NotFound("no plugin named " + in.Name)
			case errors.As(err, &failed):
				s.rec.Record(ctx, audit.Entry{Action: "plugin.reload.failure", Status: audit.StatusFailure, ResourceType: "plugin", ResourceID: in.Name,
					Details: map[string]any{"reason": failed.Err.Error()}})
				if failed.Conflict {
					return nil, huma.Error409Conflict(failed.Error())
				}
				return nil, huma.Error502BadGateway(failed.Error())
			case err != nil:
				return nil, err
			}
			s.rec.Record(ctx, audit.Entry{Action: "plugin.reload.success", Status: audit.StatusSuccess, ResourceType: "plugin", ResourceID: in.Name,
				Details: map[string]any{"old_version": res.OldVersion, "new_version": res.NewVersion, "duration_ms": res.Duration.Milliseconds()}})
			return &struct{ Body plugins.Reloaded }{res}, nil
		})
}
