package reports_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// TestDailyBreakdown: a tenant's cost of a service on a day per
// subscription and resource group equals the raw rows, per currency
// costliest first, with each currency's total, on both databases; a day
// without costs has no items; another tenant is refused and bad
// parameters are 422 naming them.
func TestDailyBreakdown(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			d := mustDay("2026-10-20")
			const service = "=HYPERLINK(\"x\")"
			var b reports.Breakdown
			w.json(t, "/api/v1/costs/daily-breakdown?"+url.Values{"tenant_id": {"t1"}, "date": {d.String()}, "service": {service}}.Encode(), userA, &b)
			want := map[[3]string]ledger.Amount{}
			totals := map[string]ledger.Amount{}
			for _, r := range w.rows {
				if r.TenantID == "t1" && r.Day == d && r.Service == service {
					want[[3]string{r.SubscriptionID, r.ResourceGroup, r.Currency}] += r.Cost
					totals[r.Currency] += r.Cost
				}
			}
			if b.Grain != "resource_group" || b.Service != service || b.Date != d || len(b.Items) != len(want) || len(want) != 6 {
				t.Fatalf("breakdown: %+v, want %d items", b, len(want))
			}
			for i, it := range b.Items {
				if want[[3]string{it.SubscriptionID, it.ResourceGroup, it.Currency}] != it.Cost {
					t.Errorf("item %+v, want %s", it, want[[3]string{it.SubscriptionID, it.ResourceGroup, it.Currency}])
				}
				if i > 0 {
					prev := b.Items[i-1]
					if prev.Currency > it.Currency || prev.Currency == it.Currency && prev.Cost < it.Cost {
						t.Errorf("items out of order: %+v before %+v", prev, it)
					}
				}
			}
			if len(b.Totals) != 2 || b.Totals[0].Currency != "EUR" || b.Totals[0].TotalCost != totals["EUR"] || b.Totals[1].TotalCost != totals["USD"] {
				t.Errorf("totals %+v, want %v", b.Totals, totals)
			}
			// By resource: the days by resource, each labelled by its name
			// and group.
			var byResource reports.Breakdown
			w.json(t, "/api/v1/costs/daily-breakdown?"+url.Values{"tenant_id": {"t1"}, "date": {d.String()}, "service": {service}, "by": {"resource"}}.Encode(), userA, &byResource)
			wantResources := map[string]ledger.Amount{}
			for _, r := range w.resources {
				if r.TenantID == "t1" && r.Day == d && r.Service == service {
					wantResources[r.ResourceID+" "+r.Currency] += r.Cost
				}
			}
			if byResource.Grain != "resource" || len(byResource.Items) != len(wantResources) || len(wantResources) != 12 {
				t.Fatalf("by resource: %+v, want %d items", byResource, len(wantResources))
			}
			for _, it := range byResource.Items {
				if it.ResourceID == nil || wantResources[*it.ResourceID+" "+it.Currency] != it.Cost || !strings.HasSuffix(it.Label, " ("+it.ResourceGroup+")") {
					t.Errorf("item by resource %+v", it)
				}
			}
			if fmt.Sprint(byResource.Totals) != fmt.Sprint(b.Totals) {
				t.Errorf("totals by resource %+v, by resource group %+v", byResource.Totals, b.Totals)
			}
			if b.Items[0].ResourceID != nil {
				t.Errorf("an item by resource group names a resource: %+v", b.Items[0])
			}
			w.json(t, "/api/v1/costs/daily-breakdown?tenant_id=t1&service=Storage&date="+gap.String(), userA, &b)
			if len(b.Items) != 0 || len(b.Totals) != 0 {
				t.Errorf("a day without costs: %+v", b)
			}

			resp := w.get(t, "/api/v1/costs/daily-breakdown?tenant_id=t2&service=Storage&date=2026-10-20", userA)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "EUR") {
				t.Errorf("Beta's breakdown for Alpha's user: %d %s", resp.StatusCode, body)
			}
			for _, c := range []struct{ query, location string }{
				{"tenant_id=t1&service=Storage&date=2026-02-30", "query.date"},
				{"tenant_id=t1&service=Storage", "query.date"},
				{"tenant_id=t1&date=2026-10-20", "query.service"},
				{"service=Storage&date=2026-10-20", "query.tenant_id"},
				{"tenant_id=t1&service=Storage&date=2026-10-20&by=day", "query.by"},
			} {
				resp := w.get(t, "/api/v1/costs/daily-breakdown?"+c.query, admin)
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"location":"`+c.location+`"`) {
					t.Errorf("%s: %d %s, want 422 naming %s", c.query, resp.StatusCode, body, c.location)
				}
			}
		})
	}
}
