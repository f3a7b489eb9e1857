package reports

import (
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the cost reads.
type Handlers struct {
	Store *Store
	// Host names tenants and tells which have a billing account.
	Host *sdk.Host
	// Now is the clock that says which day is today (UTC); nil is
	// time.Now.
	Now func() time.Time
}

func (h *Handlers) today() ledger.Day {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	return ledger.DayOf(now())
}

const tag = "costs"

// RangeParams are the tenants and the optional dates of a read over a
// range of days; a route adds the count of days used without start_date.
type RangeParams struct {
	Tenants   sdk.TenantIDs `query:"tenant_ids"`
	StartDate string        `query:"start_date" format:"date" doc:"First day (inclusive); the range may span at most 366 days"`
	EndDate   string        `query:"end_date" format:"date" doc:"Last day (inclusive); today (UTC) when absent"`
}

// ChargebackParams are the required dates and the format of a chargeback
// report.
type ChargebackParams struct {
	StartDate string `query:"start_date" required:"true" format:"date" doc:"First day (inclusive)"`
	EndDate   string `query:"end_date" required:"true" format:"date" doc:"Last day (inclusive); at most 366 days after start_date"`
	Format    string `query:"format" enum:"json,csv" default:"json"`
	MetricParam
}

// MetricParam is the cost a read sums; every cost read takes it.
type MetricParam struct {
	Metric Metric `query:"metric" enum:"actual,amortized" default:"actual" doc:"actual: costs as billed, a reservation's or savings plan's purchase on the day it is bought and nothing for the usage it covers; amortized: commitments spread over their terms, the usage they cover costing its share and their unused part a cost of its own"`
}

type summaryIn struct {
	RangeParams
	MetricParam
	PeriodDays int `query:"period_days" minimum:"1" maximum:"365" default:"30" doc:"Days up to end_date, used when start_date is absent"`
}

type byTenantIn struct {
	PeriodDays int           `query:"period_days" minimum:"1" maximum:"365" default:"30" doc:"Days up to today"`
	Tenants    sdk.TenantIDs `query:"tenant_ids"`
	MetricParam
}

type trendsIn struct {
	RangeParams
	MetricParam
	Days int `query:"days" minimum:"7" maximum:"365" default:"30" doc:"Days up to end_date, used when start_date is absent"`
}

type forecastIn struct {
	Days    int           `query:"days" minimum:"7" maximum:"90" default:"30" doc:"Days to forecast after the history"`
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Method  string        `query:"method" enum:"holt_winters_additive,ols_linear" default:"ols_linear" doc:"The least-squares line (the interface's linear projection, the default), or additive Holt-Winters with a weekly season"`
	MetricParam
}

type reservationsIn struct {
	Grain  string       `query:"grain" enum:"daily,monthly" default:"monthly"`
	Tenant sdk.TenantID `query:"tenant_id" doc:"The tenant; the caller's first tenant when absent. A tenant the caller may not see is a 403."`
}

type chargebackTenantIn struct {
	Tenant sdk.TenantID `path:"tenant_id"`
	ChargebackParams
}

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	tags := []string{tag}
	return append([]sdk.Route{
		sdk.Get("/api/v1/costs/summary", sdk.Op{ID: "costs-summary", Tags: tags, Summary: "Cost summary across tenants",
			Description: "Total cost of the tenants over a range, with the daily average, the top ten services of each currency and the range of the same length before it. " +
				"The range is start_date to end_date (inclusive), or the period_days days ending on end_date (today when absent). " + currencyRule}, h.summary),
		sdk.Get("/api/v1/costs/by-tenant", sdk.Op{ID: "costs-by-tenant", Tags: tags, Summary: "Cost per tenant",
			Description: "One record per tenant and currency over the period_days days ending today (UTC), costliest first within a currency; " +
				"share_percent is the tenant's share of that currency's total. A tenant without costs in the period has one record with total 0 and currency null. " +
				"reporting_total_cost is the record's total in the reporting currency, each day converted at its exchange rate."}, h.byTenant),
		sdk.Get("/api/v1/costs/trends", sdk.Op{ID: "costs-trends", Tags: tags, Summary: "Daily cost",
			Description: "One record per day of the range and currency with costs in it; a day without costs in a currency reads 0. " +
				"When the range has no costs at all, each day has one record with total 0 and currency null. " +
				"The range is start_date to end_date (inclusive), or the `days` days ending on end_date (today when absent)."}, h.trends),
		sdk.Get("/api/v1/costs/trends/forecast", sdk.Op{ID: "costs-forecast", Tags: tags, Summary: "Cost forecast with weekly seasonality, or by linear projection",
			Description: forecastDoc}, h.forecast),
		sdk.Get("/api/v1/costs/reservations", sdk.Op{ID: "costs-reservations", Tags: tags, Summary: "Reservation and savings plan utilisation of a tenant",
			Description: "Utilisation of the reservations of the tenant's billing account, per reservation and day (the last 30 days) or month (the last 12 months, this one included): " +
				"by hours, by hours weighted by each SKU's normalised size, and by cost, with the unused money (the cost of the unused hours) of each reservation and period, and their totals per currency. " +
				"savings_plans gives the same range's savings plans of the billing account, utilisation weighted by cost: each plan's commitment of the day or month, " +
				"the part its usage used and the unused money, and their totals per currency. " +
				"A tenant without a billing account answers available false, reason billing_account_access_required and the steps to set one up.",
			Responses: map[string]*huma.Response{
				"200": {Description: "Reservation utilisation, or why it is not available", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
					OneOf: []*huma.Schema{sdk.SchemaOf(Reservations{}), sdk.SchemaOf(ReservationsUnavailable{})}}}}},
				"404": {Description: "The caller has no tenant, or the tenant is not active"},
			}}, h.reservations),
		sdk.Get("/api/v1/costs/chargeback/{tenant_id}", sdk.Op{ID: "costs-chargeback-tenant", Tags: tags, Summary: "Chargeback report of one tenant",
			Description: chargebackDoc + ` The CSV's file name is chargeback-<tenant_id>-<start_date>-<end_date>.csv.`,
			Responses:   map[string]*huma.Response{"200": chargebackResponse("The tenant's report", Report{})}}, h.chargebackTenant),
		sdk.Get("/api/v1/costs/chargeback", sdk.Op{ID: "costs-chargeback", Tags: tags, Summary: "Chargeback reports of every tenant the caller may see",
			Description: chargebackDoc + ` An admin gets every tenant, another caller its own tenants; as JSON one report per tenant, tenants without costs included. ` +
				`The CSV's file name is chargeback-all-<start_date>-<end_date>.csv.`,
			Responses: map[string]*huma.Response{"200": chargebackResponse("One report per tenant", []Report{})}}, h.chargebackAll),
		h.breakdownRoute(),
		h.analysisRoute(),
		h.focusRoute(),
	}, h.commitmentRoutes()...)
}

const currencyRule = "Amounts are exact sums of cents in their currency: when the costs are in one currency, total_cost and currency carry it; " +
	"in several, both are null and totals lists each currency. reporting converts them into the installation's reporting currency: each day's sum of a currency " +
	"at that day's exchange rate (or the latest of the 7 days before, on a day without one), rounded half to even to the cent, then summed, naming the rates used; " +
	"its total_cost is null, and missing_rates names the currency, when a day lacks a usable rate."

// dateRange is the range a request names: start_date to end_date, or the
// count days ending on end_date, which defaults to today.
func (h *Handlers) dateRange(p RangeParams, count int) (Range, error) {
	return DateRange(p, count, h.today())
}

// DateRange is the range p names: start_date to end_date, or the count
// days ending on end_date, which defaults to today; a bad date or range is
// a 422 naming its parameter.
func DateRange(p RangeParams, count int, today ledger.Day) (Range, error) {
	end := today
	if p.EndDate != "" {
		d, err := day("query.end_date", p.EndDate)
		if err != nil {
			return Range{}, err
		}
		end = d
	}
	if p.StartDate != "" {
		start, err := day("query.start_date", p.StartDate)
		if err != nil {
			return Range{}, err
		}
		return checkRange(start, end)
	}
	return checkRange(end-ledger.Day(count)+1, end)
}

// day reads a date parameter at location.
func day(location, s string) (ledger.Day, error) {
	d, err := ledger.ParseDay(s)
	if err != nil {
		return 0, sdk.Invalid(location, "expected a date YYYY-MM-DD")
	}
	return d, nil
}

// checkRange refuses a range that ends before it starts or spans more
// than MaxRangeDays, naming start_date.
func checkRange(start, end ledger.Day) (Range, error) {
	rng := Range{From: start, To: end}
	if start > end {
		return Range{}, sdk.Invalid("query.start_date", "start_date %s is after end_date %s", start, end)
	}
	if rng.Days() > MaxRangeDays {
		return Range{}, sdk.Invalid("query.start_date", "the range spans %d days; at most %d", rng.Days(), MaxRangeDays)
	}
	return rng, nil
}
