package views_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/plugins/cost/views"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The world of these tests: today is 2026-11-10 and costs run from 120
// days before. Alpha (t1) pays in USD for Virtual Machines (80.00 a day,
// 100.00 from 29 days ago) and for a service whose name is markup (12.34 a
// day, 512.34 three days ago: an anomaly of 500.00), and in EUR for
// Storage (5.05 a day). Beta (t2) pays 50.00 a day in USD for a service
// only its users may see, 500.00 two days ago. Gamma (t3) has no costs.
var (
	today   = mustDay("2026-11-10")
	first   = today - 120
	clock   = func() time.Time { return today.Time().Add(15 * time.Hour) }
	markup  = `<script>alert("cost")</script>`
	tenants = []sdk.Tenant{
		{ID: "t1", Name: "Alpha", IsActive: true},
		{ID: "t2", Name: "Beta", IsActive: true},
		{ID: "t3", Name: "Gamma", IsActive: true},
	}
	admin = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{"t1", "t2", "t3"}}
	userA = sdk.Principal{ID: "ua", Kind: "user", TenantIDs: []string{"t1", "t3"}}
)

const betaService = "Beta Secret Service"

// appID is the resource that bills the spiky service.
const appID = "/subscriptions/s1/resourcegroups/rg/providers/microsoft.web/sites/app-1"

func mustDay(s string) ledger.Day {
	d, err := ledger.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

func costRows() []ledger.Cost {
	var rows []ledger.Cost
	add := func(sub, tenant, service, currency string, d ledger.Day, cents ledger.Amount) {
		rows = append(rows, ledger.Cost{SubscriptionID: sub, Day: d, Service: service, ResourceGroup: "rg", Currency: currency, TenantID: tenant, Cost: cents})
	}
	for d := first; d <= today; d++ {
		vm := ledger.Amount(8000)
		if d >= today-29 {
			vm = 10000
		}
		add("s1", "t1", "Virtual Machines", "USD", d, vm)
		spiky := ledger.Amount(1234)
		if d == today-3 {
			spiky = 51234
		}
		add("s1", "t1", markup, "USD", d, spiky)
		add("s2", "t1", "Storage", "EUR", d, 505)
		beta := ledger.Amount(5000)
		if d == today-2 {
			beta = 50000
		}
		add("s3", "t2", betaService, "USD", d, beta)
	}
	return rows
}

type world struct {
	h          *plugintest.Harness
	budgets    *budgets.Store
	ledger     *ledger.Store
	allocation *allocation.Store
}

// newWorld writes the costs through the ledger, judges them with the
// anomaly detector and evaluates budgets made in the budget store, on a
// database of the dialect, and serves the views (and the anomaly routes,
// for acknowledgement) through the plugin protocol.
func newWorld(t *testing.T, dialect string) *world {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, ledger.Migrations(), "cost_migrations"); err != nil {
		t.Fatal(err)
	}
	led := &ledger.Store{DB: db}
	rows := costRows()
	if err := led.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// The spiky service by resource: an app bills all but 34 cents a day,
	// which name no resource.
	var resources []ledger.ResourceDay
	for _, r := range rows {
		if r.Service == markup {
			resources = append(resources,
				ledger.ResourceDay{SubscriptionID: r.SubscriptionID, Day: r.Day, ResourceID: appID, Service: r.Service, Currency: r.Currency,
					TenantID: r.TenantID, ResourceGroup: "rg", Month: r.Day.Month(), Cost: r.Cost - 34},
				ledger.ResourceDay{SubscriptionID: r.SubscriptionID, Day: r.Day, Service: r.Service, Currency: r.Currency,
					TenantID: r.TenantID, Month: r.Day.Month(), Cost: 34})
		}
	}
	if _, err := db.NewInsert().Model(&resources).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// The floor a deployment may configure for USD, 50.00: the views are
	// under test here, not the rule, and Virtual Machines' lasting step of
	// +25 % would otherwise be flagged on its first ten days.
	detector := &anomalies.Detector{DB: db, Now: clock, MinImpacts: anomalies.MinImpacts{"USD": 50_00}}
	for _, tn := range tenants {
		if err := led.Rollup(ctx, tn.ID, first, today); err != nil {
			t.Fatal(err)
		}
		if err := detector.Evaluate(ctx, tn, first, today); err != nil {
			t.Fatal(err)
		}
	}
	bs := budgets.NewStore(db)
	eval := &budgets.Evaluator{Store: bs, Now: clock}
	for _, b := range []struct {
		tenant, name, grain, start string
		amount                     ledger.Amount
	}{
		{"t1", "Alpha monthly", budgets.Monthly, "2026-11-01", 100000},
		{"t1", "Alpha yearly", budgets.Annually, "2026-01-01", 10000000},
		{"t2", "Beta budget", budgets.Monthly, "2026-11-01", 1000},
	} {
		now := clock()
		start := mustDay(b.start)
		budget := &budgets.Budget{ID: uuid.NewString(), TenantID: b.tenant, Name: b.name, Amount: b.amount, Currency: "USD", TimeGrain: b.grain,
			StartDay: start, Thresholds: []budgets.Threshold{{Percentage: 80, ContactEmails: []string{"finops@example.com"}}},
			Source: budgets.SourceSteward, Status: budgets.StatusActive, CreatedAt: now, UpdatedAt: now}
		budget.PeriodStart = budget.PeriodOn(today).Start
		if err := bs.Create(ctx, budget); err != nil {
			t.Fatal(err)
		}
		if _, err := eval.EvaluateBudget(ctx, budget); err != nil {
			t.Fatal(err)
		}
	}
	alloc := &allocation.Store{DB: db}
	v := &views.Handlers{Reports: &reports.Store{DB: db}, Anomalies: &anomalies.Store{DB: db}, Budgets: bs, Allocation: alloc, Now: clock}
	ack := &anomalies.Handlers{DB: db, Now: clock}
	budgetAPI := &budgets.Handlers{Store: bs, Evaluator: eval, Syncer: &budgets.Syncer{Store: bs, Evaluator: eval}}
	v.BudgetEditor = &views.BudgetEditor{API: budgetAPI, Views: v}
	v.AnomalyAPI = ack
	reads := &reports.Handlers{Store: v.Reports, Now: clock}
	fragments, pages, nav := v.Views()
	p := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		v.Host, ack.Host, budgetAPI.Host, budgetAPI.Logger, reads.Host = env.Host, env.Host, env.Host, env.Logger, env.Host
		return &sdk.Plugin{Routes: slices.Concat(reads.Routes(), ack.Routes(), v.Routes()), Fragments: fragments, Pages: pages, Nav: nav}, nil
	}
	return &world{h: plugintest.New(t, sdk.Definition{Name: "cost"}, p, plugintest.Options{Tenants: tenants}), budgets: bs, ledger: led, allocation: alloc}
}

// get answers the view's status and HTML.
func (w *world) get(t *testing.T, path string, who sdk.Principal) (int, string) {
	t.Helper()
	resp := w.h.Do(httptest.NewRequest(http.MethodGet, path, nil), who)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// html is the view's HTML, which must answer 200.
func (w *world) html(t *testing.T, path string, who sdk.Principal) string {
	t.Helper()
	status, body := w.get(t, path, who)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return body
}

func contains(t *testing.T, what, html string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(html, s) {
			t.Errorf("%s lacks %q", what, s)
		}
	}
}

func lacks(t *testing.T, what, html string, unwanted ...string) {
	t.Helper()
	for _, s := range unwanted {
		if strings.Contains(html, s) {
			t.Errorf("%s shows %q", what, s)
		}
	}
}

var tags = regexp.MustCompile(`<[^>]*>`)

// text is the HTML's text, tags removed, entities as written.
func text(html string) string { return tags.ReplaceAllString(html, "") }

func TestViews(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			t.Run("card", func(t *testing.T) { testCard(t, w) })
			t.Run("page", func(t *testing.T) { testPage(t, w) })
			t.Run("refused tenant", func(t *testing.T) { testRefused(t, w) })
			t.Run("budget editor", func(t *testing.T) { testBudgetEditor(t, w) })
			t.Run("breakdown", func(t *testing.T) { testBreakdown(t, w) })
			t.Run("analysis", func(t *testing.T) { testAnalysis(t, w) })
			t.Run("cost centres", func(t *testing.T) { testCostCentres(t, w) })
			// Last: it changes the anomalies.
			t.Run("acknowledge", func(t *testing.T) { testAcknowledge(t, w) })
		})
	}
}

// testCard: Alpha's user sees the spend of the last 30 days per currency
// against the 30 before, to the cent (USD 30 × 100.00 + 30 × 12.34 +
// 500.00, before it 30 × 80.00 + 30 × 12.34; EUR 30 × 5.05), its one
// anomaly and its exceeded budget of two, and nothing of Beta; a tenant
// without costs gets the empty state.
func testCard(t *testing.T, w *world) {
	card := w.html(t, views.CardPath, userA)
	contains(t, "Alpha's card", text(card),
		"Spend in USD, last 30 days", "3,870.20 USD", "up 39.7 % on the 30 days before (2,770.20 USD)",
		"Spend in EUR, last 30 days", "151.50 EUR", "unchanged on the 30 days before (151.50 EUR)",
		"Anomalies to review1", "Budgets at risk1 of 2", "1 exceeded, 0 critical, 0 warning",
		"Daily cost in USD, last 30 days", "Daily cost in EUR, last 30 days")
	contains(t, "Alpha's card", card, `href="/costs"`)
	lacks(t, "Alpha's card", card, "Beta")

	scoped := w.html(t, views.CardPath+"?tenant_id=t1", userA)
	contains(t, "the card scoped to Alpha", scoped, `href="/costs?tenant_id=t1"`, "3,870.20 USD")

	all := text(w.html(t, views.CardPath, admin))
	// Alpha's and Beta's USD: 3,870.20 + 30 × 50.00 + 450.00.
	contains(t, "the admin's card", all, "5,820.20 USD", "Anomalies to review2", "Budgets at risk2 of 3", "2 exceeded")

	empty := w.html(t, views.CardPath+"?tenant_id=t3", userA)
	contains(t, "Gamma's card", empty, "It arrives with the next costs sync.")
	lacks(t, "Gamma's card", empty, "USD", "Anomalies")
}

// testPage: the trend of 90 days with its forecast per currency, the top
// services with a name that is markup escaped, the anomaly to
// acknowledge, the budgets with status bars and exact figures, and the
// chargeback form of the month to date.
func testPage(t *testing.T, w *world) {
	page := w.html(t, views.PagePath, userA)
	txt := text(page)
	// 90 days to today: Virtual Machines 60 × 80.00 + 30 × 100.00, the
	// markup service 90 × 12.34 + 500.00; Storage 90 × 5.05.
	contains(t, "Alpha's page", txt, "Daily cost in USD", "Daily cost in EUR", "Forecast with weekly season (forecast)", "80 % prediction interval",
		"Total of the 90 days to 2026-11-10: 9,410.60 USD.", "Total of the 90 days to 2026-11-10: 454.50 EUR.", "Forecast of the next 30 days: about ",
		"by Holt-Winters smoothing with a weekly season through the daily costs of the last 90 days; of the month to 2026-11-30: about ")
	contains(t, "Alpha's page", page, "chart-forecast", "chart-band")
	// The top services of the last 30 days, costliest first per currency.
	contains(t, "Alpha's page", txt, "Virtual Machines3,000.00 USD77.52 %", "870.20 USD22.48 %", "Storage151.50 EUR100 %")
	// The anomaly, its figures exact.
	contains(t, "Alpha's page", txt, "Alpha · 2026-11-07", "512.34 USDexpected 12.34 USD&#43;500.00 USD&#43;4,051.86 %", "1 of 1 anomalies not yet acknowledged")
	contains(t, "Alpha's page", page, `hx-post="/partials/cost-anomalies/`, `/acknowledge"`, `hx-get="/partials/cost-anomalies"`, `name="note"`)
	// A picked brand's anomaly filter carries brand_id.
	contains(t, "a brand's anomalies", w.html(t, views.AnomaliesPath+"?brand_id=b-1", userA), `<input type="hidden" name="brand_id" value="b-1">`)
	// The markup is text wherever the service is shown.
	if n := strings.Count(page, "&lt;script&gt;alert(&#34;cost&#34;)&lt;/script&gt;"); n < 3 {
		t.Errorf("the markup service is shown escaped %d times, want in the services, the anomaly and its button", n)
	}
	lacks(t, "Alpha's page", page, "<script")
	// Budgets: November to date, 10 × 100.00 + 10 × 12.34 + 500.00 of
	// 1,000.00, is exceeded; the year's is active.
	contains(t, "Alpha's page", txt, "Alpha monthlyAlpha2026-11-01 to 2026-11-30Exceeded1,623.40 USD1,000.00 USD", "Alpha yearly", "2 of 2 budgets.")
	contains(t, "Alpha's page", page, `class="health-critical"><div class="bar-head"><span class="bar-label">Alpha monthly (Alpha)`)
	// Chargeback of both of the user's tenants, the month to date.
	contains(t, "Alpha's page", page, `action="/api/v1/costs/chargeback"`, `name="start_date" value="2026-11-01"`, `name="end_date" value="2026-11-10"`,
		`name="format" value="csv"`)
	lacks(t, "Alpha's page", page, "Beta")

	one := w.html(t, views.PagePath+"?tenant_id=t1", userA)
	contains(t, "Alpha's page scoped to it", one, `action="/api/v1/costs/chargeback/t1"`, `<input type="hidden" name="tenant_id" value="t1">`,
		`/acknowledge?tenant_id=t1"`)

	gamma := text(w.html(t, views.PagePath+"?tenant_id=t3", userA))
	contains(t, "Gamma's page", gamma, "No cost data yet. It arrives with the next costs sync.", "No costs in the last 30 days.",
		"No anomalies to acknowledge.", "No budgets yet.")
	lacks(t, "Gamma's page", gamma, "Alpha", "USD")

	beta := text(w.html(t, views.PagePath, admin))
	contains(t, "the admin's page", beta, betaService, "Beta budget", "2 of 2 anomalies")
}

// testCostCentres: with a brand picked, the page shows its costs of the
// month to date by cost centre under its rules — s1's resources to Web
// (10 × 12.34 + 500.00, its 0.34 a day of no resource included), Virtual
// Machines, which the ledger holds without resources, and the EUR
// Storage Unallocated — with the ledger's totals and the form that
// downloads the CSV of the brand; without one, a word to pick a brand.
func testCostCentres(t *testing.T, w *world) {
	const brand = "0b0b0b0b-0000-4000-8000-000000000001"
	rules := []allocation.Rule{{Kind: allocation.KindSubscription, SubscriptionID: "s1", CostCentre: "Web"}}
	if err := w.allocation.Replace(context.Background(), brand, rules, "admin", clock()); err != nil {
		t.Fatal(err)
	}
	page := w.html(t, views.PagePath+"?brand_id="+brand, userA)
	contains(t, "a brand's page", text(page), "Chargeback by cost centre", "Costs by cost centre, 2026-11-01 to 2026-11-10",
		"Unallocated50.50 EUR0.00 EUR50.50 EUR", "Web623.40 USD0.00 USD623.40 USD", "Unallocated1,000.00 USD0.00 USD1,000.00 USD",
		"In all 50.50 EUR, 1,623.40 USD: the ledger&#39;s total, to the cent.")
	contains(t, "a brand's page", page, `action="/api/v1/costs/allocation/chargeback"`, `<input type="hidden" name="brand_id" value="`+brand+`">`,
		`id="allocation-start" type="date" name="start_date" value="2026-11-01"`)
	lacks(t, "a brand's page", page, "Beta")
	contains(t, "the page without a brand", text(w.html(t, views.PagePath, userA)), "Pick a brand with the tenant picker to see its costs by cost centre")
}

// testRefused: a tenant the caller may not see is refused by the SDK
// before any view's handler runs, and none of it is shown.
func testRefused(t *testing.T, w *world) {
	for _, path := range []string{views.CardPath, views.PagePath, views.AnomaliesPath} {
		status, body := w.get(t, path+"?tenant_id=t2", userA)
		if status != http.StatusForbidden {
			t.Errorf("%s of Beta for Alpha's user: %d", path, status)
		}
		lacks(t, path+" refused", body, "Beta", betaService, "USD")
	}
}

// testAcknowledge: the list's Acknowledge button with a note acknowledges
// its anomaly through the API (audited) and answers the list without it,
// saying so with an Undo button; the card counts none; the acknowledged
// list shows the note; Undo brings the anomaly back. Another tenant's
// anomaly is refused, and the list's date filter keeps the days asked.
func testAcknowledge(t *testing.T, w *world) {
	list := w.html(t, views.AnomaliesPath, userA)
	m := regexp.MustCompile(`hx-post="(/partials/cost-anomalies/\d+/acknowledge)"`).FindAllStringSubmatch(list, -1)
	if len(m) != 1 {
		t.Fatalf("Alpha's anomaly list has %d buttons:\n%s", len(m), list)
	}
	contains(t, "the list", list, `id="cost-anomalies"`, `hx-target="#cost-anomalies"`, `hx-swap="outerHTML"`, "1 of 1 anomalies not yet acknowledged, newest first.")
	admins := w.html(t, views.AnomaliesPath+"?tenant_id=t2", admin)
	beta := regexp.MustCompile(`hx-post="(/partials/cost-anomalies/\d+/acknowledge)\?tenant_id=t2"`).FindStringSubmatch(admins)
	if beta == nil {
		t.Fatalf("Beta's list for the admin:\n%s", admins)
	}
	for _, c := range []struct {
		path string
		want int
	}{{beta[1], http.StatusNotFound}, {beta[1] + "?tenant_id=t2", http.StatusForbidden}} {
		if status, body := w.send(t, http.MethodPost, c.path, url.Values{"note": {"mine now"}}, userA); status != c.want || strings.Contains(body, betaService) {
			t.Errorf("Alpha's user acknowledges Beta's anomaly at %s: %d %s", c.path, status, body)
		}
	}
	if status, _ := w.send(t, http.MethodPost, m[0][1], url.Values{"note": {strings.Repeat("n", 1001)}}, userA); status != http.StatusOK {
		t.Errorf("a note too long: %d", status)
	}
	contains(t, "the list after a note too long", text(w.html(t, views.AnomaliesPath, userA)), "1 of 1 anomalies not yet acknowledged")

	status, after := w.send(t, http.MethodPost, m[0][1], url.Values{"note": {"Load test, planned"}}, userA)
	if status != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", status, after)
	}
	contains(t, "the list after", text(after), "Acknowledged the anomaly of", "noting “Load test, planned”", "No anomalies to acknowledge.")
	undo := regexp.MustCompile(`hx-delete="(/partials/cost-anomalies/\d+/acknowledge)"`).FindStringSubmatch(after)
	if undo == nil {
		t.Fatalf("no Undo button after the acknowledgement:\n%s", after)
	}
	contains(t, "the card after", text(w.html(t, views.CardPath, userA)), "Anomalies to review0")
	contains(t, "the admin's list", text(w.html(t, views.AnomaliesPath, admin)), betaService, "1 of 1 anomalies")
	acked := text(w.html(t, views.AnomaliesPath+"?status=acknowledged", userA))
	contains(t, "the acknowledged list", acked, "“Load test, planned”", "1 of 1 acknowledged anomalies")
	entries := w.h.AuditEntries()
	if !slices.ContainsFunc(entries, func(e plugintest.AuditEntry) bool {
		return e.Action == "anomaly.acknowledge.success" && e.Details["note"] == "Load test, planned" && e.TenantID == "t1"
	}) {
		t.Errorf("no audit entry of the acknowledgement with its note: %+v", entries)
	}

	status, back := w.send(t, http.MethodDelete, undo[1], nil, userA)
	contains(t, "the list after the undo", text(back), "is to acknowledge again.", "1 of 1 anomalies not yet acknowledged")
	if status != http.StatusOK || !slices.ContainsFunc(w.h.AuditEntries(), func(e plugintest.AuditEntry) bool { return e.Action == "anomaly.unacknowledge.success" }) {
		t.Errorf("undo: %d, or not audited", status)
	}

	// The date filter: the anomaly is of 2026-11-07.
	contains(t, "the list of November 8 on", text(w.html(t, views.AnomaliesPath+"?start_date=2026-11-08", userA)), "No anomalies match.")
	contains(t, "the list of November 7", text(w.html(t, views.AnomaliesPath+"?start_date=2026-11-07&end_date=2026-11-07&status=all", userA)), "1 of 1 anomalies, newest first")
	contains(t, "a list of bad dates", text(w.html(t, views.AnomaliesPath+"?start_date=7.11.2026", userA)), "The dates must be YYYY-MM-DD.")
	contains(t, "a list ending before it starts", text(w.html(t, views.AnomaliesPath+"?start_date=2026-11-08&end_date=2026-11-07", userA)), "The last day must not be before the first.")
}

// testBreakdown: an anomaly's panel loads the day's cost of its service by
// resource, each linking its page, of its tenant only.
func testBreakdown(t *testing.T, w *world) {
	page := w.html(t, views.PagePath, userA)
	m := regexp.MustCompile(`<details class="cost-breakdown" hx-get="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the anomaly has no drill-down panel:\n%s", page)
	}
	path := strings.ReplaceAll(m[1], "&amp;", "&")
	panel := w.html(t, path, userA)
	contains(t, "the drill-down", text(panel), "app-1 (rg)s1512.00 USD", "(costs of no resource)s10.34 USD", "2 resources, 512.34 USD in all.")
	contains(t, "the drill-down", panel, "Cost of &lt;script&gt;", `<a href="/resources/item?resource_id=`+url.QueryEscape(appID)+`">app-1 (rg)</a>`)
	lacks(t, "the drill-down", panel, "<script")
	q := url.Values{"tenant_id": {"t2"}, "date": {"2026-11-08"}, "service": {betaService}}
	if status, body := w.get(t, views.BreakdownPath+"?"+q.Encode(), userA); status != http.StatusForbidden || strings.Contains(body, "500.00") {
		t.Errorf("Beta's drill-down for Alpha's user: %d %s", status, body)
	}
	q.Set("tenant_id", "t1")
	contains(t, "a day of another tenant's service", text(w.html(t, views.BreakdownPath+"?"+q.Encode(), userA)), "No costs of "+betaService)
	q.Set("date", "08.11.2026")
	if status, _ := w.get(t, views.BreakdownPath+"?"+q.Encode(), userA); status != http.StatusUnprocessableEntity {
		t.Errorf("a bad date: %d", status)
	}
}
