package states_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
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

// TestPolicyResources: a policy's non-compliant resources over the
// caller's tenants, one record per tenant and resource with its tenant's
// name, paged; a caller who sees none of them, and a compliant or unknown
// policy, get the same 404, and a tenant the caller may not see is a 403.
func TestPolicyResources(t *testing.T) {
	p5 := policy{id: def(5), name: "Fabrikam only", category: "Network", severity: "Low"}
	w := withStates(complianceWorld(), func(s []world.PolicyState) []world.PolicyState {
		return append(s, state(subF1, p5, r7, "NonCompliant"))
	})
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, w)
		f.mustRun(t)
		base := "/api/v1/compliance/non-compliant/resources?policy_id=" + url.QueryEscape(p1.id)
		var got states.PolicyResources
		f.get(t, base, admin, &got)
		if got.PolicyID != p1.id || got.PolicyName != p1.name || got.Category != "Storage" || got.Severity != "High" || got.Total != 2 ||
			got.Limit != 100 || got.Offset != 0 || len(got.Items) != 2 {
			t.Fatalf("p1's resources: %+v", got)
		}
		c, fb := got.Items[0], got.Items[1]
		if c.TenantID != contoso.ID || c.TenantName != "Contoso" || c.ResourceID != r1 || c.SubscriptionID != subC1 ||
			!strings.EqualFold(c.ResourceType, "Microsoft.Storage/storageAccounts") || c.ComplianceState != "NonCompliant" ||
			c.Severity != "High" || !c.LastEvaluatedAt.Equal(simNow.Add(-time.Hour)) || fb.TenantName != "Fabrikam" || fb.ResourceID != r6 {
			t.Fatalf("p1's resources: %+v", got.Items)
		}
		f.get(t, base+"&limit=1&offset=1", admin, &got)
		if got.Total != 2 || len(got.Items) != 1 || got.Items[0].ResourceID != r6 || got.Limit != 1 || got.Offset != 1 {
			t.Fatalf("p1's second page of one: %+v", got)
		}
		f.get(t, base, contosoer, &got)
		if got.Total != 1 || len(got.Items) != 1 || got.Items[0].ResourceID != r1 {
			t.Fatalf("p1's resources for Contoso's user: %+v", got)
		}
		f.get(t, "/api/v1/compliance/non-compliant/resources?policy_id="+url.QueryEscape(p5.id), admin, &got)
		if got.Total != 1 || got.Items[0].ResourceID != r7 {
			t.Fatalf("p5's resources for the admin: %+v", got)
		}
		for _, target := range []string{
			"/api/v1/compliance/non-compliant/resources?policy_id=" + url.QueryEscape(p5.id),
			"/api/v1/compliance/non-compliant/resources?policy_id=" + url.QueryEscape(p4.id),
			"/api/v1/compliance/non-compliant/resources?policy_id=" + url.QueryEscape(def(99)),
		} {
			resp, body := f.do(t, target, contosoer)
			if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "Fabrikam") || strings.Contains(string(body), r7) {
				t.Errorf("%s for Contoso's user: %d %s, want 404", target, resp.StatusCode, body)
			}
		}
		if resp, body := f.do(t, base+"&tenant_ids="+fabrikam.ID, contosoer); resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), r6) {
			t.Errorf("p1 in Fabrikam for Contoso's user: %d %s, want 403", resp.StatusCode, body)
		}
		for query, field := range map[string]string{
			"":                  "query.policy_id",
			"policy_id=p1":      "query.policy_id",
			"policy_id=%2F%2Fx": "query.policy_id",
			"policy_id=%2F" + strings.Repeat("p", 1024): "query.policy_id",
			"policy_id=%2Fp&limit=0":                    "query.limit",
			"policy_id=%2Fp&limit=501":                  "query.limit",
			"policy_id=%2Fp&offset=-1":                  "query.offset",
		} {
			resp, body := f.do(t, "/api/v1/compliance/non-compliant/resources?"+query, contosoer)
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), field) {
				t.Errorf("%.40s: %d %s, want 422 naming %s", query, resp.StatusCode, body, field)
			}
		}
	})
}
