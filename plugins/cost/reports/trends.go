package reports

import (
	"context"
	"slices"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// DayCost is one day's cost in one currency.
type DayCost struct {
	Date      ledger.Day    `json:"date" format:"date"`
	Currency  *string       `json:"currency" doc:"null on the days of a range without any costs"`
	TotalCost ledger.Amount `json:"total_cost"`
}

// Trends is the tenants' daily cost over r: every day of r once per
// currency with costs in r, 0 where a day has none; every day once with a
// null currency when r has no costs.
func (s *Store) Trends(ctx context.Context, tenants []string, r Range, m Metric) ([]DayCost, error) {
	rows, err := s.Daily(ctx, tenants, r, m)
	if err != nil {
		return nil, err
	}
	currencies, series := zeroFill(rows, r)
	out := make([]DayCost, 0, r.Days()*max(1, len(currencies)))
	for i := range r.Days() {
		day := r.From + ledger.Day(i)
		if len(currencies) == 0 {
			out = append(out, DayCost{Date: day})
		}
		for _, c := range currencies {
			out = append(out, DayCost{Date: day, Currency: &c, TotalCost: ledger.Amount(series[c][i])})
		}
	}
	return out, nil
}

// zeroFill spreads the grouped daily rows over every day of r: the
// currencies in order, and for each its cost on each day of r.
func zeroFill(rows []DayTotal, r Range) ([]string, map[string][]ledger.Amount) {
	series := map[string][]ledger.Amount{}
	var currencies []string
	for _, row := range rows {
		s, ok := series[row.Currency]
		if !ok {
			s = make([]ledger.Amount, r.Days())
			series[row.Currency] = s
			currencies = append(currencies, row.Currency)
		}
		s[row.Day-r.From] = row.Total
	}
	slices.Sort(currencies)
	return currencies, series
}

func (h *Handlers) trends(ctx context.Context, in *trendsIn) (*[]DayCost, error) {
	rng, err := h.dateRange(in.RangeParams, in.Days)
	if err != nil {
		return nil, err
	}
	out, err := h.Store.Trends(ctx, in.Tenants, rng, in.Metric)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Forecast parameters, as the route documents them.
const (
	// ForecastMethod names the model in the response.
	ForecastMethod = "ols_linear"
	// HistoryDays is the most days of history a forecast is fitted to.
	HistoryDays = 90
	// ConfidenceLevel is the coverage of the prediction interval.
	ConfidenceLevel = 0.95
)

const forecastDoc = "Ordinary least-squares line through the daily totals of each currency over the history — the last 90 days up to the latest day with costs " +
	"(today at the latest), starting at the first day with costs when that is later — projected over the `days` days after the history. " +
	"Each point carries the predicted cost and a 95 % prediction interval: the Student t quantile with n − 2 degrees of freedom times the standard error of a new observation, " +
	"s·√(1 + 1/n + (x − x̄)²/Sxx), where s is the residual standard error and x the day's index from history_start (the intercept is the fitted cost of history_start). " +
	"Costs are not forecast below zero: predicted and bounds are clipped at 0. A history of fewer than three days gives no forecasts."

// Forecast is the forecast's body.
type Forecast struct {
	Method          string      `json:"method" enum:"ols_linear" doc:"Ordinary least-squares linear regression of daily cost on the day"`
	ConfidenceLevel float64     `json:"confidence_level" doc:"Coverage of the prediction interval"`
	Days            int         `json:"days" doc:"Days forecast"`
	HistoryDays     int         `json:"history_days" doc:"Days of history the lines are fitted to; 0 without costs"`
	HistoryStart    *ledger.Day `json:"history_start" format:"date" doc:"First day of the history; null without costs"`
	HistoryEnd      *ledger.Day `json:"history_end" format:"date" doc:"Last day of the history, the latest with costs; null without costs"`
	// Forecasts is one per currency, as costs are never added across them.
	Forecasts []CurrencyForecast `json:"forecasts"`
}

// CurrencyForecast is the fitted line and projection of one currency.
type CurrencyForecast struct {
	Currency         string          `json:"currency"`
	Slope            float64         `json:"slope" doc:"Change of the daily cost per day"`
	Intercept        float64         `json:"intercept" doc:"Fitted daily cost on history_start"`
	RSquared         float64         `json:"r_squared"`
	ResidualStdError float64         `json:"residual_std_error"`
	PredictedTotal   float64         `json:"predicted_total" doc:"Sum of the predicted daily costs"`
	Points           []ForecastPoint `json:"points"`
}

// ForecastPoint is one forecast day.
type ForecastPoint struct {
	Date      ledger.Day `json:"date" format:"date"`
	Predicted float64    `json:"predicted"`
	Lower     float64    `json:"lower"`
	Upper     float64    `json:"upper"`
}

// Forecast fits the tenants' recent daily costs and projects them over
// the days after the history (see forecastDoc).
func (s *Store) Forecast(ctx context.Context, tenants []string, today ledger.Day, days int, m Metric) (Forecast, error) {
	out := Forecast{Method: ForecastMethod, ConfidenceLevel: ConfidenceLevel, Days: days, Forecasts: []CurrencyForecast{}}
	last, ok, err := s.LastDay(ctx, tenants, today)
	if err != nil || !ok {
		return out, err
	}
	rows, err := s.Daily(ctx, tenants, Range{From: last - HistoryDays + 1, To: last}, m)
	if err != nil || len(rows) == 0 {
		return out, err
	}
	history := Range{From: rows[0].Day, To: last}
	out.HistoryStart, out.HistoryEnd, out.HistoryDays = &history.From, &history.To, history.Days()
	if history.Days() < 3 {
		return out, nil
	}
	currencies, series := zeroFill(rows, history)
	for _, c := range currencies {
		y := make([]float64, len(series[c]))
		for i, v := range series[c] {
			y[i] = v.Float()
		}
		l := fitLine(y)
		cf := CurrencyForecast{Currency: c, Slope: l.slope, Intercept: l.intercept, RSquared: l.rSquared, ResidualStdError: l.stdError,
			Points: make([]ForecastPoint, 0, days)}
		var total float64
		for i := range days {
			x := float64(history.Days() + i)
			p, half := l.predict(x, ConfidenceLevel)
			total += max(0, p)
			cf.Points = append(cf.Points, ForecastPoint{Date: history.To + ledger.Day(i+1),
				Predicted: round2(max(0, p)), Lower: round2(max(0, p-half)), Upper: round2(max(0, p+half))})
		}
		cf.PredictedTotal = round2(total)
		out.Forecasts = append(out.Forecasts, cf)
	}
	return out, nil
}

func (h *Handlers) forecast(ctx context.Context, in *forecastIn) (*Forecast, error) {
	out, err := h.Store.Forecast(ctx, in.Tenants, h.today(), in.Days, in.Metric)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
