package views

import (
	"cmp"
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// anomalyActionPath acknowledges an anomaly with the list's note (POST)
// or undoes its acknowledgement (DELETE), and answers the list.
const anomalyActionPath = AnomaliesPath + "/{anomaly_id}/acknowledge"

// The anomaly list's statuses: those to acknowledge, those acknowledged,
// or all.
const (
	statusOpen         = "open"
	statusAcknowledged = "acknowledged"
	statusAll          = "all"
)

// anomalyFilter is what the anomaly list shows: of the tenant the page
// is scoped to (all the caller's when empty), of a status, of the costs of
// the days from Start through End (either may be empty).
type anomalyFilter struct {
	// Brand is the picked brand's id (brand_id), which the filter's form
	// and links carry so that the host keeps narrowing them to its tenants.
	Tenant, Brand, Status, Start, End string
}

func filterOf(q url.Values) anomalyFilter {
	return anomalyFilter{Tenant: q.Get("tenant_id"), Brand: q.Get("brand_id"), Status: cmp.Or(q.Get("status"), statusOpen), Start: q.Get("start_date"), End: q.Get("end_date")}
}

// query is the filter as a query string, "" or starting with "?".
func (f anomalyFilter) query() string {
	q := url.Values{}
	for k, v := range map[string]string{"tenant_id": f.Tenant, "brand_id": f.Brand, "start_date": f.Start, "end_date": f.End} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Status != statusOpen {
		q.Set("status", f.Status)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// listQuery is the store's query of the filter, newest day first, or why
// the filter is refused.
func (f anomalyFilter) listQuery(tenants []string) (anomalies.ListQuery, string) {
	q := anomalies.ListQuery{TenantIDs: tenants, SortBy: "date", Desc: true, Limit: anomaliesShown}
	switch f.Status {
	case statusOpen, statusAcknowledged:
		acknowledged := f.Status == statusAcknowledged
		q.Acknowledged = &acknowledged
	case statusAll:
	default:
		return q, "The status must be one of open, acknowledged and all."
	}
	for _, d := range []struct {
		s   string
		dst **ledger.Day
	}{{f.Start, &q.From}, {f.End, &q.To}} {
		if d.s == "" {
			continue
		}
		day, err := ledger.ParseDay(d.s)
		if err != nil {
			return q, "The dates must be YYYY-MM-DD."
		}
		*d.dst = &day
	}
	if q.From != nil && q.To != nil && *q.To < *q.From {
		return q, "The last day must not be before the first."
	}
	return q, ""
}

// anomalyFragment is the anomaly list on its own, which its filter form
// reloads.
func (h *Handlers) anomalyFragment(w http.ResponseWriter, r *http.Request) {
	list, err := h.anomalyList(r.Context(), sdkui.Tenants(r), filterOf(r.URL.Query()), "")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, list)
}

// anomalyList is the anomalies of the filter, newest day first: each one
// to acknowledge with a note field and an Acknowledge button, each
// acknowledged with its note and an Undo button, after a notice of what
// was just done.
func (h *Handlers) anomalyList(ctx context.Context, tenants []string, f anomalyFilter, notice template.HTML) (template.HTML, error) {
	q, refused := f.listQuery(tenants)
	body := sdkui.ErrorState(refused)
	if refused == "" {
		items, total, err := h.Anomalies.List(ctx, q)
		if err != nil {
			return "", err
		}
		if body, err = h.anomalyTable(ctx, items, total, f); err != nil {
			return "", err
		}
	}
	return render("anomalies", struct {
		Filter            anomalyFilter
		Action, Tenant    string
		Notice, Body      template.HTML
		Open, Acked, Both bool
	}{f, AnomaliesPath, f.Tenant, notice, body, f.Status == statusOpen, f.Status == statusAcknowledged, f.Status == statusAll}), nil
}

// anomalyTable is the rows of the list and how many match.
func (h *Handlers) anomalyTable(ctx context.Context, items []anomalies.Anomaly, total int64, f anomalyFilter) (template.HTML, error) {
	if total == 0 {
		if f.Status == statusOpen && f.Start == "" && f.End == "" {
			return sdkui.Empty("No anomalies to acknowledge."), nil
		}
		return sdkui.Empty("No anomalies match."), nil
	}
	ids := make([]string, len(items))
	for i, a := range items {
		ids[i] = a.TenantID
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	if err != nil {
		return "", err
	}
	rows := make([][]any, 0, len(items))
	for _, a := range items {
		path := strings.Replace(anomalyActionPath, "{anomaly_id}", strconv.FormatInt(a.ID, 10), 1) + f.query()
		action := struct {
			Path, Service, Date, ID string
			Acknowledged            bool
			At                      template.HTML
			Note                    string
		}{Path: path, Service: a.Service, Date: a.Day.String(), ID: strconv.FormatInt(a.ID, 10), Acknowledged: a.Acknowledged}
		if a.AcknowledgedAt != nil {
			action.At = sdkui.Time(*a.AcknowledgedAt)
		}
		if a.Note != nil {
			action.Note = *a.Note
		}
		// Four columns, each of two lines, so that the buttons stay in
		// view in a narrow slot.
		rows = append(rows, []any{
			sdkui.Join(twoLines(a.Service, names[a.TenantID]+" · "+a.Day.String()), breakdownPanel(a)),
			twoLines(money(a.Actual, a.Currency), "expected "+money(a.Expected, a.Currency)),
			twoLines("+"+money(a.Impact, a.Currency), "+"+sdkui.FormatNumber(a.DeviationPercent)+" %"),
			render("anomaly-action", action),
		})
	}
	what := map[string]string{statusOpen: "anomalies not yet acknowledged", statusAcknowledged: "acknowledged anomalies", statusAll: "anomalies"}[f.Status]
	return sdkui.Join(
		sdkui.Table([]string{"Anomaly", "Cost", "Impact", "Action"}, rows, "Cost anomalies, newest first"),
		render("note", strconv.Itoa(len(items))+" of "+strconv.FormatInt(total, 10)+" "+what+", newest first. "+
			"A day is anomalous when its cost of a service rises far above the same weekday's median of the four weeks before."),
	), nil
}

// AnomalyAction names the anomaly of a list's button and the list's
// filter, which the answer keeps.
type AnomalyAction struct {
	// No minimum: an id no anomaly has is 404 once the tenant is
	// admitted, so a caller outside it is refused whatever id it names.
	ID        int64        `path:"anomaly_id"`
	Tenant    sdk.TenantID `query:"tenant_id" doc:"The tenant the list is scoped to; all the caller's when absent"`
	Status    string       `query:"status" enum:"open,acknowledged,all" default:"open" doc:"The list's status filter"`
	StartDate string       `query:"start_date" format:"date" doc:"The list's first day"`
	EndDate   string       `query:"end_date" format:"date" doc:"The list's last day"`
}

type anomalyAckIn struct {
	AnomalyAction
	RawBody []byte `contentType:"application/x-www-form-urlencoded"`
}

// anomalyNoteForm documents the acknowledgement's form.
type anomalyNoteForm struct {
	Note string `json:"note,omitempty" required:"false" maxLength:"1000" doc:"Why the anomaly needs no more attention; optional"`
}

// anomalyRoutes are the anomaly list's button routes.
func (h *Handlers) anomalyRoutes() []sdk.Route {
	h.anomalyAPI.Routes = h.AnomalyAPI.Routes
	tags := []string{"Costs"}
	list := htmlResponse("The anomaly list")
	notFound := &huma.Response{Description: "No such anomaly, or one of a tenant the caller may not see"}
	return []sdk.Route{
		sdk.Post(anomalyActionPath, sdk.Op{ID: "costs-anomalies-list-acknowledge", Tags: tags, Summary: "Acknowledge an anomaly from the cost page's list",
			Description: "Acknowledges the anomaly with the form's note as POST /api/v1/costs/anomalies/{anomaly_id}/acknowledge does (audited), and answers the list " +
				"of the query's filter as HTML, saying what was done, with an Undo button. A note the API refuses is said in the list.",
			RequestBody: formBody(anomalyNoteForm{}), Responses: map[string]*huma.Response{"200": list, "404": notFound}}, h.acknowledgeFromList),
		sdk.Delete(anomalyActionPath, sdk.Op{ID: "costs-anomalies-list-unacknowledge", Tags: tags, Summary: "Undo an anomaly's acknowledgement from the cost page's list",
			Description: "Undoes it as DELETE /api/v1/costs/anomalies/{anomaly_id}/acknowledge does (audited), and answers the list of the query's filter as HTML.",
			Status:      http.StatusOK, Responses: map[string]*huma.Response{"200": list, "404": notFound}}, h.unacknowledgeFromList),
	}
}

// anomalyOutcome is an answer of the anomaly API, as the list shows it.
type anomalyOutcome struct {
	Anomaly anomalies.Anomaly `json:"anomaly"`
}

// callAnomaly calls the anomaly API as the caller, whose tenants the API
// checks against the anomaly's itself, and reads the anomaly it answers.
// A refusal the caller can act on (a note too long) is the notice; any
// other is the error.
func (h *Handlers) callAnomaly(ctx context.Context, method string, in AnomalyAction, body any) (*anomalies.Anomaly, template.HTML, error) {
	if in.ID < 1 {
		return nil, "", sdk.NotFound("no anomaly " + strconv.FormatInt(in.ID, 10))
	}
	path := "/api/v1/costs/anomalies/" + strconv.FormatInt(in.ID, 10) + "/acknowledge"
	a, err := h.anomalyAPI.Call(ctx, "", method, path, body)
	if err != nil {
		return nil, "", err
	}
	switch {
	case a.Status == http.StatusOK:
		var out anomalyOutcome
		if err := a.Decode(&out); err != nil {
			return nil, "", err
		}
		return &out.Anomaly, "", nil
	case a.Status == http.StatusUnprocessableEntity:
		p := a.Problem()
		msg := cmp.Or(p.Detail, p.Title)
		if len(p.Errors) > 0 {
			msg = p.Errors[0].Message
		}
		return nil, render("anomaly-notice", struct{ Text, Undo string }{"The anomaly was not acknowledged: the note " + msg + ".", ""}), nil
	}
	return nil, "", a.Problem()
}

func (in AnomalyAction) filter() anomalyFilter {
	return anomalyFilter{Tenant: string(in.Tenant), Status: in.Status, Start: in.StartDate, End: in.EndDate}
}

// listAfter answers the list of the request's filter with the notice.
func (h *Handlers) listAfter(ctx context.Context, in AnomalyAction, notice template.HTML) (*fragment, error) {
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	if in.Tenant != "" {
		tenants = []string{string(in.Tenant)}
	}
	list, err := h.anomalyList(ctx, tenants, in.filter(), notice)
	if err != nil {
		return nil, err
	}
	return htmlOf(list), nil
}

func (h *Handlers) acknowledgeFromList(ctx context.Context, in *anomalyAckIn) (*fragment, error) {
	form, err := sdkui.ParseForm(in.RawBody, maxForm)
	if err != nil {
		return nil, err
	}
	body := map[string]any{}
	if note := form.Get("note"); note != "" {
		body["note"] = note
	}
	a, notice, err := h.callAnomaly(ctx, http.MethodPost, in.AnomalyAction, body)
	if err != nil {
		return nil, err
	}
	if a != nil {
		text := "Acknowledged the anomaly of " + a.Service + " on " + a.Day.String()
		if a.Note != nil {
			text += ", noting “" + *a.Note + "”"
		}
		notice = render("anomaly-notice", struct{ Text, Undo string }{text + ".",
			strings.Replace(anomalyActionPath, "{anomaly_id}", strconv.FormatInt(a.ID, 10), 1) + in.filter().query()})
	}
	return h.listAfter(ctx, in.AnomalyAction, notice)
}

func (h *Handlers) unacknowledgeFromList(ctx context.Context, in *AnomalyAction) (*fragment, error) {
	a, notice, err := h.callAnomaly(ctx, http.MethodDelete, *in, nil)
	if err != nil {
		return nil, err
	}
	if a != nil {
		notice = render("anomaly-notice", struct{ Text, Undo string }{"The anomaly of " + a.Service + " on " + a.Day.String() + " is to acknowledge again.", ""})
	}
	return h.listAfter(ctx, *in, notice)
}

func init() {
	template.Must(markup.New("anomaly-list").Parse(`
{{- define "anomalies" -}}
<div class="stack" id="cost-anomalies">
<form class="swatches" method="get" action="{{.Action}}" hx-get="{{.Action}}" hx-target="#cost-anomalies" hx-swap="outerHTML" aria-label="Filter the anomalies">
{{- if .Tenant}}<input type="hidden" name="tenant_id" value="{{.Tenant}}">{{else if .Filter.Brand}}<input type="hidden" name="brand_id" value="{{.Filter.Brand}}">{{end}}
<div class="field"><label for="cost-anomalies-status">Show</label><select id="cost-anomalies-status" name="status">
<option value="open"{{if .Open}} selected{{end}}>To acknowledge</option><option value="acknowledged"{{if .Acked}} selected{{end}}>Acknowledged</option><option value="all"{{if .Both}} selected{{end}}>All</option></select></div>
<div class="field"><label for="cost-anomalies-start">From</label><input id="cost-anomalies-start" type="date" name="start_date" value="{{.Filter.Start}}"></div>
<div class="field"><label for="cost-anomalies-end">To</label><input id="cost-anomalies-end" type="date" name="end_date" value="{{.Filter.End}}"></div>
<div><button class="btn" type="submit">Apply</button></div>
</form>
{{- .Notice}}{{.Body}}</div>
{{- end}}

{{- define "anomaly-notice" -}}
<p role="status">{{.Text}}{{if .Undo}} <button class="btn btn-small cost-undo" type="button" hx-delete="{{.Undo}}" hx-target="#cost-anomalies" hx-swap="outerHTML" hx-disabled-elt="this">Undo</button>{{end}}</p>
{{- end}}

{{- define "anomaly-action" -}}
{{- if .Acknowledged -}}
<span class="muted">Acknowledged {{.At}}</span>{{if .Note}}<br>“{{.Note}}”{{end}}<br>
<button class="btn btn-small cost-undo" type="button" hx-delete="{{.Path}}" hx-target="#cost-anomalies" hx-swap="outerHTML" hx-disabled-elt="this">Undo<span class="visually-hidden"> the acknowledgement of {{.Service}} on {{.Date}}</span></button>
{{- else -}}
<form method="post" action="{{.Path}}" hx-post="{{.Path}}" hx-target="#cost-anomalies" hx-swap="outerHTML" hx-disabled-elt="find button">
<label class="visually-hidden" for="cost-anomaly-{{.ID}}-note">Note on the anomaly of {{.Service}} on {{.Date}} (optional)</label>
<input id="cost-anomaly-{{.ID}}-note" type="text" name="note" maxlength="1000" placeholder="Note (optional)">
<button class="btn btn-small cost-ack" type="submit">Acknowledge<span class="visually-hidden"> the anomaly of {{.Service}} on {{.Date}}</span></button>
</form>
{{- end -}}
{{- end}}
`))
}
