package budgets_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/plugins/cost/budgets"
)

const budgetsAPI = "/providers/Microsoft.Consumption/budgets"

// TestSyncWithTheProvider: a budget of a whole tenant syncs as the sum of
// the provider's costs over the tenant's subscriptions; a Steward
// subscription budget is pushed to the
// simulated provider and comes back with its spend; sync/all pulls the
// provider's own budgets of the caller's tenants, pushes Steward's, counts
// what failed, and removes what the provider dropped; a provider budget
// cannot be changed in Steward; deleting a pushed budget deletes it at the
// provider, and a provider failure keeps it in both.
func TestSyncWithTheProvider(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		tenantWide := f.create(userA, budgetBody("Tenant-wide"))
		var one budgets.BudgetSyncResult
		f.do(userA, http.MethodPost, budgetsAt+"/"+tenantWide.ID+"/sync", nil).want(t, "sync a tenant-wide budget", http.StatusOK).decode(t, &one)
		// The world's December costs of tenant A: subA's 10.00 a day through
		// the 15th, none of subA2; the forecast extends them to 31 days.
		if one.Action != "summed" || one.ProviderName != "" || !slices.Equal(one.Subscriptions, []string{subA, subA2}) ||
			one.ProviderSpend.String() != "150.00" || one.ProviderForecast.String() != "310.00" || one.ProviderCurrency != "USD" ||
			one.Budget.SyncedAt == nil || one.Budget.ID != tenantWide.ID {
			t.Fatalf("summed %+v", one)
		}
		// A subscription the provider cannot read fails the sum, as a 503
		// naming the tenant, and the budget is not marked synced anew.
		f.sim.Faults.Set(cloudsim.ARM, "/subscriptions/"+subA2+"/providers/Microsoft.CostManagement", cloudsim.Fault{Status: http.StatusForbidden})
		r := f.do(userA, http.MethodPost, budgetsAt+"/"+tenantWide.ID+"/sync", nil).want(t, "sum while a subscription is refused", http.StatusServiceUnavailable)
		if !strings.Contains(string(r.body), "Brand A") {
			t.Errorf("the failed sum does not name the tenant: %s", r.body)
		}
		f.sim.Faults.Clear()
		if got := f.get(userA, tenantWide.ID); got.SyncedAt == nil || !got.SyncedAt.Equal(*one.Budget.SyncedAt) {
			t.Errorf("synced at %v after the failed sum, want %v", got.SyncedAt, one.Budget.SyncedAt)
		}

		steward := f.create(userA, budgetBody("Platform", func(b map[string]any) {
			b["subscription_id"] = subA
			b["notifications"] = map[string]any{"contact_roles": []string{"Owner"}}
		}))
		f.do(userA, http.MethodPost, budgetsAt+"/"+steward.ID+"/sync", nil).want(t, "push", http.StatusOK).decode(t, &one)
		// The world's December costs of subA: 10.00 a day through the 15th.
		if one.Action != "pushed" || one.ProviderName != "steward-"+steward.ID || !slices.Equal(one.Subscriptions, []string{subA}) ||
			one.ProviderSpend.String() != "150.00" || one.ProviderCurrency != "USD" ||
			one.Budget.SyncedAt == nil || one.Budget.Source != budgets.SourceSteward {
			t.Fatalf("pushed %+v", one)
		}
		remote, err := f.clients.Budget(ctx, subA, "steward-"+steward.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := remote.Notifications["actual-80"]
		if remote.Amount != 1000 || remote.TimeGrain != "Monthly" || !remote.StartDate.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) ||
			n.Threshold != 80 || n.Operator != "GreaterThanOrEqualTo" || !slices.Equal(n.ContactEmails, []string{"finops@brand-a.example"}) ||
			!slices.Equal(n.ContactRoles, []string{"Owner"}) || !n.Enabled {
			t.Fatalf("at the provider %+v", remote)
		}

		// Budgets made at the provider, in both tenants.
		for sub, name := range map[string]string{subA: "ops-monthly", subB: "brand-b-ops"} {
			_, err := f.clients.SetBudget(ctx, sub, cloud.Budget{Name: name, Amount: 500, TimeGrain: "Monthly", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
				Notifications: map[string]cloud.BudgetNotification{"warn": {Enabled: true, Operator: "GreaterThan", Threshold: 10, ContactEmails: []string{"ops@example.com"}}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		// subA2's budgets fail at the provider.
		f.sim.Faults.Set(cloudsim.ARM, "/subscriptions/"+subA2+budgetsAPI, cloudsim.Fault{Status: http.StatusInternalServerError})
		var res budgets.SyncResult
		f.do(userA, http.MethodPost, budgetsAt+"/sync/all", nil).want(t, "sync all", http.StatusOK).decode(t, &res)
		if res.Tenants != 1 || res.Subscriptions != 2 || res.Created != 1 || res.Updated != 0 || res.Pushed != 1 || res.Summed != 1 || res.Removed != 0 || res.Failed != 1 ||
			len(res.Errors) != 1 || res.Errors[0].SubscriptionID != subA2 {
			t.Fatalf("sync all %+v", res)
		}
		f.sim.Faults.Clear()
		var list []budgets.View
		f.do(userA, http.MethodGet, budgetsAt+"?sort_by=name&sort_order=asc", nil).want(t, "list", http.StatusOK).decode(t, &list)
		if len(list) != 3 || list[0].Name != "ops-monthly" {
			t.Fatalf("after the pull user A has %+v", list)
		}
		ops := list[0]
		if ops.Source != budgets.SourceProvider || ops.ProviderName != "ops-monthly" || ops.CurrentSpend.String() != "150.00" || ops.UtilizationPercent != 30 ||
			ops.Status != budgets.StatusWarning || ops.Currency != "USD" || len(ops.Thresholds) != 1 || ops.Thresholds[0].Percentage != 10 ||
			ops.SubscriptionID == nil || *ops.SubscriptionID != subA || ops.SyncedAt == nil {
			t.Fatalf("pulled %+v", ops)
		}
		if alerts := f.alerts(userA, budgetsAt+"/"+ops.ID+"/alerts"); len(alerts) != 1 || alerts[0].Spend.String() != "150.00" {
			t.Errorf("pulled budget's alerts %s", describe(alerts))
		}
		// Tenant B's provider budget stays out of user A's sync.
		f.do(userA, http.MethodPost, budgetsAt+"/sync/all", `{"tenant_ids": ["`+tenantB+`"]}`).want(t, "sync naming B", http.StatusForbidden)
		f.do(userA, http.MethodPost, budgetsAt+"/sync/all", `{"tenants": []}`).wantInvalid(t, "unknown parameter", "body.tenants")
		f.do(admin, http.MethodGet, budgetsAt+"?tenant_ids="+tenantB, nil).want(t, "B's budgets", http.StatusOK).decode(t, &list)
		if len(list) != 0 {
			t.Fatalf("B's provider budget was pulled by A's sync: %+v", list)
		}
		f.do(admin, http.MethodPost, budgetsAt+"/sync/all", `{"tenant_ids": ["`+tenantB+`"]}`).want(t, "admin syncs B", http.StatusOK).decode(t, &res)
		if res.Tenants != 1 || res.Created != 1 || res.Failed != 0 {
			t.Fatalf("B's sync %+v", res)
		}

		// The provider owns its budgets.
		f.do(userA, http.MethodPatch, budgetsAt+"/"+ops.ID, `{"amount": 5}`).want(t, "patch a provider budget", http.StatusConflict)
		if _, err := f.clients.SetBudget(ctx, subA, cloud.Budget{Name: "ops-monthly", Amount: 100, TimeGrain: "Quarterly", StartDate: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		f.do(userA, http.MethodPost, budgetsAt+"/"+ops.ID+"/sync", nil).want(t, "pull", http.StatusOK).decode(t, &one)
		if one.Action != "pulled" || one.Budget.Amount.String() != "100.00" || one.Budget.TimeGrain != "Quarterly" || one.Budget.Status != budgets.StatusExceeded ||
			one.Budget.PeriodStart.String() != "2026-10-01" || len(one.Budget.Thresholds) != 0 {
			t.Fatalf("pulled again %+v", one)
		}
		if err := f.clients.DeleteBudget(ctx, subA, "ops-monthly"); err != nil {
			t.Fatal(err)
		}
		f.do(userA, http.MethodPost, budgetsAt+"/"+ops.ID+"/sync", nil).want(t, "pull a dropped budget", http.StatusOK).decode(t, &one)
		if one.Action != "missing" {
			t.Errorf("pulling a budget the provider dropped: %+v", one)
		}
		f.do(userA, http.MethodPost, budgetsAt+"/sync/all", `{"tenant_ids": null}`).want(t, "sync all again", http.StatusOK).decode(t, &res)
		if res.Removed != 1 || res.Pushed != 1 || res.Summed != 1 || res.Created != 0 || res.Failed != 0 {
			t.Fatalf("second sync %+v", res)
		}
		f.do(userA, http.MethodGet, budgetsAt+"/"+ops.ID, nil).want(t, "removed provider budget", http.StatusNotFound)

		// Deleting a pushed budget deletes it at the provider, all or nothing.
		f.sim.Faults.Set(cloudsim.ARM, "/subscriptions/"+subA+budgetsAPI, cloudsim.Fault{Status: http.StatusServiceUnavailable})
		f.do(userA, http.MethodDelete, budgetsAt+"/"+steward.ID, nil).want(t, "delete while the provider fails", http.StatusServiceUnavailable)
		f.sim.Faults.Clear()
		f.get(userA, steward.ID)
		f.do(userA, http.MethodDelete, budgetsAt+"/"+steward.ID, nil).want(t, "delete", http.StatusNoContent)
		if _, err := f.clients.Budget(ctx, subA, "steward-"+steward.ID); !errors.Is(err, cloud.ErrNotFound) {
			t.Errorf("the pushed budget outlived its deletion: %v", err)
		}

		var actions []string
		for _, e := range f.audited() {
			if strings.HasPrefix(e, "budget.sync") {
				actions = append(actions, strings.Fields(e)[0])
			}
		}
		if !slices.Equal(actions, []string{"budget.sync.success", "budget.sync.success", "budget.sync_all.warning", "budget.sync_all.success", "budget.sync.success",
			"budget.sync.success", "budget.sync_all.success"}) {
			t.Errorf("sync audit %v", actions)
		}
	})
}

// TestThresholdWithoutContacts: a threshold needs no e-mail address: it is
// stored with none, raises its alert in Steward, and is left out of the
// budget pushed to the provider, which tells no one of a notification
// without contacts (and refuses one); a threshold with addresses is pushed.
func TestThresholdWithoutContacts(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		d := f.create(userA, budgetBody("Quiet", func(b map[string]any) {
			b["subscription_id"] = subA
			b["thresholds"] = []any{
				map[string]any{"percentage": 50},
				map[string]any{"percentage": 90, "contact_emails": []string{"finops@brand-a.example"}},
				map[string]any{"percentage": 100, "contact_emails": nil, "threshold_type": "Forecasted"},
			}
		}))
		if len(d.Thresholds) != 3 || d.Thresholds[0].ContactEmails == nil || len(d.Thresholds[0].ContactEmails) != 0 ||
			d.Thresholds[2].ContactEmails == nil || len(d.Thresholds[2].ContactEmails) != 0 {
			t.Fatalf("thresholds %+v", d.Thresholds)
		}
		f.costs(tenantA, subA, "2026-12-01", 600, "USD")
		alerts := f.alerts(userA, budgetsAt+"/"+d.ID+"/alerts")
		// 600.00 of 1000.00 spent by the 15th, a forecast of 1240.00.
		if describe(alerts) != "forecast 100% 2026-12-01 1240.00 pending; threshold 50% 2026-12-01 600.00 pending" {
			t.Fatalf("alerts %s", describe(alerts))
		}
		for _, a := range alerts {
			if a.ContactEmails == nil || len(a.ContactEmails) != 0 {
				t.Errorf("alert %d names contacts %v", a.ID, a.ContactEmails)
			}
		}
		var one budgets.BudgetSyncResult
		f.do(userA, http.MethodPost, budgetsAt+"/"+d.ID+"/sync", nil).want(t, "push", http.StatusOK).decode(t, &one)
		remote, err := f.clients.Budget(context.Background(), subA, "steward-"+d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := remote.Notifications["actual-90"]; len(remote.Notifications) != 1 || !ok || !slices.Equal(n.ContactEmails, []string{"finops@brand-a.example"}) {
			t.Errorf("at the provider %+v", remote.Notifications)
		}
		// A threshold with no address is pushed when an action group is told.
		group := "/subscriptions/" + subA + "/resourceGroups/rg/providers/microsoft.insights/actionGroups/finops"
		f.do(userA, http.MethodPatch, budgetsAt+"/"+d.ID, map[string]any{"notifications": map[string]any{"contact_groups": []string{group}}}).
			want(t, "add an action group", http.StatusOK)
		f.do(userA, http.MethodPost, budgetsAt+"/"+d.ID+"/sync", nil).want(t, "push with a group", http.StatusOK)
		if remote, err = f.clients.Budget(context.Background(), subA, "steward-"+d.ID); err != nil {
			t.Fatal(err)
		}
		if n := remote.Notifications["actual-50"]; len(remote.Notifications) != 3 || !slices.Equal(n.ContactGroups, []string{group}) || len(n.ContactEmails) != 0 {
			t.Errorf("at the provider with a group %+v", remote.Notifications)
		}
	})
}
