// Package coverage serves the compliance plugin's framework routes: the
// framework list with each framework's coverage, one framework's coverage
// by category and control, and the Rego and data that decide its mapping;
// and the compliance_frameworks dataset, each tenant's coverage of each
// framework, which other plugins read.
//
// Coverage is computed from the stored policy states of the tenants asked
// about. For each tenant, one aggregate query in the database returns its
// distinct policy definitions with each one's compliant and non-compliant
// resources (states.Store's DefinitionCounts, over the counts each sync
// writes per subscription and definition), and a second one each
// resource's evidence under each definition (states.Store's
// DefinitionResources), over which a control's status is counted. A
// resource belongs to one tenant, so the tenants' counts add up and their
// evidence never overlaps. Each tenant's are kept under its own revision
// (states.Store's TenantRevisions, which every sync of the tenant raises)
// and read at the end of its sync (Warm), so a read after a sync reads
// again only the tenants it changed, if any. The mapping of the
// definitions comes from the Mapper, which evaluates a distinct set of
// definitions once and keeps the result under its content hash. The
// Service also keeps each tenant selection's definitions, mapped and
// counted, with the revision of all its tenants' states (states.Store's
// Revision), so a repeated request costs a lookup of the revision and the
// coverage arithmetic.
//
// Steward's own exemptions (package exemptions) count too: a failing
// resource an active exemption covers passes as exempted, and the
// exempted findings are left out of the findings list in its query. The
// kept definitions are read again when the tenants' exemptions change or
// one of them lapses (the exemptions' revision names the next expiry).
package coverage

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/compliance/exemptions"
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
	// Exemptions are Steward's exemptions of findings; nil counts none.
	Exemptions *exemptions.Store
	// Now is the clock exemptions are active by; nil is time.Now.
	Now func() time.Time

	once sync.Once
	// scopes keeps each tenant selection's definitions, mapped and
	// counted, with the revision of the states they were read at; tenants
	// keeps each tenant's, with its own revision.
	scopes  *revcache.Cache[scope]
	tenants *revcache.Cache[tenantData]
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

// tenantCapacity bounds the tenants whose definitions and evidence are
// kept; the least recently used is dropped first.
const tenantCapacity = 4096

// tenantData is one tenant's distinct policy definitions with their counts
// and its resources' evidence under them, as read at the tenant's
// revision. A resource belongs to one subscription and so to one tenant:
// the definitions' counts of several tenants add up, and their evidence
// never overlaps.
type tenantData struct {
	defs  []states.DefinitionCount
	pairs []states.DefinitionResource
}

// scope returns the mapping of the tenants' distinct policy definitions,
// each definition's counts and its resources' evidence. They are read again
// only when a sync changed the tenants' states since they were last read
// (their revision), so a repeated request costs the revision's lookup.
// After a sync, only the tenants it changed are read again: each tenant's
// definitions and evidence are kept under its own revision too (and Warm
// reads them at the end of the tenant's sync).
func (s *Service) scope(ctx context.Context, tenantIDs []string) (scope, error) {
	s.init()
	now := s.now()
	revision, err := s.Store.Revision(ctx, tenantIDs)
	if err == nil {
		revision, err = s.sourcesRevision(ctx, tenantIDs, revision)
	}
	if err == nil && s.Exemptions != nil {
		var exempt string
		exempt, err = s.Exemptions.Revision(ctx, tenantIDs, now)
		revision += ";exemptions=" + exempt
	}
	if err != nil {
		return scope{}, err
	}
	return s.scopes.Get(ctx, revcache.Key(tenantIDs), revision, func(ctx context.Context) (scope, error) {
		parts, err := s.tenantParts(ctx, tenantIDs)
		if err != nil {
			return scope{}, err
		}
		defs, err := s.withSources(ctx, tenantIDs, mergeDefinitions(parts))
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
		// A resource a source and the policy states both evaluate under a
		// definition has the evidence of both.
		extra, err := s.sourceResources(ctx, tenantIDs)
		if err != nil {
			return scope{}, err
		}
		// The store's evidence bits are the mapping's.
		n := len(extra)
		for _, part := range parts {
			n += len(part.pairs)
		}
		pairs := make([]states.DefinitionResource, 0, n)
		for _, part := range parts {
			pairs = append(pairs, part.pairs...)
		}
		pairs = append(pairs, extra...)
		ex, err := s.exempted(ctx, tenantIDs, now, m, pairs)
		if err != nil {
			return scope{}, err
		}
		resources := mapping.NewResources()
		for _, p := range pairs {
			e := mapping.Evidence(p.Evidence)
			if e&mapping.EvidenceNonCompliant != 0 && ex.pairs[pairKey{p.PolicyDefinitionID, p.ResourceID}] {
				e = e&^mapping.EvidenceNonCompliant | mapping.EvidenceExempted
			}
			resources.Add(p.PolicyDefinitionID, p.ResourceID, e)
		}
		for _, c := range ex.controls {
			resources.ExemptControl(c.frameworkID, c.controlID, c.resources)
		}
		return scope{mapping: m, counts: counts, resources: resources}, nil
	})
}

func (s *Service) init() {
	s.once.Do(func() {
		s.scopes = revcache.New[scope](scopeCapacity, revcache.MaxAge)
		s.tenants = revcache.New[tenantData](tenantCapacity, revcache.MaxAge)
	})
}

// tenantParts returns each tenant's definitions and evidence, read from
// the store only for a tenant whose revision changed since they were kept.
func (s *Service) tenantParts(ctx context.Context, tenantIDs []string) ([]tenantData, error) {
	revisions, err := s.Store.TenantRevisions(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	parts := make([]tenantData, 0, len(tenantIDs))
	for _, id := range tenantIDs {
		part, err := s.tenant(ctx, id, revisions[id])
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// tenant returns one tenant's definitions and evidence kept at revision,
// reading them when they are not.
func (s *Service) tenant(ctx context.Context, tenantID, revision string) (tenantData, error) {
	return s.tenants.Get(ctx, tenantID, revision, func(ctx context.Context) (tenantData, error) {
		one := []string{tenantID}
		defs, err := s.Store.DefinitionCounts(ctx, one)
		if err != nil {
			return tenantData{}, err
		}
		pairs, err := s.Store.DefinitionResources(ctx, one)
		return tenantData{defs: defs, pairs: pairs}, err
	})
}

// Warm reads and keeps the tenant's definitions and evidence at its
// current revision, so that the first coverage read after the tenant's
// sync reads only what other syncs changed. The compliance sync calls it
// for each tenant it synced.
func (s *Service) Warm(ctx context.Context, tenantID string) error {
	s.init()
	revisions, err := s.Store.TenantRevisions(ctx, []string{tenantID})
	if err != nil {
		return err
	}
	_, err = s.tenant(ctx, tenantID, revisions[tenantID])
	return err
}

// mergeDefinitions adds up the tenants' definitions: a definition of
// several tenants counts the resources of each, has the union of their
// group names and the least of their names, as one aggregate over the
// tenants would. The list is ordered by id.
func mergeDefinitions(parts []tenantData) []states.DefinitionCount {
	byID := map[string]int{}
	out := []states.DefinitionCount{}
	for _, part := range parts {
		for _, d := range part.defs {
			i, ok := byID[d.PolicyDefinitionID]
			if !ok {
				byID[d.PolicyDefinitionID] = len(out)
				d.GroupNames = slices.Clone(d.GroupNames)
				out = append(out, d)
				continue
			}
			m := &out[i]
			m.Compliant += d.Compliant
			m.NonCompliant += d.NonCompliant
			m.PolicyName = min(m.PolicyName, d.PolicyName)
			m.GroupNames = append(m.GroupNames, d.GroupNames...)
		}
	}
	for i := range out {
		slices.Sort(out[i].GroupNames)
		out[i].GroupNames = slices.Compact(out[i].GroupNames)
	}
	slices.SortFunc(out, func(a, b states.DefinitionCount) int {
		return strings.Compare(a.PolicyDefinitionID, b.PolicyDefinitionID)
	})
	return out
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
