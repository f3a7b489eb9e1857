package pages

import (
	"fmt"
	"html/template"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/jobs"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/ui"
)

const evil = `<script>alert(1)</script>`

var (
	t0      = time.Date(2026, 6, 13, 8, 0, 0, 0, time.UTC)
	started = t0.Add(-10 * time.Minute)
	ended   = t0.Add(-8 * time.Minute)
)

func ptr[T any](v T) *T { return &v }

func sampleStatus() jobs.StatusResponse {
	return jobs.StatusResponse{Jobs: []jobs.JobStatus{
		{Plugin: "costs", Name: "daily-export", JobType: "costs", Schedule: "@daily", NextRun: ptr(t0.Add(time.Hour)),
			LastRun: &jobs.RunSummary{JobID: "r1", Status: jobs.StatusFailed, QueuedAt: started, StartedAt: &started, CompletedAt: &ended,
				ErrorMessage: ptr("subscription sub-contoso-prod: " + evil)}},
		{Plugin: "resources", Name: "inventory", JobType: "resources", Running: 1, Queued: 2,
			LastRun: &jobs.RunSummary{JobID: "r2", Status: jobs.StatusRunning, QueuedAt: started, StartedAt: &started}},
		{Plugin: "identity", Name: "users", JobType: "identity",
			LastRun: &jobs.RunSummary{JobID: "r3", Status: jobs.StatusCompleted, QueuedAt: started, StartedAt: &started, CompletedAt: &ended,
				RecordsProcessed: 1204, DurationSeconds: ptr(120.0)}},
		{Plugin: evil, Name: "never", JobType: "partner"},
	}}
}

func sampleHistory() jobs.HistoryResponse {
	return jobs.HistoryResponse{Logs: []jobs.Run{
		{ID: "r1", Plugin: "costs", JobName: "daily-export", JobType: "costs", Trigger: jobs.TriggerManual, TriggeredBy: ptr("admin@contoso.example " + evil),
			Status: jobs.StatusFailed, QueuedAt: started, StartedAt: &started, CompletedAt: &ended, Attempts: 2,
			ErrorMessage: ptr("subscription sub-contoso-prod: " + evil)},
		{ID: "r2", Plugin: "resources", JobName: "inventory", JobType: "resources", Trigger: jobs.TriggerSchedule,
			Status: jobs.StatusRunning, QueuedAt: started, StartedAt: &started, Attempts: 1,
			Progress: jobs.Progress{Done: 3, Total: 10, Message: "tenant Fabrikam " + evil}},
		{ID: "r3", Plugin: "identity", JobName: "users", JobType: "identity", Trigger: jobs.TriggerSchedule,
			Status: jobs.StatusQueued, QueuedAt: t0, Attempts: 1},
	}}
}

func sampleAlerts() jobs.AlertsResponse {
	return jobs.AlertsResponse{Alerts: []jobs.Alert{
		{ID: 7, JobID: "r1", JobType: "costs", Severity: jobs.SeverityError, Title: "Cost sync failed for Contoso " + evil,
			Message: "subscription sub-contoso-prod: " + evil, CreatedAt: ended},
		{ID: 3, JobID: "r0", JobType: "identity", Severity: jobs.SeverityError, Title: "Identity sync failed",
			Message: "old failure", CreatedAt: started, Resolved: true, ResolvedAt: &ended, ResolvedBy: ptr("ops@example.com")},
	}}
}

func sampleTenants() []TenantSync {
	recent, old := t0.Add(-time.Hour), t0.Add(-30*time.Hour)
	return []TenantSync{
		{ID: "t1", Name: "Contoso " + evil, Freshness: freshness.TenantFreshness{Stale: true, Domains: []freshness.DomainFreshness{
			{Domain: "costs", SyncedAt: &old}, {Domain: "resources", SyncedAt: &recent}, {Domain: "identity"},
		}}},
		{ID: "t2", Name: "Fabrikam", Freshness: freshness.TenantFreshness{Domains: []freshness.DomainFreshness{
			{Domain: "costs", SyncedAt: &recent}, {Domain: "resources", SyncedAt: &recent}, {Domain: "identity", SyncedAt: &recent},
		}}},
	}
}

func contains(t *testing.T, what string, out template.HTML, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(string(out), w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

func lacks(t *testing.T, what string, out template.HTML, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(string(out), u) {
			t.Errorf("%s has %q:\n%s", what, u, out)
		}
	}
}

// everyOutput is each rendering of this package from the samples, admin
// and not.
func everyOutput() map[string]template.HTML {
	status, history, alerts := sampleStatus(), sampleHistory(), sampleAlerts()
	out := map[string]template.HTML{
		"status card":              SyncStatusCard(status, t0),
		"status card, redacted":    SyncStatusCard(status.Redacted(), t0),
		"status card, empty":       SyncStatusCard(jobs.StatusResponse{}, t0),
		"history":                  SyncHistoryTable(history, nil),
		"history, redacted":        SyncHistoryTable(history.Redacted(), nil),
		"history, empty":           SyncHistoryTable(jobs.HistoryResponse{}, nil),
		"tenant sync status":       TenantSyncStatus(sampleTenants(), thresholds, t0, 0),
		"tenant sync status, none": TenantSyncStatus(nil, nil, t0, 0),
		"alerts, admin":            ActiveAlerts(alerts, true),
		"alerts, standard user":    ActiveAlerts(alerts, false),
		"alerts, none":             ActiveAlerts(jobs.AlertsResponse{}, true),
	}
	for _, admin := range []bool{true, false} {
		body, _ := SyncDashboardBody([]string{"costs", evil, "resources"}, admin)
		out["sync dashboard, admin "+map[bool]string{true: "yes", false: "no"}[admin]] = body
	}
	out["sync dashboard, no job types"], _ = SyncDashboardBody(nil, true)
	out["slot page, no fragments"], _ = SlotBody(plugins.Views{}, "mail")
	return out
}

var eventHandler = regexp.MustCompile(`(?i)\son[a-z]+=|hx-on`)

func TestOutputsHaveNoInlineStyleOrScript(t *testing.T) {
	for name, out := range everyOutput() {
		if out == "" {
			t.Errorf("%s is empty", name)
		}
		lacks(t, name, out, "style=", "<script")
		if m := eventHandler.FindString(string(out)); m != "" {
			t.Errorf("%s has an event handler attribute %q", name, m)
		}
		if strings.Contains(string(out), "alert(1)") {
			contains(t, name, out, "&lt;script&gt;alert(1)&lt;/script&gt;")
		}
	}
}

func TestJobAndAlertTextIsEscaped(t *testing.T) {
	const escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
	contains(t, "status card", SyncStatusCard(sampleStatus(), t0), "subscription sub-contoso-prod: "+escaped, escaped+" · never")
	contains(t, "history", SyncHistoryTable(sampleHistory(), nil), "subscription sub-contoso-prod: "+escaped, "Manual, by admin@contoso.example "+escaped,
		"3 of 10 · tenant Fabrikam "+escaped)
	contains(t, "alerts", ActiveAlerts(sampleAlerts(), true), "Cost sync failed for Contoso "+escaped, "subscription sub-contoso-prod: "+escaped,
		`for Contoso `+escaped)
	contains(t, "tenant sync status", TenantSyncStatus(sampleTenants(), nil, t0, 0), "Contoso "+escaped)
}

// TestHistoryNamesWhoTriggered: a run is shown with the name of the user
// who asked for it, not the user's id; an actor without a name keeps its id.
func TestHistoryNamesWhoTriggered(t *testing.T) {
	h := sampleHistory()
	id := "0b9e6a52-3f7c-4d1e-9c55-8f1a2b3c4d5e"
	h.Logs[0].TriggeredBy = &id
	named := SyncHistoryTable(h, map[string]string{id: "Ada Lovelace " + evil})
	contains(t, "history", named, "Manual, by Ada Lovelace &lt;script&gt;")
	lacks(t, "history", named, id)
	contains(t, "history without the name", SyncHistoryTable(h, map[string]string{"someone-else": "Grace"}), "Manual, by "+id)
}

func TestStandardUsersSeeRedactedText(t *testing.T) {
	secret := "sub-contoso-prod"
	status := SyncStatusCard(sampleStatus().Redacted(), t0)
	contains(t, "redacted status card", status, jobs.RedactedText)
	lacks(t, "redacted status card", status, secret)

	history := SyncHistoryTable(sampleHistory().Redacted(), nil)
	contains(t, "redacted history", history, jobs.RedactedText, "Manual<")
	lacks(t, "redacted history", history, secret, "admin@contoso.example", "Fabrikam")

	// The alerts redact themselves for a standard user, whatever they are
	// handed.
	for name, a := range map[string]jobs.AlertsResponse{"raw": sampleAlerts(), "redacted": sampleAlerts().Redacted()} {
		out := ActiveAlerts(a, false)
		contains(t, name+" alerts", out, jobs.RedactedText, "costs sync failed")
		lacks(t, name+" alerts", out, secret, "Contoso")
	}
}

func TestResolveFormsOnlyForAdmins(t *testing.T) {
	admin := ActiveAlerts(sampleAlerts(), true)
	contains(t, "admin alerts", admin,
		`data-fragment="active-alerts"`,
		`hx-post="/partials/active-alerts/7/resolve"`, `action="/partials/active-alerts/7/resolve"`,
		`hx-target="closest [data-fragment=active-alerts]"`, `hx-swap="outerHTML"`,
		`name="resolution_notes"`, `maxlength="4000"`, `<label class="visually-hidden" for="resolve-notes-7">`,
		`>Resolve</button>`)
	if n := strings.Count(string(admin), "<form"); n != 1 {
		t.Errorf("admin alerts have %d forms, want 1 (the resolved alert has none):\n%s", n, admin)
	}
	lacks(t, "admin alerts", admin, "Identity sync failed", "/partials/active-alerts/3/")

	user := ActiveAlerts(sampleAlerts(), false)
	lacks(t, "standard user's alerts", user, "<form", "hx-post", "Resolve", "resolution_notes")
	contains(t, "standard user's alerts", user, `class="badge health-critical">Error<`)

	none := ActiveAlerts(jobs.AlertsResponse{Alerts: sampleAlerts().Alerts[1:]}, true)
	contains(t, "alerts, all resolved", none, `class="empty"`, "No active sync alerts.")
	lacks(t, "alerts, all resolved", none, "<table", "<form")

	if got := ResolveAlertPath(42); got != "/partials/active-alerts/42/resolve" {
		t.Errorf("ResolveAlertPath(42) = %q", got)
	}
}

func TestHistoryEmptyState(t *testing.T) {
	for _, h := range []jobs.HistoryResponse{{}, {Logs: []jobs.Run{}}} {
		out := SyncHistoryTable(h, nil)
		contains(t, "empty history", out, `class="empty"`, "No sync has run yet.")
		lacks(t, "empty history", out, "<table")
	}
	out := SyncHistoryTable(sampleHistory(), nil)
	if n := strings.Count(string(out), "<tr><td>"); n != 3 {
		t.Errorf("history has %d body rows, want 3:\n%s", n, out)
	}
	contains(t, "history", out, "attempt 2", "Scheduled", "2 min 0 s", `<span class="muted">queued</span>`)
}

func TestRunHealthColours(t *testing.T) {
	status := SyncStatusCard(sampleStatus(), t0)
	contains(t, "status card", status,
		`class="badge health-critical">Failed<`, `class="badge health-unknown">Running<`, `class="badge health-ok">Completed<`,
		`class="badge health-unknown">Never ran<`, `class="stat health-critical"`, "1 running, 2 queued", "1,204 records in 2 min 0 s",
		"Manual only", `<time class="local-time" datetime="2026-06-13T09:00:00Z">`, `Updated <time class="local-time" datetime="2026-06-13T08:00:00Z">`)
	history := SyncHistoryTable(sampleHistory(), nil)
	contains(t, "history", history, `class="badge health-critical">Failed<`, `class="badge health-unknown">Running<`, `class="badge health-unknown">Queued<`)

	healthy := sampleStatus()
	healthy.Jobs = healthy.Jobs[1:]
	contains(t, "healthy status card", SyncStatusCard(healthy, t0), `class="stat health-ok"`)
	contains(t, "empty status card", SyncStatusCard(jobs.StatusResponse{}, t0), `class="empty"`, "No sync jobs are registered yet.")
}

// thresholds are of the kind the domain plugins' jobs declare.
var thresholds = map[string]time.Duration{"costs": 25 * time.Hour, "resources": 2 * time.Hour, "identity": 25 * time.Hour}

func TestTenantSyncStatusMarksStaleDomains(t *testing.T) {
	out := TenantSyncStatus(sampleTenants(), thresholds, t0, 0)
	contains(t, "tenant sync status", out,
		`<th scope="col">Tenant</th><th scope="col">Status</th><th scope="col">Costs</th><th scope="col">Resources</th><th scope="col">Identity</th>`,
		`class="badge health-warning">Stale<`, `class="badge health-warning">Never synced<`, `class="badge health-ok">Up to date<`,
		"1 of 2", `class="stat health-warning"`)
	rows := regexp.MustCompile(`<tr><td>.*?</tr>`).FindAllString(string(out), -1)
	if len(rows) != 2 {
		t.Fatalf("tenant sync status has %d rows, want 2:\n%s", len(rows), out)
	}
	// Contoso: costs 30 h old (over 25 h) stale, resources 1 h fresh,
	// identity never; Fabrikam: all fresh.
	for i, want := range [][]string{{"Stale", "Stale", "Fresh", "Never synced"}, {"Up to date", "Fresh", "Fresh", "Fresh"}} {
		got := regexp.MustCompile(`class="badge [a-z-]+">([^<]+)<`).FindAllStringSubmatch(rows[i], -1)
		var labels []string
		for _, m := range got {
			labels = append(labels, m[1])
		}
		if strings.Join(labels, ",") != strings.Join(want, ",") {
			t.Errorf("row %d badges = %v, want %v", i, labels, want)
		}
	}
	// An admin's report says a domain's latest sync failed, and why.
	failedAt := t0.Add(-time.Minute)
	failing := sampleTenants()[:1]
	failing[0].Freshness.Domains[2].Failure, failing[0].Freshness.Domains[2].FailedAt = "directory d-1 refused a token: grant admin consent", &failedAt
	contains(t, "a failed sync", TenantSyncStatus(failing, thresholds, t0, 0), `class="badge health-critical">Last sync failed<`,
		"directory d-1 refused a token: grant admin consent")
	if out := TenantSyncStatus([]TenantSync{{ID: "t1", Name: "C", Freshness: failing[0].Freshness.Redacted()}}, thresholds, t0, 0); strings.Contains(string(out), "Last sync failed") ||
		strings.Contains(string(out), "consent") {
		t.Errorf("a redacted report shows the failure: %s", out)
	}
	// Stricter thresholds make more stale.
	strict := TenantSyncStatus(sampleTenants()[1:], map[string]time.Duration{"costs": time.Minute}, t0, 0)
	contains(t, "strict tenant sync status", strict, `class="badge health-warning">Stale<`)

	contains(t, "no tenants", TenantSyncStatus(nil, nil, t0, 0), `class="empty"`, "No tenants to show.")
	unnamed := TenantSyncStatus([]TenantSync{{ID: "t-9"}}, nil, t0, 0)
	contains(t, "unnamed tenant", unnamed, "<strong>t-9</strong>")
}

// TestTenantSyncStatusLimitShowsAttentionFirst: past its limit the table
// keeps the tenants that need attention (stale, or a failed sync), counts
// every tenant in its figure and points to the Sync page for the rest.
func TestTenantSyncStatusLimitShowsAttentionFirst(t *testing.T) {
	recent := t0.Add(-time.Hour)
	fresh := func(id string) TenantSync {
		return TenantSync{ID: id, Name: "Fresh " + id, Freshness: freshness.TenantFreshness{Domains: []freshness.DomainFreshness{{Domain: "costs", SyncedAt: &recent}}}}
	}
	failed := fresh("f")
	failed.Name = "Failing"
	failed.Freshness.Domains[0].Failure, failed.Freshness.Domains[0].FailedAt = "403 Forbidden", &recent
	stale := sampleTenants()[0]
	rows := []TenantSync{fresh("a"), fresh("b"), failed, fresh("c"), stale, fresh("d")}

	out := TenantSyncStatus(rows, thresholds, t0, 3)
	contains(t, "limited", out, "1 of 6", "3 of 6 tenants shown", `href="/sync-dashboard"`)
	names := regexp.MustCompile(`<tr><td><strong>([^<]+)</strong>`).FindAllStringSubmatch(string(out), -1)
	var got []string
	for _, m := range names {
		got = append(got, m[1])
	}
	if want := []string{"Failing", template.HTMLEscapeString(stale.Name), "Fresh a"}; !slices.Equal(got, want) {
		t.Errorf("rows = %q, want %q", got, want)
	}

	// At or under the limit every row shows, in the order given, and
	// nothing points elsewhere.
	for _, limit := range []int{0, 6, 7} {
		out := TenantSyncStatus(rows, thresholds, t0, limit)
		if n := strings.Count(string(out), "<tr><td>"); n != 6 {
			t.Errorf("limit %d: %d rows, want 6", limit, n)
		}
		lacks(t, fmt.Sprintf("limit %d", limit), out, "tenants shown", "/sync-dashboard")
	}
}

func slotPaths(slots []ui.Slot) []string {
	var out []string
	for _, s := range slots {
		out = append(out, s.Path)
	}
	return out
}

func TestDashboardSlots(t *testing.T) {
	host := []ui.Slot{
		{Title: "Sync status", Path: "/partials/sync-status-card", RefreshSeconds: 30},
		{Title: "Active sync alerts", Path: "/partials/active-alerts"},
		{Title: "Data freshness", Path: "/partials/tenant-sync-status?limit=8", RefreshSeconds: 300, Wide: true},
	}
	equal := func(name string, got, want []ui.Slot) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d slots %v, want %d %v", name, len(got), slotPaths(got), len(want), slotPaths(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: slot %d = %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}

	equal("no plugins", DashboardSlots(plugins.Views{}), host)

	v := plugins.Views{Fragments: []plugins.Fragment{
		{Plugin: "testplugin", Path: "/partials/testplugin-items", Title: "Items", Slot: "dashboard", RefreshSeconds: 45},
		{Plugin: "dmarc", Path: "/partials/dmarc-domains", Title: "Domains", Slot: "dmarc"},
		{Plugin: "costs", Path: "/partials/cost-summary-card", Title: "Costs this month", Slot: "dashboard", RefreshSeconds: 600},
		{Plugin: "compliance", Path: "/partials/compliance-gauge", Title: "Compliance", Slot: "compliance"},
		{Plugin: "acme", Path: "/fragments/acme/findings", Slot: "dashboard"},
	}}
	want := append(append([]ui.Slot{}, host...),
		ui.Slot{Title: "Items", Path: "/partials/testplugin-items", RefreshSeconds: 45},
		ui.Slot{Title: "Costs this month", Path: "/partials/cost-summary-card", RefreshSeconds: 600},
		ui.Slot{Title: "acme", Path: "/fragments/acme/findings"},
	)
	equal("with plugins", DashboardSlots(v), want)
}

func TestSyncDashboardBody(t *testing.T) {
	body, _ := SyncDashboardBody([]string{"costs", "resources", "costs", "Costs", "../x", evil, "dmarc"}, true)
	contains(t, "admin's sync dashboard", body,
		`hx-post="/partials/sync-now/costs"`, `hx-post="/partials/sync-now/resources"`, `hx-post="/partials/sync-now/dmarc"`,
		`hx-target="#sync-now-result"`, `hx-swap="innerHTML"`, `id="sync-now-result" role="status"`, ">Sync costs now</button>")
	if n := strings.Count(string(body), "<button"); n != 3 {
		t.Errorf("admin's sync dashboard has %d buttons, want 3 (a job type the API refuses gets none):\n%s", n, body)
	}
	lacks(t, "admin's sync dashboard", body, "/partials/sync-now/Costs", "../x", "alert(1)")

	wantSlots := []ui.Slot{
		{Title: "Sync status", Path: "/partials/sync-status-card", RefreshSeconds: 30},
		{Title: "Recent sync runs", Path: "/partials/sync-history-table", Wide: true},
		{Title: "Active sync alerts", Path: "/partials/active-alerts"},
		{Title: "Data freshness", Path: "/partials/tenant-sync-status", RefreshSeconds: 300, Wide: true},
	}
	for _, admin := range []bool{true, false} {
		_, slots := SyncDashboardBody([]string{"costs"}, admin)
		if len(slots) != len(wantSlots) {
			t.Fatalf("admin %v: slots %v, want %v", admin, slotPaths(slots), slotPaths(wantSlots))
		}
		for i := range wantSlots {
			if slots[i] != wantSlots[i] {
				t.Errorf("admin %v: slot %d = %+v, want %+v", admin, i, slots[i], wantSlots[i])
			}
		}
	}

	user, _ := SyncDashboardBody([]string{"costs"}, false)
	lacks(t, "standard user's sync dashboard", user, "<button", "hx-post", "/partials/sync-now/")
	contains(t, "standard user's sync dashboard", user, "An administrator can start one")

	none, _ := SyncDashboardBody(nil, true)
	contains(t, "sync dashboard without jobs", none, `class="empty"`)
	lacks(t, "sync dashboard without jobs", none, "<button")
}

// TestSlotBody: a plugin's page with a Slot shows the fragments of that
// slot in order, or an empty state without any.
func TestSlotBody(t *testing.T) {
	body, slots := SlotBody(plugins.Views{Fragments: []plugins.Fragment{{Plugin: "testplugin", Path: "/partials/testplugin-items", Slot: "dashboard"}}}, "mail")
	contains(t, "slot page without fragments", body, `class="empty"`)
	if len(slots) != 0 {
		t.Errorf("slot page without fragments has slots %v", slotPaths(slots))
	}

	v := plugins.Views{Fragments: []plugins.Fragment{
		{Plugin: "mail", Path: "/partials/mail-domains", Title: "Domains", Slot: "mail", RefreshSeconds: 900},
		{Plugin: "testplugin", Path: "/partials/testplugin-items", Slot: "dashboard"},
		{Plugin: "mail", Path: "/partials/mail-reports", Title: "Aggregate reports", Slot: "mail"},
	}}
	body, slots = SlotBody(v, "mail")
	if body != "" {
		t.Errorf("slot page with fragments has content of its own: %s", body)
	}
	want := []ui.Slot{{Title: "Domains", Path: "/partials/mail-domains", RefreshSeconds: 900}, {Title: "Aggregate reports", Path: "/partials/mail-reports"}}
	if len(slots) != 2 || slots[0] != want[0] || slots[1] != want[1] {
		t.Errorf("slot page's slots = %+v, want %+v", slots, want)
	}
}

// TestSlotsCarryTheSelectedTenant renders the pages' slots through the
// host's layout: each fragment is asked for with the selected tenant, once.
func TestSlotsCarryTheSelectedTenant(t *testing.T) {
	u, err := ui.New(ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := plugins.Views{Fragments: []plugins.Fragment{
		{Plugin: "testplugin", Path: "/partials/testplugin-items", Title: "Items", Slot: "dashboard", RefreshSeconds: 30},
		{Plugin: "mail", Path: "/partials/mail-domains", Title: "Domains", Slot: "mail"},
	}}
	content, syncSlots := SyncDashboardBody([]string{"costs"}, true)
	mailContent, mailSlots := SlotBody(v, "mail")
	for name, d := range map[string]ui.PageData{
		"dashboard":      {Slots: DashboardSlots(v)},
		"sync dashboard": {Content: content, Slots: syncSlots},
		"slot page":      {Content: mailContent, Slots: mailSlots},
	} {
		d.Title, d.Path, d.TenantID = name, "/"+name, "t 1&x"
		w := httptest.NewRecorder()
		if err := u.Page(w, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gets := regexp.MustCompile(`hx-get="([^"]*)"`).FindAllStringSubmatch(w.Body.String(), -1)
		if len(gets) != len(d.Slots) {
			t.Fatalf("%s: %d slots rendered, want %d", name, len(gets), len(d.Slots))
		}
		for i, g := range gets {
			sep := "?"
			if strings.Contains(d.Slots[i].Path, "?") {
				sep = "&amp;"
			}
			if want := strings.ReplaceAll(d.Slots[i].Path, "&", "&amp;") + sep + "tenant_id=t&#43;1%26x"; g[1] != want {
				t.Errorf("%s: slot %d asks for %q, want %q", name, i, g[1], want)
			}
		}
	}
}

// BenchmarkTenantSyncStatus renders the fragment of 100 tenants with six
// domains each: all of them, as the Sync page shows it, and the
// dashboard's few.
func BenchmarkTenantSyncStatus(b *testing.B) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	domains := []string{"compliance", "costs", "dmarc", "identity", "partner", "resources"}
	thresholds := map[string]time.Duration{}
	rows := make([]TenantSync, 100)
	for i := range rows {
		tf := freshness.TenantFreshness{}
		for j, d := range domains {
			thresholds[d] = 24 * time.Hour
			at := now.Add(-time.Duration(i*j) * time.Hour)
			df := freshness.DomainFreshness{Domain: d, SyncedAt: &at}
			if j == 5 && i%10 == 0 {
				df.Failure, df.FailedAt = "429 Too Many Requests <throttled>", &now
			}
			tf.Domains = append(tf.Domains, df)
		}
		rows[i] = TenantSync{ID: fmt.Sprint(i), Name: fmt.Sprintf("Brand %d & Co", i), Freshness: tf}
	}
	for _, limit := range []int{0, dashboardTenantRows} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				TenantSyncStatus(rows, thresholds, now, limit)
			}
		})
	}
}
