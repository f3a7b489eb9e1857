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
// tenant, or an error for the delegation check; and for Graph in every
// directory but those it refuses. It reads no tenant directly (see
// direct_test.go, on the simulated cloud).
type fakeCloud struct {
	owner  map[string]string
	refuse map[string]error
	// graph refuses directories.
	graph map[string]error
}

func (f fakeCloud) Access(_ context.Context, ts []cloud.Tenant) []cloud.TenantAccess {
	out := make([]cloud.TenantAccess, len(ts))
	for i, t := range ts {
		out[i] = cloud.TenantAccess{Tenant: t, Err: t.Failed(cloud.ErrUnavailable)}
	}
	return out
}

func (f fakeCloud) CheckGraph(_ context.Context, dir string) error { return f.graph[dir] }

func (f fakeCloud) AdminConsentURL(dir, redirectURI string) (string, error) {
	return "https://login.example/" + dir + "/adminconsent?client_id=app&redirect_uri=" + redirectURI, nil
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
			owner: map[string]string{subA: customer, "bbbbbbbb-0000-0000-0000-000000000001": "33333333-3333-3333-3333-333333333333",
				"ffffffff-0000-0000-0000-000000000001": "77777777-7777-7777-7777-777777777777", "99999999-0000-0000-0000-000000000001": "88888888-8888-8888-8888-888888888888"},
			refuse: map[string]error{"cccccccc-0000-0000-0000-000000000001": refused, "dddddddd-0000-0000-0000-000000000001": cloud.ErrUnavailable},
			graph: map[string]error{
				"77777777-7777-7777-7777-777777777777": fmt.Errorf("%w: directory refused Steward's application a token: AADSTS700016", cloud.ErrNoAccess),
				"88888888-8888-8888-8888-888888888888": fmt.Errorf("read users: %w", cloud.ErrUnavailable),
			},
		},
		Tenants: store, ManagingTenantID: managing, ConsentRedirectURI: "http://127.0.0.1:8000/onboarding/consent/callback",
	}
	ctx := context.Background()
	req := Request{TenantName: "Contoso", DirectoryTenantID: customer, SubscriptionID: subA}

	res, err := v.Verify(ctx, req)
	if err != nil || res.Outcome != Created || res.Tenant == nil || !res.Tenant.UseDelegation || !res.Tenant.IsActive {
		t.Fatalf("first verification: %+v %v", res, err)
	}
	var names []string
	for _, c := range res.Checks {
		names = append(names, c.Name)
		if !c.Passed {
			t.Errorf("check %+v", c)
		}
	}
	if strings.Join(names, ",") != "not_managing_tenant,subscription_reachable_by_delegation,subscription_in_directory_tenant,graph_readable_in_directory,tenant_not_already_managed" {
		t.Errorf("checks %v", names)
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
		// Lighthouse does not reach Entra ID: the directory's consent is
		// checked, and its URL is the fix.
		{"Graph refused", "77777777-7777-7777-7777-777777777777", "ffffffff-0000-0000-0000-000000000001", Failed, CheckGraph,
			"does not reach Entra ID, so the directory must consent to the application as well): no access to the tenant: directory refused Steward's application a token: AADSTS700016. " +
				"An administrator of directory 77777777-7777-7777-7777-777777777777 grants Steward's application admin consent at https://login.example/77777777-7777-7777-7777-777777777777/adminconsent?"},
		{"Graph down", "88888888-8888-8888-8888-888888888888", "99999999-0000-0000-0000-000000000001", Unavailable, CheckGraph, "retry shortly"},
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
// verification that created nothing is each check's name and whether it
// passed, with fixed words that name no subscription, directory or owner.
func TestRedacted(t *testing.T) {
	v := &Verifier{
		Cloud: fakeCloud{
			owner:  map[string]string{subA: customer, "bbbbbbbb-0000-0000-0000-000000000001": "33333333-3333-3333-3333-333333333333"},
			refuse: map[string]error{"cccccccc-0000-0000-0000-000000000001": fmt.Errorf("check access: %w", cloud.ErrNotDelegated)},
		},
		Tenants: &fakeTenants{byDirectory: map[string]*tenancy.Tenant{customer: {ID: "t-1"}}}, ManagingTenantID: managing,
	}
	ctx := context.Background()
	for _, c := range []struct {
		sub     string
		outcome Outcome
		checks  string
		reason  string
	}{
		{subA, Duplicate, "+not_managing_tenant +subscription_reachable_by_delegation +subscription_in_directory_tenant +graph_readable_in_directory -tenant_not_already_managed",
			"the directory tenant is already managed by Steward"},
		{"bbbbbbbb-0000-0000-0000-000000000001", Failed, "+not_managing_tenant +subscription_reachable_by_delegation -subscription_in_directory_tenant",
			"the subscription does not belong to the directory tenant named"},
		{"cccccccc-0000-0000-0000-000000000001", Failed, "+not_managing_tenant -subscription_reachable_by_delegation", "deploy the onboarding template"},
		{"eeeeeeee-0000-0000-0000-000000000001", Failed, "+not_managing_tenant -subscription_reachable_by_delegation", "deploy the onboarding template"},
	} {
		res, err := v.Verify(ctx, Request{TenantName: "Secret Name", DirectoryTenantID: customer, SubscriptionID: c.sub})
		if err != nil || res.Outcome == Created {
			t.Fatalf("%s: %+v %v", c.sub, res, err)
		}
		r := res.Redacted()
		var checks []string
		for _, ch := range r.Checks {
			mark := "-"
			if ch.Passed {
				mark = "+"
			}
			checks = append(checks, mark+ch.Name)
			for _, secret := range []string{c.sub, customer, "33333333", "Secret Name", "t-1", "cloud"} {
				if strings.Contains(ch.Detail, secret) {
					t.Errorf("%s: check %s tells %q: %q", c.sub, ch.Name, secret, ch.Detail)
				}
			}
		}
		if r.Outcome != c.outcome || strings.Join(checks, " ") != c.checks || !strings.Contains(r.Reason, c.reason) || r.Tenant != nil || strings.Contains(r.Reason, c.sub) {
			t.Errorf("%s redacted: %+v", c.sub, r)
		}
	}
	created := Result{Outcome: Created, Tenant: &tenancy.Tenant{ID: "t-2"}, Checks: []Check{{Name: CheckNotRegistered, Passed: true}}}
	if r := created.Redacted(); r.Outcome != Created || r.Tenant == nil || len(r.Checks) != 1 {
		t.Errorf("a created tenant's result: %+v", r)
	}
	down := Result{Outcome: Unavailable, Reason: "the cloud could not be asked about subscription x; retry shortly (dial tcp 10.0.0.1:443)",
		Checks: []Check{{Name: CheckDelegationReach, Detail: "the cloud could not be asked about subscription x; retry shortly (dial tcp 10.0.0.1:443)"}}}
	if r := down.Redacted(); r.Outcome != Unavailable || r.Reason != reasonUnavailable || len(r.Checks) != 1 || r.Checks[0].Detail != reasonUnavailable {
		t.Errorf("unavailable: %+v", r)
	}
}
