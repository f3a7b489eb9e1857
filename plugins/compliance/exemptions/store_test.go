package exemptions_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/exemptions"
)

// TestStoreRevision: the revision of a tenant's exemptions changes with
// each create, change and delete, and when one lapses with time alone;
// another tenant's changes leave it.
func TestStoreRevision(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		now := f.clock.Now()
		seen := map[string]string{}
		step := func(what string, at time.Time) {
			t.Helper()
			rev, err := f.store.Revision(ctx, []string{tenantA}, at)
			if err != nil {
				t.Fatal(err)
			}
			for before, r := range seen {
				if r == rev {
					t.Errorf("%s: revision %q as at %s", what, rev, before)
				}
			}
			seen[what] = rev
		}
		step("empty", now)
		e := &exemptions.Exemption{TenantID: tenantA, Scope: exemptions.ScopePolicy, PolicyDefinitionID: "/providers/microsoft.authorization/policydefinitions/p",
			Reason: "r", Owner: "o", ExpiresAt: now.Add(time.Hour), CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
		if err := f.store.Create(ctx, e, now); err != nil {
			t.Fatal(err)
		}
		step("created", now)
		e.ExpiresAt = now.Add(2 * time.Hour)
		if ok, err := f.store.Update(ctx, e, now); !ok || err != nil {
			t.Fatalf("update %v %v", ok, err)
		}
		step("extended", now)
		other := &exemptions.Exemption{TenantID: tenantB, Scope: exemptions.ScopePolicy, PolicyDefinitionID: e.PolicyDefinitionID,
			Reason: "r", Owner: "o", ExpiresAt: now.Add(time.Hour), CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
		if err := f.store.Create(ctx, other, now); err != nil {
			t.Fatal(err)
		}
		if rev, _ := f.store.Revision(ctx, []string{tenantA}, now); rev != seen["extended"] {
			t.Errorf("Brand B's create changed Brand A's revision: %q, was %q", rev, seen["extended"])
		}
		step("lapsed", now.Add(2*time.Hour))
		if ok, err := f.store.Delete(ctx, e); !ok || err != nil {
			t.Fatalf("delete %v %v", ok, err)
		}
		step("deleted", now.Add(2*time.Hour))
		if ok, err := f.store.Delete(ctx, e); ok || err != nil {
			t.Errorf("delete again %v %v", ok, err)
		}
	})
}

// TestStoreCreateRace: of concurrent creates of one target, one is stored
// and every other is a duplicate.
func TestStoreCreateRace(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		now := f.clock.Now()
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := &exemptions.Exemption{TenantID: tenantA, Scope: exemptions.ScopeResource, ResourceID: "/subscriptions/s1/x",
					Reason: "r", Owner: "o", ExpiresAt: now.Add(time.Hour), CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
				errs[i] = f.store.Create(ctx, e, now)
			}()
		}
		wg.Wait()
		stored := 0
		for _, err := range errs {
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, exemptions.ErrDuplicate):
				t.Errorf("create: %v", err)
			}
		}
		active, err := f.store.Active(ctx, []string{tenantA}, now)
		if stored != 1 || err != nil || len(active) != 1 {
			t.Errorf("%d created, %d stored (%v), want 1", stored, len(active), err)
		}
	})
}
