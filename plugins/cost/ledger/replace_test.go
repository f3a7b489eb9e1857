package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// stored is a cost_daily row as the tests compare it.
type stored struct {
	Day           ledger.Day    `bun:"day"`
	Service       string        `bun:"service"`
	ResourceGroup string        `bun:"resource_group"`
	Currency      string        `bun:"currency"`
	TenantID      string        `bun:"tenant_id"`
	Month         int           `bun:"month"`
	Cost          ledger.Amount `bun:"cost_cents"`
}

func storedRows(t *testing.T, s *ledger.Store, sub string) []stored {
	t.Helper()
	var rows []stored
	if err := s.DB.NewRaw(`SELECT day, service, resource_group, currency, tenant_id, month, cost_cents FROM cost_daily
		WHERE subscription_id = ? ORDER BY day, service, resource_group, currency`, sub).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func tenantTotal(t *testing.T, s *ledger.Store, tenant, currency string) ledger.Amount {
	t.Helper()
	var sum ledger.Amount
	if err := s.DB.NewRaw(`SELECT COALESCE(SUM(cost_cents), 0) FROM cost_tenant_daily WHERE tenant_id = ? AND currency = ?`, tenant, currency).
		Scan(context.Background(), &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

func emitAll(rows []ledger.Cost) func(func(ledger.Cost) error) error {
	return func(emit func(ledger.Cost) error) error {
		for _, r := range rows {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestReplace: a window's rows land, in batches, with their rollups and
// sync state; the same rows again change nothing; a restated window takes
// the new costs and loses the rows no longer reported; a stream that
// fails midway, after batches were staged, changes nothing at all.
func TestReplace(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			s.FlushRows = 3
			d, _ := ledger.ParseDay("2026-10-30")
			w := ledger.Window{TenantID: "t1", SubscriptionID: "s1", From: d, To: d + 2}
			at := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
			rows := []ledger.Cost{
				{Day: d, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 100},
				{Day: d, Service: "VM", ResourceGroup: "rg2", Currency: "USD", Cost: 250},
				{Day: d, Service: "SQL", ResourceGroup: "", Currency: "EUR", Cost: 700},
				{Day: d + 1, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 101},
				{Day: d + 2, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 40},
				// The same key twice is two parts of one cost.
				{Day: d + 2, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 2},
				// Outside the window: ignored.
				{Day: d + 3, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 9999},
			}
			got, err := s.Replace(ctx, w, at, ledger.Streams{Costs: emitAll(rows)})
			if err != nil {
				t.Fatal(err)
			}
			if got.Rows != 6 || got.Batches != 2 || got.Changed != 5 {
				t.Fatalf("first replace %+v, want 6 rows in 2 batches changing 5", got)
			}
			if all := storedRows(t, s, "s1"); len(all) != 5 || all[4].Cost != 42 || all[0].TenantID != "t1" || all[0].Month != 202610 || all[4].Month != 202611 {
				t.Fatalf("stored %+v", all)
			}
			if usd, eur := tenantTotal(t, s, "t1", "USD"), tenantTotal(t, s, "t1", "EUR"); usd != 493 || eur != 700 {
				t.Fatalf("tenant rollup USD %v EUR %v, want 4.93 and 7.00", usd, eur)
			}
			states, err := s.SyncStates(ctx)
			if err != nil || states["s1"].FirstDay != d || states["s1"].LastDay != d+2 || states["s1"].TenantID != "t1" || !states["s1"].SyncedAt.Equal(at) {
				t.Fatalf("sync state %+v (%v)", states, err)
			}

			// The same rows again: nothing changes.
			again, err := s.Replace(ctx, w, at, ledger.Streams{Costs: emitAll(rows)})
			if err != nil || again.Changed != 0 {
				t.Fatalf("second replace %+v (%v), want nothing changed", again, err)
			}
			if usd := tenantTotal(t, s, "t1", "USD"); usd != 493 {
				t.Fatalf("USD after the same rows again %v, want 4.93", usd)
			}

			// Restated: the last two days only; rg2 of the first day is gone.
			restated := []ledger.Cost{
				{Day: d + 1, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 150},
				{Day: d + 2, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 42},
			}
			late := ledger.Window{TenantID: "t1", SubscriptionID: "s1", From: d + 1, To: d + 2}
			r, err := s.Replace(ctx, late, at.Add(time.Hour), ledger.Streams{Costs: emitAll(restated)})
			if err != nil || r.Changed != 1 {
				t.Fatalf("restated %+v (%v), want one row changed", r, err)
			}
			if usd := tenantTotal(t, s, "t1", "USD"); usd != 100+250+150+42 {
				t.Fatalf("USD after restating %v", usd)
			}
			gone := []ledger.Cost{{Day: d, Service: "VM", ResourceGroup: "rg1", Currency: "USD", Cost: 100}, {Day: d, Service: "SQL", Currency: "EUR", Cost: 700}}
			r, err = s.Replace(ctx, ledger.Window{TenantID: "t1", SubscriptionID: "s1", From: d, To: d}, at.Add(2*time.Hour), ledger.Streams{Costs: emitAll(gone)})
			if err != nil || r.Changed != 1 {
				t.Fatalf("a vanished row: %+v (%v), want one row deleted", r, err)
			}
			if usd := tenantTotal(t, s, "t1", "USD"); usd != 100+150+42 {
				t.Fatalf("USD after rg2 vanished %v", usd)
			}
			states, _ = s.SyncStates(ctx)
			if states["s1"].FirstDay != d || states["s1"].LastDay != d {
				t.Fatalf("sync state after a window of one day %+v", states["s1"])
			}

			// A stream that fails after two batches were staged changes nothing.
			before := storedRows(t, s, "s1")
			cloudDown := errors.New("cloud down")
			failing := func(emit func(ledger.Cost) error) error {
				for i := 0; i < 7; i++ {
					if err := emit(ledger.Cost{Day: d + ledger.Day(i%3), Service: "New", ResourceGroup: "rg", Currency: "USD", Cost: 1}); err != nil {
						return err
					}
				}
				return cloudDown
			}
			r, err = s.Replace(ctx, w, at.Add(3*time.Hour), ledger.Streams{Costs: failing})
			if !errors.Is(err, cloudDown) || r.Batches != 2 {
				t.Fatalf("failing stream: %+v %v, want the stream's error after 2 batches", r, err)
			}
			after := storedRows(t, s, "s1")
			if len(after) != len(before) {
				t.Fatalf("a failed stream changed the rows: %+v, was %+v", after, before)
			}
			for i := range before {
				if after[i] != before[i] {
					t.Fatalf("a failed stream changed row %d: %+v, was %+v", i, after[i], before[i])
				}
			}
			if usd := tenantTotal(t, s, "t1", "USD"); usd != 100+150+42 {
				t.Fatalf("USD after a failed stream %v", usd)
			}
			if st, _ := s.SyncStates(ctx); !st["s1"].SyncedAt.Equal(at.Add(2 * time.Hour)) {
				t.Fatalf("a failed stream moved the sync state: %+v", st["s1"])
			}
			if _, err := s.Replace(ctx, ledger.Window{TenantID: "t1", SubscriptionID: "s1", From: d + 1, To: d}, at, ledger.Streams{Costs: emitAll(nil)}); err == nil {
				t.Fatal("a reversed window was replaced")
			}
		})
	}
}

func TestReservations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			if _, ok, err := s.LastReservationDay(ctx, "t1"); ok || err != nil {
				t.Fatalf("no reservations yet: ok %v, %v", ok, err)
			}
			d, _ := ledger.ParseDay("2026-10-30")
			at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			row := func(day ledger.Day, used float64) ledger.Reservation {
				return ledger.Reservation{TenantID: "t1", ReservationID: "r1", Day: day, SKU: "D2s", ReservedHours: 24, UsedHours: used,
					MinUtilization: used / 24 * 100, AvgUtilization: used / 24 * 100, MaxUtilization: used / 24 * 100, SyncedAt: at}
			}
			if err := s.UpsertReservations(ctx, []ledger.Reservation{row(d, 12), row(d+1, 24)}); err != nil {
				t.Fatal(err)
			}
			if err := s.UpsertReservations(ctx, []ledger.Reservation{row(d+1, 18)}); err != nil {
				t.Fatal(err)
			}
			var rows []ledger.Reservation
			if err := s.DB.NewSelect().Model(&rows).Order("day").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[1].UsedHours != 18 || rows[1].AvgUtilization != 75 {
				t.Fatalf("reservations %+v", rows)
			}
			if last, ok, err := s.LastReservationDay(ctx, "t1"); !ok || err != nil || last != d+1 {
				t.Fatalf("last reservation day %v %v %v", last, ok, err)
			}
		})
	}
}
