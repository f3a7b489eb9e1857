package ledger_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// storedResourceDays are a subscription's cost_resource_daily rows in key
// order.
func storedResourceDays(t *testing.T, s *ledger.Store, sub string) []ledger.ResourceDay {
	t.Helper()
	var rows []ledger.ResourceDay
	if err := s.DB.NewSelect().Model(&rows).Where("subscription_id = ?", sub).
		Order("day", "resource_id", "service", "currency").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func emitResources(rows []ledger.ResourceDay) func(func(ledger.ResourceDay) error) error {
	return func(emit func(ledger.ResourceDay) error) error {
		for _, r := range rows {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
}

const (
	vm   = "/subscriptions/s1/resourceGroups/RG-App/providers/Microsoft.Compute/virtualMachines/VM-1"
	disk = "/subscriptions/s1/resourceGroups/rg-app/providers/Microsoft.Compute/disks/disk-1"
)

// TestReplaceResourceDays: the resource grain of a window lands with the
// costs, its ids lower-cased and its resource group read from the id, a
// row emitted twice summed and a row outside the window ignored; the same
// streams again change nothing; a restated window loses the resources no
// longer reported; a resource stream that fails after the costs streamed
// changes neither grain; and the sync state says the grain is kept.
func TestReplaceResourceDays(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			s.FlushRows = 2
			d, _ := ledger.ParseDay("2026-10-30")
			at := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
			w := ledger.Window{TenantID: "t1", SubscriptionID: "s1", From: d, To: d + 1}
			costs := []ledger.Cost{{Day: d, Service: "Virtual Machines", ResourceGroup: "rg-app", Currency: "USD", Cost: 1000},
				{Day: d + 1, Service: "Virtual Machines", ResourceGroup: "rg-app", Currency: "USD", Cost: 900}}
			resources := []ledger.ResourceDay{
				{Day: d, ResourceID: vm, Service: "Virtual Machines", Currency: "USD", Cost: 600},
				{Day: d, ResourceID: vm, Service: "Virtual Machines", Currency: "USD", Cost: 100},
				{Day: d, ResourceID: disk, Service: "Virtual Machines", Currency: "USD", Cost: 300},
				{Day: d + 1, ResourceID: vm, Service: "Virtual Machines", Currency: "USD", Cost: 900},
				{Day: d + 1, ResourceID: "", Service: "Azure Monitor", Currency: "USD", Cost: 5},
				{Day: d + 2, ResourceID: vm, Service: "Virtual Machines", Currency: "USD", Cost: 7},
			}
			got, err := s.Replace(ctx, w, at, ledger.Streams{Costs: emitAll(costs), Resources: emitResources(resources)})
			if err != nil || got.Rows != 2 || got.ResourceRows != 5 || got.Batches != 1+3 {
				t.Fatalf("replace: %+v %v; want 2 rows and 5 by resource in 4 batches", got, err)
			}
			lvm, ldisk := strings.ToLower(vm), strings.ToLower(disk)
			want := []ledger.ResourceDay{
				{SubscriptionID: "s1", Day: d, ResourceID: ldisk, Service: "Virtual Machines", Currency: "USD", TenantID: "t1", ResourceGroup: "rg-app", Month: 202610, Cost: 300},
				{SubscriptionID: "s1", Day: d, ResourceID: lvm, Service: "Virtual Machines", Currency: "USD", TenantID: "t1", ResourceGroup: "rg-app", Month: 202610, Cost: 700},
				{SubscriptionID: "s1", Day: d + 1, ResourceID: "", Service: "Azure Monitor", Currency: "USD", TenantID: "t1", ResourceGroup: "", Month: 202610, Cost: 5},
				{SubscriptionID: "s1", Day: d + 1, ResourceID: lvm, Service: "Virtual Machines", Currency: "USD", TenantID: "t1", ResourceGroup: "rg-app", Month: 202610, Cost: 900},
			}
			if rows := storedResourceDays(t, s, "s1"); !slices.Equal(rows, want) {
				t.Fatalf("stored %+v\nwant %+v", rows, want)
			}
			if st, _ := s.SyncStates(ctx); !st["s1"].GrainsComplete {
				t.Fatalf("sync state %+v does not say the resource grain is kept", st["s1"])
			}
			again, err := s.Replace(ctx, w, at, ledger.Streams{Costs: emitAll(costs), Resources: emitResources(resources)})
			if err != nil || again.Changed != 0 {
				t.Fatalf("the same streams again: %+v %v, want nothing changed", again, err)
			}

			// The disk is no longer reported on d.
			restated := slices.DeleteFunc(slices.Clone(resources), func(r ledger.ResourceDay) bool { return r.ResourceID == disk })
			r, err := s.Replace(ctx, w, at.Add(time.Hour), ledger.Streams{Costs: emitAll(costs), Resources: emitResources(restated)})
			if err != nil || r.Changed != 1 {
				t.Fatalf("restated: %+v %v, want the disk's row deleted", r, err)
			}
			if rows := storedResourceDays(t, s, "s1"); len(rows) != 3 || slices.ContainsFunc(rows, func(r ledger.ResourceDay) bool { return r.ResourceID == ldisk }) {
				t.Fatalf("after the restatement %+v", rows)
			}

			before, beforeCosts := storedResourceDays(t, s, "s1"), storedRows(t, s, "s1")
			cloudDown := errors.New("cloud down")
			changedCosts := []ledger.Cost{{Day: d, Service: "Storage", ResourceGroup: "rg-data", Currency: "USD", Cost: 1}}
			_, err = s.Replace(ctx, w, at.Add(2*time.Hour), ledger.Streams{Costs: emitAll(changedCosts), Resources: func(emit func(ledger.ResourceDay) error) error {
				for i := 0; i < 5; i++ {
					if err := emit(ledger.ResourceDay{Day: d, ResourceID: disk, Service: "Storage", Currency: "USD", Cost: 1}); err != nil {
						return err
					}
				}
				return cloudDown
			}})
			if !errors.Is(err, cloudDown) {
				t.Fatalf("failing resource stream: %v", err)
			}
			if after := storedResourceDays(t, s, "s1"); !slices.Equal(after, before) {
				t.Fatalf("a failed resource stream changed the resource grain: %+v, was %+v", after, before)
			}
			if after := storedRows(t, s, "s1"); !slices.Equal(after, beforeCosts) {
				t.Fatalf("a failed resource stream changed the costs: %+v, was %+v", after, beforeCosts)
			}
		})
	}
}

// TestReplaceResourceTags: a subscription's tags are replaced whole, ids
// and keys lower-cased, the later of two keys differing in case kept;
// another subscription's tags are left alone.
func TestReplaceResourceTags(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			tags := func(sub string) []ledger.ResourceTag {
				var rows []ledger.ResourceTag
				if err := s.DB.NewSelect().Model(&rows).Where("subscription_id = ?", sub).Order("resource_id", "tag_key").Scan(ctx); err != nil {
					t.Fatal(err)
				}
				return rows
			}
			if n, err := s.ReplaceResourceTags(ctx, "t2", "s2", []ledger.ResourceTag{{ResourceID: "/x", Key: "env", Value: "prod"}}); err != nil || n != 1 {
				t.Fatalf("s2: %d %v", n, err)
			}
			n, err := s.ReplaceResourceTags(ctx, "t1", "s1", []ledger.ResourceTag{
				{ResourceID: vm, Key: "Env", Value: "Prod"},
				{ResourceID: vm, Key: "env", Value: "prod"},
				{ResourceID: vm, Key: "cost-center", Value: "CC-1100"},
				{ResourceID: disk, Key: "owner", Value: "web-team@contoso.example"},
				{ResourceID: "", Key: "x", Value: "y"},
			})
			if err != nil || n != 3 {
				t.Fatalf("s1: %d %v, want 3 tags", n, err)
			}
			lvm := strings.ToLower(vm)
			want := []ledger.ResourceTag{
				{SubscriptionID: "s1", ResourceID: strings.ToLower(disk), Key: "owner", Value: "web-team@contoso.example", TenantID: "t1"},
				{SubscriptionID: "s1", ResourceID: lvm, Key: "cost-center", Value: "CC-1100", TenantID: "t1"},
				{SubscriptionID: "s1", ResourceID: lvm, Key: "env", Value: "prod", TenantID: "t1"},
			}
			if got := tags("s1"); !slices.Equal(got, want) {
				t.Fatalf("tags %+v\nwant %+v", got, want)
			}
			if n, err := s.ReplaceResourceTags(ctx, "t1", "s1", []ledger.ResourceTag{{ResourceID: vm, Key: "env", Value: "dev"}}); err != nil || n != 1 {
				t.Fatalf("again: %d %v", n, err)
			}
			if got := tags("s1"); len(got) != 1 || got[0].Value != "dev" {
				t.Fatalf("after replacing %+v", got)
			}
			if got := tags("s2"); len(got) != 1 {
				t.Fatalf("another subscription's tags %+v", got)
			}
		})
	}
}

// TestResourceGroupOf: the group an id names, in its case; none for an id
// without one.
func TestResourceGroupOf(t *testing.T) {
	for id, want := range map[string]string{
		vm: "RG-App",
		"/subscriptions/s1/resourcegroups/rg-x/providers/a/b/c": "rg-x",
		"/subscriptions/s1":                "",
		"":                                 "",
		"/subscriptions/s1/resourceGroups": "",
	} {
		if got := ledger.ResourceGroupOf(id); got != want {
			t.Errorf("ResourceGroupOf(%q) = %q, want %q", id, got, want)
		}
	}
}
