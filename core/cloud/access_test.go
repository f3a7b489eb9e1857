package cloud_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// directTenant is a directory that delegates nothing: Steward reads it with
// its application's own token there.
const directTenant = "33333333-3333-4333-8333-333333333333"

// accessWorld is baseWorld with a tenant that is not delegated and has two
// subscriptions, each with a quota.
func accessWorld() *world.World {
	w := baseWorld()
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Northwind", DirectoryTenantID: directTenant,
		Subscriptions: []world.Subscription{{ID: subID(2), Name: "Northwind Production"}, {ID: subID(3), Name: "Northwind Dev"}}})
	for _, sub := range []string{subID(0), subID(1), subID(2), subID(3)} {
		w.Quotas = append(w.Quotas, world.Quota{SubscriptionID: sub, Location: "westeurope", Provider: "compute", Name: "cores", CurrentValue: 1, Limit: 10})
	}
	return w
}

var (
	managingT  = cloud.Tenant{ID: "t-m", Name: "Managing", DirectoryTenantID: managingTenant}
	brandT     = cloud.Tenant{ID: "t-b", Name: "Brand", DirectoryTenantID: brandTenant, Delegated: true}
	northwindT = cloud.Tenant{ID: "t-n", Name: "Northwind", DirectoryTenantID: directTenant, SubscriptionID: subID(2)}
)

// readable checks a tenant's access reads each of its subscriptions'
// usages.
func readable(t *testing.T, a cloud.TenantAccess) {
	t.Helper()
	for _, sub := range a.Subscriptions {
		n := 0
		if err := a.Usages(context.Background(), sub, "westeurope", cloud.UsageCompute, func(cloud.Usage) error { n++; return nil }); err != nil || n != 1 {
			t.Errorf("%s: usages of %s: %d, %v", a.Tenant.Name, sub, n, err)
		}
	}
}

// TestAccessModes: a delegated tenant is read with the managing
// credential, one not delegated with the application's credential in its
// own directory (the managing one in the managing directory), each with
// the subscriptions its credential lists in its directory; one listing
// serves the tenants of one credential, and a directory's clients and
// token are kept from one resolution to the next.
func TestAccessModes(t *testing.T) {
	s, c := startSim(t, accessWorld())
	ctx := context.Background()
	got := c.Access(ctx, []cloud.Tenant{northwindT, brandT, managingT})
	want := [][]string{{subID(2), subID(3)}, {subID(1)}, {subID(0)}}
	for i, a := range got {
		if a.Err != nil || !slices.Equal(a.Subscriptions, want[i]) {
			t.Fatalf("%s: %v, %v; want %v", a.Tenant.Name, a.Subscriptions, a.Err, want[i])
		}
		readable(t, a)
	}
	if n := got[0].SubscriptionNames; len(n) != 2 || n[subID(2)] != "Northwind Production" || n[subID(3)] != "Northwind Dev" {
		t.Errorf("Northwind's subscription names: %v", n)
	}
	if got[1].ResourceManager != c.ResourceManager || got[2].ResourceManager != c.ResourceManager || got[0].ResourceManager == c.ResourceManager {
		t.Error("the delegated and managing tenants must be read with the managing clients, Northwind with its own")
	}
	listings := s.Faults.Hits(cloudsim.ARM, "/subscriptions")
	tokens := s.Faults.Hits(cloudsim.IdP, "/")
	again := c.Access(ctx, []cloud.Tenant{northwindT})
	if again[0].Err != nil || again[0].ResourceManager != got[0].ResourceManager {
		t.Fatalf("second resolution: %+v", again[0])
	}
	readable(t, again[0])
	if n := s.Faults.Hits(cloudsim.IdP, "/") - tokens; n != 0 {
		t.Errorf("%d token requests for a directory whose token is held", n)
	}
	if listings == 0 || s.Faults.Hits(cloudsim.ARM, "/subscriptions")-listings != 3 {
		t.Errorf("the second resolution sent %d requests, want one listing and two usages", s.Faults.Hits(cloudsim.ARM, "/subscriptions")-listings)
	}
}

// TestAccessRegisteredSubscription: a directory that lists none of its
// subscriptions is read through the tenant's registered subscription when
// Resource Manager grants it.
func TestAccessRegisteredSubscription(t *testing.T) {
	_, c := startSim(t, accessWorld())
	moved := cloud.Tenant{ID: "t-x", Name: "Moved", DirectoryTenantID: "55555555-5555-4555-8555-555555555555", SubscriptionID: subID(1), Delegated: true}
	a := c.Access(context.Background(), []cloud.Tenant{moved})[0]
	if a.Err != nil || !slices.Equal(a.Subscriptions, []string{subID(1)}) {
		t.Fatalf("registered subscription: %v, %v", a.Subscriptions, a.Err)
	}
	if name := a.SubscriptionNames[subID(1)]; name != "Brand Production" {
		t.Errorf("the registered subscription's name: %q, want Brand Production", name)
	}
	readable(t, a)
}

// TestAccessFailures: each tenant that cannot be read fails alone, named,
// matching ErrNoAccess and saying how to grant access: a tenant registered
// as delegated that is not (nothing visible, or its registered
// subscription refused), a directory without consent (token refused), and
// one whose consent is withdrawn while its token is held.
func TestAccessFailures(t *testing.T) {
	w := accessWorld()
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Tailspin", DirectoryTenantID: "44444444-4444-4444-8444-444444444444", Consented: new(false),
		Subscriptions: []world.Subscription{{ID: subID(4), Name: "Tailspin Production"}}})
	s, c := startSim(t, w)
	ctx := context.Background()
	notDelegated := cloud.Tenant{ID: "t-n2", Name: "Northwind as delegated", DirectoryTenantID: directTenant, Delegated: true}
	refused := notDelegated
	refused.SubscriptionID = subID(2)
	tailspin := cloud.Tenant{ID: "t-t", Name: "Tailspin", DirectoryTenantID: "44444444-4444-4444-8444-444444444444"}
	got := c.Access(ctx, []cloud.Tenant{notDelegated, refused, tailspin, northwindT})
	for i, want := range []string{
		"tenant Northwind as delegated (t-n2): no subscription of directory " + directTenant + " is visible to Steward: delegate its subscriptions to Steward's managing tenant through Azure Lighthouse (onboarding)",
		"tenant Northwind as delegated (t-n2): cloud: get subscription " + subID(2) + ": 403 Forbidden (AuthorizationFailed): delegate its subscriptions",
		"tenant Tailspin (t-t): directory 44444444-4444-4444-8444-444444444444 refused Steward's application a token: AADSTS700016: Application with identifier '" + clientID + "' was not found in the directory",
	} {
		a := got[i]
		if a.Err == nil || !strings.HasPrefix(a.Err.Error(), want) || !errors.Is(a.Err, cloud.ErrNoAccess) || a.ResourceManager != nil || a.Subscriptions != nil {
			t.Errorf("%s: %v, want an error starting %q", a.Tenant.Name, a.Err, want)
		}
	}
	if msg := got[2].Err.Error(); !strings.HasSuffix(msg, "grant Steward's application admin consent and a reader role in directory 44444444-4444-4444-8444-444444444444, "+
		"or delegate its subscriptions through Azure Lighthouse (onboarding) and register the tenant with delegation") || strings.Contains(msg, "\n") {
		t.Errorf("a refused token's error: %q", msg)
	}
	if got[3].Err != nil || len(got[3].Subscriptions) != 2 {
		t.Fatalf("Northwind beside the failing tenants: %v, %v", got[3].Subscriptions, got[3].Err)
	}

	// Northwind withdraws its consent while Steward holds its token: its
	// directory lists nothing, and its registered subscription is refused.
	withdrawn := *w
	withdrawn.Tenants = slices.Clone(w.Tenants)
	withdrawn.Tenants[2].Consented = new(false)
	s.SetWorld(&withdrawn)
	a := c.Access(ctx, []cloud.Tenant{northwindT})[0]
	if a.Err == nil || !errors.Is(a.Err, cloud.ErrNoAccess) || !errors.Is(a.Err, cloud.ErrForbidden) ||
		!strings.HasPrefix(a.Err.Error(), "tenant Northwind (t-n): cloud: get subscription "+subID(2)+": 403 Forbidden") ||
		!strings.Contains(a.Err.Error(), "grant Steward's application admin consent and a reader role in directory "+directTenant) {
		t.Errorf("consent withdrawn: %v", a.Err)
	}
	// With no token held, the directory refuses one.
	fresh, err := cloud.New(simConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	if a := fresh.Access(ctx, []cloud.Tenant{northwindT})[0]; a.Err == nil || !strings.Contains(a.Err.Error(), "refused Steward's application a token: AADSTS700016") {
		t.Errorf("consent withdrawn, no token held: %v", a.Err)
	}
}

// TestFailed: a failure that shows no missing access names the tenant
// only; one already naming a tenant is kept; nil stays nil.
func TestFailed(t *testing.T) {
	err := northwindT.Failed(errors.New("database is locked"))
	if err.Error() != "tenant Northwind (t-n): database is locked" || errors.Is(err, cloud.ErrNoAccess) {
		t.Errorf("plain failure: %v", err)
	}
	if again := brandT.Failed(err); again != err {
		t.Errorf("named twice: %v", again)
	}
	if brandT.Failed(nil) != nil {
		t.Error("nil failed")
	}
}
