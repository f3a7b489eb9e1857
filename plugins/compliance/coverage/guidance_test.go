package coverage_test

import (
	"context"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// TestControlPolicyRemediation: a control's mapped policies carry their
// definitions' stored guidance, and a policy whose definition has none
// an empty remediation; the findings of the policy carry the same.
func TestControlPolicyRemediation(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, findingStates())
		const fix = "Require multi-factor authentication for every account with a Conditional Access policy."
		if err := f.svc.Store.PutGuidance(context.Background(), []states.Guidance{{PolicyDefinitionID: pMulti.id, DisplayName: pMulti.name,
			Remediation: fix}, {PolicyDefinitionID: pMFA.id, DisplayName: pMFA.name}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		var c coverage.Control
		f.get(t, "/api/v1/compliance/frameworks/acme/controls/AC.1", admin, &c)
		got := map[string]string{}
		for _, p := range c.Policies {
			got[p.PolicyDefinitionID] = p.Remediation
		}
		if len(got) != 2 || got[pMulti.id] != fix || got[pMFA.id] != "" {
			t.Errorf("AC.1's policies' remediation %q", got)
		}
		var page coverage.Findings
		f.get(t, "/api/v1/compliance/findings?policy="+pMulti.id, admin, &page)
		if page.Total != 2 || page.Items[0].Remediation != fix || page.Items[1].Remediation != fix || page.Items[0].Source != "policy" {
			t.Errorf("pMulti's findings %+v", page.Items)
		}
		f.get(t, "/api/v1/compliance/findings?policy="+pMFA.id+"&source=defender", admin, &page)
		if page.Total != 0 {
			t.Errorf("defender findings without the source: %+v", page.Items)
		}
	})
}
