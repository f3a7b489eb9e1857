package views

import (
	"html/template"
	"net/http"

	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// gauge is the dashboard's compliance card: the compliance percent as a
// gauge, the non-compliant resources and policies, the findings by
// severity and the last sync, and a link to the page.
func (h *Handlers) gauge(w http.ResponseWriter, r *http.Request) {
	s, err := h.States.Summary(r.Context(), sdkui.Tenants(r), h.Findings)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if s.TenantsWithData == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty(noData))
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(
		overall(s),
		sdkui.Grid(
			sdkui.Stat("Non-compliant resources", count(s.NonCompliantResources), "of "+count(s.TotalResources)+" with a policy state", sdkui.AtMost(float64(s.NonCompliantResources), 0, 0)),
			sdkui.Stat("Non-compliant policies", count(s.NonCompliantPolicies), "of "+count(s.TotalPolicies)+" policies", sdkui.AtMost(float64(s.NonCompliantPolicies), 0, 0)),
			severityStat(s.NonCompliantBySeverity),
		),
		synced(s),
		render("link", struct{ Href, Text string }{sdkui.WithTenant(PagePath, r), "Trend, non-compliant policies and framework coverage"}),
	))
}

// overall is the compliance percent as a gauge, or a stat saying why
// there is none.
func overall(s states.Summary) template.HTML {
	if s.OverallCompliancePercent == nil {
		return sdkui.Stat("Compliant resources", "not evaluated", "no resource is compliant or non-compliant yet", sdkui.Unknown)
	}
	p := *s.OverallCompliancePercent
	return sdkui.Gauge(p, "Compliant resources, "+count(s.CompliantResources)+" of "+count(s.CompliantResources+s.NonCompliantResources), sdkui.AtLeast(p, healthyPercent, warningPercent))
}

// severityStat counts the non-compliant findings by severity, in the
// colour of the highest.
func severityStat(c states.SeverityCounts) template.HTML {
	health := sdkui.OK
	switch {
	case c.High > 0:
		health = sdkui.Critical
	case c.Medium > 0:
		health = sdkui.Warning
	}
	return sdkui.Stat("High-severity findings", count(c.High), count(c.Medium)+" medium, "+count(c.Low)+" low", health)
}

// synced says when the tenants in view last synced.
func synced(s states.Summary) template.HTML {
	if s.LastSyncedAt == nil {
		return render("note", "No complete compliance sync yet.")
	}
	return render("synced", sdkui.Time(*s.LastSyncedAt))
}
