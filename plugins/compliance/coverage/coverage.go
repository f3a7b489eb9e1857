// Package coverage serves the compliance plugin's framework routes: the
// framework list with each framework's coverage, one framework's coverage
// by category and control, and the Rego and data that decide its mapping.
//
// Coverage is computed from the stored policy states of the tenants asked
// about. One aggregate query returns their distinct policy definitions with
// each one's compliant and non-compliant resources (states.Store's
// DefinitionCounts); the mapping of those definitions comes from the
// Mapper, which evaluates a distinct set of definitions once and keeps the
// result under its content hash, so a repeated request costs the query and
// the coverage arithmetic.
package coverage

import (
	"context"

	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// Service answers framework coverage for a set of tenants from the stored
// policy states.
type Service struct {
	Mapper *mapping.Mapper
	Store  *states.Store
}

// scope maps the tenants' distinct policy definitions and returns the
// mapping with each definition's counts.
func (s *Service) scope(ctx context.Context, tenantIDs []string) (*mapping.Mapping, map[string]mapping.Counts, error) {
	defs, err := s.Store.DefinitionCounts(ctx, tenantIDs)
	if err != nil {
		return nil, nil, err
	}
	list := make([]mapping.Policy, len(defs))
	counts := make(map[string]mapping.Counts, len(defs))
	for i, d := range defs {
		list[i] = mapping.Policy{ID: d.PolicyDefinitionID, Name: d.PolicyName, GroupNames: d.GroupNames}
		counts[d.PolicyDefinitionID] = mapping.Counts{Compliant: int(d.Compliant), NonCompliant: int(d.NonCompliant)}
	}
	m, err := s.Mapper.Map(ctx, list)
	if err != nil {
		return nil, nil, err
	}
	return m, counts, nil
}

// Frameworks returns every framework's entry in the framework list, ordered
// by id, with its coverage by the tenants' policy definitions.
func (s *Service) Frameworks(ctx context.Context, tenantIDs []string) ([]mapping.Summary, error) {
	m, counts, err := s.scope(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	return s.Mapper.Summaries(m, counts), nil
}

// Detail returns a framework's coverage by the tenants' policy definitions;
// mapping.ErrUnknownFramework for an id not loaded.
func (s *Service) Detail(ctx context.Context, frameworkID string, tenantIDs []string, opts mapping.Options) (*mapping.Detail, error) {
	if _, ok := s.Mapper.Frameworks().Get(frameworkID); !ok {
		return nil, mapping.ErrUnknownFramework
	}
	m, counts, err := s.scope(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	return s.Mapper.Coverage(frameworkID, m, counts, opts)
}
