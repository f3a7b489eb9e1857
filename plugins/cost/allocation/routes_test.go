package allocation_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	brand      = "0b0b0b0b-0000-4000-8000-000000000001"
	rulesPath  = "/api/v1/costs/allocation/rules?brand_id=" + brand
	chargeback = "/api/v1/costs/allocation/chargeback?brand_id=" + brand + "&start_date=2026-11-01&end_date=2026-11-02"
)

var (
	admin = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{"t1", "t2"}}
	user  = sdk.Principal{ID: "u1", Kind: "user", TenantIDs: []string{"t1", "t2"}}
	nov1  = mustDay("2026-11-01")
)

func mustDay(s string) ledger.Day {
	d, err := ledger.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

// fixture is the allocation routes served through the plugin protocol
// on a real database of one dialect, holding a ledger of two tenants.
type fixture struct {
	h *plugintest.Harness
}

// resource is a resource's cost on 2026-11-01 and 2026-11-02 (actual, and
// amortised twice as much) and its tags.
type resource struct {
	tenant, sub, group, id string
	cost                   ledger.Amount
	tags                   map[string]string
}

// resources: t1's shared subscription s1 (1.01 a day, split 50/50 by the
// rules), t1's s2 with a marketing-tagged and an untagged resource, t2's
// s3 whose resources name their cost centre in costcenter, and a cost of
// no resource.
var resources = []resource{
	{"t1", "s1", "rg-shared", "r1", 101, nil},
	{"t1", "s2", "rg-app", "r2", 250, map[string]string{"costcenter": "marketing"}},
	{"t1", "s2", "rg-app", "r3", 33, nil},
	{"t2", "s3", "rg-data", "r4", 400, map[string]string{"costcenter": "Research"}},
	{"t2", "s3", "rg-data", "r5", 17, map[string]string{"costcenter": "marketing"}},
	{"t2", "s3", "", "", 9, nil},
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	ctx := context.Background()
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	if dialect == store.DialectPostgres {
		dbURL = storetest.PostgresURL(t)
	}
	handlers := &allocation.Handlers{Now: func() time.Time { return time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC) }}
	p := func(ctx context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
		handlers.Store, handlers.Host = &allocation.Store{DB: db}, env.Host
		return &sdk.Plugin{Routes: handlers.Routes()}, err
	}
	h := plugintest.New(t, sdk.Definition{Name: "cost", Migrations: ledger.Migrations()}, p, plugintest.Options{DatabaseURL: dbURL,
		Tenants: []sdk.Tenant{{ID: "t1", Name: "One", IsActive: true}, {ID: "t2", Name: "Two", IsActive: true}},
		Migrate: func(ctx context.Context, migrations fs.FS) error {
			db, err := store.Open(ctx, dbURL, store.Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = store.Migrate(ctx, db, migrations, "plugin_cost_migrations")
			return err
		}})
	db, err := store.Open(ctx, dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var costs []ledger.Cost
	var days []ledger.ResourceDay
	var tags []ledger.ResourceTag
	for _, r := range resources {
		for _, d := range []ledger.Day{nov1, nov1 + 1} {
			costs = append(costs, ledger.Cost{SubscriptionID: r.sub, Day: d, Service: "VM", ResourceGroup: r.group + r.id, Currency: "USD", TenantID: r.tenant,
				Cost: r.cost, Amortized: 2 * r.cost})
			days = append(days, ledger.ResourceDay{SubscriptionID: r.sub, Day: d, ResourceID: r.id, Service: "VM", Currency: "USD", TenantID: r.tenant,
				ResourceGroup: r.group, Month: d.Month(), Cost: r.cost, Amortized: 2 * r.cost})
		}
		for k, v := range r.tags {
			tags = append(tags, ledger.ResourceTag{SubscriptionID: r.sub, ResourceID: r.id, Key: k, Value: v, TenantID: r.tenant})
		}
	}
	// A cost the ledger holds without its resources: 0.05 of t1's s2 on
	// 2026-11-02, and one outside the range.
	costs = append(costs, ledger.Cost{SubscriptionID: "s2", Day: nov1 + 1, Service: "Support", Currency: "USD", TenantID: "t1", Cost: 5, Amortized: 5},
		ledger.Cost{SubscriptionID: "s2", Day: nov1 + 2, Service: "VM", Currency: "USD", TenantID: "t1", Cost: 1000, Amortized: 1000})
	led := &ledger.Store{DB: db}
	if err := led.Upsert(ctx, costs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewInsert().Model(&days).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewInsert().Model(&tags).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []string{"t1", "t2"} {
		if err := led.Rollup(ctx, tn, nov1, nov1+2); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{h: h}
}

func (f *fixture) do(t *testing.T, method, path string, body any, who sdk.Principal) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := f.h.Do(req, who)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// theRules are the fixture's: s1 shared 50/50 by Platform and Data, the
// marketing tag to Marketing, then every costcenter value its own.
var theRules = map[string]any{"rules": []map[string]any{
	{"kind": "subscription", "subscription_id": "S1", "shared": map[string]any{"split": "fixed",
		"cost_centres": []map[string]any{{"name": "Platform", "percent": 50}, {"name": "Data", "percent": 50}}}},
	{"kind": "tag", "tag_key": "CostCenter", "tag_value": "marketing", "cost_centre": "Marketing"},
	{"kind": "cost_centre_tag", "tag_key": "costcenter"},
}}

type chargebackJSON struct {
	BrandID     string                  `json:"brand_id"`
	TenantIDs   []string                `json:"tenant_ids"`
	Days        int                     `json:"days"`
	Metric      string                  `json:"metric"`
	CostCentres []allocation.CentreCost `json:"cost_centres"`
	Totals      []struct {
		Currency  string        `json:"currency"`
		TotalCost ledger.Amount `json:"total_cost"`
	} `json:"totals"`
}

type rulesJSON struct {
	BrandID   string            `json:"brand_id"`
	Rules     []allocation.Rule `json:"rules"`
	UpdatedBy *string           `json:"updated_by"`
	UpdatedAt *time.Time        `json:"updated_at"`
}

func TestRulesAndChargeback(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			status, body := f.do(t, http.MethodGet, rulesPath, nil, user)
			var rules rulesJSON
			if err := json.Unmarshal(body, &rules); status != http.StatusOK || err != nil || len(rules.Rules) != 0 || rules.UpdatedAt != nil || rules.BrandID != brand {
				t.Fatalf("no rules: %d %s", status, body)
			}
			var cb chargebackJSON
			status, body = f.do(t, http.MethodGet, chargeback, nil, user)
			if err := json.Unmarshal(body, &cb); status != http.StatusOK || err != nil || len(cb.CostCentres) != 1 ||
				cb.CostCentres[0] != (allocation.CentreCost{CostCentre: "Unallocated", Currency: "USD", DirectCost: 1625, TotalCost: 1625}) {
				t.Fatalf("without rules: %d %s", status, body)
			}

			if status, body = f.do(t, http.MethodPut, rulesPath, theRules, user); status != http.StatusForbidden {
				t.Errorf("a user's PUT: %d %s", status, body)
			}
			status, body = f.do(t, http.MethodPut, rulesPath, theRules, admin)
			if err := json.Unmarshal(body, &rules); status != http.StatusOK || err != nil || len(rules.Rules) != 3 || rules.Rules[1].TagKey != "costcenter" ||
				*rules.Rules[0].Shared.CostCentres[0].Percent != 50 || rules.UpdatedBy == nil || *rules.UpdatedBy != "admin" {
				t.Fatalf("PUT: %d %s", status, body)
			}
			audit := f.h.AuditEntries()
			if len(audit) != 1 || audit[0].Action != "cost_allocation.replace.success" || audit[0].ResourceID != brand {
				t.Errorf("audit %+v", audit)
			}

			// Two days: s1 2.02 shared, 1.01 each; marketing 5.00 + 0.34;
			// Research 8.00; r3's 0.66, the cost of no resource 0.18 and
			// the ledger's 0.05 without a resource Unallocated.
			want := []allocation.CentreCost{
				{CostCentre: "Data", Currency: "USD", SharedCost: 101, TotalCost: 101},
				{CostCentre: "Marketing", Currency: "USD", DirectCost: 534, TotalCost: 534},
				{CostCentre: "Platform", Currency: "USD", SharedCost: 101, TotalCost: 101},
				{CostCentre: "Research", Currency: "USD", DirectCost: 800, TotalCost: 800},
				{CostCentre: "Unallocated", Currency: "USD", DirectCost: 89, TotalCost: 89},
			}
			status, body = f.do(t, http.MethodGet, chargeback, nil, user)
			if err := json.Unmarshal(body, &cb); status != http.StatusOK || err != nil || !slices.Equal(cb.CostCentres, want) ||
				len(cb.Totals) != 1 || cb.Totals[0].TotalCost != 1625 || !slices.Equal(cb.TenantIDs, []string{"t1", "t2"}) || cb.Days != 2 {
				t.Errorf("chargeback: %d %s", status, body)
			}
			// One day of s1 is 1.01: 0.51 to Data, first by name.
			status, body = f.do(t, http.MethodGet, strings.Replace(chargeback, "end_date=2026-11-02", "end_date=2026-11-01", 1)+"&tenant_ids=t1", nil, user)
			if err := json.Unmarshal(body, &cb); status != http.StatusOK || err != nil || !slices.Equal(cb.CostCentres, []allocation.CentreCost{
				{CostCentre: "Data", Currency: "USD", SharedCost: 51, TotalCost: 51},
				{CostCentre: "Marketing", Currency: "USD", DirectCost: 250, TotalCost: 250},
				{CostCentre: "Platform", Currency: "USD", SharedCost: 50, TotalCost: 50},
				{CostCentre: "Unallocated", Currency: "USD", DirectCost: 33, TotalCost: 33},
			}) {
				t.Errorf("one day of t1: %d %s", status, body)
			}
			status, body = f.do(t, http.MethodGet, chargeback+"&metric=amortized", nil, user)
			if err := json.Unmarshal(body, &cb); status != http.StatusOK || err != nil || cb.Totals[0].TotalCost != 3245 || cb.CostCentres[0].TotalCost != 202 {
				t.Errorf("amortized: %d %s", status, body)
			}

			resp := f.h.Do(httptest.NewRequest(http.MethodGet, chargeback+"&format=csv", nil), user)
			records, err := csv.NewReader(resp.Body).ReadAll()
			if err != nil || resp.StatusCode != http.StatusOK || len(records) != 6 ||
				strings.Join(records[0], ",") != "brand_id,cost_centre,currency,direct_cost,shared_cost,total_cost" ||
				strings.Join(records[1], ",") != brand+",Data,USD,0.00,1.01,1.01" || records[5][1] != "Unallocated" ||
				!strings.Contains(resp.Header.Get("Content-Disposition"), "chargeback-"+brand+"-2026-11-01-2026-11-02.csv") {
				t.Errorf("csv: %d %v %v", resp.StatusCode, records, err)
			}

			// A bad set changes nothing.
			bad := map[string]any{"rules": []map[string]any{
				{"kind": "subscription", "subscription_id": "s1", "cost_centre": "Ops"},
				{"kind": "subscription", "subscription_id": "s2", "shared": map[string]any{"split": "fixed",
					"cost_centres": []map[string]any{{"name": "A", "percent": 50}, {"name": "B", "percent": 49.99}}}},
				{"kind": "tag", "tag_value": "x", "cost_centre": "Unallocated"},
			}}
			status, body = f.do(t, http.MethodPut, rulesPath, bad, admin)
			var prob sdk.Problem
			_ = json.Unmarshal(body, &prob)
			var locations []string
			for _, e := range prob.Errors {
				locations = append(locations, e.Location)
			}
			if status != http.StatusUnprocessableEntity || !slices.Equal(locations,
				[]string{"body.rules[1].shared.cost_centres", "body.rules[2].tag_key", "body.rules[2].cost_centre"}) {
				t.Errorf("a bad set: %d %s", status, body)
			}
			status, body = f.do(t, http.MethodPut, rulesPath, map[string]any{"rules": []map[string]any{{"kind": "region", "cost_centre": "A"}}}, admin)
			if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "body.rules[0].kind") {
				t.Errorf("an unknown kind: %d %s", status, body)
			}
			status, body = f.do(t, http.MethodGet, rulesPath, nil, user)
			if err := json.Unmarshal(body, &rules); status != http.StatusOK || err != nil || len(rules.Rules) != 3 || rules.Rules[0].SubscriptionID != "S1" {
				t.Errorf("after refused sets: %d %s", status, body)
			}
			if len(f.h.AuditEntries()) != 1 {
				t.Errorf("a refused set was audited: %+v", f.h.AuditEntries())
			}

			for _, q := range []struct{ path, location string }{
				{"/api/v1/costs/allocation/rules", "query.brand_id"},
				{"/api/v1/costs/allocation/rules?brand_id=nope", "query.brand_id"},
				{"/api/v1/costs/allocation/chargeback?start_date=2026-11-01&end_date=2026-11-02", "query.brand_id"},
				{"/api/v1/costs/allocation/chargeback?brand_id=" + brand + "&end_date=2026-11-02", "query.start_date"},
				{"/api/v1/costs/allocation/chargeback?brand_id=" + brand + "&start_date=2026-11-03&end_date=2026-11-02", "query.start_date"},
			} {
				if status, body := f.do(t, http.MethodGet, q.path, nil, user); status != http.StatusUnprocessableEntity || !strings.Contains(string(body), q.location) {
					t.Errorf("GET %s: %d %s, want 422 naming %s", q.path, status, body, q.location)
				}
			}
			if status, _ := f.do(t, http.MethodGet, chargeback+"&tenant_ids=t3", nil, user); status != http.StatusForbidden {
				t.Errorf("another tenant: %d", status)
			}

			status, body = f.do(t, http.MethodPut, rulesPath, map[string]any{"rules": []any{}}, admin)
			if err := json.Unmarshal(body, &rules); status != http.StatusOK || err != nil || len(rules.Rules) != 0 {
				t.Errorf("emptied: %d %s", status, body)
			}
		})
	}
}
