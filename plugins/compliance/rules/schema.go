package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/stewardhq/steward/sdk"
)

// The schema guards; see the package documentation.
const (
	MaxSchemaBytes     = 64 << 10
	MaxSchemaDepth     = 10
	MaxPatternLength   = 500
	MaxSchemaExpansion = 10_000
)

// draft2020 is the only meta-schema a rule's $schema may name.
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// schemaURL is the name the compiler knows a rule's schema by. Its scheme
// has no loader; it only gives local references a base.
const schemaURL = "mem://rule/schema.json"

// schemaLoc is where a schema's problems are reported.
const schemaLoc = "body.schema"

// Schema is a rule's schema, compiled with a meter on each of its schema
// objects. It validates one record at a time.
type Schema struct {
	s *jsonschema.Schema
	m *meter
}

// errLoad is what the compiler's loader answers every request with.
var errLoad = errors.New("rule schemas may not load documents")

// refuseLoad is the compiler's loader: it reaches no network and no file.
func refuseLoad(url string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("%w (asked for %s)", errLoad, url)
}

// annotationOnly is a format that asserts nothing.
func annotationOnly(any) bool { return true }

// CompileSchema checks raw against the guards and compiles it; an error is
// a 422 *sdk.Problem at body.schema naming the guard.
func CompileSchema(raw []byte) (*Schema, error) {
	return compileSchema(raw, refuseLoad)
}

func compileSchema(raw []byte, load func(string) (io.ReadCloser, error)) (*Schema, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, sdk.Invalid(schemaLoc, "must be JSON")
	}
	if compact.Len() > MaxSchemaBytes {
		return nil, sdk.Invalid(schemaLoc, "size: the schema has %d bytes (without insignificant whitespace), more than the limit of %d", compact.Len(), MaxSchemaBytes)
	}
	if d := depth(compact.Bytes()); d > MaxSchemaDepth {
		return nil, sdk.Invalid(schemaLoc, "depth: the schema nests %d levels, more than the limit of %d", d, MaxSchemaDepth)
	}
	doc, err := decode(compact.Bytes())
	if err != nil {
		return nil, sdk.Invalid(schemaLoc, "must be JSON")
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, sdk.Invalid(schemaLoc, "must be a JSON object")
	}
	if err := checkMembers(doc, ""); err != nil {
		return nil, err
	}
	if n := expansion(doc, MaxSchemaExpansion); n > MaxSchemaExpansion {
		return nil, sdk.Invalid(schemaLoc, "reference fan-out: following its $ref and $dynamicRef members, the schema expands to more than %d schema objects, the limit; "+
			"each reference counts the whole schema it names, so references to parts that themselves reference others multiply", MaxSchemaExpansion)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = load
	c.AssertFormat = false
	c.AssertContent = false
	// The compiler asserts formats anyway when a schema names no $schema
	// (it takes a missing meta-schema to have every vocabulary, format
	// assertion included), so each format it knows accepts everything.
	for name := range jsonschema.Formats {
		c.Formats[name] = annotationOnly
	}
	m := &meter{}
	c.RegisterExtension("steward-meter", nil, metered{m})
	if err := c.AddResource(schemaURL, bytes.NewReader(compact.Bytes())); err != nil {
		return nil, sdk.Invalid(schemaLoc, "must be JSON")
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, sdk.Invalid(schemaLoc, "not a valid draft 2020-12 schema: %s", compileMessage(err))
	}
	return &Schema{s: s, m: m}, nil
}

// depth is how deeply the JSON document nests objects and arrays; a
// scalar has depth 0, {} has 1. raw must be valid JSON.
func depth(raw []byte) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			d++
			deepest = max(deepest, d)
		case b == '}' || b == ']':
			d--
		}
	}
	return deepest
}

// checkMembers refuses, anywhere in the document, a non-local reference,
// an $id (which would give references another base), a $schema other
// than draft 2020-12 and a pattern longer than MaxPatternLength. ptr is
// the JSON Pointer of v in the schema.
func checkMembers(v any, ptr string) error {
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			if err := checkMembers(item, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			item := v[k]
			at := ptr + "/" + escapePointer(k)
			s, isString := item.(string)
			switch {
			case isString && (k == "$ref" || k == "$dynamicRef") && !strings.HasPrefix(s, "#"):
				return sdk.Invalid(schemaLoc+at, "remote reference: %s %q is not local; only references within the schema (starting with #) are allowed, nothing is loaded", k, s)
			case isString && k == "$id":
				return sdk.Invalid(schemaLoc+at, "remote reference: $id %q would make references resolve against another document; a rule's schema is one document (name its parts with $defs and $anchor)", s)
			case isString && k == "$schema" && strings.TrimSuffix(s, "#") != draft2020:
				return sdk.Invalid(schemaLoc+at, "remote reference: $schema %q is not %s, the only meta-schema rules use", s, draft2020)
			case isString && k == "pattern" && utf8.RuneCountInString(s) > MaxPatternLength:
				return sdk.Invalid(schemaLoc+at, "pattern length: the pattern has %d characters, more than the limit of %d", utf8.RuneCountInString(s), MaxPatternLength)
			case k == "patternProperties":
				if m, ok := item.(map[string]any); ok {
					for p := range m {
						if n := utf8.RuneCountInString(p); n > MaxPatternLength {
							return sdk.Invalid(schemaLoc+at, "pattern length: a patternProperties pattern has %d characters, more than the limit of %d", n, MaxPatternLength)
						}
					}
				}
			}
			if err := checkMembers(item, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// expansion counts the schema objects a validator may visit for one value:
// every JSON object of the document, each "$ref" and "$dynamicRef" adding
// the count of the part it names as often as it occurs. A reference back
// into a part that encloses it counts once: such a cycle repeats only as
// the validator descends into the value, which the evaluation's step
// budget bounds. The count stops growing past limit, so it cannot
// overflow however much the references multiply.
func expansion(doc any, limit int) int {
	e := &expander{root: doc, anchors: map[string]string{}, memo: map[string]int{}, open: map[string]bool{}, limit: limit}
	e.findAnchors(doc, "")
	return e.count(doc, "")
}

type expander struct {
	root    any
	anchors map[string]string // $anchor or $dynamicAnchor name -> JSON Pointer
	memo    map[string]int    // JSON Pointer -> count
	open    map[string]bool   // JSON Pointers being counted
	limit   int
}

func (e *expander) findAnchors(v any, ptr string) {
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			e.findAnchors(item, ptr+"/"+strconv.Itoa(i))
		}
	case map[string]any:
		for k, item := range v {
			if name, ok := item.(string); ok && (k == "$anchor" || k == "$dynamicAnchor") {
				e.anchors[name] = ptr
			}
			e.findAnchors(item, ptr+"/"+escapePointer(k))
		}
	}
}

// add is a + b, at most limit+1.
func (e *expander) add(a, b int) int { return min(a+b, e.limit+1) }

// count is the expansion of v, found at ptr.
func (e *expander) count(v any, ptr string) int {
	switch v := v.(type) {
	case []any:
		n := 0
		for i, item := range v {
			n = e.add(n, e.count(item, ptr+"/"+strconv.Itoa(i)))
		}
		return n
	case map[string]any:
		if n, ok := e.memo[ptr]; ok {
			return n
		}
		if e.open[ptr] {
			return 1
		}
		e.open[ptr] = true
		n := 1
		// In order, so that a cycle is cut at the same place every time.
		for _, k := range slices.Sorted(maps.Keys(v)) {
			item := v[k]
			n = e.add(n, e.count(item, ptr+"/"+escapePointer(k)))
			if ref, ok := item.(string); ok && (k == "$ref" || k == "$dynamicRef") {
				if target, at, ok := e.resolve(ref); ok {
					n = e.add(n, e.count(target, at))
				}
			}
		}
		delete(e.open, ptr)
		e.memo[ptr] = n
		return n
	}
	return 0
}

// resolve finds the part of the document a local reference names, and its
// JSON Pointer; false for one that names nothing (which the compiler
// refuses).
func (e *expander) resolve(ref string) (any, string, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, "", false
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		at, ok := e.anchors[frag]
		if !ok {
			return nil, "", false
		}
		frag = at
	}
	v, at := e.root, ""
	if frag == "" {
		return v, at, true
	}
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = unescapePointer.Replace(seg)
		at += "/" + escapePointer(seg)
		switch node := v.(type) {
		case map[string]any:
			if v, ok = node[seg]; !ok {
				return nil, "", false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(node) {
				return nil, "", false
			}
			v = node[i]
		default:
			return nil, "", false
		}
	}
	return v, at, true
}

// escapePointer escapes a member name for a JSON Pointer (RFC 6901).
func escapePointer(s string) string { return pointerEscaper.Replace(s) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// compileMessage is the compiler's complaint without the schema's
// internal name.
func compileMessage(err error) string {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) {
		var ve *jsonschema.ValidationError
		if errors.As(se.Err, &ve) {
			leaf := ve
			for len(leaf.Causes) > 0 {
				leaf = leaf.Causes[0]
			}
			return fmt.Sprintf("at %q: %s", leaf.InstanceLocation, leaf.Message)
		}
		err = se.Err
	}
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "jsonschema: "), schemaURL, "the schema")
}
