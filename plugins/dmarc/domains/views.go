package domains

import (
	"bytes"
	"context"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the views.
const (
	// StatsFragmentPath is the dashboard's mail-authentication card.
	StatsFragmentPath = "/partials/dmarc-stats"
	// PostureFragmentPath is the headline figures of the DMARC page.
	PostureFragmentPath = "/partials/dmarc-posture"
	// DomainsFragmentPath is the DMARC page's table of domains.
	DomainsFragmentPath = "/partials/dmarc-domains"
	// EventsFragmentPath is the DMARC page's recent weakenings.
	EventsFragmentPath = "/partials/dmarc-events"
	// PageSlot is the slot of the DMARC page (DMARCPage), which
	// shows its fragments in the order the plugin declares them, with
	// the page's tenant.
	PageSlot = "dmarc"
)

// What the page shows.
const (
	// domainsShown is how many domains the page's table shows, worst
	// first; the rest are a link to the API away.
	domainsShown = 50
	// eventsShown is how many recent weakenings the page lists.
	eventsShown = 10
	// findingsShown is how many findings a domain's row lists.
	findingsShown = 3
	// apiPage is the page size of the API links, the routes' largest.
	apiPage = 500
	// trendDays is how many days, today included, the score trend charts.
	trendDays = 30
)

// noData is the empty state before the first posture sync.
const noData = "No mail domains checked yet. They arrive with the next DMARC posture sync."

// DMARCPage is the DMARC page: the host lays it out from the fragments of
// PageSlot, under what the page is for.
var DMARCPage = sdk.Page{Path: "/dmarc", Title: "E-mail security", Slot: PageSlot,
	Description: "DMARC, SPF and DKIM tell receiving mail servers which servers may send mail for your tenants' domains and what to do with mail that fails those checks. Weak or missing records let others send mail in your name."}

// Fragments are the dashboard's card and, in the DMARC page's
// slot, the posture's figures, its domains and its recent weakenings,
// served by h. Fragments of the page's other sections (the aggregate
// reports') follow them in the same slot.
func (h *Handlers) Fragments() []sdk.Fragment {
	return []sdk.Fragment{
		{Path: StatsFragmentPath, Title: "Mail authentication", Slot: "dashboard", RefreshSeconds: 600, Handler: h.statsFragment},
		{Path: PostureFragmentPath, Title: "Mail authentication posture", Slot: PageSlot, RefreshSeconds: 600, Handler: h.postureFragment},
		{Path: DomainsFragmentPath, Title: "Domains, weakest first", Slot: PageSlot, RefreshSeconds: 600, Handler: h.domainsFragment},
		{Path: EventsFragmentPath, Title: "Posture weakenings", Slot: PageSlot, RefreshSeconds: 600, Handler: h.eventsFragment},
	}
}

// gradeHealth is the health a grade shows.
func gradeHealth(g string) sdkui.Health {
	switch g {
	case "A", "B":
		return sdkui.OK
	case "C", "D":
		return sdkui.Warning
	case "F":
		return sdkui.Critical
	}
	return sdkui.Unknown
}

// severityHealth is the health a finding's severity shows.
func severityHealth(s string) sdkui.Health {
	switch s {
	case "critical", "high":
		return sdkui.Critical
	case "medium":
		return sdkui.Warning
	}
	return sdkui.Unknown
}

// count is a whole number with its thousands separated.
func count(n int64) string { return sdkui.FormatNumber(float64(n)) }

// headline is the figures as stats: the average score, domains at
// p=reject, DKIM coverage and DNS failures.
func headline(f Figures) template.HTML {
	score := sdkui.Stat("Average score", "–", "no domain checked yet", sdkui.Unknown)
	if f.AverageScore != nil {
		score = sdkui.Stat("Average score", sdkui.FormatNumber(*f.AverageScore), "of 100, over "+count(f.Checked)+" checked domains", sdkui.AtLeast(*f.AverageScore, 80, 60))
	}
	reject := sdkui.OK
	if f.Reject < f.Checked {
		reject = sdkui.Warning
	}
	dkim := sdkui.Stat("DKIM coverage", "–", "", sdkui.Unknown)
	if f.DKIMCoverage != nil {
		h := sdkui.OK
		if *f.DKIMCoverage < 100 {
			h = sdkui.Warning
		}
		dkim = sdkui.Stat("DKIM coverage", sdkui.FormatNumber(*f.DKIMCoverage)+" %", count(f.WithDKIM)+" of "+count(f.Checked)+" domains sign mail", h)
	}
	dnsHealth := sdkui.OK
	if f.DNSErrors > 0 {
		dnsHealth = sdkui.Warning
	}
	return sdkui.Grid(
		score,
		sdkui.Stat("DMARC p=reject", count(f.Reject)+" of "+count(f.Checked), count(f.NoEnforcement)+" without an enforcing policy", reject),
		dkim,
		sdkui.Stat("Domains", count(f.Domains), count(f.DNSErrors)+" whose latest check DNS failed in part", dnsHealth),
	)
}

// grades is the checked domains by grade as bars.
func grades(f Figures) template.HTML {
	bars := make([]sdkui.Bar, len(Grades))
	for i, g := range Grades {
		bars[i] = sdkui.Bar{Label: "Grade " + g, Used: float64(f.ByGrade[g]), Limit: float64(f.Checked), Unit: "domains", Health: gradeHealth(g)}
	}
	return sdkui.BarChart("Checked domains by grade", bars)
}

// statsFragment is the dashboard's card over the tenants the request
// covers: the average score, p=reject, DKIM coverage and the grades.
func (h *Handlers) statsFragment(w http.ResponseWriter, r *http.Request) {
	rows, err := h.Store.Figures(r.Context(), sdkui.Tenants(r))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if len(rows) == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty(noData))
		return
	}
	f := figuresOver(rows)
	sdkui.WriteFragment(w, http.StatusOK, stack(headline(f), grades(f)))
}

// postureFragment is the DMARC page's headline over the tenants the
// request covers: the figures, the grades and, for several tenants, each
// one's figures.
func (h *Handlers) postureFragment(w http.ResponseWriter, r *http.Request) {
	// The figures and the trend read their tenants' revision once, and
	// answer as of one revision.
	r = r.WithContext(revcache.OneRead(r.Context()))
	tenants := sdkui.Tenants(r)
	sum, err := h.summaryOf(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if sum.Domains == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty(noData))
		return
	}
	trend, err := h.scoreTrend(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(headline(sum.Figures), grades(sum.Figures), trend, perTenant(sum)))
}

// scoreTrend charts the average score of each day's checks over the
// trendDays days up to today; a day without checks has no point.
func (h *Handlers) scoreTrend(ctx context.Context, tenants []string) (template.HTML, error) {
	from := h.now().Truncate(24*time.Hour).AddDate(0, 0, 1-trendDays)
	rows, err := h.Store.Trend(ctx, tenants, from)
	if err != nil {
		return "", err
	}
	byDay := map[string]DayScore{}
	for _, d := range rows {
		byDay[d.Day] = d
	}
	labels, values := make([]string, trendDays), make([]float64, trendDays)
	for i := range trendDays {
		day := from.AddDate(0, 0, i).Format(time.DateOnly)
		labels[i], values[i] = day, math.NaN()
		if d, ok := byDay[day]; ok && d.Checks > 0 {
			values[i] = math.Round(float64(d.ScoreSum)*100/float64(d.Checks)) / 100
		}
	}
	return sdkui.LineChart("Average score by day", labels, []sdkui.Series{{Name: "Average score", Values: values}}, nil), nil
}

// perTenant is each tenant's figures, when there are several.
func perTenant(sum Summary) template.HTML {
	if len(sum.Tenants) < 2 {
		return ""
	}
	byName := slices.Clone(sum.Tenants)
	slices.SortStableFunc(byName, func(a, b TenantFiguresItem) int { return strings.Compare(a.TenantName, b.TenantName) })
	rows := make([][]any, 0, len(byName))
	for _, t := range byName {
		avg := "–"
		if t.AverageScore != nil {
			avg = sdkui.FormatNumber(*t.AverageScore)
		}
		dkim := "–"
		if t.DKIMCoverage != nil {
			dkim = sdkui.FormatNumber(*t.DKIMCoverage) + " %"
		}
		rows = append(rows, []any{t.TenantName, count(t.Domains), avg, count(t.Reject), dkim, count(t.DNSErrors)})
	}
	return sdkui.Table([]string{"Tenant", "Domains", "Average score", "p=reject", "DKIM coverage", "DNS failures"}, rows, "Posture of each tenant")
}

// view is what the page's lists know of the request.
type view struct {
	tenants []string
	// many is set when the caller sees several tenants and the page is
	// not scoped to one, which adds a tenant column.
	many bool
	// scoped is set when the page is of the one tenant its tenant_id
	// names, which the API links name too.
	scoped bool
}

func viewOf(r *http.Request) view {
	tenants := sdkui.Tenants(r)
	return view{tenants: tenants, many: len(tenants) > 1, scoped: sdk.ViewTenant(r) != ""}
}

// link is an API path with the page's tenant, when it is scoped, and the
// largest page.
func (v view) link(path string, q url.Values) string {
	q.Set("limit", strconv.Itoa(apiPage))
	if v.scoped {
		q.Set("tenant_ids", v.tenants[0])
	}
	return path + "?" + q.Encode()
}

// domainsFragment is the domains of the tenants the request covers,
// weakest first, with their grade, figures and first findings.
func (h *Handlers) domainsFragment(w http.ResponseWriter, r *http.Request) {
	v := viewOf(r)
	list, err := h.domainPage(r.Context(), Filter{TenantIDs: v.tenants, SortBy: "score", Limit: domainsShown})
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if list.Total == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty(noData))
		return
	}
	rows := make([][]any, 0, len(list.Items))
	for _, d := range list.Items {
		grade, score := sdkui.Badge("Not checked", sdkui.Unknown), "–"
		if d.Grade != nil {
			grade = sdkui.Badge("Grade "+*d.Grade, gradeHealth(*d.Grade))
		}
		if d.Score != nil {
			score = strconv.Itoa(*d.Score)
		}
		policy, lookups, dkim := "–", "–", "–"
		if d.DMARCPolicy != nil {
			policy = "none published"
			if *d.DMARCPolicy != "" {
				policy = "p=" + *d.DMARCPolicy
			}
		}
		if d.SPFLookups != nil {
			lookups = strconv.Itoa(*d.SPFLookups)
		}
		if d.DKIMPresent != nil {
			dkim = strconv.Itoa(*d.DKIMPresent)
		}
		checked := template.HTML("never")
		if d.CheckedAt != nil {
			checked = sdkui.Time(*d.CheckedAt)
		}
		if d.DNSError != "" {
			checked = render("lines", struct {
				Main   template.HTML
				Detail string
			}{checked, "DNS failed some lookups"})
		}
		cells := []any{render("domain", struct {
			DomainItem
			Href string
		}{d, v.domainAt(d.ID)}), grade, score, policy, lookups, dkim, findings(d.Findings), checked}
		if v.many {
			cells = slices.Insert(cells, 1, any(d.TenantName))
		}
		rows = append(rows, cells)
	}
	cols := []string{"Domain", "Grade", "Score", "DMARC", "SPF lookups", "DKIM keys", "Findings", "Checked"}
	if v.many {
		cols = slices.Insert(cols, 1, "Tenant")
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(
		sdkui.Table(cols, rows, "Domains by score, lowest first"),
		more(len(rows), list.Total, "domains", v.link(domainsAPI, url.Values{"sort_by": {"score"}})),
		render("domain-slot", nil),
	))
}

// more says how many of a list's rows a section shows, with a link to
// all of them on the API.
func more(shown, total int, what, href string) template.HTML {
	return render("more", struct {
		Shown, Total, What, Href string
		PageSize                 int
	}{count(int64(shown)), count(int64(total)), what, href, apiPage})
}

// findings is a domain's findings cell: the first few as badges of
// their codes in their severity's colour, worst first as the check
// ordered them, and how many more there are; the messages and fixes are
// on the domain's detail, which the domain's name opens under the table.
func findings(list []FindingItem) template.HTML {
	if len(list) == 0 {
		return sdkui.Badge("None", sdkui.OK)
	}
	shown := list[:min(len(list), findingsShown)]
	badges := make([]template.HTML, len(shown))
	for i, f := range shown {
		badges[i] = sdkui.Badge(strings.ReplaceAll(f.Code, "_", " "), severityHealth(f.Severity))
	}
	return render("findings", struct {
		Badges []template.HTML
		More   int
	}{badges, len(list) - len(shown)})
}

// eventsFragment is the latest weakenings of the tenants the request
// covers.
func (h *Handlers) eventsFragment(w http.ResponseWriter, r *http.Request) {
	v := viewOf(r)
	rows, total, err := h.Store.Events(r.Context(), EventFilter{TenantIDs: v.tenants, Limit: eventsShown})
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if total == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty("No weakening found between checks."))
		return
	}
	out := make([][]any, 0, len(rows))
	for _, e := range rows {
		out = append(out, []any{sdkui.Time(e.OccurredAt), e.Domain, sdkui.Badge(e.Severity, severityHealth(e.Severity)), e.Message})
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(
		sdkui.Table([]string{"When", "Domain", "Severity", "What weakened"}, out, "Posture weakenings, newest first"),
		more(len(rows), total, "weakenings", v.link("/api/v1/dmarc/events", url.Values{"days": {"3650"}})),
	))
}

// markup is the page's own HTML beside the kit's components, on the host's
// CSS classes. No script and no style attribute: the host's
// Content-Security-Policy forbids both.
var markup = template.Must(template.New("views").Parse(`
{{- define "lines"}}{{.Main}}<br><span class="muted">{{.Detail}}</span>{{end}}
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
{{- define "domain"}}<a href="{{.Href}}" hx-get="{{.Href}}" hx-target="#dmarc-domain-detail" hx-swap="innerHTML show:top">{{.Domain}}<span class="visually-hidden">: its checks and findings</span></a>{{if .IsDefault}}<br><span class="muted">default domain</span>{{else if eq .Source "admin"}}<br><span class="muted">added by an admin</span>{{end}}{{end}}
{{- define "findings"}}{{range $i, $b := .Badges}}{{if $i}} {{end}}{{$b}}{{end}}{{if .More}} <span class="muted">and {{.More}} more</span>{{end}}{{end}}
{{- define "domain-slot"}}<div id="dmarc-domain-detail"></div>{{end}}
{{- define "domain-detail" -}}
<section class="stack" aria-labelledby="dmarc-domain-title">
<h3 id="dmarc-domain-title">{{.Domain}}</h3>
{{.Parts}}
<h4>Findings</h4>
{{.Finding}}
</section>
{{- end}}
{{- define "more" -}}
<p class="muted">{{.Shown}} of {{.Total}} {{.What}}. <a href="{{.Href}}">All {{.What}} as JSON</a>, {{.PageSize}} a page.</p>
{{- end}}
`))

// stack spaces blocks one under the other, as the kit's Join does not.
func stack(parts ...template.HTML) template.HTML { return render("stack", parts) }

// render executes one of markup's templates. Their data are this package's
// own, which they cannot fail on, so an error is a bug here.
func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := markup.ExecuteTemplate(&b, name, data); err != nil {
		panic("domains: " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
