package tenancy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

type brandCreateInput struct {
	Body struct {
		Name        string   `json:"name" minLength:"1" maxLength:"200" doc:"1-200 characters once trimmed; markup is stripped; unique whatever its case"`
		Description string   `json:"description,omitempty" maxLength:"2000" doc:"Markup is stripped"`
		TenantIDs   []string `json:"tenant_ids,omitempty" maxItems:"1000" doc:"The brand's tenants; a tenant in another brand is a 409"`
	}
}

type brandUpdateInput struct {
	BrandID string `path:"brand_id" format:"uuid"`
	Body    struct {
		Name        *string   `json:"name,omitempty" minLength:"1" maxLength:"200" doc:"1-200 characters once trimmed; markup is stripped; unique whatever its case"`
		Description *string   `json:"description,omitempty" maxLength:"2000" doc:"Markup is stripped"`
		TenantIDs   *[]string `json:"tenant_ids,omitempty" maxItems:"1000" doc:"Replaces the brand's tenants: those left out leave it; [] empties it. A tenant in another brand is a 409"`
	}
}

type brandPathInput struct {
	BrandID string `path:"brand_id" format:"uuid"`
}

const brandScopeDoc = "A brand is visible to a standard caller when it may see at least one of the brand's tenants, and then shows only those; an admin sees every brand and tenant."

// checkTenantIDs refuses an empty tenant id as a 422 naming it. Repeats
// are left in, so that an error's index is the request's own.
func checkTenantIDs(ids []string) error {
	for i, id := range ids {
		if id == "" {
			return invalid(fmt.Sprintf("tenant_ids[%d]", i), "expected a tenant id", id)
		}
	}
	return nil
}

// brandWriteError maps a store error of a brand's read or write to its
// answer.
func brandWriteError(err error) error {
	var unknown *UnknownTenantError
	var conflict *TenantConflictError
	switch {
	case errors.As(err, &unknown):
		return invalid(fmt.Sprintf("tenant_ids[%d]", unknown.Index), "no tenant with that id", unknown.TenantID)
	case errors.As(err, &conflict):
		return huma.Error409Conflict("a tenant is in at most one brand; remove it from its brand first",
			&huma.ErrorDetail{Location: fmt.Sprintf("body.tenant_ids[%d]", conflict.Index), Message: "the tenant is in brand " + conflict.Brand, Value: conflict.TenantID})
	case errors.Is(err, ErrDuplicate):
		return huma.Error409Conflict("a brand with that name already exists")
	case errors.Is(err, ErrNotFound):
		return huma.Error404NotFound("no brand with that id")
	}
	return err
}

// visibleBrand is b as the caller may see it: every tenant for an admin,
// else those in its scope; ok is false when it may see none of them.
func visibleBrand(p *api.Principal, b Brand) (Brand, bool) {
	if p.IsAdmin {
		return b, true
	}
	ids := []string{}
	for _, id := range b.TenantIDs {
		if slices.Contains(p.TenantIDs, id) {
			ids = append(ids, id)
		}
	}
	b.TenantIDs = ids
	return b, len(ids) > 0
}

func (r Routes) registerBrands(a huma.API) {
	tags := []string{"brands"}
	api.Get(a, "/api/v1/brands", sdk.Op{ID: "brands-list", Tags: tags, Summary: "Brands the caller may see",
		Description: "A JSON array of brands by name. " + brandScopeDoc},
		func(ctx context.Context, _ *struct{}) (*[]Brand, error) {
			all, err := r.Store.Brands(ctx)
			if err != nil {
				return nil, err
			}
			p := api.PrincipalFrom(ctx)
			out := []Brand{}
			for _, b := range all {
				if v, ok := visibleBrand(p, b); ok {
					out = append(out, v)
				}
			}
			return &out, nil
		})
	api.Get(a, "/api/v1/brands/{brand_id}", sdk.Op{ID: "brands-get", Tags: tags, Summary: "One brand", Errors: []int{http.StatusNotFound},
		Description: brandScopeDoc + " A brand the caller cannot see is a 404, as an unknown one is."},
		func(ctx context.Context, in *brandPathInput) (*Brand, error) {
			b, err := r.Store.Brand(ctx, in.BrandID)
			if err != nil {
				return nil, brandWriteError(err)
			}
			v, ok := visibleBrand(api.PrincipalFrom(ctx), b)
			if !ok {
				return nil, huma.Error404NotFound("no brand with that id")
			}
			return &v, nil
		})
	api.Post(a, "/api/v1/brands", sdk.Op{ID: "brands-create", Tags: tags, Summary: "Add a brand", Status: http.StatusCreated, Auth: sdk.AuthAdmin,
		Errors:      []int{http.StatusConflict},
		Description: "A name another brand has, whatever its case, is a 409, as is a tenant already in another brand (a tenant is in at most one). An unknown tenant id is a 422 naming it."},
		func(ctx context.Context, in *brandCreateInput) (*Brand, error) {
			name, err := cleanName(in.Body.Name)
			if err != nil {
				return nil, err
			}
			if err := checkTenantIDs(in.Body.TenantIDs); err != nil {
				return nil, err
			}
			b := Brand{Name: name, Description: cleanText(in.Body.Description)}
			if err := r.Store.CreateBrand(ctx, &b, in.Body.TenantIDs); err != nil {
				return nil, brandWriteError(err)
			}
			r.Audit.Record(ctx, audit.Entry{Action: "brand.create.success", Status: audit.StatusSuccess, ResourceType: "brand", ResourceID: b.ID,
				Details: map[string]any{"name": b.Name, "tenant_ids": b.TenantIDs}})
			return &b, nil
		})
	api.Patch(a, "/api/v1/brands/{brand_id}", sdk.Op{ID: "brands-update", Tags: tags, Summary: "Change a brand", Auth: sdk.AuthAdmin,
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
		Description: "Only the fields given change; tenant_ids replaces the brand's tenants. Conflicts and unknown tenants answer as a create's do, and nothing is written."},
		func(ctx context.Context, in *brandUpdateInput) (*Brand, error) {
			var p BrandPatch
			fields := []string{}
			if in.Body.Name != nil {
				name, err := cleanName(*in.Body.Name)
				if err != nil {
					return nil, err
				}
				p.Name, fields = &name, append(fields, "name")
			}
			if in.Body.Description != nil {
				d := cleanText(*in.Body.Description)
				p.Description, fields = &d, append(fields, "description")
			}
			if in.Body.TenantIDs != nil {
				if err := checkTenantIDs(*in.Body.TenantIDs); err != nil {
					return nil, err
				}
				p.TenantIDs, fields = in.Body.TenantIDs, append(fields, "tenant_ids")
			}
			b, err := r.Store.UpdateBrand(ctx, in.BrandID, p)
			if err != nil {
				return nil, brandWriteError(err)
			}
			r.Audit.Record(ctx, audit.Entry{Action: "brand.update.success", Status: audit.StatusSuccess, ResourceType: "brand", ResourceID: b.ID,
				Details: map[string]any{"fields": fields, "tenant_ids": b.TenantIDs}})
			return &b, nil
		})
	api.Delete(a, "/api/v1/brands/{brand_id}", sdk.Op{ID: "brands-delete", Tags: tags, Summary: "Delete a brand", Auth: sdk.AuthAdmin,
		Errors: []int{http.StatusNotFound}, Description: "Its tenants are then in no brand; they and their data are untouched."},
		func(ctx context.Context, in *brandPathInput) (*sdk.Empty, error) {
			if err := r.Store.DeleteBrand(ctx, in.BrandID); err != nil {
				return nil, brandWriteError(err)
			}
			r.Audit.Record(ctx, audit.Entry{Action: "brand.delete.success", Status: audit.StatusSuccess, ResourceType: "brand", ResourceID: in.BrandID})
			return nil, nil
		})
}
