package quotas

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

func viewsPlugin(t *testing.T, dialect string) (*plugintest.Harness, *Store) {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, Migrations(), "plugin_resources_migrations"); err != nil {
		t.Fatal(err)
	}
	st := NewStore(db)
	factory := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		h := &Handlers{Store: st, Host: env.Host}
		fragments, pages, nav := h.Views()
		return &sdk.Plugin{Routes: h.Routes(), Fragments: fragments, Pages: pages, Nav: nav}, nil
	}
	return plugintest.New(t, sdk.Definition{Name: "resources"}, factory, plugintest.Options{Tenants: []sdk.Tenant{
		{ID: "t-a", Name: "Brand A", IsActive: true}, {ID: "t-b", Name: "Brand B", IsActive: true}}}), st
}

// view asks for a view through the plugin protocol, so the host's tenant
// check runs before the handler as it does in production.
func view(t *testing.T, h *plugintest.Harness, target string, tenants ...string) (int, string) {
	t.Helper()
	resp := h.Do(httptest.NewRequest(http.MethodGet, target, nil), sdk.Principal{ID: "u1", TenantIDs: tenants})
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestQuotaViews renders the dashboard's quota card and the resources
// page from stored usages: counts by health, bars coloured by health with
// their figures as text, only the caller's tenants, and empty states.
func TestQuotaViews(t *testing.T) {
	h, st := viewsPlugin(t, "sqlite")
	if code, body := view(t, h, StatsFragmentPath, "t-a"); code != http.StatusOK || !strings.Contains(body, "No quota data yet") {
		t.Errorf("empty card: %d %s", code, body)
	}
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	usage := func(tenant, sub, name string, used, limit float64) Usage {
		return Usage{TenantID: tenant, SubscriptionID: sub, Location: DefaultLocation, Provider: "compute", Name: name, LocalizedName: name, CurrentValue: used, Limit: limit, SyncedAt: now}
	}
	ctx := context.Background()
	if err := st.Replace(ctx, "sub-a", DefaultLocation, "compute", []Usage{
		usage("t-a", "sub-a", "Total Regional vCPUs", 95, 100), usage("t-a", "sub-a", "Standard DSv5 Family vCPUs", 80, 100), usage("t-a", "sub-a", "Availability Sets", 1, 2500),
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Replace(ctx, "sub-b", DefaultLocation, "compute", []Usage{usage("t-b", "sub-b", "Brand B <script>", 10, 10)}); err != nil {
		t.Fatal(err)
	}
	code, card := view(t, h, StatsFragmentPath, "t-a")
	if code != http.StatusOK {
		t.Fatalf("card: %d %s", code, card)
	}
	for _, want := range []string{"Total Regional vCPUs", "95 of 100", "health-critical", "health-warning", "Most used quotas in eastus"} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q: %s", want, card)
		}
	}
	if strings.Contains(card, "Brand B") {
		t.Error("the card shows another tenant's quota")
	}
	code, page := view(t, h, PagePath+"?tenant_id=t-b", "t-a", "t-b")
	if code != http.StatusOK || !strings.Contains(page, "Brand B &lt;script&gt;") || strings.Contains(page, "Brand B <script>") || strings.Contains(page, "sub-a") {
		t.Errorf("page for tenant B: %d %s", code, page)
	}
	if code, _ := view(t, h, PagePath+"?tenant_id=t-b", "t-a"); code != http.StatusForbidden {
		t.Errorf("page for a tenant the caller may not see: %d", code)
	}
	if code, body := view(t, h, PagePath+"?location=westeurope", "t-a"); code != http.StatusOK || !strings.Contains(body, "No quota data for westeurope") {
		t.Errorf("page for a region without data: %d %s", code, body)
	}
	if code, body := view(t, h, PagePath+"?location=..%2Fx", "t-a"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "query.location") {
		t.Errorf("page for a malformed region: %d %s", code, body)
	}
	// The inventory's filters are the page's parameters too, bound before it renders.
	for query, field := range map[string]string{"tag_key=" + strings.Repeat("k", 513): "query.tag_key", "offset=-1": "query.offset"} {
		if code, body := view(t, h, PagePath+"?"+query, "t-a"); code != http.StatusUnprocessableEntity || !strings.Contains(body, field) {
			t.Errorf("page with %.20s: %d %s", query, code, body)
		}
	}
}

// TestQuotaListPages: the list answers a page of the caller's quotas with
// the total and the counts of every page, and refuses a page out of range
// with the parameter named.
func TestQuotaListPages(t *testing.T) {
	h, st := viewsPlugin(t, "sqlite")
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	var usages []Usage
	for i, used := range []float64{10, 80, 95, 20, 76} {
		usages = append(usages, Usage{TenantID: "t-a", SubscriptionID: "sub-a", Location: DefaultLocation, Provider: "compute",
			Name: fmt.Sprintf("q%d", i), CurrentValue: used, Limit: 100, SyncedAt: now})
	}
	ctx := context.Background()
	if err := st.Replace(ctx, "sub-a", DefaultLocation, "compute", usages); err != nil {
		t.Fatal(err)
	}
	if err := st.Replace(ctx, "sub-b", DefaultLocation, "compute", []Usage{{TenantID: "t-b", SubscriptionID: "sub-b", Location: DefaultLocation,
		Provider: "compute", Name: "q0", CurrentValue: 99, Limit: 100, SyncedAt: now}}); err != nil {
		t.Fatal(err)
	}
	code, body := view(t, h, "/api/v1/resources/quotas?limit=2&offset=1", "t-a")
	var page List
	if err := json.Unmarshal([]byte(body), &page); code != http.StatusOK || err != nil {
		t.Fatalf("page: %d %s (%v)", code, body, err)
	}
	var names []string
	for _, e := range page.Items {
		names = append(names, e.Name)
	}
	if page.Total != 5 || page.Limit != 2 || page.Offset != 1 || strings.Join(names, ",") != "q1,q2" ||
		page.Summary != (Counts{Total: 5, OK: 2, Warning: 2, Critical: 1}) {
		t.Errorf("page of 2 from 1: total %d, limit %d, offset %d, items %v, summary %+v", page.Total, page.Limit, page.Offset, names, page.Summary)
	}
	code, body = view(t, h, "/api/v1/resources/quotas", "t-a")
	if err := json.Unmarshal([]byte(body), &page); code != http.StatusOK || err != nil || page.Limit != 100 || len(page.Items) != 5 {
		t.Errorf("default page: %d, limit %d, %d items (%v)", code, page.Limit, len(page.Items), err)
	}
	for _, bad := range []string{"limit=0", "limit=501", "offset=-1", "limit=ten"} {
		code, body := view(t, h, "/api/v1/resources/quotas?"+bad, "t-a")
		field := "query." + strings.SplitN(bad, "=", 2)[0]
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, field) {
			t.Errorf("%s: %d %s, want 422 naming %s", bad, code, body, field)
		}
	}
}

// TestQuotaPageBySubscription: each subscription's quotas are titled by
// its tenant's name and its subscription's name and id (the id alone
// until a sync read the name) and link the page of that subscription's
// quotas alone, on the picked tenant, which links back to every
// subscription's; the dashboard's most used link that page too; a renamed
// subscription shows its new name at once; a subscription of a tenant the
// caller may not see reads as one without quota data, and shows nothing
// of it.
func TestQuotaPageBySubscription(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			h, st := viewsPlugin(t, dialect)
			now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
			ctx := context.Background()
			for _, u := range []Usage{
				{TenantID: "t-a", SubscriptionID: "sub-a1", SubscriptionName: "Brand A <Production>", Name: "cores-a1", CurrentValue: 95, Limit: 100},
				{TenantID: "t-a", SubscriptionID: "sub-a2", Name: "cores-a2", CurrentValue: 10, Limit: 100},
				{TenantID: "t-b", SubscriptionID: "sub-b", SubscriptionName: "Hidden B", Name: "cores-b", CurrentValue: 50, Limit: 100},
			} {
				u.Location, u.Provider, u.LocalizedName, u.SyncedAt = DefaultLocation, "compute", u.Name, now
				if err := st.Replace(ctx, u.SubscriptionID, DefaultLocation, "compute", []Usage{u}); err != nil {
					t.Fatal(err)
				}
			}
			code, page := view(t, h, PagePath, "t-a")
			if code != http.StatusOK {
				t.Fatalf("page: %d %s", code, page)
			}
			for _, want := range []string{"Brand A: compute quotas of subscription Brand A &lt;Production&gt; (sub-a1)", "Brand A: compute quotas of subscription sub-a2",
				`<a href="/resources?location=eastus&amp;subscription_id=sub-a1">Only the quotas of subscription Brand A &lt;Production&gt; (sub-a1)</a>`, "cores-a2"} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q: %s", want, page)
				}
			}
			if strings.Contains(page, "sub-b") || strings.Contains(page, "Brand B") || strings.Contains(page, "Hidden B") || strings.Contains(page, "<Production>") {
				t.Errorf("Brand A's page shows Brand B's quotas or an unescaped name: %s", page)
			}
			code, body := view(t, h, "/api/v1/resources/quotas?subscription_id=sub-a1", "t-a")
			var list List
			if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list.Items) != 1 ||
				list.Items[0].SubscriptionID != "sub-a1" || list.Items[0].SubscriptionName != "Brand A <Production>" {
				t.Errorf("sub-a1's quota list: %d %s (%v)", code, body, err)
			}
			renamed := Usage{TenantID: "t-a", SubscriptionID: "sub-a1", SubscriptionName: "Brand A Live", Location: DefaultLocation, Provider: "compute",
				Name: "cores-a1", LocalizedName: "cores-a1", CurrentValue: 95, Limit: 100, SyncedAt: now}
			if err := st.Replace(ctx, "sub-a1", DefaultLocation, "compute", []Usage{renamed}); err != nil {
				t.Fatal(err)
			}
			if _, page := view(t, h, PagePath, "t-a"); !strings.Contains(page, "Brand A Live (sub-a1)") || strings.Contains(page, "Production") {
				t.Errorf("the page after the subscription was renamed: %s", page)
			}
			// The dashboard's most used link their subscriptions' quotas, on the picked tenant.
			code, card := view(t, h, StatsFragmentPath+"?tenant_id=t-a", "t-a", "t-b")
			for _, want := range []string{
				`<a href="/resources?location=eastus&amp;subscription_id=sub-a1&amp;tenant_id=t-a">cores-a1 in Brand A Live</a>`,
				`<a href="/resources?location=eastus&amp;subscription_id=sub-a2&amp;tenant_id=t-a">cores-a2 in sub-a2</a>`,
			} {
				if code != http.StatusOK || !strings.Contains(card, want) {
					t.Errorf("card lacks %s: %d %s", want, code, card)
				}
			}
			if _, card := view(t, h, StatsFragmentPath, "t-a"); !strings.Contains(card, `<a href="/resources?location=eastus&amp;subscription_id=sub-a1">`) ||
				strings.Contains(card, "Hidden B") || strings.Contains(card, "sub-b") {
				t.Errorf("card without a picked tenant: %s", card)
			}
			code, body = view(t, h, "/api/v1/resources/quotas/summary", "t-a")
			var sum Summary
			if err := json.Unmarshal([]byte(body), &sum); code != http.StatusOK || err != nil || len(sum.MostUsed) != 2 ||
				sum.MostUsed[0].SubscriptionName != "Brand A Live" || sum.MostUsed[1].SubscriptionName != "" {
				t.Errorf("summary after the rename: %d %s (%v)", code, body, err)
			}
			code, one := view(t, h, PagePath+"?subscription_id=sub-a1&tenant_id=t-a", "t-a", "t-b")
			if code != http.StatusOK || !strings.Contains(one, "cores-a1") || strings.Contains(one, "cores-a2") || strings.Contains(one, "cores-b") ||
				!strings.Contains(one, `<a href="/resources?location=eastus&amp;tenant_id=t-a">Every subscription&#39;s quotas</a>`) {
				t.Errorf("sub-a1's quotas: %d %s", code, one)
			}
			code, other := view(t, h, PagePath+"?subscription_id=sub-b", "t-a")
			if code != http.StatusOK || !strings.Contains(other, "No quota data for subscription sub-b in eastus.") || strings.Contains(other, "cores-b") ||
				strings.Contains(other, "Brand B") || strings.Contains(other, "Hidden B") {
				t.Errorf("Brand B's subscription for Brand A's user: %d %s", code, other)
			}
			if code, body := view(t, h, "/api/v1/resources/quotas?subscription_id=sub-b", "t-a"); code != http.StatusNotFound || strings.Contains(body, "Hidden B") {
				t.Errorf("Brand B's quota list for Brand A's user: %d %s", code, body)
			}
			if code, body := view(t, h, PagePath+"?subscription_id="+strings.Repeat("s", 65), "t-a"); code != http.StatusUnprocessableEntity ||
				!strings.Contains(body, "query.subscription_id") {
				t.Errorf("a 65-character subscription: %d %s", code, body)
			}
		})
	}
}
