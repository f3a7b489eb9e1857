// Package rules is the compliance plugin's custom rules: a tenant's own
// checks, each a JSON Schema (draft 2020-12) that the records of one
// category must satisfy, with the /api/v1/compliance/rules routes, the
// schema's guards and compilation, the evaluation of a rule against
// records, and the violations each evaluation stores.
//
// # Categories and their records
//
// A rule validates every record of its category, each one subject:
//   - resource_property: each resource of the rule's resource_type in the
//     resources dataset (the resources plugin's inventory), the whole
//     record (name, location, sku, tags, properties, ...); the subject is
//     the resource's ARM id.
//   - mfa_coverage: the tenant's record of the identity_mfa dataset (the
//     identity plugin's figures at its latest sync, e.g.
//     mfa_coverage_percentage, admin_mfa_percentage,
//     access_review_findings, overdue_access_reviews); the subject is the
//     tenant.
//   - compliance_score: the tenant's latest compliance snapshot (Score,
//     e.g. overall_compliance_percent, non_compliant_resources) from a
//     ScoreSource; the subject is the tenant.
//
// A category without data (no identity sync yet) evaluates no subject and
// finds nothing. Evaluation validates data only: a schema holds no code,
// and JSON Schema cannot compare two properties or do date arithmetic.
//
// # Schema guards
//
// A rule's schema is refused (422, the error naming the guard) unless:
//   - it is a JSON object of at most 64 KiB (65,536 bytes) once its
//     insignificant whitespace is removed;
//   - it nests at most 10 levels: the schema object is level 1 and each
//     object or array inside a level is one level deeper, wherever it is
//     ({"properties": {"a": {"type": "string"}}} has 3 levels);
//   - every "pattern" and every key of a "patternProperties" object has at
//     most 500 characters (Go's RE2 regular expressions, which match in
//     linear time);
//   - every "$ref" and "$dynamicRef" is local, starting with "#", and no
//     "$id" gives references another base: the schema is one document.
//     The compiler's loader reaches no network and no file, and refuses
//     any document it is asked for;
//   - every "$schema" is the draft 2020-12 meta-schema;
//   - its reference fan-out is at most 10,000 schema objects: every JSON
//     object of the schema counts one, and each "$ref" and "$dynamicRef"
//     counts, where it occurs, the whole part it names, references inside
//     that part included. Forty $defs, each an allOf of two references to
//     the next, make a 2.6 KB schema that expands to 2^40 objects, each of
//     which a validator would visit; this guard refuses it. A reference
//     back into a part that encloses it (a recursive schema) counts once:
//     such a cycle repeats only as the validator descends into the record,
//     which the evaluation budget bounds;
//   - it is a valid draft 2020-12 schema.
//
// These are checked on the JSON as sent, wherever the member occurs (a
// "$ref" inside a "const" counts too). "format" is an annotation only:
// format assertions are off, as is content assertion. A rule stored by an
// older version that a guard now refuses is not evaluated: each sync
// reports it as the rule's error, and its dry run answers the guard's 422.
//
// # Evaluation budget
//
// The validator takes no context and has no limit of its own, so every
// schema object is compiled with a meter that the validator calls at each
// visit (see budget.go). A record's validation may visit at most 100,000
// schema objects, and validating all the records of one rule for one
// tenant (a sync's or a dry run's) may take at most 10 s. Past either, or
// once the sync or the request is cancelled, the meter stops the
// validation where it is: the goroutine returns, nothing goes on running.
// The guards bound the schema, the step budget each record's cost whatever
// its shape (a recursive schema over deeply nested properties), and the
// time budget a rule's cost over a tenant's many records.
//
// A rule over budget fails alone: its evaluation error names the rule
// (the sync fails its tenant, naming the rule, which keeps what its last
// evaluation stored; a dry run answers 422 "evaluation budget" at
// path.id), the tenant's other rules are evaluated and stored, and other
// tenants' syncs go on: the sync takes turns per tenant, never across
// tenants.
//
// # Rules and deletion
//
// A rule belongs to one tenant and is invisible (404) to callers who may
// not see it. DELETE keeps the row, marked deleted and inactive; a deleted
// rule is no longer listed, read, changed or evaluated. Names and
// descriptions are stored with their markup removed (see jsonbody.Sanitize).
package rules

import (
	"embed"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the rules' schema, applied by the host; they are
// numbered from 0100 so they follow the compliance plugin's own.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Categories of a rule: which records it validates.
const (
	CategoryResourceProperty = "resource_property"
	CategoryComplianceScore  = "compliance_score"
	CategoryMFACoverage      = "mfa_coverage"
)

// Categories are the rule categories.
var Categories = []string{CategoryResourceProperty, CategoryComplianceScore, CategoryMFACoverage}

// Severities of a rule, lowest first; Medium when a rule names none.
var Severities = []string{"Low", "Medium", "High", "Critical"}

// DefaultSeverity is a new rule's severity when it names none.
const DefaultSeverity = "Medium"

// Effects of a rule, the words Azure Policy uses for the same choice.
const (
	// EffectAudit: the sync evaluates the rule, and its violations count as
	// non-compliance in the compliance views. The default.
	EffectAudit = "audit"
	// EffectDisabled: the sync skips the rule; a dry run still evaluates
	// it, so a rule can be tried before it counts.
	EffectDisabled = "disabled"
)

// Effects are the rule effects.
var Effects = []string{EffectAudit, EffectDisabled}

// Rule is a row of compliance_rules.
type Rule struct {
	bun.BaseModel     `bun:"table:compliance_rules,alias:r"`
	ID                int64      `bun:"id,pk,autoincrement"`
	TenantID          string     `bun:"tenant_id"`
	Name              string     `bun:"rule_name"`
	Description       *string    `bun:"rule_description"`
	Category          string     `bun:"category"`
	ResourceType      *string    `bun:"resource_type"`
	Severity          string     `bun:"severity"`
	Effect            string     `bun:"effect"`
	Schema            string     `bun:"schema"`
	IsActive          bool       `bun:"is_active"`
	Deleted           bool       `bun:"deleted"`
	DeletedAt         *time.Time `bun:"deleted_at"`
	CreatedBy         string     `bun:"created_by"`
	CreatedAt         time.Time  `bun:"created_at"`
	UpdatedAt         time.Time  `bun:"updated_at"`
	EvaluatedAt       *time.Time `bun:"evaluated_at"`
	SubjectsEvaluated int        `bun:"subjects_evaluated"`
	ViolationCount    int        `bun:"violation_count"`
}

// Violation is a row of compliance_rule_violations: one schema keyword a
// subject failed.
type Violation struct {
	bun.BaseModel `bun:"table:compliance_rule_violations,alias:v"`
	ID            int64     `bun:"id,pk,autoincrement" json:"-"`
	RuleID        int64     `bun:"rule_id" json:"rule_id"`
	TenantID      string    `bun:"tenant_id" json:"tenant_id"`
	Subject       string    `bun:"subject" json:"subject" doc:"The resource's ARM id, or the tenant's id for mfa_coverage and compliance_score"`
	SubjectName   string    `bun:"subject_name" json:"subject_name" doc:"The resource's name, or the tenant's id"`
	InstancePath  string    `bun:"instance_path" json:"instance_path" doc:"JSON Pointer to the failing value in the subject's record; empty for the record itself"`
	Keyword       string    `bun:"keyword" json:"keyword" doc:"The schema keyword that failed, e.g. minimum, required, enum; false where a false schema refused the value"`
	SchemaPath    string    `bun:"schema_path" json:"schema_path" doc:"JSON Pointer to that keyword in the rule's schema"`
	Message       string    `bun:"message" json:"message"`
	EvaluatedAt   time.Time `bun:"evaluated_at" json:"evaluated_at"`
}
