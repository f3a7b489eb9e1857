package cloud_test

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// budgetWorld has costs in the platform subscription from November 1 to
// December 15, the simulator's today.
func budgetWorld() *world.World {
	w := baseWorld()
	addCosts(w, subID(0), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 45, 3)
	return w
}

// spendSince sums the world's costs of a subscription from a day through
// the simulator's today.
func spendSince(w *world.World, sub, from string) float64 {
	sum := 0.0
	for _, c := range w.Costs {
		if c.SubscriptionID == sub && c.Date >= from && c.Date <= simNow.Format(time.DateOnly) {
			sum += c.Cost
		}
	}
	return sum
}

func TestBudgetRoundTrip(t *testing.T) {
	w := budgetWorld()
	s, c := startSim(t, w)
	ctx := context.Background()
	want := cloud.Budget{
		Name: "platform-monthly", Amount: 5000, TimeGrain: "Monthly",
		StartDate: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), EndDate: time.Date(2027, 12, 31, 0, 0, 0, 0, time.UTC),
		Notifications: map[string]cloud.BudgetNotification{
			"actual-80": {Enabled: true, Operator: "GreaterThan", Threshold: 80, ThresholdType: "Actual",
				ContactEmails: []string{"finops@example.com"}, ContactRoles: []string{"Owner"}},
		},
	}
	created, err := c.SetBudget(ctx, subID(0), want)
	if err != nil {
		t.Fatal(err)
	}
	december := spendSince(w, subID(0), "2026-12-01")
	sameBudget := func(what string, got cloud.Budget, want cloud.Budget, spend float64) {
		t.Helper()
		if got.Name != want.Name || got.Amount != want.Amount || got.TimeGrain != want.TimeGrain || !got.StartDate.Equal(want.StartDate) ||
			!got.EndDate.Equal(want.EndDate) || got.ETag == "" || math.Abs(got.CurrentSpend-spend) > 1e-6 || got.Currency != "EUR" ||
			!maps.EqualFunc(got.Notifications, want.Notifications, func(a, b cloud.BudgetNotification) bool {
				return a.Enabled == b.Enabled && a.Operator == b.Operator && a.Threshold == b.Threshold && a.ThresholdType == b.ThresholdType &&
					slices.Equal(a.ContactEmails, b.ContactEmails) && slices.Equal(a.ContactRoles, b.ContactRoles) && slices.Equal(a.ContactGroups, b.ContactGroups)
			}) {
			t.Fatalf("%s\n got %+v\nwant %+v spending %v", what, got, want, spend)
		}
	}
	sameBudget("created", created, want, december)
	if created.ForecastSpend != 0 {
		t.Fatalf("forecast %v without a forecast notification", created.ForecastSpend)
	}
	got, err := c.Budget(ctx, subID(0), "PLATFORM-MONTHLY")
	if err != nil {
		t.Fatal(err)
	}
	sameBudget("read", got, want, december)

	// Replacing it with the ETag read works once; the old ETag is stale.
	want.Amount, want.TimeGrain, want.ETag = 9000, "Quarterly", got.ETag
	want.Notifications["forecast-100"] = cloud.BudgetNotification{Enabled: true, Operator: "GreaterThanOrEqualTo", Threshold: 100,
		ThresholdType: "Forecasted", ContactEmails: []string{"cfo@example.com"}}
	updated, err := c.SetBudget(ctx, subID(0), want)
	if err != nil {
		t.Fatal(err)
	}
	// Quarters count from January: October through December.
	quarter := spendSince(w, subID(0), "2026-10-01")
	sameBudget("updated", updated, want, quarter)
	if updated.ETag == got.ETag {
		t.Fatal("the ETag did not change")
	}
	// 76 of the quarter's 92 days are spent, today included.
	if forecast := quarter / 76 * 92; math.Abs(updated.ForecastSpend-forecast) > 1e-6 {
		t.Fatalf("forecast %v, want %v", updated.ForecastSpend, forecast)
	}
	var e *cloud.Error
	if _, err := c.SetBudget(ctx, subID(0), want); !errors.As(err, &e) || e.StatusCode != 412 {
		t.Fatalf("stale ETag: %v, want 412", err)
	}

	second := cloud.Budget{Name: "platform-annual", Amount: 60000, TimeGrain: "Annually", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := c.SetBudget(ctx, subID(0), second); err != nil {
		t.Fatal(err)
	}
	var names []string
	err = c.Budgets(ctx, subID(0), func(b cloud.Budget) error {
		names = append(names, b.Name)
		if b.Name == second.Name && (!b.EndDate.Equal(time.Date(2036, 11, 30, 0, 0, 0, 0, time.UTC)) || math.Abs(b.CurrentSpend-december) > 1e-6) {
			t.Errorf("annual budget %+v: want an end ten years on and December's spend", b)
		}
		return nil
	})
	if err != nil || !slices.Equal(names, []string{"platform-annual", "platform-monthly"}) {
		t.Fatalf("listed %v, %v", names, err)
	}

	if err := c.DeleteBudget(ctx, subID(0), "platform-monthly"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Budget(ctx, subID(0), "platform-monthly"); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("deleted budget read: %v, want ErrNotFound", err)
	}
	if err := c.DeleteBudget(ctx, subID(0), "platform-monthly"); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("deleted twice: %v, want ErrNotFound", err)
	}
	// Budgets are per subscription.
	n := 0
	if err := c.Budgets(ctx, subID(1), func(cloud.Budget) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("brand subscription: %d budgets, %v", n, err)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/subscriptions/"+subID(0)+"/providers/Microsoft.Consumption/budgets"); hits != 9 {
		t.Fatalf("%d budget requests, want 9", hits)
	}
}

func TestBudgetRefusedAsAzureWould(t *testing.T) {
	_, c := startSim(t, budgetWorld())
	ctx := context.Background()
	for name, b := range map[string]cloud.Budget{
		"no amount":         {Name: "b", TimeGrain: "Monthly", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		"weekly":            {Name: "b", Amount: 1, TimeGrain: "Weekly", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		"mid-month start":   {Name: "b", Amount: 1, TimeGrain: "Monthly", StartDate: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
		"end before start":  {Name: "b", Amount: 1, TimeGrain: "Monthly", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), EndDate: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		"nobody to notify":  {Name: "b", Amount: 1, TimeGrain: "Monthly", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Notifications: map[string]cloud.BudgetNotification{"n": {Enabled: true, Operator: "GreaterThan", Threshold: 50}}},
		"threshold at 2000": {Name: "b", Amount: 1, TimeGrain: "Monthly", StartDate: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Notifications: map[string]cloud.BudgetNotification{"n": {Enabled: true, Operator: "GreaterThan", Threshold: 2000, ContactEmails: []string{"a@example.com"}}}},
	} {
		var e *cloud.Error
		if _, err := c.SetBudget(ctx, subID(0), b); !errors.As(err, &e) || e.StatusCode != 400 {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
	if _, err := c.Budget(ctx, "99999999-0000-4000-8000-000000000000", "b"); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("unknown subscription: %v", err)
	}
}
