package onboarding

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/host/tenancy"
)

const (
	customer = "11111111-1111-1111-1111-111111111111"
	subA     = "aaaaaaaa-0000-0000-0000-000000000001"
)

// fakeCloud answers for the subscriptions it holds: their owning directory
// tenant, or an error for the delegation check.
type fakeCloud struct {
	owner  map[string]string
	refuse map[string]error
}

func (f fakeCloud) CheckDelegation(_ context.Context, id string) error {
	if err := f.refuse[id]; err != nil {
		return err
	}
	if _, ok := f.owner[id]; !ok {
		return fmt.Errorf("get subscription: %w", cloud.ErrNotFound)
	}
	return nil
}

func (f fakeCloud) Subscription(_ context.Context, id string) (cloud.Subscription, error) {
	return cloud.Subscription{ID: id, DisplayName: "prod", TenantID: f.owner[id]}, nil
}

type fakeTenants struct{ byDirectory map[string]*tenancy.Tenant }

func (f *fakeTenants) CreateTenant(_ context.Context, t *tenancy.Tenant) error {
	if f.byDirectory[t.DirectoryTenantID] != nil {
		return tenancy.ErrDuplicate
	}
	t.ID = "t-" + t.DirectoryTenantID
	f.byDirectory[t.DirectoryTenantID] = t
	return nil
}

func TestClean(t *testing.T) {
	r, errs := Request{TenantName: "  Contoso  ", DirectoryTenantID: " " + strings.ToUpper(customer), SubscriptionID: subA, Description: " x "}.Clean()
	if len(errs) != 0 || r.TenantName != "Contoso" || r.DirectoryTenantID != customer || r.Description != "x" {
		t.Fatalf("%+v %v", r, errs)
	}
	_, errs = Request{TenantName: "   ", DirectoryTenantID: "{" + customer + "}", SubscriptionID: "nope", Description: strings.Repeat("d", MaxDescriptionLen+1)}.Clean()
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if strings.Join(fields, ",") != "tenant_name,tenant_id,subscription_id,description" {
		t.Errorf("fields %v", fields)
	}
	if _, errs := (Request{TenantName: strings.Repeat("n", MaxTenantNameLen+1), DirectoryTenantID: customer, SubscriptionID: subA}).Clean(); len(errs) != 1 || errs[0].Field != "tenant_name" {
		t.Errorf("long name: %v", errs)
	}
}

func TestVerify(t *testing.T) {
	refused := fmt.Errorf("check access: %w", cloud.ErrNotDelegated)
	store := &fakeTenants{byDirectory: map[string]*tenancy.Tenant{}}
	v := &Verifier{
		Cloud: fakeCloud{
			owner:  map[string]string{subA: customer, "bbbbbbbb-0000-0000-0000-000000000001": "33333333-3333-3333-3333-333333333333"},
			refuse: map[string]error{"cccccccc-0000-0000-0000-000000000001": refused, "dddddddd-0000-0000-0000-000000000001": cloud.ErrUnavailable},
		},
		Tenants: store, ManagingTenantID: managing,
	}
	ctx := context.Background()
	req := Request{TenantName: "Contoso", DirectoryTenantID: customer, SubscriptionID: subA}

	res, err := v.Verify(ctx, req)
	if err != nil || res.Outcome != Created || res.Tenant == nil || !res.Tenant.UseDelegation || !res.Tenant.IsActive || len(res.Checks) != 4 {
		t.Fatalf("first verification: %+v %v", res, err)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check %+v", c)
		}
	}
	if res, _ = v.Verify(ctx, req); res.Outcome != Duplicate || res.Tenant != nil || !strings.Contains(res.Reason, "already managed") {
		t.Errorf("repeat: %+v", res)
	}

	for _, c := range []struct {
		name, dir, sub string
		outcome        Outcome
		check, reason  string
	}{
		{"not delegated", "44444444-4444-4444-4444-444444444444", "cccccccc-0000-0000-0000-000000000001", Failed, CheckDelegationReach, "not delegated to Steward's managing tenant"},
		{"unknown subscription", "44444444-4444-4444-4444-444444444444", "eeeeeeee-0000-0000-0000-000000000001", Failed, CheckDelegationReach, "does not exist"},
		{"other directory", "44444444-4444-4444-4444-444444444444", "bbbbbbbb-0000-0000-0000-000000000001", Failed, CheckDirectory, "belongs to directory tenant 33333333"},
		{"managing tenant", managing, subA, Failed, CheckNotManagingTenant, "managing tenant"},
		{"cloud down", "44444444-4444-4444-4444-444444444444", "dddddddd-0000-0000-0000-000000000001", Unavailable, CheckDelegationReach, "retry shortly"},
	} {
		res, err := v.Verify(ctx, Request{TenantName: "X", DirectoryTenantID: c.dir, SubscriptionID: c.sub})
		last := res.Checks[len(res.Checks)-1]
		if err != nil || res.Outcome != c.outcome || res.Tenant != nil || last.Passed || last.Name != c.check || !strings.Contains(res.Reason, c.reason) {
			t.Errorf("%s: %+v %v", c.name, res, err)
		}
	}
	if len(store.byDirectory) != 1 {
		t.Errorf("tenants created: %v", store.byDirectory)
	}

	if res, _ := (&Verifier{Tenants: store}).Verify(ctx, Request{TenantName: "Y", DirectoryTenantID: "55555555-5555-5555-5555-555555555555", SubscriptionID: subA}); res.Outcome != Unavailable {
		t.Errorf("no cloud: %+v", res)
	}
	boom := errors.New("disk full")
	if _, err := (&Verifier{Cloud: v.Cloud, Tenants: failingTenants{boom}}).Verify(ctx, Request{TenantName: "Z", DirectoryTenantID: "66666666-6666-6666-6666-666666666666", SubscriptionID: "bbbbbbbb-0000-0000-0000-000000000001"}); err != nil {
		t.Errorf("a failed check must not reach the store: %v", err)
	}
	if _, err := (&Verifier{Cloud: v.Cloud, Tenants: failingTenants{boom}}).Verify(ctx, Request{TenantName: "Z", DirectoryTenantID: customer, SubscriptionID: subA}); !errors.Is(err, boom) {
		t.Errorf("store failure: %v", err)
	}
}

type failingTenants struct{ err error }

func (f failingTenants) CreateTenant(context.Context, *tenancy.Tenant) error { return f.err }

// TestRedacted: what a caller who may not see other tenants is told of a
// verification that created nothing is the same whatever the cause, and
// names no subscription owner.
func TestRedacted(t *testing.T) {
	v := &Verifier{
		Cloud: fakeCloud{
			owner:  map[string]string{subA: customer, "bbbbbbbb-0000-0000-0000-000000000001": "33333333-3333-3333-3333-333333333333"},
			refuse: map[string]error{"cccccccc-0000-0000-0000-000000000001": fmt.Errorf("check access: %w", cloud.ErrNotDelegated)},
		},
		Tenants: &fakeTenants{byDirectory: map[string]*tenancy.Tenant{customer: {ID: "t-1"}}}, ManagingTenantID: managing,
	}
	ctx := context.Background()
	for _, sub := range []string{subA, "bbbbbbbb-0000-0000-0000-000000000001", "cccccccc-0000-0000-0000-000000000001", "eeeeeeee-0000-0000-0000-000000000001"} {
		res, err := v.Verify(ctx, Request{TenantName: "X", DirectoryTenantID: customer, SubscriptionID: sub})
		if err != nil || res.Outcome == Created {
			t.Fatalf("%s: %+v %v", sub, res, err)
		}
		r := res.Redacted()
		if r.Outcome != Failed || r.Reason != ReasonUnverified || len(r.Checks) != 0 || r.Tenant != nil || strings.Contains(r.Reason, "33333333") {
			t.Errorf("%s redacted: %+v", sub, r)
		}
	}
	created := Result{Outcome: Created, Tenant: &tenancy.Tenant{ID: "t-2"}, Checks: []Check{{Name: CheckNotRegistered, Passed: true}}}
	if r := created.Redacted(); r.Outcome != Created || r.Tenant == nil || len(r.Checks) != 1 {
		t.Errorf("a created tenant's result: %+v", r)
	}
	down := Result{Outcome: Unavailable, Reason: "the cloud could not be asked about subscription x; retry shortly (dial tcp 10.0.0.1:443)"}
	if r := down.Redacted(); r.Outcome != Unavailable || strings.Contains(r.Reason, "10.0.0.1") {
		t.Errorf("unavailable: %+v", r)
	}
}
