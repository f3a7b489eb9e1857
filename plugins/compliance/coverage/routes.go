package coverage

import (
	"context"
	"errors"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/sdk"
)

var tags = []string{"compliance"}

// Framework is the path parameter naming a framework.
type Framework struct {
	ID string `path:"framework_id" maxLength:"64" doc:"A loaded framework's id, as the framework list gives it (soc2, nist_csf, …)"`
}

// Tenants are the tenants whose policy states count.
type Tenants struct {
	Tenants sdk.TenantIDs `query:"tenant_ids" doc:"Tenants whose policy states count (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403."`
}

type detailIn struct {
	Framework
	Tenants
	IncludePolicies bool `query:"include_policies" default:"false" doc:"List each control's matched policies, non-compliant ones first"`
	Explain         bool `query:"explain" default:"false" doc:"List each control's matched policies (as include_policies does) and name per matched policy the tier and the group name or keyword set that matched"`
}

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
	notFound := map[string]*huma.Response{"404": {Description: "No framework with this id"}}
	return []sdk.Route{
		sdk.Get("/api/v1/compliance/frameworks", sdk.Op{ID: "compliance-frameworks", Tags: tags, Summary: "Regulatory frameworks with their coverage",
			Description: "The loaded frameworks without their controls, each with how many of its controls the tenants' policy definitions cover." +
				coverageRules}, s.list),
		sdk.Get("/api/v1/compliance/frameworks/{framework_id}", sdk.Op{ID: "compliance-framework", Tags: tags, Summary: "A framework's coverage by category and control",
			Description: "Each control's result over resources (failed, passed, not_applicable, manual), its status (the result in the older words: " +
				"covered, partial, non_compliant, not_evaluated, not_covered) and its resources: a resource fails a control when any mapped policy " +
				"found it non-compliant, and passes it when none did and one found it compliant or exempt. compliant_count, non_compliant_count " +
				"and exempt_count count such resources, compliance_percent is passing of passing and failing resources. With include_policies, " +
				"each mapped policy with its own compliance: non-compliant when any resource is, compliant when none is and one is compliant." + coverageRules,
			Responses: notFound}, s.detail),
		sdk.Get("/api/v1/compliance/frameworks/{framework_id}/source", sdk.Op{ID: "compliance-framework-source", Tags: tags,
			Summary: "The Rego and data that decide a framework's mapping",
			Description: "The Rego policy files in force and the framework's definition as the Rego reads it, with a content hash over both that " +
				"changes when either does.", Responses: notFound}, s.source),
	}
}

// notFound answers an unknown framework with a 404 and passes any other
// error on.
func notFound(err error) error {
	if errors.Is(err, mapping.ErrUnknownFramework) {
		return sdk.NotFound("no framework with this id")
	}
	return err
}

func (s *Service) list(ctx context.Context, in *Tenants) (*List, error) {
	all, err := s.Frameworks(ctx, in.Tenants)
	if err != nil {
		return nil, err
	}
	return &List{Frameworks: all, Disclaimer: mapping.Disclaimer}, nil
}

func (s *Service) detail(ctx context.Context, in *detailIn) (*mapping.Detail, error) {
	// An explanation is of the matched policies, so explain lists them.
	opts := mapping.Options{IncludePolicies: in.Explain || in.IncludePolicies, Explain: in.Explain}
	d, err := s.Detail(ctx, in.ID, in.Tenants.Tenants, opts)
	return d, notFound(err)
}

func (s *Service) source(ctx context.Context, in *Framework) (*mapping.Source, error) {
	src, err := s.Mapper.Source(in.ID)
	return src, notFound(err)
}
