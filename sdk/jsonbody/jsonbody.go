// Package jsonbody reads a JSON object request body member by member, so
// that a handler can tell a member that is absent from one that is null,
// refuse members it does not know, and answer every invalid member in one
// 422 problem that names each (body.<member>). Text members, and with
// Plain the text a typed route's body has decoded, come back as plain
// text: markup, encoded or not, is removed, and control characters are
// refused as the host refuses them in queries and forms.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/microcosm-cc/bluemonday"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// sanitizeRounds bounds how many layers of encoded markup Sanitize peels
// off before it gives up on a value.
const sanitizeRounds = 10

// strict removes every element; bluemonday's policies are safe for
// concurrent use.
var strict = bluemonday.StrictPolicy()

// Sanitize removes markup from text and returns plain text. bluemonday's
// strict policy drops every tag (and the content of script and style
// elements) and escapes what is left for HTML; unescaping that gives the
// text back, but may reveal markup that was sent entity-encoded
// ("&lt;script&gt;"), so the two steps repeat until nothing changes. What
// comes out, trimmed, holds no markup, encoded or not; ok is false if
// layers of encoding remain after ten rounds.
func Sanitize(s string) (string, bool) {
	for range sanitizeRounds {
		t := html.UnescapeString(strict.Sanitize(s))
		if t == s {
			return strings.TrimSpace(t), true
		}
		s = t
	}
	return "", false
}

// Object is a JSON object body by member.
type Object map[string]json.RawMessage

// Read reads a JSON object body of at most maxBytes; anything else is a
// 422 naming the body.
func Read(r *http.Request, maxBytes int64) (Object, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, maxBytes)); err != nil {
		return nil, sdk.Invalid("body", "size: the body is larger than %d bytes or unreadable", maxBytes)
	}
	var o Object
	if err := json.Unmarshal(buf.Bytes(), &o); err != nil || o == nil {
		return nil, sdk.Invalid("body", "must be a JSON object")
	}
	return o, nil
}

// Get returns a member that is present and not null.
func (o Object) Get(k string) (json.RawMessage, bool) {
	raw, ok := o[k]
	return raw, ok && !IsNull(raw)
}

// IsNull reports whether a member is JSON null.
func IsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// Problems collects the invalid members of a body. A handler's own
// checks of its members add to it, and Err answers them all at once.
type Problems struct{ list []sdk.ErrorDetail }

// Add records a problem of the member at location (body.<member>).
func (p *Problems) Add(location, format string, args ...any) {
	p.list = append(p.list, sdk.ErrorDetail{Location: location, Message: fmt.Sprintf(format, args...)})
}

// AddErr records the details of a 422 problem, or err's text at location.
func (p *Problems) AddErr(location string, err error) {
	var prob *sdk.Problem
	if errors.As(err, &prob) && len(prob.Errors) > 0 {
		p.list = append(p.list, prob.Errors...)
		return
	}
	p.Add(location, "%v", err)
}

// Len is how many problems have been recorded, so a reader can tell
// whether the member it just read added one.
func (p *Problems) Len() int { return len(p.list) }

// Err is the 422 problem naming every member recorded, or nil.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	first := p.list[0]
	prob := sdk.Invalid(first.Location, "%s", first.Message)
	prob.Errors = p.list
	return prob
}

// Members refuses members outside allowed, naming those the service sets
// itself (service) apart from those the body does not have.
func (p *Problems) Members(o Object, allowed, service []string) {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case slices.Contains(service, k):
			p.Add("body."+k, "is set by the service; leave it out")
		case !slices.Contains(allowed, k):
			p.Add("body."+k, "is not a field of this body")
		}
	}
}

// String reads a string member; ok is false (and a problem added) when the
// member is not a string.
func (p *Problems) String(loc string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.Add(loc, "must be a string")
		return "", false
	}
	return s, true
}

// Text reads a plain-text member: markup removed, trimmed, at most maxLen
// characters, without control characters but line breaks and tabs in
// multi-line text. ok is false when a problem was added.
func (p *Problems) Text(loc string, raw json.RawMessage, maxLen int, multiline bool) (string, bool) {
	s, ok := p.String(loc, raw)
	if !ok {
		return "", false
	}
	return p.Plain(loc, s, maxLen, multiline)
}

// Plain checks text that a typed route's body has already decoded as Text
// checks a member: markup removed, trimmed, at most maxLen characters,
// without control characters but line breaks and tabs in multi-line text.
// ok is false when a problem was added.
func (p *Problems) Plain(loc, s string, maxLen int, multiline bool) (string, bool) {
	clean, ok := Sanitize(s)
	switch {
	case !ok:
		p.Add(loc, "must not hold markup, encoded or not")
	case utf8.RuneCountInString(clean) > maxLen:
		p.Add(loc, "must be at most %d characters", maxLen)
	case protocol.ControlChars(clean, multiline):
		p.Add(loc, protocol.MsgControlChars)
	default:
		return clean, true
	}
	return "", false
}
