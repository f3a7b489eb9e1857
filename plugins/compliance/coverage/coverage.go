// Package coverage serves the compliance plugin's framework routes: the
// framework list with each framework's coverage, one framework's coverage
// by category and control, and the Rego and data that decide its mapping;
// and the compliance_frameworks dataset, each tenant's coverage of each
// framework, which other plugins read; and the findings, paged or
// exported whole as CSV or OCSF Compliance Findings (export.go).
//
// Coverage is computed from the stored policy states of the tenants asked
// about. One aggregate query in the database returns their distinct policy
// definitions with each one's compliant and non-compliant resources
// (states.Store's DefinitionCounts, over the counts each sync writes per
// subscription and definition), and a second one each resource's evidence
// under each definition (states.Store's DefinitionResources), over which a
// control's status is counted; the mapping of those definitions comes
// from the Mapper, which evaluates a distinct set of definitions once and
// keeps the result under its content hash. The Service keeps each tenant
// selection's definitions with the revision of the states they were read
// at (states.Store's Revision, which every sync of a tenant raises), so a
// repeated request costs a lookup of the revision and the coverage
// arithmetic, and a request after a sync reads the new states.
package coverage

import (
	"context"
	"sync"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// Service answers framework coverage for a set of tenants from the stored
// policy states. The zero value with Mapper and Store set is ready; it is
// safe for concurrent use.
type Service struct {
	Mapper *mapping.Mapper
	Store  *states.Store
	// Sources are the findings counted beside the policy states (see
	// Source); none counts the policy states alone.
	Sources []Source

	once sync.Once
	// scopes keeps each tenant selection's definitions, mapped and
	// counted, with the revision of the states they were read at.
	scopes *revcache.Cache[scope]
}

// scopeCapacity bounds the tenant selections whose definitions are kept;
// the least recently used is dropped first.
const scopeCapacity = 256

// scope is a tenant selection's distinct definitions, mapped, and each
// one's counts.
type scope struct {
	mapping   *mapping.Mapping
	counts    map[string]mapping.Counts
	resources *mapping.Resources
}

// scope returns the mapping of the tenants' distinct policy definitions,
// each definition's counts and its resources' evidence. They are read again
// only when a sync changed the tenants' states since they were last read
// (their revision), so a repeated request costs the revision's lookup.
func (s *Service) scope(ctx context.Context, tenantIDs []string) (scope, error) {
	s.once.Do(func() { s.scopes = revcache.New[scope](scopeCapacity, revcache.MaxAge) })
	revision, err := s.Store.Revision(ctx, tenantIDs)
	if err == nil {
		revision, err = s.sourcesRevision(ctx, tenantIDs, revision)
	}
	if err != nil {
		return scope{}, err
	}
	return s.scopes.Get(ctx, revcache.Key(tenantIDs), revision, func(ctx context.Context) (scope, error) {
		defs, err := s.Store.DefinitionCounts(ctx, tenantIDs)
		if err == nil {
			defs, err = s.withSources(ctx, tenantIDs, defs)
		}
		if err != nil {
			return scope{}, err
		}
		list := make([]mapping.Policy, len(defs))
		counts := make(map[string]mapping.Counts, len(defs))
		for i, d := range defs {
			list[i] = mapping.Policy{ID: d.PolicyDefinitionID, Name: d.PolicyName, GroupNames: d.GroupNames}
			counts[d.PolicyDefinitionID] = mapping.Counts{Compliant: int(d.Compliant), NonCompliant: int(d.NonCompliant)}
		}
		m, err := s.Mapper.Map(ctx, list)
		if err != nil {
			return scope{}, err
		}
		pairs, err := s.Store.DefinitionResources(ctx, tenantIDs)
		if err != nil {
			return scope{}, err
		}
		// A resource a source and the policy states both evaluate under a
		// definition has the evidence of both.
		extra, err := s.sourceResources(ctx, tenantIDs)
		if err != nil {
			return scope{}, err
		}
		pairs = append(pairs, extra...)
		resources := mapping.NewResources()
		// The store's evidence bits are the mapping's.
		for _, p := range pairs {
			resources.Add(p.PolicyDefinitionID, p.ResourceID, mapping.Evidence(p.Evidence))
		}
		return scope{mapping: m, counts: counts, resources: resources}, nil
	})
}

// Frameworks returns every framework's entry in the framework list, ordered
// by id, with its coverage by the tenants' policy definitions.
func (s *Service) Frameworks(ctx context.Context, tenantIDs []string) ([]mapping.Summary, error) {
	sc, err := s.scope(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	return s.Mapper.Summaries(sc.mapping, sc.counts), nil
}

// Detail returns a framework's coverage by the tenants' policy definitions;
// mapping.ErrUnknownFramework for an id not loaded.
func (s *Service) Detail(ctx context.Context, frameworkID string, tenantIDs []string, opts mapping.Options) (*mapping.Detail, error) {
	if _, ok := s.Mapper.Frameworks().Get(frameworkID); !ok {
		return nil, mapping.ErrUnknownFramework
	}
	sc, err := s.scope(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	return s.Mapper.Coverage(frameworkID, sc.mapping, sc.counts, sc.resources, opts)
}
