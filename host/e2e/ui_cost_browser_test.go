package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/internal/browsertest"
)

// costPageWorld is the world of the cost page's browser test: Brand A's user
// alphaVM is the id of one of the machines that bill Brand A's Compute.
func alphaVM(sub string, n int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/vm-web-%d", sub, n)
}

// Ada sees Brand A only, whose Compute costs 100.00 a day for sixty days
// but 900.00 yesterday; Brand B's costs are its own.
func costPageWorld(t *testing.T) string {
	subA, subB := "aaaaaaaa-0000-0000-0000-00000000c051", "bbbbbbbb-0000-0000-0000-00000000c051"
	on := true
	today := time.Now().UTC()
	var costs []world.Cost
	for d := 60; d >= 0; d-- {
		day := today.AddDate(0, 0, -d).Format(time.DateOnly)
		a := 100.0
		if d == 1 {
			a = 900
		}
		// Two machines bill Alpha Compute, the first four fifths of it.
		costs = append(costs,
			world.Cost{SubscriptionID: subA, Date: day, Service: "Alpha Compute", ResourceGroup: "rg-web", ResourceID: alphaVM(subA, 1), Cost: a * 4 / 5, Currency: "USD"},
			world.Cost{SubscriptionID: subA, Date: day, Service: "Alpha Compute", ResourceGroup: "rg-web", ResourceID: alphaVM(subA, 2), Cost: a / 5, Currency: "USD"},
			world.Cost{SubscriptionID: subB, Date: day, Service: "Bravo Secret Service", ResourceGroup: "rg-b", Cost: 70, Currency: "USD"})
	}
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}},
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
		},
		Users: []world.User{{Email: "ada@brand-a.example", Name: "Ada A", DirectoryTenantID: identityDirA, Groups: []string{"grp-a"},
			UserType: "Member", AccountEnabled: &on, LastSignIn: today.Format(time.DateOnly)}},
		Costs: costs,
		// The first machine is the web team's; the second has no tags.
		Resources: []world.Resource{
			{SubscriptionID: subA, ID: alphaVM(subA, 1), Name: "vm-web-1", Type: "microsoft.compute/virtualmachines", Location: "eastus", Tags: map[string]string{"team": "web"}},
			{SubscriptionID: subA, ID: alphaVM(subA, 2), Name: "vm-web-2", Type: "microsoft.compute/virtualmachines", Location: "eastus"},
		},
	})
}

// TestCostPageInBrowser signs Brand A's user in through the simulated
// identity provider and uses the cost page as a person would: a budget
// created, refused for a bad amount with the message beside the field
// and the input kept, changed and deleted through the page's form; the
// start-up sync's anomaly acknowledged with a note, shown with it among
// the acknowledged, its acknowledgement undone and back among those to
// acknowledge, and left out by a date filter after its day; its panel
// shows the day's cost of its service by resource group; on the cost
// analysis page, choosing another grouping regroups the table. The pages
// pass the axe-core scan in light and dark mode (the cost page with the
// form's errors and an acknowledged anomaly shown), and log no error.
func TestCostPageInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{pluginsHCL: costPlugins(""),
		env: map[string]string{"STEWARD_SIM_WORLD": costPageWorld(t), "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	tab := b.NewTab(h.url)
	signInThroughIdP(t, h, tab, "/costs", "ada@brand-a.example")
	tab.WaitVisible("#cost-budgets")
	t.Run("budgets", func(t *testing.T) { testBudgetsInBrowser(t, tab) })
	t.Run("anomalies", func(t *testing.T) { testAnomaliesInBrowser(t, tab) })
	t.Run("analysis", func(t *testing.T) { testAnalysisInBrowser(t, tab) })
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on the cost page:\n%s", strings.Join(p, "\n"))
	}
}

// fill sets the form fields of the selectors to the values.
func fill(tab *browsertest.Tab, values map[string]string) {
	for sel, v := range values {
		tab.Run("fill "+sel, chromedp.SetValue(sel, v, chromedp.ByQuery))
	}
}

func testBudgetsInBrowser(t *testing.T, tab *browsertest.Tab) {
	const section = "#cost-budgets"
	now := time.Now().UTC()
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	tab.Click(section + " summary")
	fill(tab, map[string]string{"#budget-name": "Team budget", "#budget-amount": "12.345", "#budget-start-date": monthStart,
		"#budget-threshold-0-emails": "finops@brand-a.example"})
	tab.Click(section + ` button[type="submit"]`)
	if got := tab.WaitText("#budget-amount-error", func(s string) bool { return s != "" }); got != "must have at most two decimals" {
		t.Errorf("the amount's error: %q", got)
	}
	var kept string
	tab.Eval(`document.querySelector("#budget-name").value + "|" + document.querySelector("#budget-amount").value`, &kept)
	if kept != "Team budget|12.345" {
		t.Errorf("the refused form kept %q", kept)
	}
	for _, scheme := range []string{"light", "dark"} {
		tab.ColorScheme(scheme)
		for _, v := range tab.Axe() {
			t.Errorf("/costs with the budget form's errors (%s): %s", scheme, v)
		}
	}
	tab.ColorScheme("light")

	fill(tab, map[string]string{"#budget-amount": "1500"})
	tab.Click(section + ` button[type="submit"]`)
	tab.WaitText(section, func(s string) bool {
		return strings.Contains(s, "Budget “Team budget” created.") && strings.Contains(s, "1,500.00 USD")
	})

	tab.Click(section + ` button[hx-get*="edit="]`)
	tab.WaitText(section, func(s string) bool { return strings.Contains(s, "Change budget “Team budget”") })
	fill(tab, map[string]string{"#budget-amount": "2000"})
	tab.Click(section + ` button[type="submit"]`)
	tab.WaitText(section, func(s string) bool {
		return strings.Contains(s, "Budget “Team budget” saved.") && strings.Contains(s, "2,000.00 USD")
	})

	// The browser's confirmation is answered yes, as a person would.
	var ok bool
	tab.Eval(`window.confirm = () => true; true`, &ok)
	tab.Click(section + " button[hx-delete]")
	text := tab.WaitText(section, func(s string) bool { return strings.Contains(s, "Budget “Team budget” deleted.") })
	if strings.Contains(text, "2,000.00 USD") {
		t.Errorf("the deleted budget is still listed: %q", text)
	}
}

func testAnomaliesInBrowser(t *testing.T, tab *browsertest.Tab) {
	const list = "#cost-anomalies"
	// The start-up costs sync flags yesterday; until it is done the list
	// is empty, and a person reloads.
	for deadline := time.Now().Add(60 * time.Second); ; {
		tab.Open("/costs", list)
		if strings.Contains(tab.Text(list), "Alpha Compute") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	// The anomaly's drill-down: the day's cost of its service by
	// resource, loaded when its panel opens, each resource linking its
	// page.
	tab.Click(list + " details.cost-breakdown summary")
	tab.WaitText(list+" .cost-breakdown-body", func(s string) bool {
		return strings.Contains(s, "vm-web-1 (rg-web)") && strings.Contains(s, "720.00") && strings.Contains(s, "2 resources, 900.00 USD in all.")
	})
	var href string
	tab.Eval(`document.querySelector("#cost-anomalies .cost-breakdown-body a").getAttribute("href")`, &href)
	if !strings.HasPrefix(href, "/resources/item?resource_id=") {
		t.Errorf("the breakdown's first resource links %q, want its page", href)
	}
	fill(tab, map[string]string{list + ` input[name="note"]`: "Load test, planned"})
	tab.Click(list + " .cost-ack")
	tab.WaitText(list, func(s string) bool {
		return strings.Contains(s, "Acknowledged the anomaly of Alpha Compute on "+yesterday+", noting “Load test, planned”.") &&
			strings.Contains(s, "No anomalies to acknowledge.")
	})

	fill(tab, map[string]string{"#cost-anomalies-status": "acknowledged"})
	tab.Click(list + ` form[hx-get] button[type="submit"]`)
	tab.WaitText(list, func(s string) bool {
		return strings.Contains(s, "“Load test, planned”") && strings.Contains(s, "1 of 1 acknowledged anomalies")
	})
	for _, scheme := range []string{"light", "dark"} {
		tab.ColorScheme(scheme)
		for _, v := range tab.Axe() {
			t.Errorf("/costs with an acknowledged anomaly (%s): %s", scheme, v)
		}
	}
	tab.ColorScheme("light")
	tab.Click(list + " td .cost-undo")
	tab.WaitText(list, func(s string) bool {
		return strings.Contains(s, "is to acknowledge again.") && strings.Contains(s, "No anomalies match.")
	})

	fill(tab, map[string]string{"#cost-anomalies-status": "open"})
	tab.Click(list + ` form[hx-get] button[type="submit"]`)
	tab.WaitText(list, func(s string) bool {
		return strings.Contains(s, "Alpha Compute") && strings.Contains(s, "1 of 1 anomalies not yet acknowledged")
	})

	fill(tab, map[string]string{"#cost-anomalies-start": time.Now().UTC().Format(time.DateOnly)})
	tab.Click(list + ` form[hx-get] button[type="submit"]`)
	tab.WaitText(list, func(s string) bool { return strings.Contains(s, "No anomalies match.") })
}

func testAnalysisInBrowser(t *testing.T, tab *browsertest.Tab) {
	const analysis = "#cost-analysis"
	tab.Open("/costs/analysis", analysis+" table")
	if text := tab.Text(analysis); !strings.Contains(text, "Cost by Service, daily") || !strings.Contains(text, "Alpha Compute") ||
		strings.Contains(text, "Bravo") {
		t.Errorf("the analysis by service: %.600s", text)
	}
	for _, scheme := range []string{"light", "dark"} {
		tab.ColorScheme(scheme)
		for _, v := range tab.Axe() {
			t.Errorf("/costs/analysis (%s): %s", scheme, v)
		}
	}
	tab.ColorScheme("light")
	// A person picks another grouping; the form reloads the table.
	var ok bool
	tab.Eval(`(() => { const s = document.querySelector("#cost-analysis-group"); s.value = "resource_group";
		s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, &ok)
	text := tab.WaitText(analysis, func(s string) bool { return strings.Contains(s, "Cost by Resource group, daily") })
	tab.Settle()
	if !strings.Contains(text, "rg-web") || strings.Contains(text, "rg-b") {
		t.Errorf("the analysis by resource group: %.600s", text)
	}
	// Then by the team tag of the machines: the tag's name, then the
	// grouping, which reloads the table once.
	tab.Eval(`(() => { document.querySelector("#cost-analysis-tag-key").value = "Team";
		const s = document.querySelector("#cost-analysis-group"); s.value = "tag";
		s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, &ok)
	text = tab.WaitText(analysis, func(s string) bool { return strings.Contains(s, "Cost by Tag, daily") })
	// The web team's machine bills four fifths of Compute: 3,040.00 of
	// the 3,800.00 since the range began.
	if !strings.Contains(text, "web\tUSD") || !strings.Contains(text, "3,040.00") || !strings.Contains(text, "(without the tag)\tUSD") ||
		!strings.Contains(text, "760.00") || strings.Contains(text, "Bravo") {
		t.Errorf("the analysis by tag: %q", text)
	}
}
