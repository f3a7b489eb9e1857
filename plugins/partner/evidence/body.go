package evidence

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
	"github.com/stewardhq/steward/sdk/protocol"
)

// maxLinkLen bounds a link; the bodies' other bounds are their tags.
const maxLinkLen = 2048

// Opt is a body member that may be left out, given, or null: Set says the
// body has it, and Value is nil when it is null.
type Opt[T any] struct {
	Set   bool
	Value *T
}

// UnmarshalJSON records the member as given.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		return nil
	}
	o.Value = new(T)
	return json.Unmarshal(b, o.Value)
}

// Schema documents the member as T, or null.
func (Opt[T]) Schema(r huma.Registry) *huma.Schema {
	s := *r.Schema(reflect.TypeFor[T](), true, "")
	s.Nullable = true
	return &s
}

// Content is evidence's editable members. In a PATCH a member left out
// keeps its value and null clears it; text is stored without markup.
type Content struct {
	Owner     Opt[string]   `json:"owner" required:"false" maxLength:"255" doc:"Who gathers the evidence; plain text, markup is removed before storing"`
	DueDate   Opt[string]   `json:"due_date" required:"false" format:"date" doc:"When the evidence is due"`
	Notes     Opt[string]   `json:"notes" required:"false" maxLength:"4000" doc:"Plain text; markup is removed before storing"`
	Links     Opt[[]string] `json:"links" required:"false" maxItems:"20" maxLength:"2048" doc:"Absolute http or https URLs without credentials, each once"`
	ExpiresAt Opt[string]   `json:"expires_at" required:"false" format:"date-time" doc:"When the evidence lapses once accepted"`
}

// problems collects the invalid members of a body.
type problems struct{ jsonbody.Problems }

// text is a text member as stored: markup removed, trimmed, without
// control characters but, in multi-line text, line breaks and tabs; nil
// when that leaves nothing.
func (p *problems) text(loc string, s *string, multiline bool) *string {
	if s == nil {
		return nil
	}
	clean, ok := jsonbody.Sanitize(*s)
	switch {
	case !ok:
		p.Add(loc, "must not hold markup, encoded or not")
	case protocol.ControlChars(clean, multiline):
		p.Add(loc, protocol.MsgControlChars)
	case clean != "":
		return &clean
	}
	return nil
}

// links checks a list of links, each an absolute http or https URL given
// once.
func (p *problems) links(list []string) []string {
	out := []string{}
	for i, s := range list {
		loc := fmt.Sprintf("body.links[%d]", i)
		if msg := checkLink(s); msg != "" {
			p.Add(loc, "%s", msg)
			continue
		}
		if j := slices.Index(out, s); j >= 0 {
			p.Add(loc, "repeats body.links[%d]", j)
			continue
		}
		out = append(out, s)
	}
	return out
}

// checkLink says what is wrong with a link, or "".
func checkLink(s string) string {
	if len(s) > maxLinkLen {
		return fmt.Sprintf("must be at most %d characters", maxLinkLen)
	}
	if protocol.ControlChars(s, false) || strings.ContainsAny(s, " \"<>\\`") {
		return "must be a URL without spaces, quotes or angle brackets"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || !u.IsAbs():
		return "must be an absolute URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.Hostname() == "":
		return "must name a host"
	case u.User != nil:
		return "must not carry a user name or password"
	}
	return ""
}

// apply sets the members of c the body has on e: a member left out keeps
// its value, null clears it. The schema has checked the dates' form.
func (p *problems) apply(e *Evidence, c Content) {
	if c.Owner.Set {
		e.Owner = p.text("body.owner", c.Owner.Value, false)
	}
	if c.DueDate.Set {
		e.DueDate = c.DueDate.Value
	}
	if c.Notes.Set {
		e.Notes = p.text("body.notes", c.Notes.Value, true)
	}
	if c.Links.Set {
		e.Links = []string{}
		if c.Links.Value != nil {
			e.Links = p.links(*c.Links.Value)
		}
	}
	if c.ExpiresAt.Set {
		e.ExpiresAt = nil
		if v := c.ExpiresAt.Value; v != nil {
			if t, err := time.Parse(time.RFC3339, *v); err != nil {
				p.Add("body.expires_at", "must be a date-time, RFC 3339 (e.g. 2027-01-31T00:00:00Z)")
			} else {
				t = t.UTC().Truncate(time.Microsecond)
				e.ExpiresAt = &t
			}
		}
	}
}

// contentChanged reports whether a PATCH body changes more than status.
func contentChanged(before, after *Evidence) bool {
	return !eqPtr(before.Owner, after.Owner) || !eqPtr(before.DueDate, after.DueDate) || !eqPtr(before.Notes, after.Notes) ||
		!slices.Equal(before.Links, after.Links) || !eqTime(before.ExpiresAt, after.ExpiresAt)
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func eqTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

// requirement checks a requirement id, which must be in the catalogue.
func (p *problems) requirement(s string, known func(string) bool) string {
	switch {
	case s == "":
		p.Add("body.requirement_id", "is required")
	case protocol.ControlChars(s, false):
		p.Add("body.requirement_id", protocol.MsgControlChars)
	case !known(s):
		p.Add("body.requirement_id", "is not a requirement of the partner's catalogue")
	default:
		return s
	}
	return ""
}

// tenantOf is new evidence's tenant: the named one, which the host has
// checked the caller may see, or, when none is named, the caller's only
// tenant.
func tenantOf(named sdk.TenantID, pr sdk.Principal) (string, error) {
	if named != "" {
		return string(named), nil
	}
	switch len(pr.TenantIDs) {
	case 0:
		return "", sdk.Forbidden("the caller may see no tenant to keep evidence for")
	case 1:
		return pr.TenantIDs[0], nil
	}
	return "", sdk.Invalid("body.tenant_id", "is required: the caller may see %d tenants", len(pr.TenantIDs))
}
