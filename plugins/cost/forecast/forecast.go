// Package forecast projects a daily cost series over the days after it:
// the cost reads' forecast route, the cost page's chart and the budgets'
// forecast spend all call Project.
//
// # The method
//
// Cloud cost follows the week (weekday load, cheaper weekends) and drifts
// with growth and the season of the year, so the default method is
// additive Holt-Winters exponential smoothing with a weekly season and a
// damped trend (HoltWinters): a level, a trend and seven seasonal indices
// updated day by day, each by a share of the day's error. The four
// smoothing parameters are chosen from a grid by the least sum of squared
// one-step errors over the history. A forecast h days ahead is the level,
// plus the trend damped over h steps, plus that day's seasonal index.
//
// Its prediction interval is the model's: the one-step errors' standard
// deviation σ, widened for h steps ahead as the model's equations imply,
// σ·√(1 + Σ c_j²), times the normal quantile of the interval's level
// (IntervalLevel, 80 %).
//
// The least-squares line through the history (Linear) is the method this
// one replaced; it is kept for a caller that asks for it, and is what a
// history too short for the season (fewer than MinSeasonalDays days) is
// given. Backtests of both on the demo world are in forecast_test.go and
// the plugin's README: over the last months, to each month's end, the
// seasonal method's daily error is about a quarter of the line's and its
// interval holds near its nominal share of the days.
//
// Costs are never forecast below zero: predictions and bounds are clipped
// at 0.
package forecast

import (
	"math"
	"time"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Methods a forecast names.
const (
	// HoltWinters is additive Holt-Winters with a weekly season and a
	// damped trend.
	HoltWinters = "holt_winters_additive"
	// Linear is the ordinary least-squares line through the history.
	Linear = "ols_linear"
)

// IntervalLevel is the coverage of the seasonal method's prediction
// interval.
const IntervalLevel = 0.8

// LinearLevel is the coverage of the line's prediction interval, as it
// always was.
const LinearLevel = 0.95

// MinSeasonalDays is the least history the seasonal method is fitted to:
// a week to start the level and season, one to start the trend, one to
// judge the fit by.
const MinSeasonalDays = 3 * Period

// MinDays is the least history any forecast is made from: the line's
// residual variance needs a degree of freedom.
const MinDays = 3

// Point is one day's forecast.
type Point struct {
	Predicted, Lower, Upper float64
}

// Model is a fitted Holt-Winters model.
type Model struct {
	Alpha, Beta, Gamma, Phi float64
	// Level and Trend are the state after the history's last day.
	Level, Trend float64
	// Season is each weekday's index, Monday first.
	Season [Period]float64
	// ResidualStdError is the standard deviation of the one-step errors.
	ResidualStdError float64
}

// Projection is a series' forecast.
type Projection struct {
	// Method is the method the points follow.
	Method string
	// Level is the coverage of the points' intervals.
	Level float64
	// Points are the days after the history's last, in order.
	Points []Point
	// Line is the least-squares line through the history, whichever the
	// method.
	Line Line
	// Model is the Holt-Winters model when Method is HoltWinters.
	Model *Model
}

// Total is the sum of the predicted costs of the first n points.
func (p Projection) Total(n int) float64 {
	var sum float64
	for _, pt := range p.Points[:min(n, len(p.Points))] {
		sum += pt.Predicted
	}
	return sum
}

// Project forecasts the days days after y, a daily series whose first day
// is first, by method (HoltWinters or Linear); a history shorter than
// MinSeasonalDays gets the line whatever the method. It reports false for
// a history shorter than MinDays, which gets no forecast.
func Project(y []float64, first ledger.Day, days int, method string) (Projection, bool) {
	if len(y) < MinDays {
		return Projection{}, false
	}
	p := Projection{Line: FitLine(y), Points: make([]Point, days)}
	if method != HoltWinters || len(y) < MinSeasonalDays {
		p.Method, p.Level = Linear, LinearLevel
		for i := range days {
			v, half := p.Line.Predict(float64(len(y)+i), LinearLevel)
			p.Points[i] = clipped(v, half)
		}
		return p, true
	}
	m := fitHoltWinters(y)
	p.Method, p.Level = HoltWinters, IntervalLevel
	z := math.Sqrt2 * math.Erfinv(IntervalLevel)
	for i := range days {
		p.Points[i] = clipped(m.at(i+1), z*m.spread(i+1))
	}
	p.Model = &Model{Alpha: m.alpha, Beta: m.beta, Gamma: m.gamma, Phi: m.phi, Level: m.level, Trend: m.trend, ResidualStdError: m.sigma}
	for i := range Period {
		// season[i] is of the days at positions i, i+7, …: weekday of
		// first+i, which Monday-first numbering puts at (weekday+6) mod 7.
		wd := (first + ledger.Day(i)).Time().Weekday()
		p.Model.Season[(int(wd)+6)%Period] = m.season[i]
	}
	return p, true
}

func clipped(v, half float64) Point {
	return Point{Predicted: max(0, v), Lower: max(0, v-half), Upper: max(0, v+half)}
}

// MonthEnd is the last day of the month day falls in.
func MonthEnd(day ledger.Day) ledger.Day {
	t := day.Time()
	return ledger.DayOf(time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)) - 1
}
