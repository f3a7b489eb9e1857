package reports

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

const chargebackDoc = "Costs of start_date to end_date (both inclusive). As JSON (format=json, the default): per tenant its total per currency and its services' costs, " +
	"and its total of every currency in the reporting currency (reporting_total_cost). " +
	"As CSV (format=csv): text/csv with a Content-Disposition attachment, the header row " + csvHeaderDoc + " and one row per tenant, day and service (and currency) with costs, " +
	"ordered by tenant, day and service; costs have two decimals and add up, per currency, to the summary's total_cost of the same tenants and range. " +
	"A text cell that a spreadsheet would read as a formula (starting with =, +, -, @) is prefixed with an apostrophe."

const csvHeaderDoc = "tenant_id,tenant_name,date,service,currency,cost"

var csvHeader = strings.Split(csvHeaderDoc, ",")

// Report is one tenant's chargeback report.
type Report struct {
	TenantID   string           `json:"tenant_id"`
	TenantName string           `json:"tenant_name"`
	StartDate  ledger.Day       `json:"start_date" format:"date"`
	EndDate    ledger.Day       `json:"end_date" format:"date"`
	Days       int              `json:"days"`
	Currency   *string          `json:"currency" doc:"The currency of the tenant's costs; null when there are none or they are in several"`
	TotalCost  *ledger.Amount   `json:"total_cost" nullable:"true" doc:"Total in currency; 0 without costs, null in several currencies"`
	Totals     []CurrencyAmount `json:"totals" doc:"The total of each currency"`
	Services   []ServiceCost    `json:"services" doc:"Each service's cost, costliest first within a currency"`
	// The reporting figures are beside the currencies' own.
	ReportingCurrency  string         `json:"reporting_currency" doc:"The installation's reporting currency (ISO 4217)"`
	ReportingTotalCost *ledger.Amount `json:"reporting_total_cost" nullable:"true" doc:"The tenant's costs of every currency in the reporting currency: each day's cost in another currency converted at that day's exchange rate (or the latest of the 7 days before), rounded half to even to the cent, then summed; 0 without costs; null when a day has no usable rate or conversion is off"`
}

// CurrencyAmount is a total in one currency.
type CurrencyAmount struct {
	Currency  string        `json:"currency"`
	TotalCost ledger.Amount `json:"total_cost"`
}

func chargebackResponse(description string, jsonBody any) *huma.Response {
	return &huma.Response{
		Description: description + " as JSON, or as CSV with format=csv",
		Content: map[string]*huma.MediaType{
			"application/json": {Schema: sdk.SchemaOf(jsonBody)},
			"text/csv":         {Schema: &huma.Schema{Type: huma.TypeString, Description: "Header row " + csvHeaderDoc + ", then one row per tenant, day and service"}},
		},
	}
}

// Reports builds a chargeback report of each tenant over r, in the
// order of tenants; names are the tenants' names.
func (s *Store) Reports(ctx context.Context, tenants []string, names map[string]string, r Range, m Metric) ([]Report, error) {
	rows, err := s.ByTenantService(ctx, tenants, r, m)
	if err != nil {
		return nil, err
	}
	reports := make([]Report, len(tenants))
	index := make(map[string]int, len(tenants))
	for i, id := range tenants {
		index[id] = i
		reports[i] = Report{TenantID: id, TenantName: names[id], StartDate: r.From, EndDate: r.To, Days: r.Days(),
			Totals: []CurrencyAmount{}, Services: []ServiceCost{}}
	}
	// The rows come by tenant and currency: a currency's total is complete
	// when the next currency or tenant starts, so shares are filled in then.
	for _, row := range rows {
		rep := &reports[index[row.TenantID]]
		if n := len(rep.Totals); n == 0 || rep.Totals[n-1].Currency != row.Currency {
			rep.Totals = append(rep.Totals, CurrencyAmount{Currency: row.Currency})
		}
		rep.Totals[len(rep.Totals)-1].TotalCost += ledger.Amount(row.Total)
		rep.Services = append(rep.Services, ServiceCost{Service: row.Service, Currency: row.Currency, TotalCost: ledger.Amount(row.Total)})
	}
	for i := range reports {
		rep := &reports[i]
		totals := map[string]ledger.Amount{}
		for _, t := range rep.Totals {
			totals[t.Currency] = t.TotalCost
		}
		for j, sv := range rep.Services {
			rep.Services[j].SharePercent = percent(ledger.Amount(sv.TotalCost), ledger.Amount(totals[sv.Currency]))
		}
		switch len(rep.Totals) {
		case 0:
			zero := ledger.Amount(0)
			rep.TotalCost = &zero
		case 1:
			rep.Currency, rep.TotalCost = &rep.Totals[0].Currency, &rep.Totals[0].TotalCost
		}
	}
	return reports, s.reportingTotals(ctx, reports, r, m)
}

// reportingTotals converts each report's totals into the reporting
// currency, as the per-tenant totals are.
func (s *Store) reportingTotals(ctx context.Context, reports []Report, r Range, m Metric) error {
	var totals []TenantTotal
	for _, rep := range reports {
		for _, t := range rep.Totals {
			totals = append(totals, TenantTotal{TenantID: rep.TenantID, Currency: t.Currency, Total: t.TotalCost})
		}
	}
	converted, err := s.tenantsReporting(ctx, totals, r, m)
	if err != nil {
		return err
	}
	for i := range reports {
		rep := &reports[i]
		rep.ReportingCurrency = s.Exchange.Code()
		sum := ledger.Amount(0)
		rep.ReportingTotalCost = &sum
		for _, t := range rep.Totals {
			c := converted[[2]string{rep.TenantID, t.Currency}]
			if c == nil {
				rep.ReportingTotalCost = nil
				break
			}
			sum += *c
		}
	}
	return nil
}

// chargebackRange reads the required start_date and end_date.
func chargebackRange(p ChargebackParams) (Range, error) {
	start, err := day("query.start_date", p.StartDate)
	if err != nil {
		return Range{}, err
	}
	end, err := day("query.end_date", p.EndDate)
	if err != nil {
		return Range{}, err
	}
	return checkRange(start, end)
}

// chargebackOut is a chargeback's answer: a stream, because the route
// answers either media type, with the CSV's attachment header.
type chargebackOut struct {
	ContentDisposition *string `header:"Content-Disposition" doc:"With format=csv: attachment; filename=\"chargeback-….csv\""`
	Body               func(huma.Context)
}

func (h *Handlers) chargebackTenant(ctx context.Context, in *chargebackTenantIn) (*chargebackOut, error) {
	id := string(in.Tenant)
	rng, err := chargebackRange(in.ChargebackParams)
	if err != nil {
		return nil, err
	}
	return h.chargeback(ctx, in.ChargebackParams, []string{id}, rng, fmt.Sprintf("chargeback-%s-%s-%s.csv", id, rng.From, rng.To), true)
}

func (h *Handlers) chargebackAll(ctx context.Context, in *ChargebackParams) (*chargebackOut, error) {
	rng, err := chargebackRange(*in)
	if err != nil {
		return nil, err
	}
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	return h.chargeback(ctx, *in, tenants, rng, fmt.Sprintf("chargeback-all-%s-%s.csv", rng.From, rng.To), false)
}

// chargeback answers the reports of tenants over rng as JSON (one report,
// or an array when many), or streams them as CSV under filename.
func (h *Handlers) chargeback(ctx context.Context, p ChargebackParams, tenants []string, rng Range, filename string, one bool) (*chargebackOut, error) {
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return nil, err
	}
	if p.Format == "csv" {
		disposition := fmt.Sprintf("attachment; filename=%q", filename)
		return &chargebackOut{ContentDisposition: &disposition, Body: func(hc huma.Context) {
			r, w := humago.Unwrap(hc)
			h.streamCSV(w, r, tenants, names, rng, p.Metric)
		}}, nil
	}
	reports, err := h.Store.Reports(ctx, tenants, names, rng, p.Metric)
	if err != nil {
		return nil, err
	}
	var body any = reports
	if one {
		body = reports[0]
	}
	return &chargebackOut{Body: func(hc huma.Context) {
		_, w := humago.Unwrap(hc)
		sdk.WriteJSON(w, http.StatusOK, body)
	}}, nil
}

// streamCSV writes the rows as the database cursor yields them. A failure
// before the first byte went out is answered as an error, without the
// attachment header; after it, the response is aborted, so the caller sees
// it break off rather than a file that looks complete.
func (h *Handlers) streamCSV(w http.ResponseWriter, r *http.Request, tenants []string, names map[string]string, rng Range, m Metric) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	sent := &sentWriter{w: w}
	out := csv.NewWriter(sent)
	err := out.Write(csvHeader)
	if err == nil {
		err = h.Store.EachServiceDay(r.Context(), tenants, rng, m, func(row ServiceDay) error {
			return out.Write(csvRecord(row, names[row.TenantID]))
		})
	}
	if err == nil {
		out.Flush()
		err = out.Error()
	}
	if err != nil {
		if !sent.any {
			w.Header().Del("Content-Disposition")
			sdk.WriteError(w, err)
			return
		}
		panic(http.ErrAbortHandler)
	}
}

// csvRecord is a row of the CSV, with its tenant's name, in csvHeader's
// order.
func csvRecord(row ServiceDay, tenantName string) []string {
	return []string{row.TenantID, Cell(tenantName), row.Day.String(), Cell(row.Service), Cell(row.Currency), row.Cost.String()}
}

// sentWriter notes whether anything was written through it.
type sentWriter struct {
	w   io.Writer
	any bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	s.any = true
	return s.w.Write(p)
}

// Cell guards a text cell against being read as a spreadsheet formula.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
