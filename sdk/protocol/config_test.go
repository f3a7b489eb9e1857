package protocol

import (
	"reflect"
	"strings"
	"testing"
)

// schema is a config schema as the SDK derives one: a nested object, an
// array of objects, a pattern with its description, bounds.
const schema = `{"type": "object", "additionalProperties": false, "required": ["inventory"], "properties": {
  "inventory": {"type": "string"},
  "days": {"type": "integer", "minimum": 1, "maximum": 31},
  "timeout": {"type": "string", "pattern": "^[0-9]+s$", "patternDescription": "a duration such as 30s"},
  "locations": {"type": "array", "items": {"type": "string"}},
  "programme": {"type": "object", "additionalProperties": false, "required": ["partner"], "properties": {
    "partner": {"type": "string"}, "a/b": {"type": "string"}}},
  "requirements": {"type": "array", "items": {"type": "object", "additionalProperties": false, "properties": {
    "id": {"type": "string"}, "target": {"type": "number", "maximum": 100}}}}}}`

func TestCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		want   []ConfigProblem
	}{
		{"valid", `{"inventory": "x", "days": 3, "programme": {"partner": "p"}}`, nil},
		{"unknown key", `{"inventory": "x", "inventroy": "y"}`, []ConfigProblem{{"/inventroy", "inventroy",
			"unknown key; the keys are days, inventory, locations, programme, requirements, timeout"}}},
		{"missing key", `{}`, []ConfigProblem{{"/inventory", "inventory", "is required"}}},
		{"mistyped", `{"inventory": 3}`, []ConfigProblem{{"/inventory", "inventory", "expected string, but got number"}}},
		{"out of bounds", `{"inventory": "x", "days": 40}`, []ConfigProblem{{"/days", "days", "must be <= 31 but found 40"}}},
		{"pattern", `{"inventory": "x", "timeout": "soon"}`, []ConfigProblem{{"/timeout", "timeout", "must be a duration such as 30s"}}},
		{"array element", `{"inventory": "x", "locations": ["eastus", 2]}`, []ConfigProblem{{"/locations/1", "locations[1]", "expected string, but got number"}}},
		{"nested unknown and missing", `{"inventory": "x", "programme": {"parnter": "p", "a/b": "c"}}`, []ConfigProblem{
			{"/programme/parnter", "programme.parnter", "unknown key; the keys are a/b, partner"},
			{"/programme/partner", "programme.partner", "is required"},
		}},
		{"in an array of objects", `{"inventory": "x", "requirements": [{"id": "a"}, {"id": "b", "target": 200, "note": 1}]}`, []ConfigProblem{
			{"/requirements/1/note", "requirements[1].note", "unknown key; the keys are id, target"},
			{"/requirements/1/target", "requirements[1].target", "must be <= 100 but found 200"},
		}},
		{"every problem at once", `{"days": "x", "extra": true}`, []ConfigProblem{
			{"/days", "days", "expected integer, but got string"},
			{"/extra", "extra", "unknown key; the keys are days, inventory, locations, programme, requirements, timeout"},
			{"/inventory", "inventory", "is required"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckConfig([]byte(schema), []byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestCheckConfigWithoutSettings(t *testing.T) {
	got, err := CheckConfig([]byte(`{"type": "object", "additionalProperties": false, "properties": {}}`), []byte(`{"x": 1}`))
	if err != nil || len(got) != 1 || got[0].Message != "unknown key; none is allowed here" {
		t.Errorf("a plugin without settings: %+v, %v", got, err)
	}
	if got, err := CheckConfig(nil, []byte(`{"anything": [1]}`)); err != nil || got != nil {
		t.Errorf("a plugin without a schema takes any block: %+v, %v", got, err)
	}
}

// A schema the host cannot use is refused as a whole, before any block
// is judged by it: one that refers elsewhere (a file of the host's, a URL,
// or a fan-out of references) is never loaded or followed.
func TestCheckConfigRefusesUnusableSchemas(t *testing.T) {
	for name, s := range map[string]string{
		"not JSON":       `{"type":`,
		"not a schema":   `{"type": "pumpkin"}`,
		"a file":         `{"$ref": "file:///etc/passwd"}`,
		"a local $ref":   `{"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`,
		"a dynamic $ref": `{"properties": {"x": {"$dynamicRef": "#a"}}}`,
	} {
		if got, err := CheckConfig([]byte(s), []byte(`{}`)); err == nil || !strings.HasPrefix(err.Error(), "config schema: ") {
			t.Errorf("%s: %+v, %v; want the schema refused", name, got, err)
		}
	}
}

func TestConfigErrorNamesEachKey(t *testing.T) {
	err := &ConfigError{Problems: []ConfigProblem{{Key: "days", Message: "expected integer, but got string"}, {Key: "extra", Message: "unknown key"}}}
	if got, want := err.Error(), "config.days: expected integer, but got string; config.extra: unknown key"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
