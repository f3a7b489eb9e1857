package posture_test

import (
	"slices"
	"testing"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// codes are the problems' codes, in order.
func codes(ps []posture.Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

// hasCodes fails the test when a wanted code is missing or an unwanted
// one present.
func hasCodes(t *testing.T, what string, ps []posture.Problem, want, unwanted []string) {
	t.Helper()
	got := codes(ps)
	for _, c := range want {
		if !slices.Contains(got, c) {
			t.Errorf("%s: no %s among %v", what, c, got)
		}
	}
	for _, c := range unwanted {
		if slices.Contains(got, c) {
			t.Errorf("%s: unexpected %s among %v", what, c, got)
		}
	}
}

func TestParseDMARC(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		policy, sp   string
		pct          int
		rua, ruf     []string
		adkim, aspf  string
		want, not    []string
	}{
		{
			name:   "strong",
			record: "v=DMARC1; p=reject; rua=mailto:dmarc@example.com; ruf=mailto:f@example.com!10m; adkim=s; aspf=s; fo=1:d; ri=3600",
			policy: "reject", sp: "reject", pct: 100,
			rua: []string{"mailto:dmarc@example.com"}, ruf: []string{"mailto:f@example.com!10m"}, adkim: "s", aspf: "s",
			not: []string{"dmarc_policy_none", "dmarc_no_rua", "dmarc_pct_partial", "dmarc_syntax", "dmarc_unknown_tag"},
		},
		{
			name:   "spaces, case and a trailing separator",
			record: "v = DMARC1 ;  P = Reject ; SP=quarantine; pct = 100 ; RUA = mailto:a@example.com , mailto:b@example.net!5k ;",
			policy: "reject", sp: "quarantine", pct: 100, adkim: "r", aspf: "r",
			rua:  []string{"mailto:a@example.com", "mailto:b@example.net!5k"},
			want: []string{"dmarc_subdomain_policy_weaker"}, not: []string{"dmarc_syntax", "dmarc_no_rua"},
		},
		{
			name: "monitoring only", record: "v=DMARC1; p=none; rua=mailto:d@example.com",
			policy: "none", sp: "none", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:d@example.com"},
			want: []string{"dmarc_policy_none"}, not: []string{"dmarc_pct_partial"},
		},
		{
			name: "partial quarantine without reports", record: "v=DMARC1; p=quarantine; pct=25",
			policy: "quarantine", sp: "quarantine", pct: 25, adkim: "r", aspf: "r",
			want: []string{"dmarc_policy_quarantine", "dmarc_pct_partial", "dmarc_no_rua"},
		},
		{
			name: "subdomains weaker", record: "v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com",
			policy: "reject", sp: "none", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:d@example.com"},
			want: []string{"dmarc_subdomain_policy_weaker"},
		},
		{
			name: "missing p with a valid rua falls back to none", record: "v=DMARC1; rua=mailto:d@example.com",
			policy: "none", sp: "none", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:d@example.com"},
			want: []string{"dmarc_policy_missing", "dmarc_policy_none"},
		},
		{
			name: "missing p without rua", record: "v=DMARC1; sp=reject",
			policy: "", sp: "reject", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_policy_missing"}, not: []string{"dmarc_no_rua", "dmarc_policy_none"},
		},
		{
			name: "invalid p", record: "v=DMARC1; p=block",
			policy: "", sp: "", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_policy_invalid"},
		},
		{
			name: "bad pct", record: "v=DMARC1; p=reject; pct=150; rua=mailto:d@example.com",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:d@example.com"},
			want: []string{"dmarc_pct_invalid"},
		},
		{
			name: "pct not a number", record: "v=DMARC1; p=reject; pct=half",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_pct_invalid"},
		},
		{
			name: "v not first", record: "p=reject; v=DMARC1",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_version"},
		},
		{
			name: "wrong version", record: "v=DMARC2; p=reject",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_version"},
		},
		{
			name: "duplicate tag keeps the first", record: "v=DMARC1; p=reject; p=none",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_duplicate_tag"},
		},
		{
			name: "tag without a value", record: "v=DMARC1; p=reject; rua",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_syntax", "dmarc_no_rua"},
		},
		{
			name: "p not second", record: "v=DMARC1; rua=mailto:d@example.com; p=reject",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:d@example.com"},
			want: []string{"dmarc_policy_not_second"},
		},
		{
			name:   "bad report URIs and options",
			record: "v=DMARC1; p=reject; rua=https://example.com/r, mailto:not an address, mailto:d@example.com!big, mailto:ok@example.com; adkim=x; fo=2; rf=iodef; ri=soon",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:ok@example.com"},
			want: []string{"dmarc_report_uri_invalid", "dmarc_alignment_invalid", "dmarc_fo_invalid", "dmarc_rf_invalid", "dmarc_ri_invalid"},
			not:  []string{"dmarc_no_rua"},
		},
		{
			name: "unknown tag", record: "v=DMARC1; p=reject; rua=mailto:d@example.com; np=reject",
			policy: "reject", sp: "reject", pct: 100, adkim: "r", aspf: "r", rua: []string{"mailto:d@example.com"},
			want: []string{"dmarc_unknown_tag"},
		},
		{
			name: "empty", record: "",
			pct: 100, adkim: "r", aspf: "r",
			want: []string{"dmarc_version", "dmarc_policy_missing"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, ps := posture.ParseDMARC(tc.record)
			if rec.Raw != tc.record || rec.Policy != tc.policy || rec.SubdomainPolicy != tc.sp || rec.Percent != tc.pct ||
				rec.ADKIM != tc.adkim || rec.ASPF != tc.aspf || !slices.Equal(rec.RUA, tc.rua) || !slices.Equal(rec.RUF, tc.ruf) {
				t.Errorf("record %+v", rec)
			}
			hasCodes(t, tc.record, ps, tc.want, tc.not)
			for _, p := range ps {
				if p.Message == "" || posture.SeverityRank(p.Severity) > 4 {
					t.Errorf("problem %+v", p)
				}
			}
		})
	}
}

func TestParseDMARCOptions(t *testing.T) {
	rec, ps := posture.ParseDMARC("v=DMARC1; p=reject; rua=mailto:d@example.com; fo=1 : D; rf=AFRF; ri=3600")
	if rec.FailureOptions != "1:d" || rec.ReportFormat != "afrf" || rec.ReportInterval != 3600 || len(ps) != 0 {
		t.Errorf("record %+v, problems %v", rec, ps)
	}
	rec, _ = posture.ParseDMARC("v=DMARC1; p=reject")
	if rec.FailureOptions != "0" || rec.ReportFormat != "afrf" || rec.ReportInterval != 86400 {
		t.Errorf("defaults %+v", rec)
	}
}
