package reports_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// TestReservationFigures: Alpha's three reservations over the 30 days up
// to today, each day alike. r1 (D4s, ratio 2) is priced at 2.00 USD a day
// and used 18 of 24 hours; r2 (ratio 1) has no known purchase and is used
// 12 of 48 hours; r3 (E8s, ratio 4) costs 3.00 EUR a day and is used 20 of
// 24 hours. Hours: 1500 of 2880 used (52.08 %); normalised: 128 of 192 a
// day (66.67 %); by cost: 75 % of the USD and 83.33 % of the EUR.
func TestReservationFigures(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			var res []ledger.Reservation
			for d := today - 29; d <= today; d++ {
				res = append(res,
					ledger.Reservation{TenantID: "t1", ReservationID: "r1", Day: d, ReservationOrderID: "o1", SKU: "Standard_D4s_v5", ReservedHours: 24, UsedHours: 18,
						FlexibilityGroup: "DSv5 Series", NormalizedRatio: 2, Currency: "USD", Cost: 200, Unused: 50, SyncedAt: time.Now().UTC()},
					ledger.Reservation{TenantID: "t1", ReservationID: "r2", Day: d, ReservationOrderID: "o2", SKU: "Standard_B2ms", ReservedHours: 48, UsedHours: 12,
						NormalizedRatio: 1, SyncedAt: time.Now().UTC()},
					ledger.Reservation{TenantID: "t1", ReservationID: "r3", Day: d, ReservationOrderID: "o3", SKU: "Standard_E8s_v5", ReservedHours: 24, UsedHours: 20,
						FlexibilityGroup: "ESv5 Series", NormalizedRatio: 4, Currency: "EUR", Cost: 300, Unused: 50, SyncedAt: time.Now().UTC()})
			}
			// Beta's reservation must not count in Alpha's figures.
			res = append(res, ledger.Reservation{TenantID: "t2", ReservationID: "r9", Day: today, ReservationOrderID: "o9", SKU: "Standard_D2s_v5",
				ReservedHours: 24, UsedHours: 0, NormalizedRatio: 1, Currency: "USD", Cost: 999, Unused: 999, SyncedAt: time.Now().UTC()})
			if _, err := w.db.NewInsert().Model(&res).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			type item struct {
				ReservationID           string         `json:"reservation_id"`
				Period                  string         `json:"period"`
				FlexibilityGroup        string         `json:"instance_flexibility_group"`
				NormalizedRatio         float64        `json:"normalized_size_ratio"`
				NormalizedReservedHours float64        `json:"normalized_reserved_hours"`
				NormalizedUsedHours     float64        `json:"normalized_used_hours"`
				Currency                *string        `json:"currency"`
				Cost                    *ledger.Amount `json:"cost"`
				UnusedCost              *ledger.Amount `json:"unused_cost"`
				CostUtilizationPercent  *float64       `json:"cost_utilization_percent"`
			}
			var got struct {
				Summary struct {
					Reservations                 int     `json:"reservations"`
					ReservedHours                float64 `json:"reserved_hours"`
					UsedHours                    float64 `json:"used_hours"`
					UtilizationPercent           float64 `json:"utilization_percent"`
					NormalizedReservedHours      float64 `json:"normalized_reserved_hours"`
					NormalizedUsedHours          float64 `json:"normalized_used_hours"`
					NormalizedUtilizationPercent float64 `json:"normalized_utilization_percent"`
					Costs                        []struct {
						Currency               string        `json:"currency"`
						Cost                   ledger.Amount `json:"cost"`
						UnusedCost             ledger.Amount `json:"unused_cost"`
						CostUtilizationPercent float64       `json:"cost_utilization_percent"`
					} `json:"costs"`
				} `json:"summary"`
				Items []item `json:"items"`
			}
			w.json(t, "/api/v1/costs/reservations?grain=daily&tenant_id=t1", userA, &got)
			s := got.Summary
			if s.Reservations != 3 || s.ReservedHours != 2880 || s.UsedHours != 1500 || s.UtilizationPercent != 52.08 ||
				s.NormalizedReservedHours != 5760 || s.NormalizedUsedHours != 3840 || s.NormalizedUtilizationPercent != 66.67 {
				t.Errorf("summary %+v", s)
			}
			if len(s.Costs) != 2 || s.Costs[0].Currency != "EUR" || s.Costs[0].Cost != 9000 || s.Costs[0].UnusedCost != 1500 || s.Costs[0].CostUtilizationPercent != 83.33 ||
				s.Costs[1].Currency != "USD" || s.Costs[1].Cost != 6000 || s.Costs[1].UnusedCost != 1500 || s.Costs[1].CostUtilizationPercent != 75 {
				t.Errorf("costs %+v", s.Costs)
			}
			if len(got.Items) != 90 {
				t.Fatalf("%d daily items, want 90", len(got.Items))
			}
			r1, r2 := got.Items[0], got.Items[1]
			if r1.ReservationID != "r1" || r1.Period != (today-29).String() || r1.FlexibilityGroup != "DSv5 Series" || r1.NormalizedRatio != 2 ||
				r1.NormalizedReservedHours != 48 || r1.NormalizedUsedHours != 36 || r1.Currency == nil || *r1.Currency != "USD" ||
				*r1.Cost != 200 || *r1.UnusedCost != 50 || *r1.CostUtilizationPercent != 75 {
				t.Errorf("r1's first day %+v", r1)
			}
			if r2.ReservationID != "r2" || r2.NormalizedRatio != 1 || r2.Currency != nil || r2.Cost != nil || r2.UnusedCost != nil || r2.CostUtilizationPercent != nil {
				t.Errorf("r2, unpriced, %+v", r2)
			}

			// A month sums its days: November's ten days of r3.
			w.json(t, "/api/v1/costs/reservations?tenant_id=t1", userA, &got)
			last := got.Items[len(got.Items)-1]
			if last.ReservationID != "r3" || last.Period != "2026-11" || *last.Cost != 3000 || *last.UnusedCost != 500 || last.NormalizedReservedHours != 960 {
				t.Errorf("r3's November %+v", last)
			}
		})
	}
}

// TestExpiringCommitments: Alpha's orders end in 5, 30, 60, 200 days and
// today (ended); Beta's in 10. Each lists with the narrowest threshold
// crossed, within the days asked, to those who may see its tenant.
func TestExpiringCommitments(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			led := &ledger.Store{DB: w.db}
			c := func(tenant, order string, left int) ledger.Commitment {
				return ledger.Commitment{TenantID: tenant, ReservationOrderID: order, Kind: ledger.KindReservation, Name: order, SKU: "Standard_D2s_v5", Region: "eastus", Term: "P1Y",
					PurchaseDay: today + ledger.Day(left) - 365, ExpiryDay: today + ledger.Day(left), Quantity: 1, Currency: "USD", Amount: 36500, SyncedAt: time.Now().UTC()}
			}
			if err := led.ReplaceCommitments(ctx, "t1", []ledger.Commitment{c("t1", "o60", 60), c("t1", "o5", 5), c("t1", "o30", 30), c("t1", "o200", 200), c("t1", "o0", 0)}); err != nil {
				t.Fatal(err)
			}
			if err := led.ReplaceCommitments(ctx, "t2", []ledger.Commitment{c("t2", "o10", 10)}); err != nil {
				t.Fatal(err)
			}
			type expiring struct {
				AsOf       string `json:"as_of"`
				WithinDays int    `json:"within_days"`
				Thresholds []int  `json:"thresholds"`
				Items      []struct {
					TenantID           string        `json:"tenant_id"`
					ReservationOrderID string        `json:"reservation_order_id"`
					ExpiryDate         string        `json:"expiry_date"`
					PurchaseDate       string        `json:"purchase_date"`
					DaysLeft           int           `json:"days_left"`
					AlertThreshold     *int          `json:"alert_threshold"`
					Amount             ledger.Amount `json:"amount"`
				} `json:"items"`
			}
			var got expiring
			w.json(t, "/api/v1/costs/commitments/expiring", userA, &got)
			want := []struct {
				order     string
				left      int
				threshold int
			}{{"o5", 5, 7}, {"o30", 30, 30}, {"o60", 60, 90}}
			if got.AsOf != today.String() || got.WithinDays != 90 || len(got.Thresholds) != 3 || len(got.Items) != len(want) {
				t.Fatalf("Alpha's user: %+v", got)
			}
			for i, e := range got.Items {
				if e.TenantID != "t1" || e.ReservationOrderID != want[i].order || e.DaysLeft != want[i].left || e.AlertThreshold == nil ||
					*e.AlertThreshold != want[i].threshold || e.ExpiryDate != (today+ledger.Day(want[i].left)).String() || e.Amount != 36500 {
					t.Errorf("item %d: %+v, want %+v", i, e, want[i])
				}
			}
			w.json(t, "/api/v1/costs/commitments/expiring?within_days=365", admin, &got)
			if len(got.Items) != 5 || got.Items[1].ReservationOrderID != "o10" || got.Items[1].TenantID != "t2" ||
				got.Items[4].ReservationOrderID != "o200" || got.Items[4].AlertThreshold != nil {
				t.Errorf("everyone's within a year: %+v", got.Items)
			}
			w.json(t, "/api/v1/costs/commitments/expiring?tenant_ids=t3", userA, &got)
			if len(got.Items) != 0 {
				t.Errorf("Gamma has no commitments: %+v", got.Items)
			}
			if resp := w.get(t, "/api/v1/costs/commitments/expiring?tenant_ids=t2", userA); resp.StatusCode != http.StatusForbidden {
				t.Errorf("another tenant's commitments: %d", resp.StatusCode)
			}
			for _, q := range []string{"within_days=0", "within_days=1827", "within_days=soon"} {
				resp := w.get(t, "/api/v1/costs/commitments/expiring?"+q, admin)
				b, _ := io.ReadAll(resp.Body)
				var p struct {
					Errors []struct{ Location string } `json:"errors"`
				}
				_ = json.Unmarshal(b, &p)
				if resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != "query.within_days" {
					t.Errorf("%s: %d %s, want 422 naming query.within_days", q, resp.StatusCode, b)
				}
			}
		})
	}
}

// TestRecommendations: each tenant's advice, the largest savings first,
// to those who may see the tenant.
func TestRecommendations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			led := &ledger.Store{DB: w.db}
			rec := func(tenant string, pos int, sku string, savings ledger.Amount) ledger.Recommendation {
				return ledger.Recommendation{TenantID: tenant, Position: pos, Kind: ledger.KindReservation, SKU: sku, Location: "eastus", Term: "P3Y", Scope: "Shared",
					LookBackDays: 30, RecommendedQuantity: 2, NormalizedSize: "Standard_E2s_v5", FlexibilityGroup: "ESv5 Series", FlexibilityRatio: 2,
					Currency: "USD", CostWithout: 100000, CostWith: 100000 - savings, NetSavings: savings, FirstUsageDay: today - 40, SyncedAt: time.Now().UTC()}
			}
			if err := led.ReplaceRecommendations(ctx, "t1", []ledger.Recommendation{rec("t1", 0, "Standard_E4s_v5", 1234), rec("t1", 1, "Standard_D4s_v5", 22686)}); err != nil {
				t.Fatal(err)
			}
			if err := led.ReplaceRecommendations(ctx, "t2", []ledger.Recommendation{rec("t2", 0, "Standard_B2ms", 99999)}); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Items []struct {
					TenantID        string        `json:"tenant_id"`
					SKU             string        `json:"sku"`
					Term            string        `json:"term"`
					LookBackDays    int           `json:"look_back_days"`
					NormalizedRatio float64       `json:"normalized_size_ratio"`
					CostWithout     ledger.Amount `json:"cost_without_reservations"`
					CostWith        ledger.Amount `json:"cost_with_reservations"`
					NetSavings      ledger.Amount `json:"net_savings"`
					FirstUsageDate  string        `json:"first_usage_date"`
				} `json:"items"`
			}
			w.json(t, "/api/v1/costs/commitments/recommendations", userA, &got)
			if len(got.Items) != 2 || got.Items[0].SKU != "Standard_D4s_v5" || got.Items[0].NetSavings != 22686 || got.Items[0].CostWith != 77314 ||
				got.Items[0].CostWithout != 100000 || got.Items[0].NormalizedRatio != 2 || got.Items[0].LookBackDays != 30 || got.Items[0].Term != "P3Y" ||
				got.Items[0].FirstUsageDate != (today-40).String() || got.Items[1].SKU != "Standard_E4s_v5" {
				t.Errorf("Alpha's recommendations: %+v", got.Items)
			}
			w.json(t, "/api/v1/costs/commitments/recommendations", admin, &got)
			if len(got.Items) != 3 || got.Items[2].TenantID != "t2" {
				t.Errorf("everyone's recommendations: %+v", got.Items)
			}
			if resp := w.get(t, "/api/v1/costs/commitments/recommendations?tenant_ids=t2", userA); resp.StatusCode != http.StatusForbidden {
				t.Errorf("another tenant's recommendations: %d", resp.StatusCode)
			}
			if resp := w.get(t, "/api/v1/costs/commitments/recommendations", sdk.Principal{ID: "nobody", Kind: "user"}); resp.StatusCode != http.StatusOK {
				t.Errorf("a caller without tenants: %d", resp.StatusCode)
			}
		})
	}
}

// TestSavingsPlanFigures: Alpha's savings plan commits 60.00 USD a day and
// is used at 78.43 % (47.06 used, 12.94 unused) over the 30 days up to
// today; Beta's plan must not count. The plan ends in 12 days: it lists
// among the expiring commitments as a savings plan alerting at 30 days,
// with its hourly commitment, and the advice to buy another lists beside
// the reservations' with its figures.
func TestSavingsPlanFigures(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			ctx := context.Background()
			led := &ledger.Store{DB: w.db}
			at := time.Now().UTC()
			var days []ledger.SavingsPlanDay
			for d := today - 29; d <= today; d++ {
				days = append(days, ledger.SavingsPlanDay{TenantID: "t1", SavingsPlanID: "sp1", Day: d, SavingsPlanOrderID: "spo1", MinUtilization: 40,
					AvgUtilization: 78.43, MaxUtilization: 100, Currency: "USD", Committed: 6000, Used: 4706, Unused: 1294, SyncedAt: at})
			}
			days = append(days, ledger.SavingsPlanDay{TenantID: "t2", SavingsPlanID: "sp9", Day: today, SavingsPlanOrderID: "spo9",
				Currency: "USD", Committed: 999, Unused: 999, SyncedAt: at})
			if err := led.UpsertSavingsPlanDays(ctx, days); err != nil {
				t.Fatal(err)
			}
			type item struct {
				SavingsPlanID          string        `json:"savings_plan_id"`
				SavingsPlanOrderID     string        `json:"savings_plan_order_id"`
				Period                 string        `json:"period"`
				Currency               string        `json:"currency"`
				Committed              ledger.Amount `json:"committed"`
				Used                   ledger.Amount `json:"used"`
				UnusedCost             ledger.Amount `json:"unused_cost"`
				CostUtilizationPercent float64       `json:"cost_utilization_percent"`
				MinUtilization         float64       `json:"min_utilization"`
				AvgUtilization         float64       `json:"avg_utilization"`
			}
			var got struct {
				SavingsPlans struct {
					Summary struct {
						SavingsPlans int `json:"savings_plans"`
						Costs        []struct {
							Currency               string        `json:"currency"`
							Committed              ledger.Amount `json:"committed"`
							Used                   ledger.Amount `json:"used"`
							UnusedCost             ledger.Amount `json:"unused_cost"`
							CostUtilizationPercent float64       `json:"cost_utilization_percent"`
						} `json:"costs"`
					} `json:"summary"`
					Items []item `json:"items"`
				} `json:"savings_plans"`
			}
			w.json(t, "/api/v1/costs/reservations?grain=daily&tenant_id=t1", userA, &got)
			sp := got.SavingsPlans
			if sp.Summary.SavingsPlans != 1 || len(sp.Summary.Costs) != 1 || sp.Summary.Costs[0].Currency != "USD" || sp.Summary.Costs[0].Committed != 180000 ||
				sp.Summary.Costs[0].Used != 141180 || sp.Summary.Costs[0].UnusedCost != 38820 || sp.Summary.Costs[0].CostUtilizationPercent != 78.43 {
				t.Errorf("summary %+v", sp.Summary)
			}
			if len(sp.Items) != 30 {
				t.Fatalf("%d daily items, want 30", len(sp.Items))
			}
			first := item{SavingsPlanID: "sp1", SavingsPlanOrderID: "spo1", Period: (today - 29).String(), Currency: "USD", Committed: 6000, Used: 4706,
				UnusedCost: 1294, CostUtilizationPercent: 78.43, MinUtilization: 40, AvgUtilization: 78.43}
			if sp.Items[0] != first {
				t.Errorf("the first day %+v, want %+v", sp.Items[0], first)
			}
			// A month sums its days: November's ten.
			w.json(t, "/api/v1/costs/reservations?tenant_id=t1", userA, &got)
			if last := got.SavingsPlans.Items[len(got.SavingsPlans.Items)-1]; last.Period != "2026-11" || last.Committed != 60000 || last.UnusedCost != 12940 {
				t.Errorf("November %+v", last)
			}
			if resp := w.get(t, "/api/v1/costs/reservations?tenant_id=t2", userA); resp.StatusCode != http.StatusForbidden {
				t.Errorf("another tenant's savings plans: %d", resp.StatusCode)
			}

			plan := ledger.Commitment{TenantID: "t1", ReservationOrderID: "spo1", Kind: ledger.KindSavingsPlan, SavingsPlanID: "sp1", HourlyCommitment: 2.5,
				Name: "compute", SKU: "Compute_Savings_Plan", Term: "P1Y", PurchaseDay: today + 12 - 365, ExpiryDay: today + 12, Quantity: 1,
				Currency: "USD", Amount: 6000 * 365, SyncedAt: at}
			reservation := ledger.Commitment{TenantID: "t1", ReservationOrderID: "o5", Kind: ledger.KindReservation, Name: "web", SKU: "Standard_D2s_v5",
				Region: "eastus", Term: "P1Y", PurchaseDay: today + 5 - 365, ExpiryDay: today + 5, Quantity: 1, Currency: "USD", Amount: 36500, SyncedAt: at}
			if err := led.ReplaceCommitments(ctx, "t1", []ledger.Commitment{plan, reservation}); err != nil {
				t.Fatal(err)
			}
			var exp struct {
				Items []struct {
					Kind               string        `json:"kind"`
					ReservationOrderID string        `json:"reservation_order_id"`
					SavingsPlanID      *string       `json:"savings_plan_id"`
					HourlyCommitment   *float64      `json:"hourly_commitment"`
					DaysLeft           int           `json:"days_left"`
					AlertThreshold     *int          `json:"alert_threshold"`
					Amount             ledger.Amount `json:"amount"`
				} `json:"items"`
			}
			w.json(t, "/api/v1/costs/commitments/expiring", userA, &exp)
			if len(exp.Items) != 2 || exp.Items[0].Kind != "reservation" || exp.Items[0].SavingsPlanID != nil || exp.Items[0].HourlyCommitment != nil ||
				exp.Items[1].Kind != "savings_plan" || exp.Items[1].ReservationOrderID != "spo1" || exp.Items[1].SavingsPlanID == nil || *exp.Items[1].SavingsPlanID != "sp1" ||
				exp.Items[1].HourlyCommitment == nil || *exp.Items[1].HourlyCommitment != 2.5 || exp.Items[1].DaysLeft != 12 ||
				exp.Items[1].AlertThreshold == nil || *exp.Items[1].AlertThreshold != 30 || exp.Items[1].Amount != 2190000 {
				t.Errorf("expiring %+v", exp.Items)
			}

			recs := []ledger.Recommendation{
				{TenantID: "t1", Position: 0, Kind: ledger.KindReservation, SKU: "Standard_E4s_v5", Location: "eastus", Term: "P3Y", Scope: "Shared", LookBackDays: 30,
					RecommendedQuantity: 2, FlexibilityRatio: 2, Currency: "USD", CostWithout: 49830, CostWith: 27144, NetSavings: 22686, FirstUsageDay: today - 40, SyncedAt: at},
				{TenantID: "t1", Position: 1, Kind: ledger.KindSavingsPlan, SKU: "Compute_Savings_Plan", Term: "P3Y", Scope: "Shared", LookBackDays: 30,
					CommitmentAmount: 1.2, AverageUtilization: 98.6, Coverage: 71.2, Currency: "USD", CostWithout: 215040, CostWith: 173784, NetSavings: 41256,
					FirstUsageDay: today - 30, SyncedAt: at},
			}
			if err := led.ReplaceRecommendations(ctx, "t1", recs); err != nil {
				t.Fatal(err)
			}
			var rg struct {
				Items []struct {
					Kind                      string        `json:"kind"`
					SKU                       string        `json:"sku"`
					Location                  string        `json:"location"`
					NetSavings                ledger.Amount `json:"net_savings"`
					CommitmentAmount          *float64      `json:"commitment_amount"`
					AverageUtilizationPercent *float64      `json:"average_utilization_percent"`
					CoveragePercent           *float64      `json:"coverage_percent"`
				} `json:"items"`
			}
			w.json(t, "/api/v1/costs/commitments/recommendations", userA, &rg)
			if len(rg.Items) != 2 || rg.Items[0].Kind != "savings_plan" || rg.Items[0].NetSavings != 41256 || rg.Items[0].Location != "" ||
				rg.Items[0].CommitmentAmount == nil || *rg.Items[0].CommitmentAmount != 1.2 || *rg.Items[0].AverageUtilizationPercent != 98.6 ||
				*rg.Items[0].CoveragePercent != 71.2 || rg.Items[1].Kind != "reservation" || rg.Items[1].CommitmentAmount != nil || rg.Items[1].CoveragePercent != nil {
				t.Errorf("recommendations %+v", rg.Items)
			}
		})
	}
}
