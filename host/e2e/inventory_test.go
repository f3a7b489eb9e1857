package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

const (
	invSubA = "aaaaaaaa-0000-0000-0000-000000000001"
	invSubB = "bbbbbbbb-0000-0000-0000-000000000001"
)

func invResource(sub, group, typ, name, location string, tags map[string]string, props map[string]any) world.Resource {
	return world.Resource{SubscriptionID: sub, ID: fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", sub, group, typ, name),
		Name: name, Type: typ, Location: location, Tags: tags, Properties: props}
}

// invDiskA2 is Brand A's unattached disk, which bills 2.00 USD a day.
var invDiskA2 = fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-app/providers/Microsoft.Compute/disks/disk-a2", invSubA)

// inventoryWorld gives Brand A five resources — an attached and an
// unattached disk, a VM, a public IP bound to nothing and an empty
// resource group — and Brand B one VM. Over the 40 days up to today the
// unattached disk costs 2.00 USD a day on its own cost rows, beside a
// resource group's costs of no resource; the public IP costs nothing.
func inventoryWorld(t *testing.T) string {
	w := world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: "22222222-2222-2222-2222-222222222222", Subscriptions: []world.Subscription{{ID: invSubB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: "11111111-1111-1111-1111-111111111111", Subscriptions: []world.Subscription{{ID: invSubA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		Resources: []world.Resource{
			invResource(invSubA, "rg-app", "Microsoft.Compute/virtualMachines", "vm-a", "eastus", map[string]string{"env": "prod", "owner": "a"}, map[string]any{}),
			invResource(invSubA, "rg-app", "Microsoft.Compute/disks", "disk-a1", "eastus", map[string]string{"env": "prod"}, map[string]any{"diskState": "Attached"}),
			invResource(invSubA, "rg-app", "Microsoft.Compute/disks", "disk-a2", "eastus", nil, map[string]any{"diskState": "Unattached"}),
			invResource(invSubA, "rg-app", "Microsoft.Network/publicIPAddresses", "pip-a", "westeurope", map[string]string{"env": "dev"}, map[string]any{}),
			{SubscriptionID: invSubA, ID: "/subscriptions/" + invSubA + "/resourceGroups/rg-empty", Name: "rg-empty",
				Type: "Microsoft.Resources/subscriptions/resourceGroups", Location: "westeurope"},
			invResource(invSubB, "rg-b", "Microsoft.Compute/virtualMachines", "vm-b", "eastus", map[string]string{"env": "prod", "owner": "b"}, map[string]any{}),
		},
	}
	for d := -39; d <= 0; d++ {
		date := time.Now().UTC().AddDate(0, 0, d).Format(time.DateOnly)
		w.Costs = append(w.Costs,
			world.Cost{SubscriptionID: invSubA, Date: date, Service: "Storage", ResourceGroup: "rg-app", ResourceID: invDiskA2, Cost: 2, Currency: "USD"},
			world.Cost{SubscriptionID: invSubA, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-app", Cost: 7, Currency: "USD"})
	}
	return writeWorld(t, w)
}

// inventoryPlugins are the resources plugin and the cost plugin, whose
// resource_costs dataset gives the orphans their cost.
func inventoryPlugins() string {
	return fmt.Sprintf("plugin \"resources\" {\n  binary = %q\n  cloud_credential = true\n  config {\n    locations = [\"eastus\"]\n    required_tags = [\"env\", \"owner\"]\n  }\n}\n",
		filepath.Join(binDir, "plugins", "resources")) + costPlugins("    backfill_days = 40")
}

type invPage struct {
	Items []struct {
		ID       string `json:"id"`
		TenantID string `json:"tenant_id"`
		Name     string `json:"name"`
		Kind     string `json:"kind"`
		// Cost is an orphan's estimated_monthly_cost, as written.
		Cost json.RawMessage `json:"estimated_monthly_cost"`
	} `json:"items"`
	Total int `json:"total"`
}

// TestInventoryThroughTheSimulatedCloud: the world's resources reach the
// inventory routes through Resource Graph, the inventory job and its
// tables, with counts, orphans and tag coverage, and a standard user of
// Brand A sees nothing of Brand B. The orphans' estimated monthly costs
// come from the cost plugin's sync, through its resource_costs dataset.
func TestInventoryThroughTheSimulatedCloud(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testInventory(t, dialect) })
	}
}

func testInventory(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: inventoryPlugins(), env: map[string]string{"STEWARD_SIM_WORLD": inventoryWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	var counts struct {
		Total  int `json:"total"`
		ByType []struct {
			Value string `json:"value"`
			Count int    `json:"count"`
		} `json:"by_type"`
	}
	// The start-up sync fills the inventory.
	h.waitFor("the start-up inventory sync", time.Minute, func() bool {
		h.get("/api/v1/resources/inventory/counts", admin).json(t, &counts)
		return counts.Total == 6
	})
	if counts.ByType[0].Value != "microsoft.compute/disks" || counts.ByType[0].Count != 2 || len(counts.ByType) != 4 {
		t.Fatalf("counts by type %+v", counts.ByType)
	}

	ids := h.tenantIDs(t, admin)
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-inv", Email: "a-inv@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)

	var page invPage
	h.get("/api/v1/resources/inventory?sort_by=name", tokA).json(t, &page)
	var names []string
	for _, it := range page.Items {
		names = append(names, it.Name)
		if it.TenantID != ids["Brand A"] {
			t.Errorf("Brand A's user sees %s of tenant %s", it.Name, it.TenantID)
		}
	}
	if page.Total != 5 || strings.Join(names, ",") != "disk-a1,disk-a2,pip-a,rg-empty,vm-a" {
		t.Fatalf("Brand A's inventory %d %v", page.Total, names)
	}
	// The orphans with their costs over the 30 full days before today,
	// once the start-up cost sync has summed them by resource.
	waitStartupSync(t, h, admin, "costs")
	var orphans invPage
	h.get("/api/v1/resources/orphans", tokA).json(t, &orphans)
	var found []string
	for _, it := range orphans.Items {
		found = append(found, it.Kind+":"+it.Name+" "+string(it.Cost))
	}
	today := time.Now().UTC()
	diskCost := fmt.Sprintf(`{"amount":60.00,"currency":"USD","period_from":%q,"period_to":%q}`,
		today.AddDate(0, 0, -30).Format(time.DateOnly), today.AddDate(0, 0, -1).Format(time.DateOnly))
	if want := "empty_resource_group:rg-empty null,unattached_disk:disk-a2 " + diskCost + ",unused_public_ip:pip-a null"; strings.Join(found, ",") != want {
		t.Fatalf("Brand A's orphans %v, want %s", found, want)
	}
	var cov struct {
		TotalResources int     `json:"total_resources"`
		FullyTagged    int     `json:"fully_tagged"`
		FullyPct       float64 `json:"fully_tagged_percent"`
		Tags           []struct {
			Key             string  `json:"key"`
			Tagged          int     `json:"tagged"`
			CoveragePercent float64 `json:"coverage_percent"`
		} `json:"tags"`
	}
	h.get("/api/v1/resources/tags/coverage", tokA).json(t, &cov)
	if cov.TotalResources != 5 || cov.FullyTagged != 1 || cov.FullyPct != 20 || len(cov.Tags) != 2 ||
		cov.Tags[0].Key != "env" || cov.Tags[0].Tagged != 3 || cov.Tags[0].CoveragePercent != 60 || cov.Tags[1].CoveragePercent != 20 {
		t.Fatalf("Brand A's tag coverage %+v", cov)
	}

	// Nothing of Brand B reaches Brand A's user.
	var all invPage
	h.get("/api/v1/resources/inventory?q=vm-b", admin).json(t, &all)
	if len(all.Items) != 1 {
		t.Fatalf("admin's search for vm-b: %+v", all)
	}
	vmB := all.Items[0].ID
	if r := h.get("/api/v1/resources/inventory/"+vmB, tokA); r.status != http.StatusNotFound || strings.Contains(string(r.body), "vm-b") {
		t.Errorf("Brand B's VM to Brand A's user: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/api/v1/resources/inventory", "/api/v1/resources/events", "/api/v1/resources/orphans", "/api/v1/resources/inventory/counts", "/api/v1/resources/tags/coverage"} {
		if r := h.get(path+"?tenant_ids="+ids["Brand B"], tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "vm-b") {
			t.Errorf("%s naming Brand B: %d %s", path, r.status, r.body)
		}
	}
	var events struct {
		Total int `json:"total"`
	}
	h.get("/api/v1/resources/events?kind=created", tokA).json(t, &events)
	if events.Total != 5 {
		t.Errorf("Brand A's created events: %d, want 5", events.Total)
	}
	expectInvalid(t, h.get("/api/v1/resources/inventory?limit=501", tokA), "query.limit")
	expectInvalid(t, h.get("/api/v1/resources/inventory/not-an-id", tokA), "path.resource_id")
}
