package pages

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/jobs"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// The host's own fragments. Each is a route of its own, loaded by htmx into
// a page's slot and answered to API clients as the same HTML.
const (
	SyncStatusCardPath   = "/partials/sync-status-card"
	SyncHistoryTablePath = "/partials/sync-history-table"
	TenantSyncStatusPath = "/partials/tenant-sync-status"
	ActiveAlertsPath     = "/partials/active-alerts"
)

// syncDashboardPath is the Sync page's.
const syncDashboardPath = "/sync-dashboard"

// ResolutionNotesField is the resolve form's field for the resolution
// notes.
const ResolutionNotesField = "resolution_notes"

// maxResolutionNotes is the sync API's bound on the notes.
const maxResolutionNotes = 4000

// ResolveAlertPath is where an alert's Resolve form posts: the host's form
// endpoint, which resolves the alert and answers the refreshed
// ActiveAlerts fragment.
func ResolveAlertPath(alertID int64) string {
	return ActiveAlertsPath + "/" + strconv.FormatInt(alertID, 10) + "/resolve"
}

// SyncStatusCard is every registered sync job with its last and next run:
// a row of headline counts over a table. st is the scheduler's status as
// the viewer may see it (StatusResponse.Redacted for a standard user); now
// is when it was read, shown as the card's "Updated" time since the page
// refreshes it.
func SyncStatusCard(st jobs.StatusResponse, now time.Time) template.HTML {
	if len(st.Jobs) == 0 {
		return sdkui.Empty("No sync jobs are registered yet. Jobs arrive with the plugins that sync data.")
	}
	var running, queued, failing int
	rows := make([][]any, 0, len(st.Jobs))
	for _, j := range st.Jobs {
		running += j.Running
		queued += j.Queued
		last := sdkui.Badge("Never ran", sdkui.Unknown)
		details := ""
		if r := j.LastRun; r != nil {
			if r.Status == jobs.StatusFailed {
				failing++
			}
			at := r.QueuedAt
			if r.CompletedAt != nil {
				at = *r.CompletedAt
			} else if r.StartedAt != nil {
				at = *r.StartedAt
			}
			last = lines(runBadge(r.Status), sdkui.Time(at))
			details = summaryDetails(*r)
		}
		if active := activeCounts(j.Running, j.Queued); active != "" {
			last = lines(last, muted(active))
		}
		next := muted("Manual only")
		if j.NextRun != nil {
			next = sdkui.Time(*j.NextRun)
		}
		rows = append(rows, []any{jobCell(j.JobType, j.Plugin, j.Name), last, next, details})
	}
	failHealth := sdkui.OK
	if failing > 0 {
		failHealth = sdkui.Critical
	}
	return stack(
		sdkui.Grid(
			sdkui.Stat("Sync jobs", strconv.Itoa(len(st.Jobs)), "registered", ""),
			sdkui.Stat("Running", strconv.Itoa(running), strconv.Itoa(queued)+" queued", ""),
			sdkui.Stat("Failing", strconv.Itoa(failing), "jobs whose last run failed", failHealth),
		),
		sdkui.Table([]string{"Job", "Last run", "Next run", "Details"}, rows, "Sync jobs"),
		execFragment("updated", sdkui.Time(now)),
	)
}

// SyncHistoryTable is the latest runs, newest first, as the viewer may see
// them (HistoryResponse.Redacted for a standard user). names tells how to
// call the users who triggered runs (tenancy.Store.UserNames); an actor
// without one is shown by its id.
func SyncHistoryTable(h jobs.HistoryResponse, names map[string]string) template.HTML {
	if len(h.Logs) == 0 {
		return sdkui.Empty("No sync has run yet.")
	}
	rows := make([][]any, 0, len(h.Logs))
	for _, r := range h.Logs {
		status := runBadge(r.Status)
		if r.Attempts > 1 {
			status = lines(status, muted("attempt "+strconv.Itoa(r.Attempts)))
		}
		trigger := "Scheduled"
		if r.Trigger == jobs.TriggerManual {
			trigger = "Manual"
			if r.TriggeredBy != nil && *r.TriggeredBy != "" {
				trigger = "Manual, by " + cmp.Or(names[*r.TriggeredBy], *r.TriggeredBy)
			}
		}
		started := lines(muted("queued"), sdkui.Time(r.QueuedAt))
		if r.StartedAt != nil {
			started = sdkui.Time(*r.StartedAt)
		}
		duration := "—"
		if d := r.Duration(); d != nil {
			duration = formatDuration(*d)
		}
		rows = append(rows, []any{
			jobCell(r.JobType, r.Plugin, r.JobName), status, trigger, started, duration,
			sdkui.FormatNumber(float64(r.RecordsProcessed)), runDetails(r),
		})
	}
	return sdkui.Table([]string{"Job", "Status", "Trigger", "Started", "Duration", "Records", "Details"}, rows, "Recent sync runs")
}

// TenantSync is one tenant's row of the tenant sync status: the tenant and
// its freshness report as freshness.Store.Map answers it.
type TenantSync struct {
	ID        string
	Name      string
	Freshness freshness.TenantFreshness
}

// TenantSyncStatus shows, per tenant, when each data domain last synced
// and whether that is too long ago: older than the domain's threshold
// or never; and, where the report carries it (an admin's), that the latest
// sync failed since, and why. It counts every row it is given, so the
// caller passes only the tenants the viewer may see, and only the one
// tenant_id names when it scopes the request. With a limit above zero
// and more rows than it, the table shows that many: the tenants that need
// attention (stale, or a sync failed) first, then the others in the order
// given, and says how many it left out and where they all are (the Sync
// page, which shows every row).
func TenantSyncStatus(rows []TenantSync, thresholds map[string]time.Duration, now time.Time, limit int) template.HTML {
	if len(rows) == 0 {
		return sdkui.Empty("No tenants to show.")
	}
	// Map reports every tenant on the same domains; the union keeps a
	// column for each even if one row lacks it.
	var domains []string
	seen := map[string]bool{}
	for _, r := range rows {
		for _, d := range r.Freshness.Domains {
			if !seen[d.Domain] {
				seen[d.Domain] = true
				domains = append(domains, d.Domain)
			}
		}
	}
	columns := append([]string{"Tenant", "Status"}, make([]string, len(domains))...)
	for i, d := range domains {
		columns[2+i] = capitalize(d)
	}
	stale := 0
	for _, r := range rows {
		if r.Freshness.Stale {
			stale++
		}
	}
	all := len(rows)
	if limit > 0 && limit < all {
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b TenantSync) int {
			return cmp.Compare(needsAttention(b.Freshness), needsAttention(a.Freshness))
		})
		rows = rows[:limit]
	}
	cells := make([][]any, 0, len(rows))
	for _, r := range rows {
		name := r.Name
		if name == "" {
			name = r.ID
		}
		status := sdkui.Badge("Up to date", sdkui.OK)
		if r.Freshness.Stale {
			status = sdkui.Badge("Stale", sdkui.Warning)
		}
		row := []any{strong(name), status}
		for _, domain := range domains {
			row = append(row, domainCell(r.Freshness, domain, thresholds, now))
		}
		cells = append(cells, row)
	}
	health := sdkui.OK
	if stale > 0 {
		health = sdkui.Warning
	}
	parts := []template.HTML{
		sdkui.Grid(sdkui.Stat("Tenants with stale data", strconv.Itoa(stale)+" of "+strconv.Itoa(all), "", health)),
		sdkui.Table(columns, cells, "Data freshness by tenant"),
	}
	if len(rows) < all {
		parts = append(parts, execFragment("moretenants", struct {
			Shown, All int
			Path       string
		}{len(rows), all, syncDashboardPath}))
	}
	return stack(parts...)
}

// needsAttention is 1 for a tenant whose data is stale or whose latest
// sync of a domain failed, 0 otherwise.
func needsAttention(f freshness.TenantFreshness) int {
	if f.Stale || slices.ContainsFunc(f.Domains, func(d freshness.DomainFreshness) bool { return d.Failure != "" }) {
		return 1
	}
	return 0
}

// domainCell is one domain's freshness for a tenant, or a dash when the
// tenant's report lacks the domain.
func domainCell(tf freshness.TenantFreshness, domain string, thresholds map[string]time.Duration, now time.Time) template.HTML {
	for _, d := range tf.Domains {
		if d.Domain != domain {
			continue
		}
		parts := []any{sdkui.Badge("Never synced", sdkui.Warning)}
		if d.SyncedAt != nil {
			parts = []any{sdkui.Badge("Fresh", sdkui.OK), sdkui.Time(*d.SyncedAt)}
			if limit, ok := thresholds[domain]; ok && now.Sub(*d.SyncedAt) > limit {
				parts[0] = sdkui.Badge("Stale", sdkui.Warning)
			}
		}
		// An admin's report carries the latest failure's reason, which
		// says what to do.
		if d.Failure != "" {
			parts = append(parts, sdkui.Badge("Last sync failed", sdkui.Critical), muted(d.Failure))
		}
		return lines(parts...)
	}
	return muted("—")
}

// ActiveAlerts is the unresolved sync alerts, newest first as the
// scheduler lists them. An admin sees each alert's own title and message
// and a Resolve form that posts its notes to ResolveAlertPath, whose answer
// replaces the fragment; anyone else sees the alerts redacted, whatever
// they are given. The form carries no CSRF field: the fragment only ever
// shows inside a page, whose script sends the token with htmx's requests.
func ActiveAlerts(a jobs.AlertsResponse, admin bool) template.HTML {
	if !admin {
		a = a.Redacted()
	}
	columns := []string{"Severity", "Alert", "Job type", "Raised"}
	if admin {
		columns = append(columns, "Resolve")
	}
	var rows [][]any
	for _, al := range a.Alerts {
		if al.Resolved {
			continue
		}
		alert := strong(al.Title)
		if al.Message != "" {
			alert = lines(alert, al.Message)
		}
		row := []any{sdkui.Badge(capitalize(al.Severity), severityHealth(al.Severity)), alert, al.JobType, sdkui.Time(al.CreatedAt)}
		if admin {
			row = append(row, execFragment("resolve", struct {
				Path, ID, Title, NotesField string
				MaxNotes                    int
			}{ResolveAlertPath(al.ID), "resolve-notes-" + strconv.FormatInt(al.ID, 10), al.Title, ResolutionNotesField, maxResolutionNotes}))
		}
		rows = append(rows, row)
	}
	body := sdkui.Empty("No active sync alerts.")
	if len(rows) > 0 {
		body = sdkui.Table(columns, rows, "Active sync alerts")
	}
	return execFragment("alerts", body)
}

// runBadge is a run's status in its colour: a failure is critical, a
// completed run OK, and a run on its way neutral.
func runBadge(s jobs.RunStatus) template.HTML {
	switch s {
	case jobs.StatusCompleted:
		return sdkui.Badge("Completed", sdkui.OK)
	case jobs.StatusFailed:
		return sdkui.Badge("Failed", sdkui.Critical)
	case jobs.StatusRunning:
		return sdkui.Badge("Running", sdkui.Unknown)
	case jobs.StatusQueued:
		return sdkui.Badge("Queued", sdkui.Unknown)
	}
	return sdkui.Badge(capitalize(string(s)), sdkui.Unknown)
}

func severityHealth(severity string) sdkui.Health {
	switch severity {
	case jobs.SeverityError, "critical":
		return sdkui.Critical
	case "warning":
		return sdkui.Warning
	}
	return sdkui.Unknown
}

// summaryDetails is what a job's last run says beside its status: why it
// failed, or how much it did.
func summaryDetails(r jobs.RunSummary) string {
	if r.Status == jobs.StatusFailed {
		if r.ErrorMessage != nil {
			return *r.ErrorMessage
		}
		return ""
	}
	if r.Status != jobs.StatusCompleted {
		return ""
	}
	s := sdkui.FormatNumber(float64(r.RecordsProcessed)) + " records"
	if r.DurationSeconds != nil {
		s += " in " + formatDuration(time.Duration(*r.DurationSeconds*float64(time.Second)))
	}
	return s
}

// runDetails is a run's error, or its progress while it runs.
func runDetails(r jobs.Run) string {
	switch r.Status {
	case jobs.StatusFailed:
		if r.ErrorMessage != nil {
			return *r.ErrorMessage
		}
	case jobs.StatusRunning:
		var parts []string
		if r.Progress.Total > 0 {
			parts = append(parts, sdkui.FormatNumber(float64(r.Progress.Done))+" of "+sdkui.FormatNumber(float64(r.Progress.Total)))
		}
		if r.Progress.Message != "" {
			parts = append(parts, r.Progress.Message)
		}
		return strings.Join(parts, " · ")
	}
	return ""
}

func activeCounts(running, queued int) string {
	var parts []string
	if running > 0 {
		parts = append(parts, strconv.Itoa(running)+" running")
	}
	if queued > 0 {
		parts = append(parts, strconv.Itoa(queued)+" queued")
	}
	return strings.Join(parts, ", ")
}

// formatDuration is a run's duration for people: "42 s", "3 min 5 s",
// "2 h 10 min".
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return "under 1 s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

// capitalize upper-cases a word's first letter: job types, domains and
// severities are lower-case words.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func jobCell(jobType, plugin, name string) template.HTML {
	return lines(strong(jobType), muted(plugin+" · "+name))
}

// strong, muted and lines are built by hand: a table of every tenant's
// domains holds hundreds of them, and a template's execution costs tens of
// times more.
func strong(s string) template.HTML {
	return template.HTML("<strong>" + template.HTMLEscapeString(s) + "</strong>")
}

func muted(s string) template.HTML {
	return template.HTML(`<span class="muted">` + template.HTMLEscapeString(s) + "</span>")
}

// lines puts each part on a line of its own; a string is escaped, a
// template.HTML inserted as it is.
func lines(parts ...any) template.HTML {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("<br>")
		}
		switch p := p.(type) {
		case template.HTML:
			b.WriteString(string(p))
		default:
			template.HTMLEscape(&b, []byte(fmt.Sprint(p)))
		}
	}
	return template.HTML(b.String())
}

// stack spaces blocks one under the other.
func stack(parts ...template.HTML) template.HTML { return execFragment("stack", parts) }

// fragmentTemplates are the host fragments' own markup, on ui's CSS
// classes; the rest is sdk/ui's components.
var fragmentTemplates = template.Must(template.New("fragments").Parse(`
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
{{- define "updated"}}<p class="muted">Updated {{.}}</p>{{end}}

{{- define "alerts" -}}
<div data-fragment="active-alerts">{{.}}</div>
{{- end}}

{{- define "resolve" -}}
<form method="post" action="{{.Path}}" hx-post="{{.Path}}" hx-target="closest [data-fragment=active-alerts]" hx-swap="outerHTML" hx-disabled-elt="find button">
<label class="visually-hidden" for="{{.ID}}">Resolution notes for {{.Title}}</label>
<input id="{{.ID}}" name="{{.NotesField}}" maxlength="{{.MaxNotes}}" placeholder="Notes (optional)" autocomplete="off">
<button class="btn btn-small" type="submit">Resolve</button>
</form>
{{- end}}

{{- define "syncnow" -}}
<p class="muted">A sync runs for every tenant. Start one outside its schedule here and follow it in the recent runs below.</p>
<div class="swatches">
{{- range .}}<button class="btn btn-small" type="button" hx-post="{{.Path}}" hx-target="#sync-now-result" hx-swap="innerHTML" hx-disabled-elt="this">Sync {{.Type}} now</button>{{end -}}
</div>
<p class="mono" id="sync-now-result" role="status"></p>
{{- end}}

{{- define "moretenants"}}<p class="muted">{{.Shown}} of {{.All}} tenants shown, those that need attention first. <a href="{{.Path}}">Every tenant's data freshness is on the Sync page</a>.</p>{{end}}

{{- define "paragraph"}}<p class="muted">{{.}}</p>{{end}}
`))

// execFragment executes one of fragmentTemplates. Their data are this
// file's own, which they cannot fail on, so an error is a bug here.
func execFragment(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := fragmentTemplates.ExecuteTemplate(&b, name, data); err != nil {
		panic("pages: fragment " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
