package views

import (
	"cmp"
	"context"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Coverage at or above these is healthy, or a warning; below is
// critical. A framework's coverage is the share of its controls some
// policy of the tenants maps to.
const (
	healthyCoverage = 80.0
	warningCoverage = 50.0
)

// coverageMeaning says what coverage counts, beside its figures: a
// control is covered when a policy in scope maps to it (package mapping:
// any status but not_covered), so a control whose every policy fails is
// covered too. Read as a pass rate, the figure would mislead.
const (
	coverageNotCompliance = "Coverage is not compliance."
	coverageMeaning       = "A control counts as covered when at least one policy that Azure Policy evaluates in the tenants' subscriptions " +
		"maps to it, by its initiative group or by keywords in its name, whether that policy passes or fails. " +
		"Whether the mapped policies pass is each control's status below, and the compliance figures above."
)

// viewIn is the parameters of the compliance page and of its framework
// section: the tenant picked and the framework to show.
type viewIn struct {
	Tenant    sdk.TenantID `query:"tenant_id"`
	Framework string       `query:"framework" maxLength:"64" doc:"The framework to show, the first when none is named"`
}

// frameworksFragment is the framework section on its own, which its
// picker reloads.
func (h *Handlers) frameworksFragment(w http.ResponseWriter, r *http.Request, in *viewIn) {
	section, err := h.frameworks(r.Context(), in, sdkui.Tenants(r))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, section)
}

// frameworks is the framework section: each framework's coverage by the
// tenants' policies, the framework picker, and the picked framework's
// categories and controls — the one the request's framework names, else
// the first. A framework not loaded is said so, beside the others.
func (h *Handlers) frameworks(ctx context.Context, in *viewIn, tenants []string) (template.HTML, error) {
	all, err := h.Coverage.Frameworks(ctx, tenants)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return render("frameworks", frameworksView{Body: sdkui.Empty("No frameworks are loaded.")}), nil
	}
	bars := make([]sdkui.Bar, 0, len(all))
	for _, f := range all {
		c := f.CoverageSummary
		bars = append(bars, sdkui.Bar{Label: f.Name + " " + f.Version, Used: float64(c.ControlsWithCoverage), Limit: float64(f.TotalControls),
			Unit: "controls covered", Health: sdkui.AtLeast(c.OverallCoveragePercent, healthyCoverage, warningCoverage)})
	}
	picked := cmp.Or(in.Framework, all[0].ID)
	v := frameworksView{Overview: sdkui.BarChart("Controls of each framework that the tenants' policies cover", bars), Caveat: coverageNotCompliance, Meaning: coverageMeaning,
		Disclaimer: mapping.Disclaimer, Action: FrameworksPath, Page: PagePath, TenantID: string(in.Tenant)}
	for _, f := range all {
		v.Options = append(v.Options, option{ID: f.ID, Name: f.Name + " " + f.Version, Selected: f.ID == picked})
	}
	if !slices.ContainsFunc(all, func(f mapping.Summary) bool { return f.ID == picked }) {
		v.Body = sdkui.Empty("There is no framework " + strconv.Quote(picked) + ". Pick one of the frameworks above.")
		return render("frameworks", v), nil
	}
	d, err := h.Coverage.Detail(ctx, picked, tenants, mapping.Options{IncludePolicies: true, Explain: true})
	if err != nil {
		return "", err
	}
	v.Body = detail(d, string(in.Tenant))
	return render("frameworks", v), nil
}

// frameworksView is the framework section as its template draws it.
type frameworksView struct {
	Overview template.HTML
	// Caveat and Meaning say what coverage means, beside the overview.
	Caveat, Meaning string
	Disclaimer      string
	// Action is the fragment the picker reloads the section from, Page
	// the page it falls back to without script.
	Action, Page string
	TenantID     string
	Options      []option
	Body         template.HTML
}

// option is a framework in the picker.
type option struct {
	ID, Name string
	Selected bool
}

// detail is a framework's coverage: its categories as bars, then each
// category with its controls, each control with its matched policies and
// why they matched, and a link to the same as JSON, of the tenant picked
// when one is.
func detail(d *mapping.Detail, tenant string) template.HTML {
	bars := make([]sdkui.Bar, 0, len(d.Categories))
	categories := make([]categoryView, 0, len(d.Categories))
	for _, c := range d.Categories {
		covered := 0
		controls := make([]controlView, 0, len(c.Controls))
		for _, ctl := range c.Controls {
			if ctl.Status != mapping.StatusNotCovered {
				covered++
			}
			controls = append(controls, control(ctl, tenant))
		}
		bars = append(bars, sdkui.Bar{Label: c.Name + " (" + c.ID + ")", Used: float64(covered), Limit: float64(len(c.Controls)),
			Unit: "controls covered", Health: sdkui.AtLeast(c.CoveragePercent, healthyCoverage, warningCoverage)})
		categories = append(categories, categoryView{Name: c.Name, ID: c.ID,
			Summary:  strconv.Itoa(covered) + " of " + strconv.Itoa(len(c.Controls)) + " controls covered, " + percent(c.CoveragePercent),
			Controls: controls})
	}
	q := url.Values{"include_policies": {"true"}, "explain": {"true"}}
	if tenant != "" {
		q.Set("tenant_ids", tenant)
	}
	return render("framework", struct {
		Name, Summary, Href, Report string
		Bars                        template.HTML
		Categories                  []categoryView
	}{d.Framework.Name + " " + d.Framework.Version, percent(d.OverallCoveragePercent) + " of its controls are covered: a policy of the tenants maps to each, passing or not.",
		"/api/v1/compliance/frameworks/" + url.PathEscape(d.Framework.ID) + "?" + q.Encode(), reportLink(d.Framework.ID, tenant),
		sdkui.BarChart("Controls of each category that the tenants' policies cover", bars), categories})
}

// categoryView is a category as the framework template draws it.
type categoryView struct {
	Name, ID, Summary string
	Controls          []controlView
}

// controlView is a control as the framework template draws it.
type controlView struct {
	ID, Name, Description, Counts string
	Status                        template.HTML
	Policies                      template.HTML
}

// control is a control's status, its resources by outcome and its matched
// policies with the explanation of each match, each policy that fails a
// resource linking the policy page of its failing resources (of the
// tenant picked when one is).
func control(c mapping.ControlCoverage, tenant string) controlView {
	v := controlView{ID: c.ID, Name: c.Name, Description: c.Description, Status: statusBadge(c.Status)}
	if c.MatchedPoliciesCount == 0 {
		v.Policies = render("note", "No policy of the tenants maps to this control.")
		return v
	}
	v.Counts = "policies mapped " + strconv.Itoa(c.MatchedPoliciesCount) + ", resources passing " + strconv.Itoa(c.CompliantCount) +
		" (exempt " + strconv.Itoa(c.ExemptCount) + "), failing " + strconv.Itoa(c.NonCompliantCount) + ", " + percent(c.CompliancePercent) + " passing"
	rows := make([][]any, 0, len(c.MatchedPolicies))
	for _, p := range c.MatchedPolicies {
		name := any(p.PolicyName)
		if p.NonCompliantCount > 0 {
			name = render("anchor", struct{ Href, Text string }{policyLink(p.PolicyDefinitionID, tenant, 0), p.PolicyName})
		}
		rows = append(rows, []any{name, stateBadge(p.ComplianceState), count(int64(p.NonCompliantCount)), explanation(p)})
	}
	v.Policies = sdkui.Table([]string{"Policy", "State", "Non-compliant resources", "Why it maps"}, rows, "Policies mapped to "+c.ID+", non-compliant first")
	return v
}

// explanation says why a policy maps to a control: the tier, and the
// group name, keyword set or override that matched, with the confidence.
func explanation(p mapping.MatchedPolicy) template.HTML {
	if p.Tier == 1 {
		return twoLines("Group name "+p.GroupName, "tier 1, "+p.MappingConfidence+" confidence")
	}
	if p.Override != "" {
		return twoLines("Override: "+p.Override, "tier 2, "+p.MappingConfidence+" confidence")
	}
	return twoLines("Keywords "+strings.Join(p.Keywords, ", "), "tier 2, "+p.MappingConfidence+" confidence")
}

// statusBadge is a control's status in its colour.
func statusBadge(status string) template.HTML {
	switch status {
	case mapping.StatusCovered:
		// Not "Covered": a control is covered whatever its policies'
		// compliance, and this status is that they pass.
		return sdkui.Badge("Compliant", sdkui.OK)
	case mapping.StatusPartial:
		return sdkui.Badge("Partial", sdkui.Warning)
	case mapping.StatusNonCompliant:
		return sdkui.Badge("Non-compliant", sdkui.Critical)
	case mapping.StatusNotEvaluated:
		return sdkui.Badge("Not evaluated", sdkui.Unknown)
	}
	return sdkui.Badge("Not covered", sdkui.Unknown)
}

// stateBadge is a policy's compliance state in its colour.
func stateBadge(state string) template.HTML {
	switch state {
	case mapping.StateCompliant:
		return sdkui.Badge("Compliant", sdkui.OK)
	case mapping.StateNonCompliant:
		return sdkui.Badge("Non-compliant", sdkui.Critical)
	}
	return sdkui.Badge("Unknown", sdkui.Unknown)
}
