package coverage

import (
	"cmp"
	"context"
	"errors"
	"math"
	"net/url"
	"path"
	"slices"

	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// ErrUnknownControl is returned for a control id the framework lacks.
var ErrUnknownControl = errors.New("coverage: unknown control")

// ResourcePath is the resources plugin's page of one resource, named by
// its ARM id in resource_id: where each resource of a control or finding
// links.
const ResourcePath = "/resources/item"

// ResourceLink is the resource page of an ARM id.
func ResourceLink(resourceID string) string {
	return ResourcePath + "?resource_id=" + url.QueryEscape(resourceID)
}

// ResourceName is the last segment of an ARM id.
func ResourceName(resourceID string) string { return path.Base(resourceID) }

// Control is one control's resources: which pass and which fail it, each
// through which of its mapped policies.
type Control struct {
	Framework   mapping.FrameworkRef `json:"framework"`
	ID          string               `json:"id"`
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Category    string               `json:"category"`
	Result      string               `json:"result" enum:"failed,passed,not_applicable,manual" doc:"failed when any resource fails the control, passed when one passes and none fails, not_applicable when no mapped policy evaluated a resource, manual when no policy in scope maps to it"`
	Passed      int                  `json:"passed_resources" doc:"Resources every mapped policy that evaluated them found compliant or exempt, or whose non-compliance Steward's active exemptions cover"`
	Failed      int                  `json:"failed_resources" doc:"Resources a mapped policy found non-compliant, not covered by an active Steward exemption"`
	Exempt      int                  `json:"exempt_resources" doc:"Passing resources with Azure Policy's own Exempt state under a mapped policy, counted in passed_resources as well"`
	Exempted    int                  `json:"exempted_resources" doc:"Resources a mapped policy found non-compliant that pass because Steward's active exemptions cover each such state, counted in passed_resources as well"`
	Percent     *float64             `json:"compliance_percent" doc:"passed_resources of passed and failed resources, percent to two decimals; null when both are 0"`
	Policies    []ControlPolicy      `json:"policies" doc:"The policies in scope mapped to the control, with why, by name"`
	Failing     []ControlResource    `json:"failing_resources" doc:"The failing resources, by ARM id, at most limit of them"`
	Passing     []ControlResource    `json:"passing_resources" doc:"The passing resources, by ARM id, at most limit of them"`
	Disclaimer  string               `json:"disclaimer"`
}

// ControlPolicy is a policy mapped to a control, with the tier and the
// group name or keyword set that mapped it and the resources it failed and
// passed.
type ControlPolicy struct {
	PolicyDefinitionID string   `json:"policy_definition_id"`
	PolicyName         string   `json:"policy_name"`
	Tier               int      `json:"tier" doc:"1 for an initiative group name, 2 for a keyword set in the policy's name"`
	Confidence         string   `json:"mapping_confidence" enum:"high,medium,low"`
	GroupName          string   `json:"group_name,omitempty"`
	Keywords           []string `json:"keywords,omitempty"`
	NonCompliant       int      `json:"non_compliant_resources"`
	Compliant          int      `json:"compliant_resources" doc:"Resources it found compliant or exempt and not non-compliant"`
	Remediation        string   `json:"remediation" doc:"How to bring a resource it finds non-compliant into compliance: the policy definition's guidance as the last compliance sync read it; empty when there is none"`
}

// ControlResource is a resource passing or failing a control, with the
// state each mapped policy that evaluated it found.
type ControlResource struct {
	TenantID       string `json:"tenant_id"`
	SubscriptionID string `json:"subscription_id"`
	ResourceID     string `json:"resource_id" doc:"The ARM id"`
	ResourceType   string `json:"resource_type"`
	ResourceName   string `json:"resource_name"`
	Link           string `json:"link" doc:"The resource's page"`
	Exempt         bool   `json:"exempt" doc:"A passing resource with Azure Policy's own Exempt state under a mapped policy"`
	Exempted       bool   `json:"exempted" doc:"A resource a mapped policy found non-compliant that passes because Steward's active exemptions cover each such state"`
	// StewardExemption is the first exemption that covers the resource.
	StewardExemption *exemptions.Ref  `json:"steward_exemption,omitempty" doc:"With exempted: the Steward exemption (the oldest, when several) that covers its first non-compliant state"`
	Policies         []ResourcePolicy `json:"policies" doc:"The mapped policies that evaluated the resource, non-compliant first"`
}

// ResourcePolicy is the state a policy found a resource in: NonCompliant
// when any assignment did, else Exempt when any did, else Compliant.
type ResourcePolicy struct {
	PolicyDefinitionID string `json:"policy_definition_id"`
	PolicyName         string `json:"policy_name"`
	ComplianceState    string `json:"compliance_state" enum:"NonCompliant,Exempt,Compliant"`
}

// Control returns a control's resources in the tenants, at most limit of
// the failing and of the passing ones; mapping.ErrUnknownFramework for a
// framework not loaded, ErrUnknownControl for a control not in it. Its counts and result are those of the
// control in Detail.
func (s *Service) Control(ctx context.Context, frameworkID, controlID string, tenantIDs []string, limit int) (*Control, error) {
	fw, ok := s.Mapper.Frameworks().Get(frameworkID)
	if !ok {
		return nil, mapping.ErrUnknownFramework
	}
	i := slices.IndexFunc(fw.Controls, func(c frameworks.Control) bool { return c.ID == controlID })
	if i < 0 {
		return nil, ErrUnknownControl
	}
	c := fw.Controls[i]
	sc, err := s.scope(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	matches := sc.mapping.Matches(fw.ID, c.ID)
	ids := make([]string, 0, len(matches))
	for id := range matches {
		if _, ok := sc.counts[id]; ok {
			ids = append(ids, id)
		}
	}
	rows, err := s.Store.ResourceEvidence(ctx, tenantIDs, ids)
	if err != nil {
		return nil, err
	}
	active, err := s.active(ctx, tenantIDs, s.now())
	if err != nil {
		return nil, err
	}
	// Of the control exemptions, only this control's count here.
	only := func(frameworkID, controlID string) []string {
		if frameworkID == fw.ID && controlID == c.ID {
			return ids
		}
		return nil
	}
	exempt := func(row states.ResourceEvidence) *exemptions.Exemption {
		return exemptions.Match(active, row.TenantID, row.ResourceID, row.PolicyDefinitionID, only)
	}
	out := &Control{Framework: mapping.FrameworkRef{ID: fw.ID, Name: fw.Name, Version: fw.Version}, ID: c.ID, Name: c.Name,
		Description: c.Description, Category: c.Category, Policies: []ControlPolicy{}, Failing: []ControlResource{},
		Passing: []ControlResource{}, Disclaimer: mapping.Disclaimer}
	guidance, err := s.Store.Remediations(ctx, ids)
	if err != nil {
		return nil, err
	}
	byPolicy := make(map[string]*ControlPolicy, len(ids))
	for _, id := range ids {
		m := matches[id]
		p, _ := sc.mapping.Policy(id)
		out.Policies = append(out.Policies, ControlPolicy{PolicyDefinitionID: id, PolicyName: p.Name, Tier: m.Tier, Confidence: m.Confidence,
			GroupName: m.GroupName, Keywords: m.Keywords, Remediation: guidance[id]})
	}
	for i := range out.Policies {
		byPolicy[out.Policies[i].PolicyDefinitionID] = &out.Policies[i]
	}
	// The rows come by resource, so each resource's rows are adjacent.
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end].ResourceID == rows[start].ResourceID {
			end++
		}
		r, failed := controlResource(rows[start:end], byPolicy, exempt)
		switch {
		case failed:
			out.Failed++
			if len(out.Failing) < limit {
				out.Failing = append(out.Failing, r)
			}
		default:
			out.Passed++
			if r.Exempt {
				out.Exempt++
			}
			if r.Exempted {
				out.Exempted++
			}
			if len(out.Passing) < limit {
				out.Passing = append(out.Passing, r)
			}
		}
		start = end
	}
	out.Result = mapping.Result(len(ids), mapping.ResourceCounts{Passed: out.Passed, Failed: out.Failed, Exempt: out.Exempt, Exempted: out.Exempted})
	if out.Passed+out.Failed > 0 {
		p := math.Round(10000*float64(out.Passed)/float64(out.Passed+out.Failed)) / 100
		out.Percent = &p
	}
	slices.SortFunc(out.Policies, func(a, b ControlPolicy) int {
		return cmp.Or(cmp.Compare(a.PolicyName, b.PolicyName), cmp.Compare(a.PolicyDefinitionID, b.PolicyDefinitionID))
	})
	return out, nil
}

// controlResource is one resource from its rows, each of one mapped
// policy, counting it in each policy's figures, and whether it fails the
// control: a non-compliant state that no Steward exemption (exempt)
// covers.
func controlResource(rows []states.ResourceEvidence, byPolicy map[string]*ControlPolicy,
	exempt func(states.ResourceEvidence) *exemptions.Exemption) (ControlResource, bool) {
	first := rows[0]
	r := ControlResource{TenantID: first.TenantID, SubscriptionID: first.SubscriptionID, ResourceID: first.ResourceID,
		ResourceType: first.ResourceType, ResourceName: ResourceName(first.ResourceID), Link: ResourceLink(first.ResourceID)}
	failed := false
	for _, row := range rows {
		state := states.StateCompliant
		nonCompliant := row.Evidence&states.EvidenceNonCompliant != 0
		switch {
		case nonCompliant:
			state = states.StateNonCompliant
			if e := exempt(row); e == nil {
				failed = true
			} else if r.StewardExemption == nil {
				r.StewardExemption = e.Ref()
			}
		case row.Evidence&states.EvidenceExempt != 0:
			state, r.Exempt = states.StateExempt, true
		}
		if p := byPolicy[row.PolicyDefinitionID]; p != nil {
			if nonCompliant {
				p.NonCompliant++
			} else {
				p.Compliant++
			}
		}
		r.Policies = append(r.Policies, ResourcePolicy{PolicyDefinitionID: row.PolicyDefinitionID, PolicyName: row.PolicyName, ComplianceState: state})
	}
	r.Exempted = r.StewardExemption != nil
	if failed {
		r.Exempt, r.Exempted, r.StewardExemption = false, false, nil
	}
	rank := map[string]int{states.StateNonCompliant: 0, states.StateExempt: 1, states.StateCompliant: 2}
	slices.SortStableFunc(r.Policies, func(a, b ResourcePolicy) int { return cmp.Compare(rank[a.ComplianceState], rank[b.ComplianceState]) })
	return r, failed
}
