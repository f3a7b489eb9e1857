package e2e

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

// TestQuotaNamesInBrowser follows a most used quota of the dashboard, as a
// standard user of Contoso Retail would, to its subscription's quotas: the
// bar names the subscription and links its page, which titles the quotas
// with the subscription's display name, as the quota list carries it;
// both pass an axe-core scan in light and dark mode.
func TestQuotaNamesInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: resourcesPlugins(),
		env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	waitStartupSync(t, h, admin, "resources")

	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/dashboard", world.DemoContosoUser)
	barLink := `[hx-get^="/partials/resource-stats"] .bar-label a`
	tab.WaitVisible(barLink)
	drillScan(t, tab, "/dashboard", barLink)
	href := drillAttr(t, tab, barLink, "href")
	link, err := url.Parse(href)
	if err != nil || link.Path != "/resources" || link.Query().Get("subscription_id") == "" {
		t.Fatalf("the bar links %q (%v), not a subscription's quotas", href, err)
	}
	sub := link.Query().Get("subscription_id")
	var list struct {
		Items []struct {
			SubscriptionName string `json:"subscription_name"`
		} `json:"items"`
	}
	h.get("/api/v1/resources/quotas?subscription_id="+url.QueryEscape(sub), admin).json(t, &list)
	if len(list.Items) == 0 || list.Items[0].SubscriptionName == "" {
		t.Fatalf("the quota list of %s carries no subscription name: %+v", sub, list.Items)
	}
	name := list.Items[0].SubscriptionName
	if bar := tab.Text(barLink); !strings.Contains(bar, " in "+name) {
		t.Errorf("the bar %q does not name its subscription %q", bar, name)
	}

	tab.Click(barLink)
	page := `[hx-get^="/resources"]`
	text := tab.WaitText(page, func(s string) bool { return strings.Contains(s, "quotas of subscription") })
	if !strings.Contains(text, "Contoso Retail: compute quotas of subscription "+name+" ("+sub+")") {
		t.Errorf("the subscription's quotas are titled %q, want its name %q", text, name)
	}
	if loc := tab.Location(); !strings.HasSuffix(loc, href) {
		t.Fatalf("the bar's link led to %s, not %s", loc, href)
	}
	drillScan(t, tab, href, page)
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on the quota pages:\n%s", strings.Join(p, "\n"))
	}
}
