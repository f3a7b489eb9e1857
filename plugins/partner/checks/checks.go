// Package checks assesses each tenant against the partner's requirements
// catalogue. A job (Runner) reads, for every tenant, the metrics the
// catalogue's automatic checks name from the datasets other plugins
// publish — identity_mfa of the identity plugin, compliance and
// compliance_frameworks of the compliance plugin — and stores each
// requirement's result, the tenant's maturity score and its gaps as the
// day's snapshot (a run later the same day replaces it), which the read
// routes and the partner page serve.
//
// A requirement's status is one of:
//
//   - met: its automatic check reached the target (value >= target), or,
//     for a requirement without a check or whose check has no value, the
//     tenant's evidence for it was accepted;
//   - not_met: its check has a value below the target;
//   - unknown: its check could not be evaluated — the dataset is not
//     published (its plugin is not installed or not running), the tenant
//     has not synced there yet, or the metric has no value (no devices,
//     say) — with the reason;
//   - awaiting_evidence: it has no automatic check and no accepted
//     evidence.
//
// Every status but met is a gap. Evidence comes from an EvidenceStatus
// function; without one, only the automatic checks can meet a requirement.
//
// The maturity score is the priority-weighted share of the requirements
// met, on the scale 0 to 5: 5 × Σ weight(met) / Σ weight(all), where a
// critical requirement weighs 4, high 3, medium 2 and low 1, rounded to two
// decimals. A tenant meets the programme's target maturity when its score
// is at least the target.
package checks

import (
	"context"
	"math"
	"time"

	"github.com/stewardhq/steward/plugins/partner/catalogue"
)

// Domain is the job type of the partner sync (POST /api/v1/partner/sync)
// and the freshness domain it marks.
const Domain = "partner"

// Requirement statuses; the package doc says when each applies.
const (
	StatusMet              = "met"
	StatusNotMet           = "not_met"
	StatusUnknown          = "unknown"
	StatusAwaitingEvidence = "awaiting_evidence"
)

// Statuses lists the requirement statuses, gaps first, worst first.
var Statuses = []string{StatusNotMet, StatusUnknown, StatusAwaitingEvidence, StatusMet}

// CheckNone is the check status of a requirement without an automatic
// check; the others are met, not_met and unknown.
const CheckNone = "none"

// EvidenceAccepted is the evidence status that meets a requirement.
const EvidenceAccepted = "accepted"

// EvidenceStatus returns the status of a tenant's evidence per requirement
// id (not_started, in_progress, submitted, accepted, rejected, expired); a
// requirement without evidence may be left out. The plugin's evidence part
// provides it; nil means there is none.
type EvidenceStatus func(ctx context.Context, tenantID string) (map[string]string, error)

// Reading is a metric's value for a tenant, or, with a nil Value, the
// reason there is none.
type Reading struct {
	Value  *float64
	Reason string
}

// Result is a requirement's assessment for a tenant.
type Result struct {
	Requirement catalogue.Requirement
	Status      string
	// CheckStatus is met, not_met, unknown or none.
	CheckStatus string
	Value       *float64
	// Reason says why a check is unknown.
	Reason string
	// EvidenceStatus is the tenant's evidence status for the requirement,
	// empty without evidence.
	EvidenceStatus string
}

// Assessment is a tenant's results, in catalogue order, and its score.
type Assessment struct {
	Results  []Result
	Maturity float64
	// Counts of the results by status.
	Met, NotMet, Unknown, AwaitingEvidence int
	// Gaps are the results not met; CriticalGaps those of critical
	// requirements.
	Gaps, CriticalGaps int
}

// Assess assesses every requirement of c with read, which gives a check's
// metric for the tenant, and evidence, the tenant's evidence status per
// requirement (nil without evidence).
func Assess(c *catalogue.Catalogue, read func(catalogue.Check) Reading, evidence map[string]string) Assessment {
	var a Assessment
	var metWeight, allWeight int
	for _, req := range c.Requirements {
		r := Result{Requirement: req, CheckStatus: CheckNone, EvidenceStatus: evidence[req.ID]}
		if req.Check != nil {
			reading := read(*req.Check)
			r.Value, r.Reason = reading.Value, reading.Reason
			switch {
			case r.Value == nil:
				r.CheckStatus = StatusUnknown
			case *r.Value >= req.Check.Target:
				r.CheckStatus = StatusMet
			default:
				r.CheckStatus = StatusNotMet
			}
		}
		switch {
		case r.CheckStatus == StatusMet, r.CheckStatus == StatusNotMet:
			r.Status = r.CheckStatus
		case r.EvidenceStatus == EvidenceAccepted:
			r.Status = StatusMet
		case r.CheckStatus == StatusUnknown:
			r.Status = StatusUnknown
		default:
			r.Status = StatusAwaitingEvidence
		}
		allWeight += req.Priority.Weight()
		switch r.Status {
		case StatusMet:
			a.Met++
			metWeight += req.Priority.Weight()
		case StatusNotMet:
			a.NotMet++
		case StatusUnknown:
			a.Unknown++
		default:
			a.AwaitingEvidence++
		}
		if r.Status != StatusMet {
			a.Gaps++
			if req.Priority == catalogue.Critical {
				a.CriticalGaps++
			}
		}
		a.Results = append(a.Results, r)
	}
	if allWeight > 0 {
		a.Maturity = math.Round(100*catalogue.MaxMaturity*float64(metWeight)/float64(allWeight)) / 100
	}
	return a
}

// DaysLeft is the number of days from now's day (UTC) to the deadline:
// 0 on the day itself, negative once it has passed.
func DaysLeft(deadline, now time.Time) int {
	today := now.UTC().Truncate(24 * time.Hour)
	return int(math.Round(deadline.Sub(today).Hours() / 24))
}
