package e2e

import (
	"context"
	"encoding/csv"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// allocationWorld: brand Acme has Acme Prod, with the shared subscription
// (a machine of 100.01) and the web subscription (a machine tagged
// costcenter=marketing of 40.00, one tagged costcenter=Sales of 25.50 and
// 3.33 of no resource), and Acme Dev (a machine tagged marketing of 12.34
// and an untagged one of 7.77); brand Other has Other Co (1,000.00). All
// costs are USD, of one day two days ago.
func allocationWorld(t *testing.T) (path, day, shared string) {
	shared = "acacacac-0000-0000-0000-0000000000a0"
	web, dev, other := "acacacac-0000-0000-0000-0000000000a1", "acacacac-0000-0000-0000-0000000000d1", "0f0f0f0f-0000-0000-0000-0000000000f1"
	day = time.Now().UTC().AddDate(0, 0, -2).Format(world.DateLayout)
	vm := func(sub, group, name string) string {
		return "/subscriptions/" + sub + "/resourceGroups/" + group + "/providers/Microsoft.Compute/virtualMachines/" + name
	}
	cost := func(sub, group, id string, amount float64) world.Cost {
		return world.Cost{SubscriptionID: sub, Date: day, Service: "Virtual Machines", ResourceGroup: group, ResourceID: id, Cost: amount, Currency: "USD"}
	}
	resource := func(sub, id string, tags map[string]string) world.Resource {
		return world.Resource{SubscriptionID: sub, ID: id, Name: id[strings.LastIndex(id, "/")+1:], Type: "Microsoft.Compute/virtualMachines", Location: "eastus", Tags: tags}
	}
	path = writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Acme Prod", Brand: "Acme", DirectoryTenantID: "acacacac-1111-1111-1111-111111111111", AccessGroups: []string{"grp-acme-prod"}, Delegated: true,
				Subscriptions: []world.Subscription{{ID: shared, Name: "acme shared"}, {ID: web, Name: "acme web"}}},
			{Name: "Acme Dev", Brand: "Acme", DirectoryTenantID: "acacacac-2222-2222-2222-222222222222", AccessGroups: []string{"grp-acme-dev"}, Delegated: true,
				Subscriptions: []world.Subscription{{ID: dev, Name: "acme dev"}}},
			{Name: "Other Co", Brand: "Other", DirectoryTenantID: "0f0f0f0f-3333-3333-3333-333333333333", AccessGroups: []string{"grp-other"}, Delegated: true,
				Subscriptions: []world.Subscription{{ID: other, Name: "other"}}},
		},
		Costs: []world.Cost{
			cost(shared, "rg-shared", vm(shared, "rg-shared", "vm-hub"), 100.01),
			cost(web, "rg-web", vm(web, "rg-web", "vm-web"), 40),
			cost(web, "rg-web", vm(web, "rg-web", "vm-api"), 25.5),
			{SubscriptionID: web, Date: day, Service: "Support", Cost: 3.33, Currency: "USD"},
			cost(dev, "rg-dev", vm(dev, "rg-dev", "vm-dev"), 12.34),
			cost(dev, "rg-dev", vm(dev, "rg-dev", "vm-tmp"), 7.77),
			cost(other, "rg-other", vm(other, "rg-other", "vm-other"), 1000),
		},
		Resources: []world.Resource{
			resource(shared, vm(shared, "rg-shared", "vm-hub"), nil),
			resource(web, vm(web, "rg-web", "vm-web"), map[string]string{"CostCenter": "marketing"}),
			resource(web, vm(web, "rg-web", "vm-api"), map[string]string{"CostCenter": "Sales"}),
			resource(dev, vm(dev, "rg-dev", "vm-dev"), map[string]string{"costcenter": "marketing"}),
			resource(dev, vm(dev, "rg-dev", "vm-tmp"), nil),
			resource(other, vm(other, "rg-other", "vm-other"), map[string]string{"costcenter": "marketing"}),
		},
	})
	return path, day, shared
}

// centreCost is a row of the chargeback by cost centre as a client reads
// it, amounts back in cents.
type centreCost struct {
	CostCentre string        `json:"cost_centre"`
	Currency   string        `json:"currency"`
	DirectCost ledger.Amount `json:"direct_cost"`
	SharedCost ledger.Amount `json:"shared_cost"`
	TotalCost  ledger.Amount `json:"total_cost"`
}

// TestCostAllocationThroughTheHost: on both databases, brand Acme's two
// tenants are charged back by cost centre under its rules — the shared
// subscription split 50/50 between Platform and Data, the marketing tag
// to Marketing, every other costcenter value to the cost centre it names
// — to the cent of the hand-computed answer, the odd cent of the shared
// 100.01 to Data (first by name), and the cost centres add up to the
// brand's cost summary. A user of Acme Prod reads the brand as Acme Prod
// alone and cannot replace its rules (403); a user of Other Co cannot see
// the brand (404); brand_id is required (422) and a bad rule set names
// its fields (422) and changes nothing. The brand's cost page shows its
// costs by cost centre, and the replacement is in the audit log. Every answer is checked against
// the OpenAPI document.
func TestCostAllocationThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostAllocation(t, dialect) })
	}
}

func testCostAllocation(t *testing.T, dialect string) {
	worldPath, day, shared := allocationWorld(t)
	o := hostOpts{pluginsHCL: costPlugins(""), env: map[string]string{
		"STEWARD_SIM_WORLD": worldPath, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "costs")
	var brands []tenancy.Brand
	h.get("/api/v1/brands", admin).json(t, &brands)
	var acme string
	for _, b := range brands {
		if b.Name == "Acme" {
			acme = b.ID
		}
	}
	if acme == "" {
		t.Fatalf("brand Acme not registered: %+v", brands)
	}
	user := func(email, group string) string {
		u := tenancy.User{DirectoryTenantID: "allocation-directory", Subject: "oid-" + email, Email: email, Name: email, Groups: []string{group}}
		if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
			t.Fatal(err)
		}
		return h.tokenFor(u)
	}
	prodUser, otherUser := user("ops@acme.example", "grp-acme-prod"), user("ops@other.example", "grp-other")

	rulesPath := "/api/v1/costs/allocation/rules?brand_id=" + acme
	chargebackPath := "/api/v1/costs/allocation/chargeback?brand_id=" + acme + "&start_date=" + day + "&end_date=" + day
	put := func(body, token string) response {
		return h.do(http.MethodPut, rulesPath, token, strings.NewReader(body), "Content-Type", "application/json")
	}
	rules := `{"rules": [
		{"kind": "subscription", "subscription_id": "` + strings.ToUpper(shared) + `", "shared": {"split": "fixed",
			"cost_centres": [{"name": "Platform", "percent": 50}, {"name": "Data", "percent": 50}]}},
		{"kind": "tag", "tag_key": "CostCenter", "tag_value": "marketing", "cost_centre": "Marketing"},
		{"kind": "cost_centre_tag", "tag_key": "costcenter"}]}`
	if r := put(rules, prodUser); r.status != http.StatusForbidden {
		t.Errorf("a user's PUT: %d %s", r.status, r.body)
	}
	if r := put(rules, admin); r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	var audit auditPage
	h.get("/api/v1/audit-logs?action=cost_allocation.replace.success", admin).json(t, &audit)
	if len(audit.Items) != 1 || audit.Items[0].ResourceType != "brand" || audit.Items[0].Details["plugin"] != "cost" || audit.Items[0].Details["rules"] != 3.0 {
		t.Errorf("the replacement's audit entries: %+v", audit.Items)
	}

	var report struct {
		TenantIDs   []string     `json:"tenant_ids"`
		CostCentres []centreCost `json:"cost_centres"`
		Totals      []struct {
			Currency  string        `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		} `json:"totals"`
	}
	// 100.01 shared is 50.005 each: the odd cent to Data, first by name.
	// Marketing 40.00 + 12.34; Sales 25.50; Unallocated 3.33 of no
	// resource and 7.77 untagged. 188.95 in all.
	want := []centreCost{
		{"Data", "USD", 0, 5001, 5001},
		{"Marketing", "USD", 5234, 0, 5234},
		{"Platform", "USD", 0, 5000, 5000},
		{"Sales", "USD", 2550, 0, 2550},
		{"Unallocated", "USD", 1110, 0, 1110},
	}
	if r := h.get(chargebackPath, admin); r.status != http.StatusOK {
		t.Fatalf("chargeback: %d %s", r.status, r.body)
	} else {
		r.json(t, &report)
	}
	if !slices.Equal(report.CostCentres, want) || len(report.TenantIDs) != 2 || len(report.Totals) != 1 || report.Totals[0].TotalCost != 18895 {
		t.Errorf("brand Acme's chargeback: %+v, want %+v and a total of 188.95", report, want)
	}
	var summary struct {
		TenantCount int           `json:"tenant_count"`
		TotalCost   ledger.Amount `json:"total_cost"`
	}
	h.get("/api/v1/costs/summary?brand_id="+acme+"&start_date="+day+"&end_date="+day, admin).json(t, &summary)
	var sum ledger.Amount
	for _, c := range report.CostCentres {
		sum += c.TotalCost
	}
	if summary.TenantCount != 2 || summary.TotalCost != sum {
		t.Errorf("the cost centres add up to %s; the brand's summary says %+v", sum, summary)
	}
	if first, second := h.get(chargebackPath, admin), h.get(chargebackPath, admin); string(first.body) != string(second.body) {
		t.Errorf("the chargeback changed between two reads:\n%s\n%s", first.body, second.body)
	}

	csvAnswer := h.get(chargebackPath+"&format=csv", admin)
	records, err := csv.NewReader(strings.NewReader(string(csvAnswer.body))).ReadAll()
	if err != nil || csvAnswer.status != http.StatusOK || len(records) != 6 || strings.Join(records[1], ",") != acme+",Data,USD,0.00,50.01,50.01" ||
		strings.Join(records[5], ",") != acme+",Unallocated,USD,11.10,0.00,11.10" {
		t.Errorf("csv: %d %v %v", csvAnswer.status, records, err)
	}

	// Acme Prod's user reads the brand as Acme Prod alone.
	if r := h.get(chargebackPath, prodUser); r.status != http.StatusOK {
		t.Errorf("Acme Prod's user: %d %s", r.status, r.body)
	} else {
		r.json(t, &report)
		if !slices.Equal(report.CostCentres, []centreCost{
			{"Data", "USD", 0, 5001, 5001},
			{"Marketing", "USD", 4000, 0, 4000},
			{"Platform", "USD", 0, 5000, 5000},
			{"Sales", "USD", 2550, 0, 2550},
			{"Unallocated", "USD", 333, 0, 333},
		}) || len(report.TenantIDs) != 1 {
			t.Errorf("Acme Prod's user: %+v", report)
		}
	}
	if r := h.get(rulesPath, prodUser); r.status != http.StatusOK || !strings.Contains(string(r.body), `"tag_key":"costcenter"`) {
		t.Errorf("Acme Prod's user reads the rules: %d %s", r.status, r.body)
	}
	for _, path := range []string{rulesPath, chargebackPath} {
		if r := h.get(path, otherUser); r.status != http.StatusNotFound || strings.Contains(string(r.body), "Acme") {
			t.Errorf("Other Co's user, %s: %d %s", path, r.status, r.body)
		}
	}

	// The cost page of the brand shows its costs by cost centre, with the
	// form that downloads them.
	page := h.do(http.MethodGet, "/costs?brand_id="+acme, prodUser, nil, "HX-Request", "true")
	if page.status != http.StatusOK || !strings.Contains(string(page.body), "Chargeback by cost centre") ||
		!strings.Contains(string(page.body), `<input type="hidden" name="brand_id" value="`+acme+`">`) {
		t.Errorf("the cost page of brand Acme: %d %s", page.status, page.body)
	}

	expectInvalid(t, h.get("/api/v1/costs/allocation/chargeback?start_date="+day+"&end_date="+day, admin), "query.brand_id")
	expectInvalid(t, h.get("/api/v1/costs/allocation/rules", admin), "query.brand_id")
	bad := put(`{"rules": [{"kind": "subscription", "subscription_id": "x", "cost_centre": "Ops"},
		{"kind": "subscription", "subscription_id": "y", "shared": {"split": "fixed", "cost_centres": [{"name": "A", "percent": 50}, {"name": "B", "percent": 49.99}]}},
		{"kind": "tag", "tag_value": "x", "cost_centre": "Unallocated"}]}`, admin)
	expectInvalid(t, bad, "body.rules[1].shared.cost_centres")
	expectInvalid(t, bad, "body.rules[2].tag_key")
	expectInvalid(t, bad, "body.rules[2].cost_centre")
	expectInvalid(t, put(`{"rules": [{"kind": "region", "cost_centre": "A"}]}`, admin), "body.rules[0].kind")
	if r := h.get(chargebackPath, admin); r.status != http.StatusOK {
		t.Errorf("after refused rule sets: %d %s", r.status, r.body)
	} else if r.json(t, &report); !slices.Equal(report.CostCentres, want) {
		t.Errorf("after refused rule sets: %+v, want the rules as they were", report.CostCentres)
	}
}
