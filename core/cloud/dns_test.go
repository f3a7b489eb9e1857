package cloud

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/miekg/dns"

	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// dnsWorld has what the resolver must tell apart: several TXT records,
// values longer than a TXT string or with bytes DNS escapes, CNAMEs that
// the server chases or leaves to the resolver, missing names, names
// without records and a TXT set too large for UDP.
func dnsWorld() *world.World {
	w := &world.World{Tenants: []world.Tenant{
		{Name: "One", Domains: []string{"example.com"}},
		{Name: "Two", Domains: []string{"other.example", "multi.example"}},
	}}
	add := func(name, typ, value string) {
		w.DNS = append(w.DNS, world.DNSRecord{Name: name, Type: typ, Value: value})
	}
	add("example.com", "TXT", "v=spf1 include:spf.example.net -all")
	add("example.com", "TXT", "v=spf10 is not spf")
	add("example.com", "TXT", "site-verification=abc")
	add("_dmarc.example.com", "TXT", "site-verification=def")
	add("_dmarc.example.com", "TXT", "v=DMARC1; p=reject; rua=mailto:d@example.com")
	add("long.example.com", "TXT", longValue)
	add("selector1._domainkey.example.com", "TXT", "v=DKIM1; k=rsa; p="+longValue)
	add("selector2._domainkey.example.com", "CNAME", "key2.other.example")
	add("key2.other.example", "TXT", "v=DKIM1; p=two")
	add("selector3._domainkey.example.com", "CNAME", "selector3.example.invalid")
	add("selector4._domainkey.example.com", "CNAME", "gone.other.example")
	add("alias.example.com", "CNAME", "long.example.com")
	add("loop.example.com", "CNAME", "loop.example.com")
	add("_dmarc.multi.example", "TXT", "v=DMARC1; p=none")
	add("_dmarc.multi.example", "TXT", "v=DMARC1; p=reject")
	add("multi.example", "TXT", "v=spf1 -all")
	add("multi.example", "TXT", "v=spf1 ~all")
	add("example.com", "MX", "20 backup.example.net")
	add("example.com", "MX", "10 mail.example.com")
	add("example.com", "MX", "20 mail2.example.com")
	add("mail.example.com", "A", "192.0.2.25")
	add("mail.example.com", "A", "192.0.2.26")
	add("mail.example.com", "AAAA", "2001:db8::25")
	add("v6.example.com", "AAAA", "2001:db8::6")
	add("mx.other.example", "CNAME", "example.com")
	add("mail.other.example", "CNAME", "mail.example.com")
	add("multi.example", "MX", "0 .")
	add("209.85.220.41", "PTR", "mail-sor-f41.google.com")
	add("2001:db8::25", "PTR", "mail.example.com.")
	add("1.2.0.192.in-addr.arpa", "PTR", "one.example.net")
	for range 10 {
		add("big.example.com", "TXT", strings.Repeat("x", 200))
	}
	return w
}

// longValue spans three TXT strings and holds the bytes DNS escapes in
// presentation form: a quote, a backslash and an unprintable byte.
var longValue = strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", 18) + `"\` + "\x01"

func startDNS(t *testing.T, w *world.World, logger hclog.Logger) *Resolver {
	t.Helper()
	s, err := simdns.Start(w, "", logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return NewResolver(s.Addr())
}

// rcode is err's DNS response code, or -1 when err is no *DNSError.
func rcode(err error) int {
	var de *DNSError
	if !errors.As(err, &de) {
		return -1
	}
	return de.Rcode
}

func TestLookupTXT(t *testing.T) {
	r := startDNS(t, dnsWorld(), nil)
	ctx := context.Background()
	for name, want := range map[string][]string{
		"_dmarc.example.com":     {"site-verification=def", "v=DMARC1; p=reject; rua=mailto:d@example.com"},
		"example.com":            {"v=spf1 include:spf.example.net -all", "v=spf10 is not spf", "site-verification=abc"},
		"long.example.com":       {longValue},
		"LONG.Example.COM.":      {longValue},
		"alias.example.com":      {longValue},
		"_domainkey.example.com": nil,
	} {
		got, err := r.LookupTXT(ctx, name)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := r.LookupTXT(ctx, "nope.example.com"); !errors.Is(err, ErrNoSuchName) || rcode(err) != dns.RcodeNameError {
		t.Errorf("missing name: %v", err)
	}
	if _, err := r.LookupTXT(ctx, "selector4._domainkey.example.com"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("dangling CNAME: %v", err)
	}
	if _, err := r.LookupTXT(ctx, "example.org"); !errors.Is(err, ErrDNS) || errors.Is(err, ErrNoSuchName) || rcode(err) != dns.RcodeRefused {
		t.Errorf("outside the zones: %v", err)
	}
	if _, err := r.LookupTXT(ctx, "loop.example.com"); !errors.Is(err, ErrDNS) || rcode(err) != dns.RcodeServerFailure {
		t.Errorf("CNAME loop: %v", err)
	}
}

func TestLookupCNAME(t *testing.T) {
	r := startDNS(t, dnsWorld(), nil)
	ctx := context.Background()
	for name, want := range map[string]string{
		"selector2._domainkey.example.com":  "key2.other.example",
		"Selector3._DomainKey.Example.Com.": "selector3.example.invalid",
		"example.com":                       "",
	} {
		if got, err := r.LookupCNAME(ctx, name); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := r.LookupCNAME(ctx, "nope.example.com"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("missing name: %v", err)
	}
}

func TestLookupMX(t *testing.T) {
	r := startDNS(t, dnsWorld(), nil)
	ctx := context.Background()
	for name, want := range map[string][]string{
		"example.com":      {"mail.example.com", "backup.example.net", "mail2.example.com"},
		"mx.other.example": {"mail.example.com", "backup.example.net", "mail2.example.com"},
		"multi.example":    {""}, // null MX
		"other.example":    nil,
	} {
		if got, err := r.LookupMX(ctx, name); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := r.LookupMX(ctx, "nope.example.com"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("missing name: %v", err)
	}
	if _, err := r.LookupMX(ctx, "example.org"); !errors.Is(err, ErrDNS) || rcode(err) != dns.RcodeRefused {
		t.Errorf("outside the zones: %v", err)
	}
	if _, err := r.LookupMX(ctx, "loop.example.com"); !errors.Is(err, ErrDNS) {
		t.Errorf("CNAME loop: %v", err)
	}
}

func TestLookupA(t *testing.T) {
	r := startDNS(t, dnsWorld(), nil)
	ctx := context.Background()
	for name, want := range map[string][]string{
		"mail.example.com":   {"192.0.2.25", "192.0.2.26", "2001:db8::25"},
		"mail.other.example": {"192.0.2.25", "192.0.2.26", "2001:db8::25"},
		"v6.example.com":     {"2001:db8::6"},
		"example.com":        nil,
	} {
		if got, err := r.LookupA(ctx, name); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := r.LookupA(ctx, "nope.example.com"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("missing name: %v", err)
	}
	if _, err := r.LookupA(ctx, "example.org"); !errors.Is(err, ErrDNS) || rcode(err) != dns.RcodeRefused {
		t.Errorf("outside the zones: %v", err)
	}
}

// lockedBuffer collects the server's log, written from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestTruncatedAnswerRetriedOverTCP(t *testing.T) {
	var log lockedBuffer
	r := startDNS(t, dnsWorld(), hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Debug}))
	// The set must not fit the UDP size the resolver offers, or the test
	// proves nothing.
	q := new(dns.Msg)
	q.SetQuestion("big.example.com.", dns.TypeTXT)
	q.SetEdns0(ednsSize, false)
	if m, err := dns.Exchange(q, r.servers[0]); err != nil || !m.Truncated {
		t.Fatalf("UDP answer not truncated: %v", err)
	}
	got, err := r.LookupTXT(context.Background(), "big.example.com")
	if err != nil || len(got) != 10 || got[9] != strings.Repeat("x", 200) {
		t.Fatalf("%d records, %v", len(got), err)
	}
	if !strings.Contains(log.String(), "net=tcp") {
		t.Errorf("no TCP query in the server's log:\n%s", log.String())
	}
}

func TestMailRecords(t *testing.T) {
	r := startDNS(t, dnsWorld(), nil)
	ctx := context.Background()

	t.Run("DMARC", func(t *testing.T) {
		for domain, want := range map[string]string{
			"example.com":   "v=DMARC1; p=reject; rua=mailto:d@example.com",
			"other.example": "", // no _dmarc name
		} {
			if got, err := r.DMARC(ctx, domain); err != nil || got != want {
				t.Errorf("%s: %q, %v; want %q", domain, got, err, want)
			}
		}
		if _, err := r.DMARC(ctx, "multi.example"); !errors.Is(err, ErrMultipleRecords) {
			t.Errorf("two records: %v", err)
		}
		// A refusal is a failure to find out, not a missing record.
		if got, err := r.DMARC(ctx, "nope.example"); rcode(err) != dns.RcodeRefused {
			t.Errorf("outside the zones: %q, %v", got, err)
		}
	})
	t.Run("SPF", func(t *testing.T) {
		if got, err := r.SPF(ctx, "example.com"); err != nil || got != "v=spf1 include:spf.example.net -all" {
			t.Errorf("%q, %v", got, err)
		}
		if got, err := r.SPF(ctx, "other.example"); err != nil || got != "" {
			t.Errorf("no record: %q, %v", got, err)
		}
		if got, err := r.SPF(ctx, "missing.example.com"); err != nil || got != "" {
			t.Errorf("missing domain: %q, %v", got, err)
		}
		if _, err := r.SPF(ctx, "multi.example"); !errors.Is(err, ErrMultipleRecords) {
			t.Errorf("two records: %v", err)
		}
	})
	t.Run("DKIM", func(t *testing.T) {
		for selector, want := range map[string]DKIMRecord{
			"selector1": {TXT: "v=DKIM1; k=rsa; p=" + longValue},
			"selector2": {CNAME: "key2.other.example", TXT: "v=DKIM1; p=two"},
			"selector4": {CNAME: "gone.other.example"},
			"selector9": {},
		} {
			if got, err := r.DKIM(ctx, selector, "example.com"); err != nil || got != want {
				t.Errorf("%s: %+v, %v; want %+v", selector, got, err, want)
			}
		}
		// An authoritative server refuses the target outside its zones;
		// the CNAME is still reported.
		got, err := r.DKIM(ctx, "selector3", "example.com")
		if rcode(err) != dns.RcodeRefused || got != (DKIMRecord{CNAME: "selector3.example.invalid"}) {
			t.Errorf("target outside the zones: %+v, %v", got, err)
		}
	})
}

func TestRecordKinds(t *testing.T) {
	for rec, want := range map[string]bool{
		"v=DMARC1; p=none": true, "v = DMARC1 ;p=reject": true, "V=DMARC1": true, "v=DMARC1": true,
		"v=dmarc1; p=none": false, "v=DMARC10; p=none": false, "p=none; v=DMARC1": false, "": false,
	} {
		if isDMARC(rec) != want {
			t.Errorf("isDMARC(%q) != %v", rec, want)
		}
	}
	for rec, want := range map[string]bool{
		"v=spf1 -all": true, "V=SPF1 ~all": true, "v=spf1": true,
		"v=spf10 -all": false, " v=spf1 -all": false, "spf1": false,
	} {
		if isSPF(rec) != want {
			t.Errorf("isSPF(%q) != %v", rec, want)
		}
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	// A server that never answers.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	r := NewResolver(pc.LocalAddr().String())

	r.timeout = 50 * time.Millisecond
	began := time.Now()
	_, err = r.LookupTXT(context.Background(), "example.com")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v, want a timeout", err)
	}
	if took := time.Since(began); took < time.Duration(dnsAttempts)*r.timeout || took > 5*time.Second {
		t.Errorf("took %v for %d attempts of %v", took, dnsAttempts, r.timeout)
	}

	r.timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	began = time.Now()
	if _, err := r.LookupTXT(ctx, "example.com"); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want the cancellation", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("took %v to notice the cancellation", took)
	}
}

func TestResolverServers(t *testing.T) {
	if got := NewResolver("192.0.2.1").servers; !slices.Equal(got, []string{"192.0.2.1:53"}) {
		t.Errorf("host without port: %q", got)
	}
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("search example.com\nnameserver 192.0.2.1\nnameserver 2001:db8::1\noptions timeout:3 attempts:4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := systemResolver(conf)
	if !slices.Equal(r.servers, []string{"192.0.2.1:53", "[2001:db8::1]:53"}) || r.timeout != 3*time.Second || r.attempts != 4 {
		t.Errorf("from resolv.conf: %q, %v, %d", r.servers, r.timeout, r.attempts)
	}
	r = systemResolver(filepath.Join(t.TempDir(), "missing"))
	if !slices.Equal(r.servers, []string{"127.0.0.1:53", "[::1]:53"}) || r.timeout != dnsTimeout || r.attempts != dnsAttempts {
		t.Errorf("without resolv.conf: %q, %v, %d", r.servers, r.timeout, r.attempts)
	}
}

// TestDemoWorld checks that the demo world's domains read back as its
// records say: DMARC strong, weak or missing, SPF, and DKIM as a TXT
// record, a CNAME or nothing.
func TestDemoWorld(t *testing.T) {
	w := world.Demo(1, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	r := startDNS(t, w, nil)
	ctx := context.Background()
	records := map[string][]world.DNSRecord{}
	for _, rec := range w.DNS {
		records[strings.ToLower(rec.Name)] = append(records[strings.ToLower(rec.Name)], rec)
	}
	var zones []string
	for _, tn := range w.Tenants {
		zones = append(zones, tn.Domains...)
	}
	inZones := func(name string) bool {
		return slices.ContainsFunc(zones, func(z string) bool { return name == z || strings.HasSuffix(name, "."+z) })
	}
	// txtAt is the world's TXT value at name starting with prefix.
	txtAt := func(name, prefix string) string {
		for _, rec := range records[name] {
			if rec.Type == "TXT" && strings.HasPrefix(rec.Value, prefix) {
				return rec.Value
			}
		}
		return ""
	}

	seen := map[string]int{}
	for _, domain := range zones {
		want := txtAt("_dmarc."+domain, "v=DMARC1")
		got, err := r.DMARC(ctx, domain)
		if err != nil || got != want {
			t.Errorf("DMARC %s: %q, %v; want %q", domain, got, err, want)
		}
		seen["DMARC "+dmarcStrength(want)]++

		if got, err := r.SPF(ctx, domain); err != nil || got != txtAt(domain, "v=spf1") {
			t.Errorf("SPF %s: %q, %v; want %q", domain, got, err, txtAt(domain, "v=spf1"))
		}

		for _, selector := range []string{"selector1", "selector2"} {
			name := selector + "._domainkey." + domain
			var want DKIMRecord
			kind := "none"
			wantErr := -1
			if recs := records[name]; len(recs) == 1 {
				kind = strings.ToLower(recs[0].Type)
				switch recs[0].Type {
				case "TXT":
					want.TXT = recs[0].Value
				case "CNAME":
					want.CNAME = recs[0].Value
					if inZones(want.CNAME) {
						want.TXT = txtAt(strings.ToLower(want.CNAME), "")
					} else {
						// The key lies outside the world: the simulator
						// refuses it, as an authoritative server would.
						wantErr = dns.RcodeRefused
					}
				}
			}
			got, err := r.DKIM(ctx, selector, domain)
			if got != want || rcode(err) != wantErr || (wantErr == -1 && err != nil) {
				t.Errorf("DKIM %s: %+v, %v; want %+v", name, got, err, want)
			}
			seen["DKIM "+kind]++
		}
	}
	for _, k := range []string{"DMARC strong", "DMARC weak", "DMARC missing", "DKIM txt", "DKIM cname", "DKIM none"} {
		if seen[k] == 0 {
			t.Errorf("the demo world has no domain with %s; seen %v", k, seen)
		}
	}
}

// dmarcStrength sorts a DMARC record as the demo world's posture does:
// missing, weak (monitoring only, or applied to part of the mail) or
// strong (reject for all mail).
func dmarcStrength(rec string) string {
	if rec == "" {
		return "missing"
	}
	tags := map[string]string{}
	for _, tag := range strings.Split(rec, ";") {
		if k, v, ok := strings.Cut(tag, "="); ok {
			tags[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	switch {
	case tags["p"] == "none" || (tags["pct"] != "" && tags["pct"] != "100"):
		return "weak"
	case tags["p"] == "reject":
		return "strong"
	}
	return "other"
}

// TestDNSSEC: the resolver asks with AD set and reads the AD bit of the
// answers: set for a signed zone, clear for an unsigned one and for a
// chain that leaves the signed zones; a missing domain is NXDOMAIN. A
// server told nothing about the client's interest leaves the bit clear.
func TestDNSSEC(t *testing.T) {
	w := dnsWorld()
	w.DNSSEC = []string{"Example.com."}
	r := startDNS(t, w, nil)
	for name, want := range map[string]bool{
		"example.com":        true,
		"mail.example.com":   true,
		"other.example":      false,
		"mx.other.example":   false,
		"alias.example.com":  true,
		"_dmarc.example.com": true,
	} {
		got, err := r.DNSSEC(t.Context(), name)
		if err != nil || got != want {
			t.Errorf("DNSSEC(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := r.DNSSEC(t.Context(), "missing.example.com"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("DNSSEC of a missing name: %v", err)
	}

	// Without AD or DO in the query, the server does not set AD (RFC
	// 6840, 5.7); with DO alone it does.
	srv, err := simdns.Start(w, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		ad, do, want bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		q := new(dns.Msg)
		q.SetQuestion("example.com.", dns.TypeMX)
		q.AuthenticatedData = tc.ad
		if tc.do {
			q.SetEdns0(ednsSize, true)
		}
		resp, err := dns.Exchange(q, srv.Addr())
		if err != nil || resp.AuthenticatedData != tc.want {
			t.Errorf("AD %v, DO %v: answer AD %v (%v), want %v", tc.ad, tc.do, resp != nil && resp.AuthenticatedData, err, tc.want)
		}
	}

	w.DNSSEC = []string{"unknown.example"}
	if _, err := simdns.Start(w, "", nil); err == nil || !strings.Contains(err.Error(), "dnssec[0]") {
		t.Errorf("a signed zone outside the tenants' domains: %v", err)
	}
}

// TestLookupPTR reads reverse names the world gives by address or by
// name, IPv4 and IPv6; an address without one is NXDOMAIN and a string
// that is no address an error before any query.
func TestLookupPTR(t *testing.T) {
	r := startDNS(t, dnsWorld(), nil)
	ctx := context.Background()
	for ip, want := range map[string]string{"209.85.220.41": "mail-sor-f41.google.com", "2001:db8::25": "mail.example.com", "192.0.2.1": "one.example.net"} {
		if got, err := r.LookupPTR(ctx, ip); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("PTR %s: %v %v, want %s", ip, got, err, want)
		}
	}
	if got, err := r.LookupPTR(ctx, "203.0.113.45"); !errors.Is(err, ErrNoSuchName) || len(got) != 0 {
		t.Errorf("no reverse name: %v %v, want NXDOMAIN", got, err)
	}
	if _, err := r.LookupPTR(ctx, "not-an-ip"); err == nil || rcode(err) != -1 {
		t.Errorf("not an address: %v", err)
	}
}
