package views

import (
	"context"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/forecast"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// What the page shows.
const (
	// trendDays is how many days of costs the trend charts, up to the
	// latest day with costs.
	trendDays = 90
	// forecastDays is how far the forecast reaches after that day.
	forecastDays = 30
	// servicesDays is the span of the top services.
	servicesDays = 30
	// anomaliesShown is how many anomalies the list shows, largest impact
	// first.
	anomaliesShown = 20
	// budgetsShown is how many budgets the page shows, most severe first.
	budgetsShown = 50
)

// page is the cost page: the trend with its forecast, the top services,
// the chargeback download, a brand's costs by cost centre, the anomalies
// to acknowledge, the budgets and the commitments.
func (h *Handlers) page(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenants := sdkui.Tenants(r)
	today := h.today()
	trend, err := h.trend(ctx, tenants, today)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	services, err := h.topServices(ctx, tenants, today)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	anomalyList, err := h.anomalyList(ctx, tenants, filterOf(r.URL.Query()), "")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	budgetSection, err := h.budgetSection(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	commitments, err := h.commitments(ctx, tenants, today)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	costCentres, err := h.costCentres(ctx, r.URL.Query().Get("brand_id"), tenants, today)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(
		sdkui.Card("Daily cost and forecast", trend),
		sdkui.Grid(
			sdkui.Card("Top services, last 30 days", services),
			sdkui.Card("Chargeback report", chargeback(tenants, today)),
		),
		sdkui.Card("Chargeback by cost centre", costCentres),
		sdkui.Card("Anomalies to acknowledge", anomalyList),
		sdkui.Card("Budgets", budgetSection),
		sdkui.Card("Commitments", commitments),
	))
}

// trend charts each currency's daily cost over the trendDays days up to
// the latest day with costs, the forecast's line after it (dashed) and
// its prediction interval (shaded), with the exact total of those days
// and the forecast's.
func (h *Handlers) trend(ctx context.Context, tenants []string, today ledger.Day) (template.HTML, error) {
	fc, err := h.Reports.Forecast(ctx, tenants, today, forecastDays, forecast.HoltWinters, reports.Actual)
	if err != nil || fc.HistoryEnd == nil {
		return sdkui.Empty(noCosts), err
	}
	end := *fc.HistoryEnd
	rng := reports.Range{From: end - trendDays + 1, To: end}
	days, err := h.Reports.Trends(ctx, tenants, rng, reports.Actual)
	if err != nil {
		return "", err
	}
	totals, err := h.Reports.Totals(ctx, tenants, rng, reports.Actual)
	if err != nil {
		return "", err
	}
	total := map[string]ledger.Amount{}
	for _, t := range totals {
		total[t.Currency] = t.Total
	}
	forecasts := map[string]reports.CurrencyForecast{}
	for _, f := range fc.Forecasts {
		forecasts[f.Currency] = f
	}
	labelsTo := end
	if len(fc.Forecasts) > 0 {
		labelsTo += forecastDays
	}
	labels := dayLabels(rng.From, labelsTo)
	currencies, series := byCurrency(days)
	parts := make([]template.HTML, 0, 2*len(currencies))
	for _, c := range currencies {
		actual := series[c]
		lines := []sdkui.Series{{Name: "Daily cost", Values: actual}}
		var band *sdkui.Band
		note := "Total of the " + strconv.Itoa(trendDays) + " days to " + end.String() + ": " + money(total[c], c) + "."
		if f, ok := forecasts[c]; ok && len(f.Points) > 0 {
			predicted, low, high := make([]float64, 0, len(f.Points)+1), make([]float64, len(f.Points)), make([]float64, len(f.Points))
			// The forecast's line starts at the last actual day, so that
			// it continues the actual line.
			predicted = append(predicted, actual[len(actual)-1])
			for i, p := range f.Points {
				predicted = append(predicted, p.Predicted)
				low[i], high[i] = p.Lower, p.Upper
			}
			name, how := "Forecast with weekly season", "by Holt-Winters smoothing with a weekly season"
			if fc.Method == forecast.Linear {
				name, how = "Linear trend", "by a least-squares line"
			}
			lines = append(lines, sdkui.Series{Name: name, Values: predicted, Offset: trendDays - 1, Forecast: true})
			band = &sdkui.Band{Name: strconv.Itoa(int(math.Round(100*fc.ConfidenceLevel))) + " % prediction interval", Low: low, High: high, Offset: trendDays}
			note += " Forecast of the next " + strconv.Itoa(len(f.Points)) + " days: about " + sdkui.FormatNumber(f.PredictedTotal) + " " + c +
				", " + how + " through the daily costs of the last " + strconv.Itoa(fc.HistoryDays) + " days; " +
				"of the month to " + fc.MonthEnd.String() + ": about " + sdkui.FormatNumber(f.PredictedMonthTotal) + " " + c + "."
		} else {
			note += " Too few days of costs for a forecast yet."
		}
		parts = append(parts, sdkui.LineChart("Daily cost in "+c, labels, lines, band), render("note", note))
	}
	if len(currencies) > 1 {
		conv, err := h.Reports.Reporting(ctx, tenants, rng, reports.Actual)
		if err != nil {
			return "", err
		}
		parts = append(parts, render("note", reportingNote(conv, trendDays, end)))
	}
	return stack(parts...), nil
}

// reportingNote is the total of costs in several currencies in the
// reporting currency, and how it was converted, or why it was not.
func reportingNote(r exchange.Reporting, days int, end ledger.Day) string {
	head := "Total of the " + strconv.Itoa(days) + " days to " + end.String() + " in all currencies"
	switch {
	case r.TotalCost != nil && r.Source != nil:
		return head + ": " + money(*r.TotalCost, r.Currency) + ", converted at daily exchange rates from " + *r.Source + "."
	case r.Source == nil:
		return head + " is not shown: no exchange rates are configured to convert them into " + r.Currency + "."
	}
	missing := make([]string, len(r.Missing))
	for i, m := range r.Missing {
		missing[i] = m.Currency + " from " + m.FirstDate.String()
	}
	return head + " is not shown: no exchange rate into " + r.Currency + " for " + strings.Join(missing, ", ") + "."
}

// topServices are the costliest services of each currency over the last
// servicesDays days, with their share of the currency's total.
func (h *Handlers) topServices(ctx context.Context, tenants []string, today ledger.Day) (template.HTML, error) {
	s, err := h.Reports.Summary(ctx, tenants, reports.Range{From: today - servicesDays + 1, To: today}, reports.Actual)
	if err != nil {
		return "", err
	}
	if len(s.TopServices) == 0 {
		return sdkui.Empty("No costs in the last 30 days. They arrive with the next costs sync."), nil
	}
	rows := make([][]any, 0, len(s.TopServices))
	for _, sv := range s.TopServices {
		rows = append(rows, []any{sv.Service, money(sv.TotalCost, sv.Currency), sdkui.FormatNumber(sv.SharePercent) + " %"})
	}
	return sdkui.Table([]string{"Service", "Cost", "Share"}, rows, "The costliest services of each currency, "+s.StartDate.String()+" to "+s.EndDate.String()), nil
}

// budgetSection is the budget editor of the one tenant in scope, or, with
// several, their budgets and a word to pick one to change them.
func (h *Handlers) budgetSection(ctx context.Context, tenants []string) (template.HTML, error) {
	if len(tenants) == 1 {
		return h.BudgetEditor.render(ctx, tenants[0], budgetState{})
	}
	list, err := h.budgetList(ctx, tenants, "")
	if err != nil || len(tenants) == 0 {
		return list, err
	}
	return stack(list, render("note", "Budgets belong to one tenant: pick a tenant with the tenant picker to create, change or delete its budgets.")), nil
}

// budgetList is the budgets, most severe status first, as bars of their
// current period's spend against their amount, and their exact figures;
// with an editable tenant, each budget's Edit and Delete buttons.
func (h *Handlers) budgetList(ctx context.Context, tenants []string, editable string) (template.HTML, error) {
	list, total, err := h.Budgets.List(ctx, budgets.ListQuery{TenantIDs: tenants, SortBy: "status", Desc: true, Limit: budgetsShown})
	if err != nil {
		return "", err
	}
	if total == 0 {
		if editable != "" {
			return sdkui.Empty("No budgets yet. Create one with the form below, or sync the provider's."), nil
		}
		return sdkui.Empty("No budgets yet."), nil
	}
	ids := make([]string, len(list))
	for i, b := range list {
		ids[i] = b.TenantID
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	if err != nil {
		return "", err
	}
	bars := make([]sdkui.Bar, 0, len(list))
	rows := make([][]any, 0, len(list))
	for _, b := range list {
		health := statusHealth(b.Status)
		bars = append(bars, sdkui.Bar{Label: b.Name + " (" + names[b.TenantID] + ")", Used: b.CurrentSpend.Float(), Limit: b.Amount.Float(), Unit: b.Currency, Health: health})
		period := b.PeriodOn(b.PeriodStart)
		row := []any{b.Name, names[b.TenantID], period.Start.String() + " to " + period.End.String(), sdkui.Badge(capitalize(b.Status), health),
			money(b.CurrentSpend, b.Currency), money(b.Amount, b.Currency), money(b.ForecastSpend, b.Currency)}
		if editable != "" {
			row = append(row, budgetActions(&b, editable))
		}
		rows = append(rows, row)
	}
	columns := []string{"Budget", "Tenant", "Period", "Status", "Spent", "Amount", "Forecast"}
	if editable != "" {
		columns = append(columns, "Actions")
	}
	return stack(
		sdkui.BarChart("Spend of each budget's current period against its amount", bars),
		sdkui.Table(columns, rows, "Budgets, most severe status first"),
		render("note", strconv.Itoa(len(list))+" of "+strconv.Itoa(total)+" budgets."),
	), nil
}

// chargeback is the form that downloads the chargeback CSV, the month to
// date by default: of the one tenant in scope, else of all the caller's
// tenants (every tenant for an admin), as the API's two routes serve them.
func chargeback(tenants []string, today ledger.Day) template.HTML {
	action, what := "/api/v1/costs/chargeback", "Costs of all your tenants."
	if len(tenants) == 1 {
		action, what = action+"/"+url.PathEscape(tenants[0]), "Costs of the tenant."
	}
	return render("chargeback", struct{ Action, Scope, Start, End string }{action, what, monthStart(today).String(), today.String()})
}

// monthStart is the first day of today's month.
func monthStart(today ledger.Day) ledger.Day {
	t := today.Time()
	return ledger.DayOf(time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC))
}
