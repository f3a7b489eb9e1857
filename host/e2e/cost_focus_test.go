package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestFocusExportThroughTheHost: the FOCUS export of costs synced from the
// cloud, through the host, as CSV and as Parquet: its BilledCost and
// EffectiveCost add up, per currency, to the summary's actual and
// amortised totals, one row per resource row of the ledger, with the
// resources' tags; another tenant's user is refused that tenant and sees
// none of its rows. Every response is checked against the OpenAPI
// document.
func TestFocusExportThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testFocusExport(t, dialect) })
	}
}

func testFocusExport(t *testing.T, dialect string) {
	const subA, subB = "aaaaaaaa-0000-0000-0000-0000000f0c05", "bbbbbbbb-0000-0000-0000-0000000f0c05"
	today := time.Now().UTC()
	vm := "/subscriptions/" + subA + "/resourceGroups/rg-app/providers/Microsoft.Compute/virtualMachines/vm-app-1"
	sa := "/subscriptions/" + subB + "/resourceGroups/rg-data/providers/Microsoft.Storage/storageAccounts/sadata"
	covered, unused, zero := 2.5, 0.5, 0.0
	var costs []world.Cost
	// Brand A pays in USD: a virtual machine, then a reservation bought
	// on day -4 that covers it (amortised) with an unused part; Brand B
	// pays in EUR for a storage account and a line of no resource.
	for d := -9; d <= 0; d++ {
		date := today.AddDate(0, 0, d).Format(time.DateOnly)
		costs = append(costs,
			world.Cost{SubscriptionID: subB, Date: date, Service: "Storage", ResourceGroup: "rg-data", ResourceID: sa, Cost: 4.25, Currency: "EUR"},
			world.Cost{SubscriptionID: subB, Date: date, Service: "Bandwidth", ResourceGroup: "rg-network", Cost: 0.13, Currency: "EUR"})
		if d < -4 {
			costs = append(costs, world.Cost{SubscriptionID: subA, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-app", ResourceID: vm, Cost: 3, Currency: "USD"})
			continue
		}
		costs = append(costs,
			world.Cost{SubscriptionID: subA, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-app", ResourceID: vm, Cost: 0, AmortizedCost: &covered, Currency: "USD"},
			world.Cost{SubscriptionID: subA, Date: date, Service: "Virtual Machines", Cost: 0, AmortizedCost: &unused, Currency: "USD"})
		if d == -4 {
			costs = append(costs, world.Cost{SubscriptionID: subA, Date: date, Service: "Virtual Machines", Cost: 1095, AmortizedCost: &zero, Currency: "USD"})
		}
	}
	path := writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand A", DirectoryTenantID: "11111111-1111-1111-1111-1111111f0c05", Delegated: true,
				Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}},
			{Name: "Brand B", DirectoryTenantID: "22222222-2222-2222-2222-2222222f0c05", Delegated: true,
				Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
		},
		Resources: []world.Resource{
			{SubscriptionID: subA, ID: vm, Name: "vm-app-1", Type: "Microsoft.Compute/virtualMachines", Location: "westeurope",
				Tags: map[string]string{"Env": "prod", "Cost Center": "CC-42"}},
			{SubscriptionID: subB, ID: sa, Name: "sadata", Type: "Microsoft.Storage/storageAccounts", Location: "westeurope"},
		},
		Costs: costs,
	})
	o := hostOpts{pluginsHCL: costPlugins("    backfill_days = 10"),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "costs")
	ids := h.tenantIDs(t, admin)
	a, b := ids["Brand A"], ids["Brand B"]
	if a == "" || b == "" {
		t.Fatalf("world tenants registered as %v", ids)
	}

	first, last := ledger.DayOf(today)-9, ledger.DayOf(today)
	q := fmt.Sprintf("start_date=%s&end_date=%s", first, last)
	ledgerRows := func(tenants ...string) int {
		t.Helper()
		var n int
		if err := h.pluginDB("cost").NewRaw("SELECT COUNT(*) FROM cost_resource_daily WHERE tenant_id IN (?) AND day BETWEEN ? AND ?",
			bun.List(tenants), first, last).Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The admin's export of both tenants against the summary's totals.
	want := map[string]map[string]ledger.Amount{}
	for _, m := range []string{"actual", "amortized"} {
		var s struct {
			Totals []struct {
				Currency  string        `json:"currency"`
				TotalCost ledger.Amount `json:"total_cost"`
			} `json:"totals"`
		}
		h.get("/api/v1/costs/summary?metric="+m+"&"+q, admin).json(t, &s)
		want[m] = map[string]ledger.Amount{}
		for _, tot := range s.Totals {
			want[m][tot.Currency] = tot.TotalCost
		}
	}
	if want["actual"]["USD"] != 5*300+109500 || want["amortized"]["USD"] != 5*300+5*300 || want["actual"]["EUR"] != 10*438 {
		t.Fatalf("summary totals %v", want)
	}
	r := h.get("/api/v1/costs/focus?"+q, admin)
	if r.status != http.StatusOK || r.header.Get("Content-Disposition") != fmt.Sprintf(`attachment; filename="focus-%s-%s.csv"`, first, last) {
		t.Fatalf("focus csv: %d %v %s", r.status, r.header, r.body)
	}
	rows := focusCSV(t, r.body)
	if len(rows) != ledgerRows(a, b) {
		t.Errorf("focus csv: %d rows, the ledger %d", len(rows), ledgerRows(a, b))
	}
	sameFocusTotals(t, "csv", rows, want)
	var tagged bool
	for _, row := range rows {
		if row["ResourceId"] == strings.ToLower(vm) {
			tagged = true
			if row["Tags"] != `{"cost center":"CC-42","env":"prod"}` || row["ResourceName"] != "vm-app-1" || row["ServiceCategory"] != "Compute" ||
				row["SubAccountId"] != "/subscriptions/"+subA || row["BillingAccountId"] != a || row["BillingAccountName"] != "Brand A" {
				t.Errorf("the virtual machine's row: %v", row)
			}
		}
	}
	if !tagged {
		t.Errorf("no row of the virtual machine among %d", len(rows))
	}

	// The same as Parquet.
	r = h.get("/api/v1/costs/focus?format=parquet&"+q, admin)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/vnd.apache.parquet" ||
		r.header.Get("Content-Disposition") != fmt.Sprintf(`attachment; filename="focus-%s-%s.parquet"`, first, last) {
		t.Fatalf("focus parquet: %d %v %.200s", r.status, r.header, r.body)
	}
	prows := focusParquet(t, r.body)
	if len(prows) != len(rows) {
		t.Errorf("focus parquet: %d rows, csv %d", len(prows), len(rows))
	}
	sameFocusTotals(t, "parquet", prows, want)

	// Brand A's user: Brand B is refused without a trace of it, and its
	// own export holds Brand A's rows only.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-focus-a", Email: "focus-a@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	for _, path := range []string{"/api/v1/costs/focus?tenant_ids=" + b + "&" + q, "/api/v1/costs/focus?format=parquet&tenant_ids=" + a + "," + b + "&" + q} {
		r := h.get(path, tokA)
		if r.status != http.StatusForbidden || bytes.Contains(r.body, []byte("Brand B")) || bytes.Contains(r.body, []byte(b)) || bytes.Contains(r.body, []byte(subB)) {
			t.Errorf("%s as Brand A's user: %d %s", path, r.status, r.body)
		}
		expectUnauthorized(t, path+" anonymous", h.get(path, ""))
	}
	rows = focusCSV(t, h.get("/api/v1/costs/focus?"+q, tokA).body)
	if len(rows) != ledgerRows(a) {
		t.Errorf("Brand A's user's export: %d rows, Brand A's ledger %d", len(rows), ledgerRows(a))
	}
	for _, row := range rows {
		if row["BillingAccountId"] != a || row["BillingCurrency"] != "USD" {
			t.Fatalf("Brand A's user's export holds %v", row)
		}
	}

	// Bounds: 422 naming the parameter.
	expectInvalid(t, h.get("/api/v1/costs/focus?format=xlsx&"+q, admin), "query.format")
	expectInvalid(t, h.get("/api/v1/costs/focus?end_date="+last.String(), admin), "query.start_date")
	expectInvalid(t, h.get(fmt.Sprintf("/api/v1/costs/focus?start_date=%s&end_date=%s", last-366, last), admin), "query.start_date")
}

// focusCSV reads the export's CSV into one map per row, column → cell.
func focusCSV(t *testing.T, body []byte) []map[string]string {
	t.Helper()
	records, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil || len(records) == 0 {
		t.Fatalf("focus csv: %v in %.200s", err, body)
	}
	var out []map[string]string
	for _, rec := range records[1:] {
		row := map[string]string{}
		for i, c := range records[0] {
			row[c] = rec[i]
		}
		out = append(out, row)
	}
	return out
}

// focusParquet reads the export's Parquet file into one map per row,
// column → value as the CSV writes it: decimals of the DECIMAL(18,2)
// columns with two places, strings as they are.
func focusParquet(t *testing.T, body []byte) []map[string]string {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	decimal := map[int]bool{}
	for i, el := range f.Metadata().Schema[1:] {
		names = append(names, el.Name)
		decimal[i] = el.LogicalType.String() == "DECIMAL(18,2)"
	}
	var out []map[string]string
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 64)
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				m := map[string]string{}
				for _, v := range row {
					switch {
					case v.IsNull():
					case decimal[v.Column()]:
						m[names[v.Column()]] = ledger.Amount(v.Int64()).String()
					case v.Kind() == parquet.ByteArray:
						m[names[v.Column()]] = string(v.ByteArray())
					default:
						m[names[v.Column()]] = strconv.FormatInt(v.Int64(), 10)
					}
				}
				out = append(out, m)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

// sameFocusTotals requires the sums of BilledCost and EffectiveCost per
// currency to be the actual and amortised totals.
func sameFocusTotals(t *testing.T, what string, rows []map[string]string, want map[string]map[string]ledger.Amount) {
	t.Helper()
	got := map[string]map[string]ledger.Amount{"actual": {}, "amortized": {}}
	for _, row := range rows {
		for m, col := range map[string]string{"actual": "BilledCost", "amortized": "EffectiveCost"} {
			var v ledger.Amount
			if err := json.Unmarshal([]byte(row[col]), &v); err != nil {
				t.Fatalf("%s %s %q: %v", what, col, row[col], err)
			}
			got[m][row["BillingCurrency"]] += v
		}
	}
	for _, m := range []string{"actual", "amortized"} {
		if !maps.Equal(got[m], want[m]) {
			t.Errorf("%s: %s totals %v, the summary's %v", what, m, got[m], want[m])
		}
	}
}
