package server

import (
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/stewardhq/steward/host/pages"
	"github.com/stewardhq/steward/host/tenancy"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// paramBrandID is the query parameter that narrows a plugin route taking
// the caller's tenants to one brand's.
const paramBrandID = "brand_id"

// brandScoped reports whether a plugin route takes brand_id: one whose
// requests name their tenants in the query (tenant_id or tenant_ids),
// and which, without them, acts on all the caller's tenants.
func brandScoped(r *protocol.Route) bool {
	return r.Tenant != nil && r.Tenant.In == protocol.TenantInQuery
}

// narrowToBrand narrows the principal a plugin is handed to the tenants
// of the brand the request's brand_id names, of those it may see: the
// plugin then acts on the brand as it would for a caller of those tenants
// alone, and CheckTenant refuses a tenant_id outside the brand with the
// 403 of any tenant outside the caller's scope. It answers a 422 for a
// brand_id that is not one UUID and a 404 for a brand the caller cannot
// see, unknown or not (see tenancy.Store.BrandScope); refused is nil when
// the request may go on.
func (s *Server) narrowToBrand(c *fiber.Ctx, r *protocol.Route, p *pluginv1.Principal) (refused *problem, err error) {
	args := c.Context().QueryArgs()
	if !brandScoped(r) || p == nil || !args.Has(paramBrandID) {
		return nil, nil
	}
	values := args.PeekMulti(paramBrandID)
	id := string(values[0])
	if id == "" && len(values) == 1 {
		return nil, nil
	}
	if _, err := uuid.Parse(id); err != nil || len(values) > 1 {
		return &problem{Status: http.StatusUnprocessableEntity, Detail: protocol.MsgValidationFailed,
			Errors: []*huma.ErrorDetail{{Location: "query." + paramBrandID, Message: "expected one brand id (a UUID)", Value: id}}}, nil
	}
	ids, err := s.deps.Tenancy.BrandScope(c.UserContext(), id, p.TenantIds, p.IsAdmin)
	if errors.Is(err, tenancy.ErrNotFound) {
		return &problem{Status: http.StatusNotFound, Detail: pages.MsgNoBrand}, nil
	}
	if err != nil {
		return nil, err
	}
	p.TenantIds = ids
	return nil, nil
}

// brandParameter documents brand_id on a plugin operation that takes it,
// with the 404 it may answer (pluginResponses then gives it its problem
// body and headers). The operation's parameters and responses are
// replaced, not changed, as the route's own operation shares them. A
// route that declares brand_id itself, as one that needs a brand does,
// keeps its own declaration.
func brandParameter(op *huma.Operation) {
	declared := slices.ContainsFunc(op.Parameters, func(p *huma.Param) bool { return p.Name == paramBrandID && p.In == "query" })
	if !declared {
		op.Parameters = append(slices.Clone(op.Parameters), &huma.Param{Name: paramBrandID, In: "query",
			Description: "Narrows the request to the tenants of this brand (GET /api/v1/brands) that the caller may see: without tenant_id or tenant_ids, " +
				"the request acts on all of them; a tenant_id or tenant_ids outside the brand is a 403. A brand the caller cannot see is a 404, as an unknown one is.",
			Schema: &huma.Schema{Type: huma.TypeString, Format: "uuid"}})
	}
	if _, own := op.Responses["404"]; !own {
		op.Responses = maps.Clone(op.Responses)
		if op.Responses == nil {
			op.Responses = map[string]*huma.Response{}
		}
		op.Responses["404"] = &huma.Response{Description: "brand_id names no brand the caller can see"}
	}
}
