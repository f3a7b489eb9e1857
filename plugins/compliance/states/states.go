// Package states is the compliance plugin's store of policy state: the
// latest state of each resource under each policy assignment, replaced per
// subscription by the compliance sync, each subscription's policy
// definitions with their resources by compliance (written with its states,
// for the framework coverage), a revision per tenant that every change of
// its states raises, and a daily snapshot of each tenant's figures kept
// for the trend, and the guidance (remediation) of the policy definitions
// the states name; the sync that fills them from Policy Insights and the
// policy definitions API; and the reads over them (summary, scores,
// non-compliant policies, trends, sync status, definition counts,
// findings), the compliance dataset and the dataset of named resources'
// states (compliance_resource_states).
//
// Definitions the reads share:
//
//   - A resource is non-compliant when any of its states is NonCompliant,
//     compliant when none is and one is Compliant or Exempt (Azure counts
//     an exemption as compliance); a resource with only Unknown or
//     Conflict states is neither, and counts only in the totals.
//   - A policy is a policy definition, whichever assignments (initiatives)
//     apply it: non-compliant when any of its states is NonCompliant,
//     compliant otherwise by the same rule as a resource.
//   - The compliance percent is compliant resources over compliant plus
//     non-compliant resources, in percent to two decimals; null without
//     either.
//
// Severity comes from the policy definition's metadata
// (securityCenter.Severity, which the simulated cloud sends with each
// state). Critical reads as High, Informational as Low. A state without
// one takes its severity from its policy category (SeverityOfCategory).
package states

import (
	"embed"
	"io/fs"
	"math"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the policy states' schema, numbered 0001 to 0099.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Domain is the freshness domain and job type of the sync.
const Domain = "compliance"

// Severities, highest first.
const (
	SeverityHigh   = "High"
	SeverityMedium = "Medium"
	SeverityLow    = "Low"
)

// severityRanks orders the severities; the database keeps the rank beside
// the name so that aggregates take the highest.
var severityRanks = map[string]int{SeverityHigh: 3, SeverityMedium: 2, SeverityLow: 1}

// severityOfRank names a rank; an unknown rank reads as Medium.
func severityOfRank(r int) string {
	switch r {
	case 3:
		return SeverityHigh
	case 1:
		return SeverityLow
	}
	return SeverityMedium
}

// NormalizeSeverity reads a severity as Azure's metadata writes it, in any
// case: Critical and High are High, Medium and Moderate are Medium, Low
// and Informational are Low. Anything else is "".
func NormalizeSeverity(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "critical", "high":
		return SeverityHigh
	case "medium", "moderate":
		return SeverityMedium
	case "low", "informational", "info":
		return SeverityLow
	}
	return ""
}

// categorySeverity is the severity of a policy whose definition carries
// none, by its category: categories whose findings expose secrets,
// identities or the network are High; tagging, general and monitoring
// hygiene are Low; every other category is Medium.
var categorySeverity = map[string]string{
	"security center":        SeverityHigh,
	"key vault":              SeverityHigh,
	"network":                SeverityHigh,
	"identity":               SeverityHigh,
	"azure active directory": SeverityHigh,
	"tags":                   SeverityLow,
	"general":                SeverityLow,
	"monitoring":             SeverityLow,
}

// SeverityOfCategory is the severity a state without one in its metadata
// takes, by its policy category (case-insensitive): High for Security
// Center, Key Vault, Network, Identity and Azure Active Directory; Low
// for Tags, General and Monitoring; Medium for any other.
func SeverityOfCategory(category string) string {
	if s, ok := categorySeverity[strings.ToLower(strings.TrimSpace(category))]; ok {
		return s
	}
	return SeverityMedium
}

// Compliance states as Policy Insights names them.
const (
	StateCompliant    = "Compliant"
	StateNonCompliant = "NonCompliant"
	StateExempt       = "Exempt"
	StateConflict     = "Conflict"
	StateUnknown      = "Unknown"
)

// normalizeState writes a compliance state in Azure's casing; an
// unfamiliar one is kept as it is.
func normalizeState(s string) string {
	for _, known := range []string{StateCompliant, StateNonCompliant, StateExempt, StateConflict, StateUnknown} {
		if strings.EqualFold(s, known) {
			return known
		}
	}
	return s
}

// stateRank orders a compliance state for the aggregates: 2 for
// NonCompliant, 1 for Compliant or Exempt, 0 for any other.
func stateRank(state string) int {
	switch state {
	case StateNonCompliant:
		return 2
	case StateCompliant, StateExempt:
		return 1
	}
	return 0
}

// Percent is part of part+other in percent to two decimals, or nil when
// both are zero.
func Percent(part, other int64) *float64 {
	if part+other == 0 {
		return nil
	}
	v := math.Round(float64(part)*10000/float64(part+other)) / 100
	return &v
}

// State is one resource's latest state under one policy assignment.
type State struct {
	ResourceID           string
	ResourceType         string
	PolicyAssignmentID   string
	PolicyDefinitionID   string
	PolicyDefinitionName string
	// PolicyName is the definition's display name, or its resource name
	// when the service sends none.
	PolicyName      string
	Category        string
	GroupNames      []string
	ComplianceState string
	// Severity is High, Medium or Low.
	Severity    string
	EvaluatedAt time.Time
}
