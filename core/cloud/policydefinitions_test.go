package cloud_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestPolicyDefinition reads a built-in definition, a subscription's
// custom one and one only a state names through the SDK's client, each by
// the call of its scope, field by field; a definition that does not exist
// matches ErrNotFound and an id of no definition's shape is refused.
func TestPolicyDefinition(t *testing.T) {
	w := baseWorld()
	builtIn := policyDefinitionID(0)
	custom := "/subscriptions/" + subID(1) + "/providers/Microsoft.Authorization/policyDefinitions/require-owner-tag"
	w.PolicyDefinitions = []world.PolicyDefinition{
		{ID: builtIn, DisplayName: testPolicies[0].name, Description: "Configure a minimum TLS version.", Category: "Storage",
			Severity: "Medium", Remediation: "In the storage account's Configuration, set Minimum TLS version to 1.2."},
		{ID: custom, DisplayName: "Require an owner tag", Category: "Tags", Remediation: "Add the owner tag."},
	}
	w.PolicyStates = []world.PolicyState{{SubscriptionID: subID(0), PolicyDefinitionID: policyDefinitionID(3), PolicyName: testPolicies[3].name,
		Category: testPolicies[3].category, ComplianceState: "Compliant", ResourceID: "/subscriptions/" + subID(0), Severity: "Low"}}
	s, c := startSim(t, w)
	nameOf := func(id string) string { return id[strings.LastIndex(id, "/")+1:] }
	ctx := context.Background()
	for _, want := range []cloud.PolicyDefinition{
		{ID: builtIn, Name: nameOf(builtIn), DisplayName: testPolicies[0].name, Description: "Configure a minimum TLS version.",
			PolicyType: "BuiltIn", Category: "Storage", Severity: "Medium", Remediation: "In the storage account's Configuration, set Minimum TLS version to 1.2."},
		// The brand's subscription, reached through delegation.
		{ID: custom, Name: "require-owner-tag", DisplayName: "Require an owner tag", PolicyType: "Custom", Category: "Tags", Remediation: "Add the owner tag."},
		{ID: policyDefinitionID(3), Name: nameOf(policyDefinitionID(3)), DisplayName: testPolicies[3].name, PolicyType: "BuiltIn",
			Category: "Monitoring", Severity: "Low"},
	} {
		got, err := c.PolicyDefinition(ctx, want.ID)
		if err != nil || got != want {
			t.Errorf("PolicyDefinition(%s)\n got %+v, %v\nwant %+v", want.ID, got, err, want)
		}
	}
	if hits := s.Faults.Hits(cloudsim.ARM, builtIn); hits != 1 {
		t.Errorf("the built-in definition: %d requests at the root, want 1", hits)
	}
	_, err := c.PolicyDefinition(ctx, policyDefinitionID(9))
	if !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("an unknown definition: %v", err)
	}
	_, err = c.PolicyDefinition(ctx, "/subscriptions/"+subID(1)+"/providers/Microsoft.Authorization/policySetDefinitions/x")
	if err == nil || errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("an initiative's id: %v", err)
	}
}
