package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/plugins/cost/forecast"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// costReadsWorld: Brand B pays in EUR; Brand A pays in USD on one
// subscription and in EUR on the other, and has a billing account.
func costReadsWorld(t *testing.T) string {
	account := "ba-brand-a"
	return writeWorld(t, world.World{Tenants: []world.Tenant{
		{Name: "Brand B", DirectoryTenantID: "22222222-2222-2222-2222-222222222222", AccessGroups: []string{"grp-b"},
			Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}}},
		{Name: "Brand A", DirectoryTenantID: "11111111-1111-1111-1111-111111111111", AccessGroups: []string{"grp-a"}, Delegated: true, BillingAccountID: &account,
			Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}, {ID: "aaaaaaaa-0000-0000-0000-000000000002", Name: "A eu"}}},
	}})
}

// costCents maps tenant → day → service → currency → cents, as the test
// wrote them, for sums computed apart from the plugin.
type costCents map[string]map[ledger.Day]map[string]map[string]ledger.Amount

func (c costCents) sum(tenants []string, from, to ledger.Day) map[string]ledger.Amount {
	out := map[string]ledger.Amount{}
	for _, id := range tenants {
		for d, svcs := range c[id] {
			if d < from || d > to {
				continue
			}
			for _, cur := range svcs {
				for currency, v := range cur {
					out[currency] += v
				}
			}
		}
	}
	return out
}

// TestCostReads: costs written into the ledger of the host's database read
// back to the cent through summary, by-tenant, trends and chargeback as
// JSON and CSV, for ranges that start and end mid-month, across two
// tenants and two currencies; bounds, scope and reservations too.
func TestCostReads(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostReads(t, dialect) })
	}
}

func testCostReads(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: costPlugins(""), env: map[string]string{
		"STEWARD_SIM_WORLD": costReadsWorld(t), "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	ids := h.tenantIDs(t, admin)
	a, b := ids["Brand A"], ids["Brand B"]
	if a == "" || b == "" {
		t.Fatalf("world tenants registered as %v", ids)
	}
	// The start-up sync restates the ledger's recent days from the
	// world, which has no costs: it must be over before the rows below
	// are written.
	waitStartupSync(t, h, admin, "costs")

	// Costs from 40 days before the first of last month up to today,
	// today being the plugin's today too (UTC).
	ctx := context.Background()
	db := h.pluginDB("cost")
	today := ledger.DayOf(time.Now())
	y, m, _ := today.Time().Date()
	monthStart := ledger.DayOf(time.Date(y, m-1, 1, 0, 0, 0, 0, time.UTC))
	subs := []struct{ id, tenant, currency string }{
		{"aaaaaaaa-0000-0000-0000-000000000001", a, "USD"}, {"aaaaaaaa-0000-0000-0000-000000000002", a, "EUR"}, {"bbbbbbbb-0000-0000-0000-000000000001", b, "EUR"},
	}
	want := costCents{}
	var rows []ledger.Cost
	for si, s := range subs {
		for d := monthStart - 40; d <= today; d++ {
			for vi, svc := range []string{"Virtual Machines", "Storage", "Bandwidth"} {
				for rg := range 2 {
					cents := ledger.Amount((int(d)*31+vi*17+si*7+rg*3)%4999 + 1)
					rows = append(rows, ledger.Cost{SubscriptionID: s.id, Day: d, Service: svc, ResourceGroup: fmt.Sprintf("rg-%d", rg), Currency: s.currency, TenantID: s.tenant, Cost: cents})
					if want[s.tenant] == nil {
						want[s.tenant] = map[ledger.Day]map[string]map[string]ledger.Amount{}
					}
					if want[s.tenant][d] == nil {
						want[s.tenant][d] = map[string]map[string]ledger.Amount{}
					}
					if want[s.tenant][d][svc] == nil {
						want[s.tenant][d][svc] = map[string]ledger.Amount{}
					}
					want[s.tenant][d][svc][s.currency] += cents
				}
			}
		}
	}
	led := &ledger.Store{DB: db}
	if err := led.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// The same costs by resource: each service's day, naming none.
	byResource := map[[3]any]*ledger.ResourceDay{}
	var resourceDays []*ledger.ResourceDay
	for _, r := range rows {
		k := [3]any{r.SubscriptionID, r.Day, r.Service}
		if byResource[k] == nil {
			byResource[k] = &ledger.ResourceDay{SubscriptionID: r.SubscriptionID, Day: r.Day, Service: r.Service, Currency: r.Currency, TenantID: r.TenantID, Month: r.Day.Month()}
			resourceDays = append(resourceDays, byResource[k])
		}
		byResource[k].Cost += r.Cost
	}
	if _, err := db.NewInsert().Model(&resourceDays).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, b} {
		if err := led.Rollup(ctx, id, monthStart-40, today); err != nil {
			t.Fatal(err)
		}
	}
	var res []ledger.Reservation
	for d := today - 45; d <= today; d++ {
		res = append(res, ledger.Reservation{TenantID: a, ReservationID: "res-1", Day: d, SKU: "Standard_D4s_v5", ReservedHours: 24, UsedHours: 12,
			MinUtilization: 40, AvgUtilization: 50, MaxUtilization: 60, SyncedAt: time.Now().UTC()})
	}
	if _, err := db.NewInsert().Model(&res).Exec(ctx); err != nil {
		t.Fatal(err)
	}

	// A standard user of Brand A.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-cost-a", Email: "cost-a@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)

	for _, rg := range [][2]ledger.Day{{monthStart - 13, monthStart + 5}, {monthStart + 10, today - 1}} {
		from, to := rg[0], rg[1]
		q := "start_date=" + from.String() + "&end_date=" + to.String()
		for _, who := range []struct {
			token   string
			tenants []string
		}{{admin, []string{a, b}}, {tokA, []string{a}}} {
			checkCostReads(t, h, who.token, who.tenants, want, from, to, q)
		}
	}

	// by-tenant over the last 20 days, each tenant and currency.
	var byTenant []struct {
		TenantID   string        `json:"tenant_id"`
		TenantName string        `json:"tenant_name"`
		Currency   string        `json:"currency"`
		TotalCost  ledger.Amount `json:"total_cost"`
	}
	h.get("/api/v1/costs/by-tenant?period_days=20", admin).json(t, &byTenant)
	if len(byTenant) != 3 {
		t.Errorf("by-tenant: %+v, want A in USD and EUR and B in EUR", byTenant)
	}
	for _, r := range byTenant {
		if w := want.sum([]string{r.TenantID}, today-19, today)[r.Currency]; r.TotalCost != w || r.TenantName == "" {
			t.Errorf("by-tenant %s %s: %s, want %s", r.TenantName, r.Currency, r.TotalCost, w)
		}
	}

	// The analysis by resource and by tag, and a day by resource: the
	// world's costs name no resource, so each is one group, whose total
	// is the tenant's.
	var analysis struct {
		Items []struct {
			Group    string        `json:"group"`
			Label    string        `json:"label"`
			Currency string        `json:"currency"`
			Total    ledger.Amount `json:"total"`
		} `json:"items"`
	}
	for _, q := range []string{"group_by=resource", "group_by=tag&tag_key=cost-center", "group_by=service&tags=env%3Dprod"} {
		expectStatus(t, "Brand B's analysis for Brand A's user", h.get("/api/v1/costs/analysis?tenant_ids="+b+"&"+q, tokA), http.StatusForbidden)
		h.get("/api/v1/costs/analysis?tenant_ids="+a+"&start_date="+(today-19).String()+"&end_date="+today.String()+"&"+q, tokA).json(t, &analysis)
		switch {
		case strings.HasPrefix(q, "group_by=service"):
			if len(analysis.Items) != 0 {
				t.Errorf("analysis %s: %+v, want none: no resource has tags", q, analysis.Items)
			}
		case len(analysis.Items) != 2:
			t.Errorf("analysis %s: %+v, want one group per currency", q, analysis.Items)
		}
		for _, it := range analysis.Items {
			if w := want.sum([]string{a}, today-19, today)[it.Currency]; it.Group != "" || it.Total != w {
				t.Errorf("analysis %s: %+v, want %s", q, it, w)
			}
		}
	}
	var day struct {
		Grain string `json:"grain"`
		Items []struct {
			ResourceID *string `json:"resource_id"`
			Label      string  `json:"label"`
		} `json:"items"`
	}
	h.get("/api/v1/costs/daily-breakdown?by=resource&service=Storage&date="+today.String()+"&tenant_id="+a, tokA).json(t, &day)
	if day.Grain != "resource" || len(day.Items) != 2 || day.Items[0].ResourceID == nil || *day.Items[0].ResourceID != "" || day.Items[0].Label != "(costs of no resource)" {
		t.Errorf("a day by resource: %+v", day)
	}

	// Reservations: A has a billing account, B none.
	var rsv struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
		Summary   struct {
			UtilizationPercent float64 `json:"utilization_percent"`
		} `json:"summary"`
		Items []json.RawMessage `json:"items"`
	}
	h.get("/api/v1/costs/reservations?grain=daily&tenant_id="+a, admin).json(t, &rsv)
	if !rsv.Available || len(rsv.Items) != 30 || rsv.Summary.UtilizationPercent != 50 {
		t.Errorf("Brand A's reservations: %+v", rsv)
	}
	h.get("/api/v1/costs/reservations?tenant_id="+b, admin).json(t, &rsv)
	if rsv.Available || rsv.Reason != "billing_account_access_required" {
		t.Errorf("Brand B's reservations: %+v", rsv)
	}
	h.get("/api/v1/costs/reservations", tokA).json(t, &rsv)
	if !rsv.Available {
		t.Errorf("Brand A's user's default tenant: %+v", rsv)
	}

	// The forecast names its method, weekly-seasonal unless the line is
	// asked for, fits the costs up to today and reaches the month's end
	// with its exact cost so far.
	for query, method := range map[string]string{"": "ols_linear", "&method=holt_winters_additive": "holt_winters_additive"} {
		var f struct {
			Method     string `json:"method"`
			HistoryEnd string `json:"history_end"`
			MonthEnd   string `json:"month_end"`
			Forecasts  []struct {
				Currency    string            `json:"currency"`
				MonthToDate ledger.Amount     `json:"month_to_date"`
				Model       *json.RawMessage  `json:"model"`
				Points      []json.RawMessage `json:"points"`
			} `json:"forecasts"`
		}
		h.get("/api/v1/costs/trends/forecast?days=14"+query, tokA).json(t, &f)
		if f.Method != method || f.HistoryEnd != today.String() || f.MonthEnd != forecast.MonthEnd(today+1).String() ||
			len(f.Forecasts) != 2 || len(f.Forecasts[0].Points) != 14 || (f.Forecasts[0].Model != nil) != (method == "holt_winters_additive") {
			t.Fatalf("forecast of Brand A by %s: %+v", method, f)
		}
		monthStart := forecast.MonthEnd(today+1) - ledger.Day(forecast.MonthEnd(today+1).Time().Day()) + 1
		for _, fc := range f.Forecasts {
			if w := want.sum([]string{a}, monthStart, today)[fc.Currency]; fc.MonthToDate != w {
				t.Errorf("forecast of Brand A by %s: %s month to date %s, want %s", method, fc.Currency, fc.MonthToDate, w)
			}
		}
	}

	// Bounds: every one answers 422 naming its parameter.
	for path, location := range map[string]string{
		"/api/v1/costs/summary?period_days=0":                                                     "query.period_days",
		"/api/v1/costs/summary?period_days=366":                                                   "query.period_days",
		"/api/v1/costs/summary?start_date=2026-02-30":                                             "query.start_date",
		"/api/v1/costs/summary?start_date=2026-10-02&end_date=2026-10-01":                         "query.start_date",
		"/api/v1/costs/summary?start_date=2025-01-01&end_date=2026-01-02":                         "query.start_date",
		"/api/v1/costs/by-tenant?period_days=0":                                                   "query.period_days",
		"/api/v1/costs/by-tenant?period_days=366":                                                 "query.period_days",
		"/api/v1/costs/trends?days=6":                                                             "query.days",
		"/api/v1/costs/trends?days=366":                                                           "query.days",
		"/api/v1/costs/trends?end_date=today":                                                     "query.end_date",
		"/api/v1/costs/trends/forecast?days=6":                                                    "query.days",
		"/api/v1/costs/analysis?group_by=tag":                                                     "query.tag_key",
		"/api/v1/costs/analysis?tags=env":                                                         "query.tags[0]",
		"/api/v1/costs/daily-breakdown?by=tag&service=x&date=2026-10-01&tenant_id=" + a:           "query.by",
		"/api/v1/costs/trends/forecast?days=91":                                                   "query.days",
		"/api/v1/costs/trends/forecast?method=arima":                                              "query.method",
		"/api/v1/costs/reservations?grain=weekly":                                                 "query.grain",
		"/api/v1/costs/chargeback?start_date=2026-10-01&end_date=2026-10-31&format=xml":           "query.format",
		"/api/v1/costs/chargeback?end_date=2026-10-31":                                            "query.start_date",
		"/api/v1/costs/chargeback/" + a + "?start_date=2026-10-01":                                "query.end_date",
		"/api/v1/costs/chargeback/" + a + "?start_date=2026-11-01&end_date=2026-10-31":            "query.start_date",
		"/api/v1/costs/chargeback/" + a + "?start_date=2026-10-01&end_date=2026-10-31&format=pdf": "query.format",
	} {
		expectInvalid(t, h.get(path, admin), location)
	}

	// Scope: Brand A's user naming Brand B is refused without a trace of it;
	// nobody is let in anonymously.
	q := "start_date=" + (today - 10).String() + "&end_date=" + today.String()
	for _, path := range []string{
		"/api/v1/costs/summary?tenant_ids=" + b, "/api/v1/costs/summary?tenant_ids=" + a + "," + b,
		"/api/v1/costs/by-tenant?tenant_ids=" + b, "/api/v1/costs/trends?tenant_ids=" + b,
		"/api/v1/costs/trends/forecast?tenant_ids=" + b, "/api/v1/costs/reservations?tenant_id=" + b,
		"/api/v1/costs/chargeback/" + b + "?" + q, "/api/v1/costs/chargeback/" + b + "?format=csv&" + q,
	} {
		r := h.get(path, tokA)
		if r.status != http.StatusForbidden || bytes.Contains(r.body, []byte("Brand B")) || bytes.Contains(r.body, []byte(b)) {
			t.Errorf("%s as Brand A's user: %d %s", path, r.status, r.body)
		}
		expectUnauthorized(t, path+" anonymous", h.get(path, ""))
	}
	expectUnauthorized(t, "chargeback anonymous", h.get("/api/v1/costs/chargeback?"+q, ""))
}

// checkCostReads reads one range as one caller every way and compares each
// figure with the sums of what was written.
func checkCostReads(t *testing.T, h *host, token string, tenants []string, want costCents, from, to ledger.Day, q string) {
	t.Helper()
	total := want.sum(tenants, from, to)
	var sum struct {
		Days   int `json:"days"`
		Totals []struct {
			Currency  string        `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		} `json:"totals"`
	}
	h.get("/api/v1/costs/summary?"+q, token).json(t, &sum)
	if len(sum.Totals) != len(total) || sum.Days != int(to-from)+1 {
		t.Errorf("summary %s: %+v, want %v", q, sum, total)
	}
	for _, tot := range sum.Totals {
		if tot.TotalCost != total[tot.Currency] {
			t.Errorf("summary %s %s: %s, want %s", q, tot.Currency, tot.TotalCost, total[tot.Currency])
		}
	}

	var trends []struct {
		Date      string        `json:"date"`
		Currency  string        `json:"currency"`
		TotalCost ledger.Amount `json:"total_cost"`
	}
	h.get("/api/v1/costs/trends?"+q, token).json(t, &trends)
	if len(trends) != (int(to-from)+1)*len(total) {
		t.Errorf("trends %s: %d records, want %d days × %d currencies", q, len(trends), int(to-from)+1, len(total))
	}
	for _, r := range trends {
		d, _ := ledger.ParseDay(r.Date)
		if w := want.sum(tenants, d, d)[r.Currency]; r.TotalCost != w {
			t.Errorf("trends %s %s: %s, want %s", r.Date, r.Currency, r.TotalCost, w)
		}
	}

	var reports []struct {
		TenantID string `json:"tenant_id"`
		Totals   []struct {
			Currency  string        `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		} `json:"totals"`
	}
	h.get("/api/v1/costs/chargeback?"+q, token).json(t, &reports)
	if len(reports) != len(tenants) {
		t.Errorf("chargeback %s: %d reports, want %d", q, len(reports), len(tenants))
	}
	for _, rep := range reports {
		w := want.sum([]string{rep.TenantID}, from, to)
		for _, tot := range rep.Totals {
			if tot.TotalCost != w[tot.Currency] {
				t.Errorf("chargeback %s of %s in %s: %s, want %s", q, rep.TenantID, tot.Currency, tot.TotalCost, w[tot.Currency])
			}
		}
	}

	for _, tenant := range tenants {
		r := h.get("/api/v1/costs/chargeback/"+tenant+"?format=csv&"+q, token)
		name := fmt.Sprintf("chargeback-%s-%s-%s.csv", tenant, from, to)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") ||
			r.header.Get("Content-Disposition") != `attachment; filename="`+name+`"` {
			t.Fatalf("csv of %s: %d %s %q %s", tenant, r.status, r.header.Get("Content-Type"), r.header.Get("Content-Disposition"), r.body)
		}
		records, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
		if err != nil || len(records) < 2 || strings.Join(records[0], ",") != "tenant_id,tenant_name,date,service,currency,cost" {
			t.Fatalf("csv of %s: %v %v", tenant, err, records[:min(2, len(records))])
		}
		got := map[string]ledger.Amount{}
		for _, rec := range records[1:] {
			var c ledger.Amount
			if err := json.Unmarshal([]byte(rec[5]), &c); err != nil || rec[0] != tenant {
				t.Fatalf("csv row %v: %v", rec, err)
			}
			got[rec[4]] += c
		}
		w := want.sum([]string{tenant}, from, to)
		if len(got) != len(w) {
			t.Errorf("csv of %s %s: %v, want %v", tenant, q, got, w)
		}
		for currency, v := range w {
			if got[currency] != v {
				t.Errorf("csv of %s %s in %s: %s, want %s", tenant, q, currency, got[currency], v)
			}
		}
	}
}
