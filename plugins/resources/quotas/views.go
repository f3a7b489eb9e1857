package quotas

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the plugin's views.
const (
	StatsFragmentPath = "/partials/resource-stats"
	PagePath          = "/resources"
)

// mostUsedShown is how many quotas the dashboard's card draws as bars.
const mostUsedShown = 5

// Views are the quota fragment for the dashboard, the resources page and
// its navigation entry, served by h.
func (h *Handlers) Views() ([]sdk.Fragment, []sdk.Page, []sdk.NavEntry) {
	return []sdk.Fragment{{Path: StatsFragmentPath, Title: "Resources", Slot: "dashboard", RefreshSeconds: 300, Handler: h.statsFragment}},
		[]sdk.Page{{Path: PagePath, Title: "Resources", Handler: sdk.View(h.page)}},
		[]sdk.NavEntry{{Label: "Resources", Path: PagePath, Order: 30}}
}

func barOf(e Entry) sdkui.Bar {
	label := e.LocalizedName
	if label == "" {
		label = e.Name
	}
	return sdkui.Bar{Label: label, Used: e.CurrentValue, Limit: e.Limit, Health: sdkui.Health(e.Health)}
}

// mostUsedBar is a quota of the dashboard's card: as the most used come
// from any subscription, its label names the subscription too and links
// the page of that subscription's quotas.
func mostUsedBar(r *http.Request, e Entry) sdkui.Bar {
	b := barOf(e)
	sub := e.SubscriptionName
	if sub == "" {
		sub = e.SubscriptionID
	}
	b.Label += " in " + sub
	b.Href = quotasLink(r, DefaultLocation, e.SubscriptionID)
	return b
}

// statsFragment is the dashboard's resources card: the inventory's
// figures when the plugin has an inventory, then how many quotas are near
// their limits in the default region, and the most used as bars, each
// linking its subscription's quotas.
func (h *Handlers) statsFragment(w http.ResponseWriter, r *http.Request) {
	// Each of the inventory's and the quotas' figures read their tenants'
	// revision once.
	r = r.WithContext(revcache.OneRead(r.Context()))
	var parts []template.HTML
	if h.InventoryStats != nil {
		stats, err := h.InventoryStats(r, sdkui.Tenants(r))
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		parts = append(parts, stats)
	}
	q := Query{TenantIDs: sdkui.Tenants(r), Location: DefaultLocation}
	counts, err := h.Store.Counts(r.Context(), q)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if counts.Total == 0 {
		parts = append(parts, sdkui.Empty("No quota data yet for "+DefaultLocation+". It arrives with the next resources sync."))
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Join(parts...))
		return
	}
	most, err := h.Store.MostUsed(r.Context(), q, mostUsedShown)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	bars := make([]sdkui.Bar, 0, len(most))
	for _, u := range most {
		bars = append(bars, mostUsedBar(r, entryOf(u)))
	}
	parts = append(parts,
		sdkui.Grid(
			sdkui.Stat("Quotas", sdkui.FormatNumber(float64(counts.Total)), DefaultLocation, ""),
			sdkui.Stat("Warning", sdkui.FormatNumber(float64(counts.Warning)), "75 % of the limit or more", healthIf(counts.Warning > 0, sdkui.Warning)),
			sdkui.Stat("Critical", sdkui.FormatNumber(float64(counts.Critical)), "90 % of the limit or more", healthIf(counts.Critical > 0, sdkui.Critical)),
		),
		sdkui.BarChart("Most used quotas in "+DefaultLocation, bars),
	)
	sdkui.WriteFragment(w, http.StatusOK, sdkui.Join(parts...))
}

func healthIf(cond bool, h sdkui.Health) sdkui.Health {
	if cond {
		return h
	}
	return sdkui.OK
}

// pageIn is the resources page's parameters: the quotas' region and the
// inventory's, whose location filter is the same parameter, and the one
// subscription whose quotas to show, when one is named. The tenant picked
// is the host's to check and sdkui.Tenants' to read.
type pageIn struct {
	Location
	inventory.PageQuery
	SubscriptionID string `query:"subscription_id" maxLength:"64" doc:"Show only this subscription's quotas"`
}

// page shows every quota of the region (of the subscription named, when
// one is), by subscription and provider, as bars coloured by health, each
// group titled by its tenant and subscription and linking its
// subscription's quotas alone, after the Inventory section when the
// plugin has one.
func (h *Handlers) page(w http.ResponseWriter, r *http.Request, in *pageIn) {
	// The inventory's section and the quotas name the same tenants.
	r = r.WithContext(pluginenv.OneAsk(r.Context()))
	loc := in.Location.Location
	var parts []template.HTML
	if h.Inventory != nil {
		section, err := h.Inventory(r, sdkui.Tenants(r), &in.PageQuery, PagePath)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		parts = append(parts, section)
	}
	tenants := sdkui.Tenants(r)
	// A subscription of a tenant the caller may not see has no usages
	// among the tenants', and reads as one without quota data.
	usages, err := h.Store.List(r.Context(), Query{TenantIDs: tenants, Location: loc, SubscriptionID: in.SubscriptionID})
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if len(usages) == 0 {
		empty := sdkui.Empty("No quota data for " + loc + " yet. It arrives with the next resources sync.")
		if in.SubscriptionID != "" {
			empty = sdkui.Join(sdkui.Empty("No quota data for subscription "+in.SubscriptionID+" in "+loc+"."),
				link(quotasLink(r, loc, ""), "Every subscription's quotas"))
		}
		parts = append(parts, sdkui.Card("Quotas in "+loc, empty))
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Join(parts...))
		return
	}
	names, err := pluginenv.TenantNames(r.Context(), h.Host, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	type group struct{ tenant, sub, subName, provider string }
	var order []group
	bars := map[group][]sdkui.Bar{}
	for _, u := range usages {
		g := group{u.TenantID, u.SubscriptionID, u.SubscriptionName, u.Provider}
		if _, ok := bars[g]; !ok {
			order = append(order, g)
		}
		bars[g] = append(bars[g], barOf(entryOf(u)))
	}
	for _, g := range order {
		sub := subscriptionLabel(g.sub, g.subName)
		title := fmt.Sprintf("%s: %s quotas of subscription %s", names[g.tenant], g.provider, sub)
		more := link(quotasLink(r, loc, g.sub), "Only the quotas of subscription "+sub)
		if in.SubscriptionID != "" {
			more = link(quotasLink(r, loc, ""), "Every subscription's quotas")
		}
		parts = append(parts, sdkui.Card(title, sdkui.Join(sdkui.BarChart(title+" in "+loc, bars[g]), more)))
	}
	sdkui.WriteFragment(w, http.StatusOK, sdkui.Join(parts...))
}

// subscriptionLabel names a subscription by its display name and id,
// since two subscriptions may share a name; by its id alone until a sync
// has read its name.
func subscriptionLabel(id, name string) string {
	if name == "" {
		return id
	}
	return name + " (" + id + ")"
}

// quotasLink is the resources page of the region's quotas, of the
// subscription alone when one is given, on the picked tenant when there is
// one.
func quotasLink(r *http.Request, location, subscriptionID string) string {
	q := url.Values{"location": {location}}
	if subscriptionID != "" {
		q.Set("subscription_id", subscriptionID)
	}
	if t := sdk.ViewTenant(r); t != "" {
		q.Set("tenant_id", t)
	}
	return PagePath + "?" + q.Encode()
}

var linkHTML = template.Must(template.New("link").Parse(`<p><a href="{{.Href}}">{{.Text}}</a></p>`))

// link is a paragraph holding one link.
func link(href, text string) template.HTML {
	var b strings.Builder
	if err := linkHTML.Execute(&b, struct{ Href, Text string }{href, text}); err != nil {
		panic("quotas: link: " + err.Error())
	}
	return template.HTML(b.String())
}
