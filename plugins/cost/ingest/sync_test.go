package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ingest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var allSubs = []string{subC1, subC2, subF1}

// hookCall is one call of an AfterTenant hook.
type hookCall struct {
	tenant   string
	from, to ledger.Day
}

// TestBackfillIncrementalRestate: the first sync backfills exactly the
// world's costs of the backfill window, rolled up per tenant and currency
// to the cent, with the billing account's reservations; a second sync the
// same day fetches only the restated days and changes no total; a day
// later, a restated cost and a cost the provider no longer reports are
// taken over, and the new day arrives.
func TestBackfillIncrementalRestate(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := costWorld()
			f := start(t, dialect, w)
			var calls []hookCall
			f.syncer.AfterTenant = []ingest.Hook{func(_ context.Context, tenant sdk.Tenant, from, to ledger.Day) error {
				calls = append(calls, hookCall{tenant.ID, from, to})
				return nil
			}}
			today := day(simNow)
			first := today - backfillDays + 1

			// Backfill.
			n, progress := f.mustRun(t)
			want := worldCosts(w, first, today, allSubs...)
			sameCosts(t, f.stored(t), want)
			wantResources := worldResourceDays(w, first, today, allSubs...)
			if got := f.storedResourceDays(t); fmt.Sprint(got) != fmt.Sprint(wantResources) {
				t.Fatalf("costs by resource %v, want %v", got, wantResources)
			}
			if n != int64(2*(len(want)+len(wantResources)))+90 {
				t.Fatalf("first sync processed %d records, want %d cost rows, %d by resource, each actual and amortised, and 90 reservation days", n, len(want), len(wantResources))
			}
			if got, wantSums := f.totals(t), sumByTenant(want); fmt.Sprint(got) != fmt.Sprint(wantSums) {
				t.Fatalf("totals %v, want %v", got, wantSums)
			}
			last := progress[len(progress)-1]
			if last.Done != 4 || last.Total != 4 {
				t.Fatalf("last progress %+v, want 4 of 4 steps (3 subscriptions, 1 billing account)", last)
			}
			for _, sub := range allSubs {
				if q := f.costQueries(sub); q != 5 {
					t.Fatalf("%s: %d cost queries for %d rows, want 5: the days and the days by resource, each actual and amortised, and the costs by resource", sub, q, backfillDays*8)
				}
				if !slices.ContainsFunc(progress, func(p plugintest.Progress) bool {
					return strings.Contains(p.Message, sub) && strings.Contains(p.Message, fmt.Sprintf("%d rows and %d by resource, actual and amortised, in 2 batches", 2*backfillDays*8, 2*len(worldResourceDays(w, first, today, sub))))
				}) {
					t.Fatalf("no progress names %s's rows: %+v", sub, progress)
				}
			}
			if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{contoso.ID, fabrikam.ID}) {
				t.Fatalf("fresh tenants %v", fresh)
			}
			wantCalls := []hookCall{{contoso.ID, first, today}, {fabrikam.ID, first, today}}
			if !slices.Equal(calls, wantCalls) {
				t.Fatalf("hooks called %+v, want %+v", calls, wantCalls)
			}
			f.checkReservations(t, w, today-89, today)
			states, err := f.ledger.SyncStates(context.Background())
			if err != nil || len(states) != 3 || states[subF1].FirstDay != first || states[subF1].LastDay != today || states[subF1].TenantID != fabrikam.ID {
				t.Fatalf("sync states %+v (%v)", states, err)
			}

			// The same day again: only the restated days are fetched, and
			// nothing changes.
			before := f.totals(t)
			n, _ = f.mustRun(t)
			if want := int64(2*(3*5*8+len(worldResourceDays(w, today-4, today, allSubs...))) + 5); n != want {
				t.Fatalf("second sync processed %d records, want %d: 5 days of 3 subscriptions at both grains and 5 reservation days", n, want)
			}
			for _, sub := range allSubs {
				if q := f.costQueries(sub); q != 9 {
					t.Fatalf("%s: %d cost queries after the second sync, want 9: the costs by resource over 30 days are fetched once a day", sub, q)
				}
			}
			sameCosts(t, f.stored(t), want)
			if after := f.totals(t); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("a second sync over the same days changed totals from %v to %v", before, after)
			}
			if got := calls[2:]; !slices.Equal(got, []hookCall{{contoso.ID, today - 4, today}, {fabrikam.ID, today - 4, today}}) {
				t.Fatalf("hooks of the second sync %+v", got)
			}

			// A day later the provider restates two days.
			restated := restate(w, func(costs []world.Cost) []world.Cost {
				for i, c := range costs {
					if c.SubscriptionID == subC1 && c.Date == simNow.AddDate(0, 0, -2).Format(time.DateOnly) && c.Service == "Service 0" && c.ResourceGroup == "rg-0" {
						costs[i].Cost = 1234.565
					}
				}
				return slices.DeleteFunc(costs, func(c world.Cost) bool {
					return c.SubscriptionID == subF1 && c.Date == simNow.AddDate(0, 0, -1).Format(time.DateOnly) && c.Service == "Service 1" && c.ResourceGroup == "rg-1"
				})
			})
			f.sim.SetWorld(restated)
			f.nextDay(t)
			f.mustRun(t)
			want = worldCosts(restated, first, today+1, allSubs...)
			sameCosts(t, f.stored(t), want)
			if got, want := f.storedResourceDays(t), worldResourceDays(restated, first, today+1, allSubs...); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("costs by resource after restating %v, want %v", got, want)
			}
			if got := want[key{subC1, today - 2, "Service 0", "rg-0", "USD"}]; got != 123457 {
				t.Fatalf("the restated cost is %v, want 1234.57", got)
			}
			if got, wantSums := f.totals(t), sumByTenant(want); fmt.Sprint(got) != fmt.Sprint(wantSums) {
				t.Fatalf("totals after restating %v, want %v", got, wantSums)
			}
			if got := calls[4:]; !slices.Equal(got, []hookCall{{contoso.ID, today - 4, today + 1}, {fabrikam.ID, today - 4, today + 1}}) {
				t.Fatalf("hooks a day later %+v", got)
			}
		})
	}
}

// checkReservations compares cost_reservations with the world's
// reservation days from through to.
func (f *fixture) checkReservations(t *testing.T, w *world.World, from, to ledger.Day) {
	t.Helper()
	var rows []ledger.Reservation
	if err := f.ledger.DB.NewSelect().Model(&rows).Order("day").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []world.Reservation
	for _, r := range w.Reservations {
		if d, _ := ledger.ParseDay(r.Date); d >= from && d <= to {
			want = append(want, r)
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d reservation days stored, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		wr := want[i]
		if r.TenantID != contoso.ID || r.ReservationID != wr.ReservationID || r.Day.String() != wr.Date || r.SKU != wr.SKU ||
			r.UsedHours != wr.UsedHours || r.ReservedHours != wr.ReservedHours || r.AvgUtilization != wr.UsedHours/wr.ReservedHours*100 ||
			r.ReservationOrderID != arm.ReservationOrderID(wr.ReservationID) {
			t.Fatalf("reservation day %d: %+v, want %+v", i, r, wr)
		}
	}
}

// TestCloudFailureKeepsPreviousData: a subscription whose cost query is
// throttled past the retries after its first page fails the run with
// the reason, naming the subscription; its previous costs, rollups and
// sync state stay as they were, its tenant is not marked fresh, and the
// other tenant's sync goes through. Once the cloud answers, the next run
// catches up.
func TestCloudFailureKeepsPreviousData(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := costWorld()
			f := start(t, dialect, w, arm.WithCostPageSize(20))
			f.ledger.FlushRows = 10
			f.mustRun(t)
			today := day(simNow)
			before := f.stored(t)
			statesBefore, _ := f.ledger.SyncStates(context.Background())

			restated := restate(w, func(costs []world.Cost) []world.Cost {
				for i := range costs {
					if d, _ := ledger.ParseDay(costs[i].Date); d >= today-2 {
						costs[i].Cost += 100
					}
				}
				return costs
			})
			f.sim.SetWorld(restated)
			f.nextDay(t)
			// The first page of the subscription's costs arrives, the
			// following are throttled.
			f.sim.Faults.Set(cloudsim.ARM, costPath(subC2), cloudsim.Fault{Status: 429, Skip: 1})
			marks := len(f.harness.FreshMarks())
			queries := f.costQueries(subC2)
			_, _, err := f.run(t)
			if err == nil || !strings.Contains(err.Error(), "subscription "+subC2) || !strings.Contains(err.Error(), "429 Too Many Requests") ||
				!strings.Contains(err.Error(), "Contoso") {
				t.Fatalf("throttled sync: %v; want the run failed naming Contoso, %s and 429", err, subC2)
			}
			if q := f.costQueries(subC2) - queries; q != 4 {
				t.Fatalf("%d requests for %s, want its first page and the second page's 3 tries", q, subC2)
			}
			stored := f.stored(t)
			for k, v := range before {
				if k.Sub == subC2 && stored[k] != v {
					t.Fatalf("%+v: %v after the failed sync, was %v", k, stored[k], v)
				}
			}
			for k := range stored {
				if _, ok := before[k]; k.Sub == subC2 && !ok {
					t.Fatalf("the failed sync left %+v", k)
				}
			}
			// Contoso's other subscription and Fabrikam went through; the
			// rollups agree with the raw rows.
			want := worldCosts(restated, today-4, today+1, subC1, subF1)
			for k, v := range want {
				if stored[k] != v {
					t.Fatalf("%+v: %v, want %v", k, stored[k], v)
				}
			}
			f.totals(t)
			states, _ := f.ledger.SyncStates(context.Background())
			if states[subC2] != statesBefore[subC2] || states[subC1].LastDay != today+1 {
				t.Fatalf("sync states after the failure %+v, were %+v", states, statesBefore)
			}
			if fresh := f.freshTenants(marks); !slices.Equal(fresh, []string{fabrikam.ID}) {
				t.Fatalf("fresh after the failure: %v, want Fabrikam only", fresh)
			}
			if failed := f.failedTenants(marks); !slices.Equal(failed, []string{contoso.ID}) {
				t.Errorf("failed after the failure: %v, want Contoso's reported", failed)
			}

			f.sim.Faults.Clear()
			f.mustRun(t)
			sameCosts(t, f.stored(t), worldCosts(restated, today-backfillDays+1, today+1, allSubs...))
			if fresh := f.freshTenants(marks); !slices.Equal(fresh, []string{fabrikam.ID, contoso.ID, fabrikam.ID}) {
				t.Fatalf("fresh after the recovery: %v", fresh)
			}
		})
	}
}

// TestTenantsAndHooks: a run for some tenants syncs only theirs; a hook
// that fails fails the run naming the tenant and keeps its costs, which
// are then not marked fresh; a tenant without a billing account syncs
// no reservations and is no failure; a tenant whose subscriptions
// Steward cannot see fails the run, naming it and the fix, and is not
// marked fresh.
func TestTenantsAndHooks(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := costWorld()
			f := start(t, dialect, w)
			today := day(simNow)
			var called []string
			f.syncer.AfterTenant = []ingest.Hook{
				func(_ context.Context, tenant sdk.Tenant, _, _ ledger.Day) error {
					called = append(called, tenant.ID)
					return nil
				},
				func(_ context.Context, tenant sdk.Tenant, _, _ ledger.Day) error {
					if tenant.ID == contoso.ID {
						return errors.New("budget evaluation: database is locked")
					}
					return nil
				},
			}
			n, err := f.syncer.Run(ctx, &sdk.JobRun{TenantIDs: []string{fabrikam.ID}})
			if err != nil || n != int64(2*(backfillDays*8+len(worldResourceDays(w, today-backfillDays+1, today, subF1)))) {
				t.Fatalf("Fabrikam's run: %d records, %v", n, err)
			}
			sameCosts(t, f.stored(t), worldCosts(w, today-backfillDays+1, today, subF1))
			if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{fabrikam.ID}) || !slices.Equal(called, []string{fabrikam.ID}) {
				t.Fatalf("Fabrikam's run marked %v fresh and called hooks for %v", fresh, called)
			}
			var reservations int
			if err := f.ledger.DB.NewRaw("SELECT COUNT(*) FROM cost_reservations").Scan(ctx, &reservations); err != nil || reservations != 0 {
				t.Fatalf("%d reservation days (%v) for a tenant without a billing account", reservations, err)
			}

			_, err = f.syncer.Run(ctx, &sdk.JobRun{})
			if err == nil || !strings.Contains(err.Error(), "tenant Contoso (t-contoso): budget evaluation: database is locked") {
				t.Fatalf("a failing hook: %v", err)
			}
			sameCosts(t, f.stored(t), worldCosts(w, today-backfillDays+1, today, allSubs...))
			f.totals(t)
			if fresh := f.freshTenants(1); !slices.Equal(fresh, []string{fabrikam.ID}) {
				t.Fatalf("after a failing hook %v are fresh, want Fabrikam only", fresh)
			}

			// Fabrikam's delegation is gone: Steward no longer sees its
			// subscription, so the run fails naming it, and it is not
			// marked fresh.
			gone := *w
			gone.Tenants = slices.Clone(w.Tenants)
			gone.Tenants[1].Delegated = false
			f.sim.SetWorld(&gone)
			f.syncer.AfterTenant = nil
			before := len(f.harness.FreshMarks())
			_, err = f.syncer.Run(ctx, &sdk.JobRun{})
			if err == nil || !errors.Is(err, cloud.ErrNoAccess) || !strings.HasPrefix(err.Error(), "tenant Fabrikam (t-fabrikam): no subscription of directory "+fabrikamDir+" is visible to Steward: delegate") {
				t.Fatalf("a tenant without visible subscriptions: %v", err)
			}
			if fresh := f.freshTenants(before); !slices.Equal(fresh, []string{contoso.ID}) {
				t.Fatalf("with Fabrikam's subscription out of sight %v are fresh, want Contoso only", fresh)
			}
		})
	}
}

// tenantYear is 1 tenant × 2 subscriptions × 40 services × 365 days up
// to today: 29,200 cost rows.
func tenantYear(today time.Time) *world.World {
	w := &world.World{Tenants: []world.Tenant{{Name: "Contoso", DirectoryTenantID: contosoDir,
		Subscriptions: []world.Subscription{{ID: subC1, Name: "Contoso prod"}, {ID: subC2, Name: "Contoso dev"}}}}}
	w.Costs = make([]world.Cost, 0, 2*40*365)
	for _, sub := range []string{subC1, subC2} {
		for d := -364; d <= 0; d++ {
			date := today.AddDate(0, 0, d).Format(time.DateOnly)
			for s := 0; s < 40; s++ {
				w.Costs = append(w.Costs, world.Cost{SubscriptionID: sub, Date: date, Service: fmt.Sprintf("Service %02d", s),
					ResourceGroup: fmt.Sprintf("rg-%d", s%4), Cost: float64(s*100+d+365) / 3, Currency: "USD"})
			}
		}
	}
	return w
}

// TestTenantYearStreams: a tenant-year arrives in batches of the flush
// size — memory holds a batch, not the year — and lands whole.
func TestTenantYearStreams(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := tenantYear(simNow)
			f := start(t, dialect, w)
			f.syncer.BackfillDays = 365
			n, progress := f.mustRun(t)
			if n != 4*29200 {
				t.Fatalf("%d records, want 29,200 at each grain, actual and amortised", n)
			}
			for _, sub := range []string{subC1, subC2} {
				if !slices.ContainsFunc(progress, func(p plugintest.Progress) bool {
					return strings.Contains(p.Message, sub) && strings.Contains(p.Message, "29200 rows and 29200 by resource, actual and amortised, in 12 batches")
				}) {
					t.Fatalf("%s was not written in 3 batches of at most %d rows: %+v", sub, ledger.DefaultFlushRows, progress)
				}
			}
			today := day(simNow)
			want := worldCosts(w, today-364, today, subC1, subC2)
			sameCosts(t, f.stored(t), want)
			if got, wantSums := f.totals(t), sumByTenant(want); fmt.Sprint(got) != fmt.Sprint(wantSums) {
				t.Fatalf("totals %v, want %v", got, wantSums)
			}
		})
	}
}
