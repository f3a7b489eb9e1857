package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

type anomalyItem struct {
	ID             int64   `json:"id"`
	TenantID       string  `json:"tenant_id"`
	Service        string  `json:"service"`
	Date           string  `json:"date"`
	Impact         float64 `json:"impact"`
	Acknowledged   bool    `json:"acknowledged"`
	AcknowledgedBy *string `json:"acknowledged_by"`
}

type anomalyList struct {
	Items []anomalyItem `json:"items"`
	Total int           `json:"total"`
}

// TestCostAnomalies: the demo world's costs, synced by the cost plugin at
// start-up for every tenant, the one not delegated too (a year's backfill,
// each tenant judged by the detector as its costs are written), are served by the anomaly routes, scoped per tenant,
// with the flagged days being the injected spikes; acknowledging is
// tenant-checked, idempotent and audited, and a bulk request naming
// another tenant's anomaly acknowledges none.
func TestCostAnomalies(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostAnomalies(t, dialect) })
	}
}

func testCostAnomalies(t *testing.T, dialect string) {
	ctx := context.Background()
	h, admin, idOf := startDemoCosts(t, dialect)
	contoso := idOf["Contoso Retail"]
	// Every tenant's costs arrived, Northwind Travel's too, which is not
	// delegated and is read in its own directory.
	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", admin).json(t, &fresh)
	for _, tn := range world.Demo(stack.DemoSeed, time.Now().UTC()).Tenants {
		if fresh[tn.Name]["costs"] == nil {
			t.Errorf("%s's costs are not fresh after the start-up sync: %v", tn.Name, fresh[tn.Name])
		}
	}
	db := h.pluginDB("cost")

	// The simulator serves the demo world of its day.
	w := world.Demo(stack.DemoSeed, time.Now().UTC())
	tenantOf := map[string]string{}
	for _, tn := range w.Tenants {
		for _, s := range tn.Subscriptions {
			tenantOf[s.ID] = idOf[tn.Name]
		}
	}
	spikes := map[string]bool{}
	for _, s := range world.DemoSpikes(stack.DemoSeed, time.Now().UTC()) {
		spikes[tenantOf[s.SubscriptionID]+"/"+s.Service+"/"+s.Date] = true
	}

	var all anomalyList
	h.get("/api/v1/costs/anomalies?limit=200&sort_by=impact", admin).json(t, &all)
	if all.Total < 5 || len(all.Items) != all.Total {
		t.Fatalf("the admin sees %d anomalies: %+v", all.Total, all.Items)
	}
	var mine, others []anomalyItem
	for i, a := range all.Items {
		if !spikes[a.TenantID+"/"+a.Service+"/"+a.Date] {
			t.Errorf("anomaly %+v is no injected spike", a)
		}
		if i > 0 && a.Impact > all.Items[i-1].Impact {
			t.Errorf("not sorted by impact: %v after %v", a.Impact, all.Items[i-1].Impact)
		}
		if a.TenantID == contoso {
			mine = append(mine, a)
		} else {
			others = append(others, a)
		}
	}
	if len(mine) < 2 || len(others) == 0 {
		t.Fatalf("the demo's anomalies are %d of Contoso Retail's and %d of other tenants'; the test needs two and one", len(mine), len(others))
	}

	u := tenancy.User{DirectoryTenantID: "contoso-directory", Subject: "oid-contoso-user", Email: "anomalies@contoso-retail.example", Name: "C user", Groups: []string{"grp-contoso-retail"}}
	if err := tenancy.New(h.db()).UpsertUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	user := h.tokenFor(u)
	var seen anomalyList
	h.get("/api/v1/costs/anomalies?limit=200", user).json(t, &seen)
	if seen.Total != len(mine) {
		t.Errorf("the Contoso user sees %d anomalies, want %d", seen.Total, len(mine))
	}
	for _, a := range seen.Items {
		if a.TenantID != contoso {
			t.Errorf("the Contoso user sees %+v", a)
		}
	}
	if r := h.get("/api/v1/costs/anomalies?tenant_ids="+others[0].TenantID, user); r.status != http.StatusForbidden {
		t.Errorf("naming another tenant: %d %s", r.status, r.body)
	}

	var trend struct {
		Currency string `json:"currency"`
		Items    []struct {
			Month string `json:"month"`
			Count int    `json:"count"`
		} `json:"items"`
	}
	h.get("/api/v1/costs/anomalies/trends?months=24", admin).json(t, &trend)
	if len(trend.Items) != 24 || trend.Currency != "USD" {
		t.Errorf("trend %+v", trend)
	}
	var byService struct {
		Items []struct {
			Service string `json:"service"`
			Count   int    `json:"count"`
		} `json:"items"`
	}
	h.get("/api/v1/costs/anomalies/by-service", user).json(t, &byService)
	counted := 0
	for _, s := range byService.Items {
		counted += s.Count
	}
	if counted != len(mine) {
		t.Errorf("by service the Contoso user's anomalies count %d, want %d", counted, len(mine))
	}
	var top anomalyList
	h.get("/api/v1/costs/anomalies/top?n=1", admin).json(t, &top)
	if len(top.Items) != 1 || top.Items[0].ID != all.Items[0].ID {
		t.Errorf("top 1: %+v, want %+v", top.Items, all.Items[0])
	}

	for target, location := range map[string]string{
		"/api/v1/costs/anomalies?limit=0":              "query.limit",
		"/api/v1/costs/anomalies?limit=201":            "query.limit",
		"/api/v1/costs/anomalies?sort_order=up":        "query.sort_order",
		"/api/v1/costs/anomalies?sort_by=bogus":        "query.sort_by",
		"/api/v1/costs/anomalies/trends?months=25":     "query.months",
		"/api/v1/costs/anomalies/by-service?limit=51":  "query.limit",
		"/api/v1/costs/anomalies/top?n=0":              "query.n",
		"/api/v1/costs/anomalies/top?acknowledged=yes": "query.acknowledged",
	} {
		expectInvalid(t, h.get(target, admin), location)
	}
	post := func(path, token, body string) response {
		return h.do(http.MethodPost, path, token, strings.NewReader(body), "Content-Type", "application/json")
	}
	const bulk = "/api/v1/costs/anomalies/bulk-acknowledge"
	expectInvalid(t, post(bulk, user, `{"anomaly_ids": []}`), "body.anomaly_ids")
	expectInvalid(t, post(bulk, user, `{"anomaly_ids": ["x"]}`), "body.anomaly_ids[0]")

	acknowledged := func() []int64 {
		var ids []int64
		if err := db.NewSelect().Table("cost_anomalies").Column("id").Where("acknowledged = ?", true).Order("id").Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	ackPath := func(id int64) string { return fmt.Sprintf("/api/v1/costs/anomalies/%d/acknowledge", id) }
	if r := post(ackPath(others[0].ID), user, ""); r.status != http.StatusNotFound || strings.Contains(string(r.body), others[0].TenantID) {
		t.Errorf("acknowledging another tenant's anomaly: %d %s", r.status, r.body)
	}
	refused := fmt.Sprintf(`{"anomaly_ids": [%d, %d]}`, mine[0].ID, others[0].ID)
	r := post(bulk, user, refused)
	var p problem
	r.json(t, &p)
	if r.status != http.StatusNotFound || len(p.Errors) != 1 || p.Errors[0].Location != "body.anomaly_ids" || !strings.Contains(p.Errors[0].Message, fmt.Sprint(others[0].ID)) {
		t.Errorf("bulk naming another tenant's anomaly: %d %s", r.status, r.body)
	}
	if got := acknowledged(); len(got) != 0 {
		t.Fatalf("refused requests acknowledged %v", got)
	}

	var ack struct {
		AlreadyAcknowledged bool        `json:"already_acknowledged"`
		Anomaly             anomalyItem `json:"anomaly"`
	}
	for i := range 2 {
		r := post(ackPath(mine[0].ID), user, "")
		r.json(t, &ack)
		if r.status != http.StatusOK || ack.AlreadyAcknowledged != (i == 1) || !ack.Anomaly.Acknowledged || ack.Anomaly.AcknowledgedBy == nil || *ack.Anomaly.AcknowledgedBy != u.ID {
			t.Errorf("acknowledgement %d: %d %s", i, r.status, r.body)
		}
	}
	var result struct {
		Acknowledged        int `json:"acknowledged"`
		AlreadyAcknowledged int `json:"already_acknowledged"`
	}
	r = post(bulk, user, fmt.Sprintf(`{"anomaly_ids": [%d, %d]}`, mine[0].ID, mine[1].ID))
	r.json(t, &result)
	if r.status != http.StatusOK || result.Acknowledged != 1 || result.AlreadyAcknowledged != 1 {
		t.Errorf("bulk acknowledgement: %d %s", r.status, r.body)
	}
	want := []int64{mine[0].ID, mine[1].ID}
	slices.Sort(want)
	if got := acknowledged(); !slices.Equal(got, want) {
		t.Errorf("acknowledged %v, want %v", got, want)
	}

	var audit auditPage
	h.get("/api/v1/audit-logs?action_prefix=anomaly.&limit=500", admin).json(t, &audit)
	actions := map[string]entry{}
	for _, e := range audit.Items {
		actions[e.Action] = e
	}
	for _, action := range []string{"anomaly.acknowledge.success", "anomaly.acknowledge.failure", "anomaly.bulk_acknowledge.success", "anomaly.bulk_acknowledge.failure"} {
		e, ok := actions[action]
		if !ok || e.ActorID != u.ID {
			t.Errorf("audit entry %s: %+v", action, e)
		}
	}
	if e := actions["anomaly.bulk_acknowledge.success"]; e.TenantID == nil || *e.TenantID != contoso {
		t.Errorf("bulk acknowledgement audited for tenant %v", e.TenantID)
	}
}
