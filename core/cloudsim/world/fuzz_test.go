package world

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse reads arbitrary world files. Parse answers a world or an
// error, never panics, and a world it accepts survives a round trip: its
// own encoding parses, and to the same world.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		valid, `{}`, `[]`, `null`, `{"tenants": null}`, `{"tenants": [{}]}`, `{"costs": [{"cost": 1e400}]}`,
		strings.Replace(valid, `"date": "2026-10-01", "service"`, `"date": "2026-13-01", "service"`, 1),
		strings.Replace(valid, `"sub-a", "name": "A prod"`, `"sub-a", "name": 7`, 1),
		strings.Replace(valid, `"reserved_hours": 24`, `"reserved_hours": 2`, 1),
		"{\"tenants\": [{\"name\": \"\xff\"}]}", valid + " trailing", `{"dns": [{"name": "x", "type": "TXT", "value": "` + strings.Repeat("v", 300) + `"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := Parse(b)
		if err != nil {
			if w != nil || err.Error() == "" {
				t.Fatalf("Parse: %v with a world", err)
			}
			return
		}
		enc, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("a parsed world does not encode: %v", err)
		}
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("a parsed world's encoding does not parse: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(w, again) {
			t.Fatalf("round trip changed the world:\n%+v\n%+v", w, again)
		}
	})
}
