package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// demoDeliveryFindings are the MTA-STS, TLS-RPT, BIMI and DNSSEC findings
// of each demo world domain, as the demo world publishes them: one with
// everything right, MTA-STS in testing without TLS-RPT, a policy not
// served and an unsigned zone, BIMI beside DMARC at p=none, an enforced
// policy naming a stale MX host, a null MX and a domain without MX.
var demoDeliveryFindings = map[string][]string{
	"contoso-retail.example":     nil,
	"northwind-travel.example":   {"bimi_missing", "mta_sts_testing", "tls_rpt_missing"},
	"fabrikam-foods.example":     {"dnssec_unsigned", "mta_sts_policy_unavailable"},
	"fabrikam-foods-dev.example": {"bimi_missing"},
	"contoso-shop.example":       {"bimi_dmarc_not_enforced", "mta_sts_missing"},
	"northwind-holidays.example": {"dnssec_unsigned", "mta_sts_mx_mismatch", "tls_rpt_rua_invalid"},
	"contoso-retail-dev.example": {"dnssec_unsigned"},
}

// TestDMARCMailTransportThroughTheHost: on the demo world, the dmarc
// plugin's start-up sync reads each domain's MTA-STS record and fetches
// its policy from the simulated policy hosts over verified TLS, reads
// TLS-RPT and BIMI, and the AD bit of the simulated resolver; each
// domain's findings of those are exactly the expected ones, each with a
// fix, on the API and in the DMARC page's domain detail.
func TestDMARCMailTransportThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testDMARCMailTransport(t, dialect) })
	}
}

func testDMARCMailTransport(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: dmarcPlugins(""), env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "dmarc")

	var l dmarcDomains
	h.get("/api/v1/dmarc/domains?limit=500", admin).json(t, &l)
	byName := l.byName()
	for domain, want := range demoDeliveryFindings {
		d, ok := byName[domain]
		if !ok {
			t.Errorf("%s is not watched: %s", domain, h.get("/api/v1/dmarc/domains?limit=500", admin).body)
			continue
		}
		var detail struct {
			Findings []struct {
				Code     string `json:"code"`
				Severity string `json:"severity"`
				Fix      string `json:"fix"`
			} `json:"findings"`
			Posture struct {
				Score  int `json:"score"`
				MTASTS struct {
					Present bool `json:"present"`
					Policy  *struct {
						Mode string   `json:"mode"`
						MX   []string `json:"mx"`
					} `json:"policy"`
				} `json:"mta_sts"`
				DNSSEC struct {
					Validated bool `json:"validated"`
				} `json:"dnssec"`
				BIMI struct {
					Effective bool `json:"effective"`
				} `json:"bimi"`
			} `json:"posture"`
		}
		h.get("/api/v1/dmarc/domains/"+d.ID, admin).json(t, &detail)
		var got []string
		for _, f := range detail.Findings {
			for _, prefix := range []string{"mta_sts_", "tls_rpt_", "bimi_", "dnssec_"} {
				if strings.HasPrefix(f.Code, prefix) {
					got = append(got, f.Code)
					if f.Fix == "" {
						t.Errorf("%s: %s has no fix", domain, f.Code)
					}
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: MTA-STS, TLS-RPT, BIMI and DNSSEC findings %q, want %q", domain, got, want)
		}
		if domain == "contoso-retail.example" {
			if p := detail.Posture.MTASTS.Policy; p == nil || p.Mode != "enforce" || !detail.Posture.DNSSEC.Validated || !detail.Posture.BIMI.Effective ||
				detail.Posture.Score != 100 || d.Grade == nil || *d.Grade != "A" {
				t.Errorf("%s: posture %+v, policy %+v", domain, detail.Posture, p)
			}
			page := h.do(http.MethodGet, "/partials/dmarc-domains/"+d.ID, admin, nil, "HX-Request", "true")
			for _, w := range []string{"MTA-STS", "mode enforce", "*.mail.protection.outlook.com", "DNSSEC", "validated", "BIMI", "shown"} {
				if page.status != http.StatusOK || !strings.Contains(string(page.body), w) {
					t.Errorf("the domain detail lacks %q: %d %s", w, page.status, page.body)
				}
			}
		}
		if domain == "northwind-holidays.example" {
			page := h.do(http.MethodGet, "/partials/dmarc-domains/"+d.ID, admin, nil, "HX-Request", "true")
			for _, w := range []string{"mta sts mx mismatch", "Add an mx line for each MX host"} {
				if page.status != http.StatusOK || !strings.Contains(string(page.body), w) {
					t.Errorf("the domain detail lacks %q: %d %s", w, page.status, page.body)
				}
			}
		}
	}
}
