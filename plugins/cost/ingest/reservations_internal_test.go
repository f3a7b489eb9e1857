package ingest

import (
	"slices"
	"testing"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		total   ledger.Amount
		weights []float64
		want    []ledger.Amount
	}{
		{200, []float64{24}, []ledger.Amount{200}},
		{200, []float64{24, 24}, []ledger.Amount{100, 100}},
		// 100/3 each: the cent left over goes to the first of equal ones.
		{100, []float64{1, 1, 1}, []ledger.Amount{34, 33, 33}},
		// 7·1/4 = 1.75 and 7·3/4 = 5.25: the larger remainder takes it.
		{7, []float64{1, 3}, []ledger.Amount{2, 5}},
		{5, []float64{0, 0}, []ledger.Amount{5, 0}},
	} {
		if got := split(c.total, c.weights); !slices.Equal(got, c.want) {
			t.Errorf("split(%d, %v) = %v, want %v", c.total, c.weights, got, c.want)
		}
	}
}

// TestPrice: an order of two reservations shares a day's cost by their
// reserved hours, each losing what its own unused hours wasted; a day of
// an unknown order stays unpriced.
func TestPrice(t *testing.T) {
	d := ledger.Day(20000)
	// 36.50 over 365 days: 0.10 a day.
	c := ledger.Commitment{ReservationOrderID: "o1", PurchaseDay: d - 10, ExpiryDay: d + 355, Amount: 3650, Currency: "EUR"}
	rows := []ledger.Reservation{
		{ReservationID: "r2", ReservationOrderID: "o1", Day: d, ReservedHours: 24, UsedHours: 24},
		{ReservationID: "r1", ReservationOrderID: "o1", Day: d, ReservedHours: 48, UsedHours: 12},
		{ReservationID: "r3", ReservationOrderID: "o2", Day: d, ReservedHours: 24, UsedHours: 0},
	}
	price(rows, map[string]ledger.Commitment{"o1": c})
	// r1 takes 2/3 of 10 cents (6.67, rounded down, plus the cent left
	// over as the larger remainder: 7), r2 the other 3; r1 wasted 3/4.
	if r := rows[1]; r.Cost != 7 || r.Unused != 5 || r.Currency != "EUR" {
		t.Errorf("r1 %+v", r)
	}
	if r := rows[0]; r.Cost != 3 || r.Unused != 0 || r.Currency != "EUR" {
		t.Errorf("r2 %+v", r)
	}
	if r := rows[2]; r.Cost != 0 || r.Unused != 0 || r.Currency != "" {
		t.Errorf("r3 of an unknown order %+v", r)
	}
}
