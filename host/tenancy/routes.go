package tenancy

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
)

// Routes serve the tenant directory: the tenants a caller may see, and an
// admin's changes to tenants and their members.
type Routes struct {
	Store *Store
	Audit *audit.Recorder
}

// Register adds the tenant operations to a.
func (r Routes) Register(a huma.API) {
	r.registerReads(a)
	r.registerAdmin(a)
}

func (r Routes) registerReads(a huma.API) {
	api.Register(a, huma.Operation{OperationID: "tenants-list", Method: http.MethodGet, Path: "/api/v1/tenants", Tags: []string{"tenants"},
		Summary: "Tenants the caller may see"},
		func(ctx context.Context, _ *struct{}) (*struct{ Body []Tenant }, error) {
			p := api.PrincipalFrom(ctx)
			if len(p.TenantIDs) == 0 {
				return &struct{ Body []Tenant }{[]Tenant{}}, nil
			}
			ts, err := r.Store.Tenants(ctx, p.TenantIDs, false)
			return &struct{ Body []Tenant }{ts}, err
		})
	api.Register(a, huma.Operation{OperationID: "tenants-get", Method: http.MethodGet, Path: "/api/v1/tenants/{tenant_id}", Tags: []string{"tenants"},
		Summary: "One tenant", Errors: []int{http.StatusNotFound}, Extensions: api.TenantScoped("path", "tenant_id")},
		func(ctx context.Context, in *struct {
			TenantID string `path:"tenant_id" format:"uuid"`
		}) (*struct{ Body Tenant }, error) {
			p := api.PrincipalFrom(ctx)
			t, err := r.Store.Tenant(ctx, in.TenantID)
			if errors.Is(err, ErrNotFound) {
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
			return &struct{ Body Tenant }{t}, nil
		})
}
