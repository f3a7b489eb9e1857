package views

import (
	"cmp"
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the cost analysis.
const (
	// AnalysisPagePath is the cost analysis page.
	AnalysisPagePath = "/costs/analysis"
	// AnalysisPath is its result with its form, which the form reloads.
	AnalysisPath = "/partials/cost-analysis"
	apiAnalysis  = "/api/v1/costs/analysis"
	apiFocus     = "/api/v1/costs/focus"
)

// What the analysis shows.
const (
	// analysisPageSize is how many groups a page of the table has.
	analysisPageSize = 10
	// chartedGroups is how many of a currency's groups of the page its
	// chart draws: as many as the kit's line chart has colours.
	chartedGroups = 4
)

// groupLabels name the groupings in the form.
var groupLabels = map[string]string{reports.GroupService: "Service", reports.GroupResourceGroup: "Resource group",
	reports.GroupSubscription: "Subscription", reports.GroupTenant: "Tenant", reports.GroupResource: "Resource", reports.GroupTag: "Tag"}

// columnLabels name the table's group columns.
var columnLabels = map[string]string{"service": "Service", "subscription_id": "Subscription", "resource_group": "Resource group",
	"tenant_id": "Tenant id", "tenant_name": "Tenant", "resource_id": "Resource id", "resource": "Resource", "tag_value": "Tag value"}

// analysisForm is the analysis a request asks for, as its query has it.
// Service, Subscription, ResourceGroup and Tags may each list several
// values, separated by commas.
type analysisForm struct {
	// Brand is the picked brand's id (brand_id), which the form and its
	// links carry so that the host keeps narrowing them to its tenants.
	Tenant, Brand, GroupBy, TagKey, Grain, Metric, Start, End, Service, Subscription, ResourceGroup, Tags string
	Offset                                                                                                int
}

func analysisFormOf(q url.Values) analysisForm {
	offset, _ := strconv.Atoi(q.Get("offset"))
	return analysisForm{Tenant: q.Get("tenant_id"), Brand: q.Get("brand_id"), GroupBy: cmp.Or(q.Get("group_by"), reports.GroupService), TagKey: q.Get("tag_key"),
		Grain: cmp.Or(q.Get("grain"), reports.GrainDaily), Metric: cmp.Or(q.Get("metric"), string(reports.Actual)), Start: q.Get("start_date"), End: q.Get("end_date"), Service: q.Get("service"),
		Subscription: q.Get("subscription_id"), ResourceGroup: q.Get("resource_group"), Tags: q.Get("tags"), Offset: max(offset, 0)}
}

// list is a field's values: its text split at commas, each trimmed, the
// empty left out.
func list(field string) []string {
	var out []string
	for _, v := range strings.Split(field, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// apiQuery is the analysis route's query of the form's page, in the
// format given.
func (f analysisForm) apiQuery(tenants []string, rng reports.Range, format string) url.Values {
	q := f.focusQuery(tenants, rng)
	for k, v := range map[string]string{"group_by": f.GroupBy, "grain": f.Grain, "metric": f.Metric,
		"limit": strconv.Itoa(analysisPageSize), "offset": strconv.Itoa(f.Offset), "format": format} {
		q.Set(k, v)
	}
	if f.GroupBy == reports.GroupTag {
		q.Set("tag_key", strings.TrimSpace(f.TagKey))
	}
	for k, v := range map[string]string{"services": f.Service, "subscription_ids": f.Subscription, "resource_groups": f.ResourceGroup, "tags": f.Tags} {
		if values := list(v); len(values) > 0 {
			q[k] = values
		}
	}
	return q
}

// focusQuery is the query of the FOCUS export of the form's tenants (or
// brand) over rng: every cost of the range, whatever the filters.
func (f analysisForm) focusQuery(tenants []string, rng reports.Range) url.Values {
	q := url.Values{"start_date": {rng.From.String()}, "end_date": {rng.To.String()}}
	if f.Tenant != "" {
		q["tenant_ids"] = tenants
	} else if f.Brand != "" {
		q.Set("brand_id", f.Brand)
	}
	return q
}

// query is the form's own query at another offset.
func (f analysisForm) query(offset int) string {
	q := url.Values{"group_by": {f.GroupBy}, "grain": {f.Grain}, "metric": {f.Metric}, "offset": {strconv.Itoa(offset)}}
	for k, v := range map[string]string{"tenant_id": f.Tenant, "brand_id": f.Brand, "tag_key": f.TagKey, "start_date": f.Start, "end_date": f.End, "service": f.Service,
		"subscription_id": f.Subscription, "resource_group": f.ResourceGroup, "tags": f.Tags} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

// analysisQuery reads the form into the store's query, or says what is
// wrong with it.
func (f analysisForm) analysisQuery(tenants []string, today ledger.Day) (reports.AnalysisQuery, string) {
	q := reports.AnalysisQuery{Tenants: tenants, GroupBy: f.GroupBy, TagKey: strings.TrimSpace(f.TagKey), Grain: f.Grain,
		Metric: reports.Metric(f.Metric), Limit: analysisPageSize, Offset: f.Offset}
	if groupLabels[f.GroupBy] == "" {
		return q, "Group by one of service, resource group, subscription, tenant, resource and tag."
	}
	if f.GroupBy == reports.GroupTag && q.TagKey == "" {
		return q, "Name the tag to group by, such as cost-center."
	}
	tags, err := reports.ParseTagFilters("tags", list(f.Tags))
	if err != nil {
		return q, "Write each tag filter as key=value, such as env=prod, separated by commas."
	}
	q.Tags = tags
	if f.Grain != reports.GrainDaily && f.Grain != reports.GrainMonthly {
		return q, "The grain is daily or monthly."
	}
	if q.Metric != reports.Actual && q.Metric != reports.Amortized {
		return q, "The cost is actual or amortized."
	}
	rng, err := reports.DateRange(reports.RangeParams{StartDate: f.Start, EndDate: f.End}, 30, today)
	var p *sdk.Problem
	if errors.As(err, &p) && len(p.Errors) > 0 {
		return q, "The dates: " + p.Errors[0].Message + "."
	}
	if err != nil {
		return q, err.Error()
	}
	q.Range = rng
	q.Services, q.SubscriptionIDs, q.ResourceGroups = list(f.Service), list(f.Subscription), list(f.ResourceGroup)
	return q, ""
}

// analysisPage is the cost analysis page: its form and its result.
func (h *Handlers) analysisPage(w http.ResponseWriter, r *http.Request) {
	html, err := h.analysis(r.Context(), sdkui.Tenants(r), analysisFormOf(r.URL.Query()))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, sdkui.Card("Costs by group and period", stack(render("note", "The costs of your tenants summed by service, resource group, "+
		"subscription, tenant, resource or a tag's value, per day or month, each currency apart, as billed (actual) or with reservations and savings plans "+
		"spread over their terms (amortized). Filters take several values separated by commas. Tags are the resources' tags as at the last cost sync."), html)))
}

// analysisFragment is the result with its form, which the form reloads.
func (h *Handlers) analysisFragment(w http.ResponseWriter, r *http.Request) {
	html, err := h.analysis(r.Context(), sdkui.Tenants(r), analysisFormOf(r.URL.Query()))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, html)
}

// analysis is the form and, below it, the analysis it asks for: a chart
// of each currency's costliest groups of the page, the page's table, a
// pager and the CSV of exactly the table; or why the form is refused.
func (h *Handlers) analysis(ctx context.Context, tenants []string, f analysisForm) (template.HTML, error) {
	q, refused := f.analysisQuery(tenants, h.today())
	body := sdkui.ErrorState(refused)
	if refused == "" {
		a, err := h.Reports.Analyse(ctx, q)
		if err != nil {
			return "", err
		}
		if err := reports.NameTenants(ctx, h.Host, &a); err != nil {
			return "", err
		}
		body = analysisResult(a, f, f.apiQuery(tenants, q.Range, "csv"), f.focusQuery(tenants, q.Range))
	}
	return render("analysis", struct {
		Form                 analysisForm
		Action               string
		Groups, Grains       []formChoice
		Metrics              []formChoice
		Body                 template.HTML
		DefaultStart, Period string
	}{f, AnalysisPath, analysisGroups(f.GroupBy), choices([]string{reports.GrainDaily, reports.GrainMonthly}, f.Grain),
		choices([]string{string(reports.Actual), string(reports.Amortized)}, f.Metric), body,
		q.Range.From.String(), q.Range.To.String()}), nil
}

func analysisGroups(selected string) []formChoice {
	out := make([]formChoice, len(reports.Groupings))
	for i, g := range reports.Groupings {
		out[i] = formChoice{Value: g, Label: groupLabels[g], Selected: g == selected}
	}
	return out
}

// analysisResult is a page of the analysis: charts, table, pager, CSV,
// and the range's FOCUS export.
func analysisResult(a reports.Analysis, f analysisForm, csvQuery, focusQuery url.Values) template.HTML {
	if a.Total == 0 {
		return sdkui.Empty("No costs match, " + a.StartDate.String() + " to " + a.EndDate.String() + ".")
	}
	if len(a.Items) == 0 {
		return sdkui.Empty("No rows after the first " + strconv.Itoa(a.Total) + ".")
	}
	columns := []string{}
	for _, c := range reports.AnalysisColumns(a.GroupBy) {
		columns = append(columns, columnLabels[c])
	}
	columns = append(append(append(columns, "Currency"), a.Periods...), "Total")
	rows := make([][]any, 0, len(a.Items))
	for _, g := range a.Items {
		row := []any{}
		for _, c := range reports.AnalysisCells(a.GroupBy, g) {
			row = append(row, c)
		}
		row = append(row, g.Currency)
		for _, c := range g.Costs {
			row = append(row, figure(c))
		}
		rows = append(rows, append(row, figure(g.Total)))
	}
	what := groupLabels[a.GroupBy]
	parts := analysisCharts(a)
	parts = append(parts, sdkui.PivotTable(columns, rows, "Cost by "+what+", "+a.Grain+", "+a.StartDate.String()+" to "+a.EndDate.String()+", costliest first"))
	totals := ""
	for i, t := range a.Totals {
		if i > 0 {
			totals += ", "
		}
		totals += money(t.TotalCost, t.Currency)
	}
	prev, next := "", ""
	if a.Offset > 0 {
		prev = AnalysisPath + "?" + f.query(max(a.Offset-analysisPageSize, 0))
	}
	if a.Offset+len(a.Items) < a.Total {
		next = AnalysisPath + "?" + f.query(a.Offset+analysisPageSize)
	}
	parts = append(parts, render("analysis-pager", struct {
		Text, Prev, Next, CSV, Focus string
	}{"Rows " + strconv.Itoa(a.Offset+1) + " to " + strconv.Itoa(a.Offset+len(a.Items)) + " of " + strconv.Itoa(a.Total) + "; all of them: " + totals + ".",
		prev, next, apiAnalysis + "?" + csvQuery.Encode(), apiFocus + "?" + focusQuery.Encode()}))
	return stack(parts...)
}

// analysisCharts are a line chart per currency of the page's costliest
// groups in it over the periods.
func analysisCharts(a reports.Analysis) []template.HTML {
	var currencies []string
	series := map[string][]sdkui.Series{}
	for _, g := range a.Items {
		if !slices.Contains(currencies, g.Currency) {
			currencies = append(currencies, g.Currency)
		}
		if len(series[g.Currency]) == chartedGroups {
			continue
		}
		values := make([]float64, len(g.Costs))
		for i, c := range g.Costs {
			values[i] = c.Float()
		}
		series[g.Currency] = append(series[g.Currency], sdkui.Series{Name: g.Label, Values: values})
	}
	slices.Sort(currencies)
	out := make([]template.HTML, 0, len(currencies))
	for _, c := range currencies {
		title := map[string]string{reports.GrainDaily: "Daily", reports.GrainMonthly: "Monthly"}[a.Grain] + " cost in " + c + " of the page's " +
			strconv.Itoa(len(series[c])) + " costliest by " + groupLabels[a.GroupBy]
		out = append(out, sdkui.LineChart(title, a.Periods, series[c], nil))
	}
	return out
}

func init() {
	template.Must(markup.New("analysis").Parse(`
{{- define "analysis" -}}
<div class="stack" id="cost-analysis">
<form class="swatches" method="get" action="{{.Action}}" hx-get="{{.Action}}" hx-trigger="change, submit" hx-target="#cost-analysis" hx-swap="outerHTML" aria-label="What the analysis shows">
{{- if .Form.Tenant}}<input type="hidden" name="tenant_id" value="{{.Form.Tenant}}">{{else if .Form.Brand}}<input type="hidden" name="brand_id" value="{{.Form.Brand}}">{{end}}
<div class="field"><label for="cost-analysis-group">Group by</label><select id="cost-analysis-group" name="group_by">
{{- range .Groups}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end}}</select></div>
<div class="field"><label for="cost-analysis-tag-key">Tag to group by</label><input id="cost-analysis-tag-key" type="text" name="tag_key" value="{{.Form.TagKey}}" placeholder="cost-center"></div>
<div class="field"><label for="cost-analysis-grain">Grain</label><select id="cost-analysis-grain" name="grain">
{{- range .Grains}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end}}</select></div>
<div class="field"><label for="cost-analysis-metric">Cost</label><select id="cost-analysis-metric" name="metric">
{{- range .Metrics}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end}}</select></div>
<div class="field"><label for="cost-analysis-start">From</label><input id="cost-analysis-start" type="date" name="start_date" value="{{or .Form.Start .DefaultStart}}"></div>
<div class="field"><label for="cost-analysis-end">To</label><input id="cost-analysis-end" type="date" name="end_date" value="{{or .Form.End .Period}}"></div>
<div class="field"><label for="cost-analysis-service">Services</label><input id="cost-analysis-service" type="text" name="service" value="{{.Form.Service}}"></div>
<div class="field"><label for="cost-analysis-subscription">Subscriptions</label><input id="cost-analysis-subscription" type="text" name="subscription_id" value="{{.Form.Subscription}}"></div>
<div class="field"><label for="cost-analysis-rg">Resource groups</label><input id="cost-analysis-rg" type="text" name="resource_group" value="{{.Form.ResourceGroup}}"></div>
<div class="field"><label for="cost-analysis-tags">Tags</label><input id="cost-analysis-tags" type="text" name="tags" value="{{.Form.Tags}}" placeholder="env=prod"></div>
<div><button class="btn" type="submit">Apply</button></div>
</form>
{{- .Body}}</div>
{{- end}}

{{- define "analysis-pager" -}}
<div class="stack"><p class="muted">{{.Text}}</p><div>
{{- if .Prev}}<button class="btn btn-small" type="button" hx-get="{{.Prev}}" hx-target="#cost-analysis" hx-swap="outerHTML">Previous rows</button> {{end}}
{{- if .Next}}<button class="btn btn-small" type="button" hx-get="{{.Next}}" hx-target="#cost-analysis" hx-swap="outerHTML">Next rows</button> {{end}}
<a class="btn" href="{{.CSV}}" download>Download this table as CSV</a>
<a class="btn btn-small" href="{{.Focus}}" download title="Every cost of the range, one row per resource, service and day, without the filters">Download the range as FOCUS 1.2 CSV</a></div></div>
{{- end}}
`))
}
