package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// partnerPlugins declares the partner plugin with its catalogue in the
// HCL file at path.
func partnerPlugins(path string) string {
	return fmt.Sprintf("plugin \"partner\" {\n  binary = %q\n  config {\n    catalogue_file = %q\n  }\n}\n", filepath.Join(binDir, "plugins", "partner"), path)
}

// examplePartnerCatalogue is the catalogue shipped with the plugin.
func examplePartnerCatalogue(t *testing.T) string {
	path, err := filepath.Abs(filepath.Join("..", "..", "plugins", "partner", "catalogue.example.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// partnerWorld is the identity world (Brand A: MFA 66.67 %, admins 100 %;
// Brand B: MFA 0 %, admins 0 %; the simulated cloud derives their managed
// devices, see deviceCompliance) with the compliance world's policy states
// (Brand A 50 %, Brand B 100 %; SOC 2 covered by 5 of its 61 controls in
// each, 8.2 %).
func partnerWorld(t *testing.T) (string, world.World) {
	var w world.World
	for _, path := range []string{identityWorld(t), complianceWorld(t)} {
		var part world.World
		readJSONFile(t, path, &part)
		if w.Tenants == nil {
			w.Tenants = part.Tenants
		}
		w.Users = append(w.Users, part.Users...)
		w.PolicyStates = append(w.PolicyStates, part.PolicyStates...)
	}
	return writeWorld(t, w), w
}

// deviceCompliance is the percent, to two decimals, of compliant devices
// the simulated cloud derives for the directory's users.
func deviceCompliance(w world.World, directory string) float64 {
	var compliant, total int
	for _, u := range w.Users {
		if u.DirectoryTenantID != directory {
			continue
		}
		for _, d := range simgraph.Devices(u) {
			total++
			if d.ComplianceState == "compliant" {
				compliant++
			}
		}
	}
	return math.Round(10000*float64(compliant)/float64(total)) / 100
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// partnerCatalogue weighs 4+4+3+3+2+2+1 = 19, due in 100 days, target 2.5.
func partnerCatalogue(t *testing.T) string {
	deadline := time.Now().UTC().AddDate(0, 0, 100).Format(time.DateOnly)
	src := `programme {
  partner         = "Northwind Bank"
  deadline        = "` + deadline + `"
  target_maturity = 2.5
}
requirement "IAM-01" {
  title    = "MFA for every account"
  category = "identity"
  priority = "critical"
  check {
    metric = "mfa_coverage"
    target = 60
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
    target = 75
  }
}
requirement "DP-03" {
  title    = "SOC 2 covered by policy"
  category = "data_protection"
  priority = "medium"
  check {
    metric    = "framework_coverage"
    framework = "soc2"
    target    = 4
  }
}
requirement "IR-01" {
  title    = "Incident response plan"
  category = "incident_response"
  priority = "medium"
  evidence = ["The plan"]
}
requirement "LOG-01" {
  title    = "A framework the compliance plugin lacks"
  category = "logging"
  priority = "low"
  check {
    metric    = "framework_coverage"
    framework = "acme_logging"
    target    = 10
  }
}
`
	path := filepath.Join(t.TempDir(), "partner.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type partnerProgramme struct {
	Partner        string  `json:"partner"`
	DaysLeft       int     `json:"days_left"`
	TargetMaturity float64 `json:"target_maturity"`
	Requirements   int     `json:"requirements"`
	Total          int     `json:"total"`
	Items          []struct {
		TenantID     string  `json:"tenant_id"`
		TenantName   string  `json:"tenant_name"`
		Maturity     float64 `json:"maturity"`
		MeetsTarget  bool    `json:"meets_target"`
		Met          int     `json:"met"`
		Gaps         int     `json:"gaps"`
		CriticalGaps int     `json:"critical_gaps"`
	} `json:"items"`
}

type partnerResults struct {
	Items []struct {
		TenantID      string   `json:"tenant_id"`
		RequirementID string   `json:"requirement_id"`
		Status        string   `json:"status"`
		Value         *float64 `json:"value"`
		Reason        string   `json:"reason"`
	} `json:"items"`
	Total int `json:"total"`
}

func (l partnerResults) statuses() []string {
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.RequirementID+" "+it.Status)
	}
	return out
}

// TestPartnerThroughTheHost: the identity and compliance syncs publish
// the world's figures, and POST /api/v1/partner/sync assesses each
// tenant against a catalogue in a file: statuses, maturity and gaps as
// worked out by hand, on both databases; the sync is an admin's, the reads
// answer 401 without a token, 422 out of bounds, and a standard user of
// Brand A sees Brand A only and is refused Brand B, on the API and the
// partner page.
func TestPartnerThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testPartnerThroughTheHost(t, dialect) })
	}
}

func testPartnerThroughTheHost(t *testing.T, dialect string) {
	worldFile, w := partnerWorld(t)
	// DEV-01's target is 80 %: Brand A's devices are 1 of 4 compliant,
	// Brand B's all.
	devA, devB := deviceCompliance(w, identityDirA), deviceCompliance(w, identityDirB)
	if devA != 25 || devB != 100 {
		t.Fatalf("the simulated devices are %v %% and %v %% compliant; the figures below assume 25 and 100", devA, devB)
	}
	o := hostOpts{pluginsHCL: identityPlugins("") + compliancePlugins("") + partnerPlugins(partnerCatalogue(t)),
		env: map[string]string{"STEWARD_SIM_WORLD": worldFile, "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "identity")
	waitStartupSync(t, h, admin, "compliance")
	f := &fixture{h: h, admin: admin}
	for _, jobType := range []string{"identity", "compliance"} {
		if r := f.waitRun(t, f.trigger(t, jobType)); r.Status != "completed" {
			t.Fatalf("%s sync %+v", jobType, r)
		}
	}
	if r := h.do(http.MethodPost, "/api/v1/partner/sync", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("partner sync without a token: %d %s", r.status, r.body)
	}
	r := h.do(http.MethodPost, "/api/v1/partner/sync", admin, nil)
	if r.status != http.StatusAccepted {
		t.Fatalf("partner sync: %d %s", r.status, r.body)
	}
	var acc struct {
		JobID string `json:"job_id"`
	}
	r.json(t, &acc)
	if run := f.waitRun(t, acc.JobID); run.Status != "completed" || run.RecordsProcessed != 14 {
		t.Fatalf("partner sync %+v, want completed with 7 results for each of 2 tenants", run)
	}
	// A second run of the day replaces the first.
	if run := f.waitRun(t, f.trigger(t, "partner")); run.Status != "completed" {
		t.Fatalf("second partner sync %+v", run)
	}
	if n, err := h.pluginDB("partner").NewSelect().Table("partner_results").Count(context.Background()); err != nil || n != 14 {
		t.Fatalf("partner_results holds %d rows (%v) after two runs of the day, want 14", n, err)
	}
	// The health report judges exactly the domains the installed plugins
	// keep (no cost or resources plugin here), partner's included.
	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", admin).json(t, &fresh)
	for _, tenant := range []string{"Brand A", "Brand B"} {
		got := fresh[tenant]
		if len(got) != 5 || got["identity"] == nil || got["compliance"] == nil || got["defender"] == nil || got["partner"] == nil || got["stale"] != false {
			t.Errorf("freshness of %s: %v, want identity, compliance, defender and partner marked, nothing else", tenant, got)
		}
	}

	// Brand A meets IAM-01, IAM-02 and DP-03: 5 × 10/19 = 2.63; Brand B
	// meets DEV-01, DP-01 and DP-03: 5 × 8/19 = 2.11. Lowest first.
	var p partnerProgramme
	h.get("/api/v1/partner/programme", admin).json(t, &p)
	if p.Partner != "Northwind Bank" || p.DaysLeft != 100 || p.TargetMaturity != 2.5 || p.Requirements != 7 || p.Total != 2 || len(p.Items) != 2 {
		t.Fatalf("programme %+v", p)
	}
	b, a := p.Items[0], p.Items[1]
	if b.TenantName != "Brand B" || b.Maturity != 2.11 || b.MeetsTarget || b.Met != 3 || b.Gaps != 4 || b.CriticalGaps != 2 {
		t.Errorf("brand B %+v", b)
	}
	if a.TenantName != "Brand A" || a.Maturity != 2.63 || !a.MeetsTarget || a.Met != 3 || a.Gaps != 4 || a.CriticalGaps != 0 {
		t.Errorf("brand A %+v", a)
	}

	var res partnerResults
	h.get("/api/v1/partner/results?tenant_ids="+a.TenantID+"&limit=500", admin).json(t, &res)
	want := []string{"IAM-01 met", "IAM-02 met", "DEV-01 not_met", "DP-01 not_met", "DP-03 met", "IR-01 awaiting_evidence", "LOG-01 unknown"}
	if got := res.statuses(); !slices.Equal(got, want) {
		t.Errorf("brand A's results %v, want %v", got, want)
	}
	values := map[string]float64{}
	for _, it := range res.Items {
		if it.Value != nil {
			values[it.RequirementID] = *it.Value
		}
		if it.Status == "unknown" && it.Reason == "" {
			t.Errorf("%s is unknown without a reason", it.RequirementID)
		}
	}
	if values["IAM-01"] != 66.67 || values["IAM-02"] != 100 || values["DP-01"] != 50 || values["DP-03"] != 4.9 || values["DEV-01"] != 25 || len(values) != 5 {
		t.Errorf("brand A's values %v", values)
	}
	h.get("/api/v1/partner/results?tenant_ids="+b.TenantID+"&gaps_only=true", admin).json(t, &res)
	if got := res.statuses(); !slices.Equal(got, []string{"IAM-01 not_met", "IAM-02 not_met", "IR-01 awaiting_evidence", "LOG-01 unknown"}) {
		t.Errorf("brand B's gaps %v", got)
	}
	var trend []struct {
		TenantName string  `json:"tenant_name"`
		Maturity   float64 `json:"maturity"`
	}
	h.get("/api/v1/partner/maturity-trend?days=7", admin).json(t, &trend)
	if len(trend) != 2 {
		t.Errorf("trend %+v, want today's point of each tenant", trend)
	}
	var cat struct {
		Total int `json:"total"`
	}
	h.get("/api/v1/partner/requirements?category=identity", admin).json(t, &cat)
	if cat.Total != 3 {
		t.Errorf("identity requirements %d, want 3", cat.Total)
	}

	expectInvalid(t, h.get("/api/v1/partner/results?limit=501", admin), "query.limit")
	expectInvalid(t, h.get("/api/v1/partner/results?status=done", admin), "query.status")
	expectInvalid(t, h.get("/api/v1/partner/maturity-trend?days=366", admin), "query.days")
	expectInvalid(t, h.get("/api/v1/partner/programme?sort_by=name", admin), "query.sort_by")
	if r := h.get("/api/v1/partner/programme", ""); r.status != http.StatusUnauthorized {
		t.Errorf("programme without a token: %d", r.status)
	}

	// A standard user of Brand A sees Brand A only.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	if r := h.do(http.MethodPost, "/api/v1/partner/sync", tokA, nil); r.status != http.StatusForbidden {
		t.Errorf("partner sync by a standard user: %d %s", r.status, r.body)
	}
	h.get("/api/v1/partner/programme", tokA).json(t, &p)
	if len(p.Items) != 1 || p.Items[0].TenantID != a.TenantID {
		t.Fatalf("brand A's user sees %+v", p.Items)
	}
	for _, path := range []string{"/api/v1/partner/programme", "/api/v1/partner/results", "/api/v1/partner/maturity-trend"} {
		if r := h.get(path+"?tenant_ids="+b.TenantID, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
			t.Errorf("%s naming brand B for brand A's user: %d %s", path, r.status, r.body)
		}
	}
	htmx := []string{"HX-Request", "true"}
	if r := h.do(http.MethodGet, "/partner", tokA, nil, htmx...); r.status != http.StatusOK || !strings.Contains(string(r.body), "Requirements of Brand A") ||
		!strings.Contains(string(r.body), "2.63 of 5") || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("partner page for brand A's user: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodGet, "/partner?tenant_id="+b.TenantID, tokA, nil, htmx...); r.status != http.StatusForbidden || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("partner page of brand B for brand A's user: %d %s", r.status, r.body)
	}
	if r := h.get("/partials/partner-maturity", tokA); r.status != http.StatusOK || !strings.Contains(string(r.body), "100 days left") {
		t.Errorf("partner card for brand A's user: %d %s", r.status, r.body)
	}
}

// TestPartnerBadCatalogue: a catalogue with a mistake stops the plugin,
// and the host's log names the file, the line and the field.
func TestPartnerBadCatalogue(t *testing.T) {
	path := partnerCatalogue(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(src), `priority = "low"`)
	line := strings.Count(string(src[:at]), "\n") + 1
	bad := strings.Replace(string(src), `priority = "low"`, `priority = "urgent"`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, hostOpts{pluginsHCL: partnerPlugins(path)})
	// The log may quote the message, escaping its quotes.
	want := []string{fmt.Sprintf("%s:%d,3: requirement", path, line), `LOG-01`, `.priority: `, `urgent`, `is not a priority`}
	h.waitFor("the catalogue's error in the log", 30*time.Second, func() bool {
		logs := h.logs.String()
		for _, w := range want {
			if !strings.Contains(logs, w) {
				return false
			}
		}
		return true
	})
	if r := h.get("/api/v1/partner/programme", h.login()); r.status == http.StatusOK {
		t.Errorf("the plugin serves with a bad catalogue: %s", r.body)
	}
}

// TestPartnerBadInlineCatalogue: a catalogue written inline in
// plugins.hcl reaches the plugin through the host's JSON; a mistake in it
// stops the plugin, and the log names the config block and the field's
// path.
func TestPartnerBadInlineCatalogue(t *testing.T) {
	config := `    programme = { partner = "Northwind Bank", deadline = "2027-03-31", target_maturity = 3 }
    requirements = [
      { id = "IAM-01", title = "MFA", category = "identity", priority = "critical", check = { metric = "mfa_coverage", target = 95 } },
      { id = "IAM-02", title = "Admin MFA", category = "identity", priority = "critical", check = { metric = "admin_mfa", target = 120 } },
    ]`
	hcl := fmt.Sprintf("plugin \"partner\" {\n  binary = %q\n  config {\n%s\n  }\n}\n", filepath.Join(binDir, "plugins", "partner"), config)
	h := startHost(t, hostOpts{pluginsHCL: hcl})
	want := "plugins.hcl config: requirements[1].check.target: 120 is outside 0 to 100"
	h.waitFor("the inline catalogue's error in the log", 30*time.Second, func() bool { return strings.Contains(h.logs.String(), want) })
}
