package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// savingsPlanWorld has two savings plans of the billing account, one of
// them expired, used every day of September to November 2026, a plan of
// another tenant's billing account that Steward may not read, and
// recommendations for both terms and another look-back period.
func savingsPlanWorld() *world.World {
	w := baseWorld()
	other := "87654321"
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Other", DirectoryTenantID: "99999999-0000-4000-8000-000000000009", BillingAccountID: &other,
		Subscriptions: []world.Subscription{{ID: subID(9), Name: "Other"}}})
	days := func(base float64) []world.SavingsPlanDay {
		var out []world.SavingsPlanDay
		start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
		for d := 0; d < 91; d++ {
			avg := base - float64(d%5)
			out = append(out, world.SavingsPlanDay{Date: start.AddDate(0, 0, d).Format(time.DateOnly), MinUtilization: avg - 10, AvgUtilization: avg, MaxUtilization: avg + 2})
		}
		return out
	}
	w.SavingsPlans = []world.SavingsPlan{
		{BillingAccountID: billingAccount, SavingsPlanOrderID: "order-1", SavingsPlanID: "plan-1", Name: "compute-1y", Term: "P1Y",
			PurchaseDate: "2026-01-10", HourlyCommitment: 2.5, Currency: "USD", Utilization: days(90)},
		{BillingAccountID: billingAccount, SavingsPlanOrderID: "order-0", SavingsPlanID: "plan-0", Name: "old", Term: "P1Y",
			PurchaseDate: "2025-03-01", HourlyCommitment: 0.125, Currency: "EUR"},
		{BillingAccountID: other, SavingsPlanOrderID: "order-x", SavingsPlanID: "plan-x", Name: "theirs", Term: "P3Y",
			PurchaseDate: "2026-02-01", HourlyCommitment: 9, Currency: "USD", Utilization: days(50)},
	}
	w.BenefitRecommendations = []world.BenefitRecommendation{
		{BillingAccountID: billingAccount, Term: "P3Y", LookBackDays: 30, CommitmentAmount: 1.2, Currency: "USD", CostWithoutBenefit: 2150.4,
			SavingsAmount: 412.56, AverageUtilization: 98.6, Coverage: 71.2, FirstConsumptionDate: "2026-11-15", LastConsumptionDate: "2026-12-14"},
		{BillingAccountID: billingAccount, Term: "P1Y", LookBackDays: 30, CommitmentAmount: 1.5, Currency: "USD", CostWithoutBenefit: 2150.4,
			SavingsAmount: 300, AverageUtilization: 95, Coverage: 80, FirstConsumptionDate: "2026-11-15", LastConsumptionDate: "2026-12-14"},
		{BillingAccountID: billingAccount, Term: "P1Y", LookBackDays: 7, CommitmentAmount: 3, Currency: "USD", CostWithoutBenefit: 600,
			SavingsAmount: 20, AverageUtilization: 70, Coverage: 90, FirstConsumptionDate: "2026-12-08", LastConsumptionDate: "2026-12-14"},
	}
	return w
}

func TestSavingsPlans(t *testing.T) {
	s, c := startSim(t, savingsPlanWorld())
	list := func(account string) ([]cloud.SavingsPlan, error) {
		var out []cloud.SavingsPlan
		return out, c.SavingsPlans(context.Background(), account, func(p cloud.SavingsPlan) error {
			out = append(out, p)
			return nil
		})
	}
	got, err := list(billingAccount)
	if err != nil {
		t.Fatal(err)
	}
	scope := "/providers/Microsoft.Billing/billingAccounts/" + billingAccount
	want := []cloud.SavingsPlan{
		{SavingsPlanOrderID: "order-0", SavingsPlanID: "plan-0", Name: "old", SKUName: "Compute_Savings_Plan", BillingScopeID: scope, Term: "P1Y",
			PurchaseDate: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), ExpiryDate: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
			HourlyCommitment: 0.125, Currency: "EUR", State: "Expired"},
		{SavingsPlanOrderID: "order-1", SavingsPlanID: "plan-1", Name: "compute-1y", SKUName: "Compute_Savings_Plan", BillingScopeID: scope, Term: "P1Y",
			PurchaseDate: time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), ExpiryDate: time.Date(2027, 1, 10, 0, 0, 0, 0, time.UTC),
			HourlyCommitment: 2.5, Currency: "USD", State: "Succeeded"},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("savings plans %+v, want %+v", got, want)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/providers/Microsoft.BillingBenefits/savingsPlans"); hits != 1 {
		t.Fatalf("%d requests, want 1", hits)
	}
	// Another tenant's billing account lists none of its plans: the list
	// holds only the plans the caller may read.
	if got, err := list("87654321"); err != nil || len(got) != 0 {
		t.Fatalf("another billing account's plans: %+v, %v", got, err)
	}
}

func TestSavingsPlansPaged(t *testing.T) {
	w := savingsPlanWorld()
	for i := range 120 {
		w.SavingsPlans = append(w.SavingsPlans, world.SavingsPlan{BillingAccountID: billingAccount, SavingsPlanOrderID: fmt.Sprintf("order-p%03d", i),
			SavingsPlanID: fmt.Sprintf("plan-p%03d", i), Term: "P3Y", PurchaseDate: "2026-05-01", HourlyCommitment: 1, Currency: "USD"})
	}
	s, c := startSim(t, w)
	n := 0
	if err := c.SavingsPlans(context.Background(), billingAccount, func(cloud.SavingsPlan) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 122 {
		t.Fatalf("%d savings plans, want 122", n)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/providers/Microsoft.BillingBenefits/savingsPlans"); hits < 2 {
		t.Fatalf("%d requests, want the list paged", hits)
	}
	stop := errors.New("stop")
	if err := c.SavingsPlans(context.Background(), billingAccount, func(cloud.SavingsPlan) error { return stop }); err != stop {
		t.Fatalf("an error of fn: %v, want it returned as is", err)
	}
}

func TestSavingsPlanUtilization(t *testing.T) {
	_, c := startSim(t, savingsPlanWorld())
	list := func(order string, from, to time.Time) ([]cloud.SavingsPlanDay, error) {
		var out []cloud.SavingsPlanDay
		return out, c.SavingsPlanUtilization(context.Background(), order, from, to, func(d cloud.SavingsPlanDay) error {
			out = append(out, d)
			return nil
		})
	}
	from, to := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	got, err := list("order-1", from, to)
	if err != nil {
		t.Fatal(err)
	}
	// 2026-11-28 is day 88 of the world's days: 90 - 88%5.
	want := []cloud.SavingsPlanDay{
		{SavingsPlanOrderID: "order-1", SavingsPlanID: "plan-1", UsageDate: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), MinUtilization: 77, AvgUtilization: 87, MaxUtilization: 89},
		{SavingsPlanOrderID: "order-1", SavingsPlanID: "plan-1", UsageDate: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), MinUtilization: 76, AvgUtilization: 86, MaxUtilization: 88},
		{SavingsPlanOrderID: "order-1", SavingsPlanID: "plan-1", UsageDate: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), MinUtilization: 80, AvgUtilization: 90, MaxUtilization: 92},
	}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("utilisation %+v, want %+v", got, want)
	}
	if _, err := list("order-x", from, to); !errors.Is(err, cloud.ErrBillingAccessRequired) {
		t.Fatalf("another billing account's plan: %v, want ErrBillingAccessRequired", err)
	}
	if _, err := list("order-missing", from, to); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("an unknown order: %v, want ErrNotFound", err)
	}
}

func TestBenefitRecommendations(t *testing.T) {
	_, c := startSim(t, savingsPlanWorld())
	list := func(account string, days int) ([]cloud.BenefitRecommendation, error) {
		var out []cloud.BenefitRecommendation
		return out, c.BenefitRecommendations(context.Background(), account, days, func(r cloud.BenefitRecommendation) error {
			out = append(out, r)
			return nil
		})
	}
	got, err := list(billingAccount, 30)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)
	// The simulator subtracts in float64, as the test does here.
	without, saved := 2150.4, 412.56
	want := []cloud.BenefitRecommendation{
		{SKUName: "Compute_Savings_Plan", Term: "P1Y", Scope: "Shared", LookBackDays: 30, CommitmentGranularity: "Hourly", CommitmentAmount: 1.5, Currency: "USD",
			CostWithoutBenefit: 2150.4, TotalCost: 2150.4 - 300, SavingsAmount: 300, AverageUtilization: 95, Coverage: 80, FirstUsageDate: first},
		{SKUName: "Compute_Savings_Plan", Term: "P3Y", Scope: "Shared", LookBackDays: 30, CommitmentGranularity: "Hourly", CommitmentAmount: 1.2, Currency: "USD",
			CostWithoutBenefit: 2150.4, TotalCost: without - saved, SavingsAmount: 412.56, AverageUtilization: 98.6, Coverage: 71.2, FirstUsageDate: first},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("recommendations of the last 30 days: %+v, want %+v", got, want)
	}
	if got, err := list(billingAccount, 7); err != nil || len(got) != 1 || got[0].CommitmentAmount != 3 || got[0].LookBackDays != 7 {
		t.Fatalf("recommendations of the last 7 days: %+v, %v", got, err)
	}
	if _, err := list(billingAccount, 14); err == nil {
		t.Fatal("a look-back period the provider does not offer was listed")
	}
	if _, err := list("87654321", 30); !errors.Is(err, cloud.ErrBillingAccessRequired) {
		t.Fatalf("another billing account: %v, want ErrBillingAccessRequired", err)
	}
}
