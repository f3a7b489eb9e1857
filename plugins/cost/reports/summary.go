package reports

import (
	"context"
	"slices"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// topServices is how many services of each currency a summary lists.
const topServices = 10

// Summary is the cost summary's body.
type Summary struct {
	Metric      Metric         `json:"metric" enum:"actual,amortized" doc:"The cost summed"`
	StartDate   ledger.Day     `json:"start_date" format:"date"`
	EndDate     ledger.Day     `json:"end_date" format:"date"`
	Days        int            `json:"days"`
	TenantCount int            `json:"tenant_count" doc:"Tenants summarised: those asked for, else every tenant of the caller"`
	Currency    *string        `json:"currency" doc:"The currency of the costs; null when there are none or they are in several"`
	TotalCost   *ledger.Amount `json:"total_cost" nullable:"true" doc:"Total cost in currency; 0 without costs, null when they are in several currencies"`
	// DailyAverage is beside TotalCost for the common single-currency case.
	DailyAverage *ledger.Amount `json:"daily_average" nullable:"true" doc:"total_cost divided by days, rounded to the cent; null when in several currencies"`
	// Totals always lists each currency, so a reader never needs the
	// single-currency fields.
	Totals            []CurrencySummary `json:"totals" doc:"One entry per currency with costs in the range"`
	PreviousStartDate ledger.Day        `json:"previous_start_date" format:"date" doc:"Start of the range of the same length just before"`
	PreviousEndDate   ledger.Day        `json:"previous_end_date" format:"date"`
	TopServices       []ServiceCost     `json:"top_services" doc:"The ten costliest services of each currency, costliest first"`
	// Reporting is beside the totals, which it leaves as they are.
	Reporting exchange.Reporting `json:"reporting" doc:"The range's costs in the reporting currency, converted at daily exchange rates; totals keeps each currency's own"`
}

// CurrencySummary is the summary's figures in one currency.
type CurrencySummary struct {
	Currency          string        `json:"currency"`
	TotalCost         ledger.Amount `json:"total_cost"`
	DailyAverage      ledger.Amount `json:"daily_average"`
	TenantsWithCosts  int           `json:"tenants_with_costs"`
	PreviousTotalCost ledger.Amount `json:"previous_total_cost" doc:"Cost of the range of the same length just before"`
	ChangePercent     *float64      `json:"change_percent" doc:"Change from the previous range in percent; null when that range cost nothing"`
}

// ServiceCost is one service's cost in one currency.
type ServiceCost struct {
	Service      string        `json:"service"`
	Currency     string        `json:"currency"`
	TotalCost    ledger.Amount `json:"total_cost"`
	SharePercent float64       `json:"share_percent" doc:"Share of the currency's total, in percent"`
}

// Summary builds the summary of the tenants over r.
func (s *Store) Summary(ctx context.Context, tenants []string, r Range, m Metric) (Summary, error) {
	// The totals and the top services read the tenants' revision once.
	ctx = revcache.OneRead(ctx)
	prev := r.Previous()
	out := Summary{Metric: m, StartDate: r.From, EndDate: r.To, Days: r.Days(), TenantCount: len(tenants),
		PreviousStartDate: prev.From, PreviousEndDate: prev.To, Totals: []CurrencySummary{}, TopServices: []ServiceCost{}}
	totals, err := s.Totals(ctx, tenants, r, m)
	if err != nil {
		return out, err
	}
	services, err := s.TopServices(ctx, tenants, r, topServices, m)
	if err != nil {
		return out, err
	}
	byCurrency := map[string]ledger.Amount{}
	for _, t := range totals {
		byCurrency[t.Currency] = t.Total
		cs := CurrencySummary{Currency: t.Currency, TotalCost: ledger.Amount(t.Total), DailyAverage: ledger.Amount(divRound(t.Total, r.Days())),
			TenantsWithCosts: t.Tenants, PreviousTotalCost: ledger.Amount(t.Previous)}
		if t.Previous != 0 {
			change := round2(100 * float64(t.Total-t.Previous) / float64(t.Previous))
			cs.ChangePercent = &change
		}
		out.Totals = append(out.Totals, cs)
	}
	if out.Reporting, err = s.rangeReporting(ctx, tenants, r, m, byCurrency); err != nil {
		return out, err
	}
	for _, sv := range services {
		out.TopServices = append(out.TopServices, ServiceCost{Service: sv.Service, Currency: sv.Currency, TotalCost: ledger.Amount(sv.Total),
			SharePercent: percent(sv.Total, byCurrency[sv.Currency])})
	}
	switch len(out.Totals) {
	case 0:
		zero := ledger.Amount(0)
		out.TotalCost, out.DailyAverage = &zero, &zero
	case 1:
		c := out.Totals[0]
		out.Currency, out.TotalCost, out.DailyAverage = &c.Currency, &c.TotalCost, &c.DailyAverage
	}
	return out, nil
}

// Reporting is the tenants' costs over r in the reporting currency.
func (s *Store) Reporting(ctx context.Context, tenants []string, r Range, m Metric) (exchange.Reporting, error) {
	ctx = revcache.OneRead(ctx)
	totals, err := s.Totals(ctx, tenants, r, m)
	if err != nil {
		return exchange.Reporting{}, err
	}
	byCurrency := map[string]ledger.Amount{}
	for _, t := range totals {
		byCurrency[t.Currency] = t.Total
	}
	return s.rangeReporting(ctx, tenants, r, m, byCurrency)
}

// rangeReporting converts the tenants' totals over r, per currency, into
// the reporting currency from their sums per day.
func (s *Store) rangeReporting(ctx context.Context, tenants []string, r Range, m Metric, totals map[string]ledger.Amount) (exchange.Reporting, error) {
	return s.reporting(ctx, totals, func(ctx context.Context, foreign []string) ([]exchange.DayAmount, error) {
		days, err := s.DailyIn(ctx, tenants, foreign, r, m)
		sums := make([]exchange.DayAmount, len(days))
		for i, d := range days {
			sums[i] = exchange.DayAmount{Day: d.Day, Currency: d.Currency, Amount: d.Total}
		}
		return sums, err
	})
}

func (h *Handlers) summary(ctx context.Context, in *summaryIn) (*Summary, error) {
	rng, err := h.dateRange(in.RangeParams, in.PeriodDays)
	if err != nil {
		return nil, err
	}
	out, err := h.Store.Summary(ctx, in.Tenants, rng, in.Metric)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// TenantCost is one tenant's cost in one currency.
type TenantCost struct {
	TenantID     string        `json:"tenant_id"`
	TenantName   string        `json:"tenant_name"`
	Currency     *string       `json:"currency" doc:"null for a tenant without costs in the period"`
	TotalCost    ledger.Amount `json:"total_cost"`
	DailyAverage ledger.Amount `json:"daily_average" doc:"total_cost divided by the period's days, rounded to the cent"`
	SharePercent float64       `json:"share_percent" doc:"Share of the currency's total over the listed tenants, in percent"`
	// The reporting figures are beside the record's own currency's.
	ReportingCurrency  string         `json:"reporting_currency" doc:"The installation's reporting currency (ISO 4217)"`
	ReportingTotalCost *ledger.Amount `json:"reporting_total_cost" nullable:"true" doc:"total_cost in the reporting currency: each day's cost converted at that day's exchange rate (or the latest of the 7 days before), rounded half to even to the cent, then summed; null when a day has no usable rate or conversion is off"`
}

func (h *Handlers) byTenant(ctx context.Context, in *byTenantIn) (*[]TenantCost, error) {
	tenants := in.Tenants
	today := h.today()
	rng := Range{From: today - ledger.Day(in.PeriodDays) + 1, To: today}
	totals, err := h.Store.ByTenant(ctx, tenants, rng, in.Metric)
	if err != nil {
		return nil, err
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return nil, err
	}
	sum := map[string]ledger.Amount{}
	for _, t := range totals {
		sum[t.Currency] += t.Total
	}
	converted, err := h.Store.tenantsReporting(ctx, totals, rng, in.Metric)
	if err != nil {
		return nil, err
	}
	reporting := h.Store.Exchange.Code()
	out := make([]TenantCost, 0, len(tenants))
	withCosts := map[string]bool{}
	for _, t := range totals {
		withCosts[t.TenantID] = true
		out = append(out, TenantCost{TenantID: t.TenantID, TenantName: names[t.TenantID], Currency: &t.Currency, TotalCost: ledger.Amount(t.Total),
			DailyAverage: ledger.Amount(divRound(t.Total, rng.Days())), SharePercent: percent(t.Total, sum[t.Currency]),
			ReportingCurrency: reporting, ReportingTotalCost: converted[[2]string{t.TenantID, t.Currency}]})
	}
	zero := ledger.Amount(0)
	for _, id := range tenants {
		if !withCosts[id] {
			out = append(out, TenantCost{TenantID: id, TenantName: names[id], ReportingCurrency: reporting, ReportingTotalCost: &zero})
		}
	}
	return &out, nil
}

// tenantsReporting is each tenant's total in one currency converted into
// the reporting currency, by tenant and currency; nil where a day lacks a
// usable rate. The costs in other currencies are read per tenant and day,
// and their rates loaded once.
func (s *Store) tenantsReporting(ctx context.Context, totals []TenantTotal, r Range, m Metric) (map[[2]string]*ledger.Amount, error) {
	out := map[[2]string]*ledger.Amount{}
	var tenants, currencies []string
	for _, t := range totals {
		if t.Currency == s.Exchange.Code() {
			out[[2]string{t.TenantID, t.Currency}] = &t.Total
			continue
		}
		if !slices.Contains(tenants, t.TenantID) {
			tenants = append(tenants, t.TenantID)
		}
		if !slices.Contains(currencies, t.Currency) {
			currencies = append(currencies, t.Currency)
		}
	}
	if len(tenants) == 0 || !s.Exchange.On() {
		return out, nil
	}
	days, err := s.TenantDays(ctx, tenants, currencies, r, m)
	if err != nil {
		return nil, err
	}
	sums := map[[2]string][]exchange.DayAmount{}
	all := make([]exchange.DayAmount, len(days))
	for i, d := range days {
		k := [2]string{d.TenantID, d.Currency}
		all[i] = exchange.DayAmount{Day: d.Day, Currency: d.Currency, Amount: d.Total}
		sums[k] = append(sums[k], all[i])
	}
	table, err := s.Exchange.Table(ctx, all)
	if err != nil {
		return nil, err
	}
	for k, days := range sums {
		out[k] = s.Exchange.Total(table, days).TotalCost
	}
	return out, nil
}
