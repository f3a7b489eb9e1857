package states_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/states"
)

// TestResourceStatesDataset: the dataset answers the states of the
// resources named, whatever the ARM id's case, of the tenants asked for
// only, non-compliant first; without resource_ids, or with too many, it
// refuses to answer rather than stream the whole table.
func TestResourceStatesDataset(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, complianceWorld())
		f.mustRun(t)
		read := func(tenants []string, ids ...string) ([]states.ResourceState, error) {
			recs, err := f.harness.ReadDataset(context.Background(), states.ResourceStatesDatasetName, tenants,
				map[string]string{"resource_ids": strings.Join(ids, "\n")})
			out := make([]states.ResourceState, len(recs))
			for i, raw := range recs {
				if err := json.Unmarshal(raw, &out[i]); err != nil {
					t.Fatalf("record %s: %v", raw, err)
				}
			}
			return out, err
		}
		got, err := read([]string{contoso.ID, fabrikam.ID}, strings.ToUpper(r1), r6)
		if err != nil {
			t.Fatal(err)
		}
		var summary []string
		for _, s := range got {
			summary = append(summary, s.ResourceID+" "+s.PolicyName+" "+s.ComplianceState)
		}
		want := []string{r1 + " " + p1.name + " NonCompliant", r1 + " " + p3.name + " Compliant", r6 + " " + p1.name + " NonCompliant"}
		if strings.Join(summary, "\n") != strings.Join(want, "\n") {
			t.Fatalf("states of r1 and r6:\n%s\nwant\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
		}
		if s := got[0]; s.TenantID != contoso.ID || s.SubscriptionID != subC1 || s.Severity != "High" || s.Category != "Storage" ||
			s.PolicyDefinitionID != p1.id || s.PolicyAssignmentID == "" || !s.EvaluatedAt.Equal(simNow.Add(-time.Hour)) {
			t.Fatalf("r1's state under p1: %+v", s)
		}
		if got, err := read([]string{contoso.ID}, r6); err != nil || len(got) != 0 {
			t.Fatalf("Fabrikam's resource read for Contoso: %+v (%v)", got, err)
		}
		if _, err := read([]string{contoso.ID}); err == nil || !strings.Contains(err.Error(), "resource_ids") {
			t.Fatalf("no resource_ids: %v", err)
		}
		if _, err := read([]string{contoso.ID}, strings.Split(strings.Repeat(r1+"\n", states.MaxResourceIDs+1), "\n")...); err == nil {
			t.Fatal("too many resource_ids were read")
		}
	})
}
