package exchange

import (
	"context"
	"maps"
	"math/big"
	"slices"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// DefaultCurrency is the reporting currency of a plugin configured with
// none.
const DefaultCurrency = "USD"

// Converter converts the reads' totals into the reporting currency. A nil
// Converter reports in DefaultCurrency with conversion off.
type Converter struct {
	Store *Store
	// Currency is the reporting currency, the rates' base.
	Currency string
	// Source names where the rates come from; empty when conversion is
	// off, which leaves a total null as soon as costs are in another
	// currency.
	Source string
}

// DayAmount is the cost of a day in one currency.
type DayAmount struct {
	Day      ledger.Day
	Currency string
	Amount   ledger.Amount
}

// Reporting is a total of costs in several currencies converted into the
// reporting currency.
type Reporting struct {
	Currency  string         `json:"currency" doc:"The installation's reporting currency (ISO 4217)"`
	TotalCost *ledger.Amount `json:"total_cost" nullable:"true" doc:"Every cost in the reporting currency: each day's sum in another currency converted at that day's rate (or the latest of the 7 days before, on a day without one), rounded half to even to the cent, then summed. null when a currency of the costs has no rate on one of its days (see missing_rates)"`
	Converted bool           `json:"converted" doc:"Whether costs in other currencies were converted into total_cost, at the rates listed"`
	Source    *string        `json:"source" nullable:"true" doc:"Where the daily rates come from (an endpoint or a file); null when conversion is off"`
	Rates     []RateUse      `json:"rates" doc:"One entry per currency converted, in currency order"`
	Missing   []MissingRate  `json:"missing_rates" doc:"The currencies with costs on days without a usable rate (none of theirs, nor in the 7 days before; or conversion is off); total_cost is null when any"`
}

// RateUse is how one currency's costs were converted.
type RateUse struct {
	Currency          string        `json:"currency"`
	FirstRateDate     ledger.Day    `json:"first_rate_date" format:"date" doc:"The date of the earliest rate used"`
	LastRateDate      ledger.Day    `json:"last_rate_date" format:"date" doc:"The date of the latest rate used"`
	Days              int           `json:"days" doc:"Days of costs converted"`
	DaysOnEarlierRate int           `json:"days_on_earlier_rate" doc:"Of those, days without a rate of their own (weekends, holidays, today before publication), converted at the latest earlier day's"`
	TotalCost         ledger.Amount `json:"total_cost" doc:"The costs converted, in the currency"`
	ConvertedCost     ledger.Amount `json:"converted_cost" doc:"The same costs in the reporting currency"`
}

// MissingRate is a currency whose costs could not all be converted.
type MissingRate struct {
	Currency  string     `json:"currency"`
	FirstDate ledger.Day `json:"first_date" format:"date" doc:"The first day of costs without a usable rate"`
	Days      int        `json:"days" doc:"Days of costs without a usable rate"`
}

// Code is the reporting currency.
func (c *Converter) Code() string {
	if c == nil || c.Currency == "" {
		return DefaultCurrency
	}
	return c.Currency
}

// On reports whether conversion is on.
func (c *Converter) On() bool { return c != nil && c.Source != "" && c.Store != nil }

// Table loads the rates sums may need: those of their currencies other
// than the reporting one, over their days. With conversion off it is
// empty.
func (c *Converter) Table(ctx context.Context, sums []DayAmount) (Table, error) {
	if !c.On() || len(sums) == 0 {
		return Table{}, nil
	}
	// Sums in the reporting currency need no rate, whatever their day.
	var quotes []string
	var from, to ledger.Day
	for _, s := range sums {
		if s.Currency == c.Code() {
			continue
		}
		if len(quotes) == 0 {
			from, to = s.Day, s.Day
		}
		if !slices.Contains(quotes, s.Currency) {
			quotes = append(quotes, s.Currency)
		}
		from, to = min(from, s.Day), max(to, s.Day)
	}
	return c.Store.Table(ctx, c.Code(), quotes, from, to)
}

// Total converts sums into the reporting currency at t's rates.
func (c *Converter) Total(t Table, sums []DayAmount) Reporting {
	out := Reporting{Currency: c.Code(), Rates: []RateUse{}, Missing: []MissingRate{}}
	if c.On() {
		out.Source = &c.Source
	}
	var total ledger.Amount
	uses, missing := map[string]*RateUse{}, map[string]*MissingRate{}
	for _, s := range sums {
		if s.Currency == out.Currency {
			total += s.Amount
			continue
		}
		r, ok := t.On(s.Currency, s.Day)
		if !ok {
			m := missing[s.Currency]
			if m == nil {
				m = &MissingRate{Currency: s.Currency, FirstDate: s.Day}
				missing[s.Currency] = m
			}
			m.FirstDate, m.Days = min(m.FirstDate, s.Day), m.Days+1
			continue
		}
		u := uses[s.Currency]
		if u == nil {
			u = &RateUse{Currency: s.Currency, FirstRateDate: r.Day, LastRateDate: r.Day}
			uses[s.Currency] = u
		}
		converted := Convert(s.Amount, r.Rate)
		total += converted
		u.FirstRateDate, u.LastRateDate = min(u.FirstRateDate, r.Day), max(u.LastRateDate, r.Day)
		u.Days++
		if r.Day != s.Day {
			u.DaysOnEarlierRate++
		}
		u.TotalCost += s.Amount
		u.ConvertedCost += converted
	}
	for _, code := range slices.Sorted(maps.Keys(uses)) {
		out.Rates = append(out.Rates, *uses[code])
	}
	for _, code := range slices.Sorted(maps.Keys(missing)) {
		out.Missing = append(out.Missing, *missing[code])
	}
	out.Converted = len(out.Rates) > 0
	if len(out.Missing) == 0 {
		out.TotalCost = &total
	}
	return out
}

// Report loads the rates sums need and converts them.
func (c *Converter) Report(ctx context.Context, sums []DayAmount) (Reporting, error) {
	t, err := c.Table(ctx, sums)
	if err != nil {
		return Reporting{}, err
	}
	return c.Total(t, sums), nil
}

// Floor is amount of the reporting currency in currency at the latest rate
// on or before day, rounded half to even to the cent; ok is false when
// conversion is off or there is no such rate. In the reporting currency
// it is amount.
func (c *Converter) Floor(ctx context.Context, amount ledger.Amount, currency string, day ledger.Day) (ledger.Amount, bool, error) {
	if currency == c.Code() {
		return amount, true, nil
	}
	if !c.On() {
		return 0, false, nil
	}
	q, ok, err := c.Store.Latest(ctx, c.Code(), currency, day)
	if err != nil || !ok {
		return 0, false, err
	}
	// amount × rate: the inverse of Convert, which divides.
	return ledger.Amount(roundHalfEven(new(big.Int).Mul(big.NewInt(int64(amount)), big.NewInt(int64(q.Rate))), big.NewInt(rateScale)).Int64()), true, nil
}
