package world

import (
	"strings"
	"testing"
)

// TestValidateCommitments: a purchase and a recommendation name a billing
// account, a term the provider sells and positive figures; each problem is
// reported at its path.
func TestValidateCommitments(t *testing.T) {
	ba := "ba-1"
	base := func() *World {
		return &World{
			Tenants: []Tenant{{Name: "A", DirectoryTenantID: "dir-a", BillingAccountID: &ba, Subscriptions: []Subscription{{ID: "sub-a", Name: "A"}}}},
			ReservationPurchases: []ReservationPurchase{{BillingAccountID: ba, ReservationID: "r1", SKU: "Standard_D2s_v5", Term: "P3Y",
				PurchaseDate: "2024-02-29", Quantity: 1, Amount: 100, Currency: "USD", InstanceFlexibilityRatio: 1}},
			ReservationRecommendations: []ReservationRecommendation{{BillingAccountID: ba, SKU: "Standard_E4s_v5", Term: "P1Y", Scope: "Shared",
				ResourceType: "VirtualMachines", LookBackDays: 30, RecommendedQuantity: 1, Currency: "USD", FirstUsageDate: "2026-10-01"}},
		}
	}
	if err := base().Validate(); err != nil {
		t.Fatal(err)
	}
	if got := base().ReservationPurchases[0].ExpiryDate(); got != "2027-03-01" {
		t.Errorf("three years after 29 February 2024: %s", got)
	}
	for _, c := range []struct {
		name   string
		change func(*World)
		want   string
	}{
		{"unknown account", func(w *World) { w.ReservationPurchases[0].BillingAccountID = "ba-9" }, `reservation_purchases[0].billing_account_id: "ba-9" is not the billing account`},
		{"bad term", func(w *World) { w.ReservationPurchases[0].Term = "P2Y" }, `reservation_purchases[0].term: "P2Y" is not one of P1Y, P3Y, P5Y`},
		{"no quantity", func(w *World) { w.ReservationPurchases[0].Quantity = 0 }, `reservation_purchases[0].quantity: 0 is not a positive quantity`},
		{"negative price", func(w *World) { w.ReservationPurchases[0].Amount = -1 }, `reservation_purchases[0].amount: -1 is negative`},
		{"no ratio", func(w *World) { w.ReservationPurchases[0].InstanceFlexibilityRatio = 0 }, `reservation_purchases[0].instance_flexibility_ratio: 0 is not a positive ratio`},
		{"bad purchase date", func(w *World) { w.ReservationPurchases[0].PurchaseDate = "2026-02-30" }, `reservation_purchases[0].purchase_date`},
		{"bad scope", func(w *World) { w.ReservationRecommendations[0].Scope = "Global" }, `reservation_recommendations[0].scope: "Global" is not one of Single, Shared`},
		{"bad look-back", func(w *World) { w.ReservationRecommendations[0].LookBackDays = 14 }, `reservation_recommendations[0].look_back_days: 14 is not one of 7, 30, 60`},
		{"no currency", func(w *World) { w.ReservationRecommendations[0].Currency = "" }, `reservation_recommendations[0].currency: required`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := base()
			c.change(w)
			if err := w.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

// TestValidateSavingsPlans: a savings plan names a billing account, an
// order id of its own, a term the provider sells, a positive hourly
// commitment and ordered utilisation percentages; a benefit
// recommendation a billing account, a term and a look-back period the
// provider offers. Each problem is reported at its path.
func TestValidateSavingsPlans(t *testing.T) {
	ba := "ba-1"
	base := func() *World {
		return &World{
			Tenants: []Tenant{{Name: "A", DirectoryTenantID: "dir-a", BillingAccountID: &ba, Subscriptions: []Subscription{{ID: "sub-a", Name: "A"}}}},
			SavingsPlans: []SavingsPlan{{BillingAccountID: ba, SavingsPlanOrderID: "o1", SavingsPlanID: "p1", Term: "P3Y", PurchaseDate: "2024-02-29",
				HourlyCommitment: 1.5, Currency: "USD", Utilization: []SavingsPlanDay{{Date: "2026-10-01", MinUtilization: 10, AvgUtilization: 50, MaxUtilization: 100}}}},
			BenefitRecommendations: []BenefitRecommendation{{BillingAccountID: ba, Term: "P1Y", LookBackDays: 30, CommitmentAmount: 1, Currency: "USD",
				FirstConsumptionDate: "2026-10-01", LastConsumptionDate: "2026-10-30"}},
		}
	}
	if err := base().Validate(); err != nil {
		t.Fatal(err)
	}
	if got := base().SavingsPlans[0].ExpiryDate(); got != "2027-03-01" {
		t.Errorf("three years after 29 February 2024: %s", got)
	}
	for _, c := range []struct {
		name   string
		change func(*World)
		want   string
	}{
		{"unknown account", func(w *World) { w.SavingsPlans[0].BillingAccountID = "ba-9" }, `savings_plans[0].billing_account_id: "ba-9" is not the billing account`},
		{"same order", func(w *World) { w.SavingsPlans = append(w.SavingsPlans, w.SavingsPlans[0]) }, `savings_plans[1].savings_plan_order_id: "o1" is also savings_plans[0]'s`},
		{"five years", func(w *World) { w.SavingsPlans[0].Term = "P5Y" }, `savings_plans[0].term: "P5Y" is not one of P1Y, P3Y`},
		{"no commitment", func(w *World) { w.SavingsPlans[0].HourlyCommitment = 0 }, `savings_plans[0].hourly_commitment: 0 is not a positive amount`},
		{"no plan id", func(w *World) { w.SavingsPlans[0].SavingsPlanID = "" }, `savings_plans[0].savings_plan_id: required`},
		{"above 100", func(w *World) { w.SavingsPlans[0].Utilization[0].MaxUtilization = 101 }, `savings_plans[0].utilization[0]: utilisation must be`},
		{"min above avg", func(w *World) { w.SavingsPlans[0].Utilization[0].MinUtilization = 60 }, `savings_plans[0].utilization[0]: utilisation must be`},
		{"bad day", func(w *World) { w.SavingsPlans[0].Utilization[0].Date = "2026-02-30" }, `savings_plans[0].utilization[0].date`},
		{"bad look-back", func(w *World) { w.BenefitRecommendations[0].LookBackDays = 14 }, `benefit_recommendations[0].look_back_days: 14 is not one of 7, 30, 60`},
		{"recommendation term", func(w *World) { w.BenefitRecommendations[0].Term = "P5Y" }, `benefit_recommendations[0].term: "P5Y" is not one of P1Y, P3Y`},
		{"no amount", func(w *World) { w.BenefitRecommendations[0].CommitmentAmount = 0 }, `benefit_recommendations[0].commitment_amount: 0 is not a positive amount`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := base()
			c.change(w)
			if err := w.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}
