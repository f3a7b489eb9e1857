package coverage

import (
	"context"
	"errors"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
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
				"and exempt_count count such resources, compliance_percent is passing of passing and failing resources. A failing resource whose " +
				"non-compliant findings Steward's active exemptions cover (GET /api/v1/compliance/exemptions) passes instead, counted in " +
				"exempted_count; exempt_count is Azure Policy's own Exempt state. With include_policies, " +
				"each mapped policy with its own compliance: non-compliant when any resource is, compliant when none is and one is compliant." + coverageRules,
			Responses: notFound}, s.detail),
		sdk.Get("/api/v1/compliance/frameworks/{framework_id}/controls/{control_id}", sdk.Op{ID: "compliance-framework-control", Tags: tags,
			Summary: "A control's passing and failing resources",
			Description: "The control's result and counts as the framework detail gives them, with the path behind them: the policies in scope " +
				"mapped to it (tier and group name or keyword set) and the resources failing and passing it, each with the state each mapped " +
				"policy found. A resource fails the control when any mapped policy found it non-compliant (whichever assignment), and passes " +
				"when none did and one found it compliant or exempt. A resource whose non-compliant states Steward's active exemptions cover " +
				"passes as exempted (exempted, steward_exemption); a control exemption covers its tenant's resources for this control only." + coverageRules,
			Responses: map[string]*huma.Response{"404": {Description: "No framework with this id, or no such control in it"}}}, s.control),
		sdk.Get("/api/v1/compliance/findings", sdk.Op{ID: "compliance-findings", Tags: tags, Summary: "Policy and Defender findings per resource",
			Description: "The tenants' findings of two sources. Source policy: one finding per resource and policy definition, the " +
				"assignments that evaluated the resource under the policy collapsed, the worst state winning (NonCompliant, Conflict, " +
				"Unknown, Exempt, Compliant from worst) and named in policy_assignment_ids. Source defender: one finding per Defender for " +
				"Cloud assessment, under the policy definition its recommendation is built on, with its assessment_id and assessment_name: " +
				"Unhealthy is NonCompliant, Healthy Compliant, and NotApplicable assessments are no finding; evaluated_at is when the " +
				"assessments were synced. Each finding names the framework controls its policy maps to (so framework and control filter " +
				"both sources) and its remediation: the policy definition's guidance for a policy finding, the assessment's for a " +
				"defender one. A finding Steward's active exemption covers (POST /api/v1/compliance/exemptions; by tenant, resource and " +
				"policy, so it covers both sources' findings of them) is left out unless include_exempted; Azure Policy's own exemptions " +
				"show as the Exempt state. Filtered, sorted and paged over both sources together in the database; ties are ordered by " +
				"tenant, resource, policy, source and assessment." + coverageRules,
			Responses: map[string]*huma.Response{"404": {Description: "No framework with this id, or no such control in it"}}}, s.findings),
		s.exportRoute(),
		sdk.Get("/api/v1/compliance/frameworks/{framework_id}/source", sdk.Op{ID: "compliance-framework-source", Tags: tags,
			Summary: "The Rego and data that decide a framework's mapping",
			Description: "The Rego policy files in force and the framework's definition as the Rego reads it, with a content hash over both that " +
				"changes when either does.", Responses: notFound}, s.source),
	}
}

// notFound answers an unknown framework or control with a 404 and passes
// any other error on.
func notFound(err error) error {
	switch {
	case errors.Is(err, mapping.ErrUnknownFramework):
		return sdk.NotFound("no framework with this id")
	case errors.Is(err, ErrUnknownControl):
		return sdk.NotFound("no control with this id in the framework")
	}
	return err
}

type controlIn struct {
	Framework
	Tenants
	ControlID string `path:"control_id" maxLength:"64" doc:"The control's id, as the framework detail gives it (CC6.1, PR.AA-01, …)"`
	Limit     int    `query:"limit" minimum:"1" maximum:"500" default:"100" doc:"How many failing and how many passing resources to list at most"`
}

func (s *Service) control(ctx context.Context, in *controlIn) (*Control, error) {
	c, err := s.Control(ctx, in.ID, in.ControlID, in.Tenants.Tenants, in.Limit)
	return c, notFound(err)
}

// FindingsFilter selects and orders findings: the findings route's
// parameters and its export's.
type FindingsFilter struct {
	Tenants
	Framework    string `query:"framework" maxLength:"64" doc:"Only findings of policies mapped to this framework (its id, as the framework list gives it)"`
	Control      string `query:"control" maxLength:"64" doc:"Only findings of policies mapped to this control of framework; requires framework"`
	Policy       string `query:"policy" maxLength:"1024" pattern:"^/[^/]" doc:"Only findings of this policy definition id (/providers/Microsoft.Authorization/policyDefinitions/…)"`
	Source       string `query:"source" enum:"policy,defender" doc:"Only findings of this source: policy (Azure Policy's states) or defender (Defender for Cloud's assessments)"`
	Severity     string `query:"severity" enum:"High,Medium,Low"`
	State        string `query:"state" enum:"non_compliant,conflict,unknown,exempt,compliant" doc:"Only findings in this (collapsed) state; a defender finding is non_compliant or compliant"`
	ResourceType string `query:"resource_type" maxLength:"256" doc:"Only resources of this type (Microsoft.Storage/storageAccounts, …), case ignored"`
	SortBy       string `query:"sort_by" enum:"severity,state,resource,evaluated" default:"severity" doc:"severity (High above Low), state (NonCompliant above Compliant), resource (ARM id) or evaluated (the latest evaluation)"`
	SortOrder    string `query:"sort_order" enum:"asc,desc" default:"desc"`
	// IncludeExempted lists the findings Steward's exemptions cover too.
	IncludeExempted bool `query:"include_exempted" default:"false" doc:"List the findings Steward's active exemptions cover too (the findings route names each one's steward_exemption); they are left out otherwise, of the page and of total alike"`
}

// query is the filter's query of the findings from offset on, limit of
// them; a control without its framework is refused.
func (f *FindingsFilter) query(limit, offset int) (FindingsQuery, error) {
	if f.Control != "" && f.Framework == "" {
		return FindingsQuery{}, sdk.Invalid("query.control", "requires framework: name the framework the control is of")
	}
	q := FindingsQuery{Framework: f.Framework, Control: f.Control, FindingsQuery: states.FindingsQuery{TenantIDs: f.Tenants.Tenants,
		Source: f.Source, Severity: f.Severity, State: f.State, ResourceType: f.ResourceType, SortBy: f.SortBy, Desc: f.SortOrder == "desc",
		Limit: limit, Offset: offset}, IncludeExempted: f.IncludeExempted}
	if f.Policy != "" {
		q.PolicyIDs = []string{f.Policy}
	}
	return q, nil
}

type findingsIn struct {
	FindingsFilter
	Limit  int `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset int `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

// Findings is a page of findings.
type Findings struct {
	Items  []Finding `json:"items" doc:"Sorted by sort_by, then by tenant, resource, policy, source and assessment"`
	Total  int       `json:"total" doc:"How many findings match, beyond this page"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

func (s *Service) findings(ctx context.Context, in *findingsIn) (*Findings, error) {
	q, err := in.query(in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	items, total, err := s.Findings(ctx, q)
	if err != nil {
		return nil, notFound(err)
	}
	return &Findings{Items: items, Total: total, Limit: in.Limit, Offset: in.Offset}, nil
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
