// Package views is the cost plugin's HTML: the dashboard's cost summary
// card, the cost page — the daily trend with its forecast, the top
// services, the anomalies to acknowledge with their drill-down, the
// budgets, the chargeback download and a brand's costs by cost centre —
// the anomaly list its buttons answer, and the cost analysis page, whose
// form reloads its result.
//
// Every view reads through the stores of reports, anomalies, budgets and
// allocation, scoped to the caller's tenants or to the one tenant_id
// names (which the SDK has refused before the handler when the caller may
// not see it).
// Amounts are shown exactly as ledger.Amount writes them, each with its
// currency; figures in different currencies are never added, compared or
// charted together.
//
// The chargeback form is a plain GET of /api/v1/costs/chargeback…, which
// a browser's session cookie authenticates. The page's other forms and
// buttons send htmx requests, which carry the session's CSRF token (the
// host's page script adds it), to routes of the views (Routes) that serve
// the plugin's API routes in process and answer the HTML to swap in: an
// anomaly's Acknowledge (with its note) and Undo answer the anomaly list
// with a notice of what was done; the budget section of a page of one
// tenant is a BudgetEditor, whose forms answer that section.
package views

import (
	"bytes"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the views.
const (
	// CardPath is the dashboard's cost card; the host shows a placeholder
	// there while no plugin serves it.
	CardPath = "/partials/cost-summary-card"
	// AnomaliesPath is the page's list of anomalies to acknowledge, which
	// it reloads after each acknowledgement.
	AnomaliesPath = "/partials/cost-anomalies"
	// PagePath is the cost page.
	PagePath = "/costs"
)

// CardRefreshSeconds is how often the dashboard reloads the card: costs
// change a few times a day, at each sync.
const CardRefreshSeconds = 600

// noCosts is the empty state of a view without any cost data.
const noCosts = "No cost data yet. It arrives with the next costs sync."

// Handlers serves the views from the cost plugin's stores.
type Handlers struct {
	Reports   *reports.Store
	Anomalies *anomalies.Store
	Budgets   *budgets.Store
	// Allocation is the brands' cost allocation, whose chargeback by
	// cost centre the page shows for a brand.
	Allocation *allocation.Store
	// BudgetEditor is the budget section of a page of one tenant.
	BudgetEditor *BudgetEditor
	// AnomalyAPI serves the anomaly routes the list's buttons go through.
	AnomalyAPI *anomalies.Handlers
	// Host names the tenants.
	Host *sdk.Host
	// Now is the clock that says which day is today (UTC); nil is
	// time.Now.
	Now func() time.Time

	anomalyAPI sdk.LocalAPI
}

// Routes are the routes of the page's buttons, forms and panels: the
// anomaly list's, an anomaly's drill-down and the budget editor's.
func (h *Handlers) Routes() []sdk.Route {
	return slices.Concat(h.anomalyRoutes(), []sdk.Route{h.breakdownRoute()}, h.BudgetEditor.Routes())
}

// Views are the dashboard card, the anomaly list and the cost analysis
// (each placed by its page itself, in the slot "costs"), the cost page and
// the cost analysis page, and their navigation entries.
func (h *Handlers) Views() ([]sdk.Fragment, []sdk.Page, []sdk.NavEntry) {
	return []sdk.Fragment{
			{Path: CardPath, Title: "Cost summary", Slot: "dashboard", RefreshSeconds: CardRefreshSeconds, Handler: h.card},
			{Path: AnomaliesPath, Title: "Cost anomalies to acknowledge", Slot: "costs", Handler: h.anomalyFragment},
			{Path: AnalysisPath, Title: "Cost analysis", Slot: "costs", Handler: h.analysisFragment},
		},
		[]sdk.Page{{Path: PagePath, Title: "Costs", Handler: h.page}, {Path: AnalysisPagePath, Title: "Cost analysis", Handler: h.analysisPage}},
		[]sdk.NavEntry{{Label: "Costs", Path: PagePath, Order: 20}, {Label: "Cost analysis", Path: AnalysisPagePath, Order: 21}}
}

func (h *Handlers) today() ledger.Day {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	return ledger.DayOf(now())
}

// money is an amount as people read it, exactly: its figure, then its
// currency.
func money(a ledger.Amount, currency string) string { return figure(a) + " " + currency }

// figure is an amount exactly: its cents as ledger.Amount writes them,
// thousands separated by commas as the kit's numbers are.
func figure(a ledger.Amount) string {
	s, sign := a.String(), ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		s, sign = rest, "-"
	}
	whole, cents, _ := strings.Cut(s, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String() + "." + cents
}

// byCurrency splits a zero-filled trend into each currency's daily costs,
// the currencies in order; the days without any costs (null currency)
// belong to none.
func byCurrency(days []reports.DayCost) ([]string, map[string][]float64) {
	var currencies []string
	series := map[string][]float64{}
	for _, d := range days {
		if d.Currency == nil {
			continue
		}
		c := *d.Currency
		if _, ok := series[c]; !ok {
			currencies = append(currencies, c)
		}
		series[c] = append(series[c], d.TotalCost.Float())
	}
	slices.Sort(currencies)
	return currencies, series
}

// dayLabels are the dates of the days from through to, as the charts
// label them.
func dayLabels(from, to ledger.Day) []string {
	out := make([]string, 0, max(0, int(to-from)+1))
	for d := from; d <= to; d++ {
		out = append(out, d.String())
	}
	return out
}

// statusHealth is the colour of a budget's status.
func statusHealth(status string) sdkui.Health {
	switch status {
	case budgets.StatusActive:
		return sdkui.OK
	case budgets.StatusWarning:
		return sdkui.Warning
	case budgets.StatusCritical, budgets.StatusExceeded:
		return sdkui.Critical
	}
	return sdkui.Unknown
}

// capitalize upper-cases a status's first letter.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// markup is the views' own HTML beside the kit's components, on the host's
// CSS classes. No script and no style attribute: the host's
// Content-Security-Policy forbids both.
var markup = template.Must(template.New("views").Parse(`
{{- define "note"}}<p class="muted">{{.}}</p>{{end}}
{{- define "lines"}}{{.Main}}<br><span class="muted">{{.Detail}}</span>{{end}}
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
{{- define "link"}}<p><a href="{{.Href}}">{{.Text}}</a></p>{{end}}

{{- define "allocation" -}}
<form class="stack" method="get" action="/api/v1/costs/allocation/chargeback">
<p class="muted">One row per cost centre and currency: its direct cost, its part of the shared costs and their total.</p>
<div class="swatches">
<div class="field"><label for="allocation-start">First day</label><input id="allocation-start" type="date" name="start_date" value="{{.Start}}" required></div>
<div class="field"><label for="allocation-end">Last day</label><input id="allocation-end" type="date" name="end_date" value="{{.End}}" required></div>
</div>
<input type="hidden" name="brand_id" value="{{.BrandID}}">
<input type="hidden" name="format" value="csv">
<div><button class="btn btn-primary" type="submit">Download CSV</button></div>
</form>
{{- end}}
{{- define "chargeback" -}}
<form class="stack" method="get" action="{{.Action}}">
<p class="muted">{{.Scope}} One row per tenant, day and service, costs with two decimals; the totals match the cost summary's to the cent.</p>
<div class="swatches">
<div class="field"><label for="chargeback-start">First day</label><input id="chargeback-start" type="date" name="start_date" value="{{.Start}}" required></div>
<div class="field"><label for="chargeback-end">Last day</label><input id="chargeback-end" type="date" name="end_date" value="{{.End}}" required></div>
</div>
<input type="hidden" name="format" value="csv">
<div><button class="btn btn-primary" type="submit">Download CSV</button></div>
</form>
{{- end}}
`))

// twoLines is a table cell of a value over a muted detail.
func twoLines(main, detail string) template.HTML {
	return render("lines", struct{ Main, Detail string }{main, detail})
}

// stack spaces blocks one under the other, as the kit's Join does not.
func stack(parts ...template.HTML) template.HTML { return render("stack", parts) }

// render executes one of markup's templates. Their data are this package's
// own, which they cannot fail on, so an error is a bug here.
func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := markup.ExecuteTemplate(&b, name, data); err != nil {
		panic("views: " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
