package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// MsgValidationFailed is the detail of every 422 the host answers for a
// request whose inputs it refuses; each problem is named in its errors.
const MsgValidationFailed = "validation failed"

// MsgControlChars is the message of a value refused by InputErrors.
const MsgControlChars = "must be UTF-8 text without control characters"

// ControlChars reports whether s holds a control character or is not
// UTF-8 (which PostgreSQL refuses as well). Multi-line text may carry tabs
// and line breaks; nothing else below space, nor DEL, belongs in a name, an
// id or a filter, and the databases refuse NUL.
func ControlChars(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			if multiline && (r == '\t' || r == '\n' || r == '\r') {
				continue
			}
			return true
		}
	}
	return false
}

// MsgBadEscape is the message of a path parameter refused by
// DecodePathParams.
const MsgBadEscape = "must be validly percent-encoded"

// DecodePathParams decodes path parameters matched on a request's path as
// it was sent, percent-encoded, into the values the caller meant — those
// InputErrors checks and a plugin's handler reads (net/http decodes a path
// value the same way). A value that does not decode is named, in name
// order, and left out.
func DecodePathParams(raw map[string]string) (map[string]string, []*huma.ErrorDetail) {
	out := make(map[string]string, len(raw))
	var errs []*huma.ErrorDetail
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		v, err := url.PathUnescape(raw[name])
		if err != nil {
			errs = append(errs, &huma.ErrorDetail{Location: "path." + printableName(name), Message: MsgBadEscape})
			continue
		}
		out[name] = v
	}
	return out, errs
}

// Inputs are the parts of a request InputErrors reads: the matched path
// parameters, decoded, the query and form fields in request order, and
// the body with its Content-Type.
type Inputs struct {
	PathParams  map[string]string
	Query       [][2]string
	ContentType string
	// Form holds the fields of a form body; the caller parses it only when
	// ContentType is application/x-www-form-urlencoded.
	Form [][2]string
	Body []byte
}

// IsForm reports whether the body is a URL-encoded form.
func (in Inputs) IsForm() bool {
	ct, _, _ := mime.ParseMediaType(in.ContentType)
	return ct == "application/x-www-form-urlencoded"
}

// InputErrors names every path parameter, query parameter, form field and
// JSON string of a request that carries a control character, as a 422
// names them: "path.tenant_id", "query.actor_email", "body.name",
// "body.thresholds[0].contact_emails[1]". The host runs it before any
// handler, its own or a plugin's, so no such value reaches a store; the
// test harness runs it before a plugin's handler too.
func InputErrors(in Inputs) []*huma.ErrorDetail {
	var errs []*huma.ErrorDetail
	add := func(loc string) {
		errs = append(errs, &huma.ErrorDetail{Location: loc, Message: MsgControlChars})
	}
	names := make([]string, 0, len(in.PathParams))
	for name := range in.PathParams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if ControlChars(in.PathParams[name], false) {
			add("path." + name)
		}
	}
	seen := map[string]bool{}
	for _, kv := range in.Query {
		name := kv[0]
		if !seen[name] && (ControlChars(name, false) || ControlChars(kv[1], false)) {
			seen[name] = true
			add("query." + printableName(name))
		}
	}
	ct, _, _ := mime.ParseMediaType(in.ContentType)
	switch {
	case ct == "application/x-www-form-urlencoded":
		for _, kv := range in.Form {
			if ControlChars(kv[0], false) || ControlChars(kv[1], true) {
				add("body." + printableName(kv[0]))
			}
		}
	case ct == "application/json" || strings.HasSuffix(ct, "+json"):
		body := in.Body
		// Only a body with an escape that can spell a control character,
		// or a raw DEL or C1 control (which JSON allows unescaped), is
		// decoded a second time to find the field.
		if bytes.Contains(body, []byte(`\u`)) || bytes.Contains(body, []byte(`\b`)) || bytes.Contains(body, []byte(`\f`)) || bytes.IndexByte(body, 0x7f) >= 0 || rawC1(body) {
			var v any
			if json.Unmarshal(body, &v) == nil {
				walkJSON(v, "body", add)
			}
		}
	}
	return errs
}

// rawC1 reports whether b holds a C1 control character (U+0080 to
// U+009F) in UTF-8: 0xC2 and a byte from 0x80 to 0x9F.
func rawC1(b []byte) bool {
	for {
		i := bytes.IndexByte(b, 0xc2)
		if i < 0 || i+1 >= len(b) {
			return false
		}
		if b[i+1] >= 0x80 && b[i+1] < 0xa0 {
			return true
		}
		b = b[i+1:]
	}
}

// printableName is a field name as a location may echo it: without
// control characters and valid UTF-8.
func printableName(name string) string {
	return strings.ToValidUTF8(strings.Map(printable, name), "")
}

func printable(r rune) rune {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
		return -1
	}
	return r
}

func walkJSON(v any, loc string, add func(string)) {
	switch x := v.(type) {
	case string:
		if ControlChars(x, true) {
			add(loc)
		}
	case []any:
		for i, e := range x {
			walkJSON(e, fmt.Sprintf("%s[%d]", loc, i), add)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := strings.Map(printable, k)
			if name != k {
				add(loc + "." + name)
				continue
			}
			walkJSON(x[k], loc+"."+k, add)
		}
	}
}
