package reports

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the DMARC page's report section and of its form.
const (
	// SectionPath is the section: the upload form, the pass rate and the
	// failing sources.
	SectionPath = "/partials/dmarc-reports"
	// UploadFormPath is where the section's upload form posts; it answers
	// the section again, with what became of the file.
	UploadFormPath = SectionPath + "/upload"
	// viewDays is the window the section shows, to today.
	viewDays = 30
	// viewSources is how many failing sources the table lists.
	viewSources = 10
)

// uploadAccept is what the file picker offers: the formats Parse reads.
const uploadAccept = ".xml,.gz,.zip,application/xml,text/xml,application/gzip,application/zip"

const noReports = "No aggregate reports in the last 30 days. Upload them, or set reports_dir to read a folder of them."

// TenantNamer names tenants; *sdk.Host is one.
type TenantNamer interface {
	Tenants(ctx context.Context, ids ...string) ([]sdk.Tenant, error)
}

// Fragments are the report section of the DMARC page, in the given slot.
// It is not refreshed on a timer: a refresh would drop the outcome of an
// upload the user is reading.
func (h *Handlers) Fragments(slot string) []sdk.Fragment {
	return []sdk.Fragment{{Path: SectionPath, Title: "DMARC aggregate reports", Slot: slot, Handler: h.sectionFragment}}
}

// writeError answers a view's failure; one that is not a problem is
// logged, since the caller is told only that it was internal.
func (h *Handlers) writeError(w http.ResponseWriter, err error) {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("dmarc report request failed", "error", err)
	}
	sdk.WriteError(w, err)
}

// window is the section's days: the last viewDays to today.
func (h *Handlers) window() (from, to time.Time) {
	n := h.now()
	to = time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC)
	return to.AddDate(0, 0, -(viewDays - 1)), to
}

func count(n int64) string { return sdkui.FormatNumber(float64(n)) }

func passHealth(p *float64) sdkui.Health {
	switch {
	case p == nil:
		return sdkui.Unknown
	case *p >= 98:
		return sdkui.OK
	case *p >= 90:
		return sdkui.Warning
	}
	return sdkui.Critical
}

// percent is a pass rate as people read it; "–" without messages.
func percent(p *float64) string {
	if p == nil {
		return "–"
	}
	return sdkui.FormatNumber(*p) + " %"
}

// PassRateChart is the days' figures as stats over the whole window and
// the daily pass percentage as a line over every day from from to to; a
// day without reports is a gap.
func PassRateChart(days []DayRate, from, to time.Time) template.HTML {
	if len(days) == 0 {
		return sdkui.Empty(noReports)
	}
	var total Rate
	byDay := make(map[string]DayRate, len(days))
	for _, d := range days {
		total.Messages += d.Messages
		total.Passed += d.Passed
		byDay[d.Day] = d
	}
	var labels []string
	var values []float64
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		key := d.Format(time.DateOnly)
		labels = append(labels, key)
		v := math.NaN()
		if r, ok := byDay[key]; ok && r.PassPercent != nil {
			v = *r.PassPercent
		}
		values = append(values, v)
	}
	stats := sdkui.Grid(
		sdkui.Stat("DMARC pass rate", percent(total.PassPercent()), "of "+count(total.Messages)+" reported messages", passHealth(total.PassPercent())),
		sdkui.Stat("Failed DMARC", count(total.Failed()), "messages neither aligned DKIM nor aligned SPF passed", failHealth(total.Failed())),
		sdkui.Stat("Days reported", count(int64(len(days))), "of "+count(int64(len(labels))), sdkui.Unknown),
	)
	return sdkui.Join(stats, sdkui.LineChart("DMARC pass rate per day, percent", labels, []sdkui.Series{{Name: "Pass rate %", Values: values}}, nil))
}

func failHealth(n int64) sdkui.Health {
	if n == 0 {
		return sdkui.OK
	}
	return sdkui.Warning
}

// FailingSourcesTable lists sources by the messages they sent that failed
// DMARC, most first.
func FailingSourcesTable(sources []Source) template.HTML {
	if len(sources) == 0 {
		return sdkui.Empty("No source failed DMARC in the last 30 days.")
	}
	rows := make([][]any, len(sources))
	for i, s := range sources {
		rows[i] = []any{s.SourceIP, count(s.Failed), count(s.Messages), sdkui.Badge(percent(s.PassPercent), passHealth(s.PassPercent))}
	}
	return sdkui.Table([]string{"Source IP", "Failed", "Messages", "Pass rate"}, rows, "Sources with the most messages failing DMARC, last 30 days")
}

// sectionView is what the section knows of its request: the tenants it
// shows and the tenant the page is of, if it is of one.
type sectionView struct {
	tenants []string
	picked  string
}

func sectionViewOf(r *http.Request) sectionView {
	return sectionView{tenants: sdkui.Tenants(r), picked: r.URL.Query().Get("tenant_id")}
}

// at is a path of the section with the page's tenant.
func (v sectionView) at(path string) string {
	if v.picked == "" {
		return path
	}
	return path + "?" + url.Values{"tenant_id": {v.picked}}.Encode()
}

// outcome is what became of an uploaded file, for the section to say:
// the API's answer, or its refusal's messages.
type outcome struct {
	result  *UploadResult
	refused []string
}

// refusal is a refused upload's messages, each naming its field unless it
// is the file's.
func refusal(p *sdk.Problem) []string {
	if len(p.Errors) == 0 {
		return []string{cmp.Or(p.Detail, p.Title)}
	}
	out := make([]string, len(p.Errors))
	for i, e := range p.Errors {
		switch e.Location {
		case "body", "body.file":
			out[i] = e.Message
		case "body.tenant_id", "query.tenant_id":
			out[i] = "Tenant: " + e.Message
		default:
			out[i] = e.Location + ": " + e.Message
		}
	}
	return out
}

// tenantOption is a tenant the upload form offers.
type tenantOption struct{ ID, Name string }

// uploadTenants are the tenants the upload form lets the caller choose
// from, by name: none when the page is of one tenant or the caller has
// only one, which the upload then takes.
func (h *Handlers) uploadTenants(ctx context.Context, v sectionView) ([]tenantOption, error) {
	if v.picked != "" || len(v.tenants) < 2 || h.Tenants == nil {
		return nil, nil
	}
	list, err := h.Tenants.Tenants(ctx, v.tenants...)
	if err != nil {
		return nil, err
	}
	out := make([]tenantOption, len(list))
	for i, t := range list {
		out[i] = tenantOption{t.ID, t.Name}
	}
	slices.SortFunc(out, func(a, b tenantOption) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// section renders the report section over the view's tenants, saying
// what became of an upload when there was one.
func (h *Handlers) section(ctx context.Context, v sectionView, o outcome) (template.HTML, error) {
	from, to := h.window()
	days, err := h.Store.PassRates(ctx, v.tenants, from, to)
	if err != nil {
		return "", err
	}
	sources, err := h.Store.TopFailingSources(ctx, v.tenants, from, to, viewSources)
	if err != nil {
		return "", err
	}
	options, err := h.uploadTenants(ctx, v)
	if err != nil {
		return "", err
	}
	data := struct {
		Result         *UploadResult
		Begin, End     string
		Refused        []string
		Upload, Accept string
		Tenants        []tenantOption
		Rates, Failing template.HTML
	}{Result: o.result, Refused: o.refused, Upload: v.at(UploadFormPath), Accept: uploadAccept, Tenants: options,
		Rates: PassRateChart(days, from, to), Failing: FailingSourcesTable(sources)}
	if o.result != nil {
		data.Begin, data.End = o.result.Report.DateBegin.Format(time.DateOnly), o.result.Report.DateEnd.Format(time.DateOnly)
	}
	return render("section", data), nil
}

func (h *Handlers) sectionFragment(w http.ResponseWriter, r *http.Request) {
	html, err := h.section(r.Context(), sectionViewOf(r), outcome{})
	if err != nil {
		h.writeError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, html)
}

// markup is the section's HTML beside the kit's components, on the host's
// CSS classes. No script and no style attribute: the host's
// Content-Security-Policy forbids both. The upload form is a plain
// multipart form that htmx sends with the session's CSRF token and whose
// answer, the section again, replaces the section; the host's script lets
// a file be dropped on the form's drop zone as well as picked.
var markup = template.Must(template.New("views").Parse(`
{{- define "section" -}}
<div class="stack" id="dmarc-reports">
{{- template "upload" .}}
<h3>Pass rate, last 30 days</h3>
{{.Rates}}
<h3>Sources failing DMARC</h3>
{{.Failing}}
</div>
{{- end}}

{{- define "upload" -}}
<form class="stack" method="post" action="{{.Upload}}" enctype="multipart/form-data" hx-post="{{.Upload}}" hx-encoding="multipart/form-data" hx-target="#dmarc-reports" hx-swap="outerHTML" hx-disabled-elt="find button">
<h3>Upload a report</h3>
{{- with .Result}}<div role="status">
{{- if eq .Status "stored"}}<p>Stored: report {{.Report.ReportID}} from {{.Report.OrgName}} about {{.Report.Domain}}, {{$.Begin}} to {{$.End}}: {{.Report.Messages}} messages, {{.Report.Passed}} passed DMARC, {{.Report.Failed}} failed.</p>
{{- else}}<p>Already stored: report {{.Report.ReportID}} from {{.Report.OrgName}} about {{.Report.Domain}} was uploaded before; nothing changed.</p>{{end}}
{{- if .Warnings}}<ul class="muted">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end -}}
</div>{{end}}
{{- if .Refused}}<div class="alert" role="alert"><p>Not uploaded:</p><ul>{{range .Refused}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
{{- if .Tenants}}<div class="field"><label for="dmarc-upload-tenant">Tenant</label><select id="dmarc-upload-tenant" name="tenant_id" required>
<option value="">Choose the report's tenant</option>{{range .Tenants}}<option value="{{.ID}}">{{.Name}}</option>{{end}}</select></div>{{end}}
<div class="field dropzone"><label for="dmarc-upload-file">Report file</label>
<input id="dmarc-upload-file" name="file" type="file" required accept="{{.Accept}}" aria-describedby="dmarc-upload-hint">
<p class="muted" id="dmarc-upload-hint">An aggregate report as a receiver sends it: XML, gzip or zip. Pick the file, or drop it here.</p></div>
<div><button class="btn btn-primary" type="submit">Upload report</button></div>
</form>
{{- end}}
`))

// render executes one of markup's templates. Their data are this package's
// own, which they cannot fail on, so an error is a bug here.
func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := markup.ExecuteTemplate(&b, name, data); err != nil {
		panic("reports: " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
