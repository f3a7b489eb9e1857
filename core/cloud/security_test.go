package cloud_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	assessmentTLS    = "11111111-1111-4111-8111-111111111111"
	assessmentVault  = "22222222-2222-4222-8222-222222222222"
	storageAccountID = "/subscriptions/00000000-0000-4000-8000-000000000000/resourceGroups/rg-data/providers/Microsoft.Storage/storageAccounts/stdata"
	keyVaultID       = "/subscriptions/00000000-0000-4000-8000-000000000000/resourceGroups/rg-sec/providers/Microsoft.KeyVault/vaults/kv-sec"
)

// securityWorld gives subscription 0 two assessments and a secure score
// of two controls, the brand subscription one assessment, and a third
// tenant Steward is not delegated.
func securityWorld() *world.World {
	w := baseWorld()
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Stranger", DirectoryTenantID: "55555555-5555-4555-8555-555555555555",
		Subscriptions: []world.Subscription{{ID: subID(9), Name: "Elsewhere"}}})
	w.SecurityAssessments = []world.SecurityAssessment{
		{SubscriptionID: subID(0), ResourceID: storageAccountID, Name: assessmentTLS, DisplayName: "Storage accounts should have the specified minimum TLS version",
			Status: "Unhealthy", Severity: "Medium", PolicyDefinitionID: policyDefinitionID(0), RemediationDescription: "Set the minimum TLS version to 1.2.", Category: "Data"},
		{SubscriptionID: subID(0), ResourceID: keyVaultID, Name: assessmentVault, DisplayName: "Key vaults should have deletion protection enabled",
			Status: "Healthy", Severity: "High", Category: "Data"},
		{SubscriptionID: subID(1), ResourceID: "/subscriptions/" + subID(1) + "/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/brand",
			Name: assessmentTLS, DisplayName: "Storage accounts should have the specified minimum TLS version", Status: "NotApplicable", Severity: "Medium"},
	}
	w.SecureScores = []world.SecureScore{{SubscriptionID: subID(0), Controls: []world.SecureScoreControl{
		{Name: "33333333-3333-4333-8333-333333333333", DisplayName: "Encrypt data in transit", Current: 1.5, Max: 4, HealthyResources: 3, UnhealthyResources: 5},
		{Name: "44444444-4444-4444-8444-444444444444", DisplayName: "Enable data recovery", Current: 2, Max: 2, HealthyResources: 1, NotApplicableResources: 2},
	}}}
	return w
}

func TestSecurityAssessmentsWithMetadata(t *testing.T) {
	_, c := startSim(t, securityWorld())
	var got []cloud.SecurityAssessment
	if err := c.SecurityAssessments(context.Background(), subID(0), func(a cloud.SecurityAssessment) error {
		got = append(got, a)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []cloud.SecurityAssessment{
		{ID: storageAccountID + "/providers/Microsoft.Security/assessments/" + assessmentTLS, Name: assessmentTLS, ResourceID: storageAccountID,
			DisplayName: "Storage accounts should have the specified minimum TLS version", Status: "Unhealthy", Severity: "Medium",
			PolicyDefinitionID: policyDefinitionID(0), RemediationDescription: "Set the minimum TLS version to 1.2.", Categories: []string{"Data"},
			AssessmentType: "BuiltIn"},
		{ID: keyVaultID + "/providers/Microsoft.Security/assessments/" + assessmentVault, Name: assessmentVault, ResourceID: keyVaultID,
			DisplayName: "Key vaults should have deletion protection enabled", Status: "Healthy", Severity: "High", Categories: []string{"Data"},
			AssessmentType: "BuiltIn"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d assessments, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.ID != w.ID || g.Name != w.Name || g.ResourceID != w.ResourceID || g.DisplayName != w.DisplayName ||
			g.Status != w.Status || g.Severity != w.Severity || g.PolicyDefinitionID != w.PolicyDefinitionID ||
			g.RemediationDescription != w.RemediationDescription || !slices.Equal(g.Categories, w.Categories) || g.AssessmentType != w.AssessmentType {
			t.Errorf("assessment %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	// A brand subscription reached through delegation lists its own.
	n := 0
	if err := c.SecurityAssessments(context.Background(), subID(1), func(a cloud.SecurityAssessment) error {
		n++
		if a.Status != "NotApplicable" {
			t.Errorf("brand assessment status %q", a.Status)
		}
		return nil
	}); err != nil || n != 1 {
		t.Fatalf("brand subscription: %d assessments, %v", n, err)
	}
	stop := errors.New("stop")
	if err := c.SecurityAssessments(context.Background(), subID(0), func(cloud.SecurityAssessment) error { return stop }); err != stop {
		t.Errorf("fn's error: %v, want it as is", err)
	}
}

func TestSecureScore(t *testing.T) {
	_, c := startSim(t, securityWorld())
	score, controls, err := c.SecureScore(context.Background(), subID(0))
	if err != nil {
		t.Fatal(err)
	}
	if score != (cloud.SecureScore{Current: 3.5, Max: 6, Percentage: 0.5833}) {
		t.Errorf("score %+v, want 3.5 of 6 (0.5833)", score)
	}
	want := []cloud.SecureScoreControl{
		{Name: "33333333-3333-4333-8333-333333333333", DisplayName: "Encrypt data in transit", Current: 1.5, Max: 4, Percentage: 0.375,
			HealthyResources: 3, UnhealthyResources: 5},
		{Name: "44444444-4444-4444-8444-444444444444", DisplayName: "Enable data recovery", Current: 2, Max: 2, Percentage: 1,
			HealthyResources: 1, NotApplicableResources: 2},
	}
	if !slices.Equal(controls, want) {
		t.Errorf("controls:\n got %+v\nwant %+v", controls, want)
	}
	// A subscription without controls scores 0 of 0.
	score, controls, err = c.SecureScore(context.Background(), subID(1))
	if err != nil || score != (cloud.SecureScore{}) || len(controls) != 0 {
		t.Errorf("brand subscription: %+v %+v %v, want nothing", score, controls, err)
	}
}

func TestSecurityForbiddenNamesTheRole(t *testing.T) {
	_, c := startSim(t, securityWorld())
	err := c.SecurityAssessments(context.Background(), subID(9), func(cloud.SecurityAssessment) error { return nil })
	if !errors.Is(err, cloud.ErrSecurityReaderRequired) || !errors.Is(err, cloud.ErrForbidden) ||
		!strings.HasSuffix(err.Error(), "grant Steward the Security Reader role on subscription "+subID(9)) {
		t.Errorf("assessments of a subscription not delegated: %v", err)
	}
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.StatusCode != 403 {
		t.Errorf("assessments: %v, want a *cloud.Error of 403", err)
	}
	if _, _, err := c.SecureScore(context.Background(), subID(9)); !errors.Is(err, cloud.ErrSecurityReaderRequired) ||
		!strings.Contains(err.Error(), "Security Reader role on subscription "+subID(9)) {
		t.Errorf("secure score of a subscription not delegated: %v", err)
	}
	if _, _, err := c.SecureScore(context.Background(), subID(7)); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("secure score of an unknown subscription: %v, want ErrNotFound", err)
	}
}
