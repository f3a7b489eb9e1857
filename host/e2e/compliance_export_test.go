package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// exportedFinding is what the export test compares of a finding: its
// identity (tenant, resource, policy) and its state.
type exportedFinding struct{ id, state string }

// pagedFindings pages through the findings route with query, seven at a
// time.
func pagedFindings(t *testing.T, h *host, query, token string) []exportedFinding {
	t.Helper()
	var out []exportedFinding
	for offset := 0; ; offset += 7 {
		var page struct {
			Items []struct {
				TenantID   string `json:"tenant_id"`
				ResourceID string `json:"resource_id"`
				PolicyID   string `json:"policy_definition_id"`
				State      string `json:"compliance_state"`
			} `json:"items"`
			Total int `json:"total"`
		}
		h.get(fmt.Sprintf("/api/v1/compliance/findings?limit=7&offset=%d&%s", offset, query), token).json(t, &page)
		for _, it := range page.Items {
			out = append(out, exportedFinding{it.TenantID + "|" + it.ResourceID + "|" + it.PolicyID, it.State})
		}
		if offset+7 >= page.Total {
			if len(out) != page.Total {
				t.Fatalf("findings of %q: %d paged through, total %d", query, len(out), page.Total)
			}
			return out
		}
	}
}

var reportControlRE = regexp.MustCompile(`<tr class="report-control" data-control="([^"]+)" data-status="([^"]+)">`)

// TestComplianceExportThroughTheHost: on a world with known states, on
// both databases, every answer checked against the OpenAPI document, the
// findings export as CSV and as OCSF holds exactly the findings route's
// items paged through (same count, same findings, same order, same
// states) for a framework, a control, a tenant and a user's own tenant;
// Brand A's user is refused Brand B's export (403) without a trace of it;
// a control without its framework and an unknown format are 422 naming
// the field; and the framework report shows every control of SOC 2 with
// the status the framework detail route gives it.
func TestComplianceExportThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testComplianceExportThroughTheHost(t, dialect) })
	}
}

func testComplianceExportThroughTheHost(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: compliancePlugins(""),
		env: map[string]string{"STEWARD_SIM_WORLD": complianceWorld(t, append(purgeStates(), frameworkPolicyStates()...)...), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "compliance")
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-a-user", Email: "a-user@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	ids := h.tenantIDs(t, admin)
	a, b := ids["Brand A"], ids["Brand B"]

	for _, c := range []struct {
		query, token string
		want         int
	}{
		// CC6.1's: kv-purge on Brand A's 55 key vaults and Brand B's kvb,
		// certificate-validity on kva and kvb.
		{"framework=soc2", admin, 0},
		{"framework=soc2&control=CC6.1&sort_by=resource&sort_order=asc", admin, 58},
		{"tenant_ids=" + b + "&sort_by=state", admin, 0},
		{"severity=High&sort_by=evaluated", tokA, 0},
		{"", tokA, 0},
	} {
		want := pagedFindings(t, h, c.query, c.token)
		if c.want != 0 && len(want) != c.want {
			t.Errorf("findings of %q: %d, want %d", c.query, len(want), c.want)
		}
		if len(want) == 0 {
			t.Errorf("findings of %q: none", c.query)
		}
		r := h.get("/api/v1/compliance/findings/export?"+c.query, c.token)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
			!regexp.MustCompile(`^attachment; filename="findings-\d{4}-\d{2}-\d{2}\.csv"$`).MatchString(r.header.Get("Content-Disposition")) {
			t.Fatalf("CSV of %q: %d %v", c.query, r.status, r.header)
		}
		records, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
		if err != nil || len(records) == 0 {
			t.Fatalf("CSV of %q: %v %s", c.query, err, r.body)
		}
		var got []exportedFinding
		for _, rec := range records[1:] {
			got = append(got, exportedFinding{rec[0] + "|" + rec[2] + "|" + rec[5], rec[9]})
		}
		if !slices.Equal(got, want) {
			t.Errorf("CSV of %q: %d rows %v, want the findings route's %d %v", c.query, len(got), got, len(want), want)
		}

		var events []struct {
			ClassUID    int `json:"class_uid"`
			TypeUID     int `json:"type_uid"`
			FindingInfo struct {
				UID string `json:"uid"`
			} `json:"finding_info"`
			Compliance struct {
				StatusCode string `json:"status_code"`
			} `json:"compliance"`
			Cloud struct {
				Provider string `json:"provider"`
			} `json:"cloud"`
		}
		r = h.get("/api/v1/compliance/findings/export?format=ocsf&"+c.query, c.token)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || !strings.HasSuffix(r.header.Get("Content-Disposition"), `.json"`) {
			t.Fatalf("OCSF of %q: %d %v", c.query, r.status, r.header)
		}
		r.json(t, &events)
		got = got[:0]
		for _, e := range events {
			got = append(got, exportedFinding{e.FindingInfo.UID, e.Compliance.StatusCode})
			if e.ClassUID != 2003 || e.TypeUID != 200301 || e.Cloud.Provider != "Azure" {
				t.Errorf("OCSF of %q: event %+v", c.query, e)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("OCSF of %q: %d events %v, want the findings route's %d %v", c.query, len(got), got, len(want), want)
		}
		if c.token == tokA && strings.Contains(string(r.body), "bbbbbbbb") {
			t.Errorf("Brand A's user's export of %q carries Brand B's findings", c.query)
		}
	}

	for _, target := range []string{"/api/v1/compliance/findings/export?tenant_ids=" + b, "/api/v1/compliance/findings/export?format=ocsf&tenant_ids=" + a + "," + b,
		"/compliance/report?framework=soc2&tenant_id=" + b} {
		if r := h.get(target, tokA); r.status != http.StatusForbidden || strings.Contains(string(r.body), "kvb") || r.header.Get("Content-Disposition") != "" {
			t.Errorf("%s for Brand A's user: %d %v %s", target, r.status, r.header, r.body)
		}
	}
	expectInvalid(t, h.get("/api/v1/compliance/findings/export?control=CC6.1", admin), "query.control")
	expectInvalid(t, h.get("/api/v1/compliance/findings/export?format=xlsx", admin), "query.format")
	if r := h.get("/api/v1/compliance/findings/export?framework=soc2&control=ZZ", admin); r.status != http.StatusNotFound || r.header.Get("Content-Disposition") != "" {
		t.Errorf("an unknown control's export: %d %v %s", r.status, r.header, r.body)
	}

	// The report shows each control of the framework with the status the
	// framework detail route gives it, for the caller's tenants and for
	// one tenant picked.
	for _, c := range []struct{ query, token string }{{"", tokA}, {"", admin}, {"&tenant_id=" + b, admin}} {
		var d frameworkDetail
		h.get("/api/v1/compliance/frameworks/soc2?"+strings.Replace(c.query, "tenant_id", "tenant_ids", 1), c.token).json(t, &d)
		want := map[string]string{}
		for _, cat := range d.Categories {
			for _, ctl := range cat.Controls {
				want[ctl.ID] = ctl.Status
			}
		}
		r := h.get("/compliance/report?framework=soc2"+c.query, c.token)
		if r.status != http.StatusOK {
			t.Fatalf("the report %q: %d %s", c.query, r.status, r.body)
		}
		got := map[string]string{}
		for _, m := range reportControlRE.FindAllStringSubmatch(string(r.body), -1) {
			got[m[1]] = m[2]
		}
		if len(want) < 10 || !maps.Equal(got, want) {
			t.Errorf("the report %q: %d controls %v, want the detail's %d %v", c.query, len(got), got, len(want), want)
		}
		if want["CC6.1"] == "" || want["CC6.1"] == "not_covered" {
			t.Errorf("the report %q: CC6.1 is %q", c.query, want["CC6.1"])
		}
	}
	if r := h.get("/compliance/report?framework=nope", admin); r.status != http.StatusNotFound {
		t.Errorf("the report of an unknown framework: %d %s", r.status, r.body)
	}
}
