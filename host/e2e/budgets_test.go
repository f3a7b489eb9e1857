package e2e

import (
	"context"
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
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk/protocol"
)

const (
	budgetDirA = "11111111-1111-1111-1111-111111111111"
	budgetDirB = "22222222-2222-2222-2222-222222222222"
	budgetSubA = "aaaaaaaa-0000-0000-0000-0000000000a1"
	budgetSubB = "bbbbbbbb-0000-0000-0000-0000000000b1"
)

// budgetWorld has Brand B (Steward's own directory) and Brand A
// (delegated), each with a subscription that cost 900.00 today, which the
// simulated provider counts in its budgets' spend.
func budgetWorld(t *testing.T, today string) string {
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: budgetDirB, Subscriptions: []world.Subscription{{ID: budgetSubB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: budgetDirA, Subscriptions: []world.Subscription{{ID: budgetSubA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		Costs: []world.Cost{
			{SubscriptionID: budgetSubA, Date: today, Service: "VM", ResourceGroup: "rg", Cost: 900, Currency: "USD"},
			{SubscriptionID: budgetSubB, Date: today, Service: "VM", ResourceGroup: "rg", Cost: 900, Currency: "USD"},
		},
	})
}

// budgetView is the part of a budget the test reads.
type budgetView struct {
	ID                 string        `json:"id"`
	TenantID           string        `json:"tenant_id"`
	SubscriptionID     *string       `json:"subscription_id"`
	Name               string        `json:"name"`
	Amount             float64       `json:"amount"`
	CurrentSpend       float64       `json:"current_spend"`
	UtilizationPercent float64       `json:"utilization_percent"`
	Status             string        `json:"status"`
	EndDate            *string       `json:"end_date"`
	RecentAlerts       []budgetAlert `json:"recent_alerts"`
}

type budgetAlert struct {
	ID       int64  `json:"id"`
	BudgetID string `json:"budget_id"`
	Status   string `json:"status"`
}

// addCost writes a day's cost of a tenant's subscription into the cost
// plugin's ledger and its rollups, as the cost sync does from the world:
// the row is the world's, so whichever writes it first, the ledger holds
// the same.
func addCost(t *testing.T, h *host, tenantID, sub string, day time.Time, cents int64) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Store{DB: h.pluginDB("cost")}
	d := ledger.DayOf(day)
	if err := l.Upsert(ctx, []ledger.Cost{{SubscriptionID: sub, Day: d, Service: "VM", ResourceGroup: "rg", Currency: "USD", TenantID: tenantID, Cost: ledger.Amount(cents)}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Rollup(ctx, tenantID, d, d); err != nil {
		t.Fatal(err)
	}
}

func jsonBody(t *testing.T, v any) *strings.Reader {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReader(string(b))
}

// TestBudgets: the budget routes through the host with the cost plugin
// and the simulated cloud, on both databases — a standard user's budget
// with its status and alert from the ledger, isolation from another
// tenant's budgets and alerts, acknowledgement, partial update, deletion,
// the provider push, the 422s the host and the plugin answer, and the
// audit trail.
func TestBudgets(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testBudgets(t, dialect) })
	}
}

func testBudgets(t *testing.T, dialect string) {
	now := time.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	o := hostOpts{pluginsHCL: costPlugins(""), env: map[string]string{"STEWARD_SIM_WORLD": budgetWorld(t, today.Format(time.DateOnly)),
		"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	tenantA, tenantB := tenantID(t, h, budgetDirA), tenantID(t, h, budgetDirB)
	u := tenancy.User{DirectoryTenantID: budgetDirA, Subject: "oid-budget-a", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	addCost(t, h, tenantA, budgetSubA, today, 90000)
	addCost(t, h, tenantB, budgetSubB, today, 90000)

	post := func(token, path string, body any) response {
		return h.do(http.MethodPost, path, token, jsonBody(t, body), "Content-Type", "application/json")
	}
	body := func(tenant, name string) map[string]any {
		return map[string]any{"tenant_id": tenant, "name": name, "amount": 1000, "time_grain": "Monthly", "start_date": monthStart,
			"thresholds": []any{map[string]any{"percentage": 80, "contact_emails": []string{"finops@brand-a.example"}}}}
	}

	// A standard user's budget: 900.00 of 1000.00 this month is critical,
	// and the 80 % threshold raised one alert.
	var a budgetView
	r := post(tokA, "/api/v1/budgets", body(tenantA, "A monthly"))
	expectStatus(t, "create", r, http.StatusCreated)
	r.json(t, &a)
	if a.TenantID != tenantA || a.CurrentSpend != 900 || a.UtilizationPercent != 90 || a.Status != "critical" || len(a.RecentAlerts) != 1 || a.RecentAlerts[0].Status != "pending" {
		t.Fatalf("created %+v", a)
	}
	expectStatus(t, "duplicate", post(tokA, "/api/v1/budgets", body(tenantA, "a MONTHLY")), http.StatusConflict)
	expectStatus(t, "create in another tenant", post(tokA, "/api/v1/budgets", body(tenantB, "theirs")), http.StatusForbidden)
	var b budgetView
	r = post(admin, "/api/v1/budgets", body(tenantB, "B monthly"))
	expectStatus(t, "admin creates in B", r, http.StatusCreated)
	r.json(t, &b)

	// Tenant B's budget is refused to the user of A (403, as the
	// interface has it) and its alert does not exist for it (404); neither
	// answer tells anything of B.
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/api/v1/budgets/" + b.ID, http.StatusForbidden},
		{http.MethodPatch, "/api/v1/budgets/" + b.ID, http.StatusForbidden},
		{http.MethodDelete, "/api/v1/budgets/" + b.ID, http.StatusForbidden},
		{http.MethodGet, "/api/v1/budgets/" + b.ID + "/alerts", http.StatusForbidden},
		{http.MethodPost, "/api/v1/budgets/" + b.ID + "/sync", http.StatusForbidden},
		{http.MethodPost, fmt.Sprintf("/api/v1/budgets/alerts/%d/acknowledge", b.RecentAlerts[0].ID), http.StatusNotFound},
	} {
		var r response
		if c.method == http.MethodPatch {
			r = h.do(c.method, c.path, tokA, strings.NewReader(`{"amount": 1}`), "Content-Type", "application/json")
		} else {
			r = h.do(c.method, c.path, tokA, nil)
		}
		expectStatus(t, c.method+" "+c.path, r, c.status)
		if strings.Contains(string(r.body), "B monthly") || strings.Contains(string(r.body), tenantB) {
			t.Errorf("%s %s leaks B: %s", c.method, c.path, r.body)
		}
		if c.status == http.StatusForbidden && !strings.Contains(string(r.body), protocol.MsgNoTenantAccess) {
			t.Errorf("%s %s: the 403 is %s", c.method, c.path, r.body)
		}
	}
	// A budget that does not exist is 404 to the user and to an admin.
	for _, token := range []string{tokA, admin} {
		expectStatus(t, "missing budget", h.get("/api/v1/budgets/00000000-0000-4000-8000-000000000000", token), http.StatusNotFound)
	}
	var list []budgetView
	h.get("/api/v1/budgets", tokA).json(t, &list)
	if len(list) != 1 || list[0].ID != a.ID {
		t.Errorf("user A lists %+v", list)
	}
	var alerts []budgetAlert
	h.get("/api/v1/budgets/alerts/all", tokA).json(t, &alerts)
	if len(alerts) != 1 || alerts[0].BudgetID != a.ID {
		t.Errorf("user A's alerts %+v", alerts)
	}
	// Every tenant-scoped budget operation refuses tenant B to the user
	// of A and serves A.
	for _, path := range []string{"/api/v1/budgets", "/api/v1/budgets/summary", "/api/v1/budgets/alerts/all"} {
		for _, ids := range []string{tenantB, tenantA + "," + tenantB} {
			r := h.get(path+"?tenant_ids="+ids, tokA)
			expectStatus(t, path+" naming B", r, http.StatusForbidden)
			if strings.Contains(string(r.body), tenantB) {
				t.Errorf("%s naming B leaks it: %s", path, r.body)
			}
		}
		expectStatus(t, path+" naming A", h.get(path+"?tenant_ids="+tenantA, tokA), http.StatusOK)
	}
	var summary struct {
		TotalBudgets int            `json:"total_budgets"`
		ByStatus     map[string]int `json:"by_status"`
	}
	h.get("/api/v1/budgets/summary", admin).json(t, &summary)
	if summary.TotalBudgets != 2 || summary.ByStatus["critical"] != 2 {
		t.Errorf("admin's summary %+v", summary)
	}

	// Acknowledging: a bulk request naming B's alert changes nothing.
	r = post(tokA, "/api/v1/budgets/alerts/bulk-acknowledge", map[string]any{"alert_ids": []int64{a.RecentAlerts[0].ID, b.RecentAlerts[0].ID}})
	expectStatus(t, "bulk naming B's alert", r, http.StatusNotFound)
	r = post(tokA, fmt.Sprintf("/api/v1/budgets/alerts/%d/acknowledge", a.RecentAlerts[0].ID), map[string]any{"resolution_note": "seen"})
	expectStatus(t, "acknowledge", r, http.StatusOK)
	h.get("/api/v1/budgets/"+b.ID+"/alerts", admin).json(t, &alerts)
	if len(alerts) != 1 || alerts[0].Status != "pending" {
		t.Errorf("B's alert after A's requests %+v", alerts)
	}

	// A partial update: only the amount changes, and the status with it.
	var patched budgetView
	r = h.do(http.MethodPatch, "/api/v1/budgets/"+a.ID, tokA, strings.NewReader(`{"amount": 2000}`), "Content-Type", "application/json")
	expectStatus(t, "patch", r, http.StatusOK)
	r.json(t, &patched)
	if patched.Name != "A monthly" || patched.Amount != 2000 || patched.Status != "active" || patched.UtilizationPercent != 45 {
		t.Errorf("patched %+v", patched)
	}

	// The 422s: the host checks parameters, the plugin the body.
	expectInvalid(t, h.get("/api/v1/budgets?limit=1001", tokA), "query.limit")
	expectInvalid(t, h.get("/api/v1/budgets?sort_order=up", tokA), "query.sort_order")
	expectInvalid(t, h.get("/api/v1/budgets/alerts/all?limit=501", tokA), "query.limit")
	expectInvalid(t, h.get("/api/v1/budgets/not-a-uuid", tokA), "path.budget_id")
	bad := body(tenantA, "bad")
	bad["amount"] = 0
	expectInvalid(t, post(tokA, "/api/v1/budgets", bad), "body.amount")

	// A budget of the whole tenant syncs as the provider's cost of this
	// month summed over the tenant's subscriptions, and needs no e-mail.
	var summed struct {
		Action        string   `json:"action"`
		ProviderSpend float64  `json:"provider_current_spend"`
		Subscriptions []string `json:"subscriptions"`
	}
	quiet := body(tenantA, "A quiet")
	quiet["thresholds"] = []any{map[string]any{"percentage": 50}}
	var q budgetView
	r = post(tokA, "/api/v1/budgets", quiet)
	expectStatus(t, "budget without contacts", r, http.StatusCreated)
	r.json(t, &q)
	if q.Status != "critical" || len(q.RecentAlerts) != 1 || q.RecentAlerts[0].Status != "pending" {
		t.Errorf("a budget of 1000.00 with 900.00 spent and a 50 %% threshold without contacts: %+v", q)
	}
	r = h.do(http.MethodPost, "/api/v1/budgets/"+a.ID+"/sync", tokA, nil)
	expectStatus(t, "sync a budget of the whole tenant", r, http.StatusOK)
	r.json(t, &summed)
	if summed.Action != "summed" || summed.ProviderSpend != 900 || len(summed.Subscriptions) != 1 || summed.Subscriptions[0] != budgetSubA {
		t.Errorf("summed %s", r.body)
	}

	// A subscription budget is pushed to the provider, which reports the
	// world's cost of this month.
	var sub budgetView
	sb := body(tenantA, "A prod")
	sb["subscription_id"] = budgetSubA
	r = post(tokA, "/api/v1/budgets", sb)
	expectStatus(t, "subscription budget", r, http.StatusCreated)
	r.json(t, &sub)
	var pushed struct {
		Action        string  `json:"action"`
		ProviderSpend float64 `json:"provider_current_spend"`
	}
	r = h.do(http.MethodPost, "/api/v1/budgets/"+sub.ID+"/sync", tokA, nil)
	expectStatus(t, "sync one", r, http.StatusOK)
	r.json(t, &pushed)
	if pushed.Action != "pushed" || pushed.ProviderSpend != 900 {
		t.Errorf("pushed %+v", pushed)
	}
	var all struct {
		Tenants, Pushed, Summed, Failed int
	}
	r = h.do(http.MethodPost, "/api/v1/budgets/sync/all", tokA, nil)
	expectStatus(t, "sync all", r, http.StatusOK)
	r.json(t, &all)
	if all.Tenants != 1 || all.Pushed != 1 || all.Summed != 2 || all.Failed != 0 {
		t.Errorf("sync all %s", r.body)
	}

	expectStatus(t, "delete", h.do(http.MethodDelete, "/api/v1/budgets/"+a.ID, tokA, nil), http.StatusNoContent)
	expectStatus(t, "deleted", h.get("/api/v1/budgets/"+a.ID, tokA), http.StatusNotFound)

	var page auditPage
	h.get("/api/v1/audit-logs?action_prefix=budget&limit=500", admin).json(t, &page)
	seen := map[string]bool{}
	for _, e := range page.Items {
		seen[e.Action] = true
		if e.Action == "budget.create.success" && e.ActorID == u.ID && (e.TenantID == nil || *e.TenantID != tenantA) {
			t.Errorf("audit entry %+v", e)
		}
	}
	for _, action := range []string{"budget.create.success", "budget.update.success", "budget.delete.success", "budget.sync.success",
		"budget.sync_all.success", "budget_alert.acknowledge.success"} {
		if !seen[action] {
			t.Errorf("no audit entry %s among %d", action, page.Total)
		}
	}
}
