package states_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// TestSyncStoresStates: the first sync stores every state of the world
// with its tenant, resource type, assignment, group names, normalised
// state and severity (from the metadata, else by category); snapshots
// both tenants and marks them fresh; a second sync of the same world
// leaves every row and the day's snapshot as they were, with no
// duplicates.
func TestSyncStoresStates(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := complianceWorld()
		f := start(t, dialect, w)
		if n := f.mustRun(t); n != int64(len(w.PolicyStates)) {
			t.Fatalf("first sync processed %d states, want %d", n, len(w.PolicyStates))
		}
		rows := f.stored(t)
		if len(rows) != len(w.PolicyStates) {
			t.Fatalf("%d rows stored, want %d", len(rows), len(w.PolicyStates))
		}
		find := func(res, defID string) storedRow {
			for _, r := range rows {
				if r.ResourceID == res && r.DefinitionID == defID {
					return r
				}
			}
			t.Fatalf("no row for %s under %s", res, defID)
			return storedRow{}
		}
		r := find(r1, p1.id)
		if r.TenantID != contoso.ID || r.SubscriptionID != subC1 || r.ResourceType != "Microsoft.Storage/storageAccounts" ||
			r.GroupNames != `["SOC_2_CC6.1"]` || r.ComplianceState != "NonCompliant" || r.Severity != "High" || r.PolicyName != p1.name ||
			!strings.Contains(r.AssignmentID, "/subscriptions/"+subC1+"/providers/Microsoft.Authorization/policyAssignments/") ||
			r.EvaluatedUnix != simNow.Add(-time.Hour).Unix() {
			t.Fatalf("r1 under p1: %+v", r)
		}
		for _, c := range []struct {
			res, def, state, severity string
		}{
			{r2, p2.id, "NonCompliant", "High"}, // no metadata, Key Vault
			{r2, p3.id, "NonCompliant", "Low"},  // "noncompliant" in Azure's casing; Tags
			{r3, p4.id, "Compliant", "Medium"},  // "medium" normalised
			{r4, p3.id, "Exempt", "Low"},
			{r6, p1.id, "NonCompliant", "High"},
		} {
			if r := find(c.res, c.def); r.ComplianceState != c.state || r.Severity != c.severity || r.GroupNames != "[]" && c.def != p1.id {
				t.Errorf("%s under %s: %+v, want %s and %s", c.res, c.def, r, c.state, c.severity)
			}
		}
		if r := find(r6, p1.id); r.TenantID != fabrikam.ID {
			t.Errorf("r6 stored for tenant %s", r.TenantID)
		}
		if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{contoso.ID, fabrikam.ID}) {
			t.Fatalf("fresh tenants %v", fresh)
		}
		snap, err := f.store.LatestSnapshot(context.Background(), contoso.ID)
		if err != nil || snap == nil {
			t.Fatalf("contoso's snapshot: %v %v", snap, err)
		}
		want := states.Snapshot{TenantID: contoso.ID, Day: "2026-12-15", CompliantResources: 2, NonCompliantResources: 2, TotalResources: 5,
			CompliantPolicies: 1, NonCompliantPolicies: 3, TotalPolicies: 4, PolicyStates: 9}
		if got := *snap; got.TakenAt.IsZero() || !sameFigures(got, want) || *got.CompliancePercent() != 50 {
			t.Fatalf("contoso's snapshot %+v, want %+v", got, want)
		}
		if snap, err := f.store.LatestSnapshot(context.Background(), "t-unknown"); snap != nil || err != nil {
			t.Fatalf("a tenant never synced has the snapshot %+v (%v)", snap, err)
		}

		// The same world again, an hour later: nothing changes.
		f.advance(t, time.Hour)
		f.mustRun(t)
		if again := f.stored(t); !reflect.DeepEqual(again, rows) {
			t.Fatalf("a second sync of the same world changed the states:\n%+v\nwas\n%+v", again, rows)
		}
		snaps, err := f.store.LatestSnapshots(context.Background(), []string{contoso.ID, fabrikam.ID})
		if err != nil || len(snaps) != 2 || !sameFigures(snaps[0], want) || snaps[1].TotalResources != 3 || snaps[1].NonCompliantResources != 1 {
			t.Fatalf("snapshots after the second sync %+v (%v)", snaps, err)
		}
		var days int64
		if days, err = f.store.DB.NewSelect().Table("compliance_snapshots").Count(context.Background()); err != nil || days != 2 {
			t.Fatalf("%d snapshots (%v), want one per tenant and day", days, err)
		}
	})
}

func sameFigures(a, b states.Snapshot) bool {
	a.TakenAt, b.TakenAt = time.Time{}, time.Time{}
	return a == b
}

// TestFailedSubscriptionKeepsStates: a subscription whose states fail
// after their first page (past the retries) keeps every state it had; the
// run fails naming the tenant, the subscription and the reason; the
// tenant's other subscription is replaced but its snapshot is not retaken
// and it is not marked fresh, while the other tenant goes through. Once
// the cloud answers, the next run catches up.
func TestFailedSubscriptionKeepsStates(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := twoPageWorld()
		f := start(t, dialect, w)
		f.mustRun(t)
		before := f.stored(t)
		snapBefore, _ := f.store.LatestSnapshot(context.Background(), contoso.ID)

		// r1 becomes compliant in C1, r4 non-compliant in C2.
		changed := withStates(w, func(ps []world.PolicyState) []world.PolicyState {
			for i := range ps {
				if ps[i].ResourceID == r1 || ps[i].ResourceID == r4 && ps[i].PolicyDefinitionID == p1.id {
					ps[i].ComplianceState = map[string]string{r1: "Compliant", r4: "NonCompliant"}[ps[i].ResourceID]
				}
			}
			return ps
		})
		f.sim.SetWorld(changed)
		f.advance(t, 24*time.Hour)
		// The subscription's summary and first page of states arrive, the
		// following pages fail.
		f.sim.Faults.Set(cloudsim.ARM, "/subscriptions/"+subC2+"/providers/Microsoft.PolicyInsights", cloudsim.Fault{Status: 500, Skip: 2})
		marks := len(f.harness.FreshMarks())
		_, err := f.run(t)
		if err == nil || !strings.Contains(err.Error(), "Contoso") || !strings.Contains(err.Error(), "subscription "+subC2) || !strings.Contains(err.Error(), "500") {
			t.Fatalf("failed sync: %v; want the run failed naming Contoso, %s and 500", err, subC2)
		}
		after := f.stored(t)
		c2 := func(rows []storedRow) []storedRow {
			return slices.DeleteFunc(slices.Clone(rows), func(r storedRow) bool { return r.SubscriptionID != subC2 })
		}
		if !reflect.DeepEqual(c2(after), c2(before)) {
			t.Fatalf("the failed subscription's states changed")
		}
		for _, r := range after {
			if r.ResourceID == r1 && r.ComplianceState != "Compliant" {
				t.Fatalf("C1 was not replaced: %+v", r)
			}
		}
		if snap, _ := f.store.LatestSnapshot(context.Background(), contoso.ID); snap.Day != snapBefore.Day {
			t.Fatalf("contoso snapshotted on %s after a failed subscription", snap.Day)
		}
		if snap, _ := f.store.LatestSnapshot(context.Background(), fabrikam.ID); snap.Day != "2026-12-16" {
			t.Fatalf("fabrikam's snapshot is of %s", snap.Day)
		}
		if fresh := f.freshTenants(marks); !slices.Equal(fresh, []string{fabrikam.ID}) {
			t.Fatalf("fresh after the failure: %v, want Fabrikam only", fresh)
		}

		// The stream is held in memory a batch at a time, never whole.
		f.sim.Faults.Clear()
		f.store.FlushRows = 250
		_, progress, err := f.harness.RunJob(context.Background(), "compliance")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(progress, func(p plugintest.Progress) bool {
			return strings.Contains(p.Message, subC2+": 1103 states in 5 batches")
		}) {
			t.Fatalf("no progress says C2's 1103 states went in 5 batches of at most 250: %+v", progress)
		}
		snap, _ := f.store.LatestSnapshot(context.Background(), contoso.ID)
		// r1 compliant, r2 still non-compliant through p2 and p3, r4 now
		// non-compliant: 2 non-compliant; r3 and the 1100 addresses
		// compliant.
		if snap.Day != "2026-12-16" || snap.NonCompliantResources != 2 || snap.CompliantResources != 1102 {
			t.Fatalf("contoso's snapshot after the recovery %+v", snap)
		}
	})
}

// TestListingCutShort: Policy Insights ending a subscription's listing
// after its first page, without an error, is caught against the
// subscription's summary: the run fails naming the subscription, whose
// states stay as they were.
func TestListingCutShort(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, twoPageWorld())
		f.mustRun(t)
		before := f.stored(t)
		f.sim.Faults.Set(cloudsim.ARM, "/subscriptions/"+subC2+"/providers/Microsoft.PolicyInsights", cloudsim.Fault{TruncatePages: true})
		_, err := f.run(t)
		if err == nil || !strings.Contains(err.Error(), states.ErrCutShort.Error()) || !strings.Contains(err.Error(), "subscription "+subC2) || !strings.Contains(err.Error(), "summary counts 1102") {
			t.Fatalf("a listing cut short: %v", err)
		}
		if after := f.stored(t); !reflect.DeepEqual(after, before) {
			t.Fatalf("a listing cut short changed the states")
		}
	})
}

// TestHooksAndDroppedSubscriptions: the hooks run for each tenant whose
// states were all stored, in order; a failing hook fails the run naming
// the tenant, which keeps its states and snapshot but is not marked fresh.
// A subscription no longer in its tenant's directory loses its states.
func TestHooksAndDroppedSubscriptions(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := complianceWorld()
		f := start(t, dialect, w)
		var called []string
		f.syncer.AfterTenant = []states.Hook{func(ctx context.Context, tenant sdk.Tenant) error {
			snap, err := f.store.LatestSnapshot(ctx, tenant.ID)
			if err != nil || snap == nil {
				return fmt.Errorf("no snapshot before the hook: %v", err)
			}
			called = append(called, tenant.ID)
			if tenant.ID == fabrikam.ID {
				return errors.New("rules failed")
			}
			return nil
		}}
		_, err := f.run(t)
		if err == nil || !strings.Contains(err.Error(), "Fabrikam") || !strings.Contains(err.Error(), "rules failed") {
			t.Fatalf("run with a failing hook: %v", err)
		}
		if !slices.Equal(called, []string{contoso.ID, fabrikam.ID}) {
			t.Fatalf("hooks called for %v", called)
		}
		if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{contoso.ID}) {
			t.Fatalf("fresh %v, want Contoso only", fresh)
		}

		f.syncer.AfterTenant = nil
		moved := *w
		moved.Tenants = slices.Clone(w.Tenants)
		moved.Tenants[0].Subscriptions = moved.Tenants[0].Subscriptions[:1]
		f.sim.SetWorld(&moved)
		f.mustRun(t)
		for _, r := range f.stored(t) {
			if r.SubscriptionID == subC2 {
				t.Fatalf("a state of the dropped subscription stayed: %+v", r)
			}
		}
		if snap, _ := f.store.LatestSnapshot(context.Background(), contoso.ID); snap.PolicyStates != 6 || snap.TotalResources != 3 {
			t.Fatalf("contoso's snapshot without C2 %+v", snap)
		}
	})
}

// twoPageWorld is the compliance world with enough states in C2 for a
// second page (Policy Insights pages 1000 records).
func twoPageWorld() *world.World {
	w := complianceWorld()
	for i := range 1100 {
		w.PolicyStates = append(w.PolicyStates, state(subC2, p3, resource(subC2, "Microsoft.Network/publicIPAddresses", fmt.Sprintf("ip%d", i)), "Compliant"))
	}
	return w
}

// TestRunsTakeTurnsPerTenant: a run of one tenant goes through while
// another run is held up in a second tenant's hooks (its custom rules, for
// instance), and two runs of one tenant still take turns.
func TestRunsTakeTurnsPerTenant(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, complianceWorld())
		release := make(chan struct{})
		inContoso := make(chan struct{}, 2)
		f.syncer.AfterTenant = []states.Hook{func(ctx context.Context, tenant sdk.Tenant) error {
			if tenant.ID == contoso.ID {
				inContoso <- struct{}{}
				<-release
			}
			return nil
		}}
		run := func(tenant string) chan error {
			done := make(chan error, 1)
			go func() {
				_, err := f.syncer.Run(context.Background(), &sdk.JobRun{TenantIDs: []string{tenant}})
				done <- err
			}()
			return done
		}
		first := run(contoso.ID)
		<-inContoso
		select {
		case err := <-run(fabrikam.ID):
			if err != nil {
				t.Errorf("fabrikam's run: %v", err)
			}
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatal("fabrikam's run waited for contoso's")
		}
		if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{fabrikam.ID}) {
			t.Errorf("fresh %v while contoso's run is held up, want fabrikam", fresh)
		}
		second := run(contoso.ID)
		select {
		case <-inContoso:
			t.Error("a second run of contoso reached its hooks while the first was in them")
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		for _, done := range []chan error{first, second} {
			if err := <-done; err != nil {
				t.Errorf("contoso's run: %v", err)
			}
		}
	})
}
