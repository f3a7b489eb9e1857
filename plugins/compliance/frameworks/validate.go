package frameworks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is one problem in a definition file.
type Error struct {
	File string
	// Field is the JSON path of the offending value, such as
	// controls[3].keywords[0]; empty when the file as a whole is wrong.
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Message
	}
	return e.File + ": " + e.Field + ": " + e.Message
}

var (
	frameworkID = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	// Control and category ids as published: CC6.1, PR.AA-01, 5.1, 2.1.10.
	itemID = regexp.MustCompile(`^[A-Za-z0-9]+([.\-_][A-Za-z0-9]+)*$`)
	prefix = regexp.MustCompile(`^[A-Za-z0-9]+([.\-_ ]?[A-Za-z0-9]+)*[.\-_ ]?$`)
)

const (
	maxIDLen          = 32
	maxNameLen        = 300
	maxDescriptionLen = 600
)

// decode parses a file strictly: one object whose single key is the
// framework id, no duplicate keys anywhere, no unknown fields. The returned
// Error lacks the file name.
func decode(data []byte) (string, *Framework, *Error) {
	if !utf8.Valid(data) {
		return "", nil, &Error{Message: "file is not valid UTF-8"}
	}
	if err := checkKeys(data); err != nil {
		return "", nil, err
	}
	var wrapper map[string]json.RawMessage
	if err := json.Unmarshal(data, &wrapper); err != nil {
		return "", nil, &Error{Message: fmt.Sprintf("invalid JSON: %v", err)}
	}
	if len(wrapper) != 1 {
		return "", nil, &Error{Message: fmt.Sprintf("want one top-level key, the framework id, found %d", len(wrapper))}
	}
	var key string
	var raw json.RawMessage
	for key, raw = range wrapper {
	}
	// checkKeys has refused unknown fields already; this is a second guard.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f Framework
	if err := dec.Decode(&f); err != nil {
		return "", nil, &Error{Message: err.Error()}
	}
	return key, &f, nil
}

// fieldNames are the JSON names of the definition's fields. encoding/json
// matches names without regard to case, but OPA does not, so a field spelt
// "Name" would be read by one and not the other.
var fieldNames = func() map[string]bool {
	names := map[string]bool{}
	for _, v := range []any{Framework{}, GroupName{}, Domain{}, Category{}, Control{}, KeywordMatching{}, Override{}} {
		t := reflect.TypeOf(v)
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
				names[name] = true
			}
		}
	}
	return names
}()

// checkKeys walks the tokens of a file and refuses an object that names a
// key twice, which encoding/json would otherwise resolve silently in favour
// of the last, and a field inside the framework that is not spelt exactly as
// documented. The error names the field by its path inside the framework.
func checkKeys(data []byte) *Error {
	type frame struct {
		object bool
		keys   map[string]bool
		key    string // object: the key of the value being read
		expect bool   // object: the next token is a key
		n      int    // array: elements started so far
	}
	var stack []*frame
	// where is the path of the value being read, inside the framework
	// object (stack[0] is the object keyed by the framework id).
	where := func() string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case i == 0:
			case f.object:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			default:
				fmt.Fprintf(&b, "[%d]", f.n-1)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &Error{Field: where(), Message: fmt.Sprintf("invalid JSON: %v", err)}
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch {
		case top != nil && top.object && top.expect:
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				continue
			}
			key, _ := tok.(string)
			top.key = key
			if top.keys[key] {
				if len(stack) == 1 {
					return &Error{Message: fmt.Sprintf("duplicate top-level key %q", key)}
				}
				return &Error{Field: where(), Message: "duplicate key"}
			}
			if len(stack) > 1 && !fieldNames[key] {
				msg := "unknown field"
				if fieldNames[strings.ToLower(key)] {
					msg += fmt.Sprintf("; write %q", strings.ToLower(key))
				}
				return &Error{Field: where(), Message: msg}
			}
			top.keys[key] = true
			top.expect = false
			continue
		case top != nil && top.object:
			top.expect = true
		case top != nil && tok != json.Delim(']'):
			top.n++
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// validate checks a decoded framework; fileID is the file name without
// .json and key the top-level key.
func (f *Framework) validate(fileID, key string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{File: f.file, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case !frameworkID.MatchString(key):
		bad("", "top-level key %q is not a framework id (lower-case letters, digits and _, starting with a letter, at most 32)", key)
	case key != fileID:
		bad("", "top-level key %q differs from the file name %q", key, fileID+".json")
	case f.ID != key:
		bad("id", "%q differs from the top-level key %q", f.ID, key)
	}
	text := func(field, v string, max int) {
		switch {
		case strings.TrimSpace(v) == "":
			bad(field, "required")
		case v != strings.TrimSpace(v) || strings.ContainsAny(v, "\n\r\t"):
			bad(field, "leading or trailing space or a line break")
		case utf8.RuneCountInString(v) > max:
			bad(field, "longer than %d characters", max)
		}
	}
	text("name", f.Name, maxNameLen)
	text("version", f.Version, maxNameLen)
	text("description", f.Description, maxDescriptionLen)
	text("source", f.Source, maxDescriptionLen)

	// Category and control ids share one key space so that a group name
	// cannot be read as both.
	keys := map[string]string{}
	id := func(field, v string) bool {
		switch {
		case v == "":
			bad(field, "required")
		case len(v) > maxIDLen || !itemID.MatchString(v):
			bad(field, "%q is not an id (letters and digits separated by single . - or _, at most %d)", v, maxIDLen)
		default:
			k := Normalize(v)
			if prev, ok := keys[k]; ok {
				bad(field, "%q duplicates %s", v, prev)
				return false
			}
			keys[k] = fmt.Sprintf("%s (%q)", field, v)
			return true
		}
		return false
	}

	domains := map[string]bool{}
	for i, d := range f.Domains {
		field := fmt.Sprintf("domains[%d]", i)
		if id(field+".id", d.ID) {
			domains[d.ID] = true
		}
		text(field+".name", d.Name, maxNameLen)
	}
	if len(f.Categories) == 0 {
		bad("categories", "at least one category is required")
	}
	categories := map[string]bool{}
	inDomain := map[string]bool{}
	for i, c := range f.Categories {
		field := fmt.Sprintf("categories[%d]", i)
		if id(field+".id", c.ID) {
			categories[c.ID] = true
		}
		text(field+".name", c.Name, maxNameLen)
		switch {
		case len(f.Domains) == 0 && c.Domain != "":
			bad(field+".domain", "the framework has no domains")
		case len(f.Domains) > 0 && c.Domain == "":
			bad(field+".domain", "required when the framework has domains")
		case len(f.Domains) > 0 && !domains[c.Domain]:
			bad(field+".domain", "unknown domain %q", c.Domain)
		default:
			inDomain[c.Domain] = true
		}
	}
	for i, d := range f.Domains {
		if domains[d.ID] && !inDomain[d.ID] {
			bad(fmt.Sprintf("domains[%d]", i), "domain %q has no categories", d.ID)
		}
	}
	if len(f.Controls) == 0 {
		bad("controls", "at least one control is required")
	}
	used := map[string]bool{}
	for i, c := range f.Controls {
		field := fmt.Sprintf("controls[%d]", i)
		id(field+".id", c.ID)
		text(field+".name", c.Name, maxNameLen)
		text(field+".description", c.Description, maxDescriptionLen)
		switch {
		case c.Category == "":
			bad(field+".category", "required")
		case !categories[c.Category]:
			bad(field+".category", "unknown category %q", c.Category)
		default:
			used[c.Category] = true
		}
		errs = append(errs, f.validateKeywords(field+".keywords", c.Keywords)...)
		switch {
		case c.NegativeKeywords == nil:
		case len(c.NegativeKeywords) == 0:
			bad(field+".negative_keywords", "at least one keyword set is required when present")
		default:
			errs = append(errs, f.validateKeywords(field+".negative_keywords", c.NegativeKeywords)...)
		}
		errs = append(errs, f.validateOverrides(field+".overrides", c.Overrides)...)
	}
	for i, c := range f.Categories {
		if categories[c.ID] && !used[c.ID] && len(f.Controls) > 0 {
			bad(fmt.Sprintf("categories[%d]", i), "category %q has no controls", c.ID)
		}
	}
	errs = append(errs, f.validateGroupNames()...)
	errs = append(errs, f.validateKeywordMatching()...)
	return errs
}

// maxMinScore is the highest useful minimum score: a three-word phrase.
const maxMinScore = 4

func (f *Framework) validateKeywordMatching() []error {
	if f.KeywordMatching == nil {
		return nil
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{File: f.file, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if s := f.KeywordMatching.MinScore; s < 0 || s > maxMinScore {
		bad("keyword_matching.min_score", "%d is not between 1 and %d", s, maxMinScore)
	}
	seen := map[string]bool{}
	for i, w := range f.KeywordMatching.StopWords {
		field := fmt.Sprintf("keyword_matching.stop_words[%d]", i)
		switch words := Words(w); {
		case len(words) != 1 || words[0] != w:
			bad(field, "%q is not one canonical word", w)
		case seen[w]:
			bad(field, "%q appears twice", w)
		}
		seen[w] = true
	}
	return errs
}

func (f *Framework) validateOverrides(field string, overrides []Override) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{File: f.file, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	seen := map[string]int{}
	for i, o := range overrides {
		ofield := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case strings.TrimSpace(o.Policy) == "":
			bad(ofield+".policy", "required")
		case len(Words(o.Policy)) == 0:
			bad(ofield+".policy", "%q has no words", o.Policy)
		default:
			k := strings.Join(Words(o.Policy), " ")
			if prev, ok := seen[k]; ok {
				bad(ofield+".policy", "names the same policy as %s[%d]", field, prev)
			}
			seen[k] = i
		}
		switch {
		case strings.TrimSpace(o.Reason) == "":
			bad(ofield+".reason", "required")
		case o.Reason != strings.TrimSpace(o.Reason) || strings.ContainsAny(o.Reason, "\n\r\t"):
			bad(ofield+".reason", "leading or trailing space or a line break")
		case len(o.Reason) > maxDescriptionLen:
			bad(ofield+".reason", "longer than %d characters", maxDescriptionLen)
		}
	}
	return errs
}

func (f *Framework) validateKeywords(field string, sets [][]string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{File: f.file, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if sets == nil {
		bad(field, "required; write [] for a control that only group names map")
	}
	seen := map[string]int{}
	for i, set := range sets {
		sfield := fmt.Sprintf("%s[%d]", field, i)
		if len(set) == 0 {
			bad(sfield, "empty keyword set")
			continue
		}
		valid := true
		generic := true
		for j, w := range set {
			wfield := fmt.Sprintf("%s[%d]", sfield, j)
			words := Words(w)
			switch {
			case len(words) == 0:
				bad(wfield, "%q normalises to nothing", w)
				valid = false
			case len(words) > 1 || words[0] != w:
				quoted := make([]string, len(words))
				for k, word := range words {
					quoted[k] = strconv.Quote(word)
				}
				bad(wfield, "%q is not one canonical word; write %s", w, strings.Join(quoted, ", "))
				valid = false
			case utf8.RuneCountInString(w) < minWordLen:
				bad(wfield, "%q is shorter than %d characters", w, minWordLen)
				valid = false
			case !genericWords[w]:
				generic = false
			}
		}
		if !valid {
			continue
		}
		if hasDuplicate(set) {
			bad(sfield, "a word appears twice")
			continue
		}
		if generic {
			bad(sfield, "%q matches nearly every policy name; add a specific word", set)
			continue
		}
		sorted := slices.Clone(set)
		slices.Sort(sorted)
		k := strings.Join(sorted, " ")
		if prev, ok := seen[k]; ok {
			bad(sfield, "same words as %s[%d]", field, prev)
			continue
		}
		seen[k] = i
	}
	return errs
}

func hasDuplicate(words []string) bool {
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] {
			return true
		}
		seen[w] = true
	}
	return false
}

func (f *Framework) validateGroupNames() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &Error{File: f.file, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	prefixes := map[string]int{}
	for i, g := range f.GroupNames {
		field := fmt.Sprintf("group_names[%d]", i)
		if g.Prefix == "" || len(g.Prefix) > 64 || !prefix.MatchString(g.Prefix) {
			bad(field+".prefix", "%q is not a group-name prefix (letters, digits and single . - _ or space separators, at most 64)", g.Prefix)
			continue
		}
		k := Normalize(g.Prefix)
		if prev, ok := prefixes[k]; ok {
			bad(field+".prefix", "%q duplicates group_names[%d]", g.Prefix, prev)
			continue
		}
		prefixes[k] = i
		if strings.TrimSpace(g.Initiative) == "" {
			bad(field+".initiative", "required")
		}
		rest, ok := strings.CutPrefix(Normalize(g.Example), k+".")
		if !ok {
			bad(field+".example", "%q does not start with the prefix %q", g.Example, g.Prefix)
			continue
		}
		if _, ok := f.Control(rest); !ok {
			bad(field+".example", "%q names no control of the framework", g.Example)
		}
	}
	return errs
}
