package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// quotaWorld has two tenants whose quotas sit on the health boundaries.
// Brand B comes first: Steward signs in to the world's first tenant, which
// reaches its own subscription, and Brand A's through delegation.
func quotaWorld(t *testing.T) string {
	w := world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: "22222222-2222-2222-2222-222222222222", Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: "11111111-1111-1111-1111-111111111111", Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		Quotas: []world.Quota{
			{SubscriptionID: "aaaaaaaa-0000-0000-0000-000000000001", Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 7499, Limit: 10000},
			{SubscriptionID: "aaaaaaaa-0000-0000-0000-000000000001", Location: "eastus", Provider: "compute", Name: "virtualMachines", CurrentValue: 75, Limit: 100},
			{SubscriptionID: "aaaaaaaa-0000-0000-0000-000000000001", Location: "eastus", Provider: "compute", Name: "availabilitySets", CurrentValue: 8999, Limit: 10000},
			{SubscriptionID: "aaaaaaaa-0000-0000-0000-000000000001", Location: "eastus", Provider: "compute", Name: "standardDSv3Family", CurrentValue: 90, Limit: 100},
			{SubscriptionID: "aaaaaaaa-0000-0000-0000-000000000001", Location: "eastus", Provider: "compute", Name: "dedicatedHosts", CurrentValue: 0, Limit: 0},
			{SubscriptionID: "aaaaaaaa-0000-0000-0000-000000000001", Location: "eastus", Provider: "network", Name: "VirtualNetworks", CurrentValue: 10, Limit: 50},
			{SubscriptionID: "bbbbbbbb-0000-0000-0000-000000000001", Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 95, Limit: 100},
		},
	}
	return writeWorld(t, w)
}

func resourcesPlugins() string {
	return fmt.Sprintf("plugin \"resources\" {\n  binary = %q\n  cloud_credential = true\n  config {\n    locations = [\"eastus\"]\n  }\n}\n", filepath.Join(binDir, "plugins", "resources"))
}

type quotaList struct {
	Items []struct {
		SubscriptionID   string  `json:"subscription_id"`
		SubscriptionName string  `json:"subscription_name"`
		Name             string  `json:"name"`
		CurrentValue     float64 `json:"current_value"`
		Limit            float64 `json:"limit"`
		UsagePercent     float64 `json:"usage_percent"`
		Health           string  `json:"health"`
	} `json:"items"`
}

// TestQuotasThroughTheSimulatedCloud: the world's usages reach the quota
// routes through the Azure SDK clients, the plugin's sync job and its
// table, with the right health and their subscriptions' names, scoped per
// tenant.
// It runs on both databases, so the plugin's store and its migrations of
// each dialect are exercised.
func TestQuotasThroughTheSimulatedCloud(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testQuotasThroughTheSimulatedCloud(t, dialect) })
	}
}

func testQuotasThroughTheSimulatedCloud(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: resourcesPlugins(), env: map[string]string{"STEWARD_SIM_WORLD": quotaWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	var tenants []tenancy.Tenant
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	if len(tenants) != 2 || !tenants[0].UseDelegation || tenants[1].UseDelegation {
		t.Fatalf("world tenants registered as %+v", tenants)
	}
	// The start-up sync fills the table; a manual one must work too.
	id := (&fixture{h: h, admin: admin}).trigger(t, "resources")
	if r := (&fixture{h: h, admin: admin}).waitRun(t, id); r.Status != "completed" || r.RecordsProcessed != 7 {
		t.Fatalf("resources sync %+v", r)
	}
	// The plugin keeps its rows in the host's database, of this dialect.
	if n, err := h.pluginDB("resources").NewSelect().Table("resources_quota_usages").Count(context.Background()); err != nil || n != 7 {
		t.Fatalf("the plugin's table on %s holds %d rows (%v), want 7", dialect, n, err)
	}
	var list quotaList
	h.get("/api/v1/resources/quotas", admin).json(t, &list)
	want := map[string][2]any{
		"aaaaaaaa-0000-0000-0000-000000000001/cores":              {74.99, "ok"},
		"aaaaaaaa-0000-0000-0000-000000000001/virtualMachines":    {75.0, "warning"},
		"aaaaaaaa-0000-0000-0000-000000000001/availabilitySets":   {89.99, "warning"},
		"aaaaaaaa-0000-0000-0000-000000000001/standardDSv3Family": {90.0, "critical"},
		"aaaaaaaa-0000-0000-0000-000000000001/dedicatedHosts":     {0.0, "ok"},
		"bbbbbbbb-0000-0000-0000-000000000001/cores":              {95.0, "critical"},
	}
	if len(list.Items) != len(want) {
		t.Fatalf("admin sees %d compute quotas, want %d: %+v", len(list.Items), len(want), list.Items)
	}
	// Each quota carries the display name the subscriptions API lists.
	subNames := map[string]string{"aaaaaaaa-0000-0000-0000-000000000001": "A prod", "bbbbbbbb-0000-0000-0000-000000000001": "B prod"}
	for _, q := range list.Items {
		w, ok := want[q.SubscriptionID+"/"+q.Name]
		if !ok || q.UsagePercent != w[0] || q.Health != w[1] {
			t.Errorf("%s/%s: %g%% %s, want %v", q.SubscriptionID, q.Name, q.UsagePercent, q.Health, w)
		}
		if q.SubscriptionName != subNames[q.SubscriptionID] {
			t.Errorf("%s/%s: subscription named %q, want %q", q.SubscriptionID, q.Name, q.SubscriptionName, subNames[q.SubscriptionID])
		}
	}
	h.get("/api/v1/resources/quotas?provider=network", admin).json(t, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "VirtualNetworks" || list.Items[0].Health != "ok" {
		t.Errorf("network quotas %+v", list.Items)
	}
	expectInvalid(t, h.get("/api/v1/resources/quotas?provider=storage", admin), "query.provider")

	// A standard user of Brand A sees only Brand A's subscription.
	db := h.db()
	ts := tenancy.New(db)
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := ts.UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/resources/quotas", tokA).json(t, &list)
	if len(list.Items) == 0 {
		t.Error("the standard user of brand A sees no quotas of its own subscription")
	}
	for _, q := range list.Items {
		if q.SubscriptionID != "aaaaaaaa-0000-0000-0000-000000000001" {
			t.Errorf("standard user sees %s", q.SubscriptionID)
		}
	}
	if r := h.get("/api/v1/resources/quotas?subscription_id=bbbbbbbb-0000-0000-0000-000000000001", tokA); r.status != http.StatusNotFound || strings.Contains(string(r.body), "cores") {
		t.Errorf("another tenant's subscription: %d %s", r.status, r.body)
	}
	var sum struct {
		Health string `json:"health"`
		Counts struct {
			Total, OK, Warning, Critical int
		} `json:"counts"`
	}
	h.get("/api/v1/resources/quotas/summary", tokA).json(t, &sum)
	if sum.Counts.Total != 6 || sum.Counts.OK != 3 || sum.Counts.Warning != 2 || sum.Counts.Critical != 1 || sum.Health != "critical" {
		t.Errorf("summary for Brand A %+v", sum)
	}
	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", admin).json(t, &fresh)
	if fresh["Brand A"]["resources"] == nil || fresh["Brand B"]["resources"] == nil {
		t.Errorf("resources freshness not marked: %v", fresh)
	}
}

// TestBadWorldFileRefused: a world file error stops the host and names the
// bad entry.
func TestBadWorldFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "world.json")
	if err := os.WriteFile(path, []byte(`{"tenants": [{"name": "A", "directory_tenant_id": "d", "subscriptions": [{"id": "s"}]}],
  "quotas": [{"subscription_id": "nope", "location": "eastus", "provider": "compute", "name": "cores", "current_value": 1, "limit": 2}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	out, err := runSteward(t, []string{"STEWARD_DATA_DIR=" + data, "STEWARD_PLUGINS_FILE=" + filepath.Join(data, "none.hcl"), "STEWARD_HTTP_ADDR=" + anyPort, "STEWARD_SIM_WORLD=" + path}, "serve")
	if err == nil || !strings.Contains(out, `quotas[0].subscription_id: "nope" is not a subscription of any tenant`) {
		t.Fatalf("want the bad entry named: %v\n%s", err, out)
	}
}

// TestSimAlone: `steward sim --world FILE` serves on its own and logs the
// addresses it serves.
func TestSimAlone(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "steward"), "sim", "--world", quotaWorld(t))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("sim exited")
			}
			if strings.Contains(line, "simulated cloud serving") {
				for _, key := range []string{"identity_provider=https://127.0.0.1:", "resource_manager=https://127.0.0.1:", "tenants=2"} {
					if !strings.Contains(line, key) {
						t.Fatalf("address line lacks %s: %s", key, line)
					}
				}
				return
			}
		case <-deadline:
			t.Fatal("no address line")
		}
	}
}
