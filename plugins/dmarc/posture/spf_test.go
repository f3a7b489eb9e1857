package posture_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/miekg/dns"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

func TestParseSPF(t *testing.T) {
	for _, tc := range []struct {
		record        string
		all, redirect string
		terms         []posture.SPFTerm
		want, not     []string
	}{
		{
			record: "v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 a mx:mail.example.com/24//64 include:_spf.example.net -all",
			all:    "-",
			terms: []posture.SPFTerm{
				{Qualifier: "+", Mechanism: "ip4", Value: "192.0.2.0/24"},
				{Qualifier: "+", Mechanism: "ip6", Value: "2001:db8::/32"},
				{Qualifier: "+", Mechanism: "a"},
				{Qualifier: "+", Mechanism: "mx", Value: "mail.example.com/24//64"},
				{Qualifier: "+", Mechanism: "include", Value: "_spf.example.net"},
				{Qualifier: "-", Mechanism: "all"},
			},
			not: []string{"spf_syntax", "spf_no_all", "spf_softfail_all"},
		},
		{
			record: "V=SPF1  +A/24  ?MX  ~all", all: "~",
			terms: []posture.SPFTerm{{Qualifier: "+", Mechanism: "a", Value: "/24"}, {Qualifier: "?", Mechanism: "mx"}, {Qualifier: "~", Mechanism: "all"}},
			want:  []string{"spf_softfail_all"},
		},
		{record: "v=spf1 +all", all: "+", want: []string{"spf_pass_all"}},
		{record: "v=spf1 ?all", all: "?", want: []string{"spf_neutral_all"}},
		{record: "v=spf1 ip4:192.0.2.1", want: []string{"spf_no_all"}},
		{
			record: "v=spf1 redirect=_spf.example.com", redirect: "_spf.example.com",
			terms: []posture.SPFTerm{{Mechanism: "redirect", Value: "_spf.example.com", Modifier: true}},
			not:   []string{"spf_no_all"},
		},
		{record: "v=spf1 -all redirect=_spf.example.com", all: "-", redirect: "_spf.example.com", want: []string{"spf_redirect_ignored"}},
		{record: "v=spf1 redirect=a.example.com redirect=b.example.com", redirect: "a.example.com", want: []string{"spf_duplicate_modifier"}},
		{record: "v=spf1 exists:%{i}._spf.%{d} exp=explain._spf.%{d} -all", all: "-", not: []string{"spf_syntax"}},
		{record: "v=spf1 ptr -all", all: "-", want: []string{"spf_ptr"}},
		{record: "v=spf1 -all ip4:192.0.2.1", all: "-", want: []string{"spf_after_all"}},
		{record: "v=spf1 foo=bar -all", all: "-", want: []string{"spf_unknown_modifier"}, not: []string{"spf_syntax"}},
		{record: "spf1 -all", all: "-", want: []string{"spf_version"}},
		{record: "v=spf2 -all", all: "-", want: []string{"spf_version"}},
	} {
		t.Run(tc.record, func(t *testing.T) {
			rec, ps := posture.ParseSPF(tc.record)
			if rec.All != tc.all || rec.Redirect != tc.redirect || tc.terms != nil && !slices.Equal(rec.Terms, tc.terms) {
				t.Errorf("record %+v", rec)
			}
			hasCodes(t, tc.record, ps, tc.want, tc.not)
		})
	}
}

// TestParseSPFSyntax: every malformed term is a syntax error, a
// permanent error for receivers, and left out of the terms.
func TestParseSPFSyntax(t *testing.T) {
	for _, term := range []string{
		"include", "include:", "include:example", "include:example.123", "include:exa mple.com%", "exists",
		"ip4", "ip4:192.0.2.300", "ip4:192.0.2.0/33", "ip4:192.0.2.0/024", "ip4:2001:db8::1", "ip6:192.0.2.1", "ip6:2001:db8::/129",
		"a:", "a/33", "a//129", "a/", "mx:example.com/24/64", "all:example.com", "ptr/24",
		"foo", "-foo:example.com", "9x=y", "include:%{z}.example.com", "include:%{d", "include:%x.example.com", "include:example.com%",
		"a:%{d}.example.com?",
	} {
		rec, ps := posture.ParseSPF("v=spf1 " + term + " -all")
		if !slices.Contains(codes(ps), "spf_syntax") || len(rec.Terms) != 1 {
			t.Errorf("%q: terms %+v, problems %v", term, rec.Terms, codes(ps))
		}
	}
}

func TestEvaluateSPF(t *testing.T) {
	r := startDNS(t, []string{"example.com"}, spfWorld())
	for _, tc := range []struct {
		domain          string
		lookups, void   int
		includes        []string
		loop, overLimit bool
		voidOver        bool
		all             string
		want, not       []string
	}{
		// include a (1), its include c (2), include b (3), its a:mail (4), mx (5), a (6).
		{domain: "nested.example.com", lookups: 6, includes: []string{"a.example.com", "c.example.com", "b.example.com"}, all: "-",
			not: []string{"spf_softfail_all"}}, // b's ~all does not end the evaluation
		// An include reached twice is counted twice.
		{domain: "twice.example.com", lookups: 4, includes: []string{"a.example.com", "c.example.com"}, all: "-"},
		{domain: "loop1.example.com", lookups: 2, includes: []string{"loop2.example.com", "loop1.example.com"}, loop: true, all: "-", want: []string{"spf_loop"}},
		{domain: "self.example.com", lookups: 1, includes: []string{"self.example.com"}, loop: true, want: []string{"spf_loop"}},
		// Three includes of four lookups each.
		{domain: "over.example.com", lookups: 12, includes: []string{"o1.example.com", "o2.example.com", "o3.example.com"}, overLimit: true, all: "-", want: []string{"spf_over_limit"}},
		// none1 does not exist, txtonly has no address, none3 has no MX; nospf
		// has TXT records, none of them SPF, which is no void lookup.
		{domain: "void.example.com", lookups: 4, void: 3, voidOver: true, includes: []string{"nospf.example.com"}, all: "-", want: []string{"spf_void_lookups", "spf_include_missing"}},
		// The redirect's ~all ends the evaluation.
		{domain: "redir.example.com", lookups: 2, includes: []string{"_spf.example.com", "c.example.com"}, all: "~", want: []string{"spf_softfail_all"}},
		{domain: "redir-gone.example.com", lookups: 1, void: 1, includes: []string{"gone.example.com"}, want: []string{"spf_redirect_missing"}},
		{domain: "redir-all.example.com", all: "-"},
		{domain: "multi-include.example.com", lookups: 1, includes: []string{"multi.example.com"}, all: "-", want: []string{"spf_multiple_records"}},
		{domain: "manymx.example.com", lookups: 1, all: "-", want: []string{"spf_mx_too_many"}},
		// Macros need the sender: counted, not asked.
		{domain: "macro.example.com", lookups: 3, all: "-"},
		{domain: "nothing.example.com"},
	} {
		t.Run(tc.domain, func(t *testing.T) {
			ev, err := posture.EvaluateSPF(t.Context(), r, tc.domain)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Lookups != tc.lookups || ev.VoidLookups != tc.void || !slices.Equal(ev.Includes, tc.includes) ||
				ev.Loop != tc.loop || ev.OverLimit != tc.overLimit || ev.VoidOverLimit != tc.voidOver || ev.All != tc.all {
				t.Errorf("evaluation %+v", ev)
			}
			hasCodes(t, tc.domain, ev.Problems, tc.want, tc.not)
			if permerror := len(tc.want) > 0 && tc.want[0] != "spf_softfail_all"; ev.Permerror() != permerror {
				t.Errorf("permerror %v", ev.Permerror())
			}
		})
	}
}

// TestEvaluateSPFFailure: a DNS failure on the way is an error matching
// cloud.ErrDNS, never a missing record, with what was counted until then.
func TestEvaluateSPFFailure(t *testing.T) {
	r := startDNS(t, []string{"example.com"}, spfWorld())
	ev, err := posture.EvaluateSPF(t.Context(), r, "servfail.example.com")
	if !errors.Is(err, cloud.ErrDNS) || ev.Lookups != 1 || slices.Contains(codes(ev.Problems), "spf_include_missing") {
		t.Errorf("include answered SERVFAIL: %+v, %v", ev, err)
	}
	for _, rcode := range []int{dns.RcodeServerFailure, dns.RcodeRefused} {
		if _, err := posture.EvaluateSPF(t.Context(), startFailingDNS(t, rcode), "example.com"); !errors.Is(err, cloud.ErrDNS) {
			t.Errorf("%s: %v", dns.RcodeToString[rcode], err)
		}
	}
}
