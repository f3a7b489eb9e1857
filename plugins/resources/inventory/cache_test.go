package inventory_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
)

// figures are every read the Store keeps under the inventory's revision,
// for one set of tenants.
type figures struct {
	Page         []inventory.Resource
	Total        int64
	Tagged       []inventory.Resource
	TaggedTotal  int64
	ByType       []inventory.Count
	Coverage     inventory.TagCoverage
	Orphans      []inventory.Orphan
	ByKind       map[string]int64
	OrphanCounts map[string]int64
}

// read reads the figures of the tenants from s.
func read(t *testing.T, s *inventory.Store, tenants ...string) figures {
	t.Helper()
	ctx := context.Background()
	var f figures
	var err error
	if f.Page, f.Total, err = s.List(ctx, inventory.ListQuery{TenantIDs: tenants, SortBy: "type", Limit: 5, Offset: 1}); err != nil {
		t.Fatal(err)
	}
	if f.Tagged, f.TaggedTotal, err = s.List(ctx, inventory.ListQuery{TenantIDs: tenants, TagKey: "env", TagValue: "prod", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	if f.ByType, err = s.CountBy(ctx, tenants, "type"); err != nil {
		t.Fatal(err)
	}
	if f.Coverage, err = s.Coverage(ctx, tenants, requiredTags); err != nil {
		t.Fatal(err)
	}
	if f.Orphans, f.ByKind, err = s.Orphans(ctx, tenants, "", 2, 1); err != nil {
		t.Fatal(err)
	}
	if f.OrphanCounts, err = s.OrphanCounts(ctx, tenants); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReadsKeptUnderRevision: on both databases, the Store's pages and
// figures are read from the database once per revision: rows deleted
// behind its back leave them as they were until the tenant's revision is
// raised, and then they are read again. Changing what a read returned
// changes nothing kept.
func TestReadsKeptUnderRevision(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := start(t, dialect, inventoryWorld())
			f.mustRun(t)
			before := read(t, f.store, contoso.ID)
			if before.Total != 9 || before.Coverage.Total != 9 || before.OrphanCounts[inventory.OrphanDisk] != 1 || len(before.Orphans) != 2 {
				t.Fatalf("Contoso's figures after the sync: %+v", before)
			}
			// What a caller does with a result is its own.
			before.Page[0].Name = "changed"
			before.ByType[0].Count = -1
			before.Coverage.TaggedWith["env"] = -1
			before.ByKind[inventory.OrphanDisk] = -1
			before.OrphanCounts[inventory.OrphanNIC] = -1
			before = read(t, f.store, contoso.ID)
			if fresh := read(t, &inventory.Store{DB: f.store.DB}, contoso.ID); !reflect.DeepEqual(before, fresh) {
				t.Fatalf("after changing returned values: %+v\nfrom the database: %+v", before, fresh)
			}

			for _, table := range []string{"resources_inventory", "resources_inventory_tags"} {
				if _, err := f.store.DB.ExecContext(ctx, "DELETE FROM "+table+" WHERE tenant_id = ?", contoso.ID); err != nil {
					t.Fatal(err)
				}
			}
			if got := read(t, f.store, contoso.ID); !reflect.DeepEqual(got, before) {
				t.Fatalf("read again at the same revision: %+v, want what was kept: %+v", got, before)
			}
			if got := read(t, f.store, fabrikam.ID); got.Total != 1 {
				t.Fatalf("Fabrikam's inventory, never read before: %d resources, want 1", got.Total)
			}

			if err := revcache.Bump(ctx, f.store.DB, inventory.RevisionTable, contoso.ID); err != nil {
				t.Fatal(err)
			}
			after := read(t, f.store, contoso.ID)
			if after.Total != 0 || after.TaggedTotal != 0 || len(after.ByType) != 0 || after.Coverage.Total != 0 || len(after.Orphans) != 0 ||
				after.OrphanCounts[inventory.OrphanDisk] != 0 || after.ByKind[inventory.OrphanDisk] != 0 {
				t.Fatalf("after the revision was raised: %+v, want nothing", after)
			}
		})
	}
}

// TestSyncThroughAnotherStoreIsSeen: a sync through a second Store on the
// same database, as another replica's, raises the revision of the
// tenants it changes, so the first Store's next reads are those of the
// database: of the tenant synced, and of the tenant a subscription moved
// away from, even when that tenant is not synced.
func TestSyncThroughAnotherStoreIsSeen(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := inventoryWorld()
			f := start(t, dialect, w)
			f.mustRun(t)
			replica := &inventory.Store{DB: f.store.DB}
			check := func(stage string) map[string]figures {
				t.Helper()
				out := map[string]figures{}
				for _, tenants := range [][]string{{contoso.ID}, {fabrikam.ID}, allTenants} {
					got := read(t, replica, tenants...)
					if want := read(t, &inventory.Store{DB: f.store.DB}, tenants...); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: %v read %+v, the database has %+v", stage, tenants, got, want)
					}
					out[tenants[0]+"+"+tenants[len(tenants)-1]] = got
				}
				return out
			}
			first := check("first sync")

			// Disk-2 is attached, vm-1 loses its owner tag, a disk is new,
			// and Contoso's second subscription moves to Fabrikam.
			d2, v1 := clone(disk2), clone(vm1)
			d2.Properties["diskState"] = "Attached"
			delete(v1.Tags, "owner")
			rs := []world.Resource{v1, disk1, d2, pip1, nic1, nic2, rgApp, st1, rgEmpty, vmF,
				res(subC1, "rg-app", "Microsoft.Compute/disks", "disk-3", "eastus", map[string]string{"env": "prod"}, map[string]any{"diskState": "Unattached"})}
			moved := withResources(w, rs)
			moved.Tenants = slices.Clone(w.Tenants)
			moved.Tenants[0].Subscriptions = w.Tenants[0].Subscriptions[:1]
			moved.Tenants[1].Subscriptions = append(slices.Clone(w.Tenants[1].Subscriptions), w.Tenants[0].Subscriptions[1])
			f.sim.SetWorld(moved)
			f.clock.Advance(10 * time.Minute)
			f.mustRun(t)
			second := check("second sync")
			for k, v := range second {
				if reflect.DeepEqual(v, first[k]) {
					t.Fatalf("%s: the figures did not change with the sync: %+v", k, v)
				}
			}
			if c := second[contoso.ID+"+"+contoso.ID]; c.Total != 8 || c.OrphanCounts[inventory.OrphanResourceGroup] != 0 {
				t.Fatalf("Contoso after its second subscription left: %+v", c)
			}

			// The second subscription back to Contoso, with its storage
			// account alone, replaced through a third Store, outside a run
			// that syncs Fabrikam: Fabrikam's revision is raised as the
			// tenant the subscription's resources belonged to.
			other := &inventory.Store{DB: f.store.DB}
			_, err := other.Replace(context.Background(), inventory.Scope{TenantID: contoso.ID, SubscriptionID: subC2}, simNow.Add(time.Hour),
				func(emit func(inventory.Listed) error) error {
					return emit(inventory.Listed{ResourceID: st1.ID, Name: st1.Name, Type: "microsoft.storage/storageaccounts", Location: st1.Location,
						ResourceGroup: "rg-data", SKU: "Standard_LRS", Tags: `{"env":"dev"}`, Properties: "{}"})
				})
			if err != nil {
				t.Fatal(err)
			}
			third := check("the subscription back to Contoso")
			if c := third[fabrikam.ID+"+"+fabrikam.ID]; c.Total != 1 {
				t.Fatalf("Fabrikam after the subscription left: %+v", c)
			}
		})
	}
}
