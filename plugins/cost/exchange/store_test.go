package exchange_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/stack"
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

func quote(t *testing.T, date, code, rate string) exchange.Quote {
	t.Helper()
	r, err := exchange.ParseRate(rate)
	if err != nil {
		t.Fatal(err)
	}
	return exchange.Quote{Day: day(t, date), Base: "USD", Quote: code, Rate: r}
}

// TestStore: writing the same days twice keeps one rate a day, the new
// one; a day without a rate takes the latest of the MaxCarryDays before,
// and none older.
func TestStore(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := &exchange.Store{DB: open(t, dialect)}
			at := time.Date(2026, 11, 10, 6, 0, 0, 0, time.UTC)
			if _, ok, err := s.LastDay(ctx, "USD"); ok || err != nil {
				t.Fatalf("LastDay of none: %v, %v", ok, err)
			}
			first := []exchange.Quote{quote(t, "2026-10-20", "EUR", "0.95"), quote(t, "2026-11-05", "EUR", "0.9"), quote(t, "2026-11-06", "EUR", "0.91"), quote(t, "2026-11-06", "GBP", "0.8")}
			for range 2 {
				if err := s.Upsert(ctx, first, "first", at); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Upsert(ctx, []exchange.Quote{quote(t, "2026-11-06", "EUR", "0.9123456789"), quote(t, "2026-11-09", "EUR", "0.92")}, "second", at); err != nil {
				t.Fatal(err)
			}
			var rows int
			if err := s.DB.NewRaw(`SELECT COUNT(*) FROM cost_exchange_rates`).Scan(ctx, &rows); err != nil || rows != 5 {
				t.Errorf("%d rows, %v; want 5", rows, err)
			}
			if last, ok, err := s.LastDay(ctx, "USD"); !ok || err != nil || last != day(t, "2026-11-09") {
				t.Errorf("LastDay = %s, %v, %v", last, ok, err)
			}
			if q, ok, err := s.Latest(ctx, "USD", "EUR", day(t, "2026-11-08")); !ok || err != nil || q.Day != day(t, "2026-11-06") || q.Rate.String() != "0.9123456789" {
				t.Errorf("Latest = %+v, %v, %v", q, ok, err)
			}
			if _, ok, err := s.Latest(ctx, "USD", "JPY", day(t, "2026-11-08")); ok || err != nil {
				t.Errorf("Latest of JPY: %v, %v", ok, err)
			}

			table, err := s.Table(ctx, "USD", []string{"EUR", "GBP"}, day(t, "2026-11-07"), day(t, "2026-11-15"))
			if err != nil {
				t.Fatal(err)
			}
			for date, want := range map[string]string{
				"2026-11-07": "2026-11-06 0.9123456789", // Saturday: Friday's
				"2026-11-08": "2026-11-06 0.9123456789",
				"2026-11-09": "2026-11-09 0.92",
				"2026-11-16": "2026-11-09 0.92", // seven days on
				"2026-11-17": "",                // eight: too old
			} {
				got := ""
				if r, ok := table.On("EUR", day(t, date)); ok {
					got = r.Day.String() + " " + r.Rate.String()
				}
				if got != want {
					t.Errorf("EUR on %s: %q, want %q", date, got, want)
				}
			}
			if r, ok := table.On("GBP", day(t, "2026-11-13")); !ok || r.Rate.String() != "0.8" {
				t.Errorf("GBP on 2026-11-13: %+v, %v", r, ok)
			}
			if _, ok := table.On("GBP", day(t, "2026-11-05")); ok {
				t.Error("GBP on 2026-11-05, before its first rate: a rate")
			}
		})
	}
}

// TestConverter: each day converts at its rate, rounded half to even per
// day, and the days are summed; a day without a usable rate leaves the
// total null and names its currency; off, only the reporting currency's
// costs have a total.
func TestConverter(t *testing.T) {
	ctx := context.Background()
	s := &exchange.Store{DB: open(t, "sqlite")}
	if err := s.Upsert(ctx, []exchange.Quote{quote(t, "2026-11-05", "EUR", "0.8"), quote(t, "2026-11-06", "EUR", "0.4"), quote(t, "2026-11-06", "GBP", "0.5")}, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	c := &exchange.Converter{Store: s, Currency: "USD", Source: "https://rates.example/v1"}
	sums := []exchange.DayAmount{
		{Day: day(t, "2026-11-05"), Currency: "EUR", Amount: 1},    // 1.25 → 1
		{Day: day(t, "2026-11-06"), Currency: "EUR", Amount: 1},    // 2.5 → 2
		{Day: day(t, "2026-11-07"), Currency: "EUR", Amount: 3},    // Saturday at Friday's: 7.5 → 8
		{Day: day(t, "2026-11-07"), Currency: "USD", Amount: 1000}, // as is
	}
	r, err := c.Report(ctx, sums)
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalCost == nil || *r.TotalCost != 1011 || !r.Converted || r.Currency != "USD" || r.Source == nil || *r.Source != c.Source || len(r.Missing) != 0 {
		t.Fatalf("Report = %+v", r)
	}
	want := exchange.RateUse{Currency: "EUR", FirstRateDate: day(t, "2026-11-05"), LastRateDate: day(t, "2026-11-06"), Days: 3, DaysOnEarlierRate: 1, TotalCost: 5, ConvertedCost: 11}
	if len(r.Rates) != 1 || r.Rates[0] != want {
		t.Errorf("rates %+v, want %+v", r.Rates, want)
	}

	r, err = c.Report(ctx, append(sums, exchange.DayAmount{Day: day(t, "2026-11-01"), Currency: "JPY", Amount: 5}, exchange.DayAmount{Day: day(t, "2026-11-05"), Currency: "GBP", Amount: 5}))
	if err != nil {
		t.Fatal(err)
	}
	if r.TotalCost != nil || len(r.Missing) != 2 || r.Missing[0] != (exchange.MissingRate{Currency: "GBP", FirstDate: day(t, "2026-11-05"), Days: 1}) || r.Missing[1].Currency != "JPY" {
		t.Errorf("Report with rates missing = %+v", r)
	}

	var off *exchange.Converter
	if r, err := off.Report(ctx, sums); err != nil || r.TotalCost != nil || r.Source != nil || r.Currency != "USD" || len(r.Missing) != 1 || r.Missing[0].Days != 3 {
		t.Errorf("Report off = %+v, %v", r, err)
	}
	if r, err := off.Report(ctx, sums[3:]); err != nil || r.TotalCost == nil || *r.TotalCost != 1000 || r.Converted {
		t.Errorf("Report off in USD only = %+v, %v", r, err)
	}

	// The anomaly floor: 1.00 USD in EUR at the latest rate, 0.4.
	if v, ok, err := c.Floor(ctx, 100, "EUR", day(t, "2026-11-30")); !ok || err != nil || v != 40 {
		t.Errorf("Floor in EUR = %s, %v, %v", v, ok, err)
	}
	if v, ok, err := c.Floor(ctx, 100, "USD", day(t, "2026-11-30")); !ok || err != nil || v != 100 {
		t.Errorf("Floor in USD = %s, %v, %v", v, ok, err)
	}
	if _, ok, err := c.Floor(ctx, 100, "JPY", day(t, "2026-11-30")); ok || err != nil {
		t.Errorf("Floor in JPY: %v, %v", ok, err)
	}
}

// TestSimulatedEndpoint fetches the simulated cloud's rates through the
// cloud clients' own HTTP client, then syncs them: the first run fetches
// the backfill, a later one from a week before the last stored day, and
// neither duplicates a day.
func TestSimulatedEndpoint(t *testing.T) {
	ctx := t.Context()
	w := &world.World{
		Tenants: []world.Tenant{{Name: "A", DirectoryTenantID: "11111111-1111-1111-1111-111111111111", Subscriptions: []world.Subscription{{ID: "s1"}}}},
		ExchangeRates: &world.ExchangeRates{Base: "EUR", Rates: map[string]map[string]float64{
			"2026-11-05": {"USD": 1.25, "GBP": 0.875},
			"2026-11-06": {"USD": 1.0, "GBP": 0.8},
			"2026-11-09": {"USD": 1.6, "GBP": 0.8},
		}},
	}
	st, err := stack.Start(ctx, w, cloudsim.Options{Now: func() time.Time { return time.Date(2026, 11, 9, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	clients, err := cloud.New(st.CloudConfig())
	if err != nil {
		t.Fatal(err)
	}
	src := exchange.Endpoint{URL: clients.Endpoints().ExchangeRates, Client: clients.HTTPClient()}
	quotes, err := src.Fetch(ctx, "USD", day(t, "2026-11-06"), day(t, "2026-11-09"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range quotes {
		got[q.Day.String()+" "+q.Quote] = q.Rate.String()
	}
	// Cross rates against USD: EUR is 1 / USD's, GBP its rate / USD's.
	want := map[string]string{"2026-11-06 EUR": "1", "2026-11-06 GBP": "0.8", "2026-11-09 EUR": "0.625", "2026-11-09 GBP": "0.5"}
	if len(got) != len(want) {
		t.Errorf("fetched %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if _, err := src.Fetch(ctx, "CHF", day(t, "2026-11-06"), day(t, "2026-11-09")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch of a currency the world has no rate of: %v", err)
	}

	s := &exchange.Store{DB: open(t, "sqlite")}
	sync := &exchange.Syncer{Store: s, Source: src, Currency: "USD", BackfillDays: 30, Now: st.Sim.Now}
	for range 2 {
		n, err := sync.Run(ctx, nil)
		if err != nil || n != 6 {
			t.Fatalf("Run = %d, %v; want 6 rates", n, err)
		}
	}
	var rows int
	if err := s.DB.NewRaw(`SELECT COUNT(*) FROM cost_exchange_rates WHERE base = 'USD' AND source = ?`, src.URL).Scan(ctx, &rows); err != nil || rows != 6 {
		t.Errorf("%d rows, %v; want 6", rows, err)
	}
}

// TestEnsure: the costs sync's Ensure fetches the rates into an empty
// store, then not again the same day, nor on a later day while the stored
// rates are usable; once they are older than MaxCarryDays it fetches
// again. A source that fails fails no tenant.
func TestEnsure(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := &exchange.Store{DB: open(t, dialect)}
			path := filepath.Join(t.TempDir(), "rates.json")
			write := func(doc string) {
				t.Helper()
				if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Date(2026, 11, 10, 6, 0, 0, 0, time.UTC)
			sync := &exchange.Syncer{Store: s, Source: exchange.File{Path: path}, Currency: "USD", BackfillDays: 30, Now: func() time.Time { return now }}
			rateOn := func(date string) string {
				t.Helper()
				q, ok, err := s.Latest(ctx, "USD", "EUR", day(t, date))
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					return "none"
				}
				return q.Day.String() + " " + q.Rate.String()
			}
			ensure := func() {
				t.Helper()
				if err := sync.Ensure(ctx, sdk.Tenant{}, 0, 0); err != nil {
					t.Fatalf("Ensure: %v", err)
				}
			}

			write(`{"amount":1,"base":"USD","rates":{"2026-11-09":{"EUR":0.9},"2026-11-10":{"EUR":0.91}}}`)
			ensure()
			if got := rateOn("2026-11-10"); got != "2026-11-10 0.91" {
				t.Fatalf("after the first Ensure, the rate of 2026-11-10 is %s; want 0.91", got)
			}
			// The same day, and a later one with usable rates: no fetch.
			write(`{"amount":1,"base":"USD","rates":{"2026-11-10":{"EUR":0.5},"2026-11-12":{"EUR":0.5}}}`)
			ensure()
			now = now.AddDate(0, 0, 2)
			ensure()
			if got := rateOn("2026-11-12"); got != "2026-11-10 0.91" {
				t.Errorf("Ensure fetched again with usable rates: the rate of 2026-11-12 is %s", got)
			}
			// Eight days after the last rate: fetched again, once the
			// source answers.
			now = time.Date(2026, 11, 18, 6, 0, 0, 0, time.UTC)
			write(`not json`)
			ensure()
			write(`{"amount":1,"base":"USD","rates":{"2026-11-18":{"EUR":0.93}}}`)
			ensure()
			if got := rateOn("2026-11-18"); got != "2026-11-10 0.91" {
				t.Errorf("Ensure fetched twice in a day: the rate of 2026-11-18 is %s", got)
			}
			now = now.AddDate(0, 0, 1)
			ensure()
			if got := rateOn("2026-11-19"); got != "2026-11-18 0.93" {
				t.Errorf("a day after a failed fetch, the rate of 2026-11-19 is %s; want 0.93", got)
			}
		})
	}
}
