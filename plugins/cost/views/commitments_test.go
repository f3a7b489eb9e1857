package views_test

import (
	"context"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/views"
)

// TestCommitmentsCard: Alpha's reservation, used 18 of 24 hours (ratio 2)
// at 2.00 USD a day of which 0.50 unused, expires in 6 days; Alpha's
// savings plan, 60.00 USD a day used at 78.43 % (12.94 unused), in 12;
// Alpha is advised to buy E4s and a savings plan. Beta's reservation and advice stay off Alpha's
// user's page; Gamma's page has none.
func TestCommitmentsCard(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			at := time.Now().UTC()
			var days []ledger.Reservation
			for d := today - 29; d <= today; d++ {
				days = append(days, ledger.Reservation{TenantID: "t1", ReservationID: "r1", Day: d, ReservationOrderID: "o1", SKU: "Standard_D4s_v5",
					ReservedHours: 24, UsedHours: 18, NormalizedRatio: 2, Currency: "USD", Cost: 200, Unused: 50, SyncedAt: at})
			}
			days = append(days, ledger.Reservation{TenantID: "t2", ReservationID: "r9", Day: today, ReservationOrderID: "o9", SKU: "Standard_M128",
				ReservedHours: 24, UsedHours: 0, NormalizedRatio: 1, Currency: "USD", Cost: 99900, Unused: 99900, SyncedAt: at})
			if err := w.ledger.UpsertReservations(ctx, days); err != nil {
				t.Fatal(err)
			}
			commitment := func(tenant, order, name string, left ledger.Day) ledger.Commitment {
				return ledger.Commitment{TenantID: tenant, ReservationOrderID: order, Kind: ledger.KindReservation, Name: name, SKU: "Standard_D4s_v5", Region: "eastus", Term: "P1Y",
					PurchaseDay: today + left - 365, ExpiryDay: today + left, Quantity: 1, Currency: "USD", Amount: 73000, SyncedAt: at}
			}
			plan := ledger.Commitment{TenantID: "t1", ReservationOrderID: "spo1", Kind: ledger.KindSavingsPlan, SavingsPlanID: "sp1", HourlyCommitment: 2.5,
				Name: "compute plan", SKU: "Compute_Savings_Plan", Term: "P3Y", PurchaseDay: today + 12 - 1095, ExpiryDay: today + 12, Quantity: 1,
				Currency: "USD", Amount: 6000 * 1095, SyncedAt: at}
			if err := w.ledger.ReplaceCommitments(ctx, "t1", []ledger.Commitment{commitment("t1", "o1", "web tier", 6), plan}); err != nil {
				t.Fatal(err)
			}
			if err := w.ledger.ReplaceCommitments(ctx, "t2", []ledger.Commitment{commitment("t2", "o9", "beta tier", 20)}); err != nil {
				t.Fatal(err)
			}
			rec := func(tenant, sku string) ledger.Recommendation {
				return ledger.Recommendation{TenantID: tenant, Kind: ledger.KindReservation, SKU: sku, Location: "eastus", Term: "P3Y", Scope: "Shared", LookBackDays: 30,
					RecommendedQuantity: 2, Currency: "USD", CostWithout: 49830, CostWith: 27144, NetSavings: 22686, FirstUsageDay: today - 40, SyncedAt: at}
			}
			var planDays []ledger.SavingsPlanDay
			for d := today - 29; d <= today; d++ {
				planDays = append(planDays, ledger.SavingsPlanDay{TenantID: "t1", SavingsPlanID: "sp1", Day: d, SavingsPlanOrderID: "spo1",
					AvgUtilization: 78.43, Currency: "USD", Committed: 6000, Used: 4706, Unused: 1294, SyncedAt: at})
			}
			if err := w.ledger.UpsertSavingsPlanDays(ctx, planDays); err != nil {
				t.Fatal(err)
			}
			advice := ledger.Recommendation{TenantID: "t1", Position: 1, Kind: ledger.KindSavingsPlan, SKU: "Compute_Savings_Plan", Term: "P3Y", Scope: "Shared",
				LookBackDays: 30, CommitmentAmount: 1.2, AverageUtilization: 98.6, Coverage: 71.2, Currency: "USD", CostWithout: 215040, CostWith: 173784,
				NetSavings: 41256, FirstUsageDay: today - 30, SyncedAt: at}
			if err := w.ledger.ReplaceRecommendations(ctx, "t1", []ledger.Recommendation{rec("t1", "Standard_E4s_v5"), advice}); err != nil {
				t.Fatal(err)
			}
			if err := w.ledger.ReplaceRecommendations(ctx, "t2", []ledger.Recommendation{rec("t2", "Standard_M64")}); err != nil {
				t.Fatal(err)
			}

			txt := text(w.html(t, views.PagePath, userA))
			contains(t, "Alpha's commitments", txt, "Commitments", "Utilisation by hours75 %", "Utilisation by normalised size75 %",
				"Utilisation by cost (USD)75 %", "of 60.00 USD over the last 30 days", "Unused (USD)15.00 USD",
				"web tierReservationAlphaStandard_D4s_v5P1Y"+(today+6).String()+"6Within 7 days",
				"compute planSavings planAlphaCompute_Savings_PlanP3Y"+(today+12).String()+"12Within 30 days",
				"Savings plans by cost (USD)78.43 %", "of 1,800.00 USD committed over the last 30 days", "Savings plans unused (USD)388.20 USD",
				"AlphaSavings planCompute_Savings_PlanP3Y1.2 USD an hour412.56 USD2,150.40 USD",
				"AlphaReservationStandard_E4s_v5eastusP3Y2226.86 USD498.30 USD")
			lacks(t, "Alpha's commitments", txt, "beta tier", "Standard_M64", "Standard_M128", "999.00")

			txt = text(w.html(t, views.PagePath, admin))
			contains(t, "everyone's commitments", txt, "beta tier", "Within 30 days", "Standard_M64", "Unused (USD)1,014.00 USD")

			txt = text(w.html(t, views.PagePath+"?tenant_id=t3", userA))
			contains(t, "Gamma's commitments", txt, "No reservations or savings plans. They are read from a tenant", "billing account at each costs sync.")
		})
	}
}
