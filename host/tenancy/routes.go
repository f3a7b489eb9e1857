package tenancy

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

// Routes serve the tenant directory: the tenants and brands a caller may
// see, and an admin's changes to tenants, their members and brands.
type Routes struct {
	Store *Store
	Audit *audit.Recorder
}

// Register adds the tenant operations to a.
func (r Routes) Register(a huma.API) {
	r.registerReads(a)
	r.registerAdmin(a)
	r.registerBrands(a)
}

func (r Routes) registerReads(a huma.API) {
	api.Get(a, "/api/v1/tenants", sdk.Op{ID: "tenants-list", Tags: []string{"tenants"}, Summary: "Tenants the caller may see"},
		func(ctx context.Context, _ *struct{}) (*[]Tenant, error) {
			p := api.PrincipalFrom(ctx)
			if len(p.TenantIDs) == 0 {
				return &[]Tenant{}, nil
			}
			ts, err := r.Store.Tenants(ctx, p.TenantIDs, false)
			return &ts, err
		})
	// A tenant outside a standard caller's scope, existing or not, is
	// refused before the handler runs; an admin is told of an unknown one.
	api.Get(a, "/api/v1/tenants/{tenant_id}", sdk.Op{ID: "tenants-get", Tags: []string{"tenants"}, Summary: "One tenant", Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *struct {
			TenantID sdk.TenantID `path:"tenant_id" format:"uuid"`
		}) (*Tenant, error) {
			t, err := r.Store.Tenant(ctx, string(in.TenantID))
			if errors.Is(err, ErrNotFound) {
				return nil, huma.Error404NotFound("no tenant with that id")
			}
			return &t, err
		})
}
