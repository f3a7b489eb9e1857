package views

import (
	"cmp"
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// ReportPath is the printable report of one framework's controls over
// the tenants in scope, which the framework section links: the figures
// of the framework detail route, laid out for paper. The host's
// stylesheet prints it without the navigation, each category from a page
// of its own.
const ReportPath = "/compliance/report"

type reportIn struct {
	Tenant    sdk.TenantID `query:"tenant_id"`
	Framework string       `query:"framework" maxLength:"64" doc:"The framework to report on; without it the page lists the frameworks to pick from"`
}

// reportLink is the report of a framework, on the picked tenant when
// there is one.
func reportLink(frameworkID, tenant string) string {
	q := url.Values{"framework": {frameworkID}}
	if tenant != "" {
		q.Set("tenant_id", tenant)
	}
	return ReportPath + "?" + q.Encode()
}

// reportPage is the framework's report over the tenants the request
// covers; a framework not loaded is a 404, as its API route answers.
func (h *Handlers) reportPage(w http.ResponseWriter, r *http.Request, in *reportIn) {
	ctx := r.Context()
	tenants := sdkui.Tenants(r)
	var body template.HTML
	var err error
	if in.Framework == "" {
		body, err = h.reportChoice(ctx, tenants, string(in.Tenant))
	} else {
		body, err = h.report(ctx, in.Framework, tenants)
	}
	if err != nil {
		if errors.Is(err, mapping.ErrUnknownFramework) {
			err = sdk.NotFound("no framework with this id")
		}
		sdk.WriteError(w, err)
		return
	}
	sdkui.WriteFragment(w, http.StatusOK, body)
}

// reportChoice lists the frameworks, each linking its report.
func (h *Handlers) reportChoice(ctx context.Context, tenants []string, tenant string) (template.HTML, error) {
	all, err := h.Coverage.Frameworks(ctx, tenants)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return sdkui.Empty("No frameworks are loaded."), nil
	}
	links := make([]template.HTML, 0, len(all)+1)
	links = append(links, render("note", "Pick the framework to report on."))
	for _, f := range all {
		links = append(links, render("link", struct{ Href, Text string }{reportLink(f.ID, tenant), f.Name + " " + f.Version}))
	}
	return stack(links...), nil
}

// report is the framework's report: what it covers and when, the
// disclaimer, the controls counted by result, then each category's
// controls with their figures.
func (h *Handlers) report(ctx context.Context, frameworkID string, tenants []string) (template.HTML, error) {
	d, err := h.Coverage.Detail(ctx, frameworkID, tenants, mapping.Options{})
	if err != nil {
		return "", err
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, tenants)
	if err != nil {
		return "", err
	}
	tenantNames := make([]string, 0, len(tenants))
	for _, id := range tenants {
		tenantNames = append(tenantNames, cmp.Or(names[id], id))
	}
	slices.Sort(tenantNames)
	v := reportView{Title: d.Framework.Name + " " + d.Framework.Version, Tenants: strings.Join(tenantNames, ", "), Generated: sdkui.Time(h.now()),
		Disclaimer: d.Disclaimer, Back: PagePath + "?framework=" + url.QueryEscape(d.Framework.ID),
		Coverage: percent(d.OverallCoveragePercent)}
	for _, c := range d.Categories {
		cat := reportCategory{ID: c.ID, Name: c.Name, Anchor: "report-category-" + anchor(c.ID), Coverage: percent(c.CoveragePercent)}
		for _, ctl := range c.Controls {
			v.Controls++
			v.Results[resultIndex(ctl.Result)]++
			cat.Controls = append(cat.Controls, reportControl{ID: ctl.ID, Name: ctl.Name, Status: ctl.Status, Badge: statusBadge(ctl.Status),
				Result: resultLabels[resultIndex(ctl.Result)], Passing: ctl.CompliantCount, Failing: ctl.NonCompliantCount,
				Exempt: ctl.ExemptCount, Policies: ctl.MatchedPoliciesCount, Resources: ctl.CompliantCount + ctl.NonCompliantCount})
		}
		v.Categories = append(v.Categories, cat)
	}
	for i, n := range v.Results {
		v.Summary = append(v.Summary, reportCount{Label: resultLabels[i], Count: n})
	}
	return render("report", v), nil
}

// The results of a control, in the order the summary counts them, and
// how the report names each.
var (
	results      = [...]string{mapping.ResultPassed, mapping.ResultFailed, mapping.ResultNotApplicable, mapping.ResultManual}
	resultLabels = [len(results)]string{"Passed", "Failed", "Not applicable: no mapped policy evaluated a resource", "Manual: no policy in scope maps to it"}
)

// resultIndex is a result's place in results; an unknown one counts as
// manual.
func resultIndex(result string) int {
	if i := slices.Index(results[:], result); i >= 0 {
		return i
	}
	return len(results) - 1
}

// anchor makes an id's part of a category id: letters, digits and
// hyphens.
func anchor(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, id)
}

// reportView is the report as its template draws it.
type reportView struct {
	Title, Tenants   string
	Generated        template.HTML
	Disclaimer, Back string
	Coverage         string
	Controls         int
	Results          [len(results)]int
	Summary          []reportCount
	Categories       []reportCategory
}

type reportCount struct {
	Label string
	Count int
}

type reportCategory struct {
	ID, Name, Anchor, Coverage string
	Controls                   []reportControl
}

type reportControl struct {
	ID, Name, Status, Result                      string
	Badge                                         template.HTML
	Passing, Failing, Exempt, Policies, Resources int
}
