// Package simdns is the simulated cloud's DNS: an authoritative server on
// loopback, over UDP and TCP on one port, for the world's tenant domains.
// It answers the world's TXT and CNAME records (SPF, DMARC, DKIM), MX
// records, A and AAAA addresses, and PTR records in the reverse zones
// (in-addr.arpa and ip6.arpa, served when the world has PTR records) the way a real authoritative server
// does, so Steward's resolver is tested against real DNS behaviour: long
// TXT values split into 255-byte strings, CNAMEs chased within the served
// zones, NXDOMAIN versus an empty answer, REFUSED outside the zones, and
// truncation that sends clients to TCP. It plays the validating resolver
// too: answers for the world's DNSSEC zones carry the AD bit when the
// query asks for it (AD or DO set, RFC 6840, 5.7), as a resolver that
// validated them would set it.
package simdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/miekg/dns"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Service is the DNS server's key in cloudsim.Options.Addrs, for pinning
// its address like the HTTPS services'.
const Service cloudsim.Service = "dns"

// ttl is every answer's time to live and the zones' negative-caching
// time: short, so a resolver in front of the simulator does not hold on
// to a world that is restarted with other records.
const ttl = 300

// maxChase bounds how many CNAMEs one answer follows: a longer chain is
// a loop in the world file, answered SERVFAIL as resolvers do.
const maxChase = 8

// reverseZones are the zones of PTR records, IPv4's and IPv6's.
var reverseZones = []string{"in-addr.arpa.", "ip6.arpa."}

// freePortTries is how often Start looks for a port free for both UDP and
// TCP: the UDP socket picks a free port, and TCP can find it taken.
const freePortTries = 20

// Server is a running simulated DNS server.
type Server struct {
	addr    string
	logger  hclog.Logger
	zones   []string            // the tenants' domains, lower-case and fully qualified
	records map[string][]dns.RR // by lower-case fully qualified owner name
	// signed are the zones whose answers the server says it authenticated.
	signed map[string]bool

	udp, tcp  *dns.Server
	closeOnce sync.Once
}

// Start serves w's DNS records on addr, over UDP and TCP, or on a free
// loopback port when addr is empty. The zones are the tenants' domains;
// every record must lie in one. Start indexes the records once: later
// changes to w are not served.
func Start(w *world.World, addr string, logger hclog.Logger) (*Server, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &Server{logger: logger, records: map[string][]dns.RR{}, signed: map[string]bool{}}
	if err := s.index(w); err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	pc, ln, err := listen(addr)
	if err != nil {
		return nil, fmt.Errorf("simulated dns: %w", err)
	}
	s.addr = ln.Addr().String()
	handler := dns.HandlerFunc(s.serve)
	// Each server reports once that it started or failed to; later
	// failures fit in the buffer too, so no server ever blocks on it.
	up := make(chan error, 4)
	notify := func() { up <- nil }
	s.udp = &dns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: notify}
	s.tcp = &dns.Server{Listener: ln, Handler: handler, NotifyStartedFunc: notify}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		go func() {
			if err := srv.ActivateAndServe(); err != nil {
				logger.Error("simulated dns stopped", "error", err)
				up <- err
			}
		}()
	}
	// Close can only stop a server that has started, so Start returns
	// once both have.
	for range 2 {
		if err := <-up; err != nil {
			_ = pc.Close()
			_ = ln.Close()
			return nil, fmt.Errorf("simulated dns: %w", err)
		}
	}
	return s, nil
}

// Addr is the host:port the server answers on, over UDP and TCP.
func (s *Server) Addr() string { return s.addr }

// Close stops the server; it may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range []*dns.Server{s.udp, s.tcp} {
			if err := srv.ShutdownContext(ctx); err != nil {
				s.logger.Warn("simulated dns shutdown", "error", err)
			}
		}
	})
}

// listen binds UDP and TCP on the same port. A port of 0 takes a free
// one: the UDP socket chooses it, and the search repeats when TCP finds
// that port in use.
func listen(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	for try := 1; ; try++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		tcpAddr := net.JoinHostPort(host, fmt.Sprint(pc.LocalAddr().(*net.UDPAddr).Port))
		ln, err := net.Listen("tcp", tcpAddr)
		if err == nil {
			return pc, ln, nil
		}
		_ = pc.Close()
		if port != "0" || !errors.Is(err, syscall.EADDRINUSE) || try == freePortTries {
			return nil, nil, err
		}
	}
}

// index builds the zones and the records by owner name, rejecting what a
// real zone could not hold.
func (s *Server) index(w *world.World) error {
	for _, t := range w.Tenants {
		for _, d := range t.Domains {
			zone := canonical(d)
			if s.records[zone] != nil {
				continue
			}
			s.zones = append(s.zones, zone)
			s.records[zone] = []dns.RR{soa(zone)}
		}
	}
	for _, r := range w.DNS {
		if r.Type == "PTR" {
			for _, zone := range reverseZones {
				s.zones = append(s.zones, zone)
				s.records[zone] = []dns.RR{soa(zone)}
			}
			break
		}
	}
	for i, d := range w.DNSSEC {
		zone := canonical(d)
		if s.records[zone] == nil {
			return fmt.Errorf("simulated dns: dnssec[%d] %s is no tenant domain", i, d)
		}
		s.signed[zone] = true
	}
	for i, r := range w.DNS {
		name := canonical(r.Name)
		if ip, err := netip.ParseAddr(strings.TrimSpace(r.Name)); err == nil && r.Type == "PTR" {
			name, _ = dns.ReverseAddr(ip.String())
		}
		at := fmt.Sprintf("dns[%d] %s", i, r.Name)
		zone := s.zoneOf(name)
		if zone == "" {
			return fmt.Errorf("simulated dns: %s is outside every tenant domain", at)
		}
		existing := s.records[name]
		hasCNAME := len(existing) > 0 && existing[0].Header().Rrtype == dns.TypeCNAME
		var rr dns.RR
		var err error
		switch r.Type {
		case "TXT":
			rr = &dns.TXT{Hdr: header(name, dns.TypeTXT), Txt: splitTXT(r.Value)}
		case "CNAME":
			// A CNAME is the only data its name may have (RFC 1034, 3.6.2),
			// and a zone's apex always has its SOA.
			if len(existing) > 0 {
				return fmt.Errorf("simulated dns: %s: a CNAME cannot share its name with other records", at)
			}
			rr = &dns.CNAME{Hdr: header(name, dns.TypeCNAME), Target: canonical(r.Value)}
		case "MX":
			if rr, err = mx(name, r.Value); err != nil {
				return fmt.Errorf("simulated dns: %s: %w", at, err)
			}
		case "A", "AAAA":
			if rr, err = address(name, r.Type, r.Value); err != nil {
				return fmt.Errorf("simulated dns: %s: %w", at, err)
			}
		case "PTR":
			if !strings.HasSuffix(name, "."+reverseZones[0]) && !strings.HasSuffix(name, "."+reverseZones[1]) {
				return fmt.Errorf("simulated dns: %s: a PTR record is named by an IP address or a name under in-addr.arpa or ip6.arpa", at)
			}
			rr = &dns.PTR{Hdr: header(name, dns.TypePTR), Ptr: canonical(r.Value)}
		default:
			return fmt.Errorf("simulated dns: %s: type %q is none of TXT, CNAME, MX, A, AAAA and PTR", at, r.Type)
		}
		if hasCNAME {
			return fmt.Errorf("simulated dns: %s: the name already has a CNAME", at)
		}
		s.records[name] = append(existing, rr)
	}
	// The names between a record and its zone's apex exist too, without
	// records of their own (RFC 8020): _domainkey.example.com is an empty
	// answer, not NXDOMAIN, when a selector lies under it.
	var between []string
	for name := range s.records {
		zone := s.zoneOf(name)
		for n := parent(name); len(n) > len(zone); n = parent(n) {
			between = append(between, n)
		}
	}
	for _, n := range between {
		if _, ok := s.records[n]; !ok {
			s.records[n] = []dns.RR{}
		}
	}
	return nil
}

// serve answers one query. The library's default accept function has
// already refused messages that are not queries with exactly one question.
func (s *Server) serve(rw dns.ResponseWriter, req *dns.Msg) {
	m := s.answer(req)
	q := req.Question[0]
	opt := req.IsEdns0()
	size := dns.MaxMsgSize
	if _, udp := rw.RemoteAddr().(*net.UDPAddr); udp {
		size = dns.MinMsgSize
		if opt != nil {
			size = int(opt.UDPSize())
		}
	}
	if opt != nil {
		// RFC 6891: an EDNS query gets an EDNS answer, which states the
		// size this server accepts.
		m.SetEdns0(dns.DefaultMsgSize, false)
	}
	// Truncate drops the records that do not fit and sets TC, which sends
	// the client to TCP.
	m.Truncate(size)
	s.logger.Debug("dns query", "service", Service, "net", rw.RemoteAddr().Network(), "name", q.Name,
		"type", dns.TypeToString[q.Qtype], "rcode", dns.RcodeToString[m.Rcode], "answers", len(m.Answer), "truncated", m.Truncated)
	if err := rw.WriteMsg(m); err != nil {
		s.logger.Warn("simulated dns reply", "name", q.Name, "error", err)
	}
}

// answer resolves the question against the zones. The answer names the
// first record as the question did, case and all, since resolvers that
// randomise a query name's case check that it comes back unchanged.
func (s *Server) answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	zone := s.zoneOf(name)
	if zone == "" || q.Qclass != dns.ClassINET {
		m.Rcode = dns.RcodeRefused
		return m
	}
	m.Authoritative = true
	// AD goes to a client that asks for it, and only when every zone the
	// answer passes through is signed.
	opt := req.IsEdns0()
	m.AuthenticatedData = (req.AuthenticatedData || opt != nil && opt.Do()) && s.signed[zone]
	owner := q.Name
	for range maxChase {
		rrs, exists := s.records[name]
		if !exists {
			// A CNAME in the answer still stands: the code is about the
			// last name of the chain (RFC 6604).
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{soa(zone)}
			return m
		}
		if len(rrs) > 0 && rrs[0].Header().Rrtype == dns.TypeCNAME && q.Qtype != dns.TypeCNAME {
			cname := rrs[0].(*dns.CNAME)
			m.Answer = append(m.Answer, named(cname, owner))
			// A target outside the zones is left for the client's resolver
			// to follow, as an authoritative server would.
			if zone = s.zoneOf(cname.Target); zone == "" {
				m.AuthenticatedData = false
				return m
			}
			m.AuthenticatedData = m.AuthenticatedData && s.signed[zone]
			name, owner = cname.Target, cname.Target
			continue
		}
		found := false
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, named(rr, owner))
				found = true
			}
		}
		if !found {
			// No data, after any CNAMEs: the SOA lets resolvers cache that.
			m.Ns = []dns.RR{soa(zone)}
		}
		return m
	}
	m.Answer, m.Rcode, m.AuthenticatedData = nil, dns.RcodeServerFailure, false
	return m
}

// zoneOf is the longest zone name lies in, or "" when it is in none.
func (s *Server) zoneOf(name string) string {
	best := ""
	for _, z := range s.zones {
		if (name == z || strings.HasSuffix(name, "."+z)) && len(z) > len(best) {
			best = z
		}
	}
	return best
}

// canonical is name lower-case and fully qualified: DNS names compare
// without regard to case (RFC 4343), and the world may write them with or
// without the trailing dot.
func canonical(name string) string {
	return dns.Fqdn(strings.ToLower(strings.TrimSpace(name)))
}

// parent is name without its first label.
func parent(name string) string {
	_, rest, _ := strings.Cut(name, ".")
	return rest
}

func header(name string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// named is a copy of rr owned by name.
func named(rr dns.RR, name string) dns.RR {
	c := dns.Copy(rr)
	c.Header().Name = name
	return c
}

// soa is the zone's start of authority, which negative answers carry so
// resolvers know how long to cache them (RFC 2308).
func soa(zone string) dns.RR {
	return &dns.SOA{
		Hdr: header(zone, dns.TypeSOA),
		Ns:  "ns." + zone, Mbox: "hostmaster." + zone,
		Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: ttl,
	}
}

// mx is an MX record from its presentation form, a preference and a
// host: "10 mail.example.com". The host "." with preference 0 is a null
// MX, a domain's statement that it accepts no mail (RFC 7505).
func mx(name, value string) (dns.RR, error) {
	fields := strings.Fields(value)
	if len(fields) != 2 {
		return nil, fmt.Errorf("MX value %q is not a preference and a host", value)
	}
	pref, err := strconv.ParseUint(fields[0], 10, 16)
	if err != nil {
		return nil, fmt.Errorf("MX preference %q is not a number from 0 to 65535", fields[0])
	}
	if _, ok := dns.IsDomainName(fields[1]); !ok {
		return nil, fmt.Errorf("MX host %q is not a domain name", fields[1])
	}
	return &dns.MX{Hdr: header(name, dns.TypeMX), Preference: uint16(pref), Mx: canonical(fields[1])}, nil
}

// address is an A record from an IPv4 address or an AAAA record from an
// IPv6 one.
func address(name, typ, value string) (dns.RR, error) {
	ip, err := netip.ParseAddr(strings.TrimSpace(value))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s value %q is not an IP address", typ, value)
	case typ == "A" && ip.Is4():
		return &dns.A{Hdr: header(name, dns.TypeA), A: ip.AsSlice()}, nil
	case typ == "AAAA" && ip.Is6() && !ip.Is4In6():
		return &dns.AAAA{Hdr: header(name, dns.TypeAAAA), AAAA: ip.AsSlice()}, nil
	}
	return nil, fmt.Errorf("%s value %q is an address of the other family", typ, value)
}

// splitTXT cuts a value into the 255-byte character strings one TXT
// record holds, as DNS publishers do with DKIM keys; readers join them.
// The library reads backslashes in the strings as escapes, so they are
// escaped to go on the wire as themselves.
func splitTXT(v string) []string {
	var out []string
	for {
		n := min(len(v), 255)
		out = append(out, strings.ReplaceAll(v[:n], `\`, `\\`))
		v = v[n:]
		if v == "" {
			return out
		}
	}
}
