package posture_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// checkProblems fails on a problem without a code, a known severity or a
// message.
func checkProblems(t *testing.T, ps []posture.Problem) {
	for _, p := range ps {
		if p.Code == "" || p.Message == "" || posture.SeverityRank(p.Severity) > 4 {
			t.Fatalf("problem %+v", p)
		}
	}
}

func FuzzParseDMARC(f *testing.F) {
	for _, seed := range []string{
		"v=DMARC1; p=reject; rua=mailto:d@example.com",
		"v=DMARC1; p=none; sp=reject; pct=50; rua=mailto:a@example.com!10m, mailto:b@example.net; ruf=mailto:f@example.com; adkim=s; aspf=r; fo=1:d; rf=afrf; ri=3600",
		"v=DMARC1; p=quarantine; pct=",
		"v=DMARC1;;p=reject;;",
		"p=reject; v=DMARC1",
		"v=DMARC1; p=reject; p=none",
		"v=DMARC1; rua=mailto:!",
		"v=DMARC1; rua=mailto:a@b!k",
		"v=DMARC1; =x; 1a=b",
		"",
	} {
		f.Add(seed)
	}
	policies := []string{"", "none", "quarantine", "reject"}
	f.Fuzz(func(t *testing.T, s string) {
		rec, ps := posture.ParseDMARC(s)
		checkProblems(t, ps)
		if !slices.Contains(policies, rec.Policy) || !slices.Contains(policies, rec.SubdomainPolicy) || rec.Percent < 0 || rec.Percent > 100 || rec.Raw != s {
			t.Fatalf("record %+v", rec)
		}
		if (rec.ADKIM != "r" && rec.ADKIM != "s") || (rec.ASPF != "r" && rec.ASPF != "s") || rec.ReportInterval < 0 {
			t.Fatalf("record %+v", rec)
		}
	})
}

func FuzzParseSPF(f *testing.F) {
	for _, seed := range []string{
		"v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 a mx:mail.example.com/24//64 include:_spf.example.net -all",
		"v=spf1 redirect=_spf.example.com",
		"v=spf1 exists:%{i}._spf.%{d} exp=explain.%{d2r-} ?all",
		"v=spf1 ptr:example.com ~all",
		"v=spf1 a/0//0 mx// +all",
		"v=spf1 include:%{",
		"v=spf1 foo=%%%_%- -all",
		"v=spf1 ip4:1.2.3.4/ ip6:::/128",
		"v=spf1",
		"spf1",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rec, ps := posture.ParseSPF(s)
		checkProblems(t, ps)
		if !slices.Contains([]string{"", "+", "-", "~", "?"}, rec.All) || rec.Raw != s {
			t.Fatalf("record %+v", rec)
		}
		for _, term := range rec.Terms {
			if term.Mechanism == "" || term.Modifier != (term.Qualifier == "") {
				t.Fatalf("term %+v", term)
			}
		}
	})
}

func FuzzParseDKIMKey(f *testing.F) {
	k := keys()
	for _, seed := range []string{
		"v=DKIM1; k=rsa; p=" + k["rsa2048"],
		"v=DKIM1; k=rsa; p=" + k["rsa1024"],
		"v=DKIM1; k=ed25519; p=" + k["ed25519"],
		"p=" + k["rsa2048-pkcs1"],
		"v=DKIM1; p=",
		"v=DKIM1; h=sha1; s=email:*; t=y:s; n=note; p=MIIB",
		"v=DKIM1; p=" + k["rsa512"],
		"v=DKIM1; k=; p==",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, ps := posture.ParseDKIMKey(s)
		checkProblems(t, ps)
		if key.Bits < 0 || key.Usable() && (!key.Present || key.Revoked) || key.Revoked && key.Bits != 0 {
			t.Fatalf("key %+v", key)
		}
	})
}

func FuzzParseMTASTSPolicy(f *testing.F) {
	for _, seed := range []string{
		"version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmax_age: 604800\r\n",
		"version: STSv1\nmode: none\nmax_age: 0",
		"version:STSv1\nmode:testing\nmx:*.*.example.com\nmax_age:99999999999",
		"mode enforce\n\n\r\n: x",
		"",
	} {
		f.Add(seed)
	}
	modes := []string{"", "enforce", "testing", "none"}
	f.Fuzz(func(t *testing.T, s string) {
		pol, ps := posture.ParseMTASTSPolicy(s)
		checkProblems(t, ps)
		if !slices.Contains(modes, pol.Mode) || pol.MaxAge < 0 {
			t.Fatalf("policy %+v", pol)
		}
		if len(ps) == 0 && (pol.Version != "STSv1" || pol.Mode == "" || pol.MaxAge > 31557600 || pol.Mode != "none" && len(pol.MX) == 0) {
			t.Fatalf("policy %+v accepted without a problem", pol)
		}
		for _, mx := range pol.MX {
			pol.Matches(mx)
		}
	})
}

func FuzzParseTransportRecords(f *testing.F) {
	for _, seed := range []string{
		"v=STSv1; id=20160831085700Z;",
		"v=TLSRPTv1; rua=mailto:a@example.com,https://r.example.com/x",
		"v=BIMI1; l=https://example.com/l.svg; a=https://example.com/a.pem",
		"v=BIMI1; l=; a=;",
		"v=TLSRPTv1; rua=mailto:%zz",
		";;=;",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sts, ps := posture.ParseMTASTSRecord(s)
		checkProblems(t, ps)
		if len(sts.ID) > 32 {
			t.Fatalf("id %q", sts.ID)
		}
		rpt, ps := posture.ParseTLSRPT(s)
		checkProblems(t, ps)
		for _, u := range rpt.RUA {
			if !strings.HasPrefix(strings.ToLower(u), "mailto:") && !strings.HasPrefix(strings.ToLower(u), "https:") {
				t.Fatalf("rua %q", u)
			}
		}
		bimi, ps := posture.ParseBIMI(s)
		checkProblems(t, ps)
		if bimi.Declined && (bimi.Logo != "" || bimi.Authority != "") {
			t.Fatalf("record %+v", bimi)
		}
	})
}
