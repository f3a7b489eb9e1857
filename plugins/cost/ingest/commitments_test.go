package ingest_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ingest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// commitmentWorld is costWorld with res-1 bought 100 days before the
// clock's day for a year at 730.00 USD: 365 days of exactly 2.00, since
// the year holds no 29 February. The provider recommends one purchase
// from the last 30 days and another from the last 7, which the sync does
// not read.
func commitmentWorld() *world.World {
	w := costWorld()
	w.ReservationPurchases = []world.ReservationPurchase{{BillingAccountID: billingAccount, ReservationID: "res-1", Name: "web tier",
		SKU: "Standard_D2s_v5", Region: "eastus", Term: "P1Y", PurchaseDate: simNow.AddDate(0, 0, -100).Format(time.DateOnly),
		Quantity: 1, Amount: 730, Currency: "USD", InstanceFlexibilityGroup: "DSv5 Series", InstanceFlexibilityRatio: 2}}
	rec := world.ReservationRecommendation{BillingAccountID: billingAccount, SKU: "Standard_E4s_v5", Location: "eastus", Term: "P3Y", Scope: "Shared",
		ResourceType: "VirtualMachines", LookBackDays: 30, RecommendedQuantity: 2, NormalizedSize: "Standard_E2s_v5",
		InstanceFlexibilityGroup: "ESv5 Series", InstanceFlexibilityRatio: 2, CostWithoutReservations: 498.3, CostWithReservations: 271.44,
		NetSavings: 226.86, Currency: "USD", FirstUsageDate: "2026-10-01"}
	weekly := rec
	weekly.LookBackDays, weekly.SKU = 7, "Standard_B2ms"
	w.ReservationRecommendations = []world.ReservationRecommendation{rec, weekly}
	return w
}

// TestSyncCommitments: the sync stores the purchase with its expiry, each
// reservation day with its normalised size ratio, its 2.00 and the part
// of it the unused hours wasted, and the recommendation of the last 30
// days; a later sync without the purchase or the recommendation clears
// them and leaves the restated days unpriced.
func TestSyncCommitments(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := commitmentWorld()
			f := start(t, dialect, w)
			f.mustRun(t)
			today := ledger.DayOf(simNow)

			commitments, err := f.ledger.Commitments(ctx, contoso.ID)
			if err != nil {
				t.Fatal(err)
			}
			order := arm.ReservationOrderID("res-1")
			c := commitments[order]
			if len(commitments) != 1 || c.Name != "web tier" || c.SKU != "Standard_D2s_v5" || c.Term != "P1Y" || c.Amount != 73000 || c.Currency != "USD" ||
				c.PurchaseDay != today-100 || c.ExpiryDay.String() != simNow.AddDate(1, 0, -100).Format(time.DateOnly) || c.ExpiryDay-c.PurchaseDay != 365 {
				t.Fatalf("commitments %+v", commitments)
			}

			var rows []ledger.Reservation
			if err := f.ledger.DB.NewSelect().Model(&rows).Order("day").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(rows) != 90 {
				t.Fatalf("%d reservation days, want 90", len(rows))
			}
			for _, r := range rows {
				unused := ledger.Amount(math.Round(200 * (24 - r.UsedHours) / 24))
				if r.NormalizedRatio != 2 || r.FlexibilityGroup != "DSv5 Series" || r.Currency != "USD" || r.Cost != 200 || r.Unused != unused {
					t.Fatalf("reservation day %+v, want ratio 2, cost 2.00 and unused %s", r, unused)
				}
			}

			var recs []ledger.Recommendation
			if err := f.ledger.DB.NewSelect().Model(&recs).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].TenantID != contoso.ID || recs[0].SKU != "Standard_E4s_v5" || recs[0].LookBackDays != 30 ||
				recs[0].CostWithout != 49830 || recs[0].CostWith != 27144 || recs[0].NetSavings != 22686 || recs[0].Currency != "USD" ||
				recs[0].FlexibilityRatio != 2 || recs[0].FirstUsageDay.String() != "2026-10-01" {
				t.Fatalf("recommendations %+v", recs)
			}

			// The purchase and the advice are gone: both are cleared, and the
			// restated days lose their price and ratio.
			bare := *w
			bare.ReservationPurchases, bare.ReservationRecommendations = nil, nil
			f.sim.SetWorld(&bare)
			f.mustRun(t)
			if commitments, err := f.ledger.Commitments(ctx, contoso.ID); err != nil || len(commitments) != 0 {
				t.Fatalf("commitments after the purchase is gone: %+v, %v", commitments, err)
			}
			if n, err := f.ledger.DB.NewSelect().Model((*ledger.Recommendation)(nil)).Count(ctx); err != nil || n != 0 {
				t.Fatalf("%d recommendations after the advice is gone (%v)", n, err)
			}
			rows = nil
			if err := f.ledger.DB.NewSelect().Model(&rows).Where("cost_cents = 0").Order("day").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(rows) != ingest.DefaultRestateDays || rows[0].Day != today-ingest.DefaultRestateDays+1 || rows[0].Currency != "" || rows[0].NormalizedRatio != 1 {
				t.Fatalf("unpriced days after the purchase is gone: %+v", rows)
			}
		})
	}
}
