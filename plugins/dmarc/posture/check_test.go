package posture_test

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/mtasts"
	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

func startDemoDNS(t testing.TB) *cloud.Resolver {
	t.Helper()
	r, _ := startDemo(t)
	return r
}

// startDemo serves the demo world's DNS and MTA-STS policy hosts from the
// simulated cloud and returns the real clients that reach them.
func startDemo(t testing.TB) (*cloud.Resolver, *cloud.PolicyClient) {
	t.Helper()
	w := world.Demo(1, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	s, err := simdns.Start(w, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	sim, _ := simtest.Start(t, w, cloudsim.Options{}, simtest.Client("app", "secret"))
	hosts, err := mtasts.Start(t.Context(), sim, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hosts.Close)
	policies, err := cloud.NewPolicyClient(hosts.Addr(), sim.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cloud.NewResolver(s.Addr()), policies
}

// deliveryCodes are the codes of a check's MTA-STS, TLS-RPT, BIMI and
// DNSSEC findings, sorted.
func deliveryCodes(res posture.Result) []string {
	var out []string
	for _, f := range res.Findings {
		for _, prefix := range []string{"mta_sts_", "tls_rpt_", "bimi_", "dnssec_"} {
			if strings.HasPrefix(f.Code, prefix) {
				out = append(out, f.Code)
				if f.Fix == "" {
					out = append(out, f.Code+" without a fix")
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestCheckDemoWorld checks the demo world's domains, strong, weak and
// missing, through the real resolver, the simulated DNS and the simulated
// MTA-STS policy hosts: each domain's MTA-STS, TLS-RPT, BIMI and DNSSEC
// findings are exactly the expected ones, each with a fix.
func TestCheckDemoWorld(t *testing.T) {
	r, policies := startDemo(t)
	for _, tc := range []struct {
		domain    string
		score     int
		grade     string
		policy    string
		want, not []string
		delivery  []string
	}{
		// Everything right: MTA-STS enforced, TLS-RPT, BIMI, DNSSEC.
		{"contoso-retail.example", 100, "A", "reject", nil,
			[]string{"dmarc_missing", "spf_missing", "dkim_missing", "dmarc_no_rua", "spf_over_limit", "mx_missing"}, nil},
		// MTA-STS in testing (3 of 6), no TLS-RPT, no BIMI.
		{"northwind-travel.example", 92, "A", "reject", nil, []string{"dkim_missing", "spf_softfail_all"},
			[]string{"bimi_missing", "mta_sts_testing", "tls_rpt_missing"}},
		// quarantine at pct=50: 10 + 15/2; the MTA-STS policy is not
		// served; the zone is not signed.
		{"fabrikam-foods.example", 70, "C", "quarantine", []string{"dmarc_policy_quarantine", "dmarc_pct_partial"}, []string{"dkim_missing"},
			[]string{"dnssec_unsigned", "mta_sts_policy_unavailable"}},
		// A null MX earns MTA-STS's and TLS-RPT's points without them.
		{"fabrikam-foods-dev.example", 78, "B", "reject", []string{"dkim_missing", "mx_null"}, nil, []string{"bimi_missing"}},
		// BIMI with DMARC at p=none.
		{"contoso-shop.example", 54, "D", "none", []string{"dmarc_policy_none", "spf_softfail_all", "dkim_key_1024"}, []string{"dkim_missing"},
			[]string{"bimi_dmarc_not_enforced", "mta_sts_missing"}},
		// An enforced policy that names an MX host the domain no longer
		// has; TLS reports to a plain http address.
		{"northwind-holidays.example", 25, "F", "", []string{"dmarc_missing", "spf_over_limit", "spf_softfail_all"}, []string{"dkim_missing"},
			[]string{"dnssec_unsigned", "mta_sts_mx_mismatch", "tls_rpt_rua_invalid"}},
		// No MX: nothing to protect in transit.
		{"contoso-retail-dev.example", 0, "F", "", []string{"dmarc_missing", "spf_missing", "dkim_missing", "mx_missing"}, nil,
			[]string{"dnssec_unsigned"}},
	} {
		t.Run(tc.domain, func(t *testing.T) {
			res := posture.Check(t.Context(), r, policies, tc.domain, nil)
			if res.Incomplete || res.DMARC.Error != "" || res.SPF.Error != "" || res.MX.Error != "" {
				t.Fatalf("lookups failed: %+v", res)
			}
			if res.Domain != tc.domain || res.Score != tc.score || res.Grade != tc.grade || res.DMARC.Policy() != tc.policy {
				t.Errorf("score %d, grade %s, policy %q; findings %v", res.Score, res.Grade, res.DMARC.Policy(), res.Findings)
			}
			hasCodes(t, tc.domain, res.Findings, tc.want, tc.not)
			if got := deliveryCodes(res); !slices.Equal(got, tc.delivery) {
				t.Errorf("MTA-STS, TLS-RPT, BIMI and DNSSEC findings %q, want %q", got, tc.delivery)
			}
			if len(res.DKIM) != 2 || res.DKIM[0].Selector != "selector1" || res.DKIM[1].Selector != "selector2" {
				t.Errorf("DKIM %+v", res.DKIM)
			}
			for i := 1; i < len(res.Findings); i++ {
				if posture.SeverityRank(res.Findings[i-1].Severity) > posture.SeverityRank(res.Findings[i].Severity) {
					t.Errorf("findings not most severe first: %v", res.Findings)
				}
			}
		})
	}

	res := posture.Check(t.Context(), r, policies, "Contoso-Retail.Example.", []string{"selector1", "selector1", "s2048"})
	if res.Domain != "contoso-retail.example" || len(res.DKIM) != 2 {
		t.Fatalf("domain %q, DKIM %+v", res.Domain, res.DKIM)
	}
	if d := res.DKIM[0]; d.CNAME != "selector1-contoso-retail-example._domainkey.contoso-retail.example" || d.Key == nil || d.Key.Bits != 2048 || d.Key.Selector != "selector1" {
		t.Errorf("delegated selector %+v, key %+v", d, d.Key)
	}
	if d := res.DKIM[1]; d.Key == nil || d.Key.Present || d.Error != "" {
		t.Errorf("absent selector %+v", d)
	}
	hasCodes(t, "absent selector", res.Findings, []string{"dkim_selector_missing"}, []string{"dkim_missing"})
	if !res.MX.Present || len(res.MX.Hosts) != 1 || res.MX.Hosts[0] != "contoso-retail-example.mail.protection.outlook.com" {
		t.Errorf("MX %+v", res.MX)
	}
	if m := res.MTASTS; !m.Enforced() || m.Record.ID != "20260301T000000" || m.Policy.MaxAge != 1209600 ||
		!slices.Equal(m.Policy.MX, []string{"*.mail.protection.outlook.com"}) || len(m.UnmatchedMX) != 0 {
		t.Errorf("MTA-STS %+v, policy %+v", m, m.Policy)
	}
	if !res.DNSSEC.Validated || !res.BIMI.Effective || res.TLSRPT.Record == nil ||
		!slices.Equal(res.TLSRPT.Record.RUA, []string{"mailto:tls-reports@contoso-retail.example"}) {
		t.Errorf("DNSSEC %+v, BIMI %+v, TLS-RPT %+v", res.DNSSEC, res.BIMI, res.TLSRPT)
	}
	if ev := res.SPF.Evaluation; ev.Lookups != 2 || !slices.Equal(ev.Includes, []string{"_spf.contoso-retail.example"}) || ev.All != "-" {
		t.Errorf("SPF evaluation %+v", ev)
	}

	// The plugin stores results as JSON: they read back the same.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back posture.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Score != res.Score || back.DKIM[0].Key.Bits != 2048 || back.DMARC.Record.Policy != "reject" {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	for _, field := range []string{`"checked_at"`, `"subdomain_policy"`, `"void_lookups"`, `"key_type"`, `"org_domain"`, `"mta_sts"`, `"max_age"`, `"tls_rpt"`, `"bimi"`, `"dnssec"`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON has no %s: %s", field, b)
		}
	}
}

// TestCheckDNSFailure: a server answering SERVFAIL or REFUSED, or none
// answering in time, leaves every part unknown, reported as DNS failures
// and never as missing records.
func TestCheckDNSFailure(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	silent := cloud.NewResolver(pc.LocalAddr().String())
	for name, r := range map[string]*cloud.Resolver{
		"SERVFAIL": startFailingDNS(t, dns.RcodeServerFailure),
		"REFUSED":  startFailingDNS(t, dns.RcodeRefused),
		"timeout":  silent,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			res := posture.Check(ctx, r, nil, "example.com", nil)
			if !res.Incomplete || res.DMARC.Error == "" || res.SPF.Error == "" || res.MX.Error == "" || res.DKIM[0].Error == "" || res.DKIM[1].Error == "" ||
				res.MTASTS.Error == "" || res.TLSRPT.Error == "" || res.BIMI.Error == "" || res.DNSSEC.Error == "" {
				t.Fatalf("errors not reported: %+v", res)
			}
			if res.DMARC.Present || res.SPF.Present || res.DKIM[0].Key != nil || res.Score != 0 {
				t.Errorf("result %+v", res)
			}
			hasCodes(t, name, res.Findings,
				[]string{"dmarc_dns_failure", "spf_dns_failure", "dkim_dns_failure", "mx_dns_failure", "mta_sts_dns_failure", "tls_rpt_dns_failure", "bimi_dns_failure", "dnssec_dns_failure"},
				[]string{"dmarc_missing", "spf_missing", "dkim_missing", "mx_missing", "domain_not_found", "mta_sts_missing", "tls_rpt_missing", "bimi_missing", "dnssec_unsigned"})
		})
	}
}

func TestCheckRecords(t *testing.T) {
	k := keys()
	r := startDNS(t, []string{"example.com", "example.net"}, []record{
		{"_dmarc.multi.example.com", "TXT", "v=DMARC1; p=reject"},
		{"_dmarc.multi.example.com", "TXT", "v=DMARC1; p=none"},
		{"multi.example.com", "TXT", "v=spf1 -all"},
		{"multi.example.com", "TXT", "v=spf1 +all"},
		{"selector1._domainkey.multi.example.com", "TXT", "v=DKIM1; p=" + k["rsa2048"]},
		{"selector1._domainkey.multi.example.com", "TXT", "v=DKIM1; p=" + k["rsa1024"]},
		{"_dmarc.example.com", "TXT", "v=DMARC1; p=reject; sp=quarantine; rua=mailto:d@example.com"},
		{"_dmarc.reports.example.com", "TXT", "v=DMARC1; p=reject; rua=mailto:d@example.net,mailto:e@reports.example.com; ruf=mailto:f@unauthorized.example.net"},
		{"reports.example.com._report._dmarc.example.net", "TXT", "v=DMARC1"},
		{"selector2._domainkey.weak.example.net", "TXT", "v=DKIM1; p=" + k["rsa512"]},
		{"selector1._domainkey.weak.example.net", "TXT", "v=DKIM1; p="},
		{"weak.example.net", "MX", "10 mail.example.com"},
		{"weak.example.net", "TXT", "v=spf1 +all"},
		{"ed.example.net", "TXT", "v=spf1 redirect=_spf.example.net"},
		{"_spf.example.net", "TXT", "v=spf1 -all"},
		{"k1._domainkey.ed.example.net", "TXT", "v=DKIM1; k=ed25519; p=" + k["ed25519"]},
		{"mixed.example.net", "MX", "0 ."},
		{"mixed.example.net", "MX", "10 mail.example.net"},
	})

	t.Run("multiple records", func(t *testing.T) {
		res := posture.Check(t.Context(), r, nil, "multi.example.com", []string{"selector1"})
		if !res.DMARC.Present || res.DMARC.Record != nil || !res.SPF.Present || res.SPF.Record != nil || res.Incomplete {
			t.Errorf("result %+v", res)
		}
		hasCodes(t, "multi", res.Findings, []string{"dmarc_multiple_records", "spf_multiple_records", "dkim_multiple_records", "dkim_missing"}, []string{"dmarc_dns_failure"})
		if res.Score != 0 {
			t.Errorf("score %d", res.Score)
		}
	})
	t.Run("organizational domain's policy", func(t *testing.T) {
		res := posture.Check(t.Context(), r, nil, "shop.example.com", nil)
		if res.DMARC.Present || res.DMARC.OrgDomain != "example.com" || res.DMARC.Policy() != "quarantine" {
			t.Errorf("DMARC %+v", res.DMARC)
		}
		hasCodes(t, "inherited", res.Findings, []string{"dmarc_inherited", "dmarc_policy_quarantine", "spf_missing", "domain_not_found"}, []string{"dmarc_missing", "dmarc_subdomain_policy_weaker"})
		// quarantine 25 + rua 5.
		if res.Score != 30 {
			t.Errorf("score %d", res.Score)
		}
	})
	t.Run("report destinations", func(t *testing.T) {
		res := posture.Check(t.Context(), r, nil, "reports.example.com", nil)
		var unauthorized []string
		for _, p := range res.Findings {
			if p.Code == "dmarc_report_destination_unauthorized" {
				unauthorized = append(unauthorized, p.Message)
			}
		}
		if len(unauthorized) != 1 || !strings.Contains(unauthorized[0], "unauthorized.example.net") {
			t.Errorf("unauthorized destinations %q", unauthorized)
		}
	})
	t.Run("weak keys and +all", func(t *testing.T) {
		res := posture.Check(t.Context(), r, nil, "weak.example.net", nil)
		hasCodes(t, "weak", res.Findings, []string{"dkim_revoked", "dkim_key_too_short", "dkim_missing", "spf_pass_all", "dmarc_missing"}, nil)
		if !res.DKIM[0].Key.Revoked || res.DKIM[1].Key.Bits != 512 || res.Score != 5 || res.Findings[0].Severity != posture.SeverityCritical {
			t.Errorf("score %d, DKIM %+v %+v, findings %v", res.Score, res.DKIM[0].Key, res.DKIM[1].Key, res.Findings)
		}
	})
	t.Run("null MX among others", func(t *testing.T) {
		res := posture.Check(t.Context(), r, nil, "mixed.example.net", nil)
		if !res.MX.Present || res.MX.Null || !slices.Equal(res.MX.Hosts, []string{"mail.example.net"}) {
			t.Errorf("MX %+v", res.MX)
		}
		hasCodes(t, "mixed", res.Findings, []string{"mx_null_mixed"}, nil)
	})
	t.Run("Ed25519 and a redirect", func(t *testing.T) {
		res := posture.Check(t.Context(), r, nil, "ed.example.net", []string{"k1"})
		// SPF -all through the redirect 20, DKIM 20, no MX record.
		if res.Score != 40 || res.SPF.Evaluation.All != "-" || res.DKIM[0].Key.KeyType != "ed25519" {
			t.Errorf("score %d: %+v", res.Score, res)
		}
	})
}

// TestSPFPartsScored: the SPF part scores its documented points.
func TestSPFPartsScored(t *testing.T) {
	var rs []record
	for _, q := range []string{"-", "~", "?", "+"} {
		rs = append(rs, record{"q" + map[string]string{"-": "fail", "~": "soft", "?": "neutral", "+": "pass"}[q] + ".example.com", "TXT", "v=spf1 " + q + "all"})
	}
	rs = append(rs, record{"noall.example.com", "TXT", "v=spf1 ip4:192.0.2.1"}, record{"bad.example.com", "TXT", "v=spf1 ip4:192.0.2.300 -all"})
	r := startDNS(t, []string{"example.com"}, rs)
	for domain, want := range map[string]int{"qfail": 20, "qsoft": 15, "qneutral": 5, "qpass": 0, "noall": 5, "bad": 0} {
		if got := posture.Check(t.Context(), r, nil, domain+".example.com", nil).Score; got != want {
			t.Errorf("%s: score %d, want %d", domain, got, want)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	r := startDemoDNS(b)
	ctx := context.Background()
	for b.Loop() {
		res := posture.Check(ctx, r, nil, "northwind-holidays.example", nil)
		if res.Incomplete {
			b.Fatal(res.Findings)
		}
	}
}
