package arm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

func queryPath(sub string) string {
	return "/subscriptions/" + sub + "/providers/Microsoft.CostManagement/query?api-version=2022-10-01"
}

func dailyQuery(from, to string, groupings ...string) map[string]any {
	var grouping []any
	for _, g := range groupings {
		grouping = append(grouping, map[string]any{"type": "Dimension", "name": g})
	}
	return map[string]any{
		"type": "ActualCost", "timeframe": "Custom",
		"timePeriod": map[string]any{"from": from + "T00:00:00Z", "to": to + "T23:59:59Z"},
		"dataset": map[string]any{
			"granularity": "Daily",
			"aggregation": map[string]any{"totalCost": map[string]any{"name": "PreTaxCost", "function": "Sum"}},
			"grouping":    grouping,
		},
	}
}

// result is a query answer read by column name.
type result struct {
	columns []string
	rows    []map[string]any
	next    string
}

func readResult(t *testing.T, body map[string]any) result {
	t.Helper()
	props, ok := body["properties"].(map[string]any)
	if !ok {
		t.Fatalf("no properties: %v", body)
	}
	var r result
	for _, c := range props["columns"].([]any) {
		r.columns = append(r.columns, c.(map[string]any)["name"].(string))
	}
	for _, row := range props["rows"].([]any) {
		cells := row.([]any)
		m := map[string]any{}
		for i, name := range r.columns {
			m[name] = cells[i]
		}
		r.rows = append(r.rows, m)
	}
	r.next, _ = props["nextLink"].(string)
	return r
}

func TestCostQueryShape(t *testing.T) {
	e := start(t)
	resp, body := e.do("POST", queryPath(subA), dailyQuery("2026-10-01", "2026-10-10", "ServiceName", "ResourceGroupName"))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	id, _ := body["id"].(string)
	if body["type"] != "Microsoft.CostManagement/query" || !strings.HasPrefix(id, "subscriptions/"+subA+"/providers/Microsoft.CostManagement/query/") ||
		!strings.HasSuffix(id, body["name"].(string)) {
		t.Fatalf("envelope %v", body)
	}
	r := readResult(t, body)
	if got := strings.Join(r.columns, ","); got != "ResourceGroupName,ServiceName,Currency,PreTaxCost,UsageDate" {
		t.Fatalf("columns %s", got)
	}
	if len(r.rows) != 60 || r.next != "" {
		t.Fatalf("%d rows, next %q", len(r.rows), r.next)
	}
	found := false
	for _, row := range r.rows {
		if row["UsageDate"] == 20261003.0 && row["ServiceName"] == "Storage" && row["ResourceGroupName"] == "rg-data" {
			found = row["PreTaxCost"] == 31.0 && row["Currency"] == "USD"
		}
	}
	if !found {
		t.Fatalf("no row for Storage in rg-data on 3 October costing 31 USD: %v", r.rows)
	}
}

func TestCostQueryPagesWithSkipToken(t *testing.T) {
	e := start(t, arm.WithCostPageSize(7))
	q := dailyQuery("2026-10-01", "2026-10-10", "ServiceName", "ResourceGroupName")
	seen := map[string]bool{}
	pages := 0
	for link := e.sim.URLs[cloudsim.ARM] + queryPath(subA); link != ""; pages++ {
		resp, body := e.do("POST", link, q)
		if resp.StatusCode != 200 {
			t.Fatalf("page %d: %d %v", pages, resp.StatusCode, body)
		}
		r := readResult(t, body)
		for _, row := range r.rows {
			k := fmt.Sprint(row["UsageDate"], row["ServiceName"], row["ResourceGroupName"])
			if seen[k] {
				t.Fatalf("row %s twice", k)
			}
			seen[k] = true
		}
		if r.next != "" && (!strings.Contains(r.next, "skiptoken") || !strings.Contains(r.next, "api-version=2022-10-01")) {
			t.Fatalf("nextLink %q", r.next)
		}
		link = r.next
	}
	if len(seen) != 60 || pages != 9 {
		t.Fatalf("%d rows in %d pages, want 60 in 9", len(seen), pages)
	}
	if resp, body := e.do("POST", queryPath(subA)+"&$skiptoken=bogus", q); resp.StatusCode != 400 || errorCode(body) != "BadRequest" {
		t.Fatalf("bad skiptoken: %d %v", resp.StatusCode, body)
	}
}

func TestCostQueryAggregates(t *testing.T) {
	e := start(t)
	// Without granularity, the period sums into one row per group.
	q := dailyQuery("2026-10-01", "2026-10-10", "ResourceGroup")
	ds := q["dataset"].(map[string]any)
	delete(ds, "granularity")
	ds["aggregation"] = map[string]any{
		"totalCost":  map[string]any{"name": "Cost", "function": "Sum"},
		"preTaxCost": map[string]any{"name": "PreTaxCost", "function": "Sum"},
	}
	_, body := e.do("POST", queryPath(subA), q)
	r := readResult(t, body)
	if strings.Contains(strings.Join(r.columns, ","), "UsageDate") || len(r.rows) != 2 {
		t.Fatalf("columns %v rows %v", r.columns, r.rows)
	}
	// Each resource group: days 1..10, services 0..2 cost 10d+i.
	want := 0.0
	for d := 1; d <= 10; d++ {
		for i := 0; i < 3; i++ {
			want += float64(d*10 + i)
		}
	}
	for _, row := range r.rows {
		if row["Cost"] != want || row["PreTaxCost"] != want {
			t.Fatalf("row %v, want %v", row, want)
		}
	}

	// Daily without grouping: one row a day.
	_, body = e.do("POST", queryPath(subA), dailyQuery("2026-10-01", "2026-10-10"))
	if r := readResult(t, body); len(r.rows) != 10 || r.rows[0]["PreTaxCost"] != 2*(10.0+11+12) {
		t.Fatalf("daily totals %v", r.rows)
	}

	// Timeframes run on the simulator's clock: 15 October.
	q = dailyQuery("", "", "ServiceName")
	delete(q, "timePeriod")
	q["timeframe"] = "MonthToDate"
	if _, body = e.do("POST", queryPath(subA), q); len(readResult(t, body).rows) != 30 {
		t.Fatalf("month to date: %v", body)
	}
	q["timeframe"] = "TheLastMonth"
	if resp, _ := e.do("POST", queryPath(subA), q); resp.StatusCode != 204 {
		t.Fatalf("last month, without costs: %d, want 204", resp.StatusCode)
	}
	if resp, _ := e.do("POST", queryPath(subB), dailyQuery("2026-10-02", "2026-10-31")); resp.StatusCode != 204 {
		t.Fatalf("range without costs: %d, want 204", resp.StatusCode)
	}
}

func TestCostQueryRejects(t *testing.T) {
	e := start(t)
	for name, mutate := range map[string]func(q map[string]any){
		"unknown type":          func(q map[string]any) { q["type"] = "Forecast" },
		"custom without period": func(q map[string]any) { delete(q, "timePeriod") },
		"period over a year": func(q map[string]any) {
			q["timePeriod"] = map[string]any{"from": "2025-10-01T00:00:00Z", "to": "2026-10-01T00:00:00Z"}
		},
		"period backwards": func(q map[string]any) {
			q["timePeriod"] = map[string]any{"from": "2026-10-02T00:00:00Z", "to": "2026-10-01T00:00:00Z"}
		},
		"monthly granularity": func(q map[string]any) { q["dataset"].(map[string]any)["granularity"] = "Monthly" },
		"filter": func(q map[string]any) {
			q["dataset"].(map[string]any)["filter"] = map[string]any{"dimensions": map[string]any{"name": "ResourceGroup", "operator": "In", "values": []string{"rg-web"}}}
		},
		"tag grouping": func(q map[string]any) {
			q["dataset"].(map[string]any)["grouping"] = []any{map[string]any{"type": "TagKey", "name": "env"}}
		},
		"unknown dimension": func(q map[string]any) {
			q["dataset"].(map[string]any)["grouping"] = []any{map[string]any{"type": "Dimension", "name": "MeterCategory"}}
		},
		"three groupings": func(q map[string]any) {
			g := map[string]any{"type": "Dimension", "name": "ServiceName"}
			q["dataset"].(map[string]any)["grouping"] = []any{g, g, g}
		},
		"average": func(q map[string]any) {
			q["dataset"].(map[string]any)["aggregation"] = map[string]any{"avg": map[string]any{"name": "Cost", "function": "Avg"}}
		},
	} {
		q := dailyQuery("2026-10-01", "2026-10-10", "ServiceName")
		mutate(q)
		if resp, body := e.do("POST", queryPath(subA), q); resp.StatusCode != 400 || errorCode(body) != "BadRequest" {
			t.Errorf("%s: %d %v", name, resp.StatusCode, body)
		}
	}
	// A full leap-free year is within the limit.
	if resp, _ := e.do("POST", queryPath(subA), dailyQuery("2025-10-11", "2026-10-10")); resp.StatusCode != 200 {
		t.Errorf("a year: %d", resp.StatusCode)
	}
	if resp, body := e.do("POST", queryPath("nope"), dailyQuery("2026-10-01", "2026-10-10")); resp.StatusCode != 404 || errorCode(body) != "SubscriptionNotFound" {
		t.Errorf("unknown subscription: %d %v", resp.StatusCode, body)
	}
}

func TestCostQueryColumnOrderOption(t *testing.T) {
	e := start(t, arm.WithCostColumnOrder("UsageDate", "PreTaxCost"))
	_, body := e.do("POST", queryPath(subA), dailyQuery("2026-10-01", "2026-10-01", "ServiceName", "ResourceGroupName"))
	if got := strings.Join(readResult(t, body).columns, ","); got != "UsageDate,PreTaxCost,ResourceGroupName,ServiceName,Currency" {
		t.Fatalf("columns %s", got)
	}
}

func TestCostQueryGroupsByResourceID(t *testing.T) {
	disk := "/subscriptions/" + subA + "/resourceGroups/rg-web/providers/Microsoft.Compute/disks/Disk-1"
	ip := "/subscriptions/" + subA + "/resourceGroups/rg-web/providers/Microsoft.Network/publicIPAddresses/pip-1"
	w := testWorld()
	for d := 1; d <= 10; d++ {
		date := fmt.Sprintf("2026-10-%02d", d)
		w.Costs = append(w.Costs,
			world.Cost{SubscriptionID: subA, Date: date, Service: "Storage", ResourceGroup: "rg-web", ResourceID: disk, Cost: 1.25, Currency: "USD"},
			world.Cost{SubscriptionID: subA, Date: date, Service: "Virtual Network", ResourceGroup: "rg-web", ResourceID: ip, Cost: 0.5, Currency: "USD"})
	}
	// A resource's id in two spellings is one resource.
	w.Costs = append(w.Costs, world.Cost{SubscriptionID: subA, Date: "2026-10-10", Service: "Storage", ResourceGroup: "rg-web",
		ResourceID: strings.ToUpper(disk), Cost: 2, Currency: "USD"})
	e := startWorld(t, w)

	q := dailyQuery("2026-10-01", "2026-10-10", "ResourceId")
	delete(q["dataset"].(map[string]any), "granularity")
	resp, body := e.do("POST", queryPath(subA), q)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	r := readResult(t, body)
	if got := strings.Join(r.columns, ","); got != "ResourceId,Currency,PreTaxCost" {
		t.Fatalf("columns %s", got)
	}
	got := map[string]any{}
	for _, row := range r.rows {
		got[row["ResourceId"].(string)] = row["PreTaxCost"]
	}
	// The rows without a resource id: 10 days of 3 services in 2 groups
	// costing 10d+i.
	rest := 0.0
	for d := 1; d <= 10; d++ {
		rest += 2 * float64(3*d*10+0+1+2)
	}
	want := map[string]any{"": rest, strings.ToLower(disk): 14.5, strings.ToLower(ip): 5.0}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(r.rows) != 3 {
		t.Fatalf("costs by resource %v, want %v", got, want)
	}

	// With a daily granularity and another dimension, as the API allows.
	_, body = e.do("POST", queryPath(subA), dailyQuery("2026-10-10", "2026-10-10", "resourceid", "ServiceName"))
	r = readResult(t, body)
	found := false
	for _, row := range r.rows {
		if row["ResourceId"] == strings.ToLower(disk) {
			found = row["ServiceName"] == "Storage" && row["PreTaxCost"] == 3.25 && row["UsageDate"] == 20261010.0
		}
	}
	if !found || len(r.rows) != 5 {
		t.Fatalf("10 October by resource and service: %v", r.rows)
	}

	for _, grouping := range [][]string{{"ResourceId", "ResourceId"}, {"ResourceType"}} {
		if resp, body := e.do("POST", queryPath(subA), dailyQuery("2026-10-01", "2026-10-10", grouping...)); resp.StatusCode != 400 || errorCode(body) != "BadRequest" {
			t.Errorf("grouping by %v: %d %v", grouping, resp.StatusCode, body)
		}
	}
}

// TestCostQueryPagesOneBucket: a query without granularity is one bucket,
// the whole period, summed once and served page after page; a query of
// another grouping in between gets its own sums and leaves the pages
// right.
func TestCostQueryPagesOneBucket(t *testing.T) {
	w := testWorld()
	for d := 1; d <= 10; d++ {
		for i := 0; i < 5; i++ {
			w.Costs = append(w.Costs, world.Cost{SubscriptionID: subA, Date: fmt.Sprintf("2026-10-%02d", d), Service: "Storage", ResourceGroup: "rg-web",
				ResourceID: fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-web/providers/Microsoft.Compute/disks/disk-%d", subA, i), Cost: float64(i + 1), Currency: "USD"})
		}
	}
	e := startWorld(t, w, arm.WithCostPageSize(2))
	byResource := dailyQuery("2026-10-01", "2026-10-10", "ResourceId")
	delete(byResource["dataset"].(map[string]any), "granularity")
	byGroup := dailyQuery("2026-10-01", "2026-10-10", "ResourceGroup")
	delete(byGroup["dataset"].(map[string]any), "granularity")
	var got []string
	pages := 0
	for link := e.sim.URLs[cloudsim.ARM] + queryPath(subA); link != ""; pages++ {
		resp, body := e.do("POST", link, byResource)
		if resp.StatusCode != 200 {
			t.Fatalf("page %d: %d %v", pages, resp.StatusCode, body)
		}
		r := readResult(t, body)
		for _, row := range r.rows {
			got = append(got, fmt.Sprint(row["ResourceId"], "=", row["PreTaxCost"]))
		}
		link = r.next
		if _, body := e.do("POST", queryPath(subA), byGroup); len(readResult(t, body).rows) != 2 {
			t.Fatalf("the query by group in between: %v", body)
		}
	}
	want := []string{"=" + fmt.Sprint(2*(30*55+30))}
	for i := 0; i < 5; i++ {
		want = append(want, fmt.Sprintf("/subscriptions/%s/resourcegroups/rg-web/providers/microsoft.compute/disks/disk-%d=%d", subA, i, 10*(i+1)))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || pages != 3 {
		t.Fatalf("%d pages of %v, want 3 of %v", pages, got, want)
	}
}

// TestCostQueryAmortized: an ActualCost query sums each row's cost, an
// AmortizedCost query its amortised cost (its cost when it has none): a
// reservation bought on 2 October for 30.00 costs 30.00 that day as
// billed and nothing amortised, while the machine it covers costs
// nothing as billed and 1.00 a day amortised, with 0.25 a day unused.
func TestCostQueryAmortized(t *testing.T) {
	w := testWorld()
	zero, one, quarter := 0.0, 1.0, 0.25
	w.Costs = append(w.Costs, world.Cost{SubscriptionID: subB, Date: "2026-10-02", Service: "Virtual Machines", Cost: 30, AmortizedCost: &zero, Currency: "USD"})
	for d := 2; d <= 4; d++ {
		date := fmt.Sprintf("2026-10-%02d", d)
		w.Costs = append(w.Costs,
			world.Cost{SubscriptionID: subB, Date: date, Service: "Virtual Machines", ResourceGroup: "rg-x", ResourceID: "/subscriptions/" + subB + "/resourceGroups/rg-x/providers/Microsoft.Compute/virtualMachines/vm-1",
				Cost: 0, AmortizedCost: &one, Currency: "USD"},
			world.Cost{SubscriptionID: subB, Date: date, Service: "Virtual Machines", Cost: 0, AmortizedCost: &quarter, Currency: "USD"})
	}
	e := startWorld(t, w)
	sums := func(typ string) map[string]float64 {
		q := dailyQuery("2026-10-01", "2026-10-04", "ServiceName")
		q["type"] = typ
		resp, body := e.do("POST", queryPath(subB), q)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", typ, resp.StatusCode, body)
		}
		out := map[string]float64{}
		for _, row := range readResult(t, body).rows {
			out[fmt.Sprint(int(row["UsageDate"].(float64)), " ", row["ServiceName"])] += row["PreTaxCost"].(float64)
		}
		return out
	}
	actual, amortized := sums("ActualCost"), sums("AmortizedCost")
	if actual["20261002 Virtual Machines"] != 30 || actual["20261003 Virtual Machines"] != 0 || actual["20261001 Storage"] != 1 {
		t.Errorf("actual %v", actual)
	}
	if amortized["20261002 Virtual Machines"] != 1.25 || amortized["20261004 Virtual Machines"] != 1.25 || amortized["20261001 Storage"] != 1 {
		t.Errorf("amortised %v", amortized)
	}
	if usage := sums("Usage"); fmt.Sprint(usage) != fmt.Sprint(actual) {
		t.Errorf("Usage %v, want the actual costs %v", usage, actual)
	}
}
