package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestDayCost: a price that does not divide by the days of the term is
// spread so that every day costs the whole cents below or above the
// exact share and the term adds up to the price; days outside cost 0.
func TestDayCost(t *testing.T) {
	from, _ := ledger.ParseDay("2025-01-01")
	to, _ := ledger.ParseDay("2028-01-01") // three years of 365 days
	c := ledger.Commitment{PurchaseDay: from, ExpiryDay: to, Amount: 1215720}
	var sum ledger.Amount
	for d := from; d < to; d++ {
		cost := c.DayCost(d)
		if cost != 1110 && cost != 1111 {
			t.Fatalf("%s costs %s; 12157.20 over 1095 days is 11.1024…", d, cost)
		}
		sum += cost
	}
	if sum != c.Amount {
		t.Fatalf("the term adds up to %s, want %s", sum, c.Amount)
	}
	if c.DayCost(from-1) != 0 || c.DayCost(to) != 0 {
		t.Fatal("a day outside the term has a cost")
	}
	if (ledger.Commitment{PurchaseDay: from, ExpiryDay: from, Amount: 100}).DayCost(from) != 0 {
		t.Fatal("a term of no days has a cost")
	}
}

func TestUnusedShare(t *testing.T) {
	for _, c := range []struct {
		cost           ledger.Amount
		reserved, used float64
		want           ledger.Amount
	}{
		{200, 24, 12, 100},
		{200, 24, 13, 92},    // 91.67
		{1111, 48, 44.4, 83}, // 83.325
		{200, 24, 24, 0},
		{200, 0, 0, 0},
		{5, 240, 120.5, 2}, // 2.49
	} {
		if got := ledger.UnusedShare(c.cost, c.reserved, c.used); got != c.want {
			t.Errorf("UnusedShare(%d, %g, %g) = %d, want %d", c.cost, c.reserved, c.used, got, c.want)
		}
	}
}

// TestCommitmentsAndRecommendations: each replace leaves exactly the new
// rows of the tenant, the other tenant's untouched; a reservation day
// keeps its price and ratio through an upsert.
func TestCommitmentsAndRecommendations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			d, _ := ledger.ParseDay("2026-10-30")
			commitment := func(tenant, order string, amount ledger.Amount) ledger.Commitment {
				return ledger.Commitment{TenantID: tenant, ReservationOrderID: order, Kind: ledger.KindReservation, Name: order, SKU: "Standard_D2s_v5", Region: "eastus", Term: "P1Y",
					PurchaseDay: d - 10, ExpiryDay: d + 355, Quantity: 2, Currency: "USD", Amount: amount, SyncedAt: at}
			}
			if err := s.ReplaceCommitments(ctx, "t1", []ledger.Commitment{commitment("t1", "o1", 100), commitment("t1", "o2", 200)}); err != nil {
				t.Fatal(err)
			}
			if err := s.ReplaceCommitments(ctx, "t2", []ledger.Commitment{commitment("t2", "o1", 300)}); err != nil {
				t.Fatal(err)
			}
			if err := s.ReplaceCommitments(ctx, "t1", []ledger.Commitment{commitment("t1", "o2", 250)}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Commitments(ctx, "t1")
			if err != nil || len(got) != 1 || got["o2"].Amount != 250 || got["o2"].ExpiryDay != d+355 || got["o2"].Quantity != 2 {
				t.Fatalf("t1's commitments %+v (%v)", got, err)
			}
			if got, err := s.Commitments(ctx, "t2"); err != nil || len(got) != 1 || got["o1"].Amount != 300 {
				t.Fatalf("t2's commitments %+v (%v)", got, err)
			}

			rec := func(tenant string, pos int, savings ledger.Amount) ledger.Recommendation {
				return ledger.Recommendation{TenantID: tenant, Position: pos, Kind: ledger.KindReservation, SKU: "Standard_E4s_v5", Location: "eastus", Term: "P3Y", Scope: "Shared",
					LookBackDays: 30, RecommendedQuantity: 2, NormalizedSize: "Standard_E2s_v5", FlexibilityGroup: "ESv5 Series", FlexibilityRatio: 2,
					Currency: "USD", CostWithout: 1000, CostWith: 1000 - savings, NetSavings: savings, FirstUsageDay: d, SyncedAt: at}
			}
			if err := s.ReplaceRecommendations(ctx, "t1", []ledger.Recommendation{rec("t1", 0, 10), rec("t1", 1, 20)}); err != nil {
				t.Fatal(err)
			}
			if err := s.ReplaceRecommendations(ctx, "t2", []ledger.Recommendation{rec("t2", 0, 30)}); err != nil {
				t.Fatal(err)
			}
			if err := s.ReplaceRecommendations(ctx, "t1", nil); err != nil {
				t.Fatal(err)
			}
			var recs []ledger.Recommendation
			if err := s.DB.NewSelect().Model(&recs).Scan(ctx); err != nil || len(recs) != 1 || recs[0].TenantID != "t2" || recs[0].NetSavings != 30 {
				t.Fatalf("recommendations %+v (%v)", recs, err)
			}

			day := ledger.Reservation{TenantID: "t1", ReservationID: "r1", Day: d, ReservationOrderID: "o2", SKU: "Standard_D2s_v5", ReservedHours: 24, UsedHours: 12,
				FlexibilityGroup: "DSv5 Series", NormalizedRatio: 1, SyncedAt: at}
			if err := s.UpsertReservations(ctx, []ledger.Reservation{day}); err != nil {
				t.Fatal(err)
			}
			day.NormalizedRatio, day.Currency, day.Cost, day.Unused = 2, "USD", 200, 100
			if err := s.UpsertReservations(ctx, []ledger.Reservation{day}); err != nil {
				t.Fatal(err)
			}
			var rows []ledger.Reservation
			if err := s.DB.NewSelect().Model(&rows).Scan(ctx); err != nil || len(rows) != 1 ||
				rows[0].NormalizedRatio != 2 || rows[0].Currency != "USD" || rows[0].Cost != 200 || rows[0].Unused != 100 || rows[0].FlexibilityGroup != "DSv5 Series" {
				t.Fatalf("reservation days %+v (%v)", rows, err)
			}
		})
	}
}

func TestDayCommitmentAndUsedShare(t *testing.T) {
	for _, c := range []struct {
		hourly float64
		want   ledger.Amount
	}{{2.5, 6000}, {0.125, 300}, {1.234567, 2963}, {0.0001, 0}, {0.00021, 1}} {
		if got := ledger.DayCommitment(c.hourly); got != c.want {
			t.Errorf("DayCommitment(%g) = %d, want %d", c.hourly, got, c.want)
		}
	}
	for _, c := range []struct {
		committed ledger.Amount
		avg       float64
		want      ledger.Amount
	}{
		{6000, 78.43, 4706}, // 4705.8
		{6000, 100, 6000},
		{6000, 0, 0},
		{300, 50.5, 152}, // 151.5, half away from zero
		{300, 100.2, 300},
		{300, -1, 0},
	} {
		if got := ledger.UsedShare(c.committed, c.avg); got != c.want {
			t.Errorf("UsedShare(%d, %g) = %d, want %d", c.committed, c.avg, got, c.want)
		}
	}
}

// TestSavingsPlans: savings plans are commitments of their own kind beside
// reservations, replaced with them; a savings plan day takes the new
// figures through an upsert, another tenant's untouched, and the last day
// stored is each tenant's own.
func TestSavingsPlans(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			d, _ := ledger.ParseDay("2026-10-30")
			rows := []ledger.Commitment{
				{TenantID: "t1", ReservationOrderID: "o1", Kind: ledger.KindReservation, Name: "web", SKU: "Standard_D2s_v5", Region: "eastus", Term: "P1Y",
					PurchaseDay: d - 10, ExpiryDay: d + 355, Quantity: 2, Currency: "USD", Amount: 100, SyncedAt: at},
				{TenantID: "t1", ReservationOrderID: "spo1", Kind: ledger.KindSavingsPlan, SavingsPlanID: "sp1", HourlyCommitment: 2.5, Name: "compute",
					SKU: "Compute_Savings_Plan", Term: "P3Y", PurchaseDay: d - 5, ExpiryDay: d + 1090, Quantity: 1, Currency: "USD", Amount: 6000 * 1095, SyncedAt: at},
			}
			if err := s.ReplaceCommitments(ctx, "t1", rows); err != nil {
				t.Fatal(err)
			}
			got, err := s.Commitments(ctx, "t1")
			if err != nil || len(got) != 2 || got["spo1"].Kind != ledger.KindSavingsPlan || got["spo1"].SavingsPlanID != "sp1" ||
				got["spo1"].HourlyCommitment != 2.5 || got["o1"].Kind != ledger.KindReservation {
				t.Fatalf("t1's commitments %+v (%v)", got, err)
			}

			if _, ok, err := s.LastSavingsPlanDay(ctx, "t1"); err != nil || ok {
				t.Fatalf("a last day before any is stored: %v, %v", ok, err)
			}
			day := ledger.SavingsPlanDay{TenantID: "t1", SavingsPlanID: "sp1", Day: d, SavingsPlanOrderID: "spo1", MinUtilization: 50, AvgUtilization: 78.43,
				MaxUtilization: 90, Currency: "USD", Committed: 6000, Used: 4706, Unused: 1294, SyncedAt: at}
			other := day
			other.TenantID, other.Day = "t2", d+3
			if err := s.UpsertSavingsPlanDays(ctx, []ledger.SavingsPlanDay{day, other}); err != nil {
				t.Fatal(err)
			}
			day.AvgUtilization, day.Used, day.Unused = 100, 6000, 0
			if err := s.UpsertSavingsPlanDays(ctx, []ledger.SavingsPlanDay{day}); err != nil {
				t.Fatal(err)
			}
			var days []ledger.SavingsPlanDay
			if err := s.DB.NewSelect().Model(&days).Order("tenant_id").Scan(ctx); err != nil || len(days) != 2 ||
				days[0].AvgUtilization != 100 || days[0].Used != 6000 || days[0].Unused != 0 || days[0].Committed != 6000 ||
				days[1].TenantID != "t2" || days[1].Used != 4706 || days[1].Unused != 1294 {
				t.Fatalf("savings plan days %+v (%v)", days, err)
			}
			if last, ok, err := s.LastSavingsPlanDay(ctx, "t1"); err != nil || !ok || last != d {
				t.Fatalf("t1's last day %s, %v, %v", last, ok, err)
			}
		})
	}
}
