package inventory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
)

// storedTags decodes a stored resource's tags.
func storedTags(t *testing.T, r inventory.Resource) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(r.Tags), &m); err != nil {
		t.Fatalf("%s tags %q: %v", r.Name, r.Tags, err)
	}
	return m
}

// tagRows reads the tag table as resource name -> key=value list.
func tagRows(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	var rows []struct {
		Name  string `bun:"name"`
		Key   string `bun:"key"`
		Value string `bun:"value"`
	}
	err := f.store.DB.NewRaw(`SELECT i.name, t.key, t.value FROM resources_inventory_tags t JOIN resources_inventory i ON i.uid = t.uid
		ORDER BY i.name, t.key`).Scan(context.Background(), &rows)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] += r.Key + "=" + r.Value + ";"
	}
	return out
}

func TestSyncLifecycle(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := inventoryWorld()
			f := start(t, dialect, w)
			if n := f.mustRun(t); n != int64(len(w.Resources)) {
				t.Fatalf("first sync listed %d resources, want %d", n, len(w.Resources))
			}
			got := f.stored(t, allTenants...)
			if len(got) != len(w.Resources) {
				t.Fatalf("%d stored resources, want %d", len(got), len(w.Resources))
			}
			byName := map[string]inventory.Resource{}
			for _, r := range got {
				byName[r.Name] = r
			}
			for _, wr := range w.Resources {
				r := byName[wr.Name]
				tenant := contoso.ID
				if wr.SubscriptionID == subF1 {
					tenant = fabrikam.ID
				}
				if r.UID != inventory.UID(wr.ID) || r.ResourceID != wr.ID || r.TenantID != tenant || r.SubscriptionID != wr.SubscriptionID ||
					r.Type != strings.ToLower(wr.Type) || r.Location != wr.Location || !r.FirstSeen.Equal(simNow) || !r.LastSeen.Equal(simNow) {
					t.Fatalf("%s stored as %+v", wr.Name, r)
				}
				wantTags := wr.Tags
				if wantTags == nil {
					wantTags = map[string]string{}
				}
				if tags := storedTags(t, r); !reflect.DeepEqual(tags, wantTags) {
					t.Fatalf("%s tags %v, want %v", wr.Name, tags, wantTags)
				}
			}
			if r := byName["vm-1"]; r.ResourceGroup != "rg-app" {
				t.Fatalf("vm-1 resource group %q", r.ResourceGroup)
			}
			if r := byName["rg-empty"]; r.ResourceGroup != "rg-empty" || r.Type != "microsoft.resources/subscriptions/resourcegroups" {
				t.Fatalf("rg-empty stored as %+v", r)
			}
			if r := byName["st1"]; r.SKU != "Standard_LRS" || !strings.Contains(r.Properties, `"sku":{"name":"Standard_LRS"}`) {
				t.Fatalf("st1 sku %q properties %s", r.SKU, r.Properties)
			}
			if r := byName["disk-2"]; !strings.Contains(r.Properties, `"diskState":"Unattached"`) {
				t.Fatalf("disk-2 properties %s", r.Properties)
			}
			first := f.eventsSince(t, 0)
			if len(first) != len(w.Resources) {
				t.Fatalf("first sync events %+v, want one created per resource", first)
			}
			for _, e := range first {
				if e.Kind != inventory.EventCreated || len(e.Fields) != 0 {
					t.Fatalf("first sync event %+v", e)
				}
			}
			tags := tagRows(t, f)
			if tags["vm-1"] != "env=prod;owner=alice;" || tags["disk-2"] != "" || tags["vm-f"] != "env=prod;owner=fabrikam;" {
				t.Fatalf("tag rows %v", tags)
			}
			marks := f.harness.FreshMarks()
			if len(marks) != 2 || marks[0].Domain != "resources" {
				t.Fatalf("fresh marks %+v, want both tenants' resources", marks)
			}

			// The same world again: no event, every resource seen again.
			f.clock.Advance(10 * time.Minute)
			f.mustRun(t)
			if again := f.eventsSince(t, len(first)); len(again) != 0 {
				t.Fatalf("an unchanged world made events %+v", again)
			}
			got = f.stored(t, allTenants...)
			for _, r := range got {
				if !r.FirstSeen.Equal(simNow) || !r.LastSeen.Equal(simNow.Add(10*time.Minute)) || !r.ChangedAt.Equal(simNow) {
					t.Fatalf("%s after an unchanged sync: first %v last %v changed %v", r.Name, r.FirstSeen, r.LastSeen, r.ChangedAt)
				}
			}

			// The world adds a disk, retags vm-1, moves st1 to another SKU
			// and deletes pip-1: the events are exactly those changes.
			vm := clone(vm1)
			vm.Tags["owner"] = "bob"
			st := clone(st1)
			st.Properties["sku"] = map[string]any{"name": "Premium_LRS"}
			disk3 := res(subC1, "rg-app", "Microsoft.Compute/disks", "disk-3", "eastus", map[string]string{"env": "test"}, map[string]any{"diskState": "Unattached"})
			f.sim.SetWorld(withResources(w, []world.Resource{vm, disk1, disk2, nic1, nic2, rgApp, st, rgEmpty, vmF, disk3}))
			f.clock.Advance(10 * time.Minute)
			changedAt := simNow.Add(20 * time.Minute)
			f.mustRun(t)
			want := []event{
				{contoso.ID, "disk-3", inventory.EventCreated, []string{}},
				{contoso.ID, "pip-1", inventory.EventDeleted, []string{}},
				{contoso.ID, "st1", inventory.EventChanged, []string{"sku", "properties"}},
				{contoso.ID, "vm-1", inventory.EventChanged, []string{"tags"}},
			}
			if changes := f.eventsSince(t, len(first)); !reflect.DeepEqual(changes, want) {
				t.Fatalf("events of the second world\n got %+v\nwant %+v", changes, want)
			}
			got = f.stored(t, allTenants...)
			byName = map[string]inventory.Resource{}
			for _, r := range got {
				byName[r.Name] = r
			}
			if _, ok := byName["pip-1"]; ok || len(got) != 10 {
				t.Fatalf("after the second world: %d resources, pip-1 kept %v", len(got), ok)
			}
			if r := byName["vm-1"]; !r.ChangedAt.Equal(changedAt) || !r.FirstSeen.Equal(simNow) || storedTags(t, r)["owner"] != "bob" {
				t.Fatalf("vm-1 after retagging: %+v", r)
			}
			if r := byName["disk-3"]; !r.FirstSeen.Equal(changedAt) {
				t.Fatalf("disk-3 first seen %v", r.FirstSeen)
			}
			if r := byName["disk-1"]; !r.ChangedAt.Equal(simNow) || !r.LastSeen.Equal(changedAt) {
				t.Fatalf("disk-1, unchanged: %+v", r)
			}
			if r := byName["st1"]; r.SKU != "Premium_LRS" {
				t.Fatalf("st1 sku %q", r.SKU)
			}
			tags = tagRows(t, f)
			if tags["vm-1"] != "env=prod;owner=bob;" || tags["disk-3"] != "env=test;" || tags["pip-1"] != "" || tags["nic-1"] != "env=prod;owner=alice;" {
				t.Fatalf("tag rows after the second world %v", tags)
			}
		})
	}
}

func TestSyncFailureKeepsPreviousData(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := inventoryWorld()
			// Contoso's second subscription has more than a page of disks.
			for i := range 1500 {
				w.Resources = append(w.Resources, res(subC2, "rg-bulk", "Microsoft.Compute/disks", fmt.Sprintf("bulk-%04d", i), "westeurope",
					map[string]string{"n": fmt.Sprint(i)}, map[string]any{"diskState": "Attached"}))
			}
			f := start(t, dialect, w)
			f.store.FlushRows = 400
			if n := f.mustRun(t); n != int64(len(w.Resources)) {
				t.Fatalf("listed %d, want %d", n, len(w.Resources))
			}
			before := f.stored(t, contoso.ID)
			events := len(f.eventsSince(t, 0))
			marks := len(f.harness.FreshMarks())

			// The world deletes everything but Contoso's second subscription
			// and Fabrikam's VM; the listing of that subscription fails on its
			// second page, all three tries of it.
			f.sim.SetWorld(withResources(w, append([]world.Resource{}, w.Resources[7:]...)))
			// Resource Graph answers Contoso's first subscription and the
			// first page of its second, then fails three times.
			f.sim.Faults.Set(cloudsim.ARM, "/providers/Microsoft.ResourceGraph", cloudsim.Fault{Status: 500, Skip: 2, Times: 3})
			f.clock.Advance(10 * time.Minute)
			_, err := f.run(t)
			if err == nil || !strings.Contains(err.Error(), "subscription "+subC2) || strings.Contains(err.Error(), subF1) {
				t.Fatalf("failed sync: %v; want the run failed naming %s alone", err, subC2)
			}
			f.sim.Faults.Clear()
			after := f.stored(t, contoso.ID)
			kept := 0
			for _, r := range after {
				if r.SubscriptionID == subC2 {
					kept++
					if !r.LastSeen.Equal(simNow) {
						t.Fatalf("%s seen again by a failed sync", r.Name)
					}
				}
			}
			if kept != 1502 || len(after) != len(before)-7 {
				t.Fatalf("after the failed sync: %d of %s kept, %d of Contoso's (was %d)", kept, subC2, len(after), len(before))
			}
			// subC1's seven were deleted; subC2 made no event.
			for _, e := range f.eventsSince(t, events) {
				if e.Kind != inventory.EventDeleted || e.Name == "st1" || e.Name == "rg-empty" || strings.HasPrefix(e.Name, "bulk-") {
					t.Fatalf("event %+v of a failed sync", e)
				}
			}
			newMarks := f.harness.FreshMarks()[marks:]
			if len(newMarks) != 2 || newMarks[0].TenantID != contoso.ID || !strings.Contains(newMarks[0].Failure, "500 Internal Server Error") ||
				newMarks[1].TenantID != fabrikam.ID || newMarks[1].Failure != "" {
				t.Fatalf("fresh marks of the failed run %+v, want Contoso's failure and Fabrikam's success", newMarks)
			}
		})
	}
}

// TestSyncSKU reads a resource's SKU from the row's top-level sku, or,
// when the row has none, from the sku its properties carry: by name, or
// by tier without a name.
func TestSyncSKU(t *testing.T) {
	withSKU := func(name string, top map[string]any, props map[string]any) world.Resource {
		r := res(subC1, "rg-sku", "Microsoft.Network/publicIPAddresses", name, "eastus", nil, props)
		r.SKU = top
		return r
	}
	rs := []world.Resource{
		withSKU("top-name", map[string]any{"name": "Standard", "tier": "Regional"}, map[string]any{"sku": map[string]any{"name": "Basic"}}),
		withSKU("top-tier", map[string]any{"tier": "Global"}, map[string]any{}),
		withSKU("props-name", nil, map[string]any{"sku": map[string]any{"name": "Standard_LRS", "tier": "Standard"}}),
		withSKU("props-tier", nil, map[string]any{"sku": map[string]any{"tier": "Premium"}}),
		withSKU("props-string", nil, map[string]any{"sku": "Basic"}),
		withSKU("none", nil, map[string]any{"sku": map[string]any{"capacity": 2.0}}),
	}
	want := map[string]string{"top-name": "Standard", "top-tier": "Global", "props-name": "Standard_LRS", "props-tier": "Premium", "props-string": "Basic", "none": ""}
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := start(t, dialect, withResources(inventoryWorld(), rs))
			f.mustRun(t)
			got := map[string]string{}
			for _, r := range f.stored(t, contoso.ID) {
				got[r.Name] = r.SKU
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("skus %v, want %v", got, want)
			}
		})
	}
}

// TestSyncVacuumsOnPostgres checks that a sync leaves PostgreSQL with the
// inventory and its tag rows vacuumed and counted, which the filtered
// page's plan and its index-only count depend on, without waiting for
// autovacuum.
func TestSyncVacuumsOnPostgres(t *testing.T) {
	f := start(t, store.DialectPostgres, inventoryWorld())
	stats := func() map[string]int {
		got := map[string]int{}
		rows, err := f.store.DB.QueryContext(context.Background(), `SELECT tablename, COUNT(*) FROM pg_stats
			WHERE schemaname = current_schema() AND tablename IN ('resources_inventory', 'resources_inventory_tags') GROUP BY tablename`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var n int
			if err := rows.Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			got[name] = n
		}
		return got
	}
	if got := stats(); len(got) != 0 {
		t.Fatalf("statistics before the first sync: %v", got)
	}
	f.mustRun(t)
	if got := stats(); got["resources_inventory"] == 0 || got["resources_inventory_tags"] == 0 {
		t.Fatalf("statistics after the first sync: %v", got)
	}
	var vacuumed int
	if err := f.store.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND relname IN ('resources_inventory', 'resources_inventory_tags') AND last_vacuum IS NOT NULL`).Scan(&vacuumed); err != nil {
		t.Fatal(err)
	}
	if vacuumed != 2 {
		t.Fatalf("%d of the two tables vacuumed after the first sync", vacuumed)
	}

	// Then only once a tenth of the inventory has been rewritten since:
	// a sync of one tenant among a hundred does not vacuum the whole.
	ctx := context.Background()
	var rows float64
	if err := f.store.DB.QueryRowContext(ctx, `SELECT reltuples FROM pg_class WHERE oid = to_regclass('resources_inventory')`).Scan(&rows); err != nil || rows < 2 {
		t.Fatalf("reltuples %v (%v) after the first sync", rows, err)
	}
	tenth := int64(math.Ceil(rows / 10))
	if did, err := f.store.Vacuum(ctx, tenth-1); err != nil || did {
		t.Fatalf("vacuum after %d of %v rows rewritten: %v %v; want none", tenth-1, rows, did, err)
	}
	if did, err := f.store.Vacuum(ctx, 1); err != nil || !did {
		t.Fatalf("vacuum after %d of %v rows rewritten: %v %v; want one", tenth, rows, did, err)
	}
	if did, err := f.store.Vacuum(ctx, 0); err != nil || did {
		t.Fatalf("vacuum with nothing rewritten since the last: %v %v; want none", did, err)
	}
}
