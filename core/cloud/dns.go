package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Resolver query settings. The timeout and attempts are resolv.conf's
// defaults, which the system's configuration overrides.
const (
	dnsTimeout  = 5 * time.Second
	dnsAttempts = 2
	// ednsSize is the largest UDP answer the resolver accepts: the size
	// DNS Flag Day 2020 settled on, which avoids IP fragmentation. Larger
	// answers come truncated and are asked for again over TCP.
	ednsSize = 1232
	// maxCNAMEs bounds how many CNAMEs a lookup follows, so a loop ends.
	maxCNAMEs = 8
)

// resolvConf is where the system names its DNS servers.
const resolvConf = "/etc/resolv.conf"

// Kinds of DNS failure callers test for with errors.Is.
var (
	// ErrNoSuchName is NXDOMAIN: the name does not exist. A name that
	// exists without records of the asked type is no error: the lookup
	// returns nothing.
	ErrNoSuchName = errors.New("no such name")
	// ErrDNS is a server's failure to answer: SERVFAIL, REFUSED and any
	// other response code but success and NXDOMAIN.
	ErrDNS = errors.New("DNS failure")
	// ErrMultipleRecords is a name holding more than one SPF, DMARC or
	// DKIM record, which their specifications treat as broken.
	ErrMultipleRecords = errors.New("more than one record")
)

// DNSError is a DNS server's answer other than success. It matches
// ErrNoSuchName for NXDOMAIN and ErrDNS for every other response code.
type DNSError struct {
	Name string
	// Type is the record type asked for, e.g. "TXT".
	Type string
	// Rcode is the response code, e.g. dns.RcodeServerFailure.
	Rcode int
}

func (e *DNSError) Error() string {
	return fmt.Sprintf("cloud: dns %s %s: %s", e.Type, e.Name, dns.RcodeToString[e.Rcode])
}

// Is matches ErrNoSuchName or ErrDNS by the response code.
func (e *DNSError) Is(target error) bool {
	if e.Rcode == dns.RcodeNameError {
		return target == ErrNoSuchName
	}
	return target == ErrDNS
}

// Resolver looks up the DNS records of the brands' mail authentication
// (SPF, DMARC, DKIM) and mail routing (MX, and the addresses SPF's a and
// mx mechanisms name). It speaks DNS itself, not through net.Resolver, so
// that it can ask a server on any port, the simulated cloud's among them,
// and tell a name that does not exist from one without records of the
// asked type. It is safe for concurrent use.
type Resolver struct {
	// servers are tried in order, as host:port.
	servers []string
	// timeout bounds one query to one server.
	timeout time.Duration
	// attempts is how many times the servers are tried in turn.
	attempts int
}

// NewResolver returns a resolver that asks the DNS server at addr
// (host:port, or a host for port 53), or the system's servers when addr
// is empty.
func NewResolver(addr string) *Resolver {
	if addr == "" {
		return systemResolver(resolvConf)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "53")
	}
	return &Resolver{servers: []string{addr}, timeout: dnsTimeout, attempts: dnsAttempts}
}

// systemResolver asks the servers a resolv.conf file names, with its
// timeout and attempts. Without the file, or without servers in it, it
// asks the local host, as the C library and Go's own resolver do.
func systemResolver(path string) *Resolver {
	r := &Resolver{servers: []string{"127.0.0.1:53", "[::1]:53"}, timeout: dnsTimeout, attempts: dnsAttempts}
	conf, err := dns.ClientConfigFromFile(path)
	if err != nil || len(conf.Servers) == 0 {
		return r
	}
	r.servers = nil
	for _, s := range conf.Servers {
		r.servers = append(r.servers, net.JoinHostPort(s, conf.Port))
	}
	r.timeout = time.Duration(max(conf.Timeout, 1)) * time.Second
	r.attempts = max(conf.Attempts, 1)
	return r
}

// LookupTXT returns name's TXT records, each record's strings joined into
// one: DNS splits values longer than 255 bytes, such as DKIM keys. It
// follows a CNAME at name. A name without TXT records returns none and no
// error; a name that does not exist returns ErrNoSuchName.
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	_, records, err := r.txt(ctx, name)
	return records, err
}

// LookupMX returns the hosts of name's MX records, without the trailing
// dot, most preferred first (lowest preference value; ties in the order
// the server gave). It follows a CNAME at name. A name without MX records
// returns none and no error; a name that does not exist returns
// ErrNoSuchName. A null MX (RFC 7505: preference 0, host ".") is returned
// as "", the domain's statement that it accepts no mail.
func (r *Resolver) LookupMX(ctx context.Context, name string) ([]string, error) {
	_, rrs, _, err := r.lookup(ctx, name, dns.TypeMX)
	if err != nil {
		return nil, err
	}
	mx := make([]*dns.MX, 0, len(rrs))
	for _, rr := range rrs {
		mx = append(mx, rr.(*dns.MX))
	}
	slices.SortStableFunc(mx, func(a, b *dns.MX) int { return cmp.Compare(a.Preference, b.Preference) })
	hosts := make([]string, 0, len(mx))
	for _, m := range mx {
		hosts = append(hosts, strings.TrimSuffix(m.Mx, "."))
	}
	return hosts, nil
}

// LookupA returns name's IPv4 and IPv6 addresses, its A records' first,
// following a CNAME at name. A name without addresses returns none and no
// error; a name that does not exist returns ErrNoSuchName.
func (r *Resolver) LookupA(ctx context.Context, name string) ([]string, error) {
	var addrs []string
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		_, rrs, _, err := r.lookup(ctx, name, qtype)
		if err != nil {
			return nil, err
		}
		for _, rr := range rrs {
			switch a := rr.(type) {
			case *dns.A:
				addrs = append(addrs, a.A.String())
			case *dns.AAAA:
				addrs = append(addrs, a.AAAA.String())
			}
		}
	}
	return addrs, nil
}

// LookupPTR returns the host names an IP address's reverse name points
// to (its PTR records), without their trailing dots. An address without
// a reverse name returns ErrNoSuchName; one that is not an IP address is
// an error.
func (r *Resolver) LookupPTR(ctx context.Context, ip string) ([]string, error) {
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		return nil, fmt.Errorf("cloud: dns PTR: %w", err)
	}
	_, rrs, _, err := r.lookup(ctx, name, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	hosts := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		hosts = append(hosts, strings.TrimSuffix(rr.(*dns.PTR).Ptr, "."))
	}
	return hosts, nil
}

// DNSSEC reports whether the resolver authenticated domain's records
// with DNSSEC: the AD bit of its answers for the domain's MX records, the
// records mail delivery and MTA-STS rely on, every answer of a CNAME
// chain included. The bit is the resolver's word: it means something only
// from a validating resolver reached over a trusted path (RFC 4035,
// 4.9.3), such as one on the same host. A domain that does not exist
// returns ErrNoSuchName.
func (r *Resolver) DNSSEC(ctx context.Context, domain string) (bool, error) {
	_, _, authenticated, err := r.lookup(ctx, domain, dns.TypeMX)
	return authenticated, err
}

// LookupCNAME returns the name name is an alias of, without the trailing
// dot, or "" when name exists but is no alias. A name that does not exist
// returns ErrNoSuchName.
func (r *Resolver) LookupCNAME(ctx context.Context, name string) (string, error) {
	name = dns.Fqdn(name)
	resp, err := r.query(ctx, name, dns.TypeCNAME)
	if err != nil {
		return "", err
	}
	if resp.Rcode == dns.RcodeNameError {
		return "", nxdomain(name, dns.TypeCNAME)
	}
	for _, rr := range resp.Answer {
		if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) {
			return strings.TrimSuffix(c.Target, "."), nil
		}
	}
	return "", nil
}

// DMARC returns domain's DMARC record: the TXT record at _dmarc.<domain>
// that starts with v=DMARC1, other TXT records there ignored. It returns
// "" when there is none, the name _dmarc.<domain> missing included, which
// DMARC treats alike (RFC 7489, 6.6.3), and ErrMultipleRecords when there
// are several, which leaves the domain without a policy.
func (r *Resolver) DMARC(ctx context.Context, domain string) (string, error) {
	name := "_dmarc." + domain
	records, err := r.LookupTXT(ctx, name)
	return single(name, "DMARC", records, err, isDMARC)
}

// SPF returns domain's SPF record: its TXT record that starts with
// v=spf1, other TXT records ignored. It returns "" when there is none,
// the domain missing included (RFC 7208, 4.3), and ErrMultipleRecords
// when there are several, which SPF evaluates as a permanent error.
func (r *Resolver) SPF(ctx context.Context, domain string) (string, error) {
	records, err := r.LookupTXT(ctx, domain)
	return single(domain, "SPF", records, err, isSPF)
}

// DKIMRecord is what a DKIM selector publishes.
type DKIMRecord struct {
	// CNAME is where the selector points when it delegates its key, as
	// Exchange Online's selectors point into the tenant's onmicrosoft.com
	// zone; "" when the selector holds its TXT record itself.
	CNAME string
	// TXT is the key record, its strings joined; "" when there is none.
	TXT string
}

// DKIM returns the key record at <selector>._domainkey.<domain>, following
// a CNAME. A selector that does not exist, or whose CNAME points to a name
// that does not exist, has no key (RFC 6376, 6.1.2): the record's TXT is
// "" with no error, and CNAME tells the two apart. When the CNAME's target
// cannot be asked about (a server answers REFUSED for a zone it does not
// serve), DKIM returns the record with its CNAME along with the error.
func (r *Resolver) DKIM(ctx context.Context, selector, domain string) (DKIMRecord, error) {
	name := selector + "._domainkey." + domain
	target, records, err := r.txt(ctx, name)
	key, err := single(name, "DKIM", records, err, func(string) bool { return true })
	return DKIMRecord{CNAME: target, TXT: key}, err
}

// single picks the one record of a kind from a lookup's records. A name
// that does not exist has none, as SPF, DMARC and DKIM all have it.
func single(name, kind string, records []string, err error, is func(string) bool) (string, error) {
	if errors.Is(err, ErrNoSuchName) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var found []string
	for _, rec := range records {
		if is(rec) {
			found = append(found, rec)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	default:
		return "", fmt.Errorf("cloud: dns %s: %d %s records: %w", name, len(found), kind, ErrMultipleRecords)
	}
}

// isDMARC reports whether a TXT record is a DMARC record: its first tag
// is v=DMARC1, spaces allowed around the "=" and the value compared
// exactly (RFC 7489, 6.4).
func isDMARC(rec string) bool {
	tag, _, _ := strings.Cut(rec, ";")
	k, v, ok := strings.Cut(tag, "=")
	return ok && strings.EqualFold(strings.TrimSpace(k), "v") && strings.TrimSpace(v) == "DMARC1"
}

// isSPF reports whether a TXT record is an SPF record: it starts with
// v=spf1 followed by a space or nothing (RFC 7208, 4.5).
func isSPF(rec string) bool {
	const version = "v=spf1"
	return len(rec) >= len(version) && strings.EqualFold(rec[:len(version)], version) &&
		(len(rec) == len(version) || rec[len(version)] == ' ')
}

// txt looks up name's TXT records, following its CNAMEs, and returns the
// chain's last target ("" when name is no alias) with the records, each
// record's strings joined.
func (r *Resolver) txt(ctx context.Context, name string) (target string, records []string, err error) {
	target, rrs, _, err := r.lookup(ctx, name, dns.TypeTXT)
	for _, rr := range rrs {
		records = append(records, joinTXT(rr.(*dns.TXT).Txt))
	}
	return target, records, err
}

// lookup asks for name's records of qtype and follows its CNAMEs. A
// recursive server answers with the whole chain; an authoritative one
// stops at a target outside its zones, and lookup asks again for that
// target. It returns the chain's last target ("" when name is no alias)
// with the records, and whether the server authenticated every answer of
// the chain with DNSSEC (their AD bits).
func (r *Resolver) lookup(ctx context.Context, name string, qtype uint16) (target string, rrs []dns.RR, authenticated bool, err error) {
	current := dns.Fqdn(name)
	authenticated = true
	for range maxCNAMEs {
		resp, err := r.query(ctx, current, qtype)
		if err != nil {
			return target, nil, false, err
		}
		authenticated = authenticated && resp.AuthenticatedData
		last, found := chase(resp, current, qtype)
		if last != current {
			target = strings.TrimSuffix(last, ".")
		}
		if resp.Rcode == dns.RcodeNameError {
			return target, nil, false, nxdomain(last, qtype)
		}
		if len(found) > 0 || last == current {
			return target, found, authenticated, nil
		}
		current = last
	}
	return target, nil, false, fmt.Errorf("cloud: dns %s %s: more than %d CNAMEs: %w", dns.TypeToString[qtype], strings.TrimSuffix(name, "."), maxCNAMEs, ErrDNS)
}

// chase follows the CNAMEs in an answer from name, returning the name the
// chain ends at and the answer's records of qtype there.
func chase(resp *dns.Msg, name string, qtype uint16) (string, []dns.RR) {
	last := name
	for range maxCNAMEs {
		next := ""
		for _, rr := range resp.Answer {
			if c, ok := rr.(*dns.CNAME); ok && strings.EqualFold(c.Hdr.Name, last) {
				next = c.Target
				break
			}
		}
		if next == "" {
			break
		}
		last = next
	}
	var rrs []dns.RR
	for _, rr := range resp.Answer {
		if rr.Header().Rrtype == qtype && strings.EqualFold(rr.Header().Name, last) {
			rrs = append(rrs, rr)
		}
	}
	return last, rrs
}

// query asks the servers in turn, each up to r.attempts times, until one
// answers with success or NXDOMAIN; the caller reads the code from the
// answer. Failing servers and failure codes move on to the next server.
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.SetEdns0(ednsSize, false)
	// AD in a query asks a validating resolver to say, in its answer's
	// AD bit, whether it authenticated the answer with DNSSEC (RFC 6840,
	// 5.7), without the signatures that DO would add to every answer.
	q.AuthenticatedData = true
	typ, shown := dns.TypeToString[qtype], strings.TrimSuffix(name, ".")
	var lastErr error
	for range r.attempts {
		for _, server := range r.servers {
			q.Id = dns.Id()
			resp, err := r.exchange(ctx, q, server)
			switch {
			case ctx.Err() != nil:
				return nil, fmt.Errorf("cloud: dns %s %s: %w", typ, shown, ctx.Err())
			case err != nil:
				lastErr = fmt.Errorf("cloud: dns %s %s via %s: %w", typ, shown, server, err)
			case resp.Rcode == dns.RcodeSuccess || resp.Rcode == dns.RcodeNameError:
				return resp, nil
			default:
				lastErr = &DNSError{Name: shown, Type: typ, Rcode: resp.Rcode}
			}
		}
	}
	return nil, lastErr
}

// exchange asks one server over UDP and, when the answer comes truncated,
// once more over TCP, which carries answers of any size.
func (r *Resolver) exchange(ctx context.Context, q *dns.Msg, server string) (*dns.Msg, error) {
	resp, err := r.exchangeOver(ctx, "udp", q, server)
	if err == nil && resp.Truncated {
		resp, err = r.exchangeOver(ctx, "tcp", q, server)
	}
	return resp, err
}

func (r *Resolver) exchangeOver(ctx context.Context, network string, q *dns.Msg, server string) (*dns.Msg, error) {
	c := &dns.Client{Net: network, Timeout: r.timeout}
	conn, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// The library heeds the context's deadline but not its cancellation;
	// closing the connection ends a wait the caller gave up on.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	resp, _, err := c.ExchangeWithConnContext(ctx, q, conn)
	return resp, err
}

func nxdomain(name string, qtype uint16) error {
	return &DNSError{Name: strings.TrimSuffix(name, "."), Type: dns.TypeToString[qtype], Rcode: dns.RcodeNameError}
}

// joinTXT joins a TXT record's strings into its value. The library gives
// them in presentation form, with quotes, backslashes and unprintable
// bytes escaped, so they are unescaped first.
func joinTXT(ss []string) string {
	var b strings.Builder
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				if d := s[i+1:]; len(d) >= 3 && isDigit(d[0]) && isDigit(d[1]) && isDigit(d[2]) {
					c = (d[0]-'0')*100 + (d[1]-'0')*10 + (d[2] - '0')
					i += 3
				} else {
					c = d[0]
					i++
				}
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
