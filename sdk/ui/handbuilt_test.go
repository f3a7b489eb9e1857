package ui

import (
	"bytes"
	"html"
	"html/template"
	"net/url"
	"testing"
	"time"
)

// handBuilt is the markup Badge, Time, Table and BarChart are built by
// hand to give, as the kit's templates (their doc comments).
var handBuilt = template.Must(template.New("reference").Parse(`
{{- define "badge" -}}
<span class="badge {{.Health.Class}}">{{.Text}}</span>
{{- end}}
{{- define "time" -}}
<time class="local-time" datetime="{{.ISO}}">{{.Text}}</time>
{{- end}}
{{- define "table" -}}
<div class="table-wrap" tabindex="0" role="region" aria-label="{{if .Caption}}{{.Caption}}{{else}}Table{{end}}, scrollable"><table class="table">
{{- if .Caption}}<caption>{{.Caption}}</caption>{{end -}}
<thead><tr>{{range .Columns}}<th scope="col">{{.}}</th>{{end}}</tr></thead><tbody>
{{- range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{- else}}<tr class="table-empty"><td colspan="{{len .Columns}}">{{.Empty}}</td></tr>
{{- end -}}
</tbody></table></div>
{{- end}}
{{- define "bars" -}}
<ul class="bars" aria-label="{{.Caption}}">
{{- range .Bars}}<li class="{{.Health.Class}}"><div class="bar-head"><span class="bar-label">{{if .Href}}<a href="{{.Href}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</span><span class="bar-value">{{.Value}}{{if .Percent}} · {{.Percent}}{{end}}</span></div>
<svg class="bar" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" aria-label="{{.Label}}: {{.Health.Label}}{{if .Percent}}, {{.Percent}} used{{end}}"><rect class="bar-track" width="100" height="8"/><rect class="bar-fill" width="{{.Width}}" height="8"/></svg></li>
{{- end -}}
</ul>
{{- end}}`))

func reference(t *testing.T, name string, data any) string {
	t.Helper()
	var b bytes.Buffer
	if err := handBuilt.ExecuteTemplate(&b, name, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHandBuiltMatchTemplates: the hand-built components give the
// templates' markup, escaping alike. html/template writes a few
// characters as other entities (+ as &#43;), so both are compared as a
// browser reads them, and neither may carry what it was given unescaped.
func TestHandBuiltMatchTemplates(t *testing.T) {
	texts := []string{"", "Fresh", `<script>alert("x")</script>`, "a + b & 'c'", "\x00nul", "naïve ✓"}
	same := func(what string, got template.HTML, want string) {
		t.Helper()
		if html.UnescapeString(string(got)) != html.UnescapeString(want) {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
		if bytes.Contains([]byte(got), []byte("<script")) {
			t.Errorf("%s: unescaped script in %s", what, got)
		}
	}
	for _, text := range texts {
		for _, h := range []Health{OK, Warning, Critical, Unknown, `"><x`} {
			same("Badge", Badge(text, h), reference(t, "badge", struct {
				Text   string
				Health Health
			}{text, h}))
		}
		rows := [][]any{{text, Badge(text, OK), 42, int64(-7), 2.5, true, nil, template.HTML("<b>bold</b>"), template.JS("x<y")}, {}}
		for _, caption := range []string{"", text} {
			for _, r := range [][][]any{rows, nil} {
				data := struct {
					Columns []string
					Rows    [][]any
					Caption string
					Empty   template.HTML
				}{[]string{text, "B"}, r, caption, Empty("Nothing to show yet.")}
				same("Table", Table(data.Columns, data.Rows, data.Caption), reference(t, "table", data))
			}
		}
	}
	for _, text := range texts {
		bars := []Bar{{Label: text, Used: 48, Limit: 100, Unit: text}, {Label: text, Used: 3, Href: "/resources?subscription_id=" + url.QueryEscape(text)},
			{Label: "x", Used: 95.5, Limit: 100, Health: `"><x`}, {Label: text, Used: 1, Limit: 2, Href: "javascript:alert(1)"}, {Label: text, Used: 0, Limit: 0}}
		var views []barView
		for _, b := range bars {
			views = append(views, barViewOf(b))
		}
		same("BarChart", BarChart(text, bars), reference(t, "bars", struct {
			Caption string
			Bars    []barView
		}{text, views}))
	}
	for _, at := range []time.Time{time.Date(2026, 11, 28, 17, 4, 5, 0, time.UTC), time.Date(1999, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))} {
		u := at.UTC()
		same("Time", Time(at), reference(t, "time", struct{ ISO, Text string }{u.Format(time.RFC3339), u.Format("2 Jan 2006 15:04 UTC")}))
	}
}
