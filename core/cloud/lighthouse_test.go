package cloud_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const ownTenant = "33333333-3333-4333-8333-333333333333"

// lighthouseWorld adds a tenant that manages its own estate, delegating
// nothing: Steward must not reach its subscription.
func lighthouseWorld() *world.World {
	w := baseWorld()
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Independent", DirectoryTenantID: ownTenant,
		Subscriptions: []world.Subscription{{ID: subID(9), Name: "Independent Production"}}})
	w.Quotas = append(w.Quotas, world.Quota{SubscriptionID: subID(9), Location: "westeurope", Provider: "compute", Name: "cores", CurrentValue: 1, Limit: 10})
	addCosts(w, subID(9), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 5, 2)
	w.PolicyStates = append(w.PolicyStates, world.PolicyState{SubscriptionID: subID(9), PolicyDefinitionID: policyDefinitionID(0),
		ComplianceState: "NonCompliant", ResourceID: "/subscriptions/" + subID(9), Timestamp: "2026-12-15T03:00:00Z"})
	w.Resources = append(w.Resources, world.Resource{SubscriptionID: subID(9), Type: "microsoft.compute/disks", Name: "d",
		ID: "/subscriptions/" + subID(9) + "/resourceGroups/rg/providers/Microsoft.Compute/disks/d"})
	return w
}

func TestDelegatedSubscriptions(t *testing.T) {
	_, c := startSim(t, lighthouseWorld())
	var got []cloud.DelegatedSubscription
	err := c.DelegatedSubscriptions(context.Background(), func(d cloud.DelegatedSubscription) error {
		got = append(got, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The managing tenant's own subscription needs no delegation and the
	// independent one has none.
	if len(got) != 1 {
		t.Fatalf("%d delegations, want the brand subscription's: %+v", len(got), got)
	}
	d := got[0]
	if d.SubscriptionID != subID(1) || d.TenantID != brandTenant || d.TenantName != "Brand" ||
		d.ManagedByTenantID != managingTenant || d.ManagedByTenantName != "Managing" || d.OfferName == "" ||
		!strings.HasPrefix(d.AssignmentID, "/subscriptions/"+subID(1)+"/providers/Microsoft.ManagedServices/registrationAssignments/") ||
		!strings.HasPrefix(d.DefinitionID, "/subscriptions/"+subID(1)+"/providers/Microsoft.ManagedServices/registrationDefinitions/") {
		t.Fatalf("delegation %+v", d)
	}
	var roles []string
	for _, a := range d.Authorizations {
		if a.PrincipalID == "" || a.PrincipalDisplayName == "" {
			t.Fatalf("authorization %+v names no principal", a)
		}
		roles = append(roles, a.RoleDefinitionID)
	}
	if !slices.Equal(roles, []string{arm.RoleReader, arm.RoleCostManagementReader, arm.RoleSecurityReader}) {
		t.Fatalf("roles %v, want Reader, Cost Management Reader and Security Reader", roles)
	}
}

func TestUndelegatedSubscriptionIsRefused(t *testing.T) {
	_, c := startSim(t, lighthouseWorld())
	ctx := context.Background()
	subs, err := listSubscriptions(c)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range subs {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{subID(0), subID(1)}) {
		t.Fatalf("subscriptions %v, want the managing and the delegated one only", ids)
	}

	for _, sub := range []string{subID(0), subID(1)} {
		if err := c.CheckDelegation(ctx, sub); err != nil {
			t.Fatalf("reachable subscription %s: %v", sub, err)
		}
	}
	err = c.CheckDelegation(ctx, subID(9))
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrNotDelegated) || !errors.Is(err, cloud.ErrForbidden) || !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "AuthorizationFailed" {
		t.Fatalf("independent subscription: %v, want ErrNotDelegated (403 AuthorizationFailed)", err)
	}
	if err := c.CheckDelegation(ctx, "99999999-0000-4000-8000-000000000000"); !errors.Is(err, cloud.ErrNotFound) || errors.Is(err, cloud.ErrNotDelegated) {
		t.Fatalf("unknown subscription: %v, want ErrNotFound", err)
	}

	// Every subscription-scoped route refuses it the same way.
	refused := map[string]error{
		"usages": c.Usages(ctx, subID(9), "westeurope", cloud.UsageCompute, func(cloud.Usage) error { return nil }),
		"costs": c.DailyCosts(ctx, subID(9), cloud.ActualCost, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), simNow,
			func(cloud.CostRow) error { return nil }),
		"policy states":  c.PolicyStates(ctx, subID(9), "", func(cloud.PolicyState) error { return nil }),
		"budgets":        c.Budgets(ctx, subID(9), func(cloud.Budget) error { return nil }),
		"delete budget":  c.DeleteBudget(ctx, subID(9), "b"),
		"subscription":   func() error { _, err := c.Subscription(ctx, subID(9)); return err }(),
		"policy summary": func() error { _, err := c.PolicySummary(ctx, subID(9)); return err }(),
	}
	for route, err := range refused {
		var e *cloud.Error
		if !errors.Is(err, cloud.ErrForbidden) || !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "AuthorizationFailed" {
			t.Errorf("%s: %v, want 403 AuthorizationFailed", route, err)
		}
	}
	// Resource Graph leaves out what the caller cannot see.
	n := 0
	if err := c.Resources(ctx, []string{subID(9)}, "", func(cloud.Resource) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("independent subscription's resources: %d, %v", n, err)
	}
}

// TestDemoWorldDelegation: in the demo world Steward reaches the managing
// tenant's subscriptions and the four delegated tenants', with their
// policy states and resources, and Northwind's not at all.
func TestDemoWorldDelegation(t *testing.T) {
	w := world.Demo(1, simNow)
	s, _ := startSim(t, w)
	cfg := simConfig(s)
	cfg.TenantID = w.Tenants[0].DirectoryTenantID
	c, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reached := map[string]bool{}
	subs, err := listSubscriptions(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, listed := range subs {
		reached[listed.ID] = true
	}
	delegated := map[string]bool{}
	err = c.DelegatedSubscriptions(ctx, func(d cloud.DelegatedSubscription) error {
		delegated[d.SubscriptionID] = d.ManagedByTenantID == cfg.TenantID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, tn := range w.Tenants {
		for _, sub := range tn.Subscriptions {
			own, isDelegated := i == 0, tn.Delegated && i > 0
			if reached[sub.ID] != (own || isDelegated) || delegated[sub.ID] != isDelegated {
				t.Fatalf("%s %s: listed %v, delegated %v", tn.Name, sub.Name, reached[sub.ID], delegated[sub.ID])
			}
			err := c.CheckDelegation(ctx, sub.ID)
			if (err == nil) != reached[sub.ID] || err != nil && !errors.Is(err, cloud.ErrNotDelegated) {
				t.Fatalf("%s %s: check %v", tn.Name, sub.Name, err)
			}
			states, err := listPolicyStates(c, sub.ID, cloud.PolicyFilterNonCompliant)
			if reached[sub.ID] && (err != nil || len(states) == 0) || !reached[sub.ID] && !errors.Is(err, cloud.ErrForbidden) {
				t.Fatalf("%s %s: %d non-compliant states, %v", tn.Name, sub.Name, len(states), err)
			}
		}
	}
	if len(delegated) != 4 || len(reached) != 7 {
		t.Fatalf("%d delegated and %d reached subscriptions, want 4 and 7", len(delegated), len(reached))
	}
	n := 0
	if err := c.Resources(ctx, nil, "microsoft.storage/storageaccounts", func(r cloud.Resource) error {
		if !reached[r.SubscriptionID] {
			t.Errorf("resource %s of a subscription Steward does not reach", r.ID)
		}
		n++
		return nil
	}); err != nil || n == 0 {
		t.Fatalf("%d storage accounts, %v", n, err)
	}
}
