package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Northwind Travel is the direct world's tenant that delegates nothing:
// Steward's application, consented in its directory, reads it with its
// own token there.
const (
	directDir   = "33333333-3333-4333-8333-333333333333"
	directSub1  = "cccccccc-0000-0000-0000-0000000000d1"
	directSub2  = "cccccccc-0000-0000-0000-0000000000d2"
	directSubB  = "bbbbbbbb-0000-0000-0000-0000000000d1"
	directBrand = "Northwind Travel"
)

// directWorld has the managing tenant Brand B and Northwind Travel, not
// delegated, consented unless withdrawn: two subscriptions with 21 days of
// costs in fractions of a cent, three resources, three policy states (two
// of its three resources non-compliant) and two compute quotas. Brand B has a
// day of costs, a VM and a quota of its own.
func directWorld(t *testing.T, today time.Time, consented bool) (string, world.World) {
	w := world.World{Tenants: []world.Tenant{
		{Name: "Brand B", DirectoryTenantID: "22222222-2222-2222-2222-222222222222", AccessGroups: []string{"grp-b"},
			Subscriptions: []world.Subscription{{ID: directSubB, Name: "B prod"}}},
		{Name: directBrand, DirectoryTenantID: directDir, AccessGroups: []string{"grp-northwind"}, Consented: &consented,
			Subscriptions: []world.Subscription{{ID: directSub1, Name: "Northwind prod"}, {ID: directSub2, Name: "Northwind dev"}}},
	}}
	for d := -20; d <= 0; d++ {
		date := today.AddDate(0, 0, d).Format(time.DateOnly)
		for s, sub := range []string{directSub1, directSub2} {
			for svc := range 2 {
				w.Costs = append(w.Costs, world.Cost{SubscriptionID: sub, Date: date, Service: fmt.Sprintf("Service %d", svc), ResourceGroup: "rg-travel",
					Cost: float64((d+30)*(svc+3)+s) / 7, Currency: "USD"})
			}
		}
	}
	w.Costs = append(w.Costs, world.Cost{SubscriptionID: directSubB, Date: today.Format(time.DateOnly), Service: "Storage", ResourceGroup: "rg-b", Cost: 5, Currency: "USD"})
	w.Resources = []world.Resource{
		invResource(directSub1, "rg-travel", "Microsoft.Compute/virtualMachines", "vm-bookings", "eastus", map[string]string{"env": "prod"}, map[string]any{}),
		invResource(directSub1, "rg-travel", "Microsoft.Storage/storageAccounts", "sabookings", "eastus", nil, map[string]any{}),
		invResource(directSub2, "rg-travel", "Microsoft.Compute/disks", "disk-dev", "eastus", nil, map[string]any{"diskState": "Attached"}),
		invResource(directSubB, "rg-b", "Microsoft.Compute/virtualMachines", "vm-b", "eastus", nil, map[string]any{}),
	}
	w.PolicyStates = []world.PolicyState{
		policyState(directSub1, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sabookings", "NonCompliant"),
		policyState(directSub1, "vm-backup", "Azure Backup should be enabled for VMs", "Backup", "Medium", "Microsoft.Compute/virtualMachines/vm-bookings", "Compliant"),
		policyState(directSub2, "disk-encryption", "Managed disks should be encrypted", "Compute", "Medium", "Microsoft.Compute/disks/disk-dev", "NonCompliant"),
		policyState(directSubB, "vm-backup", "Azure Backup should be enabled for VMs", "Backup", "Medium", "Microsoft.Compute/virtualMachines/vm-b", "Compliant"),
	}
	w.Quotas = []world.Quota{
		{SubscriptionID: directSub1, Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 40, Limit: 100},
		{SubscriptionID: directSub2, Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 95, Limit: 100},
		{SubscriptionID: directSubB, Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 1, Limit: 100},
	}
	return writeWorld(t, w), w
}

// directPlugins are the plugins that read Resource Manager: cost,
// resources (inventory and quotas) and compliance.
func directPlugins() string {
	return costPlugins("    backfill_days = 30") + resourcesPlugins() + compliancePlugins("")
}

// startDirect starts a host on the direct world of the dialect.
// expectDirectCosts checks that the last 30 days' cost summary of the
// direct tenant is the world's sum of its costs, in USD, to the cent.
func expectDirectCosts(t *testing.T, h *host, token, tenantID string, w world.World, today time.Time) {
	t.Helper()
	var want ledger.Amount
	for _, c := range w.Costs {
		if c.SubscriptionID != directSubB {
			want += ledger.AmountOf(c.Cost)
		}
	}
	var sum struct {
		Totals []struct {
			Currency  string        `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		} `json:"totals"`
	}
	q := "tenant_ids=" + tenantID + "&start_date=" + today.AddDate(0, 0, -29).Format(time.DateOnly) + "&end_date=" + today.Format(time.DateOnly)
	h.get("/api/v1/costs/summary?"+q, token).json(t, &sum)
	if len(sum.Totals) != 1 || sum.Totals[0].Currency != "USD" || sum.Totals[0].TotalCost != want {
		t.Fatalf("%s's cost summary %+v, want %s USD", directBrand, sum.Totals, want)
	}
}

func startDirect(t *testing.T, dialect string, consented bool) (*fixture, world.World, time.Time) {
	today := time.Now().UTC()
	path, w := directWorld(t, today, consented)
	o := hostOpts{pluginsHCL: directPlugins(),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	return &fixture{h: h, admin: h.login()}, w, today
}

// TestDirectTenantThroughTheHost: a tenant registered without delegation
// (the world's "delegated": false) is read with Steward's application's
// token in its own directory: its costs (the summary equal to the world's
// sum to the cent), inventory, policy states and quotas arrive through
// the host's start-up sync and a manual one, on both databases.
func TestDirectTenantThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testDirectTenantThroughTheHost(t, dialect) })
	}
}

func testDirectTenantThroughTheHost(t *testing.T, dialect string) {
	f, w, today := startDirect(t, dialect, true)
	h, admin := f.h, f.admin
	ids := h.tenantIDs(t, admin)
	northwind := ids[directBrand]
	var registered []struct {
		Name          string `json:"name"`
		UseDelegation bool   `json:"use_delegation"`
	}
	h.get("/api/v1/tenants", admin).json(t, &registered)
	for _, tn := range registered {
		if tn.Name == directBrand && tn.UseDelegation {
			t.Fatalf("%s registered with delegation", directBrand)
		}
	}
	for _, job := range []string{"costs", "compliance"} {
		waitStartupSync(t, h, admin, job)
		if r := f.waitRun(t, f.trigger(t, job)); r.Status != "completed" {
			t.Fatalf("%s sync %+v", job, r)
		}
	}

	// Costs: the summary of Northwind's backfill is the world's, to the
	// cent.
	expectDirectCosts(t, h, admin, northwind, w, today)

	// Inventory and quotas, from the resources plugin's jobs.
	var inv invPage
	h.waitFor(directBrand+"'s inventory", time.Minute, func() bool {
		h.get("/api/v1/resources/inventory?sort_by=name", admin).json(t, &inv)
		return inv.Total == 4
	})
	var names []string
	for _, it := range inv.Items {
		if it.TenantID == northwind {
			names = append(names, it.Name)
		}
	}
	if strings.Join(names, ",") != "disk-dev,sabookings,vm-bookings" {
		t.Fatalf("%s's inventory %v", directBrand, names)
	}
	var quotas quotaList
	h.waitFor(directBrand+"'s quotas", time.Minute, func() bool {
		h.get("/api/v1/resources/quotas", admin).json(t, &quotas)
		return len(quotas.Items) == 3
	})
	got := map[string]string{}
	for _, q := range quotas.Items {
		got[q.SubscriptionID] = fmt.Sprintf("%s %g %s", q.Name, q.UsagePercent, q.Health)
	}
	if got[directSub1] != "cores 40 ok" || got[directSub2] != "cores 95 critical" {
		t.Fatalf("quotas %v", got)
	}

	// Policy states: two of Northwind's three resources are non-compliant.
	var scores []complianceScore
	h.get("/api/v1/compliance/scores", admin).json(t, &scores)
	found := false
	for _, s := range scores {
		if s.TenantID == northwind {
			found = s.Percent != nil && *s.Percent == 33.33
		}
	}
	if !found {
		t.Fatalf("%s's compliance score is not 33.33 %%: %+v", directBrand, scores)
	}

	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", admin).json(t, &fresh)
	for _, domain := range []string{"costs", "resources", "compliance"} {
		if fresh[directBrand][domain] == nil {
			t.Errorf("%s's %s are not marked fresh: %v", directBrand, domain, fresh[directBrand])
		}
	}
	if strings.Contains(h.logs.String(), "tenant skipped") {
		t.Error("the host log says a tenant was skipped")
	}
}

// TestDirectTenantWithoutConsent: a tenant whose directory has not (or no
// longer) consented to Steward's application fails every sync run that
// reads Resource Manager, naming it, the identity provider's refusal and
// the fix, while the other tenant's data arrives.
func TestDirectTenantWithoutConsent(t *testing.T) {
	f, _, _ := startDirect(t, store.DialectSQLite, false)
	var runs []run
	for _, job := range []string{"costs", "compliance", "resources"} {
		var acc struct {
			JobIDs []string `json:"job_ids"`
		}
		f.h.do(http.MethodPost, "/api/v1/sync/"+job, f.admin, nil).json(t, &acc)
		for _, id := range acc.JobIDs {
			runs = append(runs, f.waitRun(t, id))
		}
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs of the costs, compliance and resources syncs, want 4 (resources has quotas and inventory)", len(runs))
	}
	for _, r := range runs {
		job := r.JobType
		if r.Status != "failed" || r.ErrorMessage == nil {
			t.Fatalf("%s sync %+v, want it failed", job, r)
		}
		msg := *r.ErrorMessage
		for _, part := range []string{"tenant " + directBrand, "directory " + directDir + " refused Steward's application a token: AADSTS700016",
			"grant Steward's application admin consent and a reader role in directory " + directDir} {
			if !strings.Contains(msg, part) {
				t.Errorf("%s sync failed with %q, want it to say %q", job, msg, part)
			}
		}
		if strings.Contains(msg, "Brand B") {
			t.Errorf("%s sync names Brand B: %q", job, msg)
		}
	}
	var fresh map[string]map[string]any
	f.h.get("/api/v1/health/data", f.admin).json(t, &fresh)
	if fresh["Brand B"]["costs"] == nil || fresh[directBrand]["costs"] != nil {
		t.Errorf("freshness %v, want Brand B's costs only", fresh)
	}
	// The admin is told why, domain by domain; the failed runs raised
	// alerts naming the tenant.
	problems, _ := fresh[directBrand]["problems"].(map[string]any)
	for _, domain := range []string{"costs", "compliance", "resources"} {
		if p, _ := problems[domain].(string); fresh[directBrand]["stale"] != true || !strings.HasPrefix(p, "never synced; the last sync failed at ") ||
			!strings.Contains(p, "grant Steward's application admin consent") {
			t.Errorf("%s's %s problem = %q, want the failure and its fix", directBrand, domain, p)
		}
	}
	if _, ok := fresh["Brand B"]["problems"]; ok {
		t.Errorf("Brand B has problems: %v", fresh["Brand B"])
	}
	// The dashboard's freshness card says the same to the admin.
	if r := f.h.get("/partials/tenant-sync-status", f.admin); r.status != http.StatusOK || !strings.Contains(string(r.body), "Last sync failed") ||
		!strings.Contains(string(r.body), "grant Steward&#39;s application admin consent") {
		t.Errorf("the dashboard's freshness card: %d %s", r.status, r.body)
	}
	var alerts struct {
		Alerts []struct {
			Message string `json:"message"`
		} `json:"alerts"`
	}
	f.h.get("/api/v1/sync/alerts", f.admin).json(t, &alerts)
	named := 0
	for _, a := range alerts.Alerts {
		if strings.Contains(a.Message, "tenant "+directBrand) {
			named++
		}
	}
	if named < len(runs) {
		t.Errorf("%d alerts name %s, want one per failed run (%d): %+v", named, directBrand, len(runs), alerts.Alerts)
	}
}
