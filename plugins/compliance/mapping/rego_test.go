package mapping

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/tester"
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
