package directory

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the views.
const (
	// StatsFragmentPath is the dashboard's identity card; the host shows
	// a placeholder there while no plugin serves it.
	StatsFragmentPath = "/partials/identity-stats"
	// PagePath is the identity page.
	PagePath = "/identity"
)

// noData is the empty state of a view before the first sync.
const noData = "No identity data yet. It arrives with the next identity sync."

// Coverage at or above these is healthy, or a warning; below is critical.
// Microsoft's own guidance is MFA for every account, so the bar is high.
const (
	mfaHealthy = 95.0
	mfaWarning = 80.0
)

// Views are the dashboard's identity card, the identity page and its
// navigation entry, served by h.
func (h *Handlers) Views() ([]sdk.Fragment, []sdk.Page, []sdk.NavEntry) {
	return []sdk.Fragment{{Path: StatsFragmentPath, Title: "Identity", Slot: "dashboard", RefreshSeconds: 600, Handler: h.statsFragment}},
		[]sdk.Page{{Path: PagePath, Title: "Identity", Handler: sdk.View(h.page)}},
		[]sdk.NavEntry{{Label: "Identity", Path: PagePath, Order: 40}}
}

// sumCounts adds up the tenants' figures.
func sumCounts(counts []TenantCounts) TenantCounts {
	var sum TenantCounts
	for _, c := range counts {
		sum.TotalUsers += c.TotalUsers
		sum.GuestUsers += c.GuestUsers
		sum.DisabledUsers += c.DisabledUsers
		sum.AdminUsers += c.AdminUsers
		sum.MFAUsers += c.MFAUsers
		sum.MemberUsers += c.MemberUsers
		sum.MemberMFAUsers += c.MemberMFAUsers
		sum.AdminMFAUsers += c.AdminMFAUsers
		sum.Devices += c.Devices
		sum.CompliantDevices += c.CompliantDevices
	}
	return sum
}

// statsFragment is the dashboard's identity card over the tenants the
// request covers (the one tenant_id names, else all the caller's): the MFA
// coverage as a gauge, admins without MFA, guests, stale accounts and
// device compliance.
func (h *Handlers) statsFragment(w http.ResponseWriter, r *http.Request) {
	// The snapshots' figures and the stale accounts' count read the
	// tenants' revision once.
	ctx := revcache.OneRead(r.Context())
	tenants := sdkui.Tenants(r)
	counts, err := h.Store.Counts(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if len(counts) == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty(noData))
		return
	}
	stale, err := h.Store.StaleCount(ctx, tenants, h.now().AddDate(0, 0, -defaultStaleDays))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	// One row per tenant, already counted in the database.
	sum := sumCounts(counts)
	adminsWithout := sum.AdminUsers - sum.AdminMFAUsers
	adminHealth := sdkui.OK
	if adminsWithout > 0 {
		adminHealth = sdkui.Critical
	}
	staleHealth := sdkui.OK
	if stale > 0 {
		staleHealth = sdkui.Warning
	}
	devices := sdkui.Stat("Compliant devices", "none managed", "", sdkui.Unknown)
	if p := percent(sum.CompliantDevices, sum.Devices); p != nil {
		devices = sdkui.Stat("Compliant devices", fmt.Sprintf("%.2f %%", *p),
			fmt.Sprintf("%d of %d managed devices", sum.CompliantDevices, sum.Devices), sdkui.AtLeast(*p, mfaHealthy, mfaWarning))
	}
	sdkui.WriteFragment(w, http.StatusOK, sdkui.Join(
		coverageGauge(sum),
		sdkui.Grid(
			sdkui.Stat("Admins without MFA", strconv.FormatInt(adminsWithout, 10), fmt.Sprintf("%d accounts hold a directory role", sum.AdminUsers), adminHealth),
			sdkui.Stat("Stale accounts", strconv.Itoa(stale), fmt.Sprintf("no sign-in for %d days", defaultStaleDays), staleHealth),
			sdkui.Stat("Guests", strconv.FormatInt(sum.GuestUsers, 10), "", ""),
			devices,
		)))
}

// coverageGauge is the MFA coverage of the enabled members as a gauge, or
// a stat saying there are none.
func coverageGauge(sum TenantCounts) template.HTML {
	p := percent(sum.MemberMFAUsers, sum.MemberUsers)
	if p == nil {
		return sdkui.Stat("MFA coverage", "no enabled members", "only guests and disabled accounts", sdkui.Unknown)
	}
	return sdkui.Gauge(*p, fmt.Sprintf("MFA coverage, %d of %d enabled members", sum.MemberMFAUsers, sum.MemberUsers), sdkui.AtLeast(*p, mfaHealthy, mfaWarning))
}
