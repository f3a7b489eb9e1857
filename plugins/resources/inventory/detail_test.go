package inventory_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
)

// stateRecord is a record of the compliance plugin's
// compliance_resource_states dataset.
func stateRecord(tenant, resourceID, policy, state string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"tenant_id": tenant, "subscription_id": subC1, "resource_id": resourceID,
		"policy_assignment_id": "/assignments/a1", "policy_definition_id": "/definitions/" + policy, "policy_name": policy,
		"category": "Compute", "compliance_state": state, "severity": "High", "evaluated_at": "2026-12-15T11:00:00Z"})
	return b
}

// page asks for a page through the plugin protocol as p, so the host's
// checks run before the handler as in production.
func (f *fixture) page(t *testing.T, p sdk.Principal, target string) (int, string) {
	t.Helper()
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestItemPage: the resource page shows the resource's fields with its
// tenant's name, its tags and properties, its policy states and cost from
// the other plugins' datasets through the host, and its lifecycle; the
// ARM id's case does not matter. A resource of another tenant and an
// unknown one are the same 404, and a malformed id is a 422 naming it.
func TestItemPage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := startWith(t, dialect, inventoryWorld(), map[string][]json.RawMessage{
				inventory.CostDataset: {costRecord(contoso.ID, subC1, vm1.ID, "USD", 4321), costRecord(fabrikam.ID, subF1, vmF.ID, "USD", 100)},
				inventory.ComplianceDataset: {
					stateRecord(contoso.ID, vm1.ID, "Require disk encryption", "NonCompliant"),
					stateRecord(contoso.ID, vm1.ID, "Audit <b>VMs</b>", "Compliant"),
					stateRecord(fabrikam.ID, vmF.ID, "Fabrikam policy", "NonCompliant"),
				},
			})
			f.mustRun(t)
			changed := clone(vm1)
			changed.Tags["owner"] = "bob"
			f.sim.SetWorld(withResources(inventoryWorld(), []world.Resource{changed, disk1, disk2, pip1, nic1, nic2, rgApp, st1, rgEmpty, vmF}))
			f.clock.Advance(10 * time.Minute)
			f.mustRun(t)

			code, body := f.page(t, contosoU, inventory.ItemLink(strings.ToUpper(vm1.ID)))
			if code != http.StatusOK {
				t.Fatalf("vm-1's page: %d %s", code, body)
			}
			for _, want := range []string{"vm-1", "Contoso", subC1, "rg-app", "microsoft.compute/virtualmachines", "Standard_D2s_v5",
				"owner", "bob", "hardwareProfile", "Require disk encryption", "Audit &lt;b&gt;VMs&lt;/b&gt;", "health-critical",
				"43.21 USD", "2026-11-15", "created", "changed", "tags"} {
				if !strings.Contains(body, want) {
					t.Errorf("vm-1's page lacks %q: %s", want, body)
				}
			}
			if strings.Contains(body, "Fabrikam") || strings.Contains(body, "<b>VMs") {
				t.Errorf("vm-1's page shows another tenant's data or unescaped markup: %s", body)
			}
			// A resource without policy states or cost says so.
			if code, body := f.page(t, contosoU, inventory.ItemLink(st1.ID)); code != http.StatusOK ||
				!strings.Contains(body, "No cost of this resource") || !strings.Contains(body, "SKU") {
				t.Errorf("st1's page: %d %s", code, body)
			}
			if code, body := f.page(t, admin, inventory.ItemLink(vmF.ID)); code != http.StatusOK || !strings.Contains(body, "Fabrikam policy") {
				t.Errorf("vm-f's page as admin: %d %s", code, body)
			}
			unknown := armID(subC1, "rg-app", "Microsoft.Compute/virtualMachines", "vm-404")
			for _, target := range []string{inventory.ItemLink(vmF.ID), inventory.ItemLink(unknown)} {
				code, body := f.page(t, contosoU, target)
				if code != http.StatusNotFound || strings.Contains(body, "Fabrikam") || strings.Contains(body, "vm-f\"") {
					t.Errorf("%s as Contoso's user: %d %s, want 404", target, code, body)
				}
			}
			// Without a resource the page says where to find one.
			if code, body := f.page(t, contosoU, inventory.ItemPath); code != http.StatusOK || !strings.Contains(body, "open it from a row of the inventory") {
				t.Errorf("%s without a resource: %d %s, want 200 saying where to find one", inventory.ItemPath, code, body)
			}
			for target, field := range map[string]string{
				inventory.ItemPath + "?resource_id=vm-1":                          "query.resource_id",
				inventory.ItemLink("/subscriptions/" + strings.Repeat("x", 2048)): "query.resource_id",
			} {
				if code, body := f.page(t, contosoU, target); code != http.StatusUnprocessableEntity || !strings.Contains(body, field) {
					t.Errorf("%.60s: %d %s, want 422 naming %s", target, code, body, field)
				}
			}
		})
	}
}

// TestItemPageWithoutCompliance: without a compliance plugin the page
// still shows the resource, and says its policy states are unavailable.
func TestItemPageWithoutCompliance(t *testing.T) {
	f := start(t, storetest.Dialects()[0], inventoryWorld())
	f.mustRun(t)
	code, body := f.page(t, contosoU, inventory.ItemLink(vm1.ID))
	if code != http.StatusOK || !strings.Contains(body, "Policy states are unavailable") || !strings.Contains(body, "vm-1") {
		t.Fatalf("vm-1's page without compliance: %d %s", code, body)
	}
}
