package budgets_test

import (
	"context"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

func day(t *testing.T, s string) ledger.Day {
	t.Helper()
	d, err := ledger.ParseDay(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPeriods(t *testing.T) {
	for _, c := range []struct {
		grain, start, end, today string
		period, counted          string
	}{
		{"Monthly", "2026-01-01", "", "2026-12-15", "2026-12-01..2026-12-31", "2026-12-01..2026-12-15"},
		{"Monthly", "2026-01-01", "", "2026-02-28", "2026-02-01..2026-02-28", "2026-02-01..2026-02-28"},
		{"Monthly", "2026-01-01", "", "2026-03-01", "2026-03-01..2026-03-31", "2026-03-01..2026-03-01"},
		// Quarters and years count from the start date, not the calendar.
		{"Quarterly", "2026-02-01", "", "2026-12-15", "2026-11-01..2027-01-31", "2026-11-01..2026-12-15"},
		{"Quarterly", "2026-01-01", "", "2026-12-31", "2026-10-01..2026-12-31", "2026-10-01..2026-12-31"},
		{"Annually", "2025-07-01", "", "2026-12-15", "2026-07-01..2027-06-30", "2026-07-01..2026-12-15"},
		// Before the start: the first period, nothing counted yet.
		{"Monthly", "2027-03-01", "", "2026-12-15", "2027-03-01..2027-03-31", "2027-03-01..2026-12-15"},
		// After the end: the last period, cut by the end date.
		{"Monthly", "2026-01-01", "2026-06-15", "2026-12-15", "2026-06-01..2026-06-15", "2026-06-01..2026-06-15"},
		{"Quarterly", "2026-01-01", "2026-05-31", "2026-04-10", "2026-04-01..2026-05-31", "2026-04-01..2026-04-10"},
	} {
		b := &budgets.Budget{TimeGrain: c.grain, StartDay: day(t, c.start)}
		if c.end != "" {
			end := day(t, c.end)
			b.EndDay = &end
		}
		period, counted := b.SpendDays(day(t, c.today))
		if got := period.Start.String() + ".." + period.End.String(); got != c.period {
			t.Errorf("%s from %s on %s: period %s, want %s", c.grain, c.start, c.today, got, c.period)
		}
		if got := counted.Start.String() + ".." + counted.End.String(); got != c.counted {
			t.Errorf("%s from %s on %s: counted %s, want %s", c.grain, c.start, c.today, got, c.counted)
		}
	}
}

// TestStatus: the bands hold exactly at their boundaries, in cents.
func TestStatus(t *testing.T) {
	th := func(pcts ...int) []budgets.Threshold {
		var out []budgets.Threshold
		for _, p := range pcts {
			out = append(out, budgets.Threshold{Percentage: p, ThresholdType: budgets.Actual})
		}
		return out
	}
	forecast80 := []budgets.Threshold{{Percentage: 80, ThresholdType: budgets.Forecasted}}
	for _, c := range []struct {
		spend      ledger.Amount
		thresholds []budgets.Threshold
		want       string
		util       float64
	}{
		{0, th(80), budgets.StatusActive, 0},
		{7999, th(80), budgets.StatusActive, 79.99},
		{8000, th(80), budgets.StatusWarning, 80},
		{5000, th(95, 50), budgets.StatusWarning, 50},
		{8999, th(80), budgets.StatusWarning, 89.99},
		{9000, th(80), budgets.StatusCritical, 90},
		{9000, th(95), budgets.StatusCritical, 90},
		{8999, th(95), budgets.StatusActive, 89.99},
		{9999, th(80), budgets.StatusCritical, 99.99},
		{10000, th(80), budgets.StatusExceeded, 100},
		{25000, th(80), budgets.StatusExceeded, 250},
		{8500, forecast80, budgets.StatusActive, 85}, // a forecast threshold is no band
	} {
		if got := budgets.StatusOf(c.spend, 10000, c.thresholds); got != c.want {
			t.Errorf("%s of 100.00 with %v: %s, want %s", c.spend, c.thresholds, got, c.want)
		}
		if got := budgets.Utilization(c.spend, 10000); got != c.util {
			t.Errorf("utilisation of %s: %v, want %v", c.spend, got, c.util)
		}
	}
	if got := budgets.Utilization(99999, 100000); got != 99.99 {
		t.Errorf("99.999 %% shows as %v, want 99.99", got)
	}
}

func TestForecast(t *testing.T) {
	p := budgets.Period{Start: day(t, "2026-12-01"), End: day(t, "2026-12-31")}
	if got := budgets.Forecast(15000, p, budgets.Period{Start: p.Start, End: day(t, "2026-12-15")}); got != 31000 {
		t.Errorf("150.00 in 15 of 31 days: forecast %s, want 310.00", got)
	}
	if got := budgets.Forecast(0, p, budgets.Period{Start: p.Start, End: p.Start - 1}); got != 0 {
		t.Errorf("before the start: %s", got)
	}
}

// TestForecastSpendFollowsTheWeek: a subscription that costs 100.00 a
// weekday and 40.00 a weekend day since October has its December forecast
// to the cent, the weekends ahead included (the daily average of the 14
// days so far would say 2,475.71); a tenant budget counts every
// subscription's costs; a subscription with under three weeks of costs is
// extended at its daily average.
func TestForecastSpendFollowsTheWeek(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		cost := func(d ledger.Day) ledger.Amount {
			if wd := d.Time().Weekday(); wd == time.Saturday || wd == time.Sunday {
				return 40_00
			}
			return 100_00
		}
		var rows []ledger.Cost
		var december ledger.Amount
		for d := day(t, "2026-10-01"); d <= day(t, "2026-12-31"); d++ {
			if d >= day(t, "2026-12-01") {
				december += cost(d)
			}
			if d <= day(t, "2026-12-14") {
				rows = append(rows, ledger.Cost{SubscriptionID: subA2, Day: d, Service: "VM", ResourceGroup: "rg", Currency: "USD", TenantID: tenantA, Cost: cost(d)})
			}
			if d >= day(t, "2026-12-05") && d <= day(t, "2026-12-14") {
				rows = append(rows, ledger.Cost{SubscriptionID: subA, Day: d, Service: "VM", ResourceGroup: "rg", Currency: "USD", TenantID: tenantA, Cost: 10_00})
			}
		}
		if err := f.ledger.Upsert(ctx, rows); err != nil {
			t.Fatal(err)
		}
		if err := f.ledger.Rollup(ctx, tenantA, day(t, "2026-10-01"), day(t, "2026-12-14")); err != nil {
			t.Fatal(err)
		}
		weekly := f.create(userA, budgetBody("Weekly", func(b map[string]any) { b["subscription_id"] = subA2 }))
		short := f.create(userA, budgetBody("Short", func(b map[string]any) { b["subscription_id"] = subA }))
		whole := f.create(userA, budgetBody("Whole tenant"))
		if err := f.eval.Evaluate(ctx, sdk.Tenant{ID: tenantA}, day(t, "2026-12-01"), day(t, "2026-12-14")); err != nil {
			t.Fatal(err)
		}
		if d := f.get(userA, weekly.ID); d.CurrentSpend != 1160_00 || d.ForecastSpend != december {
			t.Errorf("the weekly subscription: spend %s, forecast %s; want 1160.00 and %s", d.CurrentSpend, d.ForecastSpend, december)
		}
		// subA's 10 days of 10.00 are too few for the season: 100.00 in
		// the 15 days counted so far, over 31 days.
		if d := f.get(userA, short.ID); d.CurrentSpend != 100_00 || d.ForecastSpend != 206_66 {
			t.Errorf("the short subscription: spend %s, forecast %s; want 100.00 and 206.66", d.CurrentSpend, d.ForecastSpend)
		}
		// The tenant's days sum both subscriptions, 10.00 more a day from
		// the 5th: the forecast follows the week, and the step up, to
		// within 1 % of the 2,890.00 the month will cost.
		want := december + 27*10_00
		if d := f.get(userA, whole.ID); d.CurrentSpend != 1260_00 || d.ForecastSpend < want*99/100 || d.ForecastSpend > want*101/100 {
			t.Errorf("the tenant: spend %s, forecast %s; want 1260.00 and about %s", d.CurrentSpend, d.ForecastSpend, want)
		}
	})
}
