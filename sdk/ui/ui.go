// Package ui is the plugin author's kit for the HTML a plugin serves: its
// fragments, which the host's pages load into their slots, and its pages,
// which the host wraps in its layout. Each function returns escaped,
// deterministic HTML built on the host's own CSS classes, so a plugin's
// output looks native without a style sheet of its own; the host's page
// carries the styles, and its Content-Security-Policy forbids inline
// scripts and style attributes, which nothing here uses.
//
// A fragment handler is usually a few lines:
//
//	func (p *plugin) summary(w http.ResponseWriter, r *http.Request) {
//		n, err := p.count(r.Context())
//		if err != nil {
//			ui.WriteFragment(w, http.StatusOK, ui.ErrorState("Evidence is unavailable right now."))
//			return
//		}
//		ui.WriteFragment(w, http.StatusOK, ui.Grid(
//			ui.Stat("Evidence items", strconv.Itoa(n), "collected every 6 h", ui.OK),
//		))
//	}
//
// Text arguments are plain text and are escaped; arguments of type
// template.HTML, such as another function's result, are inserted as they
// are. Charts are SVG and each carries a text alternative.
package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Health is the state a badge, stat, gauge or bar shows by its colour.
type Health string

// The states of Health. Any other value shows as Unknown.
const (
	OK       Health = "ok"
	Warning  Health = "warning"
	Critical Health = "critical"
	Unknown  Health = "unknown"
)

// Class is the CSS class that gives an element the state's colour:
// health-ok, health-warning, health-critical or health-unknown.
func (h Health) Class() string {
	switch h {
	case OK, Warning, Critical:
		return "health-" + string(h)
	}
	return "health-unknown"
}

// Label is the state's word for people, shown beside its colour so that
// colour never carries the state alone.
func (h Health) Label() string {
	switch h {
	case OK:
		return "OK"
	case Warning:
		return "Warning"
	case Critical:
		return "Critical"
	}
	return "Unknown"
}

// AtLeast is the Health of a figure where more is better: OK from ok,
// Warning from warning, Critical below.
func AtLeast(v, ok, warning float64) Health {
	switch {
	case v >= ok:
		return OK
	case v >= warning:
		return Warning
	}
	return Critical
}

// AtMost is the Health of a figure where less is better: OK up to ok,
// Warning up to warning, Critical above.
func AtMost(v, ok, warning float64) Health {
	switch {
	case v <= ok:
		return OK
	case v <= warning:
		return Warning
	}
	return Critical
}

// UsageHealth is the Health of a quota used to percent: Critical from 90,
// Warning from 75, OK below.
func UsageHealth(percent float64) Health {
	switch {
	case percent >= 90:
		return Critical
	case percent >= 75:
		return Warning
	}
	return OK
}

// Card is a bordered panel with a title and a body.
func Card(title string, body template.HTML) template.HTML {
	return render("card", struct {
		Title string
		Body  template.HTML
	}{title, body})
}

// Grid lays items out in responsive columns, one column on a phone; use it
// for a row of stats or cards.
func Grid(items ...template.HTML) template.HTML {
	return render("grid", items)
}

// Join concatenates pieces of HTML.
func Join(parts ...template.HTML) template.HTML {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(string(p))
	}
	return template.HTML(b.String())
}

// Stat is a headline number: a label, a value as it should read ("1,204",
// "€ 3.2k", "98 %"), an optional hint below it and a health, which colours
// its edge and is named in the hint's badge.
func Stat(label, value, hint string, h Health) template.HTML {
	return render("stat", struct {
		Label, Value, Hint string
		Health             Health
	}{label, value, hint, h})
}

// Badge is a short label in the health's colour, with a dot.
//
// Badge, Time and Table are built by hand rather than from the kit's
// templates: a fragment holds hundreds of them (a table of every tenant's
// domains), and a template's execution costs tens of times more. Their
// output is what the templates in their comments would give
// (TestHandBuiltMatchTemplates).
//
//	<span class="badge {{.Health.Class}}">{{.Text}}</span>
func Badge(text string, h Health) template.HTML {
	return template.HTML(`<span class="badge ` + h.Class() + `">` + template.HTMLEscapeString(text) + `</span>`)
}

// Table is a table with a caption and a header row. A cell is escaped text,
// or HTML when it is a template.HTML (a Badge, say); numbers print as Go
// prints them. Without rows it shows an empty state under the header.
//
//	<div class="table-wrap" tabindex="0" role="region" aria-label="{{if .Caption}}{{.Caption}}{{else}}Table{{end}}, scrollable"><table class="table">
//	{{- if .Caption}}<caption>{{.Caption}}</caption>{{end -}}
//	<thead><tr>{{range .Columns}}<th scope="col">{{.}}</th>{{end}}</tr></thead><tbody>
//	{{- range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
//	{{- else}}<tr class="table-empty"><td colspan="{{len .Columns}}">{{.Empty}}</td></tr>
//	{{- end -}}
//	</tbody></table></div>
func Table(columns []string, rows [][]any, caption string) template.HTML {
	return table("table-wrap", columns, rows, caption)
}

// PivotTable is a Table with a column for each of many periods (a day of a
// month, say): as wide as its periods, it scrolls sideways in its
// container by design, where a Table fits its card. Its container's class
// is "table-wrap table-wrap-pivot".
func PivotTable(columns []string, rows [][]any, caption string) template.HTML {
	return table("table-wrap table-wrap-pivot", columns, rows, caption)
}

// table is a Table in a container of the class.
func table(class string, columns []string, rows [][]any, caption string) template.HTML {
	var b strings.Builder
	label := "Table"
	if caption != "" {
		label = caption
	}
	b.WriteString(`<div class="` + class + `" tabindex="0" role="region" aria-label="`)
	b.WriteString(template.HTMLEscapeString(label))
	b.WriteString(`, scrollable"><table class="table">`)
	if caption != "" {
		b.WriteString("<caption>" + template.HTMLEscapeString(caption) + "</caption>")
	}
	b.WriteString("<thead><tr>")
	for _, c := range columns {
		b.WriteString(`<th scope="col">` + template.HTMLEscapeString(c) + "</th>")
	}
	b.WriteString("</tr></thead><tbody>")
	for _, row := range rows {
		b.WriteString("<tr>")
		for _, cell := range row {
			b.WriteString("<td>")
			writeCell(&b, cell)
			b.WriteString("</td>")
		}
		b.WriteString("</tr>")
	}
	if len(rows) == 0 {
		b.WriteString(`<tr class="table-empty"><td colspan="` + strconv.Itoa(len(columns)) + `">` + string(Empty("Nothing to show yet.")) + "</td></tr>")
	}
	b.WriteString("</tbody></table></div>")
	return template.HTML(b.String())
}

// writeCell writes a table cell's content as html/template would in text:
// template.HTML as it is, nil as nothing, anything else printed as fmt
// prints it, escaped.
func writeCell(b *strings.Builder, cell any) {
	switch c := cell.(type) {
	case nil:
	case template.HTML:
		b.WriteString(string(c))
	case string:
		template.HTMLEscape(b, []byte(c))
	case int:
		b.WriteString(strconv.Itoa(c))
	case int64:
		b.WriteString(strconv.FormatInt(c, 10))
	default:
		template.HTMLEscape(b, []byte(fmt.Sprint(c)))
	}
}

// Empty is the state of a fragment or table with nothing to show.
func Empty(message string) template.HTML {
	return render("empty", message)
}

// ErrorState is the state of a fragment that could not load its data. The
// message is shown to the user: say what is missing, not why it failed.
func ErrorState(message string) template.HTML {
	return render("error", struct {
		Message  string
		Retrying bool
	}{message, false})
}

// Unavailable is ErrorState with a "retrying" line, for data the page
// will ask for again by itself, as the host does for a slot whose
// fragment fails.
func Unavailable(message string) template.HTML {
	return render("error", struct {
		Message  string
		Retrying bool
	}{message, true})
}

// Loading is a placeholder for content on its way; label is read to
// screen readers.
func Loading(label string) template.HTML {
	return render("loading", label)
}

// Time is t as a <time> element: its text is t in UTC until the host's
// script, once the page loads, shows it in the viewer's time zone.
//
//	<time class="local-time" datetime="{{.ISO}}">{{.Text}}</time>
func Time(t time.Time) template.HTML {
	t = t.UTC()
	return template.HTML(`<time class="local-time" datetime="` + template.HTMLEscapeString(t.Format(time.RFC3339)) + `">` +
		template.HTMLEscapeString(t.Format("2 Jan 2006 15:04 UTC")) + `</time>`)
}

// WriteFragment writes html as the response, with the status and the
// Content-Type of HTML.
func WriteFragment(w http.ResponseWriter, status int, html template.HTML) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(html))
}

// clampPercent bounds p to 0..100; NaN is 0.
func clampPercent(p float64) float64 {
	if math.IsNaN(p) || p < 0 {
		return 0
	}
	return math.Min(p, 100)
}

// coord formats an SVG coordinate with at most two decimals.
func coord(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// FormatNumber formats v for people as the kit does in charts: at most two
// decimals and a comma between thousands ("12,345.5"); NaN and infinities
// are "–".
func FormatNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	s := strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

// render executes one of the kit's templates. Their data are the kit's
// own types, which they cannot fail on, and the buffer cannot fail to
// write, so an error here is a bug in the kit.
func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := kit.ExecuteTemplate(&b, name, data); err != nil {
		panic("sdk/ui: " + err.Error())
	}
	return template.HTML(b.String())
}
