package catalogue_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/plugins/partner/catalogue"
)

// FuzzLoad feeds the loader arbitrary HCL and inline JSON: it must answer a
// catalogue or an error, never panic, and a catalogue it answers holds
// valid requirements.
func FuzzLoad(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "catalogue.example.hcl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{good, string(example), inline, `requirement {}`, `programme { partner = 1 }`, `{"requirements": [{"check": null}]}`, `{"requirements": [{"check": {}}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, load := range []func() (*catalogue.Catalogue, error){
			func() (*catalogue.Catalogue, error) { return catalogue.Parse("fuzz.hcl", src) },
			func() (*catalogue.Catalogue, error) { return catalogue.FromConfig(src) },
		} {
			c, err := load()
			if err != nil {
				continue
			}
			if c.Programme.Partner == "" || len(c.Requirements) == 0 {
				t.Fatalf("loaded an incomplete catalogue %+v", c)
			}
			seen := map[string]bool{}
			for _, r := range c.Requirements {
				if r.ID == "" || seen[r.ID] || r.Priority.Rank() == 0 || (r.Check != nil && (r.Check.Target < 0 || r.Check.Target > 100)) {
					t.Fatalf("loaded an invalid requirement %+v", r)
				}
				seen[r.ID] = true
			}
		}
	})
}
