package ui

import "html/template"

// kit holds the components' markup. Its classes are the host's style
// sheet's (ui/static/app.css in the Steward tree).
var kit = template.Must(template.New("kit").Parse(`
{{- define "card" -}}
<section class="card"><header class="card-header"><h2>{{.Title}}</h2></header><div class="card-body">{{.Body}}</div></section>
{{- end}}

{{- define "grid" -}}
<div class="grid">{{range .}}{{.}}{{end}}</div>
{{- end}}

{{- define "stat" -}}
<div class="stat{{if .Health}} {{.Health.Class}}{{end}}"><p class="stat-label">{{.Label}}</p><strong class="stat-value">{{.Value}}</strong>
{{- if or .Hint .Health}}<p class="stat-hint">{{if .Health}}<span class="badge {{.Health.Class}}">{{.Health.Label}}</span>{{end}}{{.Hint}}</p>{{end -}}
</div>
{{- end}}

{{- define "empty" -}}
<div class="empty" role="status"><svg class="empty-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M3 13h5l1.5 3h5L16 13h5M5.5 5h13L21 13v6H3v-6z"/></svg><p>{{.}}</p></div>
{{- end}}

{{- define "error" -}}
<div class="error-state" role="status"><svg class="error-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 3 2 20h20zM12 10v4M12 17h.01"/></svg><p>{{.Message}}</p>
{{- if .Retrying}}<span class="retrying"><span class="spinner" aria-hidden="true"></span>Retrying…</span>{{end -}}
</div>
{{- end}}

{{- define "loading" -}}
<div class="loading" role="status"><span class="visually-hidden">{{.}}</span><div class="skeleton"></div><div class="skeleton"></div><div class="skeleton"></div></div>
{{- end}}

{{- define "gauge" -}}
<figure class="gauge {{.Health.Class}}"><svg viewBox="0 0 120 70" role="img" aria-label="{{.Label}}: {{.Value}}"><title>{{.Label}}: {{.Value}}</title>
<path class="gauge-track" d="{{.Track}}"/>
{{- if .Arc}}<path class="gauge-value" d="{{.Arc}}"/>{{end -}}
<text class="gauge-text" x="60" y="58">{{.Value}}</text></svg><figcaption class="gauge-label">{{.Label}}</figcaption></figure>
{{- end}}

{{- define "line" -}}
<figure class="chart"><div class="chart-figure"><div class="chart-y" aria-hidden="true">{{range .YTicks}}<span>{{.}}</span>{{end}}</div>
<svg class="chart-plot" viewBox="0 0 1000 300" preserveAspectRatio="none" role="img" aria-label="{{.Summary}}"><title>{{.Summary}}</title>
<line class="chart-grid" x1="0" y1="0" x2="1000" y2="0" vector-effect="non-scaling-stroke"/><line class="chart-grid" x1="0" y1="150" x2="1000" y2="150" vector-effect="non-scaling-stroke"/><line class="chart-grid" x1="0" y1="300" x2="1000" y2="300" vector-effect="non-scaling-stroke"/>
{{- if .Band}}<path class="chart-band" d="{{.Band}}"/>{{end}}
{{- range .Lines}}{{if .D}}<path class="chart-line {{.Class}}{{if .Point}} chart-point{{end}}{{if .Forecast}} chart-forecast{{end}}" d="{{.D}}" vector-effect="non-scaling-stroke"/>{{end}}{{end -}}
</svg><div class="chart-x{{if .Starts}} chart-x-single{{end}}" aria-hidden="true">{{range .XTicks}}<span>{{.}}</span>{{end}}</div></div>
<figcaption>{{with .Starts}}<p class="chart-note">History starts {{.}}.</p>{{end}}<ul class="chart-legend">{{range .Lines}}<li><span class="swatch {{.Class}}" aria-hidden="true"></span>{{.Name}}{{if .Forecast}} (forecast){{end}}</li>{{end}}
{{- if .BandName}}<li><span class="swatch swatch-band" aria-hidden="true"></span>{{.BandName}}</li>{{end}}</ul>
<details class="chart-data"><summary>Data table: {{.Title}}</summary><div class="table-wrap" tabindex="0" role="region" aria-label="Data table: {{.Title}}, scrollable"><table class="table"><caption class="visually-hidden">{{.Title}}</caption>
<thead><tr>{{range .Columns}}<th scope="col">{{.}}</th>{{end}}</tr></thead><tbody>{{range .Rows}}<tr>{{range $i, $c := .}}{{if eq $i 0}}<th scope="row">{{$c}}</th>{{else}}<td class="num">{{$c}}</td>{{end}}{{end}}</tr>{{end}}</tbody></table></div></details></figcaption></figure>
{{- end}}
`))
