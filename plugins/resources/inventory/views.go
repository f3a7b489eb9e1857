package inventory

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"strconv"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// pageRows is how many resources and orphans the resources page lists.
const pageRows = 50

// filters is the page's inventory filter form, on the host's CSS classes
// (no script, no style attribute: the host's Content-Security-Policy
// forbids both), with links to the previous and next pages.
var filters = template.Must(template.New("filters").Parse(`<form class="stack" method="get" action="{{.Action}}">
{{- if .Tenant}}<input type="hidden" name="tenant_id" value="{{.Tenant}}">{{end}}
<div class="swatches">
<div class="field"><label for="inventory-type">Type</label><input id="inventory-type" type="text" name="type" value="{{.Q.Type}}" maxlength="200" placeholder="microsoft.compute/disks"></div>
<div class="field"><label for="inventory-location">Location</label><input id="inventory-location" type="text" name="location" value="{{.Q.Location}}" maxlength="64" placeholder="eastus"></div>
<div class="field"><label for="inventory-group">Resource group</label><input id="inventory-group" type="text" name="resource_group" value="{{.Q.ResourceGroup}}" maxlength="90"></div>
<div class="field"><label for="inventory-tag-key">Tag</label><input id="inventory-tag-key" type="text" name="tag_key" value="{{.Q.TagKey}}" maxlength="512" placeholder="env"></div>
<div class="field"><label for="inventory-tag-value">Tag value</label><input id="inventory-tag-value" type="text" name="tag_value" value="{{.Q.TagValue}}" maxlength="256" placeholder="prod"></div>
<div class="field"><label for="inventory-q">Name contains</label><input id="inventory-q" type="search" name="q" value="{{.Q.Text}}" maxlength="200"></div>
</div>
<div><button class="btn btn-primary" type="submit">Filter</button></div>
</form>
{{- if or .Prev .Next}}
<nav class="swatches" aria-label="Inventory pages">
{{- if .Prev}}<a href="{{.Prev}}">Previous {{.Rows}}</a>{{end}}
{{- if .Next}}<a href="{{.Next}}">Next {{.Rows}}</a>{{end}}
</nav>
{{- end}}`))

// PageQuery is what the resources page asks of the inventory, bound as
// the inventory route binds it: its filters and the offset of its page.
type PageQuery struct {
	Filters
	Offset int64 `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

// maxOffset is the largest offset of a page, as PageQuery and Paging
// bound it.
const maxOffset = 1_000_000

// pageLink is the page's path with its query, at another offset.
func pageLink(action string, q url.Values, offset int64) string {
	q = maps.Clone(q)
	if offset > 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	} else {
		q.Del("offset")
	}
	if len(q) == 0 {
		return action
	}
	return action + "?" + q.Encode()
}

// Section is the inventory's part of the resources page for the tenants:
// figures (resources, orphans, tag coverage), the inventory filtered by
// the page's type, location, resource_group, tag_key, tag_value and q
// parameters (in), a page of pageRows at its offset, and the orphans.
// action is the page's path, which the filter form and the page links
// lead to.
func (h *Handlers) Section(r *http.Request, tenants []string, in *PageQuery, action string) (template.HTML, error) {
	lq, err := in.query(tenants)
	if err != nil {
		return "", err
	}
	lq.SortBy, lq.Limit, lq.Offset = "name", pageRows, in.Offset
	// The page links keep the request's query, at another offset.
	q := r.URL.Query()
	rows, total, err := h.Store.List(r.Context(), lq)
	if err != nil {
		return "", err
	}
	orphans, byKind, err := h.Store.Orphans(r.Context(), tenants, "", pageRows, 0)
	if err != nil {
		return "", err
	}
	costs, err := h.monthlyCosts(r.Context(), tenants, orphans)
	if err != nil {
		return "", err
	}
	stats, err := h.stats(r, tenants, byKind)
	if err != nil {
		return "", err
	}
	form := struct {
		Action, Tenant, Prev, Next string
		Q                          ListQuery
		Rows                       int
	}{Action: action, Tenant: sdk.ViewTenant(r), Q: lq, Rows: pageRows}
	if lq.Offset > 0 {
		form.Prev = pageLink(action, q, max(lq.Offset-pageRows, 0))
	}
	if next := lq.Offset + pageRows; next < total && next <= maxOffset {
		form.Next = pageLink(action, q, next)
	}
	var formHTML bytes.Buffer
	if err := filters.Execute(&formHTML, form); err != nil {
		return "", err
	}
	names, err := pluginenv.TenantNames(r.Context(), h.Host, tenants)
	if err != nil {
		return "", err
	}
	table := make([][]any, len(rows))
	for i := range rows {
		v := viewOf(&rows[i])
		table[i] = []any{itemAnchor(v.Name, v.ResourceID), names[v.TenantID], v.Type, v.Location, v.ResourceGroup, len(v.Tags), sdkui.Time(v.LastSeen)}
	}
	orphanTable := make([][]any, len(orphans))
	for i, o := range orphans {
		orphanTable[i] = []any{o.Kind, itemAnchor(o.Name, o.ResourceID), names[o.TenantID], o.Type, o.ResourceGroup, o.Location, formatCost(costOf(costs, &orphans[i]))}
	}
	caption := fmt.Sprintf("%s of %s resources, by name", sdkui.FormatNumber(float64(len(rows))), sdkui.FormatNumber(float64(total)))
	if lq.Offset > 0 && len(rows) > 0 {
		caption = fmt.Sprintf("%s to %s of %s resources, by name", sdkui.FormatNumber(float64(lq.Offset+1)),
			sdkui.FormatNumber(float64(lq.Offset+int64(len(rows)))), sdkui.FormatNumber(float64(total)))
	}
	return sdkui.Join(
		stats,
		sdkui.Card("Inventory", sdkui.Join(template.HTML(formHTML.String()),
			sdkui.Table([]string{"Name", "Tenant", "Type", "Location", "Resource group", "Tags", "Last seen"}, table, caption))),
		sdkui.Card("Orphans", sdkui.Table([]string{"Kind", "Name", "Tenant", "Type", "Resource group", "Location", "Est. monthly cost"}, orphanTable, "Resources that serve nothing")),
	), nil
}

// Stats are the inventory's figures for the tenants, for the resources
// page and the dashboard's card: resources, orphans and the share carrying
// every required tag.
func (h *Handlers) Stats(r *http.Request, tenants []string) (template.HTML, error) {
	byKind, err := h.Store.OrphanCounts(r.Context(), tenants)
	if err != nil {
		return "", err
	}
	return h.stats(r, tenants, byKind)
}

// stats renders the figures from the tenants' orphan counts by kind.
func (h *Handlers) stats(r *http.Request, tenants []string, byKind map[string]int64) (template.HTML, error) {
	cov, err := h.Store.Coverage(r.Context(), tenants, h.RequiredTags)
	if err != nil {
		return "", err
	}
	var orphanCount int64
	for _, n := range byKind {
		orphanCount += n
	}
	covered := cov.AllTagged
	if len(h.RequiredTags) == 0 {
		covered = cov.Total
	}
	pct := percent(covered, cov.Total)
	covHealth := sdkui.OK
	if pct < 80 {
		covHealth = sdkui.Warning
	}
	orphanHealth := sdkui.OK
	if orphanCount > 0 {
		orphanHealth = sdkui.Warning
	}
	return sdkui.Grid(
		sdkui.Stat("Resources", sdkui.FormatNumber(float64(cov.Total)), "as last synced", ""),
		sdkui.Stat("Orphans", sdkui.FormatNumber(float64(orphanCount)), "unattached disks, unused IPs and NICs, empty groups", orphanHealth),
		sdkui.Stat("Fully tagged", fmt.Sprintf("%.2f %%", pct), "carry every required tag", covHealth),
	), nil
}

// itemAnchor is a resource's name linking to its resource page.
func itemAnchor(name, resourceID string) template.HTML {
	return template.HTML(`<a href="` + template.HTMLEscapeString(ItemLink(resourceID)) + `">` + template.HTMLEscapeString(name) + `</a>`)
}
