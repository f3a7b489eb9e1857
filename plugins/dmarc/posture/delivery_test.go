package posture_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

func TestParseMTASTSRecord(t *testing.T) {
	for _, tc := range []struct {
		name, record, id string
		codes            []string
	}{
		{"valid", "v=STSv1; id=20160831085700Z;", "20160831085700Z", nil},
		{"no trailing delimiter, spaces", "v=STSv1;id=abc123  ", "abc123", nil},
		{"extension field", "v=STSv1; id=1; ext=x", "1", nil},
		{"id of 32", "v=STSv1; id=" + strings.Repeat("a", 32), strings.Repeat("a", 32), nil},
		{"id of 33", "v=STSv1; id=" + strings.Repeat("a", 33), "", []string{"mta_sts_record_id"}},
		{"id with a dash", "v=STSv1; id=2016-08-31", "", []string{"mta_sts_record_id"}},
		{"no id", "v=STSv1;", "", []string{"mta_sts_record_id"}},
		{"version not first", "id=1; v=STSv1", "1", []string{"mta_sts_record_version"}},
		{"version in lower case", "v=stsv1; id=1", "1", []string{"mta_sts_record_version"}},
		{"duplicate id", "v=STSv1; id=1; id=2", "1", []string{"mta_sts_record_duplicate_tag"}},
		{"not a pair", "v=STSv1; id=1; junk", "1", []string{"mta_sts_record_syntax"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, ps := posture.ParseMTASTSRecord(tc.record)
			if rec.ID != tc.id || !slices.Equal(codes(ps), tc.codes) || rec.Raw != tc.record {
				t.Errorf("id %q, problems %v; want %q, %v", rec.ID, codes(ps), tc.id, tc.codes)
			}
		})
	}
}

func TestParseMTASTSPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		mode       string
		mx         []string
		maxAge     int64
		codes      []string
	}{
		{"RFC example, CRLF", "version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmx: backupmx.example.com\r\nmax_age: 604800\r\n",
			"enforce", []string{"mail.example.com", "*.example.net", "backupmx.example.com"}, 604800, nil},
		{"LF, no final newline, trailing space", "version: STSv1\nmode: testing\nmx: MX.Example.com. \nmax_age: 86400", "testing", []string{"mx.example.com"}, 86400, nil},
		{"no space after the colon", "version:STSv1\nmode:none\nmax_age:0\n", "none", nil, 0, nil},
		{"mode none needs no mx", "version: STSv1\nmode: none\nmax_age: 86400\n", "none", nil, 86400, nil},
		{"extension key", "version: STSv1\nmode: enforce\nmx: a.example.com\nmax_age: 86400\nfoo: bar\n", "enforce", []string{"a.example.com"}, 86400, nil},
		{"max_age of a year", "version: STSv1\nmode: enforce\nmx: a.example.com\nmax_age: 31557600\n", "enforce", []string{"a.example.com"}, 31557600, nil},
		{"max_age over a year", "version: STSv1\nmode: enforce\nmx: a.example.com\nmax_age: 31557601\n", "enforce", []string{"a.example.com"}, 31557601, []string{"mta_sts_policy_max_age"}},
		{"max_age of 11 digits", "version: STSv1\nmode: enforce\nmx: a.example.com\nmax_age: 10000000000\n", "enforce", []string{"a.example.com"}, 0, []string{"mta_sts_policy_max_age"}},
		{"negative max_age", "version: STSv1\nmode: enforce\nmx: a.example.com\nmax_age: -1\n", "enforce", []string{"a.example.com"}, 0, []string{"mta_sts_policy_max_age"}},
		{"no max_age", "version: STSv1\nmode: enforce\nmx: a.example.com\n", "enforce", []string{"a.example.com"}, 0, []string{"mta_sts_policy_max_age"}},
		{"wrong version", "version: STSv2\nmode: enforce\nmx: a.example.com\nmax_age: 86400\n", "enforce", []string{"a.example.com"}, 86400, []string{"mta_sts_policy_version"}},
		{"unknown mode", "version: STSv1\nmode: Enforce\nmx: a.example.com\nmax_age: 86400\n", "", []string{"a.example.com"}, 86400, []string{"mta_sts_policy_mode"}},
		{"no mode", "version: STSv1\nmx: a.example.com\nmax_age: 86400\n", "", []string{"a.example.com"}, 86400, []string{"mta_sts_policy_mode"}},
		{"enforce without mx", "version: STSv1\nmode: enforce\nmax_age: 86400\n", "enforce", nil, 86400, []string{"mta_sts_policy_no_mx"}},
		{"bad mx patterns", "version: STSv1\nmode: testing\nmx: *.*.example.com\nmx: mail\nmx: a..example.com\nmax_age: 86400\n", "testing",
			[]string{"*.*.example.com", "mail", "a..example.com"}, 86400, []string{"mta_sts_policy_mx", "mta_sts_policy_mx", "mta_sts_policy_mx"}},
		{"repeated mode counts once", "version: STSv1\nmode: testing\nmode: enforce\nmx: a.example.com\nmax_age: 86400\n", "testing", []string{"a.example.com"}, 86400, []string{"mta_sts_policy_duplicate"}},
		{"a line without a colon", "version: STSv1\nmode enforce\nmx: a.example.com\nmax_age: 86400\n", "", []string{"a.example.com"}, 86400, []string{"mta_sts_policy_syntax", "mta_sts_policy_mode"}},
		{"an HTML page", "<html><body>Not found</body></html>", "", nil, 0, []string{"mta_sts_policy_syntax", "mta_sts_policy_version", "mta_sts_policy_mode", "mta_sts_policy_max_age"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, ps := posture.ParseMTASTSPolicy(tc.text)
			if pol.Mode != tc.mode || !slices.Equal(pol.MX, tc.mx) || pol.MaxAge != tc.maxAge || !slices.Equal(codes(ps), tc.codes) {
				t.Errorf("policy %+v, problems %v; want mode %q, mx %v, max_age %d, %v", pol, codes(ps), tc.mode, tc.mx, tc.maxAge, tc.codes)
			}
		})
	}
}

// TestMTASTSMatches follows RFC 8461, 4.1: a wildcard matches one label.
func TestMTASTSMatches(t *testing.T) {
	p := posture.MTASTSPolicy{MX: []string{"mail.example.com", "*.example.net"}}
	for host, want := range map[string]bool{
		"mail.example.com":      true,
		"MAIL.example.com.":     true,
		"mx.example.net":        true,
		"example.net":           false,
		"a.b.example.net":       false,
		"other.example.com":     false,
		"mail.example.com.evil": false,
	} {
		if got := p.Matches(host); got != want {
			t.Errorf("Matches(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestParseTLSRPT(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		rua          []string
		codes        []string
	}{
		{"mailto", "v=TLSRPTv1; rua=mailto:reports@example.com", []string{"mailto:reports@example.com"}, nil},
		{"https and mailto", "v=TLSRPTv1;rua=https://reporting.example.com/v1/tlsrpt, mailto:tls@example.com;", []string{"https://reporting.example.com/v1/tlsrpt", "mailto:tls@example.com"}, nil},
		{"extension", "v=TLSRPTv1; rua=mailto:a@example.com; ext=1", []string{"mailto:a@example.com"}, nil},
		{"no rua", "v=TLSRPTv1;", nil, []string{"tls_rpt_no_rua"}},
		{"empty rua", "v=TLSRPTv1; rua=", nil, []string{"tls_rpt_no_rua"}},
		{"http", "v=TLSRPTv1; rua=http://example.com/r", nil, []string{"tls_rpt_rua_invalid"}},
		{"mailto without an address", "v=TLSRPTv1; rua=mailto:nobody, mailto:a@example.com", []string{"mailto:a@example.com"}, []string{"tls_rpt_rua_invalid"}},
		{"version not first", "rua=mailto:a@example.com; v=TLSRPTv1", []string{"mailto:a@example.com"}, []string{"tls_rpt_version"}},
		{"wrong version", "v=TLSRPTv2; rua=mailto:a@example.com", []string{"mailto:a@example.com"}, []string{"tls_rpt_version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, ps := posture.ParseTLSRPT(tc.record)
			if !slices.Equal(rec.RUA, tc.rua) || !slices.Equal(codes(ps), tc.codes) {
				t.Errorf("rua %q, problems %v; want %q, %v", rec.RUA, codes(ps), tc.rua, tc.codes)
			}
		})
	}
}

func TestParseBIMI(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		logo, cert   string
		declined     bool
		codes        []string
	}{
		{"logo and certificate", "v=BIMI1; l=https://example.com/logo.svg; a=https://example.com/vmc.pem;", "https://example.com/logo.svg", "https://example.com/vmc.pem", false, nil},
		{"logo only", "v=BIMI1; l=https://example.com/logo.svg", "https://example.com/logo.svg", "", false, []string{"bimi_no_certificate"}},
		{"declined", "v=BIMI1; l=; a=;", "", "", true, nil},
		{"http logo", "v=BIMI1; l=http://example.com/logo.svg; a=https://example.com/vmc.pem", "http://example.com/logo.svg", "https://example.com/vmc.pem", false, []string{"bimi_logo_invalid"}},
		{"png logo", "v=BIMI1; l=https://example.com/logo.png; a=https://example.com/vmc.pem", "https://example.com/logo.png", "https://example.com/vmc.pem", false, []string{"bimi_logo_not_svg"}},
		{"certificate without a logo", "v=BIMI1; a=https://example.com/vmc.pem", "", "https://example.com/vmc.pem", false, []string{"bimi_no_logo"}},
		{"certificate not pem", "v=BIMI1; l=https://example.com/l.svg; a=https://example.com/vmc.crt", "https://example.com/l.svg", "https://example.com/vmc.crt", false, []string{"bimi_certificate_not_pem"}},
		{"wrong version", "v=BIMI2; l=https://example.com/l.svg; a=https://example.com/v.pem", "https://example.com/l.svg", "https://example.com/v.pem", false, []string{"bimi_version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, ps := posture.ParseBIMI(tc.record)
			if rec.Logo != tc.logo || rec.Authority != tc.cert || rec.Declined != tc.declined || !slices.Equal(codes(ps), tc.codes) {
				t.Errorf("record %+v, problems %v; want %q, %q, declined %v, %v", rec, codes(ps), tc.logo, tc.cert, tc.declined, tc.codes)
			}
		})
	}
}

// TestCheckDelivery checks MTA-STS, TLS-RPT and BIMI records through the
// simulated DNS: several records of a kind read as none, a policy the
// check has no client to fetch is unavailable, and BIMI does not count
// while DMARC enforces on part of the mail only.
func TestCheckDelivery(t *testing.T) {
	r := startDNS(t, []string{"example.com"}, []record{
		{"multi.example.com", "MX", "10 mail.example.com"},
		{"_mta-sts.multi.example.com", "TXT", "v=STSv1; id=1"},
		{"_mta-sts.multi.example.com", "TXT", "v=STSv1; id=2"},
		{"_smtp._tls.multi.example.com", "TXT", "v=TLSRPTv1; rua=mailto:a@example.com"},
		{"_smtp._tls.multi.example.com", "TXT", "v=TLSRPTv1; rua=mailto:b@example.com"},
		{"_smtp._tls.multi.example.com", "TXT", "not a report record"},
		{"default._bimi.multi.example.com", "TXT", "v=BIMI1; l=https://example.com/a.svg"},
		{"default._bimi.multi.example.com", "TXT", "v=BIMI1; l=https://example.com/b.svg"},

		{"partial.example.com", "MX", "10 mail.example.com"},
		{"_dmarc.partial.example.com", "TXT", "v=DMARC1; p=quarantine; pct=50"},
		{"_mta-sts.partial.example.com", "TXT", "v=STSv1; id=1"},
		{"default._bimi.partial.example.com", "TXT", "v=BIMI1; l=https://example.com/a.svg; a=https://example.com/a.pem"},
	})
	res := posture.Check(t.Context(), r, nil, "multi.example.com", nil)
	if !res.MTASTS.Present || res.MTASTS.Record != nil || !res.TLSRPT.Present || res.TLSRPT.Record != nil || !res.BIMI.Present || res.BIMI.Record != nil {
		t.Errorf("several records: MTA-STS %+v, TLS-RPT %+v, BIMI %+v", res.MTASTS, res.TLSRPT, res.BIMI)
	}
	hasCodes(t, "several records", res.Findings, []string{"mta_sts_multiple_records", "tls_rpt_multiple_records", "bimi_multiple_records"},
		[]string{"mta_sts_missing", "tls_rpt_missing", "bimi_missing"})

	res = posture.Check(t.Context(), r, nil, "partial.example.com", nil)
	if res.MTASTS.PolicyError == "" || res.BIMI.Effective {
		t.Errorf("MTA-STS %+v, BIMI %+v", res.MTASTS, res.BIMI)
	}
	hasCodes(t, "partial", res.Findings, []string{"mta_sts_policy_unavailable", "bimi_dmarc_not_enforced", "tls_rpt_missing"}, []string{"bimi_missing"})
	for _, f := range res.Findings {
		if f.Code == "bimi_dmarc_not_enforced" && !strings.Contains(f.Message, "p=quarantine on 50% of mail") {
			t.Errorf("BIMI finding %q", f.Message)
		}
		if f.Code == "tls_rpt_missing" && f.Severity != posture.SeverityMedium {
			t.Errorf("TLS-RPT missing beside MTA-STS is %s, want medium", f.Severity)
		}
	}
}
