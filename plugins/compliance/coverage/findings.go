package coverage

import (
	"context"
	"slices"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// Finding is one resource under one policy definition: of the policy
// states, whichever assignments evaluated it, its state the worst of
// theirs; of Defender for Cloud, one assessment.
type Finding struct {
	Source             string       `json:"source" enum:"policy,defender" doc:"policy: Azure Policy's states of the resource under the definition; defender: a Defender for Cloud assessment built on the definition"`
	TenantID           string       `json:"tenant_id"`
	SubscriptionID     string       `json:"subscription_id"`
	ResourceID         string       `json:"resource_id" doc:"The ARM id"`
	ResourceType       string       `json:"resource_type" doc:"As the source gives it: a policy state's casing (Microsoft.Storage/storageAccounts), Defender's in lower case"`
	ResourceName       string       `json:"resource_name"`
	Link               string       `json:"link" doc:"The resource's page"`
	PolicyDefinitionID string       `json:"policy_definition_id"`
	PolicyName         string       `json:"policy_name"`
	Category           string       `json:"category"`
	Severity           string       `json:"severity" enum:"High,Medium,Low"`
	ComplianceState    string       `json:"compliance_state" enum:"NonCompliant,Conflict,Unknown,Exempt,Compliant" doc:"The worst of the assignments' states, from NonCompliant through Conflict, Unknown and Exempt to Compliant"`
	Assignments        []string     `json:"policy_assignment_ids" doc:"The assignments that evaluated the resource under the policy, sorted"`
	EvaluatedAt        time.Time    `json:"evaluated_at" doc:"The latest evaluation among the assignments"`
	Controls           []ControlRef `json:"controls" doc:"The framework controls the policy maps to (only the framework's, when framework is given), by framework and control"`
	AssessmentID       string       `json:"assessment_id,omitempty" doc:"A defender finding's assessment id (its ARM id)"`
	AssessmentName     string       `json:"assessment_name,omitempty" doc:"A defender finding's assessment name, the recommendation's key"`
	Remediation        string       `json:"remediation" doc:"How to bring the resource into compliance: the policy definition's guidance (its metadata's securityCenter.RemediationDescription, as the last compliance sync read it) or the assessment's remediation; empty when there is none"`
	// StewardExemption is set only with include_exempted.
	StewardExemption *exemptions.Ref `json:"steward_exemption,omitempty" doc:"With include_exempted: the active Steward exemption (the oldest, when several) that covers the finding; absent when none does. Azure Policy's own exemptions show as the Exempt state instead"`
}

// ControlRef names a framework's control a policy maps to.
type ControlRef struct {
	FrameworkID string `json:"framework_id"`
	ControlID   string `json:"control_id"`
}

// FindingsQuery selects a page of findings; Framework and Control narrow
// them to the policies mapped to the framework, or to one of its controls.
type FindingsQuery struct {
	states.FindingsQuery
	Framework, Control string
	// IncludeExempted keeps the findings Steward's active exemptions
	// cover, each naming its exemption; they are left out otherwise.
	IncludeExempted bool
}

// Findings returns a page of the tenants' findings and how many match in
// all; mapping.ErrUnknownFramework or ErrUnknownControl for a framework or
// control not loaded.
func (s *Service) Findings(ctx context.Context, q FindingsQuery) ([]Finding, int, error) {
	sq, m, exempt, err := s.findingsQuery(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	rows, total, err := s.Store.Findings(ctx, sq, s.extraFindings())
	if err != nil {
		return nil, 0, err
	}
	out := make([]Finding, 0, len(rows))
	for _, r := range rows {
		out = append(out, finding(r, s.controlsOf(m, r.PolicyDefinitionID, q.Framework), exempt))
	}
	return out, total, nil
}

// findingsQuery is the store's query of q: its policies narrowed to those
// mapped to its framework or control and, unless q.IncludeExempted, the
// findings Steward's active exemptions cover left out. It returns the
// mapping of the tenants' policies with it and, with q.IncludeExempted,
// the active exemption covering a finding, if any (nil otherwise).
func (s *Service) findingsQuery(ctx context.Context, q FindingsQuery) (states.FindingsQuery, *mapping.Mapping, exemptionOf, error) {
	sc, err := s.scope(ctx, q.TenantIDs)
	if err != nil {
		return states.FindingsQuery{}, nil, nil, err
	}
	sq := q.FindingsQuery
	if q.Framework != "" {
		fw, ok := s.Mapper.Frameworks().Get(q.Framework)
		if !ok {
			return states.FindingsQuery{}, nil, nil, mapping.ErrUnknownFramework
		}
		ids := map[string]bool{}
		found := false
		for _, c := range fw.Controls {
			if q.Control != "" && c.ID != q.Control {
				continue
			}
			found = true
			for id := range sc.mapping.Matches(fw.ID, c.ID) {
				ids[id] = true
			}
		}
		if !found {
			return states.FindingsQuery{}, nil, nil, ErrUnknownControl
		}
		within := []string{}
		for id := range ids {
			if sq.PolicyIDs == nil || slices.Contains(sq.PolicyIDs, id) {
				within = append(within, id)
			}
		}
		slices.Sort(within)
		sq.PolicyIDs = within
	}
	now := s.now()
	active, err := s.active(ctx, q.TenantIDs, now)
	if err != nil {
		return states.FindingsQuery{}, nil, nil, err
	}
	controls := controlPolicies(sc.mapping)
	if !q.IncludeExempted {
		sq.Hide = exemptions.Hidden(active, now, controls)
		return sq, sc.mapping, nil, nil
	}
	exempt := func(r states.StoredFinding) *exemptions.Ref {
		if e := exemptions.Match(active, r.TenantID, r.ResourceID, r.PolicyDefinitionID, controls); e != nil {
			return e.Ref()
		}
		return nil
	}
	return sq, sc.mapping, exempt, nil
}

// extraFindings are the sources' findings the findings list unions with
// the policy states'.
func (s *Service) extraFindings() []states.ResourceFindings {
	var extra []states.ResourceFindings
	for _, src := range s.Sources {
		if src.Findings != nil {
			extra = append(extra, *src.Findings)
		}
	}
	return extra
}

// exemptionOf names the active Steward exemption covering a finding, or
// nil.
type exemptionOf func(states.StoredFinding) *exemptions.Ref

// finding is a stored finding with the controls its policy maps to and,
// when exempt is given, the exemption covering it.
func finding(r states.StoredFinding, controls []ControlRef, exempt exemptionOf) Finding {
	f := Finding{Source: r.Source, AssessmentID: r.AssessmentID, AssessmentName: r.AssessmentName, Remediation: r.Remediation, TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ResourceID: r.ResourceID, ResourceType: r.ResourceType,
		ResourceName: ResourceName(r.ResourceID), Link: ResourceLink(r.ResourceID), PolicyDefinitionID: r.PolicyDefinitionID,
		PolicyName: r.PolicyName, Category: r.Category, Severity: r.Severity, ComplianceState: r.ComplianceState,
		Assignments: r.Assignments, EvaluatedAt: r.EvaluatedAt, Controls: controls}
	if exempt != nil {
		f.StewardExemption = exempt(r)
	}
	return f
}

// controlsOf lists the controls a policy maps to, of the one framework
// when one is named, by framework and control in their definitions' order.
func (s *Service) controlsOf(m *mapping.Mapping, policyID, only string) []ControlRef {
	out := []ControlRef{}
	for _, fw := range s.Mapper.Frameworks().All() {
		if only != "" && fw.ID != only {
			continue
		}
		for _, c := range fw.Controls {
			if _, ok := m.Matches(fw.ID, c.ID)[policyID]; ok {
				out = append(out, ControlRef{FrameworkID: fw.ID, ControlID: c.ID})
			}
		}
	}
	return out
}
