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

// savingsPlanWorld is commitmentWorld with a savings plan of USD 2.50 an
// hour bought 100 days before the clock's day for a year, used every day
// of the last 120 at 70.37 %, 80.495 % or 90.62 % in turn, a plan that
// expired 10 days ago after a year of USD 0.125 an hour, used at 50 %
// until then, and the provider's advice to buy a three-year plan.
func savingsPlanWorld() *world.World {
	w := commitmentWorld()
	plan := world.SavingsPlan{BillingAccountID: billingAccount, SavingsPlanOrderID: "spo-1", SavingsPlanID: "sp-1", Name: "compute",
		Term: "P1Y", PurchaseDate: simNow.AddDate(0, 0, -100).Format(time.DateOnly), HourlyCommitment: 2.5, Currency: "USD"}
	old := world.SavingsPlan{BillingAccountID: billingAccount, SavingsPlanOrderID: "spo-0", SavingsPlanID: "sp-0", Name: "old",
		Term: "P1Y", PurchaseDate: simNow.AddDate(-1, 0, -10).Format(time.DateOnly), HourlyCommitment: 0.125, Currency: "EUR"}
	for n := 0; n < 120; n++ {
		day := simNow.AddDate(0, 0, -n).Format(time.DateOnly)
		avg := 70.37 + float64(n%3)*10.125
		plan.Utilization = append(plan.Utilization, world.SavingsPlanDay{Date: day, MinUtilization: avg - 20, AvgUtilization: avg, MaxUtilization: 100})
		if day < old.ExpiryDate() {
			old.Utilization = append(old.Utilization, world.SavingsPlanDay{Date: day, MinUtilization: 50, AvgUtilization: 50, MaxUtilization: 50})
		}
	}
	w.SavingsPlans = []world.SavingsPlan{plan, old}
	w.BenefitRecommendations = []world.BenefitRecommendation{{BillingAccountID: billingAccount, Term: "P3Y", LookBackDays: 30,
		CommitmentAmount: 1.2, Currency: "USD", CostWithoutBenefit: 2150.4, SavingsAmount: 412.56, AverageUtilization: 98.6, Coverage: 71.2,
		FirstConsumptionDate: "2026-11-15", LastConsumptionDate: "2026-12-14"}}
	return w
}

// savingsPlanUsed is what the test expects used of a day's 60.00 at the
// world's utilisation n days before the clock's day: 42.22, 48.30 (48.297)
// or 54.37 (54.372).
func savingsPlanUsed(n int) ledger.Amount {
	return []ledger.Amount{4222, 4830, 5437}[n%3]
}

// TestSyncSavingsPlans: the sync stores the savings plans as commitments
// of their kind with the whole term's commitment, each day of the last 90
// in a plan's term with its 60.00 (or 3.00) committed, the part used and
// the rest unused to the cent, and the advice to buy after the
// reservation's; a second sync changes nothing, a restated day takes the
// provider's new figures, and a plan gone is no longer a commitment.
func TestSyncSavingsPlans(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := savingsPlanWorld()
			f := start(t, dialect, w)
			f.mustRun(t)
			today := ledger.DayOf(simNow)

			commitments, err := f.ledger.Commitments(ctx, contoso.ID)
			if err != nil {
				t.Fatal(err)
			}
			c, old := commitments["spo-1"], commitments["spo-0"]
			if len(commitments) != 3 || commitments[arm.ReservationOrderID("res-1")].Kind != ledger.KindReservation ||
				c.Kind != ledger.KindSavingsPlan || c.SavingsPlanID != "sp-1" || c.Name != "compute" || c.SKU != "Compute_Savings_Plan" || c.Term != "P1Y" ||
				c.HourlyCommitment != 2.5 || c.Currency != "USD" || c.PurchaseDay != today-100 || c.ExpiryDay != today+265 || c.Amount != 6000*365 ||
				old.Kind != ledger.KindSavingsPlan || old.ExpiryDay != today-10 || old.Amount != 300*365 {
				t.Fatalf("commitments %+v", commitments)
			}

			read := func() []ledger.SavingsPlanDay {
				t.Helper()
				var days []ledger.SavingsPlanDay
				if err := f.ledger.DB.NewSelect().Model(&days).Order("savings_plan_id", "day").Scan(ctx); err != nil {
					t.Fatal(err)
				}
				return days
			}
			days := read()
			if len(days) != 79+90 {
				t.Fatalf("%d savings plan days, want 79 of the expired plan (until the day before its expiry) and 90 of the other", len(days))
			}
			for _, d := range days[:79] {
				if d.SavingsPlanID != "sp-0" || d.Currency != "EUR" || d.Committed != 300 || d.Used != 150 || d.Unused != 150 || d.Day >= today-10 {
					t.Fatalf("expired plan's day %+v", d)
				}
			}
			for _, d := range days[79:] {
				n := int(today - d.Day)
				if d.SavingsPlanID != "sp-1" || d.SavingsPlanOrderID != "spo-1" || d.Currency != "USD" || d.Committed != 6000 ||
					d.Used != savingsPlanUsed(n) || d.Unused != 6000-savingsPlanUsed(n) || d.MaxUtilization != 100 {
					t.Fatalf("day %s: %+v, want %s used", d.Day, d, savingsPlanUsed(n))
				}
			}

			var recs []ledger.Recommendation
			if err := f.ledger.DB.NewSelect().Model(&recs).Order("position").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 || recs[0].Kind != ledger.KindReservation || recs[1].Kind != ledger.KindSavingsPlan || recs[1].Position != 1 ||
				recs[1].SKU != "Compute_Savings_Plan" || recs[1].Term != "P3Y" || recs[1].Scope != "Shared" || recs[1].LookBackDays != 30 ||
				recs[1].CommitmentAmount != 1.2 || recs[1].AverageUtilization != 98.6 || recs[1].Coverage != 71.2 || recs[1].Currency != "USD" ||
				recs[1].CostWithout != 215040 || recs[1].CostWith != 173784 || recs[1].NetSavings != 41256 || recs[1].FirstUsageDay.String() != "2026-11-15" {
				t.Fatalf("recommendations %+v", recs)
			}

			// Again: the same rows.
			f.mustRun(t)
			if again := read(); len(again) != len(days) {
				t.Fatalf("%d days after a second sync, want %d", len(again), len(days))
			} else {
				for i := range again {
					again[i].SyncedAt = days[i].SyncedAt
					if again[i] != days[i] {
						t.Fatalf("a second sync changed %+v to %+v", days[i], again[i])
					}
				}
			}

			// The provider restates today's utilisation; then the plans are
			// gone.
			changed := *w
			changed.SavingsPlans = append([]world.SavingsPlan(nil), w.SavingsPlans...)
			changed.SavingsPlans[0].Utilization = append([]world.SavingsPlanDay(nil), w.SavingsPlans[0].Utilization...)
			changed.SavingsPlans[0].Utilization[0].AvgUtilization = 99.99
			f.sim.SetWorld(&changed)
			f.mustRun(t)
			last := read()[len(days)-1]
			if last.Day != today || last.AvgUtilization != 99.99 || last.Used != 5999 || last.Unused != 1 {
				t.Fatalf("the restated day %+v", last)
			}
			bare := *w
			bare.SavingsPlans, bare.BenefitRecommendations = nil, nil
			f.sim.SetWorld(&bare)
			f.mustRun(t)
			if commitments, err := f.ledger.Commitments(ctx, contoso.ID); err != nil || len(commitments) != 1 || commitments["spo-1"].Kind != "" {
				t.Fatalf("commitments after the plans are gone: %+v, %v", commitments, err)
			}
		})
	}
}
