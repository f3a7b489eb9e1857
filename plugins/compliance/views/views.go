// Package views is the compliance plugin's HTML: the dashboard's
// compliance gauge and the compliance page — the overall compliance with
// its headline figures, the 30-day trend of the compliance percent, the
// non-compliant policies with the most non-compliant resources, and the
// coverage of the regulatory frameworks by category, with each control's
// matched policies and why they matched — and the page of one policy's
// non-compliant resources (PolicyPath), which each non-compliant policy
// links and whose rows lead to the resources plugin's resource page; and
// the printable report of a framework's controls (ReportPath), which the
// framework section links.
//
// Every view reads through the policy states' store and the frameworks'
// coverage, scoped to the caller's tenants or to the one tenant_id names
// (which the SDK has refused before the handler when the caller may not
// see it). The figures are the reads' own (states.Summary, states.Trend,
// states.Store.NonCompliant, coverage.Service), so the page and the API
// never disagree.
//
// The page's framework section is also a fragment of its own
// (FrameworksPath), which the section's framework picker reloads in place
// with htmx: the host's layout loads a plugin page by its path alone, so
// a framework named in the page's own query (?framework=nist_csf) is
// rendered when the page is asked for directly, and the picker carries it
// otherwise. Further sections (Handlers.Sections) follow the plugin's own:
// the custom rules' editor (RuleEditor) is one, with its form routes.
package views

import (
	"bytes"
	"html/template"
	"net/http"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the views.
const (
	// GaugePath is the dashboard's compliance card; the host shows a
	// placeholder there while no plugin serves it.
	GaugePath = "/partials/compliance-gauge"
	// FrameworksPath is the page's framework coverage, which its
	// framework picker reloads.
	FrameworksPath = "/partials/compliance-frameworks"
	// PagePath is the compliance page.
	PagePath = "/compliance"
)

// GaugeRefreshSeconds is how often the dashboard reloads the gauge: the
// compliance sync runs every four hours.
const GaugeRefreshSeconds = 600

// noData is the empty state of a view before the first compliance sync.
const noData = "No compliance data yet. It arrives with the next compliance sync."

// Compliance at or above these is healthy, or a warning; below is
// critical.
const (
	healthyPercent = 90.0
	warningPercent = 70.0
)

// Section is a further section of the compliance page, after the
// plugin's own — the place of the custom rules' editor with its dry run:
// a card titled Title whose body Render writes for the request and the
// tenants in scope.
type Section struct {
	Title  string
	Render func(r *http.Request, tenants []string) (template.HTML, error)
}

// Handlers serves the views.
type Handlers struct {
	States *states.Store
	// Findings are the sources of findings beside the policies (the
	// custom rules), as the reads take them in.
	Findings []states.FindingSource
	// Coverage is the frameworks' coverage of the tenants' policies.
	Coverage *coverage.Service
	// Sections follow the page's own sections.
	Sections []Section
	// Host names the tenants.
	Host *sdk.Host
	// Now is the clock of the trend's last day; nil is time.Now.
	Now func() time.Time
}

// Views are the dashboard's gauge, the framework section (placed by the
// compliance page itself, in its slot "compliance"), the compliance page
// and its navigation entry, between the costs' and the resources' as on
// the dashboard.
func (h *Handlers) Views() ([]sdk.Fragment, []sdk.Page, []sdk.NavEntry) {
	return []sdk.Fragment{
			{Path: GaugePath, Title: "Compliance", Slot: "dashboard", RefreshSeconds: GaugeRefreshSeconds, Handler: h.gauge},
			{Path: FrameworksPath, Title: "Framework coverage", Slot: "compliance", Handler: sdk.View(h.frameworksFragment)},
		},
		[]sdk.Page{{Path: PagePath, Title: "Compliance", Handler: sdk.View(h.page)},
			{Path: PolicyPath, Title: "Non-compliant resources", Handler: sdk.View(h.policyPage)},
			{Path: ReportPath, Title: "Framework report", Handler: sdk.View(h.reportPage)}},
		[]sdk.NavEntry{{Label: "Compliance", Path: PagePath, Order: 25}}
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

// severityHealth is the colour of a finding's severity.
var severityHealth = map[string]sdkui.Health{states.SeverityHigh: sdkui.Critical, states.SeverityMedium: sdkui.Warning}

// count is a whole number with its thousands separated.
func count(n int64) string { return sdkui.FormatNumber(float64(n)) }

// percent is a percent as the views write it.
func percent(p float64) string { return sdkui.FormatNumber(p) + " %" }

// markup is the views' own HTML beside the kit's components, on the host's
// CSS classes. No script and no style attribute: the host's
// Content-Security-Policy forbids both.
var markup = template.Must(template.New("views").Parse(`
{{- define "note"}}<p class="muted">{{.}}</p>{{end}}
{{- define "lines"}}{{if .Href}}<a href="{{.Href}}">{{.Main}}</a>{{else}}{{.Main}}{{end}}{{if .Detail}}<br><span class="muted">{{.Detail}}</span>{{end}}{{end}}
{{- define "anchor"}}<a href="{{.Href}}">{{.Text}}</a>{{end}}
{{- define "policy"}}<p>{{.Severity}} {{.Category}}. {{.Total}} non-compliant resources in all. <a href="{{.API}}">All of them as JSON</a>, {{.PageSize}} a page.</p>{{end}}
{{- define "pages"}}{{if or .Prev .Next}}<nav class="swatches" aria-label="Pages of resources">
{{- if .Prev}}<a href="{{.Prev}}">Previous page</a>{{end}}{{if .Next}}<a href="{{.Next}}">Next page</a>{{end}}</nav>{{end}}{{end}}
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
{{- define "synced"}}<p class="muted">Last complete sync: {{.}}</p>{{end}}
{{- define "link"}}<p><a href="{{.Href}}">{{.Text}}</a></p>{{end}}
{{- define "frameworks" -}}
<div class="stack" id="compliance-frameworks">
{{- if .Disclaimer}}<p class="muted">{{.Disclaimer}}</p>{{end}}
{{- if .Meaning}}<p><strong>{{.Caveat}}</strong> {{.Meaning}}</p>{{end}}{{.Overview}}
{{- if .Options}}<form class="stack" method="get" action="{{.Page}}" hx-get="{{.Action}}" hx-target="#compliance-frameworks" hx-swap="outerHTML">
<div class="swatches"><div class="field"><label for="compliance-framework">Framework</label><select id="compliance-framework" name="framework">
{{- range .Options}}<option value="{{.ID}}"{{if .Selected}} selected{{end}}>{{.Name}}</option>{{end -}}
</select></div></div>
{{- if .TenantID}}<input type="hidden" name="tenant_id" value="{{.TenantID}}">{{end -}}
<div><button class="btn" type="submit">Show its controls</button></div></form>{{end}}
{{- .Body}}</div>
{{- end}}

{{- define "framework" -}}
<div class="stack"><h3>{{.Name}}</h3><p>{{.Summary}} <a href="{{.Href}}">The coverage as JSON</a>, <a href="{{.Report}}">the printable report</a></p>{{.Bars}}
{{- range .Categories}}<details><summary>{{.Name}} ({{.ID}}): {{.Summary}}</summary><div class="stack">
{{- range .Controls}}<details><summary>{{.ID}} {{.Name}} {{.Status}}{{if .Counts}} <span class="muted">{{.Counts}}</span>{{end}}</summary><div class="stack"><p>{{.Description}}</p>{{.Policies}}</div></details>{{end -}}
</div></details>{{end -}}
</div>
{{- end}}

{{- define "report" -}}
<article class="stack report">
<header class="stack report-header"><h2>{{.Title}}: controls over resources</h2>
<dl class="report-facts"><dt>Tenants</dt><dd>{{.Tenants}}</dd><dt>Generated</dt><dd>{{.Generated}}</dd>
<dt>Controls</dt><dd>{{.Controls}}, {{.Coverage}} of them covered by a policy in scope</dd></dl>
<p class="muted">{{.Disclaimer}}</p>
<p class="no-print"><a href="{{.Back}}">Back to the framework</a>. Print this page, or save it as PDF, with the browser's print command: each category starts a page.</p></header>
<section class="report-summary" aria-labelledby="report-summary"><h3 id="report-summary">Controls by result</h3>
<div class="table-wrap" tabindex="0" role="region" aria-label="Controls by result, scrollable"><table class="table">
<thead><tr><th scope="col">Result</th><th scope="col">Controls</th></tr></thead><tbody>
{{- range .Summary}}<tr><th scope="row">{{.Label}}</th><td class="num">{{.Count}}</td></tr>{{end -}}
</tbody></table></div></section>
{{- range .Categories}}
<section class="report-category" aria-labelledby="{{.Anchor}}"><h3 id="{{.Anchor}}">{{.Name}} ({{.ID}})</h3><p class="muted">{{.Coverage}} of its controls covered.</p>
<div class="table-wrap" tabindex="0" role="region" aria-label="Controls of {{.Name}}, scrollable"><table class="table">
<thead><tr><th scope="col">Control</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Result</th><th scope="col">Passing resources</th>
<th scope="col">Failing resources</th><th scope="col">Exempt resources</th><th scope="col">Mapped policies</th><th scope="col">Evaluated resources</th></tr></thead><tbody>
{{- range .Controls}}<tr class="report-control" data-control="{{.ID}}" data-status="{{.Status}}"><th scope="row">{{.ID}}</th><td>{{.Name}}</td><td>{{.Badge}}</td><td>{{.Result}}</td>
<td class="num">{{.Passing}}</td><td class="num">{{.Failing}}</td><td class="num">{{.Exempt}}</td><td class="num">{{.Policies}}</td><td class="num">{{.Resources}}</td></tr>{{end -}}
</tbody></table></div></section>
{{- end}}
</article>
{{- end}}

{{- define "more" -}}
<p class="muted">{{.Shown}} of {{.Total}} non-compliant policies, most non-compliant resources first. <a href="{{.Href}}">All of them as JSON</a>, {{.PageSize}} a page (offset pages on), with severity, sort_by and sort_order to filter and sort.</p>
{{- end}}
`))

// twoLines is a table cell of a value over a muted detail.
func twoLines(main, detail string) template.HTML {
	return linkedLines(main, detail, "")
}

// linkedLines is twoLines whose value links href, when there is one.
func linkedLines(main, detail, href string) template.HTML {
	return render("lines", struct{ Main, Detail, Href string }{main, detail, href})
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
