package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

var reservationIDs = []string{"aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002", "aaaaaaaa-0000-4000-8000-000000000003"}

// reservationWorld has three reservations used every day from September to
// November 2026: 273 daily summaries, three pages.
func reservationWorld() *world.World {
	w := baseWorld()
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	for d := 0; d < 91; d++ {
		for i, id := range reservationIDs {
			w.Reservations = append(w.Reservations, world.Reservation{
				BillingAccountID: billingAccount, ReservationID: id, SKU: fmt.Sprintf("Standard_D%ds_v5", 2<<i),
				Date: start.AddDate(0, 0, d).Format(time.DateOnly), ReservedHours: 24, UsedHours: float64((d*7 + i*5) % 25),
			})
		}
	}
	return w
}

func listReservations(c *cloud.Clients, account, grain string, from, to time.Time) ([]cloud.ReservationSummary, error) {
	var out []cloud.ReservationSummary
	err := c.ReservationSummaries(context.Background(), account, grain, from, to, func(s cloud.ReservationSummary) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

func TestReservationSummariesDaily(t *testing.T) {
	w := reservationWorld()
	s, c := startSim(t, w)
	from, to := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	got, err := listReservations(c, billingAccount, cloud.GrainDaily, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(w.Reservations) {
		t.Fatalf("%d summaries, want %d", len(got), len(w.Reservations))
	}
	want := map[string]world.Reservation{}
	for _, r := range w.Reservations {
		want[r.ReservationID+r.Date] = r
	}
	for _, g := range got {
		r, ok := want[g.ReservationID+g.UsageDate.Format(time.DateOnly)]
		if !ok {
			t.Fatalf("summary %+v is not in the world", g)
		}
		u := r.UsedHours / r.ReservedHours * 100
		if g.ReservationOrderID != arm.ReservationOrderID(r.ReservationID) || g.SKUName != r.SKU ||
			g.ReservedHours != r.ReservedHours || g.UsedHours != r.UsedHours ||
			g.MinUtilization != u || g.AvgUtilization != u || g.MaxUtilization != u || g.UsageDate.Location() != time.UTC {
			t.Fatalf("summary %+v, want %+v at %v%%", g, r, u)
		}
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/providers/Microsoft.Billing"); hits != 3 {
		t.Fatalf("%d requests, want 3 pages", hits)
	}

	// The filter bounds the days.
	got, err = listReservations(c, billingAccount, cloud.GrainDaily, from.AddDate(0, 0, 10), from.AddDate(0, 0, 11))
	if err != nil || len(got) != 2*len(reservationIDs) {
		t.Fatalf("two days: %d summaries, %v", len(got), err)
	}
}

func TestReservationSummariesMonthly(t *testing.T) {
	w := reservationWorld()
	_, c := startSim(t, w)
	got, err := listReservations(c, billingAccount, cloud.GrainMonthly,
		time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3*len(reservationIDs) {
		t.Fatalf("%d monthly summaries, want 9", len(got))
	}
	for _, g := range got {
		if g.UsageDate.Day() != 1 {
			t.Fatalf("monthly summary dated %v", g.UsageDate)
		}
		var reserved, used, sum float64
		minU, maxU, days := 101.0, -1.0, 0
		for _, r := range w.Reservations {
			if r.ReservationID == g.ReservationID && r.Date[:7] == g.UsageDate.Format("2006-01") {
				u := r.UsedHours / r.ReservedHours * 100
				reserved, used, sum = reserved+r.ReservedHours, used+r.UsedHours, sum+u
				minU, maxU = min(minU, u), max(maxU, u)
				days++
			}
		}
		if g.ReservedHours != reserved || g.UsedHours != used || g.MinUtilization != minU || g.MaxUtilization != maxU || g.AvgUtilization != sum/float64(days) {
			t.Fatalf("monthly summary %+v; want reserved %v used %v min %v avg %v max %v", g, reserved, used, minU, sum/float64(days), maxU)
		}
	}
}

func TestReservationSummariesWithoutBillingAccess(t *testing.T) {
	_, c := startSim(t, reservationWorld())
	_, err := listReservations(c, "87654321", cloud.GrainDaily, time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC))
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrBillingAccessRequired) || !errors.Is(err, cloud.ErrForbidden) || !errors.As(err, &e) || e.Code != "AuthorizationFailed" {
		t.Fatalf("err %v, want ErrBillingAccessRequired (AuthorizationFailed)", err)
	}
	if _, err := listReservations(c, billingAccount, "weekly", time.Now(), time.Now()); err == nil {
		t.Fatal("an unknown grain was listed")
	}
}
