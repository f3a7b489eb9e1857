package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ConfigProblem is one way a plugin's config block fails the schema the
// plugin described.
type ConfigProblem struct {
	// Pointer is the JSON Pointer (RFC 6901) of the offending key in the
	// block: "/locations/0". A missing key's pointer names the key, which
	// the block does not have.
	Pointer string
	// Key names the key as an operator writes it: member names joined by
	// dots, array indexes in brackets ("programme.deadline",
	// "locations[0]").
	Key     string
	Message string
}

// ConfigError is a config block the plugin's schema refuses. Starting the
// plugin again cannot help.
type ConfigError struct {
	Problems []ConfigProblem
}

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = "config." + p.Key + ": " + p.Message
	}
	return strings.Join(lines, "; ")
}

// CheckConfig holds a config block (a JSON object; empty is {}) to the
// JSON Schema a plugin described for it, and returns every problem, each at the key it
// is about: an unknown key is named itself, a missing required key by its
// name under the object that lacks it. A plugin that described no schema
// takes any block. The error is for a schema that is not one the host can
// use: not JSON Schema, or one that refers elsewhere ($ref), which a
// plugin's config schema never needs.
func CheckConfig(schema, config []byte) ([]ConfigProblem, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	if hasRef(doc) {
		return nil, errors.New("config schema: $ref is not supported; describe the block in place")
	}
	c := jsonschema.NewCompiler()
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("config schema: %s: loading is not supported", s)
	}
	if err := c.AddResource("config.json", bytes.NewReader(schema)); err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	compiled, err := c.Compile("config.json")
	if err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	if len(bytes.TrimSpace(config)) == 0 {
		config = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	var instance any
	if err := dec.Decode(&instance); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	err = compiled.Validate(instance)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil, nil
	}
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []ConfigProblem
	for _, leaf := range leaves(ve) {
		out = append(out, problems(doc, instance, leaf)...)
	}
	slices.SortFunc(out, func(a, b ConfigProblem) int { return strings.Compare(a.Pointer, b.Pointer) })
	return slices.CompactFunc(out, func(a, b ConfigProblem) bool { return a == b }), nil
}

// hasRef reports whether a schema document refers to another schema.
func hasRef(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" || hasRef(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, hasRef)
	}
	return false
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// problems turns one failed keyword into the problems an operator reads:
// the validator reports an unknown or a missing key at the object that
// holds (or lacks) it, and each is reported at the key itself instead.
func problems(schema, instance any, e *jsonschema.ValidationError) []ConfigProblem {
	keyword, parent := lastSegment(e.KeywordLocation)
	obj, _ := lookup(instance, e.InstanceLocation).(map[string]any)
	node, _ := lookup(schema, parent).(map[string]any)
	var names []string
	message := ""
	switch {
	case keyword == "additionalProperties" && obj != nil && node != nil:
		props, _ := node["properties"].(map[string]any)
		for name := range obj {
			if _, known := props[name]; !known {
				names = append(names, name)
			}
		}
		message = "unknown key; " + knownKeys(props)
	case keyword == "required" && obj != nil && node != nil:
		required, _ := node["required"].([]any)
		for _, r := range required {
			if name, ok := r.(string); ok {
				if _, present := obj[name]; !present {
					names = append(names, name)
				}
			}
		}
		message = "is required"
	}
	if len(names) == 0 {
		msg := e.Message
		// A pattern says little to an operator; its description says what
		// it stands for.
		if desc, ok := node["patternDescription"].(string); ok && keyword == "pattern" && desc != "" {
			msg = "must be " + desc
		}
		return []ConfigProblem{{Pointer: e.InstanceLocation, Key: keyOf(instance, e.InstanceLocation), Message: msg}}
	}
	slices.Sort(names)
	out := make([]ConfigProblem, len(names))
	for i, name := range names {
		ptr := e.InstanceLocation + "/" + EscapePointer(name)
		out[i] = ConfigProblem{Pointer: ptr, Key: keyOf(instance, ptr), Message: message}
	}
	return out
}

func knownKeys(props map[string]any) string {
	if len(props) == 0 {
		return "none is allowed here"
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	return "the keys are " + strings.Join(names, ", ")
}

// lastSegment splits a JSON Pointer into its last segment, unescaped, and
// the pointer of its parent.
func lastSegment(ptr string) (last, parent string) {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return "", ""
	}
	return unescapePointer(ptr[i+1:]), ptr[:i]
}

// segments splits a JSON Pointer into its unescaped segments.
func segments(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = unescapePointer(p)
	}
	return parts
}

// lookup is the value at ptr in v, or nil.
func lookup(v any, ptr string) any {
	for _, seg := range segments(ptr) {
		switch c := v.(type) {
		case map[string]any:
			v = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// keyOf names the key at ptr in the instance: members joined by dots,
// array indexes in brackets.
func keyOf(instance any, ptr string) string {
	var b strings.Builder
	v := instance
	for _, seg := range segments(ptr) {
		if a, ok := v.([]any); ok {
			b.WriteString("[" + seg + "]")
			i, _ := strconv.Atoi(seg)
			v = nil
			if i >= 0 && i < len(a) {
				v = a[i]
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
		m, _ := v.(map[string]any)
		v = m[seg]
	}
	return b.String()
}

// EscapePointer escapes a member name for a JSON Pointer segment.
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
