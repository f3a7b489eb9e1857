package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/microcosm-cc/bluemonday"

	"github.com/stewardhq/steward/sdk"
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
	// sanitizeRounds bounds how many layers of encoded markup sanitize
	// peels off before it gives up on a value.
	sanitizeRounds = 10
)

// resourceTypeRE is an ARM resource type: a namespace and one or more
// type names, e.g. Microsoft.Compute/disks.
var resourceTypeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.-]*(/[A-Za-z0-9][A-Za-z0-9.-]*)+$`)

// strict removes every element; bluemonday's policies are safe for
// concurrent use.
var strict = bluemonday.StrictPolicy()

// sanitize removes markup from text and returns plain text. bluemonday's
// strict policy drops every tag (and the content of script and style
// elements) and escapes what is left for HTML; unescaping that gives the
// text back, but may reveal markup that was sent entity-encoded
// ("&lt;script&gt;"), so the two steps repeat until nothing changes. What
// comes out holds no markup, encoded or not; ok is false if layers of
// encoding remain after sanitizeRounds.
func sanitize(s string) (string, bool) {
	for range sanitizeRounds {
		t := html.UnescapeString(strict.Sanitize(s))
		if t == s {
			return strings.TrimSpace(t), true
		}
		s = t
	}
	return "", false
}

// fields is a JSON object body by member, so a member that is absent can
// be told from one that is null.
type fields map[string]json.RawMessage

// readObject reads a JSON object body of at most maxBodyBytes.
func readObject(r *http.Request) (fields, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, maxBodyBytes)); err != nil {
		return nil, sdk.Invalid("body", "size: the body is larger than %d bytes or unreadable", maxBodyBytes)
	}
	var f fields
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil || f == nil {
		return nil, sdk.Invalid("body", "must be a JSON object")
	}
	return f, nil
}

// problems collects the invalid members of a body.
type problems struct{ list []sdk.ErrorDetail }

func (p *problems) add(location, format string, args ...any) {
	p.list = append(p.list, sdk.ErrorDetail{Location: location, Message: fmt.Sprintf(format, args...)})
}

// addErr adds the details of a 422 problem, or err's text.
func (p *problems) addErr(location string, err error) {
	var prob *sdk.Problem
	if errors.As(err, &prob) && len(prob.Errors) > 0 {
		p.list = append(p.list, prob.Errors...)
		return
	}
	p.add(location, "%v", err)
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	first := p.list[0]
	prob := sdk.Invalid(first.Location, "%s", first.Message)
	prob.Errors = p.list
	return prob
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// str reads a string member; ok is false (and a problem added) when the
// member is not a string.
func (p *problems) str(loc string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.add(loc, "must be a string")
		return "", false
	}
	return s, true
}

// text reads a name or description: markup removed, trimmed, at most max
// characters, no control characters but newlines and tabs in a
// description.
func (p *problems) text(loc string, raw json.RawMessage, maxLen int, multiline bool) string {
	s, ok := p.str(loc, raw)
	if !ok {
		return ""
	}
	clean, ok := sanitize(s)
	if !ok {
		p.add(loc, "must not hold markup, encoded or not")
		return ""
	}
	control := func(r rune) bool {
		return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t' || r == '\r'))
	}
	switch n := len([]rune(clean)); {
	case n > maxLen:
		p.add(loc, "must be at most %d characters", maxLen)
	case strings.IndexFunc(clean, control) >= 0:
		p.add(loc, "must not contain control characters")
	}
	return clean
}

// oneOf reads a string member that must be one of values.
func (p *problems) oneOf(loc string, raw json.RawMessage, values []string) string {
	s, ok := p.str(loc, raw)
	if ok && !slices.Contains(values, s) {
		p.add(loc, "must be one of %s", strings.Join(values, ", "))
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
func apply(r *Rule, f fields) error {
	var p problems
	for k := range f {
		switch {
		case slices.Contains(serviceFields, k):
			p.add("body."+k, "is set by the service; leave it out")
		case !slices.Contains(ruleFields, k):
			p.add("body."+k, "is not a field of a rule")
		}
	}
	for _, k := range required {
		if raw, ok := f[k]; !ok || isNull(raw) {
			p.add("body."+k, "is required")
		}
	}
	get := func(k string) (json.RawMessage, bool) {
		raw, ok := f[k]
		return raw, ok && !isNull(raw)
	}
	if raw, ok := get("rule_name"); ok {
		n := len(p.list)
		r.Name = p.text("body.rule_name", raw, maxNameLen, false)
		if r.Name == "" && len(p.list) == n {
			p.add("body.rule_name", "must not be empty once markup is removed")
		}
	}
	r.Description = nil
	if raw, ok := get("rule_description"); ok {
		if d := p.text("body.rule_description", raw, maxDescriptionLen, true); d != "" {
			r.Description = &d
		}
	}
	if raw, ok := get("category"); ok {
		r.Category = p.oneOf("body.category", raw, Categories)
	}
	r.ResourceType = nil
	if raw, ok := get("resource_type"); ok {
		if s, ok := p.str("body.resource_type", raw); ok && s != "" {
			switch {
			case len(s) > maxResourceTypeLen:
				p.add("body.resource_type", "must be at most %d characters", maxResourceTypeLen)
			case !resourceTypeRE.MatchString(s):
				p.add("body.resource_type", "must be a resource type such as Microsoft.Compute/disks")
			}
			lower := strings.ToLower(s)
			r.ResourceType = &lower
		}
	}
	switch {
	case r.Category == CategoryResourceProperty && r.ResourceType == nil:
		p.add("body.resource_type", "is required for a resource_property rule")
	case r.Category != CategoryResourceProperty && r.ResourceType != nil && slices.Contains(Categories, r.Category):
		p.add("body.resource_type", "is only for resource_property rules")
	}
	r.Severity = DefaultSeverity
	if raw, ok := get("severity"); ok {
		r.Severity = p.oneOf("body.severity", raw, Severities)
	}
	r.Effect = EffectAudit
	if raw, ok := get("effect"); ok {
		r.Effect = p.oneOf("body.effect", raw, Effects)
	}
	r.IsActive = true
	if raw, ok := get("is_active"); ok {
		if err := json.Unmarshal(raw, &r.IsActive); err != nil {
			p.add("body.is_active", "must be true or false")
		}
	}
	if raw, ok := get("schema"); ok {
		if _, err := CompileSchema(raw); err != nil {
			p.addErr(schemaLoc, err)
		} else {
			var compact bytes.Buffer
			_ = json.Compact(&compact, raw)
			r.Schema = compact.String()
		}
	}
	return p.err()
}

// tenantOf resolves a new rule's tenant for the principal: the named one,
// which the principal must be able to see (403), or, when none is named,
// the principal's only tenant.
func tenantOf(f fields, pr sdk.Principal) (string, error) {
	raw, ok := f["tenant_id"]
	if !ok || isNull(raw) {
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
