package posture_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// record is one DNS record of a test world: name, type, value.
type record [3]string

// startDNS serves records from the simulated DNS, the zones being the
// domains given, and returns the real resolver asking it.
func startDNS(t testing.TB, zones []string, records []record) *cloud.Resolver {
	t.Helper()
	w := &world.World{Tenants: []world.Tenant{{Name: "T", Domains: zones}}}
	for _, r := range records {
		w.DNS = append(w.DNS, world.DNSRecord{Name: r[0], Type: r[1], Value: r[2]})
	}
	s, err := simdns.Start(w, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return cloud.NewResolver(s.Addr())
}

// startFailingDNS starts a server that answers every query with rcode,
// as a broken or overloaded resolver answers SERVFAIL.
func startFailingDNS(t testing.TB, rcode int) *cloud.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(up) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(req, rcode)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	select {
	case <-up:
	case <-time.After(5 * time.Second):
		t.Fatal("DNS server did not start")
	}
	t.Cleanup(func() { _ = srv.Shutdown() })
	return cloud.NewResolver(pc.LocalAddr().String())
}

// spfWorld's records exercise SPF evaluation: nested includes counted
// exactly, an include reached twice, loops, a record over the lookup
// limit, void lookups, redirects, an include that cannot be resolved
// (a CNAME loop, answered SERVFAIL), multiple records and an mx with too
// many hosts.
func spfWorld() []record {
	rs := []record{
		{"nested.example.com", "TXT", "v=spf1 include:a.example.com include:b.example.com mx a -all"},
		{"nested.example.com", "MX", "10 mail.example.com"},
		{"nested.example.com", "A", "192.0.2.1"},
		{"mail.example.com", "A", "192.0.2.25"},
		{"a.example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 include:c.example.com -all"},
		{"b.example.com", "TXT", "v=spf1 a:mail.example.com ~all"},
		{"c.example.com", "TXT", "v=spf1 ip6:2001:db8::/32 -all"},
		{"twice.example.com", "TXT", "v=spf1 include:a.example.com include:a.example.com -all"},

		{"loop1.example.com", "TXT", "v=spf1 include:loop2.example.com -all"},
		{"loop2.example.com", "TXT", "v=spf1 include:Loop1.Example.com. -all"},
		{"self.example.com", "TXT", "v=spf1 redirect=self.example.com"},

		{"over.example.com", "TXT", "v=spf1 include:o1.example.com include:o2.example.com include:o3.example.com -all"},
		{"void.example.com", "TXT", "v=spf1 a:none1.example.com a:txtonly.example.com mx:none3.example.com include:nospf.example.com -all"},
		{"txtonly.example.com", "TXT", "not spf"},
		{"nospf.example.com", "TXT", "site-verification=x"},

		{"redir.example.com", "TXT", "v=spf1 redirect=_spf.example.com"},
		{"_spf.example.com", "TXT", "v=spf1 ip4:198.51.100.0/24 include:c.example.com ~all"},
		{"redir-gone.example.com", "TXT", "v=spf1 redirect=gone.example.com"},
		{"redir-all.example.com", "TXT", "v=spf1 -all redirect=_spf.example.com"},

		{"servfail.example.com", "TXT", "v=spf1 include:broken.example.com -all"},
		{"broken.example.com", "CNAME", "broken.example.com"},
		{"multi-include.example.com", "TXT", "v=spf1 include:multi.example.com -all"},
		{"multi.example.com", "TXT", "v=spf1 -all"},
		{"multi.example.com", "TXT", "v=spf1 ~all"},
		{"manymx.example.com", "TXT", "v=spf1 mx -all"},
		{"macro.example.com", "TXT", "v=spf1 exists:%{i}._spf.%{d} ptr include:%{d2}.example.com -all"},
	}
	for i := 1; i <= 3; i++ {
		rs = append(rs, record{fmt.Sprintf("o%d.example.com", i), "TXT", "v=spf1 exists:%{i}._x.example.com exists:%{i}._y.example.com exists:%{i}._z.example.com -all"})
	}
	for i := range 11 {
		rs = append(rs, record{"manymx.example.com", "MX", fmt.Sprintf("%d mx%d.example.com", i, i)})
	}
	return rs
}
