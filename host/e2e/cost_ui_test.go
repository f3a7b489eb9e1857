package e2e

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Services of the cost UI test: Brand A's, with a spike yesterday, and
// Brand B's, which Brand A's user must never see.
const (
	uiServiceA = "Alpha Compute"
	uiServiceB = "Bravo Secret Service"
)

var ackPathRE = regexp.MustCompile(`hx-post="(/partials/cost-anomalies/\d+/acknowledge)[?"]`)

// TestCostUI: the cost plugin's card, page and anomaly list through the
// host on both databases — a standard user of one tenant sees only its
// costs, anomalies and budgets, and is refused another tenant's; the
// dashboard places the card in its slot; anonymous callers are sent to
// sign in (303) or refused (401); a browser's session downloads the
// chargeback CSV the page's form asks for, and acknowledges an anomaly
// with the page's button only with the session's CSRF token, after which
// the list the page reloads no longer shows it.
func TestCostUI(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostUI(t, dialect) })
	}
}

func testCostUI(t *testing.T, dialect string) {
	f := newFixtureOn(t, dialect, hostOpts{pluginsHCL: costPlugins(""), env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
	h := f.h
	a, b := f.tenantA.ID, f.tenantB.ID

	// Sixty days of costs up to today: Brand A's 100.00 a day, 900.00
	// yesterday, which the detector flags; Brand B's 70.00 a day.
	ctx := context.Background()
	db := h.pluginDB("cost")
	today := ledger.DayOf(time.Now())
	from := today - 60
	var rows []ledger.Cost
	for d := from; d <= today; d++ {
		costA := ledger.Amount(10000)
		if d == today-1 {
			costA = 90000
		}
		rows = append(rows,
			ledger.Cost{SubscriptionID: "sub-a", Day: d, Service: uiServiceA, ResourceGroup: "rg", Currency: "USD", TenantID: a, Cost: costA},
			ledger.Cost{SubscriptionID: "sub-b", Day: d, Service: uiServiceB, ResourceGroup: "rg", Currency: "USD", TenantID: b, Cost: 7000})
	}
	led := &ledger.Store{DB: db}
	if err := led.Upsert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	detector := &anomalies.Detector{DB: db}
	for _, id := range []string{a, b} {
		if err := led.Rollup(ctx, id, from, today); err != nil {
			t.Fatal(err)
		}
		if err := detector.Evaluate(ctx, sdk.Tenant{ID: id}, from, today); err != nil {
			t.Fatal(err)
		}
	}
	monthStart := today.Time().AddDate(0, 0, 1-today.Time().Day()).Format(time.DateOnly)
	for _, bg := range []struct{ token, tenant, name string }{{f.tokenA, a, "Alpha budget"}, {f.admin, b, "Bravo budget"}} {
		r := h.do(http.MethodPost, "/api/v1/budgets", bg.token, jsonBody(t, map[string]any{"tenant_id": bg.tenant, "name": bg.name, "amount": 1000,
			"time_grain": "Monthly", "start_date": monthStart, "thresholds": []any{map[string]any{"percentage": 80, "contact_emails": []string{"finops@example.com"}}}}),
			"Content-Type", "application/json")
		expectStatus(t, "create "+bg.name, r, http.StatusCreated)
	}

	// The standard user of Brand A: its own costs in the card, the page and
	// the anomaly list, nothing of Brand B's.
	htmx := []string{"HX-Request", "true"}
	card := h.do(http.MethodGet, "/partials/cost-summary-card", f.tokenA, nil, htmx...)
	expectHTML(t, "A's card", card)
	// The last 30 days: 29 × 100.00 + 900.00.
	for _, want := range []string{"3,800.00 USD", "Anomalies to review", `href="/costs"`} {
		if !strings.Contains(string(card.body), want) {
			t.Errorf("A's card lacks %q:\n%s", want, card.body)
		}
	}
	page := h.do(http.MethodGet, "/costs", f.tokenA, nil, htmx...)
	expectHTML(t, "A's page", page)
	for _, want := range []string{uiServiceA, "Alpha budget", "900.00 USD", `action="/api/v1/costs/chargeback/` + a + `"`} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("A's page lacks %q", want)
		}
	}
	for _, r := range []response{card, page, h.do(http.MethodGet, "/partials/cost-anomalies", f.tokenA, nil, htmx...)} {
		for _, theirs := range []string{uiServiceB, "Bravo budget", f.tenantB.Name} {
			if strings.Contains(string(r.body), theirs) {
				t.Errorf("Brand A's user is shown %q:\n%s", theirs, r.body)
			}
		}
	}
	// The layout around the page, and the dashboard with the card in its
	// slot.
	layout := h.do(http.MethodGet, "/costs", f.tokenA, nil, "Accept", "text/html")
	expectHTML(t, "A's cost page layout", layout)
	for _, want := range []string{`href="/costs"`, `hx-get="/costs"`} {
		if !strings.Contains(string(layout.body), want) {
			t.Errorf("the cost page's layout lacks %q", want)
		}
	}
	// A page's query reaches the plugin's HTML, the picked tenant once.
	layout = h.do(http.MethodGet, "/costs?days=90&tenant_id="+url.QueryEscape(f.tenantA.ID), f.tokenA, nil, "Accept", "text/html")
	expectHTML(t, "A's cost page layout with a query", layout)
	if want := `hx-get="/costs?days=90&amp;tenant_id=` + url.QueryEscape(f.tenantA.ID) + `"`; !strings.Contains(string(layout.body), want) {
		t.Errorf("the cost page's layout lacks %s:\n%s", want, layout.body)
	}
	dash := h.do(http.MethodGet, "/dashboard", f.tokenA, nil, "Accept", "text/html")
	expectHTML(t, "A's dashboard", dash)
	if n := strings.Count(string(dash.body), `hx-get="/partials/cost-summary-card"`); n != 1 || !strings.Contains(string(dash.body), ">Cost summary</h2>") {
		t.Errorf("the dashboard places the cost card %d times:\n%s", n, dash.body)
	}
	// Another tenant's views are refused before the plugin renders them.
	for _, path := range []string{"/partials/cost-summary-card", "/costs", "/partials/cost-anomalies"} {
		r := h.do(http.MethodGet, path+"?tenant_id="+url.QueryEscape(b), f.tokenA, nil, htmx...)
		if r.status != http.StatusForbidden || strings.Contains(string(r.body), uiServiceB) {
			t.Errorf("%s of Brand B for Brand A's user: %d %s", path, r.status, r.body)
		}
	}

	// Without credentials: a browser is sent to sign in, a client refused.
	anon := newBrowser(h)
	for _, path := range []string{"/partials/cost-summary-card", "/costs", "/partials/cost-anomalies"} {
		if r := anon.do(http.MethodGet, path, nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next="+url.QueryEscape(path) {
			t.Errorf("%s, browser without a session: %d %q", path, r.status, r.header.Get("Location"))
		}
		if r := h.get(path, ""); r.status != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d", path, r.status)
		}
	}

	// A browser's session: the chargeback form's download and the
	// anomaly's Acknowledge button, as htmx sends it.
	br := newBrowser(h)
	if r := br.signIn("/costs"); r.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	shell := br.do(http.MethodGet, "/costs", nil)
	m := metaCSRFRE.FindStringSubmatch(string(shell.body))
	if shell.status != http.StatusOK || m == nil {
		t.Fatalf("the cost page's layout: %d %s", shell.status, shell.body)
	}
	csrf := m[1]
	q := url.Values{"start_date": {monthStart}, "end_date": {today.String()}, "format": {"csv"}}
	csv := br.do(http.MethodGet, "/api/v1/costs/chargeback/"+a+"?"+q.Encode(), nil)
	if csv.status != http.StatusOK || !strings.HasPrefix(csv.header.Get("Content-Type"), "text/csv") ||
		!strings.HasPrefix(csv.header.Get("Content-Disposition"), "attachment") || !strings.Contains(string(csv.body), uiServiceA) {
		t.Errorf("the chargeback CSV in a browser's session: %d %s %q\n%s", csv.status, csv.header.Get("Content-Type"), csv.header.Get("Content-Disposition"), csv.body)
	}
	list := br.do(http.MethodGet, "/partials/cost-anomalies?tenant_id="+url.QueryEscape(a), nil, htmx...)
	ack := ackPathRE.FindStringSubmatch(string(list.body))
	if list.status != http.StatusOK || ack == nil || !strings.Contains(string(list.body), uiServiceA) {
		t.Fatalf("Brand A's anomaly list: %d %s", list.status, list.body)
	}
	if r := br.do(http.MethodPost, ack[1], url.Values{}, htmx...); r.status != http.StatusForbidden {
		t.Errorf("acknowledge without the CSRF token: %d %s", r.status, r.body)
	}
	if r := br.do(http.MethodPost, ack[1], url.Values{"note": {"expected"}}, "HX-Request", "true", "X-CSRF-Token", csrf); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), "Acknowledged the anomaly of "+uiServiceA) {
		t.Errorf("acknowledge with the CSRF token: %d %s", r.status, r.body)
	}
	after := br.do(http.MethodGet, "/partials/cost-anomalies?tenant_id="+url.QueryEscape(a), nil, htmx...)
	if after.status != http.StatusOK || ackPathRE.MatchString(string(after.body)) || !strings.Contains(string(after.body), "No anomalies to acknowledge.") {
		t.Errorf("the anomaly list after the acknowledgement: %d %s", after.status, after.body)
	}
}

// expectHTML fails the test unless r is a 200 with HTML.
func expectHTML(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("%s: %d %s\n%s", what, r.status, r.header.Get("Content-Type"), r.body)
	}
}
