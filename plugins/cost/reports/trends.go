package reports

import (
	"context"
	"slices"

	"github.com/stewardhq/steward/plugins/cost/forecast"
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

// HistoryDays is the most days of history a forecast is fitted to.
const HistoryDays = 90

const forecastDoc = "Forecast of the daily totals of each currency over the `days` days after the history — the last 90 days up to the latest day with costs " +
	"(today at the latest), starting at the first day with costs when that is later — and to the end of the month of the first forecast day (month_end). " +
	"method=holt_winters_additive: additive Holt-Winters exponential smoothing with a weekly season and a damped trend, its smoothing parameters " +
	"chosen by the least squared one-step error over the history (model carries them and the fitted state); each point carries an 80 % prediction interval, " +
	"the model's: σ·√(1 + Σ c_j²) times the normal quantile, where σ is the standard deviation of the one-step errors. Backtested on the demo world over five months " +
	"to each month's end, its daily error is about a quarter of the line's (the plugin's README has the figures). " +
	"method=ols_linear (the default, the interface's linear projection): the ordinary least-squares line through the history, with a 95 % prediction interval, the Student t quantile with n − 2 degrees of freedom " +
	"times the standard error of a new observation, s·√(1 + 1/n + (x − x̄)²/Sxx). A history of fewer than 21 days gets the line whatever the method; " +
	"method names the one used and confidence_level its interval's coverage. slope, intercept, r_squared and residual_std_error always describe the line through " +
	"the history (x is the day's index from history_start; the intercept is the fitted cost of history_start). " +
	"month_to_date is the exact cost of month_end's month up to history_end; predicted_month_total adds the forecast of the days after. " +
	"Costs are not forecast below zero: predicted and bounds are clipped at 0. A history of fewer than three days gives no forecasts."

// Forecast is the forecast's body.
type Forecast struct {
	Method          string      `json:"method" enum:"holt_winters_additive,ols_linear" doc:"The method the points follow: additive Holt-Winters with a weekly season, or the least-squares line"`
	ConfidenceLevel float64     `json:"confidence_level" doc:"Coverage of the prediction interval: 0.8 for Holt-Winters, 0.95 for the line"`
	Days            int         `json:"days" doc:"Days forecast"`
	HistoryDays     int         `json:"history_days" doc:"Days of history the forecasts are fitted to; 0 without costs"`
	HistoryStart    *ledger.Day `json:"history_start" format:"date" doc:"First day of the history; null without costs"`
	HistoryEnd      *ledger.Day `json:"history_end" format:"date" doc:"Last day of the history, the latest with costs; null without costs"`
	MonthEnd        *ledger.Day `json:"month_end" format:"date" doc:"Last day of the month of the first forecast day; null without costs"`
	// Forecasts is one per currency, as costs are never added across them.
	Forecasts []CurrencyForecast `json:"forecasts"`
}

// CurrencyForecast is the forecast of one currency.
type CurrencyForecast struct {
	Currency             string          `json:"currency"`
	Slope                float64         `json:"slope" doc:"The least-squares line through the history: change of the daily cost per day"`
	Intercept            float64         `json:"intercept" doc:"The line's fitted daily cost on history_start"`
	RSquared             float64         `json:"r_squared" doc:"The line's coefficient of determination"`
	ResidualStdError     float64         `json:"residual_std_error" doc:"The line's residual standard error"`
	Model                *ForecastModel  `json:"model,omitempty" required:"false" doc:"The fitted Holt-Winters model; absent when the method is the line"`
	PredictedTotal       float64         `json:"predicted_total" doc:"Sum of the predicted daily costs of the points"`
	MonthToDate          ledger.Amount   `json:"month_to_date" doc:"Cost of month_end's month from its first day to history_end, exactly; 0 when history_end is the day before it"`
	PredictedRestOfMonth float64         `json:"predicted_rest_of_month" doc:"Sum of the predicted daily costs from the day after history_end to month_end"`
	PredictedMonthTotal  float64         `json:"predicted_month_total" doc:"month_to_date plus predicted_rest_of_month"`
	Points               []ForecastPoint `json:"points"`
}

// ForecastModel is a fitted Holt-Winters model.
type ForecastModel struct {
	Alpha            float64    `json:"alpha" doc:"Smoothing of the level"`
	Beta             float64    `json:"beta" doc:"Smoothing of the trend"`
	Gamma            float64    `json:"gamma" doc:"Smoothing of the seasonal indices"`
	Phi              float64    `json:"phi" doc:"Damping of the trend per day ahead (1 is undamped)"`
	Level            float64    `json:"level" doc:"Level after history_end, without its weekday's index"`
	Trend            float64    `json:"trend" doc:"Trend after history_end, per day"`
	Seasonal         [7]float64 `json:"seasonal" doc:"Each weekday's index added to the level, Monday first"`
	ResidualStdError float64    `json:"residual_std_error" doc:"Standard deviation of the one-step errors over the history"`
}

// ForecastPoint is one forecast day.
type ForecastPoint struct {
	Date      ledger.Day `json:"date" format:"date"`
	Predicted float64    `json:"predicted"`
	Lower     float64    `json:"lower"`
	Upper     float64    `json:"upper"`
}

// Forecast forecasts the tenants' daily costs by method over the days
// after their history and to the end of its month (see forecastDoc).
func (s *Store) Forecast(ctx context.Context, tenants []string, today ledger.Day, days int, method string, m Metric) (Forecast, error) {
	out := Forecast{Method: method, ConfidenceLevel: forecast.IntervalLevel, Days: days, Forecasts: []CurrencyForecast{}}
	if method == forecast.Linear {
		out.ConfidenceLevel = forecast.LinearLevel
	}
	last, ok, err := s.LastDay(ctx, tenants, today)
	if err != nil || !ok {
		return out, err
	}
	rows, err := s.Daily(ctx, tenants, Range{From: last - HistoryDays + 1, To: last}, m)
	if err != nil || len(rows) == 0 {
		return out, err
	}
	history := Range{From: rows[0].Day, To: last}
	monthEnd := forecast.MonthEnd(last + 1)
	out.HistoryStart, out.HistoryEnd, out.HistoryDays, out.MonthEnd = &history.From, &history.To, history.Days(), &monthEnd
	if history.Days() < forecast.MinDays {
		return out, nil
	}
	monthToDate := map[string]ledger.Amount{}
	if monthStart := monthEnd - ledger.Day(monthEnd.Time().Day()) + 1; monthStart <= last {
		totals, err := s.Totals(ctx, tenants, Range{From: monthStart, To: last}, m)
		if err != nil {
			return out, err
		}
		for _, t := range totals {
			monthToDate[t.Currency] = t.Total
		}
	}
	rest := int(monthEnd - last)
	currencies, series := zeroFill(rows, history)
	for _, c := range currencies {
		y := make([]float64, len(series[c]))
		for i, v := range series[c] {
			y[i] = v.Float()
		}
		p, _ := forecast.Project(y, history.From, max(days, rest), method)
		out.Method, out.ConfidenceLevel = p.Method, p.Level
		cf := CurrencyForecast{Currency: c, Slope: p.Line.Slope, Intercept: p.Line.Intercept, RSquared: p.Line.RSquared, ResidualStdError: p.Line.StdError,
			PredictedTotal: round2(p.Total(days)), MonthToDate: monthToDate[c], PredictedRestOfMonth: round2(p.Total(rest)),
			Points: make([]ForecastPoint, days)}
		cf.PredictedMonthTotal = round2(cf.MonthToDate.Float() + cf.PredictedRestOfMonth)
		if m := p.Model; m != nil {
			cf.Model = &ForecastModel{Alpha: m.Alpha, Beta: m.Beta, Gamma: m.Gamma, Phi: m.Phi, Level: round2(m.Level), Trend: round2(m.Trend),
				ResidualStdError: round2(m.ResidualStdError)}
			for i, v := range m.Season {
				cf.Model.Seasonal[i] = round2(v)
			}
		}
		for i, pt := range p.Points[:days] {
			cf.Points[i] = ForecastPoint{Date: history.To + ledger.Day(i+1), Predicted: round2(pt.Predicted), Lower: round2(pt.Lower), Upper: round2(pt.Upper)}
		}
		out.Forecasts = append(out.Forecasts, cf)
	}
	return out, nil
}

func (h *Handlers) forecast(ctx context.Context, in *forecastIn) (*Forecast, error) {
	out, err := h.Store.Forecast(ctx, in.Tenants, h.today(), in.Days, in.Method, in.Metric)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
