package inventory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
)

var (
	admin    = sdk.Principal{ID: "admin-1", Email: "admin@example.com", IsAdmin: true, Kind: "user", TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoU = sdk.Principal{ID: "user-c", Email: "c@contoso.example", Kind: "user", TenantIDs: []string{contoso.ID}}
	fabU     = sdk.Principal{ID: "user-f", Email: "f@fabrikam.example", Kind: "user", TenantIDs: []string{fabrikam.ID}}
)

// get calls a route as p and decodes a 200's body into out; it returns
// the status and, on another status, leaves out alone.
func (f *fixture) get(t *testing.T, p sdk.Principal, path string, out any) int {
	t.Helper()
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, path, nil), p)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
	}
	if resp.StatusCode == http.StatusUnprocessableEntity && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
	}
	return resp.StatusCode
}

func (f *fixture) mustGet(t *testing.T, p sdk.Principal, path string, out any) {
	t.Helper()
	if status := f.get(t, p, path, out); status != http.StatusOK {
		t.Fatalf("%s as %s: %d", path, p.ID, status)
	}
}

func names(items []inventory.View) []string {
	out := []string{}
	for _, v := range items {
		out = append(out, v.Name)
	}
	return out
}

func TestReads(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := inventoryWorld()
			f := start(t, dialect, w)
			f.mustRun(t)

			var counts inventory.Counts
			f.mustGet(t, admin, "/api/v1/resources/inventory/counts", &counts)
			wantTypes := []inventory.Count{
				{Value: "microsoft.compute/disks", Count: 2}, {Value: "microsoft.compute/virtualmachines", Count: 2},
				{Value: "microsoft.network/networkinterfaces", Count: 2}, {Value: "microsoft.resources/subscriptions/resourcegroups", Count: 2},
				{Value: "microsoft.network/publicipaddresses", Count: 1}, {Value: "microsoft.storage/storageaccounts", Count: 1},
			}
			wantLocations := []inventory.Count{{Value: "eastus", Count: 7}, {Value: "westeurope", Count: 3}}
			if counts.Total != 10 || !reflect.DeepEqual(counts.ByType, wantTypes) || !reflect.DeepEqual(counts.ByLocation, wantLocations) {
				t.Fatalf("counts %+v", counts)
			}
			f.mustGet(t, fabU, "/api/v1/resources/inventory/counts", &counts)
			if counts.Total != 1 || len(counts.ByType) != 1 || counts.ByType[0].Value != "microsoft.compute/virtualmachines" {
				t.Fatalf("Fabrikam's counts %+v", counts)
			}

			var cov inventory.Coverage
			f.mustGet(t, contosoU, "/api/v1/resources/tags/coverage", &cov)
			want := inventory.Coverage{RequiredTags: requiredTags, TotalResources: 9, FullyTagged: 3, FullyTaggedPct: 33.33, Tags: []inventory.TagStat{
				{Key: "env", Tagged: 6, Missing: 3, CoveragePercent: 66.67}, {Key: "owner", Tagged: 3, Missing: 6, CoveragePercent: 33.33}}}
			if !reflect.DeepEqual(cov, want) {
				t.Fatalf("Contoso's coverage\n got %+v\nwant %+v", cov, want)
			}
			f.mustGet(t, fabU, "/api/v1/resources/tags/coverage", &cov)
			if cov.TotalResources != 1 || cov.FullyTagged != 1 || cov.FullyTaggedPct != 100 {
				t.Fatalf("Fabrikam's coverage %+v", cov)
			}

			var orphans inventory.Orphans
			f.mustGet(t, contosoU, "/api/v1/resources/orphans", &orphans)
			var got []string
			for _, o := range orphans.Items {
				got = append(got, o.Kind+":"+o.Name)
				if o.EstimatedMonthlyCost != nil {
					t.Fatalf("orphan %s has a cost estimate without cost data", o.Name)
				}
			}
			wantOrphans := []string{"empty_resource_group:rg-empty", "unattached_disk:disk-2", "unused_nic:nic-2", "unused_public_ip:pip-1"}
			wantKinds := map[string]int64{"unattached_disk": 1, "unused_public_ip": 1, "unused_nic": 1, "empty_resource_group": 1}
			if !reflect.DeepEqual(got, wantOrphans) || orphans.Total != 4 || !reflect.DeepEqual(orphans.ByKind, wantKinds) {
				t.Fatalf("Contoso's orphans %v, total %d, by kind %v", got, orphans.Total, orphans.ByKind)
			}
			f.mustGet(t, contosoU, "/api/v1/resources/orphans?kind=unused_nic&limit=1", &orphans)
			if orphans.Total != 1 || len(orphans.Items) != 1 || orphans.Items[0].Name != "nic-2" || orphans.Limit != 1 {
				t.Fatalf("NIC orphans %+v", orphans)
			}
			f.mustGet(t, fabU, "/api/v1/resources/orphans", &orphans)
			if orphans.Total != 0 || len(orphans.Items) != 0 {
				t.Fatalf("Fabrikam's orphans %+v", orphans)
			}

			for path, want := range map[string][]string{
				"/api/v1/resources/inventory?type=Microsoft.Compute/disks":                                   {"disk-1", "disk-2"},
				"/api/v1/resources/inventory?tag_key=owner":                                                  {"nic-1", "rg-app", "vm-1"},
				"/api/v1/resources/inventory?tag_key=env&tag_value=dev":                                      {"st1"},
				"/api/v1/resources/inventory?q=DISK":                                                         {"disk-1", "disk-2"},
				"/api/v1/resources/inventory?q=_":                                                            {},
				"/api/v1/resources/inventory?location=westeurope":                                            {"rg-empty", "st1"},
				"/api/v1/resources/inventory?resource_group=RG-APP&type=microsoft.network/networkinterfaces": {"nic-1", "nic-2"},
				"/api/v1/resources/inventory?sort_by=name&sort_order=desc&limit=2&offset=1":                  {"st1", "rg-empty"},
			} {
				var page inventory.Page[inventory.View]
				f.mustGet(t, contosoU, path, &page)
				if !reflect.DeepEqual(names(page.Items), want) {
					t.Fatalf("%s: %v, want %v", path, names(page.Items), want)
				}
			}
			var page inventory.Page[inventory.View]
			f.mustGet(t, contosoU, "/api/v1/resources/inventory?limit=2&offset=1", &page)
			if page.Total != 9 || page.Limit != 2 || page.Offset != 1 || len(page.Items) != 2 {
				t.Fatalf("page %+v", page)
			}
			f.mustGet(t, fabU, "/api/v1/resources/inventory", &page)
			if page.Total != 1 || page.Items[0].Name != "vm-f" || page.Items[0].Tags["owner"] != "fabrikam" {
				t.Fatalf("Fabrikam's inventory %+v", page)
			}
			if status := f.get(t, fabU, "/api/v1/resources/inventory?tenant_ids="+contoso.ID, nil); status != http.StatusForbidden {
				t.Fatalf("Fabrikam's user naming Contoso: %d, want 403", status)
			}

			// A resource with its history, after a second world changes it.
			vm := clone(vm1)
			vm.Location = "westus"
			f.sim.SetWorld(withResources(w, []world.Resource{vm, disk1, disk2, pip1, nic1, nic2, rgApp, st1, rgEmpty, vmF}))
			f.mustRun(t)
			uid := inventory.UID(vm1.ID)
			var d inventory.Detail
			f.mustGet(t, contosoU, "/api/v1/resources/inventory/"+uid, &d)
			if d.ID != uid || d.ResourceID != vm1.ID || d.Location != "westus" || d.Properties["hardwareProfile"] == nil || len(d.History) != 2 ||
				d.History[0].Kind != "created" || d.History[1].Kind != "changed" || !reflect.DeepEqual(d.History[1].ChangedFields, []string{"location"}) {
				t.Fatalf("vm-1 %+v", d)
			}
			for _, p := range []sdk.Principal{fabU} {
				if status := f.get(t, p, "/api/v1/resources/inventory/"+uid, nil); status != http.StatusNotFound {
					t.Fatalf("Contoso's VM as %s: %d, want 404", p.ID, status)
				}
			}
			if status := f.get(t, admin, "/api/v1/resources/inventory/"+inventory.UID("/subscriptions/x/none"), nil); status != http.StatusNotFound {
				t.Fatalf("an unknown resource: %d, want 404", status)
			}

			var events inventory.Page[inventory.EventView]
			f.mustGet(t, contosoU, "/api/v1/resources/events?kind=created", &events)
			if events.Total != 9 || events.Limit != 100 {
				t.Fatalf("Contoso's created events: total %d", events.Total)
			}
			f.mustGet(t, contosoU, "/api/v1/resources/events", &events)
			if events.Total != 10 || events.Items[0].Kind != "changed" || events.Items[0].Resource != uid {
				t.Fatalf("Contoso's feed, newest first: %+v", events.Items[0])
			}
			f.mustGet(t, admin, "/api/v1/resources/events?since=2030-01-01T00:00:00Z", &events)
			if events.Total != 0 {
				t.Fatalf("events since 2030: %d", events.Total)
			}
		})
	}
}

// TestQueryBounds: every declared bound is a 422 naming the parameter,
// and the values on the bounds pass.
func TestQueryBounds(t *testing.T) {
	f := start(t, storetest.Dialects()[0], inventoryWorld())
	inv, orphans, events := "/api/v1/resources/inventory", "/api/v1/resources/orphans", "/api/v1/resources/events"
	scoped := []string{inv, inv + "/counts", "/api/v1/resources/tags/coverage", orphans, events}
	cases := map[string]string{
		inv + "?limit=0":                             "query.limit",
		inv + "?limit=501":                           "query.limit",
		inv + "?limit=ten":                           "query.limit",
		inv + "?offset=-1":                           "query.offset",
		inv + "?offset=1000001":                      "query.offset",
		inv + "?sort_by=size":                        "query.sort_by",
		inv + "?sort_order=up":                       "query.sort_order",
		inv + "?location=West%20Europe":              "query.location",
		inv + "?type=" + strings.Repeat("t", 201):    "query.type",
		inv + "?q=" + strings.Repeat("q", 201):       "query.q",
		inv + "?tag_key=" + strings.Repeat("k", 513): "query.tag_key",
		inv + "?tag_value=prod":                      "query.tag_value",
		orphans + "?limit=0":                         "query.limit",
		orphans + "?limit=501":                       "query.limit",
		orphans + "?offset=-1":                       "query.offset",
		orphans + "?offset=1000001":                  "query.offset",
		orphans + "?kind=stale":                      "query.kind",
		events + "?limit=0":                          "query.limit",
		events + "?limit=501":                        "query.limit",
		events + "?offset=-1":                        "query.offset",
		events + "?offset=1000001":                   "query.offset",
		events + "?kind=moved":                       "query.kind",
		events + "?since=yesterday":                  "query.since",
		inv + "/not-an-id":                           "path.resource_id",
		inv + "/" + inventory.UID("x") + "0":         "path.resource_id",

		// With tag_key, so that only tag_value's length is wrong.
		inv + "?tag_key=env&tag_value=" + strings.Repeat("v", 257): "query.tag_value",
		inv + "?resource_group=" + strings.Repeat("g", 91):         "query.resource_group",
		inv + "?location=" + strings.Repeat("l", 65):               "query.location",
	}
	for _, path := range scoped {
		cases[path+"?tenant_ids="+tenantList(101)] = "query.tenant_ids"
		cases[path+"?tenant_ids="+strings.Repeat("t", 65)] = "query.tenant_ids[0]"
	}
	for path, loc := range cases {
		var p sdk.Problem
		if status := f.get(t, contosoU, path, &p); status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", path, status)
			continue
		}
		found := false
		for _, e := range p.Errors {
			found = found || e.Location == loc
		}
		if !found {
			t.Errorf("%s: 422 does not name %s: %+v", path, loc, p)
		}
	}
	accepted := []string{inv + "?limit=1&offset=0", inv + "?limit=500&offset=1000000", orphans + "?limit=500", events + "?limit=500&since=2026-01-01T00:00:00Z",
		orphans + "?offset=1000000", events + "?offset=1000000",
		inv + "?tag_key=env&tag_value=" + strings.Repeat("v", 256), inv + "?resource_group=" + strings.Repeat("g", 90), inv + "?location=" + strings.Repeat("l", 64)}
	for _, path := range scoped {
		accepted = append(accepted, path+"?tenant_ids="+tenantList(100))
	}
	for _, path := range accepted {
		if status := f.get(t, contosoU, path, nil); status != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, status)
		}
	}
	// A 64-character id passes validation and meets the tenant check.
	for _, path := range scoped {
		if status := f.get(t, contosoU, path+"?tenant_ids="+strings.Repeat("t", 64), nil); status != http.StatusForbidden {
			t.Errorf("%s naming an unknown 64-character tenant: %d, want 403", path, status)
		}
	}
}

// tenantList names contoso n times, comma-separated: a tenant_ids of n
// items Contoso's user may see.
func tenantList(n int) string {
	return strings.TrimSuffix(strings.Repeat(contoso.ID+",", n), ",")
}

// TestDataset: the resources dataset streams the requested tenants'
// resources with their properties, of one type when asked.
func TestDataset(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := start(t, dialect, inventoryWorld())
			f.mustRun(t)
			read := func(tenants []string, params map[string]string) []inventory.Record {
				t.Helper()
				raw, err := f.harness.ReadDataset(context.Background(), inventory.DatasetName, tenants, params)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]inventory.Record, len(raw))
				for i, r := range raw {
					if err := json.Unmarshal(r, &out[i]); err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			if all := read([]string{contoso.ID, fabrikam.ID}, nil); len(all) != 10 {
				t.Fatalf("%d records of both tenants, want 10", len(all))
			}
			fab := read([]string{fabrikam.ID}, nil)
			if len(fab) != 1 || fab[0].Name != "vm-f" || fab[0].TenantID != fabrikam.ID || fab[0].ID != inventory.UID(vmF.ID) {
				t.Fatalf("Fabrikam's records %+v", fab)
			}
			disks := read([]string{contoso.ID}, map[string]string{"type": "Microsoft.Compute/disks"})
			if len(disks) != 2 || disks[1].Name != "disk-2" {
				t.Fatalf("Contoso's disks %+v", disks)
			}
			var props map[string]any
			if err := json.Unmarshal(disks[1].Properties, &props); err != nil || props["diskState"] != "Unattached" || string(disks[1].Tags) != "{}" {
				t.Fatalf("disk-2 properties %s tags %s", disks[1].Properties, disks[1].Tags)
			}
			if none := read([]string{}, nil); len(none) != 0 {
				t.Fatalf("no tenant: %d records", len(none))
			}
			if _, err := f.harness.ReadDataset(context.Background(), inventory.DatasetName, []string{contoso.ID},
				map[string]string{"type": strings.Repeat("t", 201)}); err == nil {
				t.Fatal("an overlong type was read")
			}
		})
	}
}

// TestSection renders the inventory's part of the resources page: the
// figures, the filtered table and the orphans of the tenants asked for
// only, and a 422 for an overlong filter.
func TestSection(t *testing.T) {
	f := start(t, storetest.Dialects()[0], inventoryWorld())
	f.mustRun(t)
	h := &inventory.Handlers{Store: f.store, RequiredTags: requiredTags, Host: f.host}
	render := func(target string, tenants ...string) (string, error) { return section(h, target, tenants...) }
	page, err := render("/resources?q=%3Cdisk", contoso.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">9<", "33.33 %", "unattached_disk", "rg-empty", `value="&lt;disk"`, `action="/resources"`, "0 of 0 resources"} {
		if !strings.Contains(page, want) {
			t.Errorf("section lacks %q: %s", want, page)
		}
	}
	page, err = render("/resources?type=microsoft.compute/disks&tenant_id="+contoso.ID, contoso.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "disk-1") || !strings.Contains(page, "2 of 2 resources") || strings.Contains(page, "vm-f") ||
		!strings.Contains(page, `name="tenant_id" value="`+contoso.ID+`"`) {
		t.Errorf("Contoso's disks: %s", page)
	}
	// Each row names its tenant and links the resource's page, as each orphan does.
	for _, want := range []string{`<th scope="col">Tenant</th>`, "<td>Contoso</td>", `<a href="` + inventory.ItemLink(disk1.ID) + `">disk-1</a>`,
		`<a href="` + inventory.ItemLink(disk2.ID) + `">disk-2</a></td><td>Contoso</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("Contoso's disks lack %q: %s", want, page)
		}
	}
	page, _ = render("/resources", fabrikam.ID)
	if !strings.Contains(page, "vm-f") || strings.Contains(page, "disk-1") || strings.Contains(page, "rg-empty") {
		t.Errorf("Fabrikam's section shows Contoso's: %s", page)
	}
	// The dashboard card's figures are the section's, per tenant.
	stats, err := h.Stats(httptest.NewRequest(http.MethodGet, "/partials/resource-stats", nil), []string{contoso.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">9<", "33.33 %", "Orphans"} {
		if !strings.Contains(string(stats), want) {
			t.Errorf("Contoso's figures lack %q: %s", want, stats)
		}
	}
	if stats, _ := h.Stats(httptest.NewRequest(http.MethodGet, "/partials/resource-stats", nil), []string{fabrikam.ID}); strings.Contains(string(stats), ">9<") {
		t.Errorf("Fabrikam's figures count Contoso's resources: %s", stats)
	}
	// The route's other filters, on the page.
	for target, want := range map[string][]string{
		"/resources?location=westeurope":                       {"st1", "rg-empty", "2 of 2 resources"},
		"/resources?resource_group=RG-DATA":                    {"st1", "1 of 1 resources"},
		"/resources?tag_key=env&tag_value=prod":                {"vm-1", "disk-1", "pip-1", "nic-1", "rg-app", "5 of 5 resources", `name="tag_value" value="prod"`},
		"/resources?tag_key=owner":                             {"vm-1", "nic-1", "rg-app", "3 of 3 resources"},
		"/resources?offset=5":                                  {"6 to 9 of 9 resources", `href="/resources">Previous 50`},
		"/resources?location=eastus&offset=1&tenant_id=" + "x": {"2 to 7 of 7 resources", `href="/resources?location=eastus&amp;tenant_id=x">Previous`},
	} {
		page, err := render(target, contoso.ID)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("%s lacks %q: %s", target, w, page)
			}
		}
		if strings.Contains(page, "Next 50") || strings.Contains(page, "vm-f") {
			t.Errorf("%s links a next page of fewer than 50 rows or shows Fabrikam's: %s", target, page)
		}
	}
	var p *sdk.Problem
	for target, field := range map[string]string{
		"/resources?type=" + strings.Repeat("t", 201):                  "query.type",
		"/resources?q=" + strings.Repeat("q", 201):                     "query.q",
		"/resources?location=EastUS":                                   "query.location",
		"/resources?location=" + strings.Repeat("l", 65):               "query.location",
		"/resources?resource_group=" + strings.Repeat("g", 91):         "query.resource_group",
		"/resources?tag_key=" + strings.Repeat("k", 513):               "query.tag_key",
		"/resources?tag_key=env&tag_value=" + strings.Repeat("v", 257): "query.tag_value",
		"/resources?tag_value=prod":                                    "query.tag_value",
		"/resources?offset=-1":                                         "query.offset",
		"/resources?offset=ten":                                        "query.offset",
		"/resources?offset=1000001":                                    "query.offset",
	} {
		_, err := render(target, contoso.ID)
		if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != field {
			t.Errorf("%s: %v, want a 422 naming %s", target, err, field)
		}
	}
}

// TestSectionPages: past fifty resources the page links the next fifty,
// and the last page links back.
func TestSectionPages(t *testing.T) {
	w := inventoryWorld()
	for i := range 55 {
		w.Resources = append(w.Resources, res(subC1, "rg-many", "Microsoft.Compute/disks", fmt.Sprintf("many-%02d", i), "eastus", nil, map[string]any{"diskState": "Attached"}))
	}
	f := start(t, storetest.Dialects()[0], w)
	f.mustRun(t)
	h := &inventory.Handlers{Store: f.store, RequiredTags: requiredTags, Host: f.host}
	page, err := section(h, "/resources?resource_group=rg-many", contoso.ID)
	if err != nil || !strings.Contains(page, "50 of 55 resources") || !strings.Contains(page, `href="/resources?offset=50&amp;resource_group=rg-many">Next 50`) ||
		strings.Contains(page, "Previous") || strings.Contains(page, "many-50") {
		t.Fatalf("first page (%v): %s", err, page)
	}
	page, err = section(h, "/resources?resource_group=rg-many&offset=50", contoso.ID)
	if err != nil || !strings.Contains(page, "51 to 55 of 55 resources") || !strings.Contains(page, "many-54") || strings.Contains(page, "many-49") ||
		!strings.Contains(page, `href="/resources?resource_group=rg-many">Previous 50`) || strings.Contains(page, "Next 50") {
		t.Fatalf("last page (%v): %s", err, page)
	}
}
