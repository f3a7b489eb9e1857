// Package catalogue loads a partner programme's requirements catalogue: the
// partner that imposes the requirements, its deadline and the maturity it
// expects, and each requirement with its priority, the evidence it asks for
// and, optionally, an automatic check on a metric another plugin publishes.
//
// A catalogue is written either in an HCL file the plugin's config names
// (catalogue_file; see ../catalogue.example.hcl) or inline in the plugin's
// config {} block in plugins.hcl, which the host hands over as JSON:
//
//	config {
//	  programme    = { partner = "Northwind Bank", deadline = "2027-03-31", target_maturity = 3.5 }
//	  requirements = [{ id = "IAM-01", title = "MFA for every account", category = "identity",
//	                    priority = "critical", check = { metric = "mfa_coverage", target = 95 } }]
//	}
//
// Every mistake is refused, never guessed around: an unknown field, a
// missing or repeated id, a deadline that is not a date, an unknown
// priority or metric, a target outside 0–100. The error names where the
// mistake is — file, line and column of an HCL file, or "plugins.hcl
// config" for the inline block — and the field, by its path.
package catalogue

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Priority is how much a requirement matters to the partner.
type Priority string

// The priorities, most pressing first.
const (
	Critical Priority = "critical"
	High     Priority = "high"
	Medium   Priority = "medium"
	Low      Priority = "low"
)

// Priorities lists the priorities, most pressing first.
var Priorities = []Priority{Critical, High, Medium, Low}

// Rank orders priorities: 1 for critical to 4 for low.
func (p Priority) Rank() int { return slices.Index(Priorities, p) + 1 }

// Weight is what a requirement of the priority counts for in the maturity
// score: 4 for critical, 3 high, 2 medium, 1 low.
func (p Priority) Weight() int { return len(Priorities) + 1 - p.Rank() }

// Metric names a figure an automatic check reads from another plugin's
// dataset.
type Metric string

// The metrics a check can read.
const (
	// MFACoverage is identity_mfa's mfa_coverage_percentage: enabled
	// members (not guests) with an MFA method of all enabled members.
	MFACoverage Metric = "mfa_coverage"
	// AdminMFA is identity_mfa's admin_mfa_percentage: directory role
	// holders with MFA.
	AdminMFA Metric = "admin_mfa"
	// DeviceCompliance is identity_mfa's device_compliance_percentage.
	DeviceCompliance Metric = "device_compliance"
	// ComplianceScore is the compliance dataset's
	// overall_compliance_percent: compliant resources of those evaluated.
	ComplianceScore Metric = "compliance_score"
	// FrameworkCoverage is compliance_frameworks' coverage_percent of the
	// check's framework: its controls a policy of the tenant maps to.
	FrameworkCoverage Metric = "framework_coverage"
)

// Metrics lists the metrics a check can read.
var Metrics = []Metric{MFACoverage, AdminMFA, DeviceCompliance, ComplianceScore, FrameworkCoverage}

// MaxMaturity is the top of the maturity scale; a score runs from 0 to it.
const MaxMaturity = 5.0

// Check is a requirement's automatic check: the metric, for
// framework_coverage the framework, and the target the metric must reach
// (value >= target, in percent).
type Check struct {
	Metric    Metric  `json:"metric" enum:"mfa_coverage,admin_mfa,device_compliance,compliance_score,framework_coverage"`
	Framework string  `json:"framework,omitempty" doc:"The framework id of a framework_coverage check"`
	Target    float64 `json:"target" doc:"Percent the metric must reach (value >= target)"`
}

// Requirement is one requirement of the partner.
type Requirement struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Category    string   `json:"category"`
	Priority    Priority `json:"priority" enum:"critical,high,medium,low"`
	// Evidence lists what the partner expects to be shown.
	Evidence []string `json:"expected_evidence"`
	// Check is nil for a requirement only evidence can satisfy.
	Check *Check `json:"check" doc:"The automatic check; null when only evidence can satisfy the requirement"`
}

// Programme is the partner's programme: who asks, by when, and the maturity
// it expects of each tenant.
type Programme struct {
	Partner     string `json:"partner"`
	Description string `json:"description"`
	// Deadline is the day (UTC) by which the requirements are to be met.
	Deadline       time.Time `json:"deadline"`
	TargetMaturity float64   `json:"target_maturity" doc:"Maturity (0-5) the partner expects of each tenant"`
}

// Catalogue is a loaded, valid programme and its requirements, in the
// order they were written.
type Catalogue struct {
	Programme    Programme
	Requirements []Requirement
}

// Requirement returns the requirement with the id.
func (c *Catalogue) Requirement(id string) (Requirement, bool) {
	i := slices.IndexFunc(c.Requirements, func(r Requirement) bool { return r.ID == id })
	if i < 0 {
		return Requirement{}, false
	}
	return c.Requirements[i], true
}

// Categories lists the requirements' categories, sorted, once each.
func (c *Catalogue) Categories() []string {
	var out []string
	for _, r := range c.Requirements {
		out = append(out, r.Category)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Error is a mistake in a catalogue: where it is, the field and what is
// wrong. Line and Column are 0 for the inline config block, which the host
// hands over as JSON without positions.
type Error struct {
	File         string
	Line, Column int
	Field        string
	Message      string
}

func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d,%d", e.File, e.Line, e.Column)
	}
	if e.Field == "" {
		return where + ": " + e.Message
	}
	return where + ": " + e.Field + ": " + e.Message
}

// Bounds of a catalogue's text, so that ids fit in URLs and filters.
const (
	maxIDLength   = 64
	maxTextLength = 4096
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// rawProgramme, rawRequirement and rawCheck are a catalogue as written,
// either format, before it is checked.
type rawProgramme struct {
	Partner, Description, Deadline string
	TargetMaturity                 *float64
}

type rawCheck struct {
	Metric, Framework string
	Target            *float64
}

type rawRequirement struct {
	ID, Title, Description, Category, Priority string
	Evidence                                   []string
	Check                                      *rawCheck
}

// locator builds the Error for a field of the catalogue as written: the
// programme's (section "programme"), a requirement's (i, "") or its
// check's (i, "check").
type locator interface {
	at(section string, i int, field string) *Error
}

// build checks the catalogue as written and returns it loaded, or every
// mistake found.
func build(p rawProgramme, reqs []rawRequirement, loc locator) (*Catalogue, error) {
	var errs []error
	fail := func(e *Error, format string, args ...any) {
		e.Message = fmt.Sprintf(format, args...)
		errs = append(errs, e)
	}
	c := &Catalogue{Programme: Programme{Partner: strings.TrimSpace(p.Partner), Description: p.Description}}
	prog := func(field string) *Error { return loc.at("programme", 0, field) }
	if c.Programme.Partner == "" {
		fail(prog("partner"), "is required")
	}
	if len(p.Partner) > maxTextLength || len(p.Description) > maxTextLength {
		fail(prog("partner"), "is longer than %d characters", maxTextLength)
	}
	if d, err := time.Parse(time.DateOnly, p.Deadline); err != nil {
		fail(prog("deadline"), "%q is not a date (YYYY-MM-DD)", p.Deadline)
	} else {
		c.Programme.Deadline = d
	}
	switch t := p.TargetMaturity; {
	case t == nil:
		fail(prog("target_maturity"), "is required")
	case !(*t >= 0 && *t <= MaxMaturity):
		fail(prog("target_maturity"), "%v is outside 0 to %v", *t, MaxMaturity)
	default:
		c.Programme.TargetMaturity = *t
	}
	if len(reqs) == 0 {
		fail(loc.at("", -1, "requirements"), "at least one requirement is required")
	}
	seen := map[string]bool{}
	for i, r := range reqs {
		field := func(name string) *Error { return loc.at("", i, name) }
		req := Requirement{ID: r.ID, Title: strings.TrimSpace(r.Title), Description: r.Description, Category: strings.TrimSpace(r.Category),
			Priority: Priority(r.Priority), Evidence: r.Evidence}
		switch {
		case r.ID == "":
			fail(field("id"), "is required")
		case len(r.ID) > maxIDLength || !idPattern.MatchString(r.ID):
			fail(field("id"), "%q is not an id: letters, digits, '.', '_' and '-', at most %d, starting with a letter or digit", r.ID, maxIDLength)
		case seen[r.ID]:
			fail(field("id"), "%q is used by an earlier requirement", r.ID)
		}
		seen[r.ID] = true
		if req.Title == "" {
			fail(field("title"), "is required")
		}
		if req.Category == "" {
			fail(field("category"), "is required")
		} else if len(req.Category) > maxIDLength {
			fail(field("category"), "is longer than %d characters", maxIDLength)
		}
		if len(r.Title) > maxTextLength || len(r.Description) > maxTextLength {
			fail(field("description"), "is longer than %d characters", maxTextLength)
		}
		if req.Priority.Rank() == 0 {
			fail(field("priority"), "%q is not a priority: critical, high, medium or low", r.Priority)
		}
		if req.Evidence == nil {
			req.Evidence = []string{}
		}
		if r.Check != nil {
			req.Check = buildCheck(*r.Check, func(name string) *Error { return loc.at("check", i, name) }, fail)
		}
		c.Requirements = append(c.Requirements, req)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func buildCheck(r rawCheck, field func(string) *Error, fail func(*Error, string, ...any)) *Check {
	c := &Check{Metric: Metric(r.Metric), Framework: r.Framework}
	names := make([]string, len(Metrics))
	for i, m := range Metrics {
		names[i] = string(m)
	}
	if !slices.Contains(Metrics, c.Metric) {
		fail(field("metric"), "%q is not a metric: %s", r.Metric, strings.Join(names, ", "))
	}
	switch {
	case c.Metric == FrameworkCoverage && c.Framework == "":
		fail(field("framework"), "is required for a framework_coverage check")
	case c.Metric != FrameworkCoverage && c.Framework != "":
		fail(field("framework"), "applies only to a framework_coverage check")
	case len(c.Framework) > maxIDLength:
		fail(field("framework"), "is longer than %d characters", maxIDLength)
	}
	switch t := r.Target; {
	case t == nil:
		fail(field("target"), "is required")
	case !(*t >= 0 && *t <= 100):
		fail(field("target"), "%v is outside 0 to 100 (percent)", *t)
	default:
		c.Target = *t
	}
	return c
}
