package rules

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Bounds of a rule's fields, as the rule table gives them; a description
// is text, bounded here.
const (
	maxNameLen         = 255
	maxDescriptionLen  = 4000
	maxResourceTypeLen = 255
	// maxBodyBytes leaves room for a schema of MaxSchemaBytes sent with
	// indentation, so that a schema too large is refused by its guard.
	maxBodyBytes = 256 << 10
)

// resourceTypeRE is an ARM resource type: a namespace and one or more
// type names, e.g. Microsoft.Compute/disks.
var resourceTypeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.-]*(/[A-Za-z0-9][A-Za-z0-9.-]*)+$`)

// problems collects the invalid members of a body, with this package's
// readers of its members beside jsonbody's.
type problems struct{ jsonbody.Problems }

// oneOf reads a string member that must be one of values.
func (p *problems) oneOf(loc string, raw json.RawMessage, values []string) string {
	s, ok := p.String(loc, raw)
	if ok && !slices.Contains(values, s) {
		p.Add(loc, "must be one of %s", strings.Join(values, ", "))
	}
	return s
}

// ruleFields are the members a rule body may have.
var ruleFields = []string{"tenant_id", "rule_name", "rule_description", "category", "resource_type", "severity", "effect", "schema", "is_active"}

// serviceFields are members of a rule the service sets.
var serviceFields = []string{"id", "created_by", "created_at", "updated_at", "evaluated_at", "subjects_evaluated", "violation_count"}

// required are the members a body must have and may not set to null.
var required = []string{"rule_name", "category", "schema"}

// apply checks a create or PUT body and sets the rule's definition from
// it: PUT replaces the whole definition, so an optional member left out
// takes its default (severity Medium, effect audit, is_active true, no
// description). tenant_id is resolved by the caller before.
func apply(r *Rule, f jsonbody.Object) error {
	var p problems
	for k := range f {
		switch {
		case slices.Contains(serviceFields, k):
			p.Add("body."+k, "is set by the service; leave it out")
		case !slices.Contains(ruleFields, k):
			p.Add("body."+k, "is not a field of a rule")
		}
	}
	for _, k := range required {
		if raw, ok := f[k]; !ok || jsonbody.IsNull(raw) {
			p.Add("body."+k, "is required")
		}
	}
	if raw, ok := f.Get("rule_name"); ok {
		name, ok := p.Text("body.rule_name", raw, maxNameLen, false)
		if ok && name == "" {
			p.Add("body.rule_name", "must not be empty once markup is removed")
		}
		r.Name = name
	}
	r.Description = nil
	if raw, ok := f.Get("rule_description"); ok {
		if d, ok := p.Text("body.rule_description", raw, maxDescriptionLen, true); ok && d != "" {
			r.Description = &d
		}
	}
	if raw, ok := f.Get("category"); ok {
		r.Category = p.oneOf("body.category", raw, Categories)
	}
	r.ResourceType = nil
	if raw, ok := f.Get("resource_type"); ok {
		if s, ok := p.String("body.resource_type", raw); ok && s != "" {
			switch {
			case len(s) > maxResourceTypeLen:
				p.Add("body.resource_type", "must be at most %d characters", maxResourceTypeLen)
			case !resourceTypeRE.MatchString(s):
				p.Add("body.resource_type", "must be a resource type such as Microsoft.Compute/disks")
			}
			lower := strings.ToLower(s)
			r.ResourceType = &lower
		}
	}
	switch {
	case r.Category == CategoryResourceProperty && r.ResourceType == nil:
		p.Add("body.resource_type", "is required for a resource_property rule")
	case r.Category != CategoryResourceProperty && r.ResourceType != nil && slices.Contains(Categories, r.Category):
		p.Add("body.resource_type", "is only for resource_property rules")
	}
	r.Severity = DefaultSeverity
	if raw, ok := f.Get("severity"); ok {
		r.Severity = p.oneOf("body.severity", raw, Severities)
	}
	r.Effect = EffectAudit
	if raw, ok := f.Get("effect"); ok {
		r.Effect = p.oneOf("body.effect", raw, Effects)
	}
	r.IsActive = true
	if raw, ok := f.Get("is_active"); ok {
		if err := json.Unmarshal(raw, &r.IsActive); err != nil {
			p.Add("body.is_active", "must be true or false")
		}
	}
	if raw, ok := f.Get("schema"); ok {
		if _, err := CompileSchema(raw); err != nil {
			p.AddErr(schemaLoc, err)
		} else {
			var compact bytes.Buffer
			_ = json.Compact(&compact, raw)
			r.Schema = compact.String()
		}
	}
	return p.Err()
}

// tenantOf resolves a new rule's tenant for the principal: the named one,
// which the principal must be able to see (403), or, when none is named,
// the principal's only tenant.
func tenantOf(f jsonbody.Object, pr sdk.Principal) (string, error) {
	raw, ok := f["tenant_id"]
	if !ok || jsonbody.IsNull(raw) {
		switch len(pr.TenantIDs) {
		case 0:
			return "", sdk.Forbidden("the caller may see no tenant to create a rule in")
		case 1:
			return pr.TenantIDs[0], nil
		}
		return "", sdk.Invalid("body.tenant_id", "is required: the caller may see %d tenants", len(pr.TenantIDs))
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil || id == "" {
		return "", sdk.Invalid("body.tenant_id", "must be a tenant id")
	}
	if !pr.CanSee(id) {
		return "", sdk.Forbidden("no access to the tenant")
	}
	return id, nil
}
