package anomalies

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// open returns a fresh database of the dialect with the cost schema.
func open(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, ledger.Migrations(), "cost_migrations"); err != nil {
		t.Fatal(err)
	}
	return db
}

var detectedAt = time.Date(2026, 3, 14, 6, 0, 0, 0, time.UTC)

func detector(db *bun.DB) *Detector {
	return &Detector{DB: db, Now: func() time.Time { return detectedAt }}
}

// load writes costs through the ledger as the sync does: upsert, then
// roll up each tenant's days.
func load(t *testing.T, db *bun.DB, rows []ledger.Cost) {
	t.Helper()
	ctx := context.Background()
	l := &ledger.Store{DB: db}
	if err := l.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	ranges := map[string][2]ledger.Day{}
	for _, r := range rows {
		span, ok := ranges[r.TenantID]
		if !ok {
			span = [2]ledger.Day{r.Day, r.Day}
		}
		ranges[r.TenantID] = [2]ledger.Day{min(span[0], r.Day), max(span[1], r.Day)}
	}
	for tenant, span := range ranges {
		if err := l.Rollup(ctx, tenant, span[0], span[1]); err != nil {
			t.Fatal(err)
		}
	}
}

func stored(t *testing.T, db *bun.DB) []Anomaly {
	t.Helper()
	var out []Anomaly
	if err := db.NewSelect().Model(&out).Order("tenant_id", "day", "service").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

type dayKey struct {
	tenant, service string
	day             ledger.Day
}

// TestDemoSpikesFound loads the demo world's year of costs into the ledger
// and evaluates every tenant's year. Ground truth is world.DemoSpikes:
// every spike must be found on its tenant, service and day, the small
// services' 3–8x spikes (a Key Vault of 10.00 a day) as well as the large
// ones, and nothing may be flagged that is not an injected spike: the
// demo's growth, yearly seasonality, weekends and ±8 % daily noise are
// not anomalies. Seed 1 is the one the stack serves.
func TestDemoSpikesFound(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			for _, seed := range []int64{1, 2, 7} {
				testDemo(t, dialect, seed, true)
			}
		})
	}
}

// TestDemoWithoutSpikesFlagsNothing evaluates the demo world's year with
// each injected spike divided back out of its rows: the same seasonality,
// growth and noise, and not one anomaly.
func TestDemoWithoutSpikesFlagsNothing(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			for _, seed := range []int64{1, 2, 7} {
				testDemo(t, dialect, seed, false)
			}
		})
	}
}

func testDemo(t *testing.T, dialect string, seed int64, spiked bool) {
	ctx := context.Background()
	db := open(t, dialect)
	w := world.Demo(seed, detectedAt)
	spikes := world.DemoSpikes(seed, detectedAt)
	if !spiked {
		factor := map[[4]string]float64{}
		for _, s := range spikes {
			factor[[4]string{s.SubscriptionID, s.Service, s.ResourceGroup, s.Date}] = s.Factor
		}
		// A series' cost is split among its resources' rows; each is
		// divided. So is an orphan's flat row that shares the series' key,
		// which only lowers that day: a fall is never an anomaly.
		for i, c := range w.Costs {
			if f, ok := factor[[4]string{c.SubscriptionID, c.Service, c.ResourceGroup, c.Date}]; ok {
				w.Costs[i].Cost = math.Round(c.Cost/f*100) / 100
			}
		}
		spikes = nil
	}
	tenantOf := map[string]string{}
	for _, tn := range w.Tenants {
		for _, s := range tn.Subscriptions {
			tenantOf[s.ID] = tn.Name
		}
	}
	rows := make([]ledger.Cost, 0, len(w.Costs))
	total := map[dayKey]ledger.Amount{}
	// The ledger holds a row per subscription, day, service and resource
	// group, as the sync's query groups them: the rows of resources billed
	// on their own (the demo's orphans) are summed into theirs.
	at := map[[4]string]int{}
	first, last := ledger.Day(math.MaxInt32), ledger.Day(0)
	for _, c := range w.Costs {
		day, err := ledger.ParseDay(c.Date)
		if err != nil {
			t.Fatal(err)
		}
		first, last = min(first, day), max(last, day)
		cost := ledger.AmountOf(c.Cost)
		k := [4]string{c.SubscriptionID, c.Service, c.ResourceGroup, c.Date}
		if i, ok := at[k]; ok {
			rows[i].Cost += cost
		} else {
			at[k] = len(rows)
			rows = append(rows, ledger.Cost{SubscriptionID: c.SubscriptionID, Day: day, Service: c.Service, ResourceGroup: c.ResourceGroup,
				Currency: c.Currency, TenantID: tenantOf[c.SubscriptionID], Cost: cost})
		}
		total[dayKey{tenantOf[c.SubscriptionID], c.Service, day}] += cost
	}
	load(t, db, rows)
	d := detector(db)
	for _, tn := range w.Tenants {
		if err := d.Evaluate(ctx, sdk.Tenant{ID: tn.Name, Name: tn.Name}, first, last); err != nil {
			t.Fatal(err)
		}
	}
	found := map[dayKey]Anomaly{}
	for _, a := range stored(t, db) {
		found[dayKey{a.TenantID, a.Service, a.Day}] = a
	}
	injected := map[dayKey]bool{}
	var smallest ledger.Amount = math.MaxInt64
	for _, s := range spikes {
		day, _ := ledger.ParseDay(s.Date)
		if day < first+HistoryDays {
			continue
		}
		k := dayKey{tenantOf[s.SubscriptionID], s.Service, day}
		injected[k] = true
		a, ok := found[k]
		if !ok {
			t.Errorf("seed %d: the %.1fx spike of %s %s on %s (%s that day) was not found", seed, s.Factor, k.tenant, k.service, s.Date, total[k])
			continue
		}
		smallest = min(smallest, a.Impact)
	}
	for k, a := range found {
		if !injected[k] {
			t.Errorf("seed %d: flagged %s %s on %s (expected %s, actual %s, score %.1f), which is no injected spike", seed, k.tenant, k.service, k.day, a.Expected, a.Actual, a.Score)
		}
		if a.Impact != a.Actual-a.Expected || a.Actual != total[k] || !a.DetectedAt.Equal(detectedAt) || a.Month != k.day.Month() {
			t.Errorf("seed %d: anomaly %+v: figures disagree with the costs (actual %s)", seed, a, total[k])
		}
	}
	if spiked && len(injected) < 15 {
		t.Errorf("seed %d: only %d spikes to find; the test shows little", seed, len(injected))
	}
	if spiked {
		t.Logf("seed %d: %d injected spikes judged, %d found, the smallest impact %s", seed, len(injected), len(found), smallest)
	}
}

// weeklySeries is a flat weekly-seasonal daily cost in cents: base on
// weekdays, weekend × base on Saturdays and Sundays, each day times
// 1 ± noise drawn from r.
func weeklySeries(r *rand.Rand, first ledger.Day, days int, base, weekend, noise float64) []ledger.Amount {
	out := make([]ledger.Amount, days)
	for i := range out {
		v := base
		if wd := (first + ledger.Day(i)).Time().Weekday(); wd == time.Saturday || wd == time.Sunday {
			v *= weekend
		}
		out[i] = ledger.Amount(math.Round(v * (1 + noise*(2*r.Float64()-1))))
	}
	return out
}

func costRows(tenant, service string, first ledger.Day, costs []ledger.Amount) []ledger.Cost {
	rows := make([]ledger.Cost, len(costs))
	for i, c := range costs {
		rows[i] = ledger.Cost{SubscriptionID: tenant + "-sub", Day: first + ledger.Day(i), Service: service, ResourceGroup: "rg", Currency: "USD", TenantID: tenant, Cost: c}
	}
	return rows
}

// TestFlatWeeklySeriesFlagsNothing: a year of weekly-seasonal costs with
// small noise — large and small services, strong and weak weekend dips, a
// service that costs nothing at weekends and one whose cost is all noise
// but tiny — is never anomalous.
func TestFlatWeeklySeriesFlagsNothing(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := open(t, dialect)
			r := rand.New(rand.NewPCG(1, 2))
			first, _ := ledger.ParseDay("2025-03-15")
			var rows []ledger.Cost
			for _, s := range []struct {
				service              string
				base, weekend, noise float64
			}{
				{"Virtual Machines", 500_00, 0.55, 0.05},
				{"Storage", 80_00, 0.95, 0.03},
				{"Batch", 300_00, 0, 0.05},
				{"Key Vault", 4_00, 0.9, 0.5},
				{"Bandwidth", 60_00, 0.7, 0.08},
			} {
				rows = append(rows, costRows("t1", s.service, first, weeklySeries(r, first, 365, s.base, s.weekend, s.noise))...)
			}
			load(t, db, rows)
			if err := detector(db).Evaluate(context.Background(), sdk.Tenant{ID: "t1"}, first, first+364); err != nil {
				t.Fatal(err)
			}
			if got := stored(t, db); len(got) != 0 {
				t.Errorf("a flat weekly-seasonal year flagged %d anomalies: %+v", len(got), got)
			}
		})
	}
}

// TestRestatedDay: re-evaluating a restated day updates its anomaly rather
// than adding one; a day restated to normal loses its anomaly unless it
// was acknowledged, which keeps it as it was; an evaluation that finds
// nothing new leaves the rest alone.
func TestRestatedDay(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := open(t, dialect)
			first, _ := ledger.ParseDay("2026-01-01")
			costs := weeklySeries(rand.New(rand.NewPCG(3, 4)), first, 70, 400_00, 0.6, 0.04)
			spike := first + 60
			normal := costs[60]
			costs[60] = 4 * normal
			load(t, db, costRows("t1", "VM", first, costs))
			d := detector(db)
			tenant := sdk.Tenant{ID: "t1"}
			if err := d.Evaluate(ctx, tenant, first, first+69); err != nil {
				t.Fatal(err)
			}
			got := stored(t, db)
			if len(got) != 1 || got[0].Day != spike || got[0].Actual != 4*normal {
				t.Fatalf("a 4x day found as %+v", got)
			}
			id := got[0].ID

			restate := func(cost ledger.Amount) {
				t.Helper()
				load(t, db, costRows("t1", "VM", spike, []ledger.Amount{cost}))
				d.Now = func() time.Time { return detectedAt.Add(time.Hour) }
				if err := d.Evaluate(ctx, tenant, spike-2, spike+2); err != nil {
					t.Fatal(err)
				}
			}
			restate(6 * normal)
			got = stored(t, db)
			if len(got) != 1 || got[0].ID != id || got[0].Actual != 6*normal || got[0].Impact != 6*normal-got[0].Expected ||
				!got[0].DetectedAt.Equal(detectedAt) || !got[0].EvaluatedAt.Equal(detectedAt.Add(time.Hour)) {
				t.Fatalf("restated to 6x: %+v", got)
			}
			restate(normal)
			if got := stored(t, db); len(got) != 0 {
				t.Fatalf("restated to normal, the anomaly remains: %+v", got)
			}

			restate(5 * normal)
			got = stored(t, db)
			if len(got) != 1 {
				t.Fatalf("restated to 5x: %+v", got)
			}
			if _, err := acknowledge(ctx, db, []int64{got[0].ID}, "u1", detectedAt, nil); err != nil {
				t.Fatal(err)
			}
			restate(normal)
			kept := stored(t, db)
			if len(kept) != 1 || !kept[0].Acknowledged || kept[0].Actual != 5*normal || kept[0].AcknowledgedBy == nil || *kept[0].AcknowledgedBy != "u1" {
				t.Fatalf("an acknowledged anomaly restated to normal: %+v", kept)
			}
			// Another tenant's evaluation and an empty tenant's touch nothing.
			if err := d.Evaluate(ctx, sdk.Tenant{ID: "t2"}, first, first+69); err != nil {
				t.Fatal(err)
			}
			if got := stored(t, db); len(got) != 1 {
				t.Fatalf("after another tenant's evaluation: %+v", got)
			}
			if err := d.Evaluate(ctx, tenant, spike, spike-1); err == nil {
				t.Error("a range ending before it starts was accepted")
			}
		})
	}
}

// TestFloorInReportingCurrency: with exchange rates, a currency without a
// floor of its own takes the reporting currency's at the latest rate, so a
// rise of 30.00 EUR is below a floor of 50.00 USD (45.00 EUR at 0.9) and
// not flagged; a floor given for EUR still overrides it, and without rates
// EUR keeps the default 1.00.
func TestFloorInReportingCurrency(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			first, _ := ledger.ParseDay("2026-01-01")
			costs := make([]ledger.Amount, 60)
			for i := range costs {
				costs[i] = 10_00
			}
			costs[59] = 40_00
			rate, err := exchange.ParseRate("0.9")
			if err != nil {
				t.Fatal(err)
			}
			rates := &exchange.Converter{Store: &exchange.Store{}, Currency: "USD", Source: "test"}
			for _, c := range []struct {
				name    string
				floors  MinImpacts
				rates   bool
				flagged bool
			}{
				{"without rates", MinImpacts{"USD": 50_00}, false, true},
				{"converted", MinImpacts{"USD": 50_00}, true, false},
				{"EUR's own", MinImpacts{"USD": 50_00, "EUR": 20_00}, true, true},
				{"the default converted", MinImpacts{}, true, true},
			} {
				db := open(t, dialect)
				rows := costRows("t1", "Key Vault", first, costs)
				for i := range rows {
					rows[i].Currency = "EUR"
				}
				load(t, db, rows)
				d := detector(db)
				d.MinImpacts = c.floors
				if c.rates {
					rates.Store.DB = db
					if err := rates.Store.Upsert(ctx, []exchange.Quote{{Day: first + 50, Base: "USD", Quote: "EUR", Rate: rate}}, "test", detectedAt); err != nil {
						t.Fatal(err)
					}
					d.Rates = rates
				}
				if err := d.Evaluate(ctx, sdk.Tenant{ID: "t1"}, first, first+59); err != nil {
					t.Fatal(err)
				}
				got := stored(t, db)
				if flagged := len(got) == 1 && got[0].Day == first+59 && got[0].Impact == 30_00; flagged != c.flagged || (!c.flagged && len(got) != 0) {
					t.Errorf("%s: %+v, want flagged %v", c.name, got, c.flagged)
				}
			}
		})
	}
}
