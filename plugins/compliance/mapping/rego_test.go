package mapping

import (
	"bytes"
	"context"
	"io/fs"
	"testing"

	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/stewardhq/steward/plugins/compliance/policies"
)

// TestRego runs the Rego unit tests beside the policies exactly as
// `opa test plugins/compliance/policies` does: the folder is loaded as it
// is, so the framework definitions are at data.frameworks.
func TestRego(t *testing.T) {
	results, err := tester.Run(context.Background(), "../policies")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatal("no Rego tests found")
	}
	for _, r := range results {
		t.Run(r.Package+"."+r.Name, func(t *testing.T) {
			if r.Error != nil {
				t.Fatalf("%s: %v", r.Location, r.Error)
			}
			if r.Fail {
				t.Fatalf("%s: failed", r.Location)
			}
		})
	}
}

// TestRegoFormatted keeps the policies as `opa fmt` writes them, so that a
// reviewer's `opa fmt --list` finds nothing to change.
func TestRegoFormatted(t *testing.T) {
	names, err := fs.Glob(policies.Rego, "*.rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(policies.Rego, name)
		if err != nil {
			t.Fatal(err)
		}
		formatted, err := format.Source(name, src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(formatted, src) {
			t.Errorf("%s is not formatted as opa fmt writes it", name)
		}
	}
}
