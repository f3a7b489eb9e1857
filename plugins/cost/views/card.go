package views

import (
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// cardDays is the span the card sums and charts, compared with as many
// days before it.
const cardDays = 30

// card is the dashboard's cost summary: the spend of the last 30 days in
// each currency against the 30 days before, the anomalies not yet
// acknowledged, the budgets at warning or worse, and the daily cost of
// each currency.
func (h *Handlers) card(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenants := sdkui.Tenants(r)
	today := h.today()
	rng := reports.Range{From: today - cardDays + 1, To: today}
	totals, err := h.Reports.Totals(ctx, tenants, rng, reports.Actual)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if len(totals) == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty("No cost data for the last 30 days yet. It arrives with the next costs sync."))
		return
	}
	unacknowledged := false
	open, err := h.Anomalies.Count(ctx, tenants, &unacknowledged)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	summary, err := h.Budgets.Summary(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	days, err := h.Reports.Trends(ctx, tenants, rng, reports.Actual)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	stats := make([]template.HTML, 0, len(totals)+2)
	for _, t := range totals {
		label := "Spend, last 30 days"
		if len(totals) > 1 {
			label = "Spend in " + t.Currency + ", last 30 days"
		}
		stats = append(stats, sdkui.Stat(label, money(t.Total, t.Currency), change(t), ""))
	}
	anomalyHealth := sdkui.OK
	if open > 0 {
		anomalyHealth = sdkui.Warning
	}
	stats = append(stats, sdkui.Stat("Anomalies to review", strconv.FormatInt(open, 10), "cost anomalies not yet acknowledged", anomalyHealth),
		budgetStat(summary))
	parts := []template.HTML{sdkui.Grid(stats...)}
	currencies, series := byCurrency(days)
	labels := dayLabels(rng.From, rng.To)
	for _, c := range currencies {
		parts = append(parts, sdkui.LineChart("Daily cost in "+c+", last 30 days", labels, []sdkui.Series{{Name: c, Values: series[c]}}, nil))
	}
	parts = append(parts, render("link", struct{ Href, Text string }{sdkui.WithTenant(PagePath, r), "Trend, forecast, anomalies, budgets and chargeback"}))
	sdkui.WriteFragment(w, http.StatusOK, stack(parts...))
}

// change says how a currency's spend compares with the same number of
// days before, whose spend it shows exactly.
func change(t reports.CurrencyTotal) string {
	before := " on the 30 days before (" + money(t.Previous, t.Currency) + ")"
	if t.Previous == 0 {
		return "nothing spent in the 30 days before"
	}
	pct := math.Round(1000*float64(t.Total-t.Previous)/float64(t.Previous)) / 10
	switch {
	case pct > 0:
		return "up " + sdkui.FormatNumber(pct) + " %" + before
	case pct < 0:
		return "down " + sdkui.FormatNumber(-pct) + " %" + before
	}
	return "unchanged" + before
}

// budgetStat counts the budgets at warning, critical or exceeded, in the
// colour of the worst.
func budgetStat(s budgets.Summary) template.HTML {
	if s.TotalBudgets == 0 {
		return sdkui.Stat("Budgets at risk", "0", "no budgets yet", "")
	}
	exceeded, critical, warning := s.ByStatus[budgets.StatusExceeded], s.ByStatus[budgets.StatusCritical], s.ByStatus[budgets.StatusWarning]
	health := sdkui.OK
	switch {
	case exceeded+critical > 0:
		health = sdkui.Critical
	case warning > 0:
		health = sdkui.Warning
	}
	hint := strings.Join([]string{
		strconv.Itoa(exceeded) + " exceeded", strconv.Itoa(critical) + " critical", strconv.Itoa(warning) + " warning",
	}, ", ")
	return sdkui.Stat("Budgets at risk", strconv.Itoa(exceeded+critical+warning)+" of "+strconv.Itoa(s.TotalBudgets), hint, health)
}
