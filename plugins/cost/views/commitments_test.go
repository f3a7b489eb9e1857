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
// at 2.00 USD a day of which 0.50 unused, expires in 6 days; Alpha is
// advised to buy E4s. Beta's reservation and advice stay off Alpha's
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
				return ledger.Commitment{TenantID: tenant, ReservationOrderID: order, Name: name, SKU: "Standard_D4s_v5", Region: "eastus", Term: "P1Y",
					PurchaseDay: today + left - 365, ExpiryDay: today + left, Quantity: 1, Currency: "USD", Amount: 73000, SyncedAt: at}
			}
			if err := w.ledger.ReplaceCommitments(ctx, "t1", []ledger.Commitment{commitment("t1", "o1", "web tier", 6)}); err != nil {
				t.Fatal(err)
			}
			if err := w.ledger.ReplaceCommitments(ctx, "t2", []ledger.Commitment{commitment("t2", "o9", "beta tier", 20)}); err != nil {
				t.Fatal(err)
			}
			rec := func(tenant, sku string) ledger.Recommendation {
				return ledger.Recommendation{TenantID: tenant, SKU: sku, Location: "eastus", Term: "P3Y", Scope: "Shared", LookBackDays: 30,
					RecommendedQuantity: 2, Currency: "USD", CostWithout: 49830, CostWith: 27144, NetSavings: 22686, FirstUsageDay: today - 40, SyncedAt: at}
			}
			if err := w.ledger.ReplaceRecommendations(ctx, "t1", []ledger.Recommendation{rec("t1", "Standard_E4s_v5")}); err != nil {
				t.Fatal(err)
			}
			if err := w.ledger.ReplaceRecommendations(ctx, "t2", []ledger.Recommendation{rec("t2", "Standard_M64")}); err != nil {
				t.Fatal(err)
			}

			txt := text(w.html(t, views.PagePath, userA))
			contains(t, "Alpha's commitments", txt, "Commitments", "Utilisation by hours75 %", "Utilisation by normalised size75 %",
				"Utilisation by cost (USD)75 %", "of 60.00 USD over the last 30 days", "Unused (USD)15.00 USD",
				"web tierAlphaStandard_D4s_v5P1Y"+(today+6).String()+"6Within 7 days",
				"AlphaStandard_E4s_v5eastusP3Y2226.86 USD498.30 USD")
			lacks(t, "Alpha's commitments", txt, "beta tier", "Standard_M64", "Standard_M128", "999.00")

			txt = text(w.html(t, views.PagePath, admin))
			contains(t, "everyone's commitments", txt, "beta tier", "Within 30 days", "Standard_M64", "Unused (USD)1,014.00 USD")

			txt = text(w.html(t, views.PagePath+"?tenant_id=t3", userA))
			contains(t, "Gamma's commitments", txt, "No reservations. They are read from a tenant", "billing account at each costs sync.")
		})
	}
}
