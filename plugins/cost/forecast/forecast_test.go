package forecast

import (
	"math"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestSeasonalSeriesIsExact: a series that is exactly a line plus a
// weekly pattern is forecast exactly, with an interval of width 0, and
// its seasonal indices read by weekday.
func TestSeasonalSeriesIsExact(t *testing.T) {
	first, _ := ledger.ParseDay("2026-08-03") // a Monday
	week := [Period]float64{500, 520, 510, 530, 540, 300, 280}
	at := func(i int) float64 { return 1000 + 2.5*float64(i) + week[i%Period] }
	y := make([]float64, 63)
	for i := range y {
		y[i] = at(i)
	}
	p, ok := Project(y, first, 35, HoltWinters)
	if !ok || p.Method != HoltWinters || p.Level != IntervalLevel || len(p.Points) != 35 || p.Model == nil {
		t.Fatalf("projection %+v", p)
	}
	for i, pt := range p.Points {
		want := at(len(y) + i)
		if math.Abs(pt.Predicted-want) > 1e-6 || math.Abs(pt.Upper-pt.Lower) > 1e-6 {
			t.Errorf("day %d: %+v, want %.2f exactly", i+1, pt, want)
		}
	}
	// Indices are relative to the level: each weekday's difference from
	// Thursday's is the pattern's.
	for d := range Period {
		if got, want := p.Model.Season[d]-p.Model.Season[3], week[d]-week[3]; math.Abs(got-want) > 1e-6 {
			t.Errorf("weekday %d: index %.4f above Thursday's, want %.4f", d, got, want)
		}
	}
	if math.Abs(p.Model.Trend-2.5) > 1e-9 || p.Model.Phi != 1 {
		t.Errorf("model %+v: want an undamped trend of 2.5", *p.Model)
	}
}

// TestShortHistories: fewer than MinDays days give no forecast; fewer than
// MinSeasonalDays give the line whatever was asked.
func TestShortHistories(t *testing.T) {
	if _, ok := Project([]float64{1, 2}, 0, 7, HoltWinters); ok {
		t.Error("two days gave a forecast")
	}
	y := make([]float64, MinSeasonalDays-1)
	for i := range y {
		y[i] = 100 + float64(i)
	}
	p, ok := Project(y, 0, 7, HoltWinters)
	if !ok || p.Method != Linear || p.Level != LinearLevel || p.Model != nil || math.Abs(p.Points[0].Predicted-float64(100+len(y))) > 1e-9 {
		t.Errorf("a history of %d days: %+v", len(y), p)
	}
	y = append(y, 200)
	if p, _ := Project(y, 0, 7, HoltWinters); p.Method != HoltWinters {
		t.Errorf("a history of %d days: %s", len(y), p.Method)
	}
	if p, _ := Project(y, 0, 7, Linear); p.Method != Linear {
		t.Errorf("the line asked for: %s", p.Method)
	}
	// A falling series is not forecast below zero.
	fall := []float64{300, 200, 100}
	if p, _ := Project(fall, 0, 3, Linear); p.Points[2].Predicted != 0 || p.Points[2].Lower != 0 || p.Line.Slope != -100 {
		t.Errorf("a falling series: %+v", p)
	}
}

// backtestToday is the day the backtest's demo world ends on: fixed, so
// the figures in the README can be reproduced.
var backtestToday = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// demoSeries is the daily cost of each tenant of the demo world the stack
// serves, and of all of them, in cents, over its 365 days.
func demoSeries() (ledger.Day, map[string][]float64) {
	w := world.Demo(stack.DemoSeed, backtestToday)
	tenantOf := map[string]string{}
	for _, tn := range w.Tenants {
		for _, s := range tn.Subscriptions {
			tenantOf[s.ID] = tn.Name
		}
	}
	first := ledger.DayOf(backtestToday) - 364
	out := map[string][]float64{"all tenants": make([]float64, 365)}
	for _, c := range w.Costs {
		d, _ := ledger.ParseDay(c.Date)
		tn := tenantOf[c.SubscriptionID]
		if out[tn] == nil {
			out[tn] = make([]float64, 365)
		}
		cents := float64(ledger.AmountOf(c.Cost))
		out[tn][d-first] += cents
		out["all tenants"][d-first] += cents
	}
	return first, out
}

// score is a method's backtest: the mean absolute percentage error of its
// daily predictions and of the rest of the month's total, and the share
// of days inside the prediction interval.
type score struct {
	days, origins               int
	dailyAPE, totalAPE, covered float64
}

func (s score) dailyMAPE() float64 { return 100 * s.dailyAPE / float64(s.days) }
func (s score) totalMAPE() float64 { return 100 * s.totalAPE / float64(s.origins) }
func (s score) coverage() float64  { return 100 * s.covered / float64(s.days) }

// backtestOrigins is how many days before the world's last the backtest's
// first origin is: five months of origins.
const backtestOrigins = 150

// backtestHistory is the history each origin's forecast is fitted to, as
// the forecast route reads it.
const backtestHistory = 90

// TestBacktestOnTheDemoWorld forecasts each tenant's daily cost in the
// demo world, and all tenants' together, from every day of its last five
// months to the end of the month after that day (a month's last day
// forecasts the whole next month), with 90 days of history, and scores
// both methods against what the world then cost. The seasonal method must
// beat the line on the daily error and on the month's total, and its
// 80 % interval must hold between 75 % and 90 % of the days.
func TestBacktestOnTheDemoWorld(t *testing.T) {
	first, series := demoSeries()
	last := first + 364
	scores := map[string]*score{HoltWinters: {}, Linear: {}}
	for _, y := range series {
		for o := last - backtestOrigins; o < last; o++ {
			end := MonthEnd(o + 1)
			if end > last {
				continue
			}
			h := int(end - o)
			at := int(o - first)
			history := y[at-backtestHistory+1 : at+1]
			var actual float64
			for k := 1; k <= h; k++ {
				actual += y[at+k]
			}
			for method, s := range scores {
				p, _ := Project(history, o-backtestHistory+1, h, method)
				for k, pt := range p.Points {
					a := y[at+k+1]
					s.dailyAPE += math.Abs(pt.Predicted-a) / a
					if pt.Lower <= a && a <= pt.Upper {
						s.covered++
					}
					s.days++
				}
				s.totalAPE += math.Abs(p.Total(h)-actual) / actual
				s.origins++
			}
		}
	}
	hw, line := scores[HoltWinters], scores[Linear]
	for _, m := range []string{HoltWinters, Linear} {
		s := scores[m]
		level := IntervalLevel
		if m == Linear {
			level = LinearLevel
		}
		t.Logf("%-22s %d origins, %d forecast days: daily MAPE %5.2f %%, month-total MAPE %4.2f %%, %2.0f %% interval coverage %5.1f %%",
			m, s.origins, s.days, s.dailyMAPE(), s.totalMAPE(), 100*level, s.coverage())
	}
	if hw.days < 2000 || hw.origins < 500 {
		t.Fatalf("only %d days from %d origins: the backtest shows little", hw.days, hw.origins)
	}
	if hw.dailyMAPE() >= line.dailyMAPE()/2 {
		t.Errorf("daily MAPE %.2f %% against the line's %.2f %%: want under half", hw.dailyMAPE(), line.dailyMAPE())
	}
	if hw.totalMAPE() >= line.totalMAPE() {
		t.Errorf("month-total MAPE %.2f %% against the line's %.2f %%", hw.totalMAPE(), line.totalMAPE())
	}
	if c := hw.coverage(); c < 75 || c > 90 {
		t.Errorf("the 80 %% interval holds %.1f %% of the days", c)
	}
}
