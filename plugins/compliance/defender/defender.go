// Package defender is the compliance plugin's second source of findings
// beside the policy states: Defender for Cloud's security assessments of
// each subscription's resources and its secure score by security control,
// synced per tenant by the defender job into the plugin's tables (each
// subscription's rows replaced whole by each sync of it); the reads over
// them (the assessments list and the secure score); and the assessments
// as findings by policy definition, which the framework coverage counts
// beside the policy states (Definitions, Revision), other parts of the
// plugin read as rows (Findings) and the findings list takes in beside
// the policy states' (FindingRows).
//
// An assessment is compliant when Healthy, non-compliant when Unhealthy
// and not applicable when NotApplicable. A tenant's secure score is the
// sum of its subscriptions' scores over the sum of their maxima, so each
// subscription weighs by its maximum.
package defender

import (
	"embed"
	"io/fs"
	"math"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the defender tables' schema, numbered 0200 to 0299.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Domain is the freshness domain and job type of the defender sync.
const Domain = "defender"

// Source names the findings of this package among the compliance
// plugin's sources.
const Source = "defender"

// Assessment statuses as Defender for Cloud names them.
const (
	StatusHealthy       = "Healthy"
	StatusUnhealthy     = "Unhealthy"
	StatusNotApplicable = "NotApplicable"
)

// Finding states of an assessment.
const (
	StateCompliant     = "compliant"
	StateNonCompliant  = "non_compliant"
	StateNotApplicable = "not_applicable"
)

// stateOf is the finding state of an assessment status.
func stateOf(status string) string {
	switch status {
	case StatusHealthy:
		return StateCompliant
	case StatusUnhealthy:
		return StateNonCompliant
	}
	return StateNotApplicable
}

// severityRanks orders the severities, highest first.
var severityRanks = map[string]int{"High": 3, "Medium": 2, "Low": 1}

// normalize writes a status or severity in the casing of one of known; an
// unfamiliar one is kept as it is.
func normalize(s string, known ...string) string {
	for _, k := range known {
		if strings.EqualFold(s, k) {
			return k
		}
	}
	return s
}

// resourceTypeOf reads an ARM id's resource type in lower case, e.g.
// microsoft.storage/storageaccounts; a subscription's own id is
// microsoft.resources/subscriptions.
func resourceTypeOf(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	p := -1
	for i, s := range segs {
		if strings.EqualFold(s, "providers") {
			p = i
		}
	}
	if p < 0 || p+2 >= len(segs) {
		if len(segs) >= 4 && strings.EqualFold(segs[2], "resourceGroups") {
			return "microsoft.resources/subscriptions/resourcegroups"
		}
		return "microsoft.resources/subscriptions"
	}
	typ := segs[p+1]
	for i := p + 2; i+1 < len(segs); i += 2 {
		typ += "/" + segs[i]
	}
	return strings.ToLower(typ)
}

// percent is current of max in percent to two decimals, or nil for a max
// of zero.
func percent(current float64, maxScore int64) *float64 {
	if maxScore <= 0 {
		return nil
	}
	v := math.Round(current*10000/float64(maxScore)) / 100
	return &v
}
