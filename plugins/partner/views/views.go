// Package views renders the partner plugin's page and dashboard fragment
// through the SDK's UI kit: the programme's deadline as a countdown, each
// tenant's maturity against the target, the gaps most pressing first and
// each tenant's requirements with their status and an evidence panel
// whose forms act through the evidence API (evidence.go). Like every page, it shows
// the tenant the host's picker names (tenant_id), else all the caller's.
package views

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the views.
const (
	// FragmentPath is the dashboard's partner card.
	FragmentPath = "/partials/partner-maturity"
	// PagePath is the partner page.
	PagePath = "/partner"
)

// What the page shows.
const (
	// gapsShown is how many gaps the page lists before linking to the API.
	gapsShown = 20
	// trendDays is how many days, today included, the trend charts.
	trendDays = 30
	// tenantsShown bounds the tenants whose requirement lists the page
	// shows when no tenant is picked.
	tenantsShown = 50
)

// noData is the empty state before the first partner sync.
const noData = "No tenant has been assessed yet. The assessment arrives with the next partner sync."

// Handlers serves the views.
type Handlers struct {
	Catalogue *catalogue.Catalogue
	Store     *checks.Store
	// Reads give the results their titles and expected evidence.
	Reads *checks.Handlers
	Host  *sdk.Host
	// Evidence are the evidence API's handlers, which the requirement
	// lists' evidence panels show and act through (EvidenceRoutes).
	Evidence *evidence.Handlers
	// Now is the countdown's clock; nil is time.Now.
	Now func() time.Time

	api sdk.LocalAPI
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

// Views are the dashboard's partner card, the partner page and its
// navigation entry, served by h.
func (h *Handlers) Views() ([]sdk.Fragment, []sdk.Page, []sdk.NavEntry) {
	return []sdk.Fragment{{Path: FragmentPath, Title: "Partner requirements", Slot: "dashboard", RefreshSeconds: 600, Handler: h.fragment}},
		[]sdk.Page{{Path: PagePath, Title: "Partner requirements", Handler: h.page}},
		[]sdk.NavEntry{{Label: "Partner", Path: PagePath, Order: 60}}
}

// deadlineHealth colours the countdown: critical within 30 days or past,
// a warning within 90.
func deadlineHealth(days int) sdkui.Health {
	switch {
	case days <= 30:
		return sdkui.Critical
	case days <= 90:
		return sdkui.Warning
	}
	return sdkui.OK
}

var statusHealth = map[string]sdkui.Health{checks.StatusMet: sdkui.OK, checks.StatusNotMet: sdkui.Critical,
	checks.StatusUnknown: sdkui.Unknown, checks.StatusAwaitingEvidence: sdkui.Warning}

var statusLabel = map[string]string{checks.StatusMet: "Met", checks.StatusNotMet: "Not met",
	checks.StatusUnknown: "Unknown", checks.StatusAwaitingEvidence: "Awaiting evidence"}

var priorityHealth = map[string]sdkui.Health{"critical": sdkui.Critical, "high": sdkui.Warning, "medium": sdkui.Unknown, "low": sdkui.Unknown}

// countdown is the deadline as a stat: the date and the days left.
func (h *Handlers) countdown() template.HTML {
	p := h.Catalogue.Programme
	days := checks.DaysLeft(p.Deadline, h.now())
	hint := fmt.Sprintf("%d days left", days)
	switch {
	case days == 0:
		hint = "due today"
	case days == 1:
		hint = "1 day left"
	case days < 0:
		hint = fmt.Sprintf("passed %d days ago", -days)
	}
	return sdkui.Stat(p.Partner+" deadline", p.Deadline.Format("2 Jan 2006"), hint, deadlineHealth(days))
}

// latest reads the tenants' latest assessments with their names.
func (h *Handlers) latest(ctx context.Context, tenants []string) ([]checks.Snapshot, map[string]string, error) {
	snaps, _, err := h.Store.Latest(ctx, tenants, checks.Window{Limit: len(tenants), SortBy: "maturity"})
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(snaps))
	for i, s := range snaps {
		ids[i] = s.TenantID
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	return snaps, names, err
}

// score is a maturity as it reads: "2.75 of 5".
func score(v float64) string {
	return sdkui.FormatNumber(v) + " of " + sdkui.FormatNumber(catalogue.MaxMaturity)
}

// maturityBars are the tenants' scores against the scale, lowest first.
func (h *Handlers) maturityBars(snaps []checks.Snapshot, names map[string]string) template.HTML {
	target := h.Catalogue.Programme.TargetMaturity
	bars := make([]sdkui.Bar, len(snaps))
	for i, s := range snaps {
		bars[i] = sdkui.Bar{Label: names[s.TenantID], Used: s.Maturity, Limit: catalogue.MaxMaturity, Unit: "maturity",
			Health: sdkui.AtLeast(s.Maturity, target, target-1)}
	}
	return sdkui.BarChart("Maturity of each tenant, lowest first, against the target "+score(target), bars)
}

// atTarget counts the snapshots at or above the target.
func atTarget(snaps []checks.Snapshot, target float64) int {
	n := 0
	for _, s := range snaps {
		if s.Maturity >= target {
			n++
		}
	}
	return n
}

// fragment is the dashboard's partner card: the countdown, the tenants at
// the target maturity and each tenant's score. The snapshots are kept by
// the Store until a run stores one of the tenants' assessments again; the
// countdown counts from the time of each view.
func (h *Handlers) fragment(w http.ResponseWriter, r *http.Request) {
	snaps, names, err := h.latest(r.Context(), sdkui.Tenants(r))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if len(snaps) == 0 {
		sdkui.WriteFragment(w, http.StatusOK, stack(sdkui.Grid(h.countdown()), sdkui.Empty(noData)))
		return
	}
	target := h.Catalogue.Programme.TargetMaturity
	n := atTarget(snaps, target)
	health := sdkui.OK
	if n < len(snaps) {
		health = sdkui.Warning
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(
		sdkui.Grid(h.countdown(), sdkui.Stat("Tenants at target maturity", fmt.Sprintf("%d of %d", n, len(snaps)), "target "+score(target), health)),
		h.maturityBars(snaps, names)))
}

// page is the partner page: the programme, each tenant's maturity and its
// trend, the gaps most pressing first and each tenant's requirements.
func (h *Handlers) page(w http.ResponseWriter, r *http.Request) {
	// The tenants' latest snapshots, their trend and their gaps read the
	// tenants' revision once.
	ctx := revcache.OneRead(r.Context())
	tenants := sdkui.Tenants(r)
	snaps, names, err := h.latest(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	p := h.Catalogue.Programme
	head := sdkui.Grid(h.countdown(),
		sdkui.Stat("Target maturity", score(p.TargetMaturity), "priority-weighted share of requirements met", ""),
		sdkui.Stat("Requirements", strconv.Itoa(len(h.Catalogue.Requirements)), fmt.Sprintf("in %d categories", len(h.Catalogue.Categories())), ""))
	parts := []template.HTML{sdkui.Card(p.Partner+" requirements", stack(note(p.Description), head))}
	if len(snaps) == 0 {
		sdkui.WriteFragment(w, http.StatusOK, stack(append(parts, sdkui.Empty(noData))...))
		return
	}
	parts = append(parts, sdkui.Card("Maturity per tenant", stack(h.maturityBars(snaps, names), maturityTable(snaps, names, p.TargetMaturity))))
	trend, err := h.trendChart(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	parts = append(parts, sdkui.Card(fmt.Sprintf("Maturity, last %d days", trendDays), trend))
	gaps, err := h.gaps(ctx, tenants, names)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	parts = append(parts, sdkui.Card("Gaps, most pressing first", gaps))
	for _, s := range snaps[:min(len(snaps), tenantsShown)] {
		list, err := h.requirements(ctx, s.TenantID)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		parts = append(parts, sdkui.Card("Requirements of "+names[s.TenantID], list))
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(parts...))
}

func maturityTable(snaps []checks.Snapshot, names map[string]string, target float64) template.HTML {
	rows := make([][]any, len(snaps))
	for i, s := range snaps {
		h := sdkui.AtLeast(s.Maturity, target, target-1)
		rows[i] = []any{names[s.TenantID], sdkui.Badge(score(s.Maturity), h), fmt.Sprintf("%d of %d", s.Met, s.Requirements),
			strconv.Itoa(s.Gaps), strconv.Itoa(s.CriticalGaps), sdkui.Time(s.CheckedAt)}
	}
	return sdkui.Table([]string{"Tenant", "Maturity", "Met", "Gaps", "Critical gaps", "Assessed"}, rows, "Maturity of each tenant, lowest first")
}

// trendChart charts the tenants' average daily maturity and the target
// over the trendDays days up to today; a day without an assessment has no
// point.
func (h *Handlers) trendChart(ctx context.Context, tenants []string) (template.HTML, error) {
	from := h.now().Truncate(24*time.Hour).AddDate(0, 0, 1-trendDays)
	snaps, err := h.Store.Trend(ctx, tenants, from.Format(time.DateOnly))
	if err != nil {
		return "", err
	}
	sum, n := map[string]float64{}, map[string]int{}
	for _, s := range snaps {
		sum[s.Day] += s.Maturity
		n[s.Day]++
	}
	labels := make([]string, trendDays)
	avg, target := make([]float64, trendDays), make([]float64, trendDays)
	for i := range trendDays {
		day := from.AddDate(0, 0, i).Format(time.DateOnly)
		labels[i], avg[i], target[i] = day, math.NaN(), h.Catalogue.Programme.TargetMaturity
		if n[day] > 0 {
			avg[i] = math.Round(100*sum[day]/float64(n[day])) / 100
		}
	}
	return sdkui.LineChart("Average maturity of the tenants by day", labels,
		[]sdkui.Series{{Name: "Average maturity", Values: avg}, {Name: "Target", Values: target}}, nil), nil
}

// check is a result's check as a cell: value against target, or why it
// has none.
func check(it checks.ResultItem) template.HTML {
	switch {
	case it.Target == nil:
		return twoLines("no automatic check", "")
	case it.Value == nil:
		return twoLines("unknown, target "+sdkui.FormatNumber(*it.Target)+" %", it.Reason)
	}
	return twoLines(sdkui.FormatNumber(*it.Value)+" % (target "+sdkui.FormatNumber(*it.Target)+" %)", it.Metric)
}

func status(s string) template.HTML { return sdkui.Badge(statusLabel[s], statusHealth[s]) }

func priority(p string) template.HTML { return sdkui.Badge(p, priorityHealth[p]) }

// gaps lists the tenants' requirements not met, critical first.
func (h *Handlers) gaps(ctx context.Context, tenants []string, names map[string]string) (template.HTML, error) {
	f := checks.ResultFilter{Tenants: tenants, Statuses: []string{checks.StatusNotMet, checks.StatusUnknown, checks.StatusAwaitingEvidence}}
	for _, req := range h.Catalogue.Requirements {
		f.Requirements = append(f.Requirements, req.ID)
	}
	rows, total, err := h.Store.Results(ctx, f, checks.Window{Limit: gapsShown, SortBy: "priority"})
	if err != nil {
		return "", err
	}
	out := make([][]any, len(rows))
	for i, it := range h.Reads.Items(rows) {
		out[i] = []any{names[it.TenantID], twoLines(it.Title, it.RequirementID), priority(it.Priority), status(it.Status), check(it)}
	}
	table := sdkui.Table([]string{"Tenant", "Requirement", "Priority", "Status", "Check"}, out, "Requirements not met, critical first")
	if total == 0 {
		return stack(note("Every requirement is met."), table), nil
	}
	return stack(table, note(fmt.Sprintf("%d of %d gaps shown; all of them: GET /api/v1/partner/results?gaps_only=true", len(rows), total))), nil
}

// requirements lists a tenant's requirements in catalogue order of
// priority with their status, check and evidence panel.
func (h *Handlers) requirements(ctx context.Context, tenantID string) (template.HTML, error) {
	f := checks.ResultFilter{Tenants: []string{tenantID}}
	for _, req := range h.Catalogue.Requirements {
		f.Requirements = append(f.Requirements, req.ID)
	}
	rows, _, err := h.Store.Results(ctx, f, checks.Window{Limit: len(f.Requirements), SortBy: "priority"})
	if err != nil {
		return "", err
	}
	panels, err := h.tenantEvidence(ctx, tenantID, f.Requirements)
	if err != nil {
		return "", err
	}
	out := make([][]any, len(rows))
	for i, it := range h.Reads.Items(rows) {
		out[i] = []any{twoLines(it.Title, it.RequirementID), it.Category, priority(it.Priority), status(it.Status), check(it), panels[it.RequirementID]}
	}
	return sdkui.Table([]string{"Requirement", "Category", "Priority", "Status", "Check", "Evidence"}, out, "Requirements by priority"), nil
}

// markup is the page's own HTML beside the kit's, on the host's CSS
// classes, without scripts or style attributes, which the host's
// Content-Security-Policy forbids.
var markup = template.Must(template.New("views").Parse(`
{{- define "note"}}{{if .}}<p class="muted">{{.}}</p>{{end}}{{end}}
{{- define "lines"}}{{.Main}}{{if .Detail}}<br><span class="muted">{{.Detail}}</span>{{end}}{{end}}
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
`))

func note(text string) template.HTML { return render("note", text) }

// twoLines is a table cell of a value over a muted detail.
func twoLines(main, detail string) template.HTML {
	return render("lines", struct{ Main, Detail string }{main, detail})
}

// stack spaces blocks one under the other.
func stack(parts ...template.HTML) template.HTML { return render("stack", parts) }

// render executes one of markup's templates, whose data are this
// package's own and cannot fail them, so an error is a bug here.
func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := markup.ExecuteTemplate(&b, name, data); err != nil {
		panic("views: " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
