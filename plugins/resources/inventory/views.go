package inventory

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"

	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// pageRows is how many resources and orphans the resources page lists.
const pageRows = 50

// maxFilter bounds the page's text filters, as the inventory route does.
const maxFilter = 200

// filters is the page's inventory filter form, on the host's CSS classes
// (no script, no style attribute: the host's Content-Security-Policy
// forbids both).
var filters = template.Must(template.New("filters").Parse(`<form class="stack" method="get" action="{{.Action}}">
{{- if .Tenant}}<input type="hidden" name="tenant_id" value="{{.Tenant}}">{{end}}
<div class="swatches">
<div class="field"><label for="inventory-type">Type</label><input id="inventory-type" type="text" name="type" value="{{.Type}}" maxlength="200" placeholder="microsoft.compute/disks"></div>
<div class="field"><label for="inventory-q">Name contains</label><input id="inventory-q" type="search" name="q" value="{{.Q}}" maxlength="200"></div>
</div>
<div><button class="btn btn-primary" type="submit">Filter</button></div>
</form>`))

// Section is the inventory's part of the resources page for the tenants:
// figures (resources, orphans, tag coverage), the inventory filtered by
// the page's type and q parameters, and the orphans. action is the page's
// path, which the filter form submits to.
func (h *Handlers) Section(r *http.Request, tenants []string, action string) (template.HTML, error) {
	q := r.URL.Query()
	lq := ListQuery{TenantIDs: tenants, Type: q.Get("type"), Text: q.Get("q"), SortBy: "name", Limit: pageRows}
	if len(lq.Type) > maxFilter {
		return "", sdk.Invalid("query.type", "at most %d characters", maxFilter)
	}
	if len(lq.Text) > maxFilter {
		return "", sdk.Invalid("query.q", "at most %d characters", maxFilter)
	}
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
	var form bytes.Buffer
	if err := filters.Execute(&form, struct{ Action, Tenant, Type, Q string }{action, q.Get("tenant_id"), lq.Type, lq.Text}); err != nil {
		return "", err
	}
	table := make([][]any, len(rows))
	for i := range rows {
		v := viewOf(&rows[i])
		table[i] = []any{v.Name, v.Type, v.Location, v.ResourceGroup, len(v.Tags), sdkui.Time(v.LastSeen)}
	}
	orphanTable := make([][]any, len(orphans))
	for i, o := range orphans {
		orphanTable[i] = []any{o.Kind, o.Name, o.Type, o.ResourceGroup, o.Location, formatCost(costOf(costs, &orphans[i]))}
	}
	caption := fmt.Sprintf("%s of %s resources, by name", sdkui.FormatNumber(float64(len(rows))), sdkui.FormatNumber(float64(total)))
	return sdkui.Join(
		stats,
		sdkui.Card("Inventory", sdkui.Join(template.HTML(form.String()),
			sdkui.Table([]string{"Name", "Type", "Location", "Resource group", "Tags", "Last seen"}, table, caption))),
		sdkui.Card("Orphans", sdkui.Table([]string{"Kind", "Name", "Type", "Resource group", "Location", "Est. monthly cost"}, orphanTable, "Resources that serve nothing")),
	), nil
}

// Stats are the inventory's figures for the tenants, for the resources
// page and the dashboard's card: resources, orphans and the share carrying
// every required tag.
func (h *Handlers) Stats(r *http.Request, tenants []string) (template.HTML, error) {
	_, byKind, err := h.Store.Orphans(r.Context(), tenants, "", 1, 0)
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
