package cloud_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// commitmentWorld is reservationWorld with the first two reservations
// bought (the third has no purchase) and two recommendations, one of them
// for another look-back period.
func commitmentWorld() *world.World {
	w := reservationWorld()
	w.ReservationPurchases = []world.ReservationPurchase{
		{BillingAccountID: billingAccount, ReservationID: reservationIDs[0], Name: "web", SKU: "Standard_D2s_v5", Region: "eastus", Term: "P1Y",
			PurchaseDate: "2026-01-15", Quantity: 1, Amount: 876.5, Currency: "USD", InstanceFlexibilityGroup: "DSv5 Series", InstanceFlexibilityRatio: 1},
		{BillingAccountID: billingAccount, ReservationID: reservationIDs[1], Name: "batch", SKU: "Standard_D4s_v5", Region: "westeurope", Term: "P3Y",
			PurchaseDate: "2025-06-30", Quantity: 1, Amount: 3000.01, Currency: "EUR", InstanceFlexibilityGroup: "DSv5 Series", InstanceFlexibilityRatio: 2},
	}
	w.ReservationRecommendations = []world.ReservationRecommendation{
		{BillingAccountID: billingAccount, SKU: "Standard_E4s_v5", Location: "eastus", Term: "P3Y", Scope: "Shared", ResourceType: "VirtualMachines",
			LookBackDays: 30, RecommendedQuantity: 2, NormalizedSize: "Standard_E2s_v5", InstanceFlexibilityGroup: "ESv5 Series", InstanceFlexibilityRatio: 2,
			CostWithoutReservations: 498.3, CostWithReservations: 271.44, NetSavings: 226.86, Currency: "USD", FirstUsageDate: "2026-08-01"},
		{BillingAccountID: billingAccount, SKU: "Standard_B2ms", Location: "eastus", Term: "P1Y", Scope: "Shared", ResourceType: "VirtualMachines",
			LookBackDays: 7, RecommendedQuantity: 1, Currency: "USD", FirstUsageDate: "2026-08-01"},
	}
	return w
}

func TestReservationDetails(t *testing.T) {
	w := commitmentWorld()
	_, c := startSim(t, w)
	var got []cloud.ReservationDetail
	day := time.Date(2026, 9, 10, 0, 0, 0, 0, time.UTC)
	err := c.ReservationDetails(context.Background(), billingAccount, day, day, func(d cloud.ReservationDetail) error {
		got = append(got, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reservationIDs) {
		t.Fatalf("%d details, want one per reservation: %+v", len(got), got)
	}
	want := map[string]struct {
		group string
		ratio float64
	}{reservationIDs[0]: {"DSv5 Series", 1}, reservationIDs[1]: {"DSv5 Series", 2}, reservationIDs[2]: {"", 1}}
	for _, d := range got {
		var row world.Reservation
		for _, r := range w.Reservations {
			if r.ReservationID == d.ReservationID && r.Date == "2026-09-10" {
				row = r
			}
		}
		if d.UsageDate != day || d.ReservationOrderID != arm.ReservationOrderID(d.ReservationID) || d.SKUName != row.SKU ||
			d.ReservedHours != row.ReservedHours || d.UsedHours != row.UsedHours ||
			d.InstanceFlexibilityGroup != want[d.ReservationID].group || d.InstanceFlexibilityRatio != want[d.ReservationID].ratio {
			t.Errorf("detail %+v; want %+v with %+v", d, row, want[d.ReservationID])
		}
	}
	err = c.ReservationDetails(context.Background(), "87654321", day, day, func(cloud.ReservationDetail) error { return nil })
	if !errors.Is(err, cloud.ErrBillingAccessRequired) {
		t.Fatalf("another billing account: %v, want ErrBillingAccessRequired", err)
	}
}

func TestReservationPurchases(t *testing.T) {
	w := commitmentWorld()
	s, c := startSim(t, w)
	list := func(account string, from, to time.Time) ([]cloud.ReservationPurchase, error) {
		var out []cloud.ReservationPurchase
		return out, c.ReservationPurchases(context.Background(), account, from, to, func(p cloud.ReservationPurchase) error {
			out = append(out, p)
			return nil
		})
	}
	got, err := list(billingAccount, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := []cloud.ReservationPurchase{
		{ReservationOrderID: arm.ReservationOrderID(reservationIDs[1]), ReservationOrderName: "batch", SKUName: "Standard_D4s_v5", Region: "westeurope", Term: "P3Y",
			PurchaseDate: time.Date(2025, 6, 30, 0, 0, 0, 0, time.UTC), Quantity: 1, Amount: 3000.01, Currency: "EUR", BillingFrequency: "upfront"},
		{ReservationOrderID: arm.ReservationOrderID(reservationIDs[0]), ReservationOrderName: "web", SKUName: "Standard_D2s_v5", Region: "eastus", Term: "P1Y",
			PurchaseDate: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), Quantity: 1, Amount: 876.5, Currency: "USD", BillingFrequency: "upfront"},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("purchases %+v, want %+v", got, want)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/providers/Microsoft.Billing"); hits != 1 {
		t.Fatalf("%d requests, want 1", hits)
	}
	// The filter bounds the purchase dates.
	got, err = list(billingAccount, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err != nil || len(got) != 1 || got[0].ReservationOrderName != "web" {
		t.Fatalf("purchases of 2026: %+v, %v", got, err)
	}
	if _, err := list("87654321", time.Now(), time.Now()); !errors.Is(err, cloud.ErrBillingAccessRequired) {
		t.Fatalf("another billing account: %v, want ErrBillingAccessRequired", err)
	}
}

func TestReservationRecommendations(t *testing.T) {
	_, c := startSim(t, commitmentWorld())
	list := func(account string, days int) ([]cloud.ReservationRecommendation, error) {
		var out []cloud.ReservationRecommendation
		return out, c.ReservationRecommendations(context.Background(), account, days, func(r cloud.ReservationRecommendation) error {
			out = append(out, r)
			return nil
		})
	}
	got, err := list(billingAccount, 30)
	if err != nil {
		t.Fatal(err)
	}
	want := cloud.ReservationRecommendation{SKUName: "Standard_E4s_v5", Location: "eastus", Term: "P3Y", Scope: "Shared", LookBackDays: 30,
		RecommendedQuantity: 2, NormalizedSize: "Standard_E2s_v5", InstanceFlexibilityGroup: "ESv5 Series", InstanceFlexibilityRatio: 2,
		CostWithoutReservations: 498.3, CostWithReservations: 271.44, NetSavings: 226.86, Currency: "USD",
		FirstUsageDate: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("recommendations of the last 30 days: %+v, want %+v", got, want)
	}
	if got, err := list(billingAccount, 7); err != nil || len(got) != 1 || got[0].SKUName != "Standard_B2ms" || got[0].LookBackDays != 7 {
		t.Fatalf("recommendations of the last 7 days: %+v, %v", got, err)
	}
	if _, err := list(billingAccount, 14); err == nil {
		t.Fatal("a look-back period the provider does not offer was listed")
	}
	if _, err := list("87654321", 30); !errors.Is(err, cloud.ErrBillingAccessRequired) {
		t.Fatalf("another billing account: %v, want ErrBillingAccessRequired", err)
	}
}
