package frameworks

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stewardhq/steward/plugins/compliance/policies"
)

// FuzzLoad feeds arbitrary bytes to the loader as a definition file. Loading
// must never panic, and whatever loads must survive a round trip through its
// canonical encoding with the same hash. The built-in seeds are large, so cap
// minimisation when fuzzing:
//
//	go test ./plugins/compliance/frameworks -run '^$' -fuzz FuzzLoad -fuzzminimizetime 2s
func FuzzLoad(f *testing.F) {
	names, err := fs.Glob(policies.FS, "frameworks/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names {
		data, err := fs.ReadFile(policies.FS, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(minimal))
	for _, seed := range []string{
		`{"acme": {`, `[]`, `{}`, `{"acme": null}`, `{"acme": {"id": "acme"}}`,
		`{"acme": {}, "other": {}}`, "{\"acme\": \"\xff\"}",
		strings.Replace(minimal, `["mfa"]`, `[]`, 1),
		strings.Replace(minimal, `["mfa"]`, `["--"]`, 1),
		strings.Replace(minimal, `["mfa"]`, `["Multi-Factor"]`, 1),
		strings.Replace(minimal, `"id": "AC-2"`, `"id": "AC_1"`, 1),
		strings.Replace(minimal, `"category": "AC", "keywords": [["key"`, `"category": "AX", "keywords": [["key"`, 1),
		strings.Replace(minimal, `"version": "1",`, `"version": "1", "version": "2",`, 1),
		strings.Replace(minimal, `"ACME_AC-1"`, `"ACME_"`, 1),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Load(fstest.MapFS{fileFor(data): {Data: data}})
		if err != nil {
			if s != nil {
				t.Fatal("a set came back with an error")
			}
			return
		}
		for _, fw := range s.All() {
			encoded, err := json.Marshal(map[string]*Framework{fw.ID: fw})
			if err != nil {
				t.Fatal(err)
			}
			again, err := Load(fstest.MapFS{fw.ID + ".json": {Data: encoded}})
			if err != nil {
				t.Fatalf("canonical encoding does not load: %v", err)
			}
			if got, _ := again.Get(fw.ID); got.Hash() != fw.Hash() {
				t.Fatalf("hash %s after a round trip, want %s", got.Hash(), fw.Hash())
			}
			for _, c := range fw.Controls {
				if got, ok := fw.Control(c.ID); !ok || got.ID != c.ID {
					t.Fatalf("control %q not found by its own id", c.ID)
				}
			}
		}
	})
}

// fileFor names the file after the document's top-level key when it has
// exactly one usable key, so that valid inputs get past the file-name check.
func fileFor(data []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) == nil && len(m) == 1 {
		for k := range m {
			if fs.ValidPath(k+".json") && !strings.ContainsAny(k, `/\*?[`) {
				return k + ".json"
			}
		}
	}
	return "f.json"
}
