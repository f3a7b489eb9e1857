package rules

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// problemAt returns the 422's first error, failing the test on anything
// else.
func problemAt(t *testing.T, err error) sdk.ErrorDetail {
	t.Helper()
	var p *sdk.Problem
	if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || len(p.Errors) == 0 {
		t.Fatalf("error %v, want a 422 problem", err)
	}
	return p.Errors[0]
}

// nestedNot is {"not": {"not": ... {}}}, levels deep.
func nestedNot(levels int) string {
	return strings.Repeat(`{"not":`, levels-1) + "{}" + strings.Repeat("}", levels-1)
}

// TestSchemaGuards: each guard refuses just past its limit, naming the
// guard and where, and allows its limit.
func TestSchemaGuards(t *testing.T) {
	// {"description":"…"} of exactly n bytes.
	sized := func(n int) string { return `{"description":"` + strings.Repeat("x", n-18) + `"}` }
	refused := []struct {
		name, schema, loc, guard string
	}{
		{"65 KB", sized(65 * 1024), "body.schema", "size"},
		{"one byte over 64 KiB", sized(MaxSchemaBytes + 1), "body.schema", "size"},
		{"depth 11", nestedNot(11), "body.schema", "depth"},
		{"depth 11 in arrays", `{"allOf":[{"allOf":[{"allOf":[{"allOf":[{"allOf":[{}]}]}]}]}]}`, "body.schema", "depth"},
		{"501-character pattern", `{"pattern":"` + strings.Repeat("a", 501) + `"}`, "body.schema/pattern", "pattern length"},
		{"501 characters of 2 bytes", `{"items":{"pattern":"` + strings.Repeat("é", 501) + `"}}`, "body.schema/items/pattern", "pattern length"},
		{"501-character patternProperties key", `{"patternProperties":{"` + strings.Repeat("k", 501) + `":{}}}`, "body.schema/patternProperties", "pattern length"},
		{"https $ref", `{"properties":{"a":{"$ref":"https://evil.example/s.json"}}}`, "body.schema/properties/a/$ref", "remote reference"},
		{"http $ref with fragment", `{"$ref":"http://169.254.169.254/latest#/x"}`, "body.schema/$ref", "remote reference"},
		{"file $ref", `{"$ref":"file:///etc/passwd"}`, "body.schema/$ref", "remote reference"},
		{"relative $ref", `{"$ref":"../../etc/passwd"}`, "body.schema/$ref", "remote reference"},
		{"urn $ref", `{"$ref":"urn:x:y"}`, "body.schema/$ref", "remote reference"},
		{"remote $dynamicRef", `{"$dynamicRef":"https://evil.example/s.json#meta"}`, "body.schema/$dynamicRef", "remote reference"},
		{"$ref in an array member", `{"anyOf":[{"type":"string"},{"$ref":"https://evil.example/"}]}`, "body.schema/anyOf/1/$ref", "remote reference"},
		{"escaped member names", `{"properties":{"a/b~c":{"$ref":"https://evil.example/"}}}`, "body.schema/properties/a~1b~0c/$ref", "remote reference"},
		{"another meta-schema", `{"$schema":"http://json-schema.org/draft-07/schema#"}`, "body.schema/$schema", "remote reference"},
		{"a remote meta-schema", `{"$schema":"https://evil.example/meta"}`, "body.schema/$schema", "remote reference"},
		{"an $id", `{"$id":"https://example.com/rule.json","$defs":{"a":{}},"$ref":"#/$defs/a"}`, "body.schema/$id", "remote reference"},
		{"an $id below", `{"$defs":{"a":{"$id":"a:0"}}}`, "body.schema/$defs/a/$id", "remote reference"},
		{"not JSON", `{"type":`, "body.schema", "JSON"},
		{"not an object", `true`, "body.schema", "object"},
		{"not a schema", `{"minimum":"five"}`, "body.schema", "draft 2020-12"},
		{"a lookahead Go cannot run", `{"pattern":"^(?=a)"}`, "body.schema", "draft 2020-12"},
		{"a missing local reference", `{"$ref":"#/$defs/none"}`, "body.schema", "draft 2020-12"},
	}
	for _, c := range refused {
		_, err := CompileSchema([]byte(c.schema))
		e := problemAt(t, err)
		if e.Location != c.loc || !strings.Contains(e.Message, c.guard) {
			t.Errorf("%s: %s: %s, want %s naming %q", c.name, e.Location, e.Message, c.loc, c.guard)
		}
	}
	allowed := map[string]string{
		"64 KiB":                     sized(MaxSchemaBytes),
		"64 KiB once compacted":      strings.Replace(sized(MaxSchemaBytes), `":"`, "\":\n\n\t  \"", 1),
		"depth 10":                   nestedNot(10),
		"brackets in strings":        `{"description":"[[[[[[[[[[[[{{{{{{{{{{{{\"\\\\"}`,
		"500-character pattern":      `{"pattern":"` + strings.Repeat("a", 500) + `"}`,
		"local references":           `{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#"}}}`,
		"an anchor":                  `{"$defs":{"a":{"$anchor":"name","type":"string"}},"properties":{"x":{"$ref":"#name"}}}`,
		"draft 2020-12 named":        `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		"a pattern named as data":    `{"properties":{"pattern":{"type":"string"}}}`,
		"a property named $ref":      `{"properties":{"$ref":{"type":"string"}},"required":["$ref"]}`,
		"a boolean schema somewhere": `{"properties":{"x":false}}`,
	}
	for name, schema := range allowed {
		if _, err := CompileSchema([]byte(schema)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestFormatNotAsserted: format is an annotation; "not an email" passes
// a format: email schema.
func TestFormatNotAsserted(t *testing.T) {
	data, _ := decode([]byte(`{"contact":"not an email","seen":"yesterday"}`))
	for _, meta := range []string{``, `"$schema":"https://json-schema.org/draft/2020-12/schema",`} {
		s, err := CompileSchema([]byte(`{` + meta + `"properties":{"contact":{"type":"string","format":"email"},"seen":{"format":"date-time"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if vs, err := s.check(context.Background(), time.Now().Add(time.Minute), &Rule{}, &Record{Data: data}, nil); err != nil || len(vs) != 0 {
			t.Errorf("format asserted with $schema %q: %+v", meta, vs)
		}
	}
}

// TestDepth pins the definition of nesting depth.
func TestDepth(t *testing.T) {
	for raw, want := range map[string]int{
		`1`:                          0,
		`"[{"`:                       0,
		`{}`:                         1,
		`[]`:                         1,
		`{"a":{"b":[1,{"c":{}}]}}`:   5,
		`{"a":"}}}","b":{"c":"\""}}`: 2,
		`[[],[[]],{}]`:               3,
	} {
		if got := depth([]byte(raw)); got != want {
			t.Errorf("depth(%s) = %d, want %d", raw, got, want)
		}
	}
}

// TestKeywordOf: the keyword of a keyword location, past member names.
func TestKeywordOf(t *testing.T) {
	for loc, want := range map[string]string{
		"":                                      "false",
		"/required":                             "required",
		"/properties/a/maximum":                 "maximum",
		"/properties/required/type":             "type",
		"/properties/a":                         "false",
		"/properties/maximum":                   "false",
		"/anyOf/1/required":                     "required",
		"/$ref/properties/a/$ref/maxProperties": "maxProperties",
		"/dependentRequired/a/0":                "dependentRequired",
		"/patternProperties/^a~1b$/minLength":   "minLength",
		"/not":                                  "not",
		"/items/properties/x~0y":                "false",
	} {
		if got := keywordOf(loc); got != want {
			t.Errorf("keywordOf(%q) = %q, want %q", loc, got, want)
		}
	}
}

// FuzzCompileSchema: compiling any input never panics, never asks the
// loader for a document (the guards refuse every reference that would
// need one first), and either compiles or answers a 422 at body.schema.
func FuzzCompileSchema(f *testing.F) {
	for _, seed := range []string{
		`{}`, `true`, `{"type":"object","properties":{"a":{"minimum":1}}}`,
		`{"$ref":"#"}`, `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`,
		`{"$ref":"https://example.com/x"}`, `{"$ref":"file:///etc/passwd"}`, `{"$ref":"x.json"}`,
		`{"$dynamicRef":"#meta","$dynamicAnchor":"meta"}`, `{"$id":"https://example.com/","$ref":"#"}`,
		`{"$id":"x/","$defs":{"a":{"$id":"y"}},"$ref":"y"}`, `{"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"pattern":"(a+)+$"}`, `{"patternProperties":{"^x":{}}}`, nestedNot(10), nestedNot(11),
		`{"$vocabulary":{"https://example.com/v":true}}`, `{"format":"regex","contentEncoding":"base64"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := compileSchema(raw, func(url string) (io.ReadCloser, error) {
			t.Errorf("the compiler asked for %s", url)
			return nil, errLoad
		})
		if err != nil {
			var p *sdk.Problem
			if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || !strings.HasPrefix(p.Errors[0].Location, schemaLoc) {
				t.Fatalf("error %v, want a 422 at %s", err, schemaLoc)
			}
			return
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("compiled a schema that is not JSON: %v", err)
		}
		data, _ := decode([]byte(`{"a":[1,"x",{"b":null}],"n":1.5}`))
		if _, err := s.check(context.Background(), time.Now().Add(MaxEvalTime), &Rule{}, &Record{Data: data}, nil); err != nil && !errors.Is(err, ErrBudget) {
			t.Fatalf("check: %v", err)
		}
	})
}
