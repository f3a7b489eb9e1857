package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// stewardExemption is an exemption as a finding or resource names it.
type stewardExemption struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason"`
	Owner  string `json:"owner"`
}

// exemptedFinding is a finding with the exemption that covers it.
type exemptedFinding struct {
	ResourceID       string            `json:"resource_id"`
	StewardExemption *stewardExemption `json:"steward_exemption"`
}

// exemptedResource is a control's resource with the exemption that covers it.
type exemptedResource struct {
	ResourceID       string            `json:"resource_id"`
	Exempted         bool              `json:"exempted"`
	StewardExemption *stewardExemption `json:"steward_exemption"`
}

// TestComplianceExemptionsThroughTheHost: on the world of known states
// (Brand A's 37 of 55 key vaults failing CC6.1), on both databases, every
// answer checked against the OpenAPI document: Brand A's user exempts one
// failing vault for a few seconds; the finding leaves the findings list
// (total and page) unless include_exempted, and the vault passes CC6.1 as
// exempted in the control's resources and the framework detail; the
// change is in the audit log as the user's; Brand B's user cannot read,
// change or delete it and cannot create one in Brand A. When it expires
// the finding is back with no other call, and the expiry job records the
// lapse once.
func TestComplianceExemptionsThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceExemptionsThroughTheHost(t, dialect) })
	}
}

func testComplianceExemptionsThroughTheHost(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: compliancePlugins(""),
		env: map[string]string{"STEWARD_SIM_WORLD": complianceWorld(t, purgeStates()...), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "compliance")); r.Status != "completed" {
		t.Fatalf("compliance sync %+v", r)
	}
	users := tenancy.New(h.db())
	uA := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	uB := tenancy.User{DirectoryTenantID: "brand-b-directory", Subject: "oid-b-user", Email: "b-user@brand-b.example", Name: "B user", Groups: []string{"grp-b"}}
	for _, u := range []*tenancy.User{&uA, &uB} {
		if err := users.UpsertUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	tokA, tokB := h.tokenFor(uA), h.tokenFor(uB)
	send := func(method, path, token string, body any) response {
		t.Helper()
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return h.do(method, path, token, strings.NewReader(string(raw)), "Content-Type", "application/json")
	}
	want := func(what string, r response, status int) response {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
		}
		return r
	}
	type controlCounts struct {
		Failed   int                `json:"failed_resources"`
		Passed   int                `json:"passed_resources"`
		Exempted int                `json:"exempted_resources"`
		Passing  []exemptedResource `json:"passing_resources"`
	}
	type exemptedPage struct {
		Items []exemptedFinding `json:"items"`
		Total int               `json:"total"`
	}
	vault := "/subscriptions/aaaaaaaa-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv20"
	failing := "/api/v1/compliance/findings?framework=soc2&control=CC6.1&state=non_compliant&limit=500"
	var page exemptedPage
	h.get(failing, tokA).json(t, &page)
	if page.Total != 37 {
		t.Fatalf("Brand A's failing CC6.1 findings before: %d, want 37", page.Total)
	}

	// Brand A's user sees one tenant: the exemption is Brand A's.
	expires := time.Now().UTC().Add(6 * time.Second).Truncate(time.Second)
	body := map[string]any{"scope": "finding", "resource_id": vault, "policy_definition_id": "/providers/Microsoft.Authorization/policyDefinitions/kv-purge",
		"reason": "Purge protection is enforced by the vault's management group", "owner": "secops@brand-a.example", "expires_at": expires}
	var ex struct {
		ID       int64  `json:"id"`
		TenantID string `json:"tenant_id"`
		Status   string `json:"status"`
	}
	want("create", send(http.MethodPost, "/api/v1/compliance/exemptions", tokA, body), http.StatusCreated).json(t, &ex)
	want("duplicate", send(http.MethodPost, "/api/v1/compliance/exemptions", tokA, body), http.StatusConflict)
	expectInvalid(t, send(http.MethodPost, "/api/v1/compliance/exemptions", tokA, map[string]any{"scope": "finding", "resource_id": vault,
		"policy_definition_id": body["policy_definition_id"], "reason": "x", "owner": "y", "expires_at": time.Now().Add(-time.Hour)}), "body.expires_at")
	at := fmt.Sprintf("/api/v1/compliance/exemptions/%d", ex.ID)

	h.get(failing, tokA).json(t, &page)
	for _, it := range page.Items {
		if it.ResourceID == vault {
			t.Errorf("the exempted finding is listed: %+v", it)
		}
	}
	if page.Total != 36 || len(page.Items) != 36 {
		t.Errorf("failing CC6.1 findings with kv20 exempted: %d (%d listed), want 36", page.Total, len(page.Items))
	}
	h.get(failing+"&include_exempted=true", tokA).json(t, &page)
	i := slices.IndexFunc(page.Items, func(it exemptedFinding) bool { return it.ResourceID == vault })
	if page.Total != 37 || i < 0 || page.Items[i].StewardExemption == nil || page.Items[i].StewardExemption.ID != ex.ID ||
		page.Items[i].StewardExemption.Owner != "secops@brand-a.example" {
		t.Errorf("include_exempted: %d findings, kv20 at %d", page.Total, i)
	}
	var c controlCounts
	h.get("/api/v1/compliance/frameworks/soc2/controls/CC6.1?limit=500", tokA).json(t, &c)
	j := slices.IndexFunc(c.Passing, func(r exemptedResource) bool { return r.ResourceID == vault })
	if c.Failed != 36 || c.Passed != 19 || c.Exempted != 1 || j < 0 || !c.Passing[j].Exempted || c.Passing[j].StewardExemption == nil ||
		c.Passing[j].StewardExemption.ID != ex.ID {
		t.Errorf("CC6.1 with kv20 exempted: %d failing, %d passing, %d exempted; kv20 at %d", c.Failed, c.Passed, c.Exempted, j)
	}
	var d struct {
		Categories []struct {
			Controls []struct {
				ID           string `json:"id"`
				Compliant    int    `json:"compliant_count"`
				NonCompliant int    `json:"non_compliant_count"`
				Exempt       int    `json:"exempt_count"`
				Exempted     int    `json:"exempted_count"`
			} `json:"controls"`
		} `json:"categories"`
	}
	detail := func() (compliant, nonCompliant, exempted int) {
		t.Helper()
		h.get("/api/v1/compliance/frameworks/soc2", tokA).json(t, &d)
		for _, cat := range d.Categories {
			for _, ctl := range cat.Controls {
				if ctl.ID == "CC6.1" {
					return ctl.Compliant, ctl.NonCompliant, ctl.Exempted
				}
			}
		}
		t.Fatal("no CC6.1 in the detail")
		return
	}
	if passed, failed, exempted := detail(); passed != 19 || failed != 36 || exempted != 1 {
		t.Errorf("the detail's CC6.1 with kv20 exempted: %d/%d, %d exempted; want 19/36, 1", passed, failed, exempted)
	}

	// Brand B's user finds nothing of it and cannot exempt in Brand A.
	for _, m := range []string{http.MethodGet, http.MethodPatch, http.MethodDelete} {
		var b any
		if m == http.MethodPatch {
			b = map[string]any{"reason": "mine"}
		}
		if r := send(m, at, tokB, b); r.status != http.StatusNotFound || strings.Contains(string(r.body), "kv20") {
			t.Errorf("Brand B's user: %s %s: %d %s", m, at, r.status, r.body)
		}
	}
	inA := maps.Clone(body)
	inA["tenant_id"] = ex.TenantID
	want("Brand B's user creates in Brand A", send(http.MethodPost, "/api/v1/compliance/exemptions", tokB, inA), http.StatusForbidden)
	want("Brand B's user lists Brand A", h.get("/api/v1/compliance/exemptions?tenant_ids="+ex.TenantID, tokB), http.StatusForbidden)
	var list struct {
		Total int `json:"total"`
	}
	want("Brand B's user lists", h.get("/api/v1/compliance/exemptions", tokB), http.StatusOK).json(t, &list)
	if list.Total != 0 {
		t.Errorf("Brand B's user lists %d exemptions", list.Total)
	}

	var audit auditPage
	h.get("/api/v1/audit-logs?action_prefix=compliance_exemption&limit=100", admin).json(t, &audit)
	if len(audit.Items) != 1 || audit.Items[0].Action != "compliance_exemption.create.success" || audit.Items[0].ActorID != uA.ID ||
		audit.Items[0].TenantID == nil || *audit.Items[0].TenantID != ex.TenantID {
		t.Errorf("audit after the create %+v", audit.Items)
	}

	// Past expires_at, with no other call, the finding fails again.
	time.Sleep(time.Until(expires) + 500*time.Millisecond)
	h.get(failing, tokA).json(t, &page)
	if page.Total != 37 {
		t.Errorf("failing CC6.1 findings after the expiry: %d, want 37", page.Total)
	}
	h.get("/api/v1/compliance/frameworks/soc2/controls/CC6.1?limit=1", tokA).json(t, &c)
	if c.Failed != 37 || c.Exempted != 0 {
		t.Errorf("CC6.1 after the expiry: %d failing, %d exempted", c.Failed, c.Exempted)
	}
	if passed, failed, exempted := detail(); passed != 18 || failed != 37 || exempted != 0 {
		t.Errorf("the detail's CC6.1 after the expiry: %d/%d, %d exempted", passed, failed, exempted)
	}
	want("extend a lapsed exemption", send(http.MethodPatch, at, tokA, map[string]any{"expires_at": time.Now().Add(time.Hour)}), http.StatusConflict)

	var job struct {
		JobID string `json:"job_id"`
	}
	want("expiry on demand", h.do(http.MethodPost, "/api/v1/sync/compliance_exemption_expiry", admin, nil), http.StatusAccepted).json(t, &job)
	if run := f.waitRun(t, job.JobID); run.Status != "completed" {
		t.Errorf("expiry run %+v", run)
	}
	want("expiry again", h.do(http.MethodPost, "/api/v1/sync/compliance_exemption_expiry", admin, nil), http.StatusAccepted).json(t, &job)
	if run := f.waitRun(t, job.JobID); run.Status != "completed" || run.RecordsProcessed != 0 {
		t.Errorf("expiry run again %+v", run)
	}
	h.get("/api/v1/audit-logs?action=compliance_exemption.expire.success&limit=100", admin).json(t, &audit)
	if len(audit.Items) != 1 || audit.Items[0].ActorID != "plugin:compliance" || audit.Items[0].TenantID == nil || *audit.Items[0].TenantID != ex.TenantID {
		t.Errorf("the lapse is audited once, by the plugin: %+v", audit.Items)
	}
	var got struct {
		Status          string     `json:"status"`
		LapseRecordedAt *time.Time `json:"lapse_recorded_at"`
	}
	want("read the lapsed exemption", h.get(at, tokA), http.StatusOK).json(t, &got)
	if got.Status != "expired" || got.LapseRecordedAt == nil {
		t.Errorf("lapsed %+v", got)
	}
}
