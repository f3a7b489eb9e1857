package states_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// TestReplace: a stream that fails, or lists fewer resources than the
// summary counts, leaves the subscription's states as they were; two
// replacements of one subscription at once leave the
// states of one of them, never both.
func TestReplace(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		s := &states.Store{DB: db, FlushRows: 100}
		stream := func(n int, fail error) func(emit func(states.State) error) error {
			return func(emit func(states.State) error) error {
				for i := range n {
					if err := emit(states.State{ResourceID: fmt.Sprintf("r%d", i), PolicyDefinitionID: "p", ComplianceState: "Compliant", EvaluatedAt: simNow}); err != nil {
						return err
					}
				}
				return fail
			}
		}
		count := func() int64 {
			n, err := db.NewSelect().Table("compliance_policy_states").Where("subscription_id = ?", "s1").Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return int64(n)
		}
		if w, err := s.Replace(ctx, states.Target{TenantID: "t1", SubscriptionID: "s1", SyncedAt: simNow, Resources: 250}, stream(250, nil)); err != nil || w.Rows != 250 || w.Batches != 3 {
			t.Fatalf("replace: %+v %v", w, err)
		}
		broken := errors.New("page 2 failed")
		if _, err := s.Replace(ctx, states.Target{TenantID: "t1", SubscriptionID: "s1", SyncedAt: simNow.Add(time.Hour)}, stream(300, broken)); !errors.Is(err, broken) {
			t.Fatalf("a failing stream: %v", err)
		}
		if n := count(); n != 250 {
			t.Fatalf("%d states after a failed stream, want the 250 before it", n)
		}
		if _, err := s.Replace(ctx, states.Target{TenantID: "t1", SubscriptionID: "s1", SyncedAt: simNow, Resources: 301}, stream(300, nil)); !errors.Is(err, states.ErrCutShort) {
			t.Fatalf("300 resources where the summary counts 301: %v", err)
		}
		if n := count(); n != 250 {
			t.Fatalf("%d states after a listing cut short, want the 250 before it", n)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, n := range []int{400, 500} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Replace(ctx, states.Target{TenantID: "t1", SubscriptionID: "s1", SyncedAt: simNow}, stream(n, nil))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 400 && n != 500 {
			t.Fatalf("%d states after two replacements at once, want 400 or 500", n)
		}
	})
}
