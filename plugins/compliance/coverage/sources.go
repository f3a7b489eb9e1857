package coverage

import (
	"context"
	"slices"
	"strings"

	"github.com/stewardhq/steward/plugins/compliance/states"
)

// Source is a source of findings the coverage counts beside the policy
// states, such as Defender for Cloud's assessments: the policy
// definitions its findings are built on, each with its resources by
// compliance, and the revision of the data they are read from.
type Source struct {
	Name string
	// Revision changes whenever the source's definitions for the tenants
	// may have changed.
	Revision func(ctx context.Context, tenantIDs []string) (string, error)
	// Definitions are the source's policy definitions of the tenants.
	Definitions func(ctx context.Context, tenantIDs []string) ([]states.DefinitionCount, error)
	// Resources are the source's evidence of each resource under each of
	// its definitions, which a control's status over resources counts
	// beside the policy states'.
	Resources func(ctx context.Context, tenantIDs []string) ([]states.DefinitionResource, error)
	// Findings are the source's rows of the findings list, or nil when it
	// has none.
	Findings *states.ResourceFindings
}

// sourcesRevision extends the policy states' revision with each source's.
func (s *Service) sourcesRevision(ctx context.Context, tenantIDs []string, revision string) (string, error) {
	parts := []string{revision}
	for _, src := range s.Sources {
		r, err := src.Revision(ctx, tenantIDs)
		if err != nil {
			return "", err
		}
		parts = append(parts, src.Name+"="+r)
	}
	return strings.Join(parts, ";"), nil
}

// withSources adds the sources' definitions to those of the policy states:
// a definition both name counts the findings of each, its name and group
// names kept from the policy states where they have it; one only a source
// names joins the list. The list stays ordered by id.
func (s *Service) withSources(ctx context.Context, tenantIDs []string, defs []states.DefinitionCount) ([]states.DefinitionCount, error) {
	if len(s.Sources) == 0 {
		return defs, nil
	}
	byID := make(map[string]int, len(defs))
	for i, d := range defs {
		byID[d.PolicyDefinitionID] = i
	}
	for _, src := range s.Sources {
		extra, err := src.Definitions(ctx, tenantIDs)
		if err != nil {
			return nil, err
		}
		for _, d := range extra {
			if i, ok := byID[d.PolicyDefinitionID]; ok {
				defs[i].Compliant += d.Compliant
				defs[i].NonCompliant += d.NonCompliant
				continue
			}
			byID[d.PolicyDefinitionID] = len(defs)
			defs = append(defs, d)
		}
	}
	slices.SortFunc(defs, func(a, b states.DefinitionCount) int {
		return strings.Compare(a.PolicyDefinitionID, b.PolicyDefinitionID)
	})
	return defs, nil
}

// sourceResources is the sources' evidence of the tenants' resources.
func (s *Service) sourceResources(ctx context.Context, tenantIDs []string) ([]states.DefinitionResource, error) {
	var out []states.DefinitionResource
	for _, src := range s.Sources {
		if src.Resources == nil {
			continue
		}
		pairs, err := src.Resources(ctx, tenantIDs)
		if err != nil {
			return nil, err
		}
		out = append(out, pairs...)
	}
	return out, nil
}
