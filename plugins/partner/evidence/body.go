package evidence

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Bounds of a body's members.
const (
	maxBodyBytes     = 64 << 10
	maxRequirementID = 100
	maxOwnerLen      = 255
	maxNotesLen      = 4000
	maxReasonLen     = 2000
	maxLinks         = 20
	maxLinkLen       = 2048
	maxValidityDays  = 3650
)

// problems collects the invalid members of a body, with this package's
// readers of its members beside jsonbody's.
type problems struct{ jsonbody.Problems }

// optionalText reads a text member that null or "" clears.
func (p *problems) optionalText(f jsonbody.Object, name string, maxLen int, multiline bool) *string {
	raw, ok := f.Get(name)
	if !ok {
		return nil
	}
	s, ok := p.Text("body."+name, raw, maxLen, multiline)
	if !ok || s == "" {
		return nil
	}
	return &s
}

// date reads a YYYY-MM-DD member that null clears.
func (p *problems) date(f jsonbody.Object, name string) *string {
	raw, ok := f.Get(name)
	if !ok {
		return nil
	}
	s, ok := p.String("body."+name, raw)
	if !ok {
		return nil
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		p.Add("body."+name, "must be a date, YYYY-MM-DD")
		return nil
	}
	return &s
}

// dateTime reads an RFC 3339 member that null clears.
func (p *problems) dateTime(f jsonbody.Object, name string) *time.Time {
	raw, ok := f.Get(name)
	if !ok {
		return nil
	}
	s, ok := p.String("body."+name, raw)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		p.Add("body."+name, "must be a date-time, RFC 3339 (e.g. 2027-01-31T00:00:00Z)")
		return nil
	}
	t = t.UTC().Truncate(time.Microsecond)
	return &t
}

// links reads a list of absolute http or https URLs that null clears.
func (p *problems) links(f jsonbody.Object) []string {
	out := []string{}
	raw, ok := f.Get("links")
	if !ok {
		return out
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		p.Add("body.links", "must be an array of URLs")
		return out
	}
	if len(list) > maxLinks {
		p.Add("body.links", "must have at most %d links", maxLinks)
		return out
	}
	for i, item := range list {
		loc := fmt.Sprintf("body.links[%d]", i)
		s, ok := p.String(loc, item)
		if !ok {
			continue
		}
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

// editFields are the members a PATCH may carry, and those of a create
// besides tenant_id and requirement_id.
var editFields = []string{"status", "owner", "due_date", "notes", "links", "expires_at"}

// serviceFields are members of evidence the service sets.
var serviceFields = []string{"id", "file_count", "review_reason", "reviewed_by", "reviewed_at", "created_by", "updated_by", "created_at", "updated_at"}

// applyContent sets the members of f that are present on e: a member
// left out keeps its value, null clears it.
func (p *problems) applyContent(e *Evidence, f jsonbody.Object) {
	if _, ok := f["owner"]; ok {
		e.Owner = p.optionalText(f, "owner", maxOwnerLen, false)
	}
	if _, ok := f["due_date"]; ok {
		e.DueDate = p.date(f, "due_date")
	}
	if _, ok := f["notes"]; ok {
		e.Notes = p.optionalText(f, "notes", maxNotesLen, true)
	}
	if _, ok := f["links"]; ok {
		e.Links = p.links(f)
	}
	if _, ok := f["expires_at"]; ok {
		e.ExpiresAt = p.dateTime(f, "expires_at")
	}
}

// contentChanged reports whether a PATCH body changes more than status.
func contentChanged(before, after *Evidence) bool {
	return !eqPtr(before.Owner, after.Owner) || !eqPtr(before.DueDate, after.DueDate) || !eqPtr(before.Notes, after.Notes) ||
		!slices.Equal(before.Links, after.Links) || !eqTime(before.ExpiresAt, after.ExpiresAt)
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func eqTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

// status reads a status a PATCH or create may set: those set by a
// review or the schedule are refused.
func (p *problems) status(f jsonbody.Object, allowed []string) (string, bool) {
	raw, ok := f.Get("status")
	if !ok {
		if _, present := f["status"]; present {
			p.Add("body.status", "must be one of %s", strings.Join(allowed, ", "))
		}
		return "", false
	}
	s, ok := p.String("body.status", raw)
	if !ok {
		return "", false
	}
	switch {
	case s == StatusAccepted || s == StatusRejected:
		p.Add("body.status", "%s is set by an admin's review (POST .../review)", s)
	case s == StatusExpired:
		p.Add("body.status", "expired is set by the daily expiry of accepted evidence")
	case !slices.Contains(allowed, s):
		p.Add("body.status", "must be one of %s", strings.Join(allowed, ", "))
	default:
		return s, true
	}
	return "", false
}

// requirement reads the requirement id, which must be in the catalogue.
func (p *problems) requirement(f jsonbody.Object, known func(string) bool) string {
	raw, ok := f.Get("requirement_id")
	if !ok {
		p.Add("body.requirement_id", "is required")
		return ""
	}
	s, ok := p.String("body.requirement_id", raw)
	switch {
	case !ok:
	case s == "":
		p.Add("body.requirement_id", "is required")
	case len(s) > maxRequirementID:
		p.Add("body.requirement_id", "must be at most %d characters", maxRequirementID)
	case protocol.ControlChars(s, false):
		p.Add("body.requirement_id", protocol.MsgControlChars)
	case !known(s):
		p.Add("body.requirement_id", "is not a requirement of the partner's catalogue")
	default:
		return s
	}
	return ""
}

// tenantOf resolves new evidence's tenant for the principal: the named
// one, which the principal must be able to see (403), or, when none is
// named, the principal's only tenant.
func tenantOf(f jsonbody.Object, pr sdk.Principal) (string, error) {
	raw, ok := f.Get("tenant_id")
	if !ok {
		switch len(pr.TenantIDs) {
		case 0:
			return "", sdk.Forbidden("the caller may see no tenant to keep evidence for")
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

// reviewBody is an admin's decision, checked.
type reviewBody struct {
	decision     string
	reason       string
	validityDays int
}

func readReview(f jsonbody.Object) (reviewBody, error) {
	var p problems
	var out reviewBody
	p.Members(f, []string{"decision", "reason", "validity_days"}, nil)
	if raw, ok := f.Get("decision"); !ok {
		p.Add("body.decision", "is required")
	} else if s, ok := p.String("body.decision", raw); ok {
		if s != DecisionAccepted && s != DecisionRejected {
			p.Add("body.decision", "must be accepted or rejected")
		}
		out.decision = s
	}
	if raw, ok := f.Get("reason"); !ok {
		p.Add("body.reason", "is required")
	} else if s, ok := p.Text("body.reason", raw, maxReasonLen, true); ok {
		if s == "" {
			p.Add("body.reason", "must not be empty")
		}
		out.reason = s
	}
	if raw, ok := f.Get("validity_days"); ok {
		var n int
		switch {
		case json.Unmarshal(raw, &n) != nil:
			p.Add("body.validity_days", "must be a whole number of days")
		case n < 1 || n > maxValidityDays:
			p.Add("body.validity_days", "must be between 1 and %d", maxValidityDays)
		case out.decision == DecisionRejected:
			p.Add("body.validity_days", "is only for an acceptance")
		default:
			out.validityDays = n
		}
	}
	return out, p.Err()
}
