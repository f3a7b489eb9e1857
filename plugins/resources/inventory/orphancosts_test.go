package inventory_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
)

// costRecord is a record of the cost plugin's resource_costs dataset.
func costRecord(tenant, sub, resourceID, currency string, cents int64) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"tenant_id": tenant, "subscription_id": sub, "resource_id": strings.ToLower(resourceID),
		"currency": currency, "monthly_cost": json.Number(inventory.Amount(cents).String()), "monthly_cost_cents": cents,
		"period_from": "2026-11-15", "period_to": "2026-12-14"})
	return b
}

// TestOrphanCosts: the orphans carry the estimated monthly cost the cost
// plugin's resource_costs dataset has for them, read through the host for
// the caller's tenants, matched by tenant and ARM id whatever its case;
// an orphan without a record, with records in two currencies, or with a
// record of another tenant has none. The resources page shows the same.
func TestOrphanCosts(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := startWith(t, dialect, inventoryWorld(), map[string][]json.RawMessage{inventory.CostDataset: {
				costRecord(contoso.ID, subC1, disk2.ID, "USD", 3750),
				costRecord(contoso.ID, subC1, pip1.ID, "USD", 365),
				costRecord(contoso.ID, subC1, pip1.ID, "EUR", 12),
				costRecord(contoso.ID, subC1, vm1.ID, "USD", 9999_00),
				costRecord(fabrikam.ID, subC1, nic2.ID, "USD", 500),
			}})
			f.mustRun(t)
			for _, p := range []sdk.Principal{contosoU, admin} {
				resp := f.harness.Do(httptest.NewRequest(http.MethodGet, "/api/v1/resources/orphans", nil), p)
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var orphans inventory.Orphans
				if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &orphans) != nil {
					t.Fatalf("orphans as %s: %d %s", p.ID, resp.StatusCode, raw)
				}
				costs := map[string]*inventory.MonthlyCost{}
				for _, o := range orphans.Items {
					costs[o.Name] = o.EstimatedMonthlyCost
				}
				want := inventory.MonthlyCost{Amount: 3750, Currency: "USD", PeriodFrom: "2026-11-15", PeriodTo: "2026-12-14"}
				if len(costs) != 4 || costs["disk-2"] == nil || *costs["disk-2"] != want {
					t.Fatalf("orphans' costs as %s: %s", p.ID, raw)
				}
				for _, name := range []string{"pip-1", "nic-2", "rg-empty"} {
					if costs[name] != nil {
						t.Errorf("as %s, %s costs %+v, want null", p.ID, name, costs[name])
					}
				}
				if !strings.Contains(string(raw), `"estimated_monthly_cost":{"amount":37.50,"currency":"USD","period_from":"2026-11-15","period_to":"2026-12-14"}`) {
					t.Errorf("disk-2's cost is not written exactly: %s", raw)
				}
			}
			var orphans inventory.Orphans
			f.mustGet(t, fabU, "/api/v1/resources/orphans", &orphans)
			if len(orphans.Items) != 0 {
				t.Fatalf("Fabrikam's orphans %+v", orphans.Items)
			}

			h := &inventory.Handlers{Store: f.store, Host: f.host}
			html, err := section(h, "/resources", contoso.ID)
			if err != nil || !strings.Contains(html, "37.50 USD") || !strings.Contains(html, "Est. monthly cost") {
				t.Fatalf("section (%v): %s", err, html)
			}
		})
	}
}

// TestOrphanCostsUnreadable: a resource_costs record the plugin cannot
// read fails the orphans route with a 500 that tells nothing of it, rather
// than showing the orphans as costing nothing.
func TestOrphanCostsUnreadable(t *testing.T) {
	f := startWith(t, storetest.Dialects()[0], inventoryWorld(), map[string][]json.RawMessage{inventory.CostDataset: {
		json.RawMessage(`{"tenant_id": "` + contoso.ID + `", "resource_id": "x", "currency": "USD", "monthly_cost": "secret"}`),
	}})
	f.mustRun(t)
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, "/api/v1/resources/orphans", nil), contosoU)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(raw), "secret") {
		t.Fatalf("an unreadable cost record: %d %s", resp.StatusCode, raw)
	}
}
