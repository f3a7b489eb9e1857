package reports

import (
	"net/http"
	"strconv"
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

func intParam(name string, lo, hi, def int, doc string) *huma.Param {
	l, u := float64(lo), float64(hi)
	return &huma.Param{Name: name, In: "query", Description: doc,
		Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &l, Maximum: &u, Default: def}}
}

func dateParam(name string, required bool, doc string) *huma.Param {
	return &huma.Param{Name: name, In: "query", Required: required, Description: doc,
		Schema: &huma.Schema{Type: huma.TypeString, Format: "date"}}
}

func tenantIDsParam() *huma.Param {
	return &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants to include (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}}
}

func intPtr(n int) *int { return &n }

func rangeParams(countName string, lo, hi int) []*huma.Param {
	return []*huma.Param{
		intParam(countName, lo, hi, 30, "Days up to end_date, used when start_date is absent"),
		tenantIDsParam(),
		dateParam("start_date", false, "First day (inclusive); the range may span at most 366 days"),
		dateParam("end_date", false, "Last day (inclusive); today (UTC) when absent"),
	}
}

func formatParam() *huma.Param {
	return &huma.Param{Name: "format", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"json", "csv"}, Default: "json"}}
}

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	get := http.MethodGet
	return []sdk.Route{
		{Method: get, Path: "/api/v1/costs/summary", TenantScoped: true, Handler: h.summary, Operation: &huma.Operation{
			OperationID: "costs-summary", Tags: []string{tag}, Summary: "Cost summary across tenants",
			Description: "Total cost of the tenants over a range, with the daily average, the top ten services of each currency and the range of the same length before it. " +
				"The range is start_date to end_date (inclusive), or the period_days days ending on end_date (today when absent). " + currencyRule,
			Parameters: rangeParams("period_days", 1, 365),
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Cost summary", Summary{})},
		}},
		{Method: get, Path: "/api/v1/costs/by-tenant", TenantScoped: true, Handler: h.byTenant, Operation: &huma.Operation{
			OperationID: "costs-by-tenant", Tags: []string{tag}, Summary: "Cost per tenant",
			Description: "One record per tenant and currency over the period_days days ending today (UTC), costliest first within a currency; " +
				"share_percent is the tenant's share of that currency's total. A tenant without costs in the period has one record with total 0 and currency null.",
			Parameters: []*huma.Param{intParam("period_days", 1, 365, 30, "Days up to today"), tenantIDsParam()},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Cost per tenant", []TenantCost{})},
		}},
		{Method: get, Path: "/api/v1/costs/trends", TenantScoped: true, Handler: h.trends, Operation: &huma.Operation{
			OperationID: "costs-trends", Tags: []string{tag}, Summary: "Daily cost",
			Description: "One record per day of the range and currency with costs in it; a day without costs in a currency reads 0. " +
				"When the range has no costs at all, each day has one record with total 0 and currency null. " +
				"The range is start_date to end_date (inclusive), or the `days` days ending on end_date (today when absent).",
			Parameters: rangeParams("days", 7, 365),
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Daily cost", []DayCost{})},
		}},
		{Method: get, Path: "/api/v1/costs/trends/forecast", TenantScoped: true, Handler: h.forecast, Operation: &huma.Operation{
			OperationID: "costs-forecast", Tags: []string{tag}, Summary: "Cost forecast by linear projection",
			Description: forecastDoc,
			Parameters:  []*huma.Param{intParam("days", 7, 90, 30, "Days to forecast after the history"), tenantIDsParam()},
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("Forecast", Forecast{})},
		}},
		{Method: get, Path: "/api/v1/costs/reservations", TenantScoped: true, Handler: h.reservations, Operation: &huma.Operation{
			OperationID: "costs-reservations", Tags: []string{tag}, Summary: "Reservation utilisation of a tenant",
			Description: "Utilisation of the reservations of the tenant's billing account, per reservation and day (the last 30 days) or month (the last 12 months, this one included). " +
				"A tenant without a billing account answers available false, reason billing_account_access_required and the steps to set one up.",
			Parameters: []*huma.Param{
				{Name: "grain", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{GrainDaily, GrainMonthly}, Default: GrainMonthly}},
				{Name: "tenant_id", In: "query", Description: "The tenant; the caller's first tenant when absent. A tenant the caller may not see is a 403.",
					Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}},
			},
			Responses: map[string]*huma.Response{
				"200": {Description: "Reservation utilisation, or why it is not available", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
					OneOf: []*huma.Schema{sdk.SchemaOf(Reservations{}), sdk.SchemaOf(ReservationsUnavailable{})}}}}},
				"404": {Description: "The caller has no tenant, or the tenant is not active"},
			},
		}},
		{Method: get, Path: "/api/v1/costs/chargeback/{tenant_id}", TenantScoped: true, Handler: h.chargebackTenant, Operation: &huma.Operation{
			OperationID: "costs-chargeback-tenant", Tags: []string{tag}, Summary: "Chargeback report of one tenant",
			Description: chargebackDoc + ` The CSV's file name is chargeback-<tenant_id>-<start_date>-<end_date>.csv.`,
			Parameters: []*huma.Param{
				{Name: "tenant_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}},
				dateParam("start_date", true, "First day (inclusive)"), dateParam("end_date", true, "Last day (inclusive); at most 366 days after start_date"),
				formatParam(),
			},
			Responses: map[string]*huma.Response{"200": chargebackResponse("The tenant's report", Report{})},
		}},
		{Method: get, Path: "/api/v1/costs/chargeback", TenantScoped: true, Handler: h.chargebackAll, Operation: &huma.Operation{
			OperationID: "costs-chargeback", Tags: []string{tag}, Summary: "Chargeback reports of every tenant the caller may see",
			Description: chargebackDoc + ` An admin gets every tenant, another caller its own tenants; as JSON one report per tenant, tenants without costs included. ` +
				`The CSV's file name is chargeback-all-<start_date>-<end_date>.csv.`,
			Parameters: []*huma.Param{
				dateParam("start_date", true, "First day (inclusive)"), dateParam("end_date", true, "Last day (inclusive); at most 366 days after start_date"),
				formatParam(),
			},
			Responses: map[string]*huma.Response{"200": chargebackResponse("One report per tenant", []Report{})},
		}},
	}
}

const currencyRule = "Amounts are exact sums of cents in their currency, never converted: when the costs are in one currency, total_cost and currency carry it; " +
	"in several, both are null and totals lists each currency."

// dateRange is the range a request names: start_date to end_date, or the
// count days (the parameter countParam) ending on end_date, which defaults
// to today.
func (h *Handlers) dateRange(r *http.Request, countParam string) (Range, error) {
	q := r.URL.Query()
	end := h.today()
	if v := q.Get("end_date"); v != "" {
		d, err := ledger.ParseDay(v)
		if err != nil {
			return Range{}, sdk.Invalid("query.end_date", "expected a date YYYY-MM-DD")
		}
		end = d
	}
	if v := q.Get("start_date"); v != "" {
		start, err := ledger.ParseDay(v)
		if err != nil {
			return Range{}, sdk.Invalid("query.start_date", "expected a date YYYY-MM-DD")
		}
		return checkRange(start, end)
	}
	n, err := strconv.Atoi(q.Get(countParam))
	if err != nil {
		return Range{}, sdk.Invalid("query."+countParam, "expected an integer")
	}
	return checkRange(end-ledger.Day(n)+1, end)
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
