package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/tenancy"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (s *Server) registerTenants() {
	register(s, huma.Operation{OperationID: "tenants-list", Method: http.MethodGet, Path: "/api/v1/tenants", Tags: []string{"tenants"},
		Summary: "Tenants the caller may see"},
		func(ctx context.Context, _ *struct{}) (*struct{ Body []tenancy.Tenant }, error) {
			p := principalFrom(ctx)
			if len(p.TenantIDs) == 0 {
				return &struct{ Body []tenancy.Tenant }{[]tenancy.Tenant{}}, nil
			}
			ts, err := s.deps.Tenancy.Tenants(ctx, p.TenantIDs, false)
			return &struct{ Body []tenancy.Tenant }{ts}, err
		})
	register(s, huma.Operation{OperationID: "tenants-get", Method: http.MethodGet, Path: "/api/v1/tenants/{tenant_id}", Tags: []string{"tenants"},
		Summary: "One tenant", Errors: []int{http.StatusNotFound}, Extensions: tenantScoped("path", "tenant_id")},
		func(ctx context.Context, in *struct {
			TenantID string `path:"tenant_id" format:"uuid"`
		}) (*struct{ Body tenancy.Tenant }, error) {
			p := principalFrom(ctx)
			t, err := s.deps.Tenancy.Tenant(ctx, in.TenantID)
			if errors.Is(err, tenancy.ErrNotFound) {
				if !p.IsAdmin {
					return nil, huma.Error403Forbidden(errNoTenantAccess)
				}
				return nil, huma.Error404NotFound("no tenant with that id")
			}
			if err != nil {
				return nil, err
			}
			if !p.CanSeeTenant(t.ID) {
				return nil, huma.Error403Forbidden(errNoTenantAccess)
			}
			return &struct{ Body tenancy.Tenant }{t}, nil
		})
}

func (s *Server) registerPlugins() {
	register(s, huma.Operation{OperationID: "plugins-list", Method: http.MethodGet, Path: "/api/v1/plugins", Tags: []string{"plugins"},
		Summary: "Declared plugins and their state", Metadata: map[string]any{metaAuth: authAdmin}},
		func(ctx context.Context, _ *struct{}) (*struct{ Body []plugins.Status }, error) {
			out := []plugins.Status{}
			if s.deps.Plugins != nil {
				out = s.deps.Plugins.Statuses()
			}
			return &struct{ Body []plugins.Status }{out}, nil
		})
}
