package reports_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The world of these tests: today is 2026-11-10. Alpha (t1) pays in USD
// on two subscriptions and in EUR on a third; Beta (t2) pays in EUR;
// Gamma (t3) has no costs; Linear (t4) costs 100 + 5·i USD on the 30
// days up to today, a perfectly linear series. Nobody has costs on
// 2026-10-10, so trends must fill that day with zeros.
var (
	today    = mustDay("2026-11-10")
	first    = mustDay("2026-08-01")
	gap      = mustDay("2026-10-10")
	services = []string{"Virtual Machines", "SQL Database", "Storage", "=HYPERLINK(\"x\")"}
	subs     = []struct{ id, tenant, currency string }{
		{"s1", "t1", "USD"}, {"s2", "t1", "USD"}, {"s3", "t1", "EUR"}, {"s4", "t2", "EUR"},
	}
	tenants = []sdk.Tenant{
		{ID: "t1", Name: "Alpha", IsActive: true, BillingAccountID: "ba-1"},
		{ID: "t2", Name: "Beta", IsActive: true},
		{ID: "t3", Name: "Gamma", IsActive: true},
		{ID: "t4", Name: "Linear", IsActive: true},
	}
	admin = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{"t1", "t2", "t3", "t4"}}
	userA = sdk.Principal{ID: "ua", Kind: "user", TenantIDs: []string{"t1", "t3"}}
)

func mustDay(s string) ledger.Day {
	d, err := ledger.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

// costRows is the raw ledger: per subscription, day, service and two
// resource groups, odd amounts of cents.
func costRows() []ledger.Cost {
	var rows []ledger.Cost
	for si, s := range subs {
		for d := first; d <= today; d++ {
			if d == gap {
				continue
			}
			for vi, svc := range services {
				for rg := range 2 {
					cents := ledger.Amount((int(d)*37+vi*101+si*13+rg*7)%997 + 1 + vi*1000)
					// Amortised, every cost is twice as much: what the
					// metric=amortized reads are checked against.
					rows = append(rows, ledger.Cost{SubscriptionID: s.id, Day: d, Service: svc, ResourceGroup: fmt.Sprintf("rg%d", rg),
						Currency: s.currency, TenantID: s.tenant, Cost: cents, Amortized: 2 * cents})
				}
			}
		}
	}
	for i := range 30 {
		rows = append(rows, ledger.Cost{SubscriptionID: "s5", Day: today - 29 + ledger.Day(i), Service: "Compute", ResourceGroup: "rg",
			Currency: "USD", TenantID: "t4", Cost: ledger.Amount(10000 + 500*i), Amortized: 2 * ledger.Amount(10000+500*i)})
	}
	return rows
}

// expected sums the raw rows in Go, independently of the rollups and
// queries under test: key → currency → cents.
func expected(rows []ledger.Cost, tenantIDs []string, from, to ledger.Day, key func(ledger.Cost) string) map[string]map[string]ledger.Amount {
	out := map[string]map[string]ledger.Amount{}
	for _, r := range rows {
		if r.Day < from || r.Day > to || !slices.Contains(tenantIDs, r.TenantID) {
			continue
		}
		k := key(r)
		if out[k] == nil {
			out[k] = map[string]ledger.Amount{}
		}
		out[k][r.Currency] += r.Cost
	}
	return out
}

func all(ledger.Cost) string { return "" }

type world struct {
	h    *plugintest.Harness
	rows []ledger.Cost
	// resources are the rows by resource: each cost row's cost shared by
	// two resources of its group, the first tagged, the second not.
	resources []ledger.ResourceDay
	tags      []ledger.ResourceTag
	db        *bun.DB
	// store is the reads' store, whose Exchange a test may set.
	store *reports.Store
}

// resourceRows shares each cost row between two resources of its group,
// and tags the first of each pair with env (prod in the first resource
// group, dev in the other) and cost-center (its tenant).
func resourceRows(rows []ledger.Cost) ([]ledger.ResourceDay, []ledger.ResourceTag) {
	var out []ledger.ResourceDay
	var tags []ledger.ResourceTag
	tagged := map[string]bool{}
	for _, r := range rows {
		group := strings.ToLower(r.ResourceGroup)
		for k, cost := range []ledger.Amount{r.Cost / 2, r.Cost - r.Cost/2} {
			// Twice the part's cost, as the row's amortised cost is twice
			// its cost.
			amortized := 2 * cost
			id := fmt.Sprintf("/subscriptions/%s/resourcegroups/%s/providers/microsoft.test/things/%s-%d", r.SubscriptionID, group,
				strings.ToLower(strings.ReplaceAll(r.Service, " ", "-")), k+1)
			out = append(out, ledger.ResourceDay{SubscriptionID: r.SubscriptionID, Day: r.Day, ResourceID: id, Service: r.Service,
				Currency: r.Currency, TenantID: r.TenantID, ResourceGroup: group, Month: r.Day.Month(), Cost: cost, Amortized: amortized})
			if k == 0 && !tagged[id] {
				tagged[id] = true
				env := "dev"
				if group == "rg0" {
					env = "prod"
				}
				tags = append(tags, ledger.ResourceTag{SubscriptionID: r.SubscriptionID, ResourceID: id, Key: "env", Value: env, TenantID: r.TenantID},
					ledger.ResourceTag{SubscriptionID: r.SubscriptionID, ResourceID: id, Key: "cost-center", Value: "CC-" + r.TenantID, TenantID: r.TenantID})
			}
		}
	}
	return out, tags
}

func newWorld(t *testing.T, dialect string) *world {
	t.Helper()
	ctx := context.Background()
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	if dialect == store.DialectPostgres {
		dbURL = storetest.PostgresURL(t)
	}
	handlers := &reports.Handlers{Now: func() time.Time { return today.Time().Add(15 * time.Hour) }}
	p := func(ctx context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
		handlers.Store, handlers.Host = &reports.Store{DB: db}, env.Host
		return &sdk.Plugin{Routes: handlers.Routes(), Datasets: []sdk.Dataset{handlers.Dataset()}}, err
	}
	h := plugintest.New(t, sdk.Definition{Name: "cost", Migrations: ledger.Migrations()}, p, plugintest.Options{DatabaseURL: dbURL, Tenants: tenants,
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
	w := &world{h: h, rows: costRows(), db: db, store: handlers.Store}
	w.resources, w.tags = resourceRows(w.rows)
	led := &ledger.Store{DB: db}
	if err := led.Upsert(ctx, slices.Clone(w.rows)); err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(w.resources); start += 1000 {
		batch := w.resources[start:min(start+1000, len(w.resources))]
		if _, err := db.NewInsert().Model(&batch).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.NewInsert().Model(&w.tags).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tn := range tenants {
		if err := led.Rollup(ctx, tn.ID, first, today); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *world) get(t *testing.T, path string, who sdk.Principal) *http.Response {
	t.Helper()
	return w.h.Do(httptest.NewRequest(http.MethodGet, path, nil), who)
}

func (w *world) json(t *testing.T, path string, who sdk.Principal, v any) {
	t.Helper()
	resp := w.get(t, path, who)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

// The bodies as a client decodes them, amounts read back into cents.
type (
	totalJSON struct {
		Currency          string        `json:"currency"`
		TotalCost         ledger.Amount `json:"total_cost"`
		DailyAverage      ledger.Amount `json:"daily_average"`
		PreviousTotalCost ledger.Amount `json:"previous_total_cost"`
		ChangePercent     *float64      `json:"change_percent"`
		TenantsWithCosts  int           `json:"tenants_with_costs"`
	}
	serviceJSON struct {
		Service      string        `json:"service"`
		Currency     string        `json:"currency"`
		TotalCost    ledger.Amount `json:"total_cost"`
		SharePercent float64       `json:"share_percent"`
	}
	summaryJSON struct {
		StartDate   string         `json:"start_date"`
		EndDate     string         `json:"end_date"`
		Days        int            `json:"days"`
		TenantCount int            `json:"tenant_count"`
		Currency    *string        `json:"currency"`
		TotalCost   *ledger.Amount `json:"total_cost"`
		Totals      []totalJSON    `json:"totals"`
		TopServices []serviceJSON  `json:"top_services"`
	}
	reportJSON struct {
		TenantID   string         `json:"tenant_id"`
		TenantName string         `json:"tenant_name"`
		Currency   *string        `json:"currency"`
		TotalCost  *ledger.Amount `json:"total_cost"`
		Totals     []totalJSON    `json:"totals"`
		Services   []serviceJSON  `json:"services"`
	}
)

func totalsOf(ts []totalJSON) map[string]ledger.Amount {
	out := map[string]ledger.Amount{}
	for _, t := range ts {
		out[t.Currency] = t.TotalCost
	}
	return out
}

func sameTotals(t *testing.T, what string, got, want map[string]ledger.Amount) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	for c, v := range want {
		if got[c] != v {
			t.Errorf("%s %s: %s, want %s", what, c, got[c], v)
		}
	}
}

// ranges start and end mid-month, one across a month and a gap day.
var ranges = [][2]string{{"2026-09-25", "2026-10-17"}, {"2026-10-05", "2026-11-08"}, {"2026-08-15", "2026-08-15"}}

func TestReadsAgreeToTheCent(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			for _, rg := range ranges {
				from, to := mustDay(rg[0]), mustDay(rg[1])
				for _, who := range []sdk.Principal{admin, userA} {
					w.checkRange(t, who, from, to)
				}
			}
		})
	}
}

func (w *world) checkRange(t *testing.T, who sdk.Principal, from, to ledger.Day) {
	t.Helper()
	q := "start_date=" + from.String() + "&end_date=" + to.String()
	want := expected(w.rows, who.TenantIDs, from, to, all)[""]
	days := int(to-from) + 1

	var sum summaryJSON
	w.json(t, "/api/v1/costs/summary?"+q, who, &sum)
	sameTotals(t, "summary "+q, totalsOf(sum.Totals), want)
	if sum.Days != days || sum.StartDate != from.String() || sum.EndDate != to.String() || sum.TenantCount != len(who.TenantIDs) {
		t.Errorf("summary %s: days %d %s…%s tenants %d", q, sum.Days, sum.StartDate, sum.EndDate, sum.TenantCount)
	}
	if len(want) > 1 && (sum.Currency != nil || sum.TotalCost != nil) {
		t.Errorf("summary %s in %d currencies names one: %v %v", q, len(want), sum.Currency, sum.TotalCost)
	}
	prev := expected(w.rows, who.TenantIDs, from-ledger.Day(days), from-1, all)[""]
	for _, tot := range sum.Totals {
		if tot.PreviousTotalCost != prev[tot.Currency] {
			t.Errorf("summary %s previous %s: %s, want %s", q, tot.Currency, tot.PreviousTotalCost, prev[tot.Currency])
		}
		avg := float64(want[tot.Currency]) / float64(days)
		if d := float64(tot.DailyAverage) - avg; d > 0.5 || d < -0.5 {
			t.Errorf("summary %s daily average %s: %s, want %.2f cents", q, tot.Currency, tot.DailyAverage, avg)
		}
	}
	bySvc := expected(w.rows, who.TenantIDs, from, to, func(c ledger.Cost) string { return c.Service })
	for _, s := range sum.TopServices {
		if s.TotalCost != bySvc[s.Service][s.Currency] {
			t.Errorf("summary %s service %s %s: %s, want %s", q, s.Service, s.Currency, s.TotalCost, bySvc[s.Service][s.Currency])
		}
	}

	var trends []struct {
		Date      string        `json:"date"`
		Currency  *string       `json:"currency"`
		TotalCost ledger.Amount `json:"total_cost"`
	}
	w.json(t, "/api/v1/costs/trends?"+q, who, &trends)
	byDay := expected(w.rows, who.TenantIDs, from, to, func(c ledger.Cost) string { return c.Day.String() })
	trendSum := map[string]ledger.Amount{}
	if len(trends) != days*len(want) {
		t.Errorf("trends %s: %d records, want %d days × %d currencies", q, len(trends), days, len(want))
	}
	for _, r := range trends {
		if r.Currency == nil {
			t.Fatalf("trends %s: a day without currency although the range has costs", q)
		}
		if r.TotalCost != byDay[r.Date][*r.Currency] {
			t.Errorf("trends %s %s %s: %s, want %s", q, r.Date, *r.Currency, r.TotalCost, byDay[r.Date][*r.Currency])
		}
		trendSum[*r.Currency] += r.TotalCost
	}
	sameTotals(t, "trends "+q, trendSum, want)

	var rep []reportJSON
	w.json(t, "/api/v1/costs/chargeback?"+q, who, &rep)
	byTenant := expected(w.rows, who.TenantIDs, from, to, func(c ledger.Cost) string { return c.TenantID })
	repSum := map[string]ledger.Amount{}
	if len(rep) != len(who.TenantIDs) {
		t.Errorf("chargeback %s: %d reports, want %d", q, len(rep), len(who.TenantIDs))
	}
	for _, r := range rep {
		sameTotals(t, "chargeback "+r.TenantID+" "+q, totalsOf(r.Totals), byTenant[r.TenantID])
		for c, v := range totalsOf(r.Totals) {
			repSum[c] += v
		}
		var svcSum ledger.Amount
		for _, s := range r.Services {
			svcSum += s.TotalCost
		}
		var totSum ledger.Amount
		for _, v := range totalsOf(r.Totals) {
			totSum += v
		}
		if svcSum != totSum {
			t.Errorf("chargeback %s %s: services add up to %s, totals to %s", q, r.TenantID, svcSum, totSum)
		}
	}
	sameTotals(t, "chargeback "+q, repSum, want)

	resp := w.get(t, "/api/v1/costs/chargeback?format=csv&"+q, who)
	csvSum, lines := readCSV(t, resp)
	sameTotals(t, "chargeback csv "+q, csvSum, want)
	// One row per tenant, day, service and currency.
	wantLines := 0
	for _, byCurrency := range expected(w.rows, who.TenantIDs, from, to, func(c ledger.Cost) string {
		return c.TenantID + c.Day.String() + c.Service
	}) {
		wantLines += len(byCurrency)
	}
	if lines != wantLines {
		t.Errorf("chargeback csv %s: %d rows, want %d", q, lines, wantLines)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="chargeback-all-`+from.String()+"-"+to.String()+`.csv"` {
		t.Errorf("chargeback csv: Content-Disposition %q", cd)
	}
}

// readCSV checks the header and sums the cost column per currency.
func readCSV(t *testing.T, resp *http.Response) (map[string]ledger.Amount, int) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("csv: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	records, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(records[0], ",") != "tenant_id,tenant_name,date,service,currency,cost" {
		t.Fatalf("csv header %v", records[0])
	}
	sum := map[string]ledger.Amount{}
	for _, r := range records[1:] {
		var a ledger.Amount
		if err := json.Unmarshal([]byte(r[5]), &a); err != nil || !strings.Contains(r[5], ".") || len(r[5])-strings.Index(r[5], ".") != 3 {
			t.Fatalf("csv cost %q: %v", r[5], err)
		}
		if strings.HasPrefix(r[3], "=") {
			t.Errorf("csv service cell %q can be read as a formula", r[3])
		}
		sum[r[4]] += a
	}
	return sum, len(records) - 1
}

// TestOneTenant: a tenant's own views in a single currency carry
// total_cost and currency; a tenant without costs reads zero.
func TestOneTenant(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			from, to := mustDay("2026-09-14"), mustDay("2026-10-20")
			q := "start_date=" + from.String() + "&end_date=" + to.String()
			want := expected(w.rows, []string{"t2"}, from, to, all)[""]["EUR"]
			var sum summaryJSON
			w.json(t, "/api/v1/costs/summary?tenant_ids=t2&"+q, admin, &sum)
			if sum.Currency == nil || *sum.Currency != "EUR" || sum.TotalCost == nil || *sum.TotalCost != want {
				t.Errorf("Beta's summary: %+v, want EUR %s", sum, want)
			}
			var rep reportJSON
			w.json(t, "/api/v1/costs/chargeback/t2?"+q, admin, &rep)
			if rep.TenantName != "Beta" || rep.Currency == nil || *rep.Currency != "EUR" || rep.TotalCost == nil || *rep.TotalCost != want {
				t.Errorf("Beta's report: %+v, want EUR %s", rep, want)
			}
			resp := w.get(t, "/api/v1/costs/chargeback/t2?format=csv&"+q, admin)
			csvSum, _ := readCSV(t, resp)
			if len(csvSum) != 1 || csvSum["EUR"] != want {
				t.Errorf("Beta's csv sums to %v, want EUR %s", csvSum, want)
			}
			if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="chargeback-t2-2026-09-14-2026-10-20.csv"` {
				t.Errorf("Content-Disposition %q", cd)
			}

			w.json(t, "/api/v1/costs/summary?tenant_ids=t3&"+q, admin, &sum)
			if sum.Currency != nil || sum.TotalCost == nil || *sum.TotalCost != 0 || len(sum.Totals) != 0 || len(sum.TopServices) != 0 {
				t.Errorf("Gamma's summary: %+v", sum)
			}
			w.json(t, "/api/v1/costs/chargeback/t3?"+q, admin, &rep)
			if rep.TotalCost == nil || *rep.TotalCost != 0 || len(rep.Services) != 0 {
				t.Errorf("Gamma's report: %+v", rep)
			}
			var trends []struct {
				Currency  *string       `json:"currency"`
				TotalCost ledger.Amount `json:"total_cost"`
			}
			w.json(t, "/api/v1/costs/trends?tenant_ids=t3&days=7", admin, &trends)
			if len(trends) != 7 || trends[0].Currency != nil || trends[6].TotalCost != 0 {
				t.Errorf("Gamma's trends: %+v", trends)
			}
			// Default range: the 30 days up to today.
			w.json(t, "/api/v1/costs/summary?tenant_ids=t2", admin, &sum)
			if want := expected(w.rows, []string{"t2"}, today-29, today, all)[""]["EUR"]; sum.Days != 30 || sum.EndDate != today.String() || *sum.TotalCost != want {
				t.Errorf("Beta's default summary: %+v, want 30 days to %s, EUR %s", sum, today, want)
			}
		})
	}
}

func TestByTenant(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			var got []struct {
				TenantID     string        `json:"tenant_id"`
				TenantName   string        `json:"tenant_name"`
				Currency     *string       `json:"currency"`
				TotalCost    ledger.Amount `json:"total_cost"`
				SharePercent float64       `json:"share_percent"`
			}
			w.json(t, "/api/v1/costs/by-tenant?period_days=45", admin, &got)
			want := expected(w.rows, admin.TenantIDs, today-44, today, func(c ledger.Cost) string { return c.TenantID })
			names := map[string]string{"t1": "Alpha", "t2": "Beta", "t3": "Gamma", "t4": "Linear"}
			seen, shares := 0, map[string]float64{}
			for _, r := range got {
				if r.TenantName != names[r.TenantID] {
					t.Errorf("%s named %q", r.TenantID, r.TenantName)
				}
				if r.Currency == nil {
					if r.TenantID != "t3" || r.TotalCost != 0 {
						t.Errorf("record without currency: %+v", r)
					}
					continue
				}
				seen++
				shares[*r.Currency] += r.SharePercent
				if r.TotalCost != want[r.TenantID][*r.Currency] {
					t.Errorf("%s %s: %s, want %s", r.TenantID, *r.Currency, r.TotalCost, want[r.TenantID][*r.Currency])
				}
			}
			// Alpha USD and EUR, Beta EUR, Linear USD, Gamma without costs.
			if seen != 4 || len(got) != 5 {
				t.Errorf("by-tenant: %+v", got)
			}
			for c, s := range shares {
				if s < 99.98 || s > 100.02 {
					t.Errorf("%s shares add up to %.2f", c, s)
				}
			}
			w.json(t, "/api/v1/costs/by-tenant?tenant_ids=t1", userA, &got)
			if len(got) != 2 || got[0].TenantID != "t1" {
				t.Errorf("Alpha's by-tenant as its user: %+v", got)
			}
		})
	}
}

// forecastBody is the forecast route's body as a client reads it.
type forecastBody struct {
	Method          string  `json:"method"`
	ConfidenceLevel float64 `json:"confidence_level"`
	HistoryStart    string  `json:"history_start"`
	HistoryEnd      string  `json:"history_end"`
	HistoryDays     int     `json:"history_days"`
	MonthEnd        *string `json:"month_end"`
	Forecasts       []struct {
		Currency             string  `json:"currency"`
		Slope                float64 `json:"slope"`
		Intercept            float64 `json:"intercept"`
		RSquared             float64 `json:"r_squared"`
		PredictedTotal       float64 `json:"predicted_total"`
		MonthToDate          float64 `json:"month_to_date"`
		PredictedRestOfMonth float64 `json:"predicted_rest_of_month"`
		PredictedMonthTotal  float64 `json:"predicted_month_total"`
		Model                *struct {
			Alpha, Beta, Gamma, Phi, Level, Trend float64
			Seasonal                              []float64 `json:"seasonal"`
		} `json:"model"`
		Points []struct {
			Date                    string
			Predicted, Lower, Upper float64
		} `json:"points"`
	} `json:"forecasts"`
}

// TestForecastOfALinearSeries: Linear's 30 days of 100 + 5·i are forecast
// exactly by both methods, with the month's figures to the cent: 2,225.00
// from 1 to 10 November, 5,950.00 predicted for the 20 days after.
func TestForecastOfALinearSeries(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			for _, c := range []struct {
				query, method string
				level         float64
			}{
				{"", "ols_linear", 0.95},
				{"&method=holt_winters_additive", "holt_winters_additive", 0.8},
				{"&method=ols_linear", "ols_linear", 0.95},
			} {
				var f forecastBody
				w.json(t, "/api/v1/costs/trends/forecast?tenant_ids=t4&days=7"+c.query, admin, &f)
				if f.Method != c.method || f.ConfidenceLevel != c.level || f.HistoryDays != 30 || f.HistoryEnd != today.String() ||
					f.MonthEnd == nil || *f.MonthEnd != "2026-11-30" || len(f.Forecasts) != 1 {
					t.Fatalf("%s: forecast %+v", c.method, f)
				}
				fc := f.Forecasts[0]
				if fc.Currency != "USD" || len(fc.Points) != 7 || round(fc.RSquared) != 1 || round(fc.Slope) != 5 || round(fc.Intercept) != 100 ||
					fc.PredictedTotal != 7*100+5*(30+36)*7/2 || fc.MonthToDate != 2225 || fc.PredictedRestOfMonth != 5950 || fc.PredictedMonthTotal != 8175 {
					t.Fatalf("%s: forecast %+v", c.method, fc)
				}
				if (fc.Model != nil) != (c.method == "holt_winters_additive") {
					t.Errorf("%s: model %+v", c.method, fc.Model)
				}
				if fc.Model != nil && (fc.Model.Trend != 5 || fc.Model.Phi != 1 || fc.Model.Level != 245 || len(fc.Model.Seasonal) != 7 || slices.Max(fc.Model.Seasonal) != 0) {
					t.Errorf("%s: model %+v, want level 245, an undamped trend of 5 and no season", c.method, *fc.Model)
				}
				for i, p := range fc.Points {
					want := 100 + 5*float64(30+i)
					if p.Date != (today+ledger.Day(i+1)).String() || p.Predicted != want || p.Lower != want || p.Upper != want {
						t.Errorf("%s: point %d: %+v, want %s at %.2f exactly", c.method, i, p, today+ledger.Day(i+1), want)
					}
				}
			}
			// A noisy history has an interval that widens away from it.
			for _, method := range []string{"holt_winters_additive", "ols_linear"} {
				var f forecastBody
				w.json(t, "/api/v1/costs/trends/forecast?tenant_ids=t2&method="+method, admin, &f)
				if f.Method != method || len(f.Forecasts) != 1 || len(f.Forecasts[0].Points) != 30 || f.HistoryDays != 90 {
					t.Fatalf("Beta's forecast %+v", f)
				}
				pts := f.Forecasts[0].Points
				if w0, w1 := pts[0].Upper-pts[0].Lower, pts[29].Upper-pts[29].Lower; !(w0 > 0 && w1 > w0) || pts[0].Lower > pts[0].Predicted || pts[0].Upper < pts[0].Predicted {
					t.Errorf("Beta's %s interval: first %+v, last %+v", method, pts[0], pts[29])
				}
			}
			var f forecastBody
			w.json(t, "/api/v1/costs/trends/forecast?tenant_ids=t3", admin, &f)
			if len(f.Forecasts) != 0 || f.HistoryDays != 0 || f.MonthEnd != nil {
				t.Errorf("Gamma's forecast %+v", f)
			}
		})
	}
}

// TestForecastFollowsTheWeek: a history whose weekends cost half its
// weekdays (which vary by 10.00 in a cycle of three days) is forecast with
// the weekends' dip, within 1 % of each day, and the month's total
// follows; the line misses each weekend by a third or more.
func TestForecastFollowsTheWeek(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(context.Background(), db, ledger.Migrations(), "cost_migrations"); err != nil {
				t.Fatal(err)
			}
			cost := func(d ledger.Day) ledger.Amount {
				if wd := d.Time().Weekday(); wd == time.Saturday || wd == time.Sunday {
					return 2000_00
				}
				return 4000_00 + ledger.Amount(d%3)*10_00
			}
			var rows []ledger.Cost
			for d := today - 89; d <= today; d++ {
				rows = append(rows, ledger.Cost{SubscriptionID: "s", Day: d, Service: "Compute", ResourceGroup: "rg", Currency: "USD", TenantID: "t1", Cost: cost(d)})
			}
			l := &ledger.Store{DB: db}
			if err := l.Upsert(context.Background(), rows); err != nil {
				t.Fatal(err)
			}
			if err := l.Rollup(context.Background(), "t1", today-89, today); err != nil {
				t.Fatal(err)
			}
			s := &reports.Store{DB: db}
			hw, err := s.Forecast(context.Background(), []string{"t1"}, today, 28, "holt_winters_additive", reports.Actual)
			if err != nil || hw.Method != "holt_winters_additive" || len(hw.Forecasts) != 1 {
				t.Fatalf("forecast %+v, %v", hw, err)
			}
			line, err := s.Forecast(context.Background(), []string{"t1"}, today, 28, "ols_linear", reports.Actual)
			if err != nil {
				t.Fatal(err)
			}
			var want, rest float64
			inside := 0
			for i, p := range hw.Forecasts[0].Points {
				d := today + ledger.Day(i+1)
				actual := cost(d).Float()
				if math.Abs(p.Predicted-actual) > 0.01*actual || !(p.Lower < p.Predicted && p.Predicted < p.Upper) {
					t.Errorf("%s (%s): %+v, want about %.2f inside an interval", d, d.Time().Weekday(), p, actual)
				}
				if p.Lower <= actual && actual <= p.Upper {
					inside++
				}
				if wd := d.Time().Weekday(); wd == time.Saturday || wd == time.Sunday {
					if lp := line.Forecasts[0].Points[i].Predicted; lp < 1.33*actual {
						t.Errorf("the line forecasts %s at %.2f, near its %.2f", d, lp, actual)
					}
				}
				if d <= mustDay("2026-11-30") {
					rest += actual
				}
			}
			for d := mustDay("2026-11-01"); d <= today; d++ {
				want += cost(d).Float()
			}
			// The 80 % interval holds most days of a series this regular.
			if inside < 21 {
				t.Errorf("%d of 28 days inside the 80 %% interval", inside)
			}
			f := hw.Forecasts[0]
			if f.MonthToDate.Float() != want || math.Abs(f.PredictedMonthTotal-(want+rest)) > 0.005*(want+rest) {
				t.Errorf("month to date %s, month total %.2f; want %.2f and about %.2f", f.MonthToDate, f.PredictedMonthTotal, want, want+rest)
			}
		})
	}
}

func round(v float64) float64 { return float64(int64(v*1e6+0.5)) / 1e6 }

func TestReservations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			var res []ledger.Reservation
			for d := today - 100; d <= today; d++ {
				for _, id := range []string{"r1", "r2"} {
					res = append(res, ledger.Reservation{TenantID: "t1", ReservationID: id, Day: d, ReservationOrderID: "o-" + id, SKU: "Standard_D2s_v3",
						ReservedHours: 24, UsedHours: 18, MinUtilization: 50, AvgUtilization: 75, MaxUtilization: 100, SyncedAt: time.Now().UTC()})
				}
			}
			if _, err := w.db.NewInsert().Model(&res).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Available bool   `json:"available"`
				TenantID  string `json:"tenant_id"`
				Grain     string `json:"grain"`
				StartDate string `json:"start_date"`
				Summary   struct {
					Reservations       int
					ReservedHours      float64 `json:"reserved_hours"`
					UtilizationPercent float64 `json:"utilization_percent"`
				} `json:"summary"`
				Items []struct {
					ReservationID string  `json:"reservation_id"`
					Period        string  `json:"period"`
					ReservedHours float64 `json:"reserved_hours"`
				} `json:"items"`
				Reason string `json:"reason"`
				Setup  struct {
					Steps []string `json:"steps"`
				} `json:"setup"`
			}
			// userA's first tenant is Alpha, which has a billing account.
			w.json(t, "/api/v1/costs/reservations", userA, &got)
			if !got.Available || got.TenantID != "t1" || got.Grain != "monthly" || got.StartDate != "2025-12-01" || got.Summary.Reservations != 2 ||
				got.Summary.ReservedHours != 101*2*24 || got.Summary.UtilizationPercent != 75 {
				t.Errorf("Alpha's monthly reservations: %+v", got)
			}
			// 2026-08-02 … 2026-11-10: four months, two reservations.
			if len(got.Items) != 8 || got.Items[0].Period != "2026-08" || got.Items[0].ReservedHours != 30*24 || got.Items[7].Period != "2026-11" {
				t.Errorf("monthly items: %+v", got.Items)
			}
			w.json(t, "/api/v1/costs/reservations?grain=daily&tenant_id=t1", userA, &got)
			if len(got.Items) != 60 || got.Items[0].Period != (today-29).String() || got.Summary.ReservedHours != 30*2*24 {
				t.Errorf("daily items: %d, first %+v", len(got.Items), got.Items[:1])
			}
			w.json(t, "/api/v1/costs/reservations?tenant_id=t2", admin, &got)
			if got.Available || got.Reason != "billing_account_access_required" || got.TenantID != "t2" || len(got.Setup.Steps) == 0 {
				t.Errorf("Beta without a billing account: %+v", got)
			}
			if resp := w.get(t, "/api/v1/costs/reservations?tenant_id=t2", userA); resp.StatusCode != http.StatusForbidden {
				t.Errorf("another tenant's reservations: %d", resp.StatusCode)
			}
			if resp := w.get(t, "/api/v1/costs/reservations", sdk.Principal{ID: "nobody", Kind: "user"}); resp.StatusCode != http.StatusNotFound {
				t.Errorf("reservations of a caller without tenants: %d", resp.StatusCode)
			}
		})
	}
}

func TestDataset(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			recs, err := w.h.ReadDataset(ctx, "costs", []string{"t2", "t3"}, map[string]string{"months": "3"})
			if err != nil {
				t.Fatal(err)
			}
			want := expected(w.rows, []string{"t2"}, mustDay("2026-09-01"), today, func(c ledger.Cost) string { return c.Day.Time().Format("2006-01") })
			if len(recs) != 3 {
				t.Fatalf("Beta's three months: %s", recs)
			}
			for _, raw := range recs {
				var r struct {
					TenantID       string        `json:"tenant_id"`
					Month          string        `json:"month"`
					Currency       string        `json:"currency"`
					TotalCost      ledger.Amount `json:"total_cost"`
					TotalCostCents int64         `json:"total_cost_cents"`
					Days           int           `json:"days"`
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatal(err)
				}
				wantDays := map[string]int{"2026-09": 30, "2026-10": 30, "2026-11": 10}[r.Month]
				if r.TenantID != "t2" || r.Currency != "EUR" || r.TotalCost != want[r.Month]["EUR"] || r.TotalCostCents != int64(r.TotalCost) || r.Days != wantDays {
					t.Errorf("record %s, want %s EUR over %d days", raw, want[r.Month]["EUR"], wantDays)
				}
			}
			recs, err = w.h.ReadDataset(ctx, "costs", []string{"t1"}, nil)
			if err != nil || len(recs) != 8 {
				t.Errorf("Alpha's default months: %d records (%v), want 4 months × 2 currencies", len(recs), err)
			}
			if _, err := w.h.ReadDataset(ctx, "costs", []string{"t1"}, map[string]string{"months": "37"}); err == nil {
				t.Error("37 months read")
			}
		})
	}
}

// TestRefusals: every bound of every parameter, dates that are not dates
// or out of order, another tenant, and no caller at all.
func TestRefusals(t *testing.T) {
	w := newWorld(t, store.DialectSQLite)
	for _, c := range []struct{ path, location string }{
		{"/api/v1/costs/summary?period_days=0", "query.period_days"},
		{"/api/v1/costs/summary?period_days=366", "query.period_days"},
		{"/api/v1/costs/summary?start_date=2026-02-30", "query.start_date"},
		{"/api/v1/costs/summary?end_date=tomorrow", "query.end_date"},
		{"/api/v1/costs/summary?start_date=2026-10-02&end_date=2026-10-01", "query.start_date"},
		{"/api/v1/costs/summary?start_date=2025-01-01&end_date=2026-01-02", "query.start_date"},
		{"/api/v1/costs/by-tenant?period_days=0", "query.period_days"},
		{"/api/v1/costs/by-tenant?period_days=366", "query.period_days"},
		{"/api/v1/costs/trends?days=6", "query.days"},
		{"/api/v1/costs/trends?days=366", "query.days"},
		{"/api/v1/costs/trends?start_date=2026-11-01&end_date=2026-10-01", "query.start_date"},
		{"/api/v1/costs/trends?end_date=2026-13-01", "query.end_date"},
		{"/api/v1/costs/trends/forecast?days=6", "query.days"},
		{"/api/v1/costs/trends/forecast?days=91", "query.days"},
		{"/api/v1/costs/trends/forecast?method=arima", "query.method"},
		{"/api/v1/costs/reservations?grain=weekly", "query.grain"},
		{"/api/v1/costs/chargeback?start_date=2026-10-01&end_date=2026-10-31&format=xml", "query.format"},
		{"/api/v1/costs/chargeback?end_date=2026-10-31", "query.start_date"},
		{"/api/v1/costs/chargeback?start_date=2026-10-01", "query.end_date"},
		{"/api/v1/costs/chargeback?start_date=2026-10-31&end_date=2026-10-01", "query.start_date"},
		{"/api/v1/costs/chargeback/t1?start_date=2026-10-01&end_date=2026-10-31&format=xml", "query.format"},
		{"/api/v1/costs/chargeback/t1?start_date=10/01/2026&end_date=2026-10-31", "query.start_date"},
		{"/api/v1/costs/chargeback/t1?start_date=2024-01-01&end_date=2026-10-31", "query.start_date"},
	} {
		resp := w.get(t, c.path, admin)
		b, _ := io.ReadAll(resp.Body)
		var p struct {
			Errors []struct{ Location string } `json:"errors"`
		}
		_ = json.Unmarshal(b, &p)
		if resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != c.location {
			t.Errorf("%s: %d %s, want 422 naming %s", c.path, resp.StatusCode, b, c.location)
		}
	}
	q := "start_date=2026-10-01&end_date=2026-10-31"
	for _, path := range []string{
		"/api/v1/costs/summary?tenant_ids=t2", "/api/v1/costs/summary?tenant_ids=t1,t2",
		"/api/v1/costs/by-tenant?tenant_ids=t2", "/api/v1/costs/trends?tenant_ids=t1&tenant_ids=t2",
		"/api/v1/costs/trends/forecast?tenant_ids=t2", "/api/v1/costs/reservations?tenant_id=t2",
		"/api/v1/costs/chargeback/t2?" + q, "/api/v1/costs/chargeback/t2?format=csv&" + q,
	} {
		resp := w.get(t, path, userA)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(b), "Beta") {
			t.Errorf("%s as Alpha's user: %d %s, want 403", path, resp.StatusCode, b)
		}
	}
	for _, r := range w.h.Describe().Routes {
		path := strings.ReplaceAll(r.Path, "{tenant_id}", "t1") + "?" + q
		if resp := w.get(t, path, sdk.Principal{}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s anonymous: %d", path, resp.StatusCode)
		}
	}
	// The all-tenants chargeback of a standard user holds its tenants only.
	var reps []reportJSON
	w.json(t, "/api/v1/costs/chargeback?"+q, userA, &reps)
	if len(reps) != 2 || reps[0].TenantID != "t1" || reps[1].TenantID != "t3" {
		t.Errorf("Alpha's user's chargeback: %+v", reps)
	}
	csvSum, _ := readCSV(t, w.get(t, "/api/v1/costs/chargeback?format=csv&"+q, userA))
	sameTotals(t, "Alpha's user's csv", csvSum, expected(w.rows, []string{"t1"}, mustDay("2026-10-01"), mustDay("2026-10-31"), all)[""])
}
