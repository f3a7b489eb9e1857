package coverage

import (
	"context"
	"slices"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// active is the tenants' exemptions active at now; none without a store.
func (s *Service) active(ctx context.Context, tenantIDs []string, now time.Time) ([]exemptions.Exemption, error) {
	if s.Exemptions == nil {
		return nil, nil
	}
	return s.Exemptions.Active(ctx, tenantIDs, now)
}

// controlPolicies gives a control's mapped policy definitions by the
// mapping, sorted.
func controlPolicies(m *mapping.Mapping) exemptions.ControlPolicies {
	return func(frameworkID, controlID string) []string {
		matches := m.Matches(frameworkID, controlID)
		ids := make([]string, 0, len(matches))
		for id := range matches {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids
	}
}

type pairKey struct{ policyID, resourceID string }

// controlExemption is a control exemption's tenant's resources under the
// control's policies, whose non-compliance it covers for that control.
type controlExemption struct {
	frameworkID, controlID string
	resources              []string
}

// exemptedSet is what the active exemptions cover in a tenant selection:
// the non-compliant findings of finding, resource and policy exemptions
// by definition and resource, and each control exemption's resources.
type exemptedSet struct {
	pairs    map[pairKey]bool
	controls []controlExemption
}

// exempted finds what the tenants' exemptions active at now cover among
// pairs, the selection's evidence. An exemption covers only its own
// tenant's resources; with several tenants selected, each tenant with
// an exemption has its own evidence read to tell them apart.
func (s *Service) exempted(ctx context.Context, tenantIDs []string, now time.Time, m *mapping.Mapping,
	pairs []states.DefinitionResource) (exemptedSet, error) {
	out := exemptedSet{pairs: map[pairKey]bool{}}
	active, err := s.active(ctx, tenantIDs, now)
	if err != nil || len(active) == 0 {
		return out, err
	}
	byTenant := map[string][]exemptions.Exemption{}
	var tenants []string
	for _, e := range active {
		if byTenant[e.TenantID] == nil {
			tenants = append(tenants, e.TenantID)
		}
		byTenant[e.TenantID] = append(byTenant[e.TenantID], e)
	}
	controls := controlPolicies(m)
	for _, t := range tenants {
		own := pairs
		if len(tenantIDs) > 1 {
			if own, err = s.Store.DefinitionResources(ctx, []string{t}); err != nil {
				return out, err
			}
			extra, err := s.sourceResources(ctx, []string{t})
			if err != nil {
				return out, err
			}
			own = append(own, extra...)
		}
		list := byTenant[t]
		for _, p := range own {
			if p.Evidence&states.EvidenceNonCompliant != 0 && exemptions.Match(list, t, p.ResourceID, p.PolicyDefinitionID, nil) != nil {
				out.pairs[pairKey{p.PolicyDefinitionID, p.ResourceID}] = true
			}
		}
		for _, e := range list {
			if e.Scope != exemptions.ScopeControl {
				continue
			}
			ids := controls(e.FrameworkID, e.ControlID)
			c := controlExemption{frameworkID: e.FrameworkID, controlID: e.ControlID}
			for _, p := range own {
				if _, ok := slices.BinarySearch(ids, p.PolicyDefinitionID); ok {
					c.resources = append(c.resources, p.ResourceID)
				}
			}
			out.controls = append(out.controls, c)
		}
	}
	return out, nil
}
