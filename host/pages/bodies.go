package pages

import (
	"html/template"
	"regexp"
	"strconv"

	"github.com/stewardhq/steward/host/plugins"
	sdkui "github.com/stewardhq/steward/sdk/ui"
	"github.com/stewardhq/steward/ui"
)

// slotDashboard is the slot whose fragments (sdk.Fragment's Slot) the
// dashboard places; a plugin's page with a Slot places another's.
const slotDashboard = "dashboard"

// How often the pages reload the host's fragments. The sync status follows
// runs as they go; freshness changes only when a sync ends; the alerts are
// not reloaded by themselves, since a reload would wipe the notes an admin
// is typing into a Resolve form.
const (
	SyncStatusRefreshSeconds = 30
	tenantSyncRefreshSeconds = 300
	// dashboardTenantRows is how many tenants the dashboard's data
	// freshness table shows.
	dashboardTenantRows = 8
)

// The host's fragments as the dashboard and the sync dashboard place them.
// They carry no tenant_id: the layout adds the selected tenant
// (ui.PageData.TenantID) to every slot's path.
var (
	syncStatusSlot  = ui.Slot{Title: "Sync status", Path: SyncStatusCardPath, RefreshSeconds: SyncStatusRefreshSeconds}
	activeAlertSlot = ui.Slot{Title: "Active sync alerts", Path: ActiveAlertsPath}
	tenantSyncSlot  = ui.Slot{Title: "Data freshness", Path: TenantSyncStatusPath, RefreshSeconds: tenantSyncRefreshSeconds, Wide: true}
	// The dashboard's shows the tenants that need attention first, and a
	// few of them: with a hundred tenants, the full table is the Sync
	// page's.
	dashboardTenantSyncSlot = ui.Slot{Title: "Data freshness", Path: TenantSyncStatusPath + "?limit=" + strconv.Itoa(dashboardTenantRows), RefreshSeconds: tenantSyncRefreshSeconds, Wide: true}
	syncHistorySlot         = ui.Slot{Title: "Recent sync runs", Path: SyncHistoryTablePath, Wide: true}
)

// DashboardSlots are the dashboard's slots: the host's fragments, then the
// plugins' fragments for the "dashboard" slot in plugins.hcl's order. A
// plugin that is down keeps its slot, which shows it unavailable.
func DashboardSlots(v plugins.Views) []ui.Slot {
	slots := []ui.Slot{syncStatusSlot, activeAlertSlot, dashboardTenantSyncSlot}
	return append(slots, pluginSlots(v.InSlot(slotDashboard))...)
}

// syncJobType is the sync API's pattern for a job type in its path.
var syncJobType = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// SyncDashboardBody is the sync dashboard's content and slots. An admin
// gets a "Sync now" button per job type, in the order given, each posting
// to the host's POST /partials/sync-now/{job_type} and showing the answer in a status line
// under the buttons; a job type the API would refuse gets no button. The
// slots are the status card (reloaded every SyncStatusRefreshSeconds), the
// recent runs at the default limit, the active alerts and the tenants'
// data freshness.
func SyncDashboardBody(jobTypes []string, admin bool) (template.HTML, []ui.Slot) {
	slots := []ui.Slot{syncStatusSlot, syncHistorySlot, activeAlertSlot, tenantSyncSlot}
	if !admin {
		return execFragment("paragraph", "Syncs run on their schedules, each for every tenant. An administrator can start one at any time."), slots
	}
	type button struct{ Type, Path string }
	var buttons []button
	seen := map[string]bool{}
	for _, t := range jobTypes {
		if seen[t] || !syncJobType.MatchString(t) {
			continue
		}
		seen[t] = true
		// The pattern leaves nothing in t to escape in a path.
		buttons = append(buttons, button{t, "/partials/sync-now/" + t})
	}
	if len(buttons) == 0 {
		return sdkui.Card("Sync now", sdkui.Empty("No sync jobs are registered yet. Jobs arrive with the plugins that sync data.")), slots
	}
	return sdkui.Card("Sync now", execFragment("syncnow", buttons)), slots
}

// SlotBody is the content and slots of a page a plugin declares with a
// Slot (its description is the layout's lead): the fragments plugins
// declare for the slot, or an empty state while none does.
func SlotBody(v plugins.Views, slot string) (template.HTML, []ui.Slot) {
	fragments := v.InSlot(slot)
	if len(fragments) == 0 {
		return sdkui.Empty("Nothing to show yet: no enabled plugin serves this page's sections."), nil
	}
	return "", pluginSlots(fragments)
}

// pluginSlots places plugins' fragments, each under its title or, without
// one, its plugin's name.
func pluginSlots(fragments []plugins.Fragment) []ui.Slot {
	slots := make([]ui.Slot, 0, len(fragments))
	for _, f := range fragments {
		title := f.Title
		if title == "" {
			title = f.Plugin
		}
		slots = append(slots, ui.Slot{Title: title, Path: f.Path, RefreshSeconds: f.RefreshSeconds})
	}
	return slots
}
