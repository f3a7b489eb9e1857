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
			// days are fetched.
			queries := f.costQueries(subC1)
			f.mustRun(t)
			if q := f.costQueries(subC1) - queries; q != 1 {
				t.Fatalf("%d cost queries for %s on a second run the same day, want 1", q, subC1)
			}

			// A day later the public IP is gone and bills nothing more.
			f.sim.SetWorld(restate(w, func(costs []world.Cost) []world.Cost {
				return slices.DeleteFunc(costs, func(c world.Cost) bool { return c.ResourceID == ipC1 })
			}))
			f.nextDay(t)
			queries = f.costQueries(subC1)
			f.mustRun(t)
			if q := f.costQueries(subC1) - queries; q != 2 {
				t.Fatalf("%d cost queries for %s the next day, want 2", q, subC1)
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
