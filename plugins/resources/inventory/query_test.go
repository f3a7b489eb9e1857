package inventory_test

import (
	"cmp"
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
)

// wantList is the page and total List should answer for q, worked out
// from every stored resource.
func wantList(t *testing.T, all []inventory.Resource, q inventory.ListQuery) ([]string, int64) {
	t.Helper()
	var match []inventory.Resource
	for _, r := range all {
		tags := storedTags(t, r)
		value, tagged := tags[q.TagKey]
		text := strings.ToLower(q.Text)
		if !slices.Contains(q.TenantIDs, r.TenantID) ||
			q.Type != "" && r.Type != strings.ToLower(q.Type) ||
			q.Location != "" && r.Location != q.Location ||
			q.ResourceGroup != "" && r.ResourceGroup != strings.ToLower(q.ResourceGroup) ||
			q.TagKey != "" && (!tagged || q.TagValue != "" && value != q.TagValue) ||
			q.Text != "" && !strings.Contains(strings.ToLower(r.Name), text) && !strings.Contains(strings.ToLower(r.ResourceID), text) {
			continue
		}
		match = append(match, r)
	}
	key := func(r inventory.Resource) string {
		switch q.SortBy {
		case "last_seen":
			return r.LastSeen.UTC().Format(time.RFC3339Nano)
		case "type":
			return r.Type
		}
		return r.Name
	}
	slices.SortFunc(match, func(a, b inventory.Resource) int {
		c := cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.UID, b.UID))
		if q.Desc {
			return -c
		}
		return c
	})
	var page []string
	for i := q.Offset; i < q.Offset+q.Limit && i < int64(len(match)); i++ {
		page = append(page, match[i].UID)
	}
	return page, int64(len(match))
}

// TestListFilterTotals checks every filter, alone and with the tag filter
// whose total is counted from the tag table, against the stored rows:
// after a first sync, and after a second in which resources are retagged,
// change type, come and go, and a subscription changes tenant.
func TestListFilterTotals(t *testing.T) {
	w := bulkWorld(300)
	w.Resources = append(w.Resources, vmF)
	queries := []inventory.ListQuery{
		{},
		{Type: "Microsoft.Compute/disks"},
		{TagKey: "env", TagValue: "prod"},
		{TagKey: "env", TagValue: "prod", Type: "microsoft.compute/disks", SortBy: "last_seen", Desc: true},
		{TagKey: "owner", Type: "microsoft.compute/virtualmachines"},
		{TagKey: "owner", TagValue: "team-3", Location: "eastus"},
		{TagKey: "env", TagValue: "dev", ResourceGroup: "RG-07", SortBy: "type"},
		{TagKey: "cost-center", TagValue: "2", Text: "r-00001", Type: "microsoft.network/networkinterfaces"},
		{TagKey: "env", TagValue: "none"},
		{TagKey: "missing"},
		{Location: "westeurope", Text: "R-0000", Desc: true},
	}
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := start(t, dialect, w)
			check := func(stage string) {
				t.Helper()
				all := f.stored(t, allTenants...)
				for _, q := range queries {
					for _, tenants := range [][]string{{contoso.ID}, {fabrikam.ID}, allTenants} {
						q.TenantIDs, q.Limit, q.Offset = tenants, 7, 3
						page, total, err := f.store.List(context.Background(), q)
						if err != nil {
							t.Fatalf("%s: %+v: %v", stage, q, err)
						}
						got := []string{}
						for _, r := range page {
							got = append(got, r.UID)
						}
						want, wantTotal := wantList(t, all, q)
						if total != wantTotal || !slices.Equal(got, want) {
							t.Fatalf("%s: %+v: total %d page %v, want total %d page %v", stage, q, total, got, wantTotal, want)
						}
					}
				}
			}
			f.mustRun(t)
			check("first sync")

			// The second world retags every tenth resource, gives every
			// seventh another type, drops every eleventh and adds ten.
			rs := []world.Resource{vmF}
			for i, r := range w.Resources[:300] {
				r = clone(r)
				switch {
				case i%11 == 0:
					continue
				case i%10 == 0:
					r.Tags["env"], r.Tags["owner"] = "prod", "team-3"
					delete(r.Tags, "cost-center")
				case i%7 == 0:
					r.Type = "Microsoft.Network/networkInterfaces"
				}
				rs = append(rs, r)
			}
			for i := range 10 {
				rs = append(rs, res(subC2, "rg-07", "Microsoft.Compute/disks", "new-"+string(rune('a'+i)), "eastus", map[string]string{"env": "prod"}, nil))
			}
			// Contoso's second subscription moves to Fabrikam's
			// directory, its resources and their tags with it.
			moved := withResources(w, rs)
			moved.Tenants = []world.Tenant{w.Tenants[0], w.Tenants[1]}
			moved.Tenants[0].Subscriptions = w.Tenants[0].Subscriptions[:1]
			moved.Tenants[1].Subscriptions = append(slices.Clone(w.Tenants[1].Subscriptions), w.Tenants[0].Subscriptions[1])
			f.sim.SetWorld(moved)
			f.clock.Advance(10 * time.Minute)
			f.mustRun(t)
			check("second sync")
		})
	}
}

// TestMigrationGivesTagsTheirType applies the inventory's first migration,
// stores a resource as it shaped the tables, then the later ones: the
// resource's tag rows carry its type, so the filtered total counts it, and
// the migration rolls back and applies again.
func TestMigrationGivesTagsTheirType(t *testing.T) {
	ctx := context.Background()
	first := fstest.MapFS{}
	err := fs.WalkDir(inventory.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(path, "0002_") {
			return err
		}
		data, err := fs.ReadFile(inventory.Migrations(), path)
		first[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, first, "resources_migrations"); err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			_, err := db.NewInsert().Model(&inventory.Resource{UID: "u1", TenantID: contoso.ID, SubscriptionID: subC1, ResourceID: "/r/disk", Name: "disk",
				Type: "microsoft.compute/disks", Tags: `{"env":"prod"}`, Properties: "{}", FirstSeen: at, LastSeen: at, ChangedAt: at}).Exec(ctx)
			if err == nil {
				_, err = db.ExecContext(ctx, `INSERT INTO resources_inventory_tags (uid, tenant_id, subscription_id, key, value) VALUES ('u1', ?, ?, 'env', 'prod')`, contoso.ID, subC1)
			}
			if err != nil {
				t.Fatal(err)
			}
			// 0003, which gives tags their type, and 0004, the revisions.
			if applied, err := store.Migrate(ctx, db, inventory.Migrations(), "resources_migrations"); err != nil || len(applied) != 2 {
				t.Fatalf("later migrations %v, %v", applied, err)
			}
			s := &inventory.Store{DB: db}
			q := inventory.ListQuery{TenantIDs: []string{contoso.ID}, Type: "Microsoft.Compute/disks", TagKey: "env", TagValue: "prod", Limit: 10}
			if page, total, err := s.List(ctx, q); err != nil || total != 1 || len(page) != 1 || page[0].UID != "u1" {
				t.Fatalf("after the migration: %+v, total %d, %v", page, total, err)
			}
			if _, err := store.Rollback(ctx, db, inventory.Migrations(), "resources_migrations"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `SELECT type FROM resources_inventory_tags`); err == nil {
				t.Fatal("the tag table keeps its type column after the rollback")
			}
			if applied, err := store.Migrate(ctx, db, inventory.Migrations(), "resources_migrations"); err != nil || len(applied) != 2 {
				t.Fatalf("migrating again after the rollback: %v, %v", applied, err)
			}
		})
	}
}
