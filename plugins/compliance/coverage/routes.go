package coverage

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/sdk"
)

const tag = "compliance"

func intPtr(n int) *int { return &n }

var (
	tenantIDsParam = &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants whose policy states count (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}}
	frameworkIDParam = &huma.Param{Name: "framework_id", In: "path", Required: true,
		Description: "A loaded framework's id, as the framework list gives it (soc2, nist_csf, …)",
		Schema:      &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}
)

// List is the framework list's response.
type List struct {
	Frameworks []mapping.Summary `json:"frameworks" doc:"The loaded frameworks, by id, without their controls"`
	Disclaimer string            `json:"disclaimer"`
}

const coverageRules = " A control is covered when a policy definition of the tenants maps to it: tier 1 through an initiative group name " +
	"naming it (confidence high), tier 2, in a framework where no group name of the policy maps it, through a keyword set in its name " +
	"(medium for a set of two or more words, low for one word)."

// Routes declares the framework routes, served by s.
func (s *Service) Routes() []sdk.Route {
	get := http.MethodGet
	notFound := &huma.Response{Description: "No framework with this id"}
	return []sdk.Route{
		{Method: get, Path: "/api/v1/compliance/frameworks", TenantScoped: true, Handler: s.list, Operation: &huma.Operation{
			OperationID: "compliance-frameworks", Tags: []string{tag}, Summary: "Regulatory frameworks with their coverage",
			Description: "The loaded frameworks without their controls, each with how many of its controls the tenants' policy definitions cover." +
				coverageRules,
			Parameters: []*huma.Param{tenantIDsParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Frameworks", List{})},
		}},
		{Method: get, Path: "/api/v1/compliance/frameworks/{framework_id}", TenantScoped: true, Handler: s.detail, Operation: &huma.Operation{
			OperationID: "compliance-framework", Tags: []string{tag}, Summary: "A framework's coverage by category and control",
			Description: "Each control's status (not_covered, covered, partial, non_compliant, not_evaluated) and the compliance of the policy " +
				"definitions mapped to it; a policy is non-compliant when any resource is, compliant when none is and one is compliant." + coverageRules,
			Parameters: []*huma.Param{frameworkIDParam, tenantIDsParam,
				{Name: "include_policies", In: "query", Description: "List each control's matched policies, non-compliant ones first",
					Schema: &huma.Schema{Type: huma.TypeBoolean, Default: false}},
				{Name: "explain", In: "query", Description: "List each control's matched policies (as include_policies does) and name per matched policy the tier and the group name or keyword set that matched",
					Schema: &huma.Schema{Type: huma.TypeBoolean, Default: false}},
			},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Framework coverage", mapping.Detail{}), "404": notFound},
		}},
		{Method: get, Path: "/api/v1/compliance/frameworks/{framework_id}/source", Handler: s.source, Operation: &huma.Operation{
			OperationID: "compliance-framework-source", Tags: []string{tag}, Summary: "The Rego and data that decide a framework's mapping",
			Description: "The Rego policy files in force and the framework's definition as the Rego reads it, with a content hash over both that " +
				"changes when either does.",
			Parameters: []*huma.Param{frameworkIDParam},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Framework source", mapping.Source{}), "404": notFound},
		}},
	}
}

// writeError answers an unknown framework with a 404 and passes any other
// error on.
func writeError(w http.ResponseWriter, err error) {
	if errors.Is(err, mapping.ErrUnknownFramework) {
		err = sdk.NotFound("no framework with this id")
	}
	sdk.WriteError(w, err)
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	all, err := s.Frameworks(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, List{Frameworks: all, Disclaimer: mapping.Disclaimer})
}

func (s *Service) detail(w http.ResponseWriter, r *http.Request) {
	// The tenants are checked first, so that naming a tenant the caller
	// may not see is refused whatever the framework.
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	id := r.PathValue("framework_id")
	// An explanation is of the matched policies, so explain lists them.
	explain := boolQuery(r, "explain")
	opts := mapping.Options{IncludePolicies: explain || boolQuery(r, "include_policies"), Explain: explain}
	d, err := s.Detail(r.Context(), id, tenants, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, d)
}

func (s *Service) source(w http.ResponseWriter, r *http.Request) {
	src, err := s.Mapper.Source(r.PathValue("framework_id"))
	if err != nil {
		writeError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, src)
}

// boolQuery reads a boolean parameter the host has checked and the SDK
// defaulted.
func boolQuery(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}
