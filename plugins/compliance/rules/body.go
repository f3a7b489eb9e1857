package rules

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Bounds of a rule's text fields, as the rule table gives them; a
// description is text, bounded here. The body's schema declares them too.
const (
	maxNameLen        = 255
	maxDescriptionLen = 4000
)

// resourceTypeRE is an ARM resource type: a namespace and one or more
// type names, e.g. Microsoft.Compute/disks.
var resourceTypeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.-]*(/[A-Za-z0-9][A-Za-z0-9.-]*)+$`)

// Definition is a rule's definition as a create or PUT body gives it.
// The binding checks what the schema says and fills in the defaults; apply
// checks the rest.
type Definition struct {
	RuleName        string     `json:"rule_name" maxLength:"255" doc:"Markup is removed before storing (encoded markup too); what remains must not be empty"`
	RuleDescription *string    `json:"rule_description,omitempty" required:"false" nullable:"true" maxLength:"4000" doc:"Markup is removed before storing"`
	Category        string     `json:"category" enum:"resource_property,compliance_score,mfa_coverage"`
	ResourceType    *string    `json:"resource_type,omitempty" required:"false" nullable:"true" maxLength:"255" doc:"Required for resource_property (an ARM type such as Microsoft.Compute/disks), refused for the others"`
	Severity        string     `json:"severity,omitempty" required:"false" enum:"Low,Medium,High,Critical" default:"Medium"`
	Effect          string     `json:"effect,omitempty" required:"false" enum:"audit,disabled" default:"audit"`
	Schema          ruleSchema `json:"schema" doc:"A JSON Schema (draft 2020-12): at most 64 KiB without whitespace, 10 levels of nesting, patterns of 500 characters, only local $ref, and at most 10,000 schema objects once every $ref and $dynamicRef is counted as the part it names (reference fan-out); format is not asserted. Each record's validation may visit at most 100,000 schema objects, and a rule's evaluation for a tenant may take 10 s"`
	IsActive        *bool      `json:"is_active,omitempty" required:"false" default:"true"`
}

// ruleSchema is a rule's schema as the body sends it: a JSON object, kept
// as sent for CompileSchema's guards and for storing.
type ruleSchema json.RawMessage

// UnmarshalJSON keeps the member's JSON.
func (s *ruleSchema) UnmarshalJSON(b []byte) error {
	*s = slices.Clone(b)
	return nil
}

// Schema documents the member as a JSON object.
func (ruleSchema) Schema(huma.Registry) *huma.Schema { return &huma.Schema{Type: huma.TypeObject} }

// apply checks a create or PUT body's definition beyond its schema and
// sets the rule's definition from it: PUT replaces the whole definition,
// so an optional member left out takes its default (severity Medium,
// effect audit, is_active true, no description). The rule's tenant is
// resolved by the caller before.
func apply(r *Rule, d *Definition) error {
	var p jsonbody.Problems
	name, ok := p.Plain("body.rule_name", d.RuleName, maxNameLen, false)
	if ok && name == "" {
		p.Add("body.rule_name", "must not be empty once markup is removed")
	}
	r.Name, r.Description = name, nil
	if d.RuleDescription != nil {
		if s, ok := p.Plain("body.rule_description", *d.RuleDescription, maxDescriptionLen, true); ok && s != "" {
			r.Description = &s
		}
	}
	r.Category, r.ResourceType = d.Category, nil
	if s := d.ResourceType; s != nil && *s != "" {
		if !resourceTypeRE.MatchString(*s) {
			p.Add("body.resource_type", "must be a resource type such as Microsoft.Compute/disks")
		}
		lower := strings.ToLower(*s)
		r.ResourceType = &lower
	}
	switch {
	case r.Category == CategoryResourceProperty && r.ResourceType == nil:
		p.Add("body.resource_type", "is required for a resource_property rule")
	case r.Category != CategoryResourceProperty && r.ResourceType != nil:
		p.Add("body.resource_type", "is only for resource_property rules")
	}
	r.Severity, r.Effect, r.IsActive = d.Severity, d.Effect, *d.IsActive
	if _, err := CompileSchema(d.Schema); err != nil {
		p.AddErr(schemaLoc, err)
	} else {
		var compact bytes.Buffer
		_ = json.Compact(&compact, d.Schema)
		r.Schema = compact.String()
	}
	return p.Err()
}

// tenantOf resolves a new rule's tenant for the principal: the one the
// body names, which the host has checked the principal may see; when none
// is named, the one the caller picked in its authorisation context: the
// tenant picker's selection (picked, which must be a tenant the principal
// may see, as the host would check it), or the principal's only tenant.
// A caller of several tenants that names and picks none is told to name
// one.
func tenantOf(named sdk.TenantID, picked string, pr sdk.Principal) (string, error) {
	switch {
	case picked != "" && !pr.CanSee(picked):
		return "", sdk.Forbidden(protocol.MsgNoTenantAccess)
	case named != "" && picked != "" && string(named) != picked:
		return "", sdk.Invalid("body.tenant_id", "names another tenant than the one picked (query tenant_id); name the same or leave it out")
	case named != "":
		return string(named), nil
	case picked != "":
		return picked, nil
	}
	switch len(pr.TenantIDs) {
	case 0:
		return "", sdk.Forbidden("the caller may see no tenant to create a rule in")
	case 1:
		return pr.TenantIDs[0], nil
	}
	return "", sdk.Invalid("body.tenant_id", "is required: the caller may see %d tenants and picked none (query tenant_id)", len(pr.TenantIDs))
}
