package defender

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/plugins/compliance/views"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// What the compliance page's defender sections show.
const (
	// unhealthyShown is how many unhealthy assessments the section lists.
	unhealthyShown = 10
	// apiPage is the page size of the section's API link.
	apiPage = 500
	// resourcePagePath is the resources plugin's page of one resource.
	resourcePagePath = "/resources/item"
	// noDefender is the sections' empty state before the first sync.
	noDefender = "No Defender for Cloud data yet. It arrives with the next defender sync."
)

// A secure score at or above these is healthy, or a warning; below is
// critical.
const (
	healthyScore = 80.0
	warningScore = 60.0
)

// severityHealth is the colour of an assessment's severity.
var severityHealth = map[string]sdkui.Health{"High": sdkui.Critical, "Medium": sdkui.Warning}

var markup = template.Must(template.New("defender").Parse(`
{{- define "anchor"}}<a href="{{.Href}}">{{.Text}}</a>{{end}}
{{- define "lines"}}{{.Main}}<br><span class="muted">{{.Detail}}</span>{{end}}
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
{{- define "more"}}<p class="muted">{{.Shown}} of {{.Total}} unhealthy assessments, highest severity first. <a href="{{.Href}}">All of them as JSON</a>, {{.PageSize}} a page.</p>{{end}}
`))

func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := markup.ExecuteTemplate(&b, name, data); err != nil {
		panic("defender: " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}

// Sections are the compliance page's Secure Score card and its Defender
// assessments section, read as the routes read them.
func (h *Handlers) Sections() []views.Section {
	return []views.Section{
		{Title: "Secure Score", Render: h.scoreSection},
		{Title: "Defender for Cloud assessments", Render: h.assessmentsSection},
	}
}

// scoreSection is the tenants' secure score as a gauge over the figures,
// and each tenant's and subscription's score.
func (h *Handlers) scoreSection(r *http.Request, tenants []string) (template.HTML, error) {
	rep, err := h.secureScore(r.Context(), &secureScoreIn{Tenants: tenants})
	if err != nil {
		return "", err
	}
	if rep.Percentage == nil {
		return sdkui.Empty(noDefender), nil
	}
	var unhealthy, healthy int64
	rows := [][]any{}
	for _, t := range rep.Tenants {
		for _, s := range t.Subscriptions {
			badge := sdkui.Badge("No controls", sdkui.Unknown)
			if s.Percentage != nil {
				badge = sdkui.Badge(sdkui.FormatNumber(*s.Percentage)+" %", sdkui.AtLeast(*s.Percentage, healthyScore, warningScore))
			}
			for _, c := range s.Controls {
				unhealthy += c.UnhealthyResources
				healthy += c.HealthyResources
			}
			rows = append(rows, []any{t.TenantName, s.SubscriptionID, badge,
				sdkui.FormatNumber(s.Current) + " of " + sdkui.FormatNumber(float64(s.Max)), len(s.Controls)})
		}
	}
	p := *rep.Percentage
	return render("stack", []template.HTML{
		sdkui.Gauge(p, "Secure score", sdkui.AtLeast(p, healthyScore, warningScore)),
		sdkui.Grid(
			sdkui.Stat("Secure score", sdkui.FormatNumber(rep.Current)+" of "+sdkui.FormatNumber(float64(rep.Max)), "points, each subscription weighed by its maximum", ""),
			sdkui.Stat("Unhealthy resources", sdkui.FormatNumber(float64(unhealthy)), "by the security controls", sdkui.AtMost(float64(unhealthy), 0, 0)),
			sdkui.Stat("Healthy resources", sdkui.FormatNumber(float64(healthy)), "by the security controls", ""),
		),
		sdkui.Table([]string{"Tenant", "Subscription", "Secure score", "Points", "Controls"}, rows, "Secure score of each subscription at its latest defender sync"),
	}), nil
}

// assessmentsSection is the unhealthy assessments, highest severity
// first, each resource linking its resource page.
func (h *Handlers) assessmentsSection(r *http.Request, tenants []string) (template.HTML, error) {
	rows, total, err := h.Store.Assessments(r.Context(), AssessmentQuery{TenantIDs: tenants, Status: StatusUnhealthy, Limit: unhealthyShown})
	if err != nil {
		return "", err
	}
	if total == 0 {
		return sdkui.Empty("No unhealthy Defender for Cloud assessments."), nil
	}
	cells := make([][]any, 0, len(rows))
	for _, a := range rows {
		name := a.ResourceID[strings.LastIndex(a.ResourceID, "/")+1:]
		resource := render("anchor", struct{ Href, Text string }{resourcePagePath + "?resource_id=" + url.QueryEscape(a.ResourceID), name})
		cells = append(cells, []any{render("lines", struct{ Main, Detail string }{a.DisplayName, a.Remediation}),
			sdkui.Badge(a.Severity, severityHealth[a.Severity]), resource, a.ResourceType})
	}
	q := url.Values{"status": {StatusUnhealthy}, "limit": {strconv.Itoa(apiPage)}}
	if tenant := r.URL.Query().Get("tenant_id"); tenant != "" {
		q.Set("tenant_ids", tenant)
	}
	return render("stack", []template.HTML{
		sdkui.Table([]string{"Recommendation", "Severity", "Resource", "Type"}, cells, "Unhealthy assessments, highest severity first"),
		render("more", struct {
			Shown, Total, Href string
			PageSize           int
		}{sdkui.FormatNumber(float64(len(rows))), sdkui.FormatNumber(float64(total)), "/api/v1/compliance/defender/assessments?" + q.Encode(), apiPage}),
	}), nil
}
