package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDemoStartup: the demo world, every domain plugin, and nothing but a
// start-up: the world's brands are registered with their tenants; once
// its first syncs are done no tenant is stale (the DMARC
// reports' domain without a folder does not count, and Northwind Travel,
// which is not delegated, is read in its own directory), and the partner
// job, which reads the identity and compliance datasets, ran after them:
// its maturity equals the one a manual re-sync gives. The identity sync
// found the demo's access review findings and its one overdue review, which
// its routes and the identity page show.
func TestDemoStartup(t *testing.T) {
	hcl := resourcesPlugins() + costPlugins("") + identityPlugins("") + compliancePlugins("") + dmarcPlugins("") + partnerPlugins(examplePartnerCatalogue(t))
	h := startHost(t, hostOpts{pluginsHCL: hcl, env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
	admin := h.login()

	// Done: a completed partner run, and nothing queued or running.
	h.waitFor("the start-up syncs", 3*time.Minute, func() bool {
		var hist struct {
			Logs []run `json:"logs"`
		}
		h.get("/api/v1/sync/history?limit=100", admin).json(t, &hist)
		partner := false
		for _, r := range hist.Logs {
			switch {
			case r.Status == "failed":
				t.Fatalf("start-up %s sync failed: %s", r.JobType, deref(r.ErrorMessage))
			case r.Status != "completed":
				return false
			case r.JobType == "partner":
				partner = true
			}
		}
		return partner
	})

	var fresh map[string]struct {
		Stale    bool              `json:"stale"`
		Problems map[string]string `json:"problems"`
	}
	h.get("/api/v1/health/data", admin).json(t, &fresh)
	if len(fresh) == 0 {
		t.Fatal("no tenant in health/data")
	}
	for name, f := range fresh {
		if f.Stale || len(f.Problems) > 0 {
			t.Errorf("%s after a clean start-up: stale %v, problems %v", name, f.Stale, f.Problems)
		}
	}

	// The demo's three brands are registered with their tenants: each
	// brand's production tenant and, but for Northwind, its dev tenant.
	var brands []struct {
		Name      string   `json:"name"`
		TenantIDs []string `json:"tenant_ids"`
	}
	h.get("/api/v1/brands", admin).json(t, &brands)
	ids := h.tenantIDs(t, admin)
	want := map[string][]string{
		"Contoso Retail":   {ids["Contoso Retail"], ids["Contoso Retail Dev"]},
		"Fabrikam Foods":   {ids["Fabrikam Foods"], ids["Fabrikam Foods Dev"]},
		"Northwind Travel": {ids["Northwind Travel"]},
	}
	if len(brands) != len(want) {
		t.Errorf("the demo's brands: %+v", brands)
	}
	for _, b := range brands {
		w := want[b.Name]
		got := slices.Sorted(slices.Values(b.TenantIDs))
		if slices.Contains(w, "") || !slices.Equal(got, slices.Sorted(slices.Values(w))) {
			t.Errorf("brand %s has tenants %v, want %v", b.Name, b.TenantIDs, w)
		}
	}

	// The demo's access reviews: seed 1's reviews approve five directory
	// role holders without MFA, one of them in Fabrikam Foods' Global
	// Administrator review; Contoso Retail's finance review, in progress
	// ten days after its end, is the one overdue.
	var findings struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
			Review   string `json:"review_name"`
		} `json:"items"`
		Total int `json:"total"`
	}
	h.get("/api/v1/identity/access-review-findings?limit=100", admin).json(t, &findings)
	adminReview := 0
	for _, it := range findings.Items {
		if it.Review == "Global Administrator access review" {
			adminReview++
			if it.TenantID != ids["Fabrikam Foods"] {
				t.Errorf("a finding of the Global Administrator review in tenant %s", it.TenantID)
			}
		}
	}
	if findings.Total != 5 || len(findings.Items) != 5 || adminReview != 1 {
		t.Errorf("the demo's access review findings: %+v", findings)
	}
	var overdue struct {
		Items []struct {
			TenantID string `json:"tenant_id"`
			Name     string `json:"name"`
			EndsAt   string `json:"ends_at"`
			Overdue  bool   `json:"overdue"`
		} `json:"items"`
		Total int `json:"total"`
	}
	h.get("/api/v1/identity/access-reviews?overdue=true", admin).json(t, &overdue)
	wantEnd := time.Now().UTC().AddDate(0, 0, -10).Format(time.DateOnly)
	if overdue.Total != 1 || len(overdue.Items) != 1 || overdue.Items[0].TenantID != ids["Contoso Retail"] ||
		overdue.Items[0].Name != "Finance application owners review" || !overdue.Items[0].Overdue || !strings.HasPrefix(overdue.Items[0].EndsAt, wantEnd) {
		t.Errorf("the demo's overdue access reviews: %+v, want Contoso Retail's finance review ended %s", overdue, wantEnd)
	}
	if r := h.do(http.MethodGet, "/identity", admin, nil, "HX-Request", "true"); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), "Global Administrator access review") || !strings.Contains(string(r.body), "1 of 1 overdue access reviews") ||
		!strings.Contains(string(r.body), "Finance application owners review") {
		t.Errorf("the demo's identity page: %d %s", r.status, r.body)
	}

	maturity := func() map[string]string {
		var p partnerProgramme
		h.get("/api/v1/partner/programme", admin).json(t, &p)
		out := map[string]string{}
		for _, it := range p.Items {
			out[it.TenantName] = fmt.Sprintf("%.2f met %d gaps %d", it.Maturity, it.Met, it.Gaps)
		}
		return out
	}
	atStartup := maturity()
	var acc struct {
		JobIDs []string `json:"job_ids"`
	}
	if r := h.do(http.MethodPost, "/api/v1/partner/sync", admin, nil); r.status != http.StatusAccepted {
		t.Fatalf("partner sync: %d %s", r.status, r.body)
	} else {
		r.json(t, &acc)
	}
	f := &fixture{h: h, admin: admin}
	for _, id := range acc.JobIDs {
		if r := f.waitRun(t, id); r.Status != "completed" {
			t.Fatalf("manual partner sync: %+v", r)
		}
	}
	again := maturity()
	if len(atStartup) == 0 || fmt.Sprint(atStartup) != fmt.Sprint(again) {
		t.Errorf("partner maturity after start-up %v, after a manual re-sync %v", atStartup, again)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
