package mapping

import "sync"

// Evidence is what a resource's states under one policy definition say,
// as bits: any Compliant state, any Exempt state, any NonCompliant state
// (the bits of the states store's DefinitionResource.Evidence), and
// whether one of Steward's exemptions covers its NonCompliant states, in
// place of the NonCompliant bit.
// A resource without any of them (only Unknown or Conflict states) is not
// evaluated by the definition.
type Evidence uint8

// The bits of Evidence.
const (
	EvidenceCompliant    Evidence = 1
	EvidenceExempt       Evidence = 2
	EvidenceNonCompliant Evidence = 4
	// EvidenceExempted is a resource found non-compliant whose finding
	// Steward's exemption covers: it passes, as exempted.
	EvidenceExempted Evidence = 8
)

// Resources is the evidence of the resources in scope under each policy
// definition, the input of a control's status over resources. Add fills
// it; once filled, Counters over it may count concurrently.
type Resources struct {
	// index numbers the resources in the order they were added.
	index    map[string]int32
	byPolicy map[string][]resourceEvidence
	// exempted are, by control (controlKey), the resources whose
	// non-compliance a control exemption covers.
	exempted map[string]map[int32]bool
	// counted keeps each control's counts by the key Count was given,
	// so that a repeated coverage of the same scope counts nothing.
	counted sync.Map
}

type resourceEvidence struct {
	resource int32
	evidence Evidence
}

// NewResources returns an empty Resources.
func NewResources() *Resources {
	return &Resources{index: map[string]int32{}, byPolicy: map[string][]resourceEvidence{}, exempted: map[string]map[int32]bool{}}
}

// controlKey names a framework's control among all frameworks'.
func controlKey(frameworkID, controlID string) string { return frameworkID + "\x00" + controlID }

// ExemptControl records that the control's failing resources among
// resourceIDs pass it as exempted (a control exemption of their tenant).
// Call it once Add is done.
func (r *Resources) ExemptControl(frameworkID, controlID string, resourceIDs []string) {
	key := controlKey(frameworkID, controlID)
	for _, id := range resourceIDs {
		i, ok := r.index[id]
		if !ok {
			continue
		}
		if r.exempted[key] == nil {
			r.exempted[key] = map[int32]bool{}
		}
		r.exempted[key][i] = true
	}
}

// Add records a resource's evidence under a policy definition; a resource
// added twice under one definition has the union of both, and evidence
// without a bit (no Compliant, Exempt or NonCompliant state) is left out.
func (r *Resources) Add(policyID, resourceID string, e Evidence) {
	if e == 0 {
		return
	}
	i, ok := r.index[resourceID]
	if !ok {
		i = int32(len(r.index))
		r.index[resourceID] = i
	}
	r.byPolicy[policyID] = append(r.byPolicy[policyID], resourceEvidence{resource: i, evidence: e})
}

// ResourceCounts are a control's resources by outcome: a resource fails
// the control when any mapped policy found it non-compliant and no
// exemption of Steward's covers that, and passes otherwise when at least
// one found it compliant or exempt; a passing resource with Azure's Exempt
// state among them counts in Exempt as well, one passing by Steward's
// exemption in Exempted.
type ResourceCounts struct {
	Passed   int
	Failed   int
	Exempt   int
	Exempted int
}

// Control results, over resources; the package doc states when each
// applies.
const (
	ResultFailed        = "failed"
	ResultPassed        = "passed"
	ResultNotApplicable = "not_applicable"
	ResultManual        = "manual"
)

// Result is a control's result from its in-scope mapped policies (how
// many) and its resources: manual without a mapped policy, failed when a
// resource fails, passed when one passes and none fails, not_applicable
// when no mapped policy evaluated a resource either way.
func Result(policies int, c ResourceCounts) string {
	switch {
	case policies == 0:
		return ResultManual
	case c.Failed > 0:
		return ResultFailed
	case c.Passed > 0:
		return ResultPassed
	default:
		return ResultNotApplicable
	}
}

// Counter counts the resources of controls by outcome. It is not safe for
// concurrent use; one serves the controls of one coverage.
type Counter struct {
	r        *Resources
	combined []Evidence
	touched  []int32
}

// Counter returns a Counter over r; a nil r has no resources.
func (r *Resources) Counter() *Counter {
	if r == nil {
		return &Counter{}
	}
	return &Counter{r: r, combined: make([]Evidence, len(r.index))}
}

// Count combines, over the given policy definitions, each resource's
// evidence and counts the resources by outcome. The counts are kept under
// key, which names the control and so its policy definitions: a later
// Count of the same key answers them without counting.
func (c *Counter) Count(key string, policyIDs []string) ResourceCounts {
	var out ResourceCounts
	if c.r == nil {
		return out
	}
	if v, ok := c.r.counted.Load(key); ok {
		return v.(ResourceCounts)
	}
	defer func() { c.r.counted.Store(key, out) }()
	for _, id := range policyIDs {
		for _, re := range c.r.byPolicy[id] {
			if c.combined[re.resource] == 0 {
				c.touched = append(c.touched, re.resource)
			}
			c.combined[re.resource] |= re.evidence
		}
	}
	exempted := c.r.exempted[key]
	for _, i := range c.touched {
		e := c.combined[i]
		if e&EvidenceNonCompliant != 0 && exempted[i] {
			e = e&^EvidenceNonCompliant | EvidenceExempted
		}
		switch {
		case e&EvidenceNonCompliant != 0:
			out.Failed++
		case e&(EvidenceExempt|EvidenceExempted|EvidenceCompliant) != 0:
			out.Passed++
			if e&EvidenceExempt != 0 {
				out.Exempt++
			}
			if e&EvidenceExempted != 0 {
				out.Exempted++
			}
		}
		c.combined[i] = 0
	}
	c.touched = c.touched[:0]
	return out
}
