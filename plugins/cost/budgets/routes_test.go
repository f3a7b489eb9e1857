package budgets_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// TestBudgetLifecycle: create (201), read, list, 409 for a duplicate
// name in the tenant and scope, 403 creating in another tenant, 403 for
// another tenant's budget on every route that names one (without its
// contents), 404 for a missing budget to a user and an admin, delete (204)
// then 404, each change audited.
func TestBudgetLifecycle(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.costs(tenantA, subA, "2026-12-01", 250, "USD")
		f.costs(tenantA, subA, "2026-12-02", 500.55, "USD")
		f.costs(tenantA, subA, "2026-12-02", 999, "EUR") // another currency does not count

		d := f.create(userA, budgetBody("Platform monthly", func(b map[string]any) {
			b["end_date"] = "2027-12-31"
			b["thresholds"] = []any{
				map[string]any{"percentage": 50, "contact_emails": []string{"finops@brand-a.example"}},
				map[string]any{"percentage": 100, "contact_emails": []string{"cfo@brand-a.example"}, "threshold_type": "Forecasted"},
			}
		}))
		if d.ID == "" || d.TenantID != tenantA || d.SubscriptionID != nil || d.Name != "Platform monthly" || d.Amount.String() != "1000.00" ||
			d.Currency != "USD" || d.TimeGrain != "Monthly" || d.StartDate.String() != "2026-01-01" || d.EndDate == nil || d.EndDate.String() != "2027-12-31" ||
			d.Source != budgets.SourceSteward || d.CreatedBy != userA.ID || !d.Notifications.Enabled {
			t.Fatalf("created %+v", d)
		}
		// 750.55 of 1000.00 spent on December 1 and 2, of 31 days.
		if d.CurrentSpend.String() != "750.55" || d.UtilizationPercent != 75.05 || d.Status != budgets.StatusWarning ||
			d.PeriodStart.String() != "2026-12-01" || d.PeriodEnd.String() != "2026-12-31" || d.ForecastSpend.String() != "1551.13" {
			t.Errorf("spend %s, %v%%, %s, period %s..%s, forecast %s", d.CurrentSpend, d.UtilizationPercent, d.Status, d.PeriodStart, d.PeriodEnd, d.ForecastSpend)
		}
		// The 50 % threshold and the forecast's 100 % were reached at once.
		if len(d.RecentAlerts) != 2 {
			t.Errorf("recent alerts %+v", d.RecentAlerts)
		}
		got := f.get(admin, d.ID)
		if got.ID != d.ID || got.CurrentSpend != d.CurrentSpend || len(got.Thresholds) != 2 || got.Thresholds[0].ThresholdType != budgets.Actual {
			t.Errorf("read back %+v", got)
		}

		// A duplicate name in the tenant's scope, whatever its case.
		f.do(admin, http.MethodPost, budgetsAt, budgetBody("PLATFORM monthly")).want(t, "duplicate", http.StatusConflict)
		// The same name for a subscription, or in another tenant, is another scope.
		sub := f.create(userA, budgetBody("Platform monthly", func(b map[string]any) { b["subscription_id"] = subA }))
		if sub.SubscriptionID == nil || *sub.SubscriptionID != subA || sub.ProviderName != "steward-"+sub.ID {
			t.Errorf("subscription budget %+v", sub.View)
		}
		other := f.create(admin, budgetBody("Platform monthly", func(b map[string]any) { b["tenant_id"] = tenantB }))

		// A user of tenant A may neither create in B nor see or touch B's
		// budget: 403, in the one wording of every tenant refusal.
		f.do(userA, http.MethodPost, budgetsAt, budgetBody("Theirs", func(b map[string]any) { b["tenant_id"] = tenantB })).want(t, "create in another tenant", http.StatusForbidden)
		for _, c := range []struct{ method, path, body string }{
			{http.MethodGet, budgetsAt + "/" + other.ID, ""},
			{http.MethodPatch, budgetsAt + "/" + other.ID, `{"amount": 1}`},
			{http.MethodDelete, budgetsAt + "/" + other.ID, ""},
			{http.MethodGet, budgetsAt + "/" + other.ID + "/alerts", ""},
			{http.MethodPost, budgetsAt + "/" + other.ID + "/sync", ""},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := f.do(userA, c.method, c.path, body).want(t, c.method+" "+c.path+" of another tenant", http.StatusForbidden)
			var p sdk.Problem
			r.decode(t, &p)
			if p.Detail != protocol.MsgNoTenantAccess || strings.Contains(string(r.body), "Platform") || strings.Contains(string(r.body), tenantB) {
				t.Errorf("%s %s: the 403 is %s", c.method, c.path, r.body)
			}
		}
		if b := f.get(admin, other.ID); b.Amount.String() != "1000.00" {
			t.Errorf("user A's refused requests changed B's budget: %+v", b.View)
		}
		for _, p := range []sdk.Principal{userA, admin} {
			f.do(p, http.MethodGet, budgetsAt+"/00000000-0000-4000-8000-000000000000", nil).want(t, "missing budget to "+p.ID, http.StatusNotFound)
			f.do(p, http.MethodPost, budgetsAt+"/00000000-0000-4000-8000-000000000000/sync", nil).want(t, "syncing a missing budget as "+p.ID, http.StatusNotFound)
		}
		f.do(userA, http.MethodGet, budgetsAt+"/not-a-uuid", nil).wantInvalid(t, "non-UUID id", "path.budget_id")

		var list []budgets.View
		r := f.do(userA, http.MethodGet, budgetsAt, nil).want(t, "list", http.StatusOK)
		r.decode(t, &list)
		if len(list) != 2 || r.header.Get("X-Total-Count") != "2" || list[0].ID != sub.ID || list[1].ID != d.ID {
			t.Errorf("user A lists %d budgets (total %s): %+v", len(list), r.header.Get("X-Total-Count"), list)
		}
		f.do(userA, http.MethodGet, budgetsAt+"?tenant_ids="+tenantB, nil).want(t, "list naming another tenant", http.StatusForbidden)
		f.do(admin, http.MethodGet, budgetsAt+"?tenant_ids="+tenantB, nil).want(t, "admin lists B", http.StatusOK).decode(t, &list)
		if len(list) != 1 || list[0].ID != other.ID {
			t.Errorf("admin lists B as %+v", list)
		}

		f.do(userA, http.MethodDelete, budgetsAt+"/"+d.ID, nil).want(t, "delete", http.StatusNoContent)
		f.do(userA, http.MethodGet, budgetsAt+"/"+d.ID, nil).want(t, "deleted budget", http.StatusNotFound)
		f.do(userA, http.MethodGet, budgetsAt+"/"+d.ID+"/alerts", nil).want(t, "deleted budget's alerts", http.StatusNotFound)
		f.do(userA, http.MethodDelete, budgetsAt+"/"+d.ID, nil).want(t, "delete twice", http.StatusNotFound)

		want := []string{
			"budget.create.success " + tenantA + " " + d.ID,
			"budget.create.success " + tenantA + " " + sub.ID,
			"budget.create.success " + tenantB + " " + other.ID,
			"budget.delete.success " + tenantA + " " + d.ID,
		}
		if got := f.audited(); !slices.Equal(got, want) {
			t.Errorf("audited\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, e := range f.h.AuditEntries() {
			if e.ResourceType != "budget" || e.Status != "success" || e.Principal.ID == "" {
				t.Errorf("audit entry %+v", e)
			}
		}
	})
}

// TestCreateBodyBounds: every bound of every body field is a 422 naming
// it, and the values on the bounds are accepted.
func TestCreateBodyBounds(t *testing.T) {
	set := func(k string, v any) func(map[string]any) { return func(b map[string]any) { b[k] = v } }
	del := func(k string) func(map[string]any) { return func(b map[string]any) { delete(b, k) } }
	threshold := func(fields map[string]any) func(map[string]any) {
		return func(b map[string]any) {
			t := map[string]any{"percentage": 80, "contact_emails": []string{"a@example.com"}}
			for k, v := range fields {
				if v == nil {
					delete(t, k)
				} else {
					t[k] = v
				}
			}
			b["thresholds"] = []any{t}
		}
	}
	thresholds := func(n int) func(map[string]any) {
		return func(b map[string]any) {
			list := []any{}
			for i := 1; i <= n; i++ {
				list = append(list, map[string]any{"percentage": i * 10, "contact_emails": []string{"a@example.com"}})
			}
			b["thresholds"] = list
		}
	}
	emails := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("u%d@example.com", i)
		}
		return out
	}
	eachDialect(t, func(t *testing.T, f *fixture) {
		for _, c := range []struct {
			what   string
			change func(map[string]any)
			loc    string
		}{
			{"no tenant", del("tenant_id"), "body.tenant_id"},
			{"tenant not a string", set("tenant_id", 7), "body.tenant_id"},
			{"no name", del("name"), "body.name"},
			{"empty name", set("name", "  "), "body.name"},
			{"name of 101", set("name", strings.Repeat("n", 101)), "body.name"},
			{"markup in name", set("name", "<b>x</b>"), "body.name"},
			{"control character in name", set("name", "a\u0007b"), "body.name"},
			{"null name", set("name", nil), "body.name"},
			{"no amount", del("amount"), "body.amount"},
			{"amount 0", set("amount", 0), "body.amount"},
			{"negative amount", set("amount", -5), "body.amount"},
			{"amount over the maximum", set("amount", 10000000000.01), "body.amount"},
			{"amount of three decimals", set("amount", 10.005), "body.amount"},
			{"amount as a string", set("amount", "10"), "body.amount"},
			{"lower-case currency", set("currency", "usd"), "body.currency"},
			{"currency of four letters", set("currency", "USDX"), "body.currency"},
			{"no time grain", del("time_grain"), "body.time_grain"},
			{"weekly", set("time_grain", "Weekly"), "body.time_grain"},
			{"no start date", del("start_date"), "body.start_date"},
			{"start mid-month", set("start_date", "2026-01-02"), "body.start_date"},
			{"start not a date", set("start_date", "January"), "body.start_date"},
			{"start before 2000", set("start_date", "1999-12-01"), "body.start_date"},
			{"start after 2099", set("start_date", "2100-01-01"), "body.start_date"},
			{"end on the start", set("end_date", "2026-01-01"), "body.end_date"},
			{"end before the start", set("end_date", "2025-12-31"), "body.end_date"},
			{"end not a date", set("end_date", "2026-13-01"), "body.end_date"},
			{"no thresholds", del("thresholds"), "body.thresholds"},
			{"empty thresholds", set("thresholds", []any{}), "body.thresholds"},
			{"six thresholds", thresholds(6), "body.thresholds"},
			{"thresholds not an array", set("thresholds", "80"), "body.thresholds"},
			{"percentage 0", threshold(map[string]any{"percentage": 0}), "body.thresholds[0].percentage"},
			{"percentage 1001", threshold(map[string]any{"percentage": 1001}), "body.thresholds[0].percentage"},
			{"fractional percentage", threshold(map[string]any{"percentage": 80.5}), "body.thresholds[0].percentage"},
			{"no percentage", threshold(map[string]any{"percentage": nil}), "body.thresholds[0].percentage"},
			{"contacts not an array", threshold(map[string]any{"contact_emails": "a@example.com"}), "body.thresholds[0].contact_emails"},
			{"51 contacts", threshold(map[string]any{"contact_emails": emails(51)}), "body.thresholds[0].contact_emails"},
			{"bad e-mail", threshold(map[string]any{"contact_emails": []string{"finops"}}), "body.thresholds[0].contact_emails[0]"},
			{"named e-mail", threshold(map[string]any{"contact_emails": []string{"Fin <f@example.com>"}}), "body.thresholds[0].contact_emails[0]"},
			{"bad threshold type", threshold(map[string]any{"threshold_type": "Maybe"}), "body.thresholds[0].threshold_type"},
			{"unknown threshold field", threshold(map[string]any{"operator": "EqualTo"}), "body.thresholds[0].operator"},
			{"repeated percentage", set("thresholds", []any{
				map[string]any{"percentage": 80, "contact_emails": []string{"a@example.com"}},
				map[string]any{"percentage": 80, "contact_emails": []string{"b@example.com"}}}), "body.thresholds[1].percentage"},
			{"notifications not an object", set("notifications", []string{}), "body.notifications"},
			{"bad role", set("notifications", map[string]any{"contact_roles": []string{"Admin"}}), "body.notifications.contact_roles[0]"},
			{"eleven roles", set("notifications", map[string]any{"contact_roles": slices.Repeat([]string{"Owner"}, 11)}), "body.notifications.contact_roles"},
			{"bad action group", set("notifications", map[string]any{"contact_groups": []string{"group-1"}}), "body.notifications.contact_groups[0]"},
			{"enabled not a boolean", set("notifications", map[string]any{"enabled": "yes"}), "body.notifications.enabled"},
			{"roles not an array", set("notifications", map[string]any{"contact_roles": "Owner"}), "body.notifications.contact_roles"},
			{"unknown notification field", set("notifications", map[string]any{"locale": "en-us"}), "body.notifications.locale"},
			{"bad subscription id", set("subscription_id", "sub/1"), "body.subscription_id"},
			{"unknown subscription", set("subscription_id", subB), "body.subscription_id"},
			{"unknown field", set("owner", "me"), "body.owner"},
		} {
			f.do(admin, http.MethodPost, budgetsAt, budgetBody("Bounds", c.change)).wantInvalid(t, c.what, c.loc)
		}
		for _, body := range []string{`[]`, `"x"`, `{`, ``, `null`} {
			f.do(admin, http.MethodPost, budgetsAt, body).wantInvalid(t, "body "+body, "body")
		}
		// Values on the bounds are accepted.
		for i, change := range []func(map[string]any){
			set("amount", 0.01), set("amount", 10000000000), set("name", strings.Repeat("n", 100)), thresholds(5),
			threshold(map[string]any{"percentage": 1}), threshold(map[string]any{"percentage": 1000, "threshold_type": "Forecasted"}),
			threshold(map[string]any{"contact_emails": emails(50)}), threshold(map[string]any{"contact_emails": nil}),
			threshold(map[string]any{"contact_emails": []string{}}), set("thresholds", []any{map[string]any{"percentage": 80, "contact_emails": nil}}),
			set("currency", "EUR"), set("end_date", "2026-01-02"),
			set("start_date", "2000-01-01"), set("start_date", "2099-12-01"), set("subscription_id", subA), set("subscription_id", nil),
			set("notifications", map[string]any{"enabled": false, "contact_roles": []string{"Owner", "Reader"},
				"contact_groups": []string{"/subscriptions/" + subA + "/resourceGroups/rg/providers/microsoft.insights/actionGroups/finops"}}),
			set("notifications", map[string]any{"contact_roles": nil, "contact_groups": nil}),
		} {
			f.do(admin, http.MethodPost, budgetsAt, budgetBody(fmt.Sprintf("Bound %d", i), change)).want(t, fmt.Sprintf("bound %d", i), http.StatusCreated)
		}
	})
}

// TestQueryBounds: the declared bounds of every query and path parameter
// are 422s naming the parameter, and the values on the bounds pass.
func TestQueryBounds(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		d := f.create(admin, budgetBody("Q"))
		alerts := budgetsAt + "/" + d.ID + "/alerts"
		for path, loc := range map[string]string{
			budgetsAt + "?limit=0":                       "query.limit",
			budgetsAt + "?limit=1001":                    "query.limit",
			budgetsAt + "?limit=ten":                     "query.limit",
			budgetsAt + "?offset=-1":                     "query.offset",
			budgetsAt + "?status=fine":                   "query.status",
			budgetsAt + "?sort_by=owner":                 "query.sort_by",
			budgetsAt + "?sort_order=up":                 "query.sort_order",
			alerts + "?limit=0":                          "query.limit",
			alerts + "?limit=501":                        "query.limit",
			alerts + "?offset=-1":                        "query.offset",
			alerts + "?status=open":                      "query.status",
			budgetsAt + "/alerts/all?limit=0":            "query.limit",
			budgetsAt + "/alerts/all?limit=501":          "query.limit",
			budgetsAt + "/alerts/all?offset=-1":          "query.offset",
			budgetsAt + "/alerts/all?status=open":        "query.status",
			budgetsAt + "/alerts/all?alert_types=spend":  "query.alert_types[0]",
			budgetsAt + "/nope/alerts":                   "path.budget_id",
			budgetsAt + "/12345678-1234-1234-1234-12345": "path.budget_id",
		} {
			f.do(userA, http.MethodGet, path, nil).wantInvalid(t, path, loc)
		}
		for _, path := range []string{budgetsAt + "/alerts/0/acknowledge", budgetsAt + "/alerts/x/acknowledge"} {
			f.do(userA, http.MethodPost, path, nil).wantInvalid(t, path, "path.alert_id")
		}
		for _, path := range []string{
			budgetsAt + "?limit=1&offset=0", budgetsAt + "?limit=1000", budgetsAt + "?sort_by=utilization_percent&sort_order=asc",
			alerts + "?limit=1", alerts + "?limit=500", budgetsAt + "/alerts/all?limit=500&alert_types=threshold,forecast&status=pending",
		} {
			f.do(userA, http.MethodGet, path, nil).want(t, path, http.StatusOK)
		}
	})
}

// TestRoutePrecedence: the literal routes beside /budgets/{budget_id}
// reach their own handlers.
func TestRoutePrecedence(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.create(userA, budgetBody("P"))
		var s budgets.Summary
		f.do(userA, http.MethodGet, budgetsAt+"/summary", nil).want(t, "summary", http.StatusOK).decode(t, &s)
		if s.TotalBudgets != 1 {
			t.Errorf("summary %+v", s)
		}
		var alerts []budgets.AlertView
		f.do(userA, http.MethodGet, budgetsAt+"/alerts/all", nil).want(t, "all alerts", http.StatusOK).decode(t, &alerts)
		var res budgets.SyncResult
		f.do(userA, http.MethodPost, budgetsAt+"/sync/all", nil).want(t, "sync all", http.StatusOK).decode(t, &res)
		if res.Tenants != 1 {
			t.Errorf("sync of user A's tenants %+v", res)
		}
	})
}

// TestListFilterSortPage: filters, every sort key and pages that neither
// repeat nor skip.
func TestListFilterSortPage(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.costs(tenantA, subA, "2026-12-01", 95, "USD")
		var ids []string
		for i, amount := range []float64{300, 100, 200, 50} {
			body := budgetBody(fmt.Sprintf("B%d", i), func(b map[string]any) { b["amount"] = amount })
			if i%2 == 1 {
				body["subscription_id"] = subA
			}
			ids = append(ids, f.create(userA, body).ID)
		}
		list := func(query string) []budgets.View {
			t.Helper()
			var out []budgets.View
			f.do(userA, http.MethodGet, budgetsAt+query, nil).want(t, query, http.StatusOK).decode(t, &out)
			return out
		}
		names := func(vs []budgets.View) string {
			var n []string
			for _, v := range vs {
				n = append(n, v.Name+":"+v.Status)
			}
			return strings.Join(n, ",")
		}
		// 95 of subA's spend: 31.66 %, 95 %, 47.5 % and 190 % (tenant-wide budgets see it too).
		for query, want := range map[string]string{
			"?sort_by=amount&sort_order=asc":                             "B3:exceeded,B1:critical,B2:active,B0:active",
			"?sort_by=amount":                                            "B0:active,B2:active,B1:critical,B3:exceeded",
			"?sort_by=utilization_percent":                               "B3:exceeded,B1:critical,B2:active,B0:active",
			"?sort_by=name&sort_order=asc":                               "B0:active,B1:critical,B2:active,B3:exceeded",
			"?sort_by=status&sort_order=asc&subscription_ids=" + subA:    "B1:critical,B3:exceeded",
			"?sort_by=status&subscription_ids=" + subA:                   "B3:exceeded,B1:critical",
			"?status=active&sort_by=name&sort_order=asc":                 "B0:active,B2:active",
			"?subscription_ids=" + subA + "&sort_by=name&sort_order=asc": "B1:critical,B3:exceeded",
			"?sort_order=asc":                                            "B0:active,B1:critical,B2:active,B3:exceeded",
			"?sort_by=updated_at&sort_order=asc&offset=3":                "B3:exceeded",
		} {
			if got := names(list(query)); got != want {
				t.Errorf("%s: %s, want %s", query, got, want)
			}
		}
		var paged []string
		for off := 0; off < 4; off += 3 {
			for _, v := range list(fmt.Sprintf("?limit=3&offset=%d&sort_by=status", off)) {
				paged = append(paged, v.ID)
			}
		}
		slices.Sort(paged)
		sorted := slices.Clone(ids)
		slices.Sort(sorted)
		if !slices.Equal(paged, sorted) {
			t.Errorf("pages hold %v, want %v", paged, sorted)
		}
	})
}

// TestPatch: only the fields given change, null clears the optional ones
// and is refused for the required, the tenant and scope cannot change, a
// name taken in the scope is 409; the status follows the new amount.
func TestPatch(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.costs(tenantA, subA, "2026-12-03", 850, "USD")
		d := f.create(userA, budgetBody("Original", func(b map[string]any) {
			b["end_date"] = "2027-06-30"
			b["notifications"] = map[string]any{"contact_roles": []string{"Owner"}}
		}))
		f.create(userA, budgetBody("Taken"))
		if d.Status != budgets.StatusWarning {
			t.Fatalf("850 of 1000 with an 80 %% threshold: %s", d.Status)
		}
		path := budgetsAt + "/" + d.ID
		var p budgets.Detail
		f.do(userA, http.MethodPatch, path, `{"amount": 800}`).want(t, "patch amount", http.StatusOK).decode(t, &p)
		if p.Amount.String() != "800.00" || p.Name != "Original" || p.EndDate == nil || p.EndDate.String() != "2027-06-30" || len(p.Thresholds) != 1 ||
			p.Notifications.ContactRoles[0] != "Owner" || p.Status != budgets.StatusExceeded || !p.UpdatedAt.After(d.UpdatedAt) && !p.UpdatedAt.Equal(d.UpdatedAt) {
			t.Errorf("after patching the amount %+v", p.View)
		}
		f.do(userA, http.MethodPatch, path, `{"end_date": null, "notifications": null, "name": "Renamed"}`).want(t, "clear", http.StatusOK).decode(t, &p)
		if p.EndDate != nil || len(p.Notifications.ContactRoles) != 0 || p.Name != "Renamed" || p.Amount.String() != "800.00" {
			t.Errorf("after clearing %+v", p.View)
		}
		f.do(userA, http.MethodPatch, path, `{"tenant_id": "`+tenantA+`", "subscription_id": null}`).want(t, "same tenant and scope", http.StatusOK)
		for body, loc := range map[string]string{
			`{"name": null}`:                                         "body.name",
			`{"amount": null}`:                                       "body.amount",
			`{"thresholds": null}`:                                   "body.thresholds",
			`{"amount": 0}`:                                          "body.amount",
			`{"tenant_id": "` + tenantB + `"}`:                       "body.tenant_id",
			`{"subscription_id": "` + subA + `"}`:                    "body.subscription_id",
			`{"end_date": "2025-01-01"}`:                             "body.end_date",
			`{"start_date": "2028-01-01", "end_date": "2027-12-31"}`: "body.end_date",
			`{"colour": "red"}`:                                      "body.colour",
		} {
			f.do(userA, http.MethodPatch, path, body).wantInvalid(t, body, loc)
		}
		f.do(userA, http.MethodPatch, path, `{"name": "taken"}`).want(t, "rename to a taken name", http.StatusConflict)
		after := f.get(userA, d.ID)
		if after.Name != "Renamed" || after.Amount.String() != "800.00" {
			t.Errorf("refused patches changed the budget: %+v", after.View)
		}
		if got := f.audited(); len(got) != 5 || !strings.HasPrefix(got[2], "budget.update.success") || !strings.HasPrefix(got[4], "budget.update.success") {
			t.Errorf("audited %v", got)
		}
	})
}
