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

// TestSyncWithTheProvider: a Steward subscription budget is pushed to the
// simulated provider and comes back with its spend; sync/all pulls the
// provider's own budgets of the caller's tenants, pushes Steward's, counts
// what failed, and removes what the provider dropped; a provider budget
// cannot be changed in Steward; deleting a pushed budget deletes it at the
// provider, and a provider failure keeps it in both.
func TestSyncWithTheProvider(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		tenantWide := f.create(userA, budgetBody("Tenant-wide"))
		f.do(userA, http.MethodPost, budgetsAt+"/"+tenantWide.ID+"/sync", nil).want(t, "sync a tenant-wide budget", http.StatusConflict)

		steward := f.create(userA, budgetBody("Platform", func(b map[string]any) {
			b["subscription_id"] = subA
			b["notifications"] = map[string]any{"contact_roles": []string{"Owner"}}
		}))
		var one budgets.BudgetSyncResult
		f.do(userA, http.MethodPost, budgetsAt+"/"+steward.ID+"/sync", nil).want(t, "push", http.StatusOK).decode(t, &one)
		// The world's December costs of subA: 10.00 a day through the 15th.
		if one.Action != "pushed" || one.ProviderName != "steward-"+steward.ID || one.ProviderSpend.String() != "150.00" || one.ProviderCurrency != "USD" ||
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
		if res.Tenants != 1 || res.Subscriptions != 2 || res.Created != 1 || res.Updated != 0 || res.Pushed != 1 || res.Removed != 0 || res.Failed != 1 ||
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
		if res.Removed != 1 || res.Pushed != 1 || res.Created != 0 || res.Failed != 0 {
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
		if !slices.Equal(actions, []string{"budget.sync.success", "budget.sync_all.warning", "budget.sync_all.success", "budget.sync.success",
			"budget.sync.success", "budget.sync_all.success"}) {
			t.Errorf("sync audit %v", actions)
		}
	})
}
