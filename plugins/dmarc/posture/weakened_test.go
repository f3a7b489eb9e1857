package posture_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// TestWeakened compares a strong domain's check with checks of domains
// that differ from it in one way each, all through the simulated DNS.
func TestWeakened(t *testing.T) {
	k := keys()
	strong := map[string]string{
		"spf":   "v=spf1 ip4:192.0.2.0/24 -all",
		"dmarc": "v=DMARC1; p=reject; rua=mailto:d@example.com",
		"sel1":  "v=DKIM1; p=" + k["rsa2048"],
		"sel2":  "v=DKIM1; p=" + k["rsa2048"],
	}
	variants := map[string]map[string]string{
		"strong":       {},
		"quarantine":   {"dmarc": "v=DMARC1; p=quarantine; rua=mailto:d@example.com"},
		"none":         {"dmarc": "v=DMARC1; p=none; rua=mailto:d@example.com"},
		"half":         {"dmarc": "v=DMARC1; p=reject; pct=50; rua=mailto:d@example.com"},
		"sp-none":      {"dmarc": "v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com"},
		"no-rua":       {"dmarc": "v=DMARC1; p=reject"},
		"no-dmarc":     {"dmarc": ""},
		"dkim-gone":    {"sel2": ""},
		"dkim-revoked": {"sel1": "v=DKIM1; p="},
		"dkim-short":   {"sel1": "v=DKIM1; p=" + k["rsa1024"]},
		"softfail":     {"spf": "v=spf1 ip4:192.0.2.0/24 ~all"},
		"pass-all":     {"spf": "v=spf1 +all"},
		"no-spf":       {"spf": ""},
		"overlimit":    {"spf": "v=spf1 include:o1.example.com include:o2.example.com include:o3.example.com -all"},
		"loop":         {"spf": "v=spf1 include:loop1.example.com -all"},
		"bad-syntax":   {"spf": "v=spf1 ip4:192.0.2.300 -all"},
	}
	var rs []record
	for name, v := range variants {
		domain := name + ".example.com"
		for part, value := range strong {
			if over, ok := v[part]; ok {
				value = over
			}
			if value == "" {
				continue
			}
			at := map[string]string{"spf": domain, "dmarc": "_dmarc." + domain, "sel1": "selector1._domainkey." + domain, "sel2": "selector2._domainkey." + domain}[part]
			rs = append(rs, record{at, "TXT", value})
		}
	}
	// The organizational domain's DMARC record would otherwise apply to a
	// variant without one of its own.
	rs = append(rs, spfWorld()...)
	r := startDNS(t, []string{"example.com"}, rs)
	check := func(name string) posture.Result {
		return posture.Check(t.Context(), r, nil, name+".example.com", nil)
	}
	strongResult := check("strong")

	for _, tc := range []struct {
		prev, cur string
		want      []string
	}{
		{"strong", "strong", nil},
		{"strong", "quarantine", []string{"dmarc_policy_relaxed"}},
		{"strong", "none", []string{"dmarc_policy_relaxed"}},
		{"quarantine", "none", []string{"dmarc_policy_relaxed"}},
		{"none", "strong", nil},
		{"strong", "half", []string{"dmarc_pct_lowered"}},
		{"strong", "sp-none", []string{"dmarc_subdomain_policy_relaxed"}},
		{"strong", "no-rua", []string{"dmarc_reporting_removed"}},
		{"strong", "no-dmarc", []string{"dmarc_removed"}},
		{"no-dmarc", "strong", nil},
		{"strong", "dkim-gone", []string{"dkim_key_removed"}},
		{"strong", "dkim-revoked", []string{"dkim_key_removed"}},
		{"strong", "dkim-short", []string{"dkim_key_shortened"}},
		{"dkim-short", "strong", nil},
		{"strong", "softfail", []string{"spf_all_relaxed"}},
		{"softfail", "pass-all", []string{"spf_all_relaxed"}},
		{"pass-all", "softfail", nil},
		{"strong", "no-spf", []string{"spf_removed"}},
		{"strong", "overlimit", []string{"spf_over_limit"}},
		{"overlimit", "overlimit", nil},
		{"strong", "loop", []string{"spf_loop"}},
		{"strong", "bad-syntax", []string{"spf_invalid"}},
		{"bad-syntax", "overlimit", nil},
	} {
		t.Run(tc.prev+" to "+tc.cur, func(t *testing.T) {
			changes := posture.Weakened(check(tc.prev), check(tc.cur))
			var got []string
			for _, c := range changes {
				got = append(got, c.Code)
				if c.Message == "" || posture.SeverityRank(c.Severity) > 4 {
					t.Errorf("change %+v", c)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("changes %v, want %v: %+v", got, tc.want, changes)
			}
		})
	}

	t.Run("multiple DMARC records", func(t *testing.T) {
		cur := strongResult
		cur.DMARC = posture.DMARCResult{Present: true}
		if got := posture.Weakened(strongResult, cur); len(got) != 1 || got[0].Code != "dmarc_policy_relaxed" || got[0].Severity != posture.SeverityCritical {
			t.Errorf("changes %+v", got)
		}
	})
	t.Run("DNS failure is no weakening", func(t *testing.T) {
		failed := posture.Check(t.Context(), startFailingDNS(t, 2), nil, "strong.example.com", nil)
		if got := posture.Weakened(strongResult, failed); len(got) != 0 {
			t.Errorf("changes %+v", got)
		}
		// Nor is recovering from one.
		if got := posture.Weakened(failed, strongResult); len(got) != 0 {
			t.Errorf("changes %+v", got)
		}
	})
	t.Run("most severe first", func(t *testing.T) {
		cur := check("no-rua")
		cur.SPF = check("pass-all").SPF
		got := posture.Weakened(strongResult, cur)
		if len(got) != 2 || got[0].Code != "spf_all_relaxed" || got[0].Severity != posture.SeverityCritical || got[1].Code != "dmarc_reporting_removed" {
			t.Errorf("changes %+v", got)
		}
	})
}

// TestWeakenedDelivery: MTA-STS removed or no longer enforced, TLS-RPT
// removed, DNSSEC lost and BIMI no longer shown are weakenings; a check
// stored before these parts were checked, or one that failed to look
// them up, yields none.
func TestWeakenedDelivery(t *testing.T) {
	enforced := &posture.MTASTSPolicy{Version: "STSv1", Mode: "enforce", MX: []string{"*.example.net"}, MaxAge: 604800}
	strong := posture.Result{
		MTASTS: posture.MTASTSResult{Present: true, Record: &posture.MTASTSRecord{ID: "1"}, Policy: enforced},
		TLSRPT: posture.TLSRPTResult{Present: true, Record: &posture.TLSRPTRecord{RUA: []string{"mailto:t@example.com"}}},
		DNSSEC: posture.DNSSECResult{Validated: true},
		BIMI:   posture.BIMIResult{Present: true, Record: &posture.BIMIRecord{Logo: "https://example.com/l.svg"}, Effective: true},
	}
	testingMode := strong
	testingMode.MTASTS.Policy = &posture.MTASTSPolicy{Version: "STSv1", Mode: "testing", MX: enforced.MX, MaxAge: 604800}
	unfetched := strong
	unfetched.MTASTS.Policy, unfetched.MTASTS.PolicyError = nil, "HTTP 404"
	stale := strong
	stale.MTASTS.UnmatchedMX = []string{"mx.example.org"}
	failed := posture.Result{MTASTS: posture.MTASTSResult{Error: "timeout"}, TLSRPT: posture.TLSRPTResult{Error: "timeout"},
		DNSSEC: posture.DNSSECResult{Error: "timeout"}, BIMI: posture.BIMIResult{Error: "timeout"}}
	for _, tc := range []struct {
		name      string
		prev, cur posture.Result
		want      []string
		inMessage string
	}{
		{"all removed", strong, posture.Result{}, []string{"mta_sts_removed", "dnssec_lost", "tls_rpt_removed", "bimi_lost"}, "was enforced"},
		{"testing", strong, testingMode, []string{"mta_sts_weakened"}, "mode is now testing"},
		{"not fetched", strong, unfetched, []string{"mta_sts_weakened"}, "can no longer be fetched"},
		{"stale MX", strong, stale, []string{"mta_sts_weakened"}, "mx.example.org"},
		{"unchanged", strong, strong, nil, ""},
		{"stored before", posture.Result{}, posture.Result{}, nil, ""},
		{"DNS failed", strong, failed, nil, ""},
	} {
		got := posture.Weakened(tc.prev, tc.cur)
		var codes []string
		for _, c := range got {
			codes = append(codes, c.Code)
		}
		if !slices.Equal(codes, tc.want) || len(got) > 0 && !strings.Contains(got[0].Message, tc.inMessage) {
			t.Errorf("%s: %+v, want %v", tc.name, got, tc.want)
		}
	}
}
