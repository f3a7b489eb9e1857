package views

import (
	"context"
	"html/template"
	"net/url"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// BreakdownPath is an anomaly's drill-down: the day's cost of its
// service by resource, which its row's panel loads when opened.
const BreakdownPath = "/partials/cost-breakdown"

// resourcePagePath is the resources plugin's page of one resource, named
// by its ARM id in resource_id: where each resource of a breakdown leads.
const resourcePagePath = "/resources/item"

type breakdownIn struct {
	FormTenant
	Date    string `query:"date" required:"true" format:"date" doc:"The day (UTC)"`
	Service string `query:"service" required:"true" minLength:"1" maxLength:"256" doc:"The service"`
}

func (h *Handlers) breakdownRoute() sdk.Route {
	return sdk.Get(BreakdownPath, sdk.Op{ID: "costs-breakdown-panel", Tags: []string{"Costs"}, Summary: "The cost page's drill-down of an anomaly",
		Description: "The tenant's cost of the service on the day by resource, as GET /api/v1/costs/daily-breakdown?by=resource reads it, as HTML.",
		Responses:   map[string]*huma.Response{"200": htmlResponse("The breakdown's table")}}, h.breakdown)
}

func (h *Handlers) breakdown(ctx context.Context, in *breakdownIn) (*fragment, error) {
	d, err := ledger.ParseDay(in.Date)
	if err != nil {
		return nil, sdk.Invalid("query.date", "expected a date YYYY-MM-DD")
	}
	items, err := h.Reports.DayBreakdown(ctx, string(in.Tenant), d, in.Service, reports.ByResource)
	if err != nil {
		return nil, err
	}
	return htmlOf(breakdownTable(items, in.Service, d)), nil
}

// breakdownTable is the day's cost of the service by resource, each
// linking its page, with each currency's total.
func breakdownTable(items []reports.GroupCost, service string, d ledger.Day) template.HTML {
	if len(items) == 0 {
		return sdkui.Empty("No costs of " + service + " on " + d.String() + " in the ledger any more: the provider restated the day.")
	}
	rows := make([][]any, 0, len(items))
	for _, it := range items {
		var resource any = it.Label
		if it.ResourceID != nil && *it.ResourceID != "" {
			resource = render("anchor", struct{ Href, Text string }{resourcePagePath + "?resource_id=" + url.QueryEscape(*it.ResourceID), it.Label})
		}
		rows = append(rows, []any{resource, it.SubscriptionID, money(it.Cost, it.Currency)})
	}
	totals := ""
	for i, t := range reports.Totals(items) {
		if i > 0 {
			totals += ", "
		}
		totals += money(t.TotalCost, t.Currency)
	}
	return stack(
		sdkui.Table([]string{"Resource", "Subscription", "Cost"}, rows, "Cost of "+service+" on "+d.String()+" by resource, costliest first"),
		render("note", strconv.Itoa(len(items))+" resources, "+totals+" in all. Costs that name no resource (support, some marketplace and tax lines) are one row."),
	)
}

// breakdownPanel is an anomaly's panel that loads its drill-down when
// opened.
func breakdownPanel(a anomalies.Anomaly) template.HTML {
	q := url.Values{"tenant_id": {a.TenantID}, "date": {a.Day.String()}, "service": {a.Service}}
	return render("breakdown-panel", struct{ Path, Service, Date string }{BreakdownPath + "?" + q.Encode(), a.Service, a.Day.String()})
}

func init() {
	template.Must(markup.New("breakdown").Parse(`
{{- define "anchor"}}<a href="{{.Href}}">{{.Text}}</a>{{end}}

{{- define "breakdown-panel" -}}
<details class="cost-breakdown" hx-get="{{.Path}}" hx-trigger="toggle once" hx-target="find .cost-breakdown-body" hx-swap="innerHTML">
<summary>Cost by resource<span class="visually-hidden"> of {{.Service}} on {{.Date}}</span></summary>
<div class="cost-breakdown-body" aria-live="polite">Loading…</div>
</details>
{{- end}}
`))
}
