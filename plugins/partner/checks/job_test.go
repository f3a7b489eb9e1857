package checks_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", IsActive: true}
	retired  = sdk.Tenant{ID: "t-retired", Name: "Retired", IsActive: false}

	admin      = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer  = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}
	fabrikamer = sdk.Principal{ID: "uf", Kind: "user", TenantIDs: []string{fabrikam.ID}}
)

// testCatalogue weighs 4+4+3+3+2+1+4+2 = 23.
const testCatalogue = `programme {
  partner         = "Northwind"
  deadline        = "2027-03-31"
  target_maturity = 2
}
requirement "IAM-01" {
  title    = "MFA for everyone"
  category = "identity"
  priority = "critical"
  check {
    metric = "mfa_coverage"
    target = 90
  }
}
requirement "IAM-02" {
  title    = "MFA for admins"
  category = "identity"
  priority = "critical"
  check {
    metric = "admin_mfa"
    target = 100
  }
}
requirement "DEV-01" {
  title    = "Compliant devices"
  category = "identity"
  priority = "high"
  check {
    metric = "device_compliance"
    target = 80
  }
}
requirement "DP-01" {
  title    = "Baseline compliance"
  category = "data_protection"
  priority = "high"
  check {
    metric = "compliance_score"
    target = 85
  }
}
requirement "DP-03" {
  title    = "SOC 2 coverage"
  category = "data_protection"
  priority = "medium"
  check {
    metric    = "framework_coverage"
    framework = "soc2"
    target    = 50
  }
}
requirement "FW-X" {
  title    = "A framework compliance does not load"
  category = "logging"
  priority = "low"
  check {
    metric    = "framework_coverage"
    framework = "acme"
    target    = 10
  }
}
requirement "IR-01" {
  title    = "Incident response plan"
  category = "incident_response"
  priority = "critical"
  evidence = ["The plan"]
}
requirement "LOG-01" {
  title    = "Log retention"
  category = "logging"
  priority = "medium"
}
`

func records(vs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(vs))
	for i, v := range vs {
		out[i] = json.RawMessage(v)
	}
	return out
}

// datasets: Contoso has MFA 95 %, admins 100 %, no devices, compliance
// 80 %, SOC 2 coverage 60 %; Fabrikam never synced identity, has
// compliance 90 % and SOC 2 coverage 40 %.
func datasets() map[string][]json.RawMessage {
	return map[string][]json.RawMessage{
		checks.IdentityDataset: records(`{"tenant_id": "t-contoso", "mfa_coverage_percentage": 95, "admin_mfa_percentage": 100, "device_compliance_percentage": null}`),
		checks.ComplianceDataset: records(`{"tenant_id": "t-contoso", "overall_compliance_percent": 80}`,
			`{"tenant_id": "t-fabrikam", "overall_compliance_percent": 90}`),
		checks.FrameworksDataset: records(`{"tenant_id": "t-contoso", "framework_id": "soc2", "coverage_percent": 60}`,
			`{"tenant_id": "t-contoso", "framework_id": "nist_csf", "coverage_percent": 10}`,
			`{"tenant_id": "t-fabrikam", "framework_id": "soc2", "coverage_percent": 40}`),
	}
}

type fixture struct {
	h     *plugintest.Harness
	store *checks.Store
	now   time.Time
}

// start serves the checks' job and reads over a migrated database of the
// dialect, with the datasets given and an evidence source (nil for none).
func start(t *testing.T, dialect string, ds map[string][]json.RawMessage, evidence checks.EvidenceStatus) *fixture {
	t.Helper()
	cat, err := catalogue.Parse("test.hcl", []byte(testCatalogue))
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t, dialect)
	st := &checks.Store{DB: db}
	f := &fixture{store: st, now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return f.now }
	runner := &checks.Runner{Catalogue: cat, Store: st, Evidence: evidence, Now: clock}
	reads := &checks.Handlers{Catalogue: cat, Store: st, Now: clock}
	pl := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		runner.Host, runner.Datasets, reads.Host = env.Host, env.Host, env.Host
		return &sdk.Plugin{Routes: reads.Routes(), Jobs: []sdk.Job{{Name: "partner", JobType: checks.Domain, DataDomain: checks.Domain, Run: runner.Run}}}, nil
	}
	def := sdk.Definition{Name: "partner", Migrations: checks.Migrations()}
	f.h = plugintest.New(t, def, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam, retired}, Datasets: ds,
		Migrate: func(ctx context.Context, m fs.FS) error {
			_, err := store.Migrate(ctx, db, m, "plugin_partner_migrations")
			return err
		}})
	return f
}

func each(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}

func (f *fixture) run(t *testing.T) int64 {
	t.Helper()
	n, _, err := f.h.RunJob(context.Background(), "partner")
	if err != nil {
		t.Fatalf("partner run: %v", err)
	}
	return n
}

func (f *fixture) do(t *testing.T, target string, p sdk.Principal) (int, []byte) {
	t.Helper()
	resp := f.h.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (f *fixture) get(t *testing.T, target string, p sdk.Principal, v any) {
	t.Helper()
	status, body := f.do(t, target, p)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}

func statusesOf(items []checks.ResultItem) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		out[it.TenantID+" "+it.RequirementID] = it.Status
	}
	return out
}

func ids(items []checks.ResultItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.RequirementID)
	}
	return out
}

// TestRunAndReads: a run assesses the two active tenants as worked out
// by hand, marks them fresh, and a second run of the day replaces the
// first; the reads serve it with their filters, orders, pages and scopes.
func TestRunAndReads(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, datasets(), nil)
		if n := f.run(t); n != 16 {
			t.Fatalf("run stored %d results, want 16 (8 for each active tenant)", n)
		}
		if marks := f.h.FreshMarks(); len(marks) != 2 || marks[0].Domain != checks.Domain {
			t.Fatalf("fresh marks %+v", marks)
		}
		f.run(t)
		rows, err := f.store.DB.NewSelect().Table("partner_results").Count(context.Background())
		if err != nil || rows != 16 {
			t.Fatalf("after a second run of the day: %d rows (%v), want 16", rows, err)
		}

		var p checks.Programme
		f.get(t, "/api/v1/partner/programme", admin, &p)
		if p.Partner != "Northwind" || p.Deadline != "2027-03-31" || p.DaysLeft != 126 || p.TargetMaturity != 2 || p.MaxMaturity != 5 ||
			p.Requirements != 8 || p.Total != 2 || p.Limit != 50 || len(p.Items) != 2 {
			t.Fatalf("programme %+v", p)
		}
		// Lowest maturity first. Fabrikam meets DP-01 only: 5 × 3/23 =
		// 0.65; Contoso meets IAM-01, IAM-02 and DP-03: 5 × 10/23 = 2.17.
		fab, con := p.Items[0], p.Items[1]
		if fab.TenantID != fabrikam.ID || fab.TenantName != "Fabrikam" || fab.Maturity != 0.65 || fab.MeetsTarget || fab.Met != 1 ||
			fab.NotMet != 1 || fab.Unknown != 4 || fab.AwaitingEvidence != 2 || fab.Gaps != 7 || fab.CriticalGaps != 3 || fab.Date != "2026-11-25" {
			t.Errorf("fabrikam %+v", fab)
		}
		if con.Maturity != 2.17 || !con.MeetsTarget || con.Met != 3 || con.NotMet != 1 || con.Unknown != 2 || con.AwaitingEvidence != 2 ||
			con.Gaps != 5 || con.CriticalGaps != 1 {
			t.Errorf("contoso %+v", con)
		}
		f.get(t, "/api/v1/partner/programme?sort_by=maturity&sort_order=desc&limit=1&offset=0", admin, &p)
		if p.Total != 2 || len(p.Items) != 1 || p.Items[0].TenantID != contoso.ID {
			t.Errorf("highest maturity first, one a page: %+v", p.Items)
		}

		var list checks.ResultList
		f.get(t, "/api/v1/partner/results?tenant_ids="+contoso.ID+"&limit=500", admin, &list)
		want := map[string]string{"IAM-01": "met", "IAM-02": "met", "DEV-01": "unknown", "DP-01": "not_met", "DP-03": "met", "FW-X": "unknown",
			"IR-01": "awaiting_evidence", "LOG-01": "awaiting_evidence"}
		got := statusesOf(list.Items)
		for id, s := range want {
			if got[contoso.ID+" "+id] != s {
				t.Errorf("contoso %s: %q, want %q", id, got[contoso.ID+" "+id], s)
			}
		}
		// By priority, then id.
		if order := ids(list.Items); !slices.Equal(order, []string{"IAM-01", "IAM-02", "IR-01", "DEV-01", "DP-01", "DP-03", "LOG-01", "FW-X"}) {
			t.Errorf("order %v", order)
		}
		byID := map[string]checks.ResultItem{}
		for _, it := range list.Items {
			byID[it.RequirementID] = it
		}
		if dp := byID["DP-01"]; dp.Value == nil || *dp.Value != 80 || *dp.Target != 85 || dp.CheckStatus != "not_met" || dp.Metric != "compliance_score" ||
			dp.Title != "Baseline compliance" || dp.Category != "data_protection" {
			t.Errorf("DP-01 %+v", dp)
		}
		if dev := byID["DEV-01"]; dev.Value != nil || !strings.Contains(dev.Reason, "no device is managed") {
			t.Errorf("DEV-01 %+v", dev)
		}
		if fw := byID["FW-X"]; !strings.Contains(fw.Reason, `no framework "acme"`) {
			t.Errorf("FW-X %+v", fw)
		}
		if ir := byID["IR-01"]; ir.CheckStatus != "none" || ir.Target != nil || !slices.Equal(ir.Evidence, []string{"The plan"}) || ir.EvidenceStatus != "" {
			t.Errorf("IR-01 %+v", ir)
		}

		f.get(t, "/api/v1/partner/results?tenant_ids="+fabrikam.ID+"&gaps_only=true&priority=critical", admin, &list)
		if !slices.Equal(ids(list.Items), []string{"IAM-01", "IAM-02", "IR-01"}) || list.Total != 3 ||
			!strings.Contains(list.Items[0].Reason, "identity_mfa has no record of the tenant") {
			t.Errorf("fabrikam's critical gaps %+v", list.Items)
		}
		f.get(t, "/api/v1/partner/results?status=not_met", admin, &list)
		if got := statusesOf(list.Items); len(got) != 2 || got[contoso.ID+" DP-01"] != "not_met" || got[fabrikam.ID+" DP-03"] != "not_met" {
			t.Errorf("not met %v", got)
		}
		f.get(t, "/api/v1/partner/results?status=met&gaps_only=true", admin, &list)
		if list.Total != 0 {
			t.Errorf("met gaps %+v", list)
		}
		f.get(t, "/api/v1/partner/results?category=logging&sort_by=requirement_id&sort_order=desc&limit=1&offset=1", admin, &list)
		if list.Total != 4 || len(list.Items) != 1 || list.Items[0].RequirementID != "LOG-01" || list.Items[0].TenantID != fabrikam.ID {
			t.Errorf("logging, by id descending, second of four: %+v", list)
		}
		f.get(t, "/api/v1/partner/results?sort_by=value&sort_order=desc&limit=2", admin, &list)
		if len(list.Items) != 2 || *list.Items[0].Value != 100 || *list.Items[1].Value != 95 {
			t.Errorf("by value descending %+v", list.Items)
		}

		// A tenant's user sees its own tenant only, and is refused another.
		f.get(t, "/api/v1/partner/programme", fabrikamer, &p)
		if len(p.Items) != 1 || p.Items[0].TenantID != fabrikam.ID {
			t.Errorf("fabrikam's user sees %+v", p.Items)
		}
		f.get(t, "/api/v1/partner/results", contosoer, &list)
		if list.Total != 8 || strings.Contains(string(mustJSON(t, list)), fabrikam.ID) {
			t.Errorf("contoso's user sees %d results", list.Total)
		}
		for _, path := range []string{"/api/v1/partner/programme", "/api/v1/partner/results", "/api/v1/partner/maturity-trend"} {
			if status, body := f.do(t, path+"?tenant_ids="+fabrikam.ID, contosoer); status != http.StatusForbidden || strings.Contains(string(body), "Fabrikam") {
				t.Errorf("%s naming fabrikam for contoso's user: %d %s", path, status, body)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTrendKeepsOneSnapshotADay: runs on two days leave two points per
// tenant; evidence accepted on the second day raises its maturity.
func TestTrendKeepsOneSnapshotADay(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		evidence := map[string]string{}
		f := start(t, dialect, datasets(), func(_ context.Context, tenantID string) (map[string]string, error) {
			if tenantID == contoso.ID {
				return evidence, nil
			}
			return nil, nil
		})
		f.now = time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
		f.run(t)
		f.now = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
		evidence["LOG-01"], evidence["IR-01"] = "accepted", "submitted"
		f.run(t)
		f.run(t)
		var trend []checks.TrendPoint
		f.get(t, "/api/v1/partner/maturity-trend?tenant_ids="+contoso.ID, admin, &trend)
		// 5 × (10 + 2)/23 = 2.61 once LOG-01's evidence is accepted.
		if len(trend) != 2 || trend[0].Date != "2026-11-24" || trend[0].Maturity != 2.17 || trend[1].Date != "2026-11-25" || trend[1].Maturity != 2.61 ||
			trend[1].Gaps != 4 || trend[1].TenantName != "Contoso" || trend[0].DaysLeft != 127 || trend[1].DaysLeft != 126 {
			t.Fatalf("trend %+v", trend)
		}
		f.get(t, "/api/v1/partner/maturity-trend?days=1", admin, &trend)
		if len(trend) != 2 || trend[0].Date != "2026-11-25" || trend[1].Date != "2026-11-25" {
			t.Fatalf("today's trend %+v", trend)
		}
		var list checks.ResultList
		f.get(t, "/api/v1/partner/results?tenant_ids="+contoso.ID+"&category=logging", admin, &list)
		if s := statusesOf(list.Items); s[contoso.ID+" LOG-01"] != "met" || list.Items[0].EvidenceStatus == "" && list.Items[1].EvidenceStatus == "" {
			t.Errorf("logging with evidence %+v", list.Items)
		}
	})
}

// TestUnavailableDatasets: without the identity and compliance plugins the
// run completes, every check unknown naming the dataset.
func TestUnavailableDatasets(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, nil, nil)
		if n := f.run(t); n != 16 {
			t.Fatalf("run stored %d results", n)
		}
		var list checks.ResultList
		f.get(t, "/api/v1/partner/results?status=unknown&limit=500", admin, &list)
		if list.Total != 12 {
			t.Fatalf("%d unknown results, want 12 (6 checks, 2 tenants)", list.Total)
		}
		datasetOf := map[string]string{"mfa_coverage": "identity_mfa", "admin_mfa": "identity_mfa", "device_compliance": "identity_mfa",
			"compliance_score": "compliance", "framework_coverage": "compliance_frameworks"}
		for _, it := range list.Items {
			if !strings.Contains(it.Reason, "dataset "+datasetOf[it.Metric]+": dataset unavailable") {
				t.Errorf("%s %s: reason %q", it.TenantID, it.RequirementID, it.Reason)
			}
		}
		var p checks.Programme
		f.get(t, "/api/v1/partner/programme", admin, &p)
		if len(p.Items) != 2 || p.Items[0].Maturity != 0 || p.Items[0].Gaps != 8 {
			t.Errorf("programme %+v", p.Items)
		}
	})
}

// TestCatalogueRoute: the catalogue by priority, filtered and paged; a
// value outside its bounds or enum is a 422 naming the parameter.
func TestCatalogueRoute(t *testing.T) {
	f := start(t, storetest.Dialects()[0], nil, nil)
	var list checks.RequirementList
	f.get(t, "/api/v1/partner/requirements", contosoer, &list)
	got := []string{}
	for _, r := range list.Items {
		got = append(got, r.ID)
	}
	if list.Total != 8 || !slices.Equal(got, []string{"IAM-01", "IAM-02", "IR-01", "DEV-01", "DP-01", "DP-03", "LOG-01", "FW-X"}) {
		t.Fatalf("catalogue %v", got)
	}
	f.get(t, "/api/v1/partner/requirements?category=identity&sort_by=id&sort_order=desc&limit=2&offset=1", contosoer, &list)
	if list.Total != 3 || len(list.Items) != 2 || list.Items[0].ID != "IAM-01" || list.Items[1].ID != "DEV-01" {
		t.Fatalf("identity by id descending from the second %+v", list)
	}
	f.get(t, "/api/v1/partner/requirements?priority=low", contosoer, &list)
	if list.Total != 1 || list.Items[0].Check == nil || list.Items[0].Check.Framework != "acme" {
		t.Fatalf("low %+v", list)
	}
	f.get(t, "/api/v1/partner/requirements?offset=100", contosoer, &list)
	if list.Total != 8 || len(list.Items) != 0 {
		t.Fatalf("past the end %+v", list)
	}
	for target, location := range map[string]string{
		"/api/v1/partner/requirements?limit=501":                      "query.limit",
		"/api/v1/partner/requirements?priority=urgent":                "query.priority",
		"/api/v1/partner/results?limit=0":                             "query.limit",
		"/api/v1/partner/results?offset=-1":                           "query.offset",
		"/api/v1/partner/results?status=done":                         "query.status",
		"/api/v1/partner/results?sort_by=title":                       "query.sort_by",
		"/api/v1/partner/results?gaps_only=maybe":                     "query.gaps_only",
		"/api/v1/partner/results?category=" + strings.Repeat("x", 65): "query.category",
		"/api/v1/partner/programme?sort_order=up":                     "query.sort_order",
		"/api/v1/partner/maturity-trend?days=366":                     "query.days",
		"/api/v1/partner/maturity-trend?days=0":                       "query.days",
	} {
		status, body := f.do(t, target, admin)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), location) {
			t.Errorf("%s: %d %s, want 422 naming %s", target, status, body, location)
		}
	}
}
