package posture_test

import (
	"slices"
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
