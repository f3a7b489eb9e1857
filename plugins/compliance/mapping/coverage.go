package mapping

import (
	"math"
	"slices"
	"strings"

	"github.com/stewardhq/steward/plugins/compliance/frameworks"
)

// Control statuses; the package doc states when each applies.
const (
	StatusNotCovered   = "not_covered"
	StatusCovered      = "covered"
	StatusPartial      = "partial"
	StatusNonCompliant = "non_compliant"
	StatusNotEvaluated = "not_evaluated"
)

// Policy compliance states, as Azure Policy names them.
const (
	StateCompliant    = "Compliant"
	StateNonCompliant = "NonCompliant"
	StateUnknown      = "Unknown"
)

// Counts is the compliance of one policy definition in scope: how many
// resources it found compliant and non-compliant.
type Counts struct {
	Compliant    int
	NonCompliant int
}

// State is the definition's compliance state: NonCompliant when any
// resource is, Compliant when some resource is compliant and none is not,
// Unknown when no resource was evaluated either way.
func (c Counts) State() string {
	switch {
	case c.NonCompliant > 0:
		return StateNonCompliant
	case c.Compliant > 0:
		return StateCompliant
	default:
		return StateUnknown
	}
}

// Options shape a coverage result.
type Options struct {
	// IncludePolicies lists the matched policies of each control.
	IncludePolicies bool
	// Explain adds to each matched policy the tier and the group name or
	// keyword set that matched.
	Explain bool
}

// Detail is a framework's coverage, in the shape of the framework detail
// response.
type Detail struct {
	Framework              FrameworkRef       `json:"framework"`
	OverallCoveragePercent float64            `json:"overall_coverage_percent"`
	Categories             []CategoryCoverage `json:"categories"`
	Disclaimer             string             `json:"disclaimer"`
}

// FrameworkRef names a framework in a detail response.
type FrameworkRef struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// CategoryCoverage is the coverage of one category's controls.
type CategoryCoverage struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	CoveragePercent float64           `json:"coverage_percent"`
	Controls        []ControlCoverage `json:"controls"`
}

// ControlCoverage is one control's status and the compliance of the
// policies mapped to it.
type ControlCoverage struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status" doc:"The result with a failed control split: covered (passed), partial (failed, some resource passes), non_compliant (failed, none passes), not_evaluated (not_applicable), not_covered (manual)"`
	// Result is the control's result over resources (ResultFailed, …).
	Result               string  `json:"result" enum:"failed,passed,not_applicable,manual" doc:"The control's result over resources: failed when any resource fails it (a mapped policy found it non-compliant), passed when a resource passes it and none fails, not_applicable when no mapped policy evaluated a resource, manual when no policy in scope maps to it"`
	MatchedPoliciesCount int     `json:"matched_policies_count"`
	CompliantCount       int     `json:"compliant_count" doc:"Resources passing the control: every mapped policy that evaluated the resource found it compliant or exempt, or a Steward exemption covers the finding"`
	NonCompliantCount    int     `json:"non_compliant_count" doc:"Resources failing the control: a mapped policy found the resource non-compliant, and no active Steward exemption covers it"`
	ExemptCount          int     `json:"exempt_count" doc:"Passing resources with Azure Policy's own Exempt state under a mapped policy, counted in compliant_count as well"`
	ExemptedCount        int     `json:"exempted_count" doc:"Resources a mapped policy found non-compliant that pass because Steward's active exemptions (GET /api/v1/compliance/exemptions) cover each such finding, counted in compliant_count as well"`
	CompliancePercent    float64 `json:"compliance_percent" doc:"compliant_count of compliant_count plus non_compliant_count, percent to one decimal; 0 when both are 0"`
	// MatchedPolicies is present, possibly empty, with
	// Options.IncludePolicies; non-compliant policies come first.
	MatchedPolicies []MatchedPolicy `json:"matched_policies,omitzero"`
}

// MatchedPolicy is one policy definition mapped to a control.
type MatchedPolicy struct {
	PolicyDefinitionID string `json:"policy_definition_id"`
	PolicyName         string `json:"policy_name"`
	ComplianceState    string `json:"compliance_state"`
	NonCompliantCount  int    `json:"non_compliant_count"`
	MappingConfidence  string `json:"mapping_confidence"`
	// The explanation, with Options.Explain: the tier, and the group name
	// (tier 1), keyword set or override reason (tier 2) that matched.
	Tier      int      `json:"tier,omitempty"`
	GroupName string   `json:"group_name,omitempty"`
	Keywords  []string `json:"keywords,omitempty"`
	Override  string   `json:"override,omitempty"`
}

// Summary is a framework's entry in the framework list.
type Summary struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Version         string          `json:"version"`
	Description     string          `json:"description"`
	TotalControls   int             `json:"total_controls"`
	CategoriesCount int             `json:"categories_count"`
	CoverageSummary CoverageSummary `json:"coverage_summary"`
}

// CoverageSummary counts a framework's controls with and without a mapped
// policy.
type CoverageSummary struct {
	ControlsWithCoverage    int     `json:"controls_with_coverage"`
	ControlsWithoutCoverage int     `json:"controls_without_coverage"`
	OverallCoveragePercent  float64 `json:"overall_coverage_percent"`
}

// Coverage computes a framework's coverage from a mapping and the
// compliance of the policy definitions in scope. counts must hold an entry
// for every definition in scope (the tenants asked about); a mapped policy
// without one is out of scope and left out, so one mapping of all
// definitions serves every tenant selection.
func (m *Mapper) Coverage(frameworkID string, mapping *Mapping, counts map[string]Counts, resources *Resources, opts Options) (*Detail, error) {
	fw, ok := m.set.Get(frameworkID)
	if !ok {
		return nil, ErrUnknownFramework
	}
	counter := resources.Counter()
	byCategory := make(map[string][]ControlCoverage, len(fw.Categories))
	for _, c := range fw.Controls {
		byCategory[c.Category] = append(byCategory[c.Category], controlCoverage(fw, c, mapping, counts, counter, opts))
	}
	d := &Detail{
		Framework:  FrameworkRef{ID: fw.ID, Name: fw.Name, Version: fw.Version},
		Categories: make([]CategoryCoverage, 0, len(fw.Categories)),
		Disclaimer: Disclaimer,
	}
	covered := 0
	for _, cat := range fw.Categories {
		controls := byCategory[cat.ID]
		n := coveredControls(controls)
		covered += n
		d.Categories = append(d.Categories, CategoryCoverage{
			ID:              cat.ID,
			Name:            cat.Name,
			CoveragePercent: percent(n, len(controls)),
			Controls:        controls,
		})
	}
	d.OverallCoveragePercent = percent(covered, len(fw.Controls))
	return d, nil
}

// Summaries returns the framework list's entries, ordered by id, for a
// mapping and the compliance of the definitions in scope (see Coverage).
func (m *Mapper) Summaries(mapping *Mapping, counts map[string]Counts) []Summary {
	all := m.set.All()
	out := make([]Summary, 0, len(all))
	for _, fw := range all {
		covered := 0
		for _, c := range fw.Controls {
			if len(inScope(mapping.Matches(fw.ID, c.ID), counts)) > 0 {
				covered++
			}
		}
		out = append(out, Summary{
			ID:              fw.ID,
			Name:            fw.Name,
			Version:         fw.Version,
			Description:     fw.Description,
			TotalControls:   len(fw.Controls),
			CategoriesCount: len(fw.Categories),
			CoverageSummary: CoverageSummary{
				ControlsWithCoverage:    covered,
				ControlsWithoutCoverage: len(fw.Controls) - covered,
				OverallCoveragePercent:  percent(covered, len(fw.Controls)),
			},
		})
	}
	return out
}

// inScope returns the ids of the matched policies that have counts.
func inScope(matches map[string]Match, counts map[string]Counts) []string {
	var ids []string
	for id := range matches {
		if _, ok := counts[id]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func controlCoverage(fw *frameworks.Framework, c frameworks.Control, mapping *Mapping, counts map[string]Counts, counter *Counter, opts Options) ControlCoverage {
	cc := ControlCoverage{ID: c.ID, Name: c.Name, Description: c.Description}
	matches := mapping.Matches(fw.ID, c.ID)
	ids := inScope(matches, counts)
	if opts.IncludePolicies {
		cc.MatchedPolicies = make([]MatchedPolicy, 0, len(ids))
	}
	for _, id := range ids {
		if !opts.IncludePolicies {
			continue
		}
		n := counts[id]
		match := matches[id]
		p, _ := mapping.Policy(id)
		mp := MatchedPolicy{
			PolicyDefinitionID: id,
			PolicyName:         p.Name,
			ComplianceState:    n.State(),
			NonCompliantCount:  n.NonCompliant,
			MappingConfidence:  match.Confidence,
		}
		if opts.Explain {
			mp.Tier, mp.GroupName, mp.Keywords, mp.Override = match.Tier, match.GroupName, match.Keywords, match.Override
		}
		cc.MatchedPolicies = append(cc.MatchedPolicies, mp)
	}
	cc.MatchedPoliciesCount = len(ids)
	rc := counter.Count(controlKey(fw.ID, c.ID), ids)
	cc.CompliantCount, cc.NonCompliantCount, cc.ExemptCount, cc.ExemptedCount = rc.Passed, rc.Failed, rc.Exempt, rc.Exempted
	cc.CompliancePercent = percent(rc.Passed, rc.Passed+rc.Failed)
	cc.Result = Result(len(ids), rc)
	cc.Status = status(cc)
	slices.SortFunc(cc.MatchedPolicies, func(a, b MatchedPolicy) int {
		if a.NonCompliantCount != b.NonCompliantCount {
			return b.NonCompliantCount - a.NonCompliantCount
		}
		if c := strings.Compare(a.PolicyName, b.PolicyName); c != 0 {
			return c
		}
		return strings.Compare(a.PolicyDefinitionID, b.PolicyDefinitionID)
	})
	return cc
}

// status applies the rule in the package doc: the control's result, with
// a failed control partial when some resource passes it.
func status(c ControlCoverage) string {
	switch c.Result {
	case ResultManual:
		return StatusNotCovered
	case ResultNotApplicable:
		return StatusNotEvaluated
	case ResultPassed:
		return StatusCovered
	case ResultFailed:
		if c.CompliantCount > 0 {
			return StatusPartial
		}
	}
	return StatusNonCompliant
}

func coveredControls(controls []ControlCoverage) int {
	n := 0
	for _, c := range controls {
		if c.Status != StatusNotCovered {
			n++
		}
	}
	return n
}

// percent is 100·part/whole rounded to one decimal, 0 for an empty whole.
func percent(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return math.Round(1000*float64(part)/float64(whole)) / 10
}
