package simdns_test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// testWorld covers what the server must answer: names written in mixed
// case and with trailing dots, several TXT records at a name, a value
// longer than one TXT string, CNAMEs inside, across and out of the zones,
// a dangling CNAME, a loop, a TXT set too large for a UDP answer, MX
// records (a null MX among them) and addresses of both families.
func testWorld() *world.World {
	w := &world.World{Tenants: []world.Tenant{
		{Name: "One", Domains: []string{"Example.com", "mail.example.net."}},
		{Name: "Two", Domains: []string{"other.example"}},
	}}
	add := func(name, typ, value string) {
		w.DNS = append(w.DNS, world.DNSRecord{Name: name, Type: typ, Value: value})
	}
	add("example.com", "TXT", "v=spf1 -all")
	add("EXAMPLE.com.", "TXT", "site-verification=abc")
	add("_dmarc.example.com", "TXT", "v=DMARC1; p=reject")
	add("long.example.com", "TXT", strings.Repeat("k", 600))
	add("escaped.example.com", "TXT", `a\b"c`)
	add("selector1._domainkey.example.com", "TXT", "v=DKIM1; p=key")
	add("alias.example.com", "CNAME", "Target.Example.com.")
	add("target.example.com", "TXT", "target")
	add("across.example.com", "CNAME", "b.other.example")
	add("b.other.example", "TXT", "b")
	add("out.example.com", "CNAME", "elsewhere.invalid")
	add("dangling.example.com", "CNAME", "gone.example.com")
	add("loop1.example.com", "CNAME", "loop2.example.com")
	add("loop2.example.com", "CNAME", "loop1.example.com")
	add("example.com", "MX", "20 Backup.Example.com.")
	add("example.com", "MX", "10 mail.example.com")
	add("mail.example.com", "A", "192.0.2.25")
	add("mail.example.com", "AAAA", "2001:db8::25")
	add("other.example", "MX", "0 .")
	add("mx-alias.example.com", "CNAME", "example.com")
	for range 10 {
		add("big.example.com", "TXT", strings.Repeat("x", 200))
	}
	return w
}

func start(t *testing.T, w *world.World) *simdns.Server {
	t.Helper()
	s, err := simdns.Start(w, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// ask sends one query; edns is the UDP size to advertise, 0 for none.
func ask(t *testing.T, network, addr, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	if edns != 0 {
		q.SetEdns0(edns, false)
	}
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(q, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return resp
}

func txts(m *dns.Msg) [][]string {
	var out [][]string
	for _, rr := range m.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			out = append(out, t.Txt)
		}
	}
	return out
}

func TestAnswers(t *testing.T) {
	s := start(t, testWorld())
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			q := func(name string, qtype uint16) *dns.Msg { return ask(t, network, s.Addr(), name, qtype, 1232) }

			t.Run("single TXT, case kept", func(t *testing.T) {
				m := q("_DMARC.Example.COM.", dns.TypeTXT)
				if m.Rcode != dns.RcodeSuccess || !m.Authoritative || len(m.Answer) != 1 {
					t.Fatalf("answer %v", m)
				}
				if got := m.Answer[0].Header().Name; got != "_DMARC.Example.COM." {
					t.Errorf("owner %q, want the question's name as asked", got)
				}
				if got := txts(m); len(got) != 1 || got[0][0] != "v=DMARC1; p=reject" {
					t.Errorf("TXT %q", got)
				}
			})
			t.Run("multiple TXT", func(t *testing.T) {
				if got := txts(q("example.com.", dns.TypeTXT)); len(got) != 2 {
					t.Errorf("TXT %q, want the two records", got)
				}
			})
			t.Run("long value split", func(t *testing.T) {
				got := txts(q("long.example.com.", dns.TypeTXT))
				if len(got) != 1 || len(got[0]) != 3 || len(got[0][0]) != 255 || len(got[0][1]) != 255 || len(got[0][2]) != 90 {
					t.Fatalf("strings %d, want one record of 255+255+90 bytes", len(got))
				}
			})
			t.Run("backslash and quote sent as themselves", func(t *testing.T) {
				// The library shows the received bytes escaped.
				if got := txts(q("escaped.example.com.", dns.TypeTXT)); len(got) != 1 || got[0][0] != `a\\b\"c` {
					t.Errorf("TXT %q", got)
				}
			})
			t.Run("MX", func(t *testing.T) {
				m := q("example.com.", dns.TypeMX)
				var got []string
				for _, rr := range m.Answer {
					got = append(got, fmt.Sprint(rr.(*dns.MX).Preference, " ", rr.(*dns.MX).Mx))
				}
				if m.Rcode != dns.RcodeSuccess || !slices.Equal(got, []string{"20 backup.example.com.", "10 mail.example.com."}) {
					t.Errorf("answer %v", m)
				}
				if m := q("other.example.", dns.TypeMX); len(m.Answer) != 1 || m.Answer[0].(*dns.MX).Mx != "." || m.Answer[0].(*dns.MX).Preference != 0 {
					t.Errorf("null MX: answer %v", m.Answer)
				}
				if m := q("mx-alias.example.com.", dns.TypeMX); len(m.Answer) != 3 || m.Answer[0].Header().Rrtype != dns.TypeCNAME {
					t.Errorf("through a CNAME: answer %v", m.Answer)
				}
			})
			t.Run("A and AAAA", func(t *testing.T) {
				if m := q("Mail.example.com.", dns.TypeA); len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.25" || m.Answer[0].Header().Name != "Mail.example.com." {
					t.Errorf("A: answer %v", m.Answer)
				}
				if m := q("mail.example.com.", dns.TypeAAAA); len(m.Answer) != 1 || m.Answer[0].(*dns.AAAA).AAAA.String() != "2001:db8::25" {
					t.Errorf("AAAA: answer %v", m.Answer)
				}
			})
			t.Run("CNAME", func(t *testing.T) {
				m := q("alias.example.com.", dns.TypeCNAME)
				if len(m.Answer) != 1 || m.Answer[0].(*dns.CNAME).Target != "target.example.com." {
					t.Errorf("answer %v", m.Answer)
				}
			})
			t.Run("CNAME chased", func(t *testing.T) {
				for name, want := range map[string]string{"alias.example.com.": "target", "across.example.com.": "b"} {
					m := q(name, dns.TypeTXT)
					if len(m.Answer) != 2 || m.Answer[0].Header().Rrtype != dns.TypeCNAME {
						t.Fatalf("%s: answer %v, want the CNAME and the target's TXT", name, m.Answer)
					}
					if got := txts(m); len(got) != 1 || got[0][0] != want {
						t.Errorf("%s: TXT %q", name, got)
					}
				}
			})
			t.Run("CNAME out of the zones not chased", func(t *testing.T) {
				m := q("out.example.com.", dns.TypeTXT)
				if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || m.Answer[0].(*dns.CNAME).Target != "elsewhere.invalid." {
					t.Errorf("answer %v", m)
				}
			})
			t.Run("dangling CNAME", func(t *testing.T) {
				m := q("dangling.example.com.", dns.TypeTXT)
				if m.Rcode != dns.RcodeNameError || len(m.Answer) != 1 {
					t.Errorf("answer %v, want the CNAME and NXDOMAIN", m)
				}
			})
			t.Run("CNAME loop", func(t *testing.T) {
				if m := q("loop1.example.com.", dns.TypeTXT); m.Rcode != dns.RcodeServerFailure {
					t.Errorf("rcode %s", dns.RcodeToString[m.Rcode])
				}
			})
			t.Run("NXDOMAIN", func(t *testing.T) {
				m := q("nope.example.com.", dns.TypeTXT)
				if m.Rcode != dns.RcodeNameError || !m.Authoritative || len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != dns.TypeSOA {
					t.Errorf("answer %v, want NXDOMAIN with the zone's SOA", m)
				}
			})
			t.Run("no data", func(t *testing.T) {
				for name, qtype := range map[string]uint16{
					"example.com.":                      dns.TypeA,
					"_domainkey.example.com.":           dns.TypeTXT, // between a record and the apex
					"mail.example.net.":                 dns.TypeTXT, // an apex without records
					"selector1._domainkey.example.com.": dns.TypeCNAME,
					"alias.example.com.":                dns.TypeA, // after the CNAME
				} {
					m := q(name, qtype)
					if m.Rcode != dns.RcodeSuccess || len(txts(m)) != 0 || len(m.Ns) != 1 {
						t.Errorf("%s %s: answer %v, want no records and the SOA", name, dns.TypeToString[qtype], m)
					}
				}
			})
			t.Run("SOA at the apex", func(t *testing.T) {
				if m := q("MAIL.example.net.", dns.TypeSOA); len(m.Answer) != 1 {
					t.Errorf("answer %v", m.Answer)
				}
			})
			t.Run("REFUSED outside the zones", func(t *testing.T) {
				for _, name := range []string{"example.org.", "notexample.com.", "net."} {
					if m := q(name, dns.TypeTXT); m.Rcode != dns.RcodeRefused || m.Authoritative {
						t.Errorf("%s: answer %v", name, m)
					}
				}
			})
		})
	}
}

func TestTruncation(t *testing.T) {
	s := start(t, testWorld())
	for _, size := range []uint16{0, 1232} {
		m := ask(t, "udp", s.Addr(), "big.example.com.", dns.TypeTXT, size)
		if !m.Truncated || len(m.Answer) >= 10 {
			t.Errorf("UDP, EDNS size %d: truncated %v with %d answers", size, m.Truncated, len(m.Answer))
		}
	}
	if m := ask(t, "udp", s.Addr(), "big.example.com.", dns.TypeTXT, 4096); m.Truncated || len(m.Answer) != 10 {
		t.Errorf("UDP, EDNS size 4096: truncated %v with %d answers", m.Truncated, len(m.Answer))
	}
	if m := ask(t, "tcp", s.Addr(), "big.example.com.", dns.TypeTXT, 0); m.Truncated || len(m.Answer) != 10 {
		t.Errorf("TCP: truncated %v with %d answers", m.Truncated, len(m.Answer))
	}
}

func TestInvalidWorlds(t *testing.T) {
	zone := []world.Tenant{{Name: "T", Domains: []string{"example.com"}}}
	for name, records := range map[string][]world.DNSRecord{
		"outside the zones":   {{Name: "example.org", Type: "TXT", Value: "v"}},
		"suffix but no label": {{Name: "notexample.com", Type: "TXT", Value: "v"}},
		"CNAME after TXT":     {{Name: "a.example.com", Type: "TXT", Value: "v"}, {Name: "a.example.com", Type: "CNAME", Value: "b.example.com"}},
		"TXT after CNAME":     {{Name: "a.example.com", Type: "CNAME", Value: "b.example.com"}, {Name: "A.example.com.", Type: "TXT", Value: "v"}},
		"CNAME at the apex":   {{Name: "example.com", Type: "CNAME", Value: "b.example.com"}},
		"unknown type":        {{Name: "example.com", Type: "SRV", Value: "0 5 5060 sip.example.com"}},
		"MX without host":     {{Name: "example.com", Type: "MX", Value: "10"}},
		"MX preference":       {{Name: "example.com", Type: "MX", Value: "65536 mx.example.com"}},
		"MX named badly":      {{Name: "example.com", Type: "MX", Value: "10 mx..example.com"}},
		"MX after CNAME":      {{Name: "a.example.com", Type: "CNAME", Value: "b.example.com"}, {Name: "a.example.com", Type: "MX", Value: "10 mx.example.com"}},
		"A not an address":    {{Name: "example.com", Type: "A", Value: "mail.example.com"}},
		"A of IPv6":           {{Name: "example.com", Type: "A", Value: "2001:db8::1"}},
		"AAAA of IPv4":        {{Name: "example.com", Type: "AAAA", Value: "192.0.2.1"}},
		"AAAA of mapped IPv4": {{Name: "example.com", Type: "AAAA", Value: "::ffff:192.0.2.1"}},
	} {
		if s, err := simdns.Start(&world.World{Tenants: zone, DNS: records}, "", nil); err == nil {
			s.Close()
			t.Errorf("%s: started", name)
		}
	}
}

func TestAddressAndClose(t *testing.T) {
	s := start(t, testWorld())
	host, _, err := net.SplitHostPort(s.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("address %q: %v", s.Addr(), err)
	}
	if other, err := simdns.Start(testWorld(), s.Addr(), nil); err == nil {
		other.Close()
		t.Fatal("a second server started on a pinned address in use")
	}
	s.Close()
	s.Close()
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	q := new(dns.Msg)
	q.SetQuestion("example.com.", dns.TypeTXT)
	if _, _, err := c.Exchange(q, s.Addr()); err == nil {
		t.Error("answered after Close")
	}
}

func TestDemoWorld(t *testing.T) {
	w := world.Demo(1, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	s := start(t, w)
	ptrs := 0
	for _, r := range w.DNS {
		qtype := dns.StringToType[r.Type]
		name := dns.Fqdn(r.Name)
		if qtype == dns.TypePTR {
			// The demo names its PTR records by address.
			var err error
			if name, err = dns.ReverseAddr(r.Name); err != nil {
				t.Fatal(err)
			}
			ptrs++
		}
		m := ask(t, "udp", s.Addr(), name, qtype, 1232)
		if m.Rcode != dns.RcodeSuccess || len(m.Answer) == 0 || m.Truncated {
			t.Errorf("%s %s: answer %v", r.Name, r.Type, m)
		}
	}
	if ptrs == 0 {
		t.Error("the demo world has no PTR records")
	}
	// A report's spoofer has no reverse name: NXDOMAIN in the reverse zone.
	if m := ask(t, "udp", s.Addr(), "210.113.0.203.in-addr.arpa.", dns.TypePTR, 1232); m.Rcode != dns.RcodeNameError {
		t.Errorf("a spoofer's reverse name: %v", m)
	}
}
