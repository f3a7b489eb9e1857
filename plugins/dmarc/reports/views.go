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
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the DMARC page's report section and of its form.
const (
	// SectionPath is the section: the upload form, and over a range of
	// days the pass rate, the failing sources and the reports.
	SectionPath = "/partials/dmarc-reports"
	// UploadFormPath is where the section's upload form posts; it answers
	// the section again, with what became of the file.
	UploadFormPath = SectionPath + "/upload"
	// DetailPath is a listed report with its records, which the section
	// shows under its list.
	DetailPath = SectionPath + "/{id}"
	// viewSources is how many failing sources the table lists.
	viewSources = 10
	// listPage is how many reports the section lists at a time.
	listPage = 20
	// maxOffset bounds the list's offset as the API's does.
	maxOffset = 1000000
)

// uploadAccept is what the file picker offers: the formats Parse reads.
const uploadAccept = ".xml,.gz,.zip,application/xml,text/xml,application/gzip,application/zip"

const noReports = "No aggregate reports in these days. Widen the range, upload reports, or set reports_dir to read a folder of them."

// TenantNamer names tenants; *sdk.Host is one.
type TenantNamer interface {
	Tenants(ctx context.Context, ids ...string) ([]sdk.Tenant, error)
}

// Fragments are the report section of the DMARC page, in the given slot.
// It is not refreshed on a timer: a refresh would drop the range the user
// chose and the outcome of an upload they are reading.
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
		return sdkui.Empty("No source failed DMARC in these days.")
	}
	rows := make([][]any, len(sources))
	for i, s := range sources {
		rows[i] = []any{s.SourceIP, count(s.Failed), count(s.Messages), sdkui.Badge(percent(s.PassPercent), passHealth(s.PassPercent))}
	}
	return sdkui.Table([]string{"Source IP", "Failed", "Messages", "Pass rate"}, rows, "Sources with the most messages failing DMARC")
}

// sectionView is what the section shows: the tenants, the tenant the
// page is of if it is of one, the days and the list's offset, and the
// range's mistakes, when the days are the default ones instead of those
// asked for.
type sectionView struct {
	tenants  []string
	picked   string
	from, to time.Time
	offset   int
	// asked is the range as given, shown again beside its mistakes.
	asked       url.Values
	rangeErrors []string
}

// sectionViewOf reads the section's query: tenant_id (which the SDK has
// checked), from and to as days, and offset.
func (h *Handlers) sectionViewOf(r *http.Request) sectionView {
	q := r.URL.Query()
	v := sectionView{tenants: sdkui.Tenants(r), picked: q.Get("tenant_id")}
	var from, to time.Time
	var bad []string
	for _, f := range []struct {
		name string
		day  *time.Time
	}{{"from", &from}, {"to", &to}} {
		if s := q.Get(f.name); s != "" {
			d, err := time.Parse(time.DateOnly, s)
			if err != nil {
				bad = append(bad, f.name+": "+s+" is not a date (YYYY-MM-DD)")
			}
			*f.day = d
		}
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxOffset {
			bad = append(bad, "offset: "+s+" is not a whole number from 0 to "+strconv.Itoa(maxOffset))
		}
		v.offset = max(0, min(n, maxOffset))
	}
	if len(bad) == 0 {
		var err error
		var p *sdk.Problem
		if v.from, v.to, err = h.dayRange(from, to); errors.As(err, &p) {
			bad = refusal(p)
		}
	}
	if len(bad) > 0 {
		v.from, v.to, _ = h.dayRange(time.Time{}, time.Time{})
		v.offset, v.asked, v.rangeErrors = 0, q, bad
	}
	return v
}

// query is the section's query for its days at an offset, with the
// page's tenant.
func (v sectionView) query(offset int) url.Values {
	q := url.Values{"from": {v.from.Format(time.DateOnly)}, "to": {v.to.Format(time.DateOnly)}}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	if v.picked != "" {
		q.Set("tenant_id", v.picked)
	}
	return q
}

// at is a path of the section with its query at an offset.
func (v sectionView) at(path string, offset int) string {
	return path + "?" + v.query(offset).Encode()
}

// detailAt is the path of a report's records, with the page's tenant.
func (v sectionView) detailAt(id int64) string {
	path := strings.Replace(DetailPath, "{id}", strconv.FormatInt(id, 10), 1)
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

// refusal is a refused request's messages, each naming its field unless
// it is the file's.
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
			out[i] = strings.TrimPrefix(e.Location, "query.") + ": " + e.Message
		}
	}
	return out
}

// tenantOption is a tenant the upload form offers.
type tenantOption struct{ ID, Name string }

// tenantNames are the names of the view's tenants by name when it shows
// several, for the upload form's choice and the list's tenant column;
// none when the page is of one tenant or the caller has only one.
func (h *Handlers) tenantNames(ctx context.Context, v sectionView) ([]tenantOption, error) {
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

// reportDays is a report's range as days, one day when it begins and
// ends on the same one.
func reportDays(s Summary) string {
	begin, end := s.DateBegin.Format(time.DateOnly), s.DateEnd.Format(time.DateOnly)
	if begin == end {
		return begin
	}
	return begin + " to " + end
}

// reportList is a page of the view's reports, newest first, as a table
// with the links to the pages before and after it. An offset past the
// last report, which a link kept from before some were deleted can
// carry, shows the last page.
func (h *Handlers) reportList(ctx context.Context, v sectionView, names []tenantOption) (template.HTML, error) {
	f := ReportFilter{TenantIDs: v.tenants, From: v.from, To: v.to, SortBy: "date_begin", Desc: true, Limit: listPage, Offset: v.offset}
	rows, total, err := h.Store.List(ctx, f)
	if err == nil && len(rows) == 0 && total > 0 {
		v.offset = (total - 1) / listPage * listPage
		f.Offset = v.offset
		rows, total, err = h.Store.List(ctx, f)
	}
	if err != nil {
		return "", err
	}
	if total == 0 {
		return sdkui.Empty("No reports in these days. Widen the range to see older ones."), nil
	}
	nameOf := make(map[string]string, len(names))
	for _, t := range names {
		nameOf[t.ID] = t.Name
	}
	cols := []string{"Reporter", "Domain", "Days", "Messages", "Passed", "Failed", "Pass rate", "Records"}
	if len(names) > 0 {
		cols = slices.Insert(cols, 1, "Tenant")
	}
	out := make([][]any, len(rows))
	for i := range rows {
		s := summaryOf(&rows[i])
		cells := []any{s.OrgName, s.Domain, reportDays(s), count(s.Messages), count(s.Passed), count(s.Failed), sdkui.Badge(percent(s.PassPercent), passHealth(s.PassPercent)),
			render("records-link", struct {
				Href        string
				Records     int64
				Report, Org string
			}{v.detailAt(s.ID), s.RecordCount, s.ReportID, s.OrgName})}
		if len(names) > 0 {
			cells = slices.Insert(cells, 1, any(cmp.Or(nameOf[s.TenantID], s.TenantID)))
		}
		out[i] = cells
	}
	pager := struct {
		First, Last, Total string
		Newer, Older       string
		HasNewer, HasOlder bool
	}{First: count(int64(v.offset + 1)), Last: count(int64(v.offset + len(rows))), Total: count(int64(total)),
		Newer: v.at(SectionPath, max(0, v.offset-listPage)), Older: v.at(SectionPath, v.offset+listPage),
		HasNewer: v.offset > 0, HasOlder: v.offset+len(rows) < total}
	return sdkui.Join(sdkui.Table(cols, out, "Aggregate reports, newest first"), render("pager", pager)), nil
}

// section renders the report section over the view's tenants and days,
// saying what became of an upload when there was one.
func (h *Handlers) section(ctx context.Context, v sectionView, o outcome) (template.HTML, error) {
	days, err := h.Store.PassRates(ctx, v.tenants, v.from, v.to)
	if err != nil {
		return "", err
	}
	sources, err := h.Store.TopFailingSources(ctx, v.tenants, v.from, v.to, viewSources)
	if err != nil {
		return "", err
	}
	names, err := h.tenantNames(ctx, v)
	if err != nil {
		return "", err
	}
	list, err := h.reportList(ctx, v, names)
	if err != nil {
		return "", err
	}
	from, to := v.from.Format(time.DateOnly), v.to.Format(time.DateOnly)
	if v.asked != nil {
		from, to = v.asked.Get("from"), v.asked.Get("to")
	}
	data := struct {
		Result               *UploadResult
		Begin, End, ItsDays  string
		Refused, RangeErrors []string
		Upload, Section      string
		Accept, Picked       string
		From, To             string
		ShownFrom, ShownTo   string
		Tenants              []tenantOption
		Rates, Failing, List template.HTML
	}{Result: o.result, Refused: o.refused, RangeErrors: v.rangeErrors, Upload: v.at(UploadFormPath, 0), Section: SectionPath,
		Accept: uploadAccept, Picked: v.picked, From: from, To: to, ShownFrom: v.from.Format(time.DateOnly), ShownTo: v.to.Format(time.DateOnly),
		Tenants: names, Rates: PassRateChart(days, v.from, v.to), Failing: FailingSourcesTable(sources), List: list}
	if o.result != nil {
		its := v
		its.from, its.to = o.result.Report.DateBegin, o.result.Report.DateEnd
		data.Begin, data.End, data.ItsDays = its.from.Format(time.DateOnly), its.to.Format(time.DateOnly), its.at(SectionPath, 0)
	}
	return render("section", data), nil
}

func (h *Handlers) sectionFragment(w http.ResponseWriter, r *http.Request) {
	html, err := h.section(r.Context(), h.sectionViewOf(r), outcome{})
	if err != nil {
		h.writeError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, html)
}

// authResults is a record's raw DKIM and SPF results, each with the
// domain it was for: what tells a forwarder's mail from a spoofer's.
func authResults(r RecordView) string {
	var parts []string
	for _, a := range r.AuthDKIM {
		part := "DKIM " + a.Domain
		if a.Selector != "" {
			part += " (" + a.Selector + ")"
		}
		parts = append(parts, part+": "+a.Result)
	}
	for _, a := range r.AuthSPF {
		parts = append(parts, "SPF "+a.Domain+": "+a.Result)
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}

// alignmentWords say which aligned mechanisms passed, as people read it.
var alignmentWords = map[string]string{"dkim_and_spf": "DKIM and SPF", "dkim_only": "DKIM only", "spf_only": "SPF only", "none": "neither"}

// resultBadge is an aligned result or DMARC's as a badge.
func resultBadge(pass bool, text string) template.HTML {
	if pass {
		return sdkui.Badge(text, sdkui.OK)
	}
	return sdkui.Badge(text, sdkui.Critical)
}

// sourceName is a record's reverse name as the records table shows it:
// "not looked up yet" before the lookup, "none" for an address without
// one.
func sourceName(ptr string, lookedUp *time.Time) string {
	switch {
	case lookedUp == nil:
		return "not looked up yet"
	case ptr == "":
		return "none"
	}
	return ptr
}

// orDash is s, or a dash for nothing.
func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// detailView is a report with its records in the order it lists them.
func detailView(d *Detail) template.HTML {
	rows := make([][]any, len(d.Records))
	for i, r := range d.Records {
		dmarc := "fail"
		if r.Pass {
			dmarc = "pass"
		}
		rows[i] = []any{r.SourceIP, sourceName(r.SourcePTR, r.SourceLookedUpAt), orDash(r.SourceOrg), count(r.Count), r.Disposition, resultBadge(r.DKIM == "pass", r.DKIM), resultBadge(r.SPF == "pass", r.SPF),
			resultBadge(r.Pass, dmarc+", "+alignmentWords[r.Alignment]), r.HeaderFrom, authResults(r)}
	}
	table := sdkui.Table([]string{"Source IP", "Reverse DNS", "Sending organisation", "Messages", "Disposition", "DKIM aligned", "SPF aligned", "DMARC", "Header from", "Authentication results"},
		rows, "Records of report "+d.ReportID+" from "+d.OrgName)
	return render("detail", struct {
		Report     Summary
		Days, Rate string
		Received   template.HTML
		Records    template.HTML
	}{d.Summary, reportDays(d.Summary), percent(d.PassPercent), sdkui.Time(d.ReceivedAt), table})
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
{{- template "range" .}}
<h3>Pass rate, {{.ShownFrom}} to {{.ShownTo}}</h3>
{{.Rates}}
{{.Failing}}
{{.List}}
<div id="dmarc-report-detail"></div>
</div>
{{- end}}

{{- define "records-link"}}<a href="{{.Href}}" hx-get="{{.Href}}" hx-target="#dmarc-report-detail" hx-swap="innerHTML show:top">{{.Records}} {{if eq .Records 1}}record{{else}}records{{end}}<span class="visually-hidden"> of report {{.Report}} from {{.Org}}</span></a>{{end}}

{{- define "detail" -}}
<section class="stack" aria-labelledby="dmarc-report-title">
<h3 id="dmarc-report-title">Report {{.Report.ReportID}} from {{.Report.OrgName}}</h3>
<dl>
<dt>Domain</dt><dd>{{.Report.Domain}}, policy p={{.Report.Policy.P}}{{if ne .Report.Policy.Pct 100}} on {{.Report.Policy.Pct}} %{{end}}</dd>
<dt>Days</dt><dd>{{.Days}}</dd>
<dt>Messages</dt><dd>{{.Report.Messages}}: {{.Report.Passed}} passed DMARC, {{.Report.Failed}} failed ({{.Rate}} passed)</dd>
<dt>Received</dt><dd>{{.Received}}{{with .Report.FileName}} as {{.}}{{end}}, by {{.Report.Source}}</dd>
</dl>
{{.Records}}
</section>
{{- end}}

{{- define "range" -}}
<form class="stack" method="get" action="{{.Section}}" hx-get="{{.Section}}" hx-target="#dmarc-reports" hx-swap="outerHTML" hx-disabled-elt="find button">
<h3>Days shown</h3>
{{- if .RangeErrors}}<div class="alert" role="alert"><p>Those days cannot be shown; these are the last 30:</p><ul>{{range .RangeErrors}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<div class="filters">
{{- with .Picked}}<input type="hidden" name="tenant_id" value="{{.}}">{{end}}
<div class="field"><label for="dmarc-range-from">From</label><input id="dmarc-range-from" name="from" type="date" value="{{.From}}" required{{if .RangeErrors}} aria-invalid="true"{{end}}></div>
<div class="field"><label for="dmarc-range-to">To</label><input id="dmarc-range-to" name="to" type="date" value="{{.To}}" required{{if .RangeErrors}} aria-invalid="true"{{end}}></div>
<div><button class="btn" type="submit">Show these days</button></div>
</div>
<p class="muted">The figures count each report's messages on the day it begins; the list shows every report whose days meet the range, at most 366 days.</p>
</form>
{{- end}}

{{- define "pager" -}}
<nav class="filters" aria-label="Pages of reports"><p>Reports {{.First}} to {{.Last}} of {{.Total}}.</p>
{{- if .HasNewer}}<a class="btn btn-small" href="{{.Newer}}" hx-get="{{.Newer}}" hx-target="#dmarc-reports" hx-swap="outerHTML">Newer reports</a>{{end}}
{{- if .HasOlder}}<a class="btn btn-small" href="{{.Older}}" hx-get="{{.Older}}" hx-target="#dmarc-reports" hx-swap="outerHTML">Older reports</a>{{end -}}
</nav>
{{- end}}

{{- define "upload" -}}
<h3>Upload a report</h3>
{{- with .Result}}<div role="status">
{{- if eq .Status "stored"}}<p>Stored: report {{.Report.ReportID}} from {{.Report.OrgName}} about {{.Report.Domain}}, {{$.Begin}} to {{$.End}}: {{.Report.Messages}} messages, {{.Report.Passed}} passed DMARC, {{.Report.Failed}} failed. <a href="{{$.ItsDays}}" hx-get="{{$.ItsDays}}" hx-target="#dmarc-reports" hx-swap="outerHTML">Show its days</a></p>
{{- else}}<p>Already stored: report {{.Report.ReportID}} from {{.Report.OrgName}} about {{.Report.Domain}} was uploaded before; nothing changed. <a href="{{$.ItsDays}}" hx-get="{{$.ItsDays}}" hx-target="#dmarc-reports" hx-swap="outerHTML">Show its days</a></p>{{end}}
{{- if .Warnings}}<ul class="muted">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end -}}
</div>{{end}}
{{- if .Refused}}<div class="alert" role="alert"><p>Not uploaded:</p><ul>{{range .Refused}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<form class="stack" method="post" action="{{.Upload}}" enctype="multipart/form-data" hx-post="{{.Upload}}" hx-encoding="multipart/form-data" hx-target="#dmarc-reports" hx-swap="outerHTML" hx-disabled-elt="find button">
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
