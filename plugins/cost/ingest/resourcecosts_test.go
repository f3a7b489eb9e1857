package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// The resources resourceCostWorld costs, in their ARM ids' own case.
var (
	diskC1 = "/subscriptions/" + subC1 + "/resourceGroups/RG-0/providers/Microsoft.Compute/disks/Disk-1"
	ipC1   = "/subscriptions/" + subC1 + "/resourceGroups/rg-0/providers/Microsoft.Network/publicIPAddresses/pip-1"
	vmF1   = "/subscriptions/" + subF1 + "/resourceGroups/rg-1/providers/Microsoft.Compute/virtualMachines/vm-f"
)

// resourceCostWorld is costWorld with three resources' own costs: Contoso's
// disk costs 1.25 a day from 40 days before the clock's day to the day
// after it, its public IP 0.10 on the 10 days before it, and Fabrikam's
// VM 3.333 EUR on each of the 35 days up to it.
func resourceCostWorld() *world.World {
	w := costWorld()
	add := func(sub, id string, from, to int, cost float64) {
		for d := from; d <= to; d++ {
			w.Costs = append(w.Costs, world.Cost{SubscriptionID: sub, Date: simNow.AddDate(0, 0, d).Format(time.DateOnly),
				Service: "Service 0", ResourceGroup: "rg-0", ResourceID: id, Cost: cost, Currency: currencyOf(sub)})
		}
	}
	add(subC1, diskC1, -40, 1, 1.25)
	add(subC1, ipC1, -10, -1, 0.10)
	add(subF1, vmF1, -35, 0, 3.333)
	return w
}

// readResourceCosts reads the resource_costs dataset through the harness
// as another plugin would, keyed by resource id.
func (f *fixture) readResourceCosts(t *testing.T, tenants []string, params map[string]string) map[string]reports.ResourceRecord {
	t.Helper()
	raw, err := f.harness.ReadDataset(context.Background(), reports.ResourceDatasetName, tenants, params)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reports.ResourceRecord{}
	for _, r := range raw {
		var rec struct {
			reports.ResourceRecord
			MonthlyCost json.Number `json:"monthly_cost"`
		}
		if err := json.Unmarshal(r, &rec); err != nil {
			t.Fatal(err)
		}
		if want := ledger.Amount(rec.MonthlyCostCents).String(); rec.MonthlyCost.String() != want {
			t.Fatalf("record %s: monthly_cost %s, want %s written with two decimals", r, rec.MonthlyCost, want)
		}
		rec.ResourceRecord.MonthlyCost = ledger.Amount(rec.MonthlyCostCents)
		out[rec.ResourceID] = rec.ResourceRecord
	}
	return out
}

// TestResourceCostsStoredAndPublished: the costs job sums each resource's
// cost over the 30 full days before today, stores it per subscription and
// publishes it as the resource_costs dataset, tenant by tenant, the
// resource ids in lower case; it asks the cloud once a day, and the next
// day's fetch replaces the subscription's costs, dropping a resource no
// longer billed.
func TestResourceCostsStoredAndPublished(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := resourceCostWorld()
			f := start(t, dialect, w)
			f.mustRun(t)
			today := day(simNow)
			disk, ip, vm := strings.ToLower(diskC1), strings.ToLower(ipC1), strings.ToLower(vmF1)
			rec := func(tenant, sub, id, currency string, cents ledger.Amount, to ledger.Day) reports.ResourceRecord {
				return reports.ResourceRecord{TenantID: tenant, SubscriptionID: sub, ResourceID: id, Currency: currency, MonthlyCost: cents,
					MonthlyCostCents: int64(cents), PeriodFrom: to - 29, PeriodTo: to}
			}
			wantContoso := map[string]reports.ResourceRecord{
				disk: rec(contoso.ID, subC1, disk, "USD", 3750, today-1),
				ip:   rec(contoso.ID, subC1, ip, "USD", 100, today-1),
			}
			if got := f.readResourceCosts(t, []string{contoso.ID}, nil); fmt.Sprint(got) != fmt.Sprint(wantContoso) {
				t.Fatalf("Contoso's resource costs %v, want %v", got, wantContoso)
			}
			wantFabrikam := map[string]reports.ResourceRecord{vm: rec(fabrikam.ID, subF1, vm, "EUR", 9999, today-1)}
			if got := f.readResourceCosts(t, []string{fabrikam.ID}, nil); fmt.Sprint(got) != fmt.Sprint(wantFabrikam) {
				t.Fatalf("Fabrikam's resource costs %v, want %v", got, wantFabrikam)
			}
			if got := f.readResourceCosts(t, []string{"t-nobody"}, nil); len(got) != 0 {
				t.Fatalf("a tenant without costs reads %v", got)
			}
			// Only the resources asked for, in any case; of the tenants
			// asked for only.
			params := map[string]string{"resource_ids": diskC1 + "\n" + strings.ToUpper(vmF1) + "\n"}
			if got := f.readResourceCosts(t, []string{contoso.ID}, params); len(got) != 1 || got[disk] != wantContoso[disk] {
				t.Fatalf("the disk's cost %v", got)
			}
			tooMany := strings.Repeat(diskC1+"\n", reports.MaxResourceIDs) + ipC1
			for _, v := range []string{"", "\n \n", tooMany} {
				if _, err := f.harness.ReadDataset(context.Background(), reports.ResourceDatasetName, []string{contoso.ID},
					map[string]string{"resource_ids": v}); err == nil || !strings.Contains(err.Error(), "resource_ids") {
					t.Errorf("resource_ids of %d bytes: %v", len(v), err)
				}
			}

			// Later the same day: the period has not moved, so only the
			// days are fetched, at both grains, actual and amortised.
			queries := f.costQueries(subC1)
			f.mustRun(t)
			if q := f.costQueries(subC1) - queries; q != 4 {
				t.Fatalf("%d cost queries for %s on a second run the same day, want 4", q, subC1)
			}

			// A day later the public IP is gone and bills nothing more.
			f.sim.SetWorld(restate(w, func(costs []world.Cost) []world.Cost {
				return slices.DeleteFunc(costs, func(c world.Cost) bool { return c.ResourceID == ipC1 })
			}))
			f.nextDay(t)
			queries = f.costQueries(subC1)
			f.mustRun(t)
			if q := f.costQueries(subC1) - queries; q != 5 {
				t.Fatalf("%d cost queries for %s the next day, want 5", q, subC1)
			}
			wantContoso = map[string]reports.ResourceRecord{disk: rec(contoso.ID, subC1, disk, "USD", 3750, today)}
			if got := f.readResourceCosts(t, []string{contoso.ID, fabrikam.ID}, map[string]string{"resource_ids": ipC1 + "\n" + diskC1}); fmt.Sprint(got) != fmt.Sprint(wantContoso) {
				t.Fatalf("Contoso's resource costs the next day %v, want %v", got, wantContoso)
			}
			// Fabrikam's VM: still 3.333 on each of the 30 days, which
			// now end on the old today.
			if got := f.readResourceCosts(t, []string{fabrikam.ID}, nil); got[vm] != rec(fabrikam.ID, subF1, vm, "EUR", 9999, today) {
				t.Fatalf("Fabrikam's VM the next day %+v", got[vm])
			}
		})
	}
}

// TestResourceGrainAndTags: the days by resource land with the days, and
// a subscription's resources' tags from Resource Graph with them, keys in
// lower case, replaced on the next run; a ledger synced before the grain
// existed (its sync state says so) fetches the subscription from the
// backfill's first day again, once, and then restates only recent days.
func TestResourceGrainAndTags(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := resourceCostWorld()
			w.Resources = []world.Resource{
				{SubscriptionID: subC1, ID: diskC1, Name: "Disk-1", Type: "microsoft.compute/disks", Tags: map[string]string{"Cost-Center": "CC-1", "env": "prod"}},
				{SubscriptionID: subC1, ID: ipC1, Name: "pip-1", Type: "microsoft.network/publicipaddresses"},
				{SubscriptionID: subF1, ID: vmF1, Name: "vm-f", Type: "microsoft.compute/virtualmachines", Tags: map[string]string{"env": "dev"}},
			}
			f := start(t, dialect, w)
			today := day(simNow)
			f.mustRun(t)
			if got, want := f.storedResourceDays(t), worldResourceDays(w, today-backfillDays+1, today, allSubs...); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("costs by resource %v, want %v", got, want)
			}
			tags := func() []string {
				var rows []ledger.ResourceTag
				if err := f.ledger.DB.NewSelect().Model(&rows).Order("resource_id", "tag_key").Scan(ctx); err != nil {
					t.Fatal(err)
				}
				out := make([]string, len(rows))
				for i, r := range rows {
					out[i] = r.TenantID + " " + r.ResourceID + " " + r.Key + "=" + r.Value
				}
				return out
			}
			disk, vm := strings.ToLower(diskC1), strings.ToLower(vmF1)
			want := []string{contoso.ID + " " + disk + " cost-center=CC-1", contoso.ID + " " + disk + " env=prod", fabrikam.ID + " " + vm + " env=dev"}
			if got := tags(); !slices.Equal(got, want) {
				t.Fatalf("tags %v, want %v", got, want)
			}
			retagged := *w
			retagged.Resources = slices.Clone(w.Resources)
			retagged.Resources[0].Tags = map[string]string{"env": "test"}
			f.sim.SetWorld(&retagged)
			f.mustRun(t)
			want = []string{contoso.ID + " " + disk + " env=test", fabrikam.ID + " " + vm + " env=dev"}
			if got := tags(); !slices.Equal(got, want) {
				t.Fatalf("tags after retagging %v, want %v", got, want)
			}

			// A ledger from before the grain: its sync state says the
			// grain is not kept, and it holds no days by resource.
			for _, q := range []string{`UPDATE cost_sync_state SET grains_complete = FALSE`, `DELETE FROM cost_resource_daily`} {
				if _, err := f.ledger.DB.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			f.mustRun(t)
			if got, want := f.storedResourceDays(t), worldResourceDays(w, today-backfillDays+1, today, allSubs...); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("costs by resource after the upgrade's sync %v, want %v", got, want)
			}
			states, err := f.ledger.SyncStates(ctx)
			if err != nil || !states[subC1].GrainsComplete || states[subC1].FirstDay != today-backfillDays+1 {
				t.Fatalf("sync state after the upgrade's sync %+v (%v)", states[subC1], err)
			}
			n, _ := f.mustRun(t)
			if want := int64(2*(3*5*8+len(worldResourceDays(w, today-4, today, allSubs...))) + 5); n != want {
				t.Fatalf("the run after it processed %d records, want %d: the restated days only", n, want)
			}
		})
	}
}
