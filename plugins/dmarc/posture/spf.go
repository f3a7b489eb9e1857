package posture

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/core/cloud"
)

// SPF's limits (RFC 7208, 4.6.4).
const (
	// spfLookupLimit is how many DNS-querying terms one evaluation may
	// use, includes and redirects followed.
	spfLookupLimit = 10
	// spfVoidLimit is how many of those may find nothing.
	spfVoidLimit = 2
	// spfMXLimit is how many hosts an mx mechanism may look up.
	spfMXLimit = 10
	// spfWalkLimit stops EvaluateSPF asking names once more lookups than
	// this are counted, far past the limit, so a tree of includes cannot
	// make it ask thousands of names.
	spfWalkLimit = 50
)

// SPFTerm is one mechanism or modifier of an SPF record.
type SPFTerm struct {
	// Qualifier is a mechanism's "+", "-", "~" or "?" ("+" when the
	// record writes none); "" for a modifier.
	Qualifier string `json:"qualifier"`
	// Mechanism is the mechanism's or modifier's name, lower case.
	Mechanism string `json:"mechanism"`
	// Value is what follows the ":" or "=", CIDR lengths included.
	Value string `json:"value"`
	// Modifier is set for name=value terms: redirect, exp and unknown.
	Modifier bool `json:"modifier"`
}

// SPFRecord is a parsed SPF record (RFC 7208, 4.6).
type SPFRecord struct {
	Raw   string    `json:"raw"`
	Terms []SPFTerm `json:"terms"`
	// All is the qualifier of the record's all mechanism, "" when it has
	// none.
	All string `json:"all"`
	// Redirect is the redirect modifier's domain, "" when there is none.
	// It is ignored when the record has an all mechanism (RFC 7208, 6.1).
	Redirect string `json:"redirect"`
	// Exp is the exp modifier's domain, "" when there is none.
	Exp string `json:"exp"`
}

// lookupTerms are the terms that make DNS queries and count against the
// limit of ten (RFC 7208, 4.6.4).
var lookupTerms = map[string]bool{"include": true, "a": true, "mx": true, "ptr": true, "exists": true, "redirect": true}

// ParseSPF parses an SPF record (RFC 7208, 4.6, 5 and 6). Problems that
// make receivers treat the record as a permanent error say so.
func ParseSPF(record string) (SPFRecord, []Problem) {
	rec := SPFRecord{Raw: record}
	var ps problems
	fields := strings.Fields(record)
	if len(fields) == 0 || !strings.EqualFold(fields[0], "v=spf1") {
		ps.add("spf_version", SeverityCritical, "The SPF record does not start with v=spf1: receivers ignore it.")
		if len(fields) > 0 && strings.HasPrefix(strings.ToLower(fields[0]), "v=") {
			fields = fields[1:]
		}
	} else {
		fields = fields[1:]
	}
	afterAll := false
	for _, f := range fields {
		term, problem := parseSPFTerm(f)
		if problem != "" {
			ps.add("spf_syntax", SeverityCritical, fmt.Sprintf("The SPF term %q %s: receivers treat the record as an error (permerror) and SPF fails for all mail.", f, problem))
			continue
		}
		rec.Terms = append(rec.Terms, term)
		switch {
		case term.Modifier && (term.Mechanism == "redirect" || term.Mechanism == "exp"):
			dst := &rec.Redirect
			if term.Mechanism == "exp" {
				dst = &rec.Exp
			}
			if *dst != "" {
				ps.add("spf_duplicate_modifier", SeverityCritical, fmt.Sprintf("The SPF record has %s= more than once: receivers treat it as an error (permerror).", term.Mechanism))
				continue
			}
			*dst = term.Value
		case term.Modifier:
			ps.add("spf_unknown_modifier", SeverityInfo, fmt.Sprintf("The SPF record has a modifier %s= that SPF does not define; receivers ignore it.", term.Mechanism))
		case afterAll:
			ps.add("spf_after_all", SeverityLow, fmt.Sprintf("The SPF term %q comes after all and is never reached.", f))
		case term.Mechanism == "all":
			rec.All = term.Qualifier
			afterAll = true
		case term.Mechanism == "ptr":
			ps.add("spf_ptr", SeverityMedium, "The SPF record uses ptr, which is slow and unreliable: RFC 7208 says not to use it, and some receivers skip it.")
		}
	}
	if rec.All != "" && rec.Redirect != "" {
		ps.add("spf_redirect_ignored", SeverityLow, fmt.Sprintf("The SPF record has both all and redirect=%s: receivers ignore the redirect.", rec.Redirect))
	}
	if rec.All == "" && rec.Redirect == "" {
		ps.add("spf_no_all", SeverityMedium, "The SPF record ends without an all mechanism or redirect: mail from servers it does not list gets a neutral result, which receivers do not act on.")
	}
	ps.list = append(ps.list, allProblem(rec.All)...)
	return rec, ps.list
}

// allProblem is the finding about an all mechanism's qualifier.
func allProblem(q string) []Problem {
	switch q {
	case "+":
		return []Problem{{Code: "spf_pass_all", Severity: SeverityCritical, Message: "SPF ends with +all: every server on the internet may send mail as the domain."}}
	case "?":
		return []Problem{{Code: "spf_neutral_all", Severity: SeverityMedium, Message: "SPF ends with ?all: receivers get no verdict on mail from servers the record does not list."}}
	case "~":
		return []Problem{{Code: "spf_softfail_all", Severity: SeverityLow, Message: "SPF ends with ~all: mail from servers the record does not list is marked suspicious but not rejected."}}
	}
	return nil
}

// parseSPFTerm parses one directive or modifier, saying what is wrong
// with it when it is invalid.
func parseSPFTerm(f string) (SPFTerm, string) {
	// A modifier's name cannot hold ":" or "/", so an "=" before either
	// marks a modifier.
	if i := strings.IndexByte(f, '='); i > 0 && !strings.ContainsAny(f[:i], ":/") {
		name, value := strings.ToLower(f[:i]), f[i+1:]
		if !isModifierName(name) {
			return SPFTerm{}, "is not a valid modifier"
		}
		t := SPFTerm{Mechanism: name, Value: value, Modifier: true}
		if name == "redirect" || name == "exp" {
			if msg := checkDomainSpec(value); msg != "" {
				return SPFTerm{}, msg
			}
		} else if msg := checkMacroString(value); msg != "" {
			return SPFTerm{}, msg
		}
		return t, ""
	}
	t := SPFTerm{Qualifier: "+"}
	if f != "" && strings.ContainsRune("+-~?", rune(f[0])) {
		t.Qualifier, f = f[:1], f[1:]
	}
	name, rest := f, ""
	if i := strings.IndexAny(f, ":/"); i >= 0 {
		name, rest = f[:i], f[i:]
	}
	t.Mechanism = strings.ToLower(name)
	switch t.Mechanism {
	case "all":
		if rest != "" {
			return SPFTerm{}, "has a value, which all does not take"
		}
	case "include", "exists":
		if !strings.HasPrefix(rest, ":") {
			return SPFTerm{}, "needs a domain after \":\""
		}
		t.Value = rest[1:]
		if msg := checkDomainSpec(t.Value); msg != "" {
			return SPFTerm{}, msg
		}
	case "ptr":
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return SPFTerm{}, "takes no CIDR length"
			}
			t.Value = rest[1:]
			if msg := checkDomainSpec(t.Value); msg != "" {
				return SPFTerm{}, msg
			}
		}
	case "a", "mx":
		t.Value = strings.TrimPrefix(rest, ":")
		domain, cidr := splitDualCIDR(t.Value)
		if strings.HasPrefix(rest, ":") || domain != "" {
			if msg := checkDomainSpec(domain); msg != "" {
				return SPFTerm{}, msg
			}
		}
		if msg := checkDualCIDR(cidr); msg != "" {
			return SPFTerm{}, msg
		}
	case "ip4", "ip6":
		if !strings.HasPrefix(rest, ":") {
			return SPFTerm{}, "needs an address after \":\""
		}
		t.Value = rest[1:]
		if msg := checkNetwork(t.Mechanism, t.Value); msg != "" {
			return SPFTerm{}, msg
		}
	default:
		return SPFTerm{}, "is not an SPF mechanism"
	}
	return t, ""
}

// splitDualCIDR splits an a or mx value into its domain and its
// "/n" or "//n" or "/n//m" CIDR lengths.
func splitDualCIDR(v string) (domain, cidr string) {
	if i := strings.IndexByte(v, '/'); i >= 0 {
		return v[:i], v[i:]
	}
	return v, ""
}

// checkDualCIDR checks a dual-cidr-length: "", "/n" (IPv4, 0-32),
// "//m" (IPv6, 0-128) or "/n//m".
func checkDualCIDR(c string) string {
	if c == "" {
		return ""
	}
	v4, v6, hasV6 := strings.Cut(c, "//")
	if v4 != "" && !cidrLength(strings.TrimPrefix(v4, "/"), 32) || !strings.HasPrefix(c, "/") || v4 == "/" {
		return "has an IPv4 prefix length that is not 0-32"
	}
	if hasV6 && !cidrLength(v6, 128) {
		return "has an IPv6 prefix length that is not 0-128"
	}
	return ""
}

func cidrLength(s string, max int) bool {
	n, err := strconv.Atoi(s)
	// No leading zeros: ip4-cidr-length = "/" ("0" / %x31-39 0*1DIGIT).
	return err == nil && n >= 0 && n <= max && s == strconv.Itoa(n)
}

// checkNetwork checks an ip4 or ip6 value: an address of the mechanism's
// family with an optional prefix length.
func checkNetwork(mech, v string) string {
	addr, length, hasLength := strings.Cut(v, "/")
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		return "has no valid IP address"
	}
	if mech == "ip4" && !ip.Is4() || mech == "ip6" && !ip.Is6() {
		return "has an address of the other IP version"
	}
	if hasLength && !cidrLength(length, ip.BitLen()) {
		return fmt.Sprintf("has a prefix length that is not 0-%d", ip.BitLen())
	}
	return ""
}

// checkDomainSpec checks a domain-spec: a macro-string that, unless it
// ends in a macro, ends in a top label of letters, digits and hyphens
// that is not all digits (RFC 7208, 7.1).
func checkDomainSpec(v string) string {
	if v == "" {
		return "has an empty domain"
	}
	if msg := checkMacroString(v); msg != "" {
		return msg
	}
	if strings.HasSuffix(v, "}") {
		return ""
	}
	labels := strings.Split(strings.TrimSuffix(v, "."), ".")
	top := labels[len(labels)-1]
	if len(labels) < 2 || top == "" || strings.Contains(top, "%") {
		return "has no valid domain name"
	}
	digits := true
	for i := 0; i < len(top); i++ {
		c := top[i]
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alpha && !(c >= '0' && c <= '9') && c != '-' {
			return "has no valid domain name"
		}
		digits = digits && !alpha && c != '-'
	}
	if digits || top[0] == '-' || top[len(top)-1] == '-' {
		return "has no valid domain name"
	}
	return ""
}

// checkMacroString checks the macros of a macro-string: "%{" letter
// digits ["r"] delimiters "}", "%%", "%_" or "%-"; everything else must
// be visible ASCII.
func checkMacroString(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x21 || c > 0x7e {
			return "has a character that is not visible ASCII"
		}
		if c != '%' {
			continue
		}
		if i+1 >= len(v) {
			return "ends with a lone %"
		}
		i++
		switch v[i] {
		case '%', '_', '-':
			continue
		case '{':
		default:
			return "has a % that starts no macro"
		}
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return "has an unclosed macro"
		}
		body := strings.ToLower(v[i+1 : i+end])
		i += end
		if body == "" || !strings.ContainsRune("slodiphcrtv", rune(body[0])) {
			return "has a macro with an unknown letter"
		}
		body = strings.TrimLeft(body[1:], "0123456789")
		body = strings.TrimPrefix(body, "r")
		if strings.Trim(body, ".-+,/_=") != "" {
			return "has a macro with invalid delimiters"
		}
	}
	return ""
}

func isModifierName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// hasMacro reports whether a domain-spec needs the sender's details to
// expand, which a posture check does not have.
func hasMacro(v string) bool { return strings.Contains(v, "%{") }

// SPFEvaluation is what following an SPF record through its includes
// and redirects found (RFC 7208, 4.6.4). It looks at every term rather
// than stopping at the first match, as a receiver evaluating mail from
// an unlisted server must.
type SPFEvaluation struct {
	// Lookups counts the DNS-querying terms (include, a, mx, ptr, exists,
	// redirect) across all records followed; receivers allow 10. Past 50
	// the walk asks no more names, and the count is a lower bound.
	Lookups int `json:"lookups"`
	// VoidLookups counts those that found nothing (no such name, or no
	// records); receivers allow 2.
	VoidLookups int `json:"void_lookups"`
	// Includes are the domains included or redirected to, in the order
	// first reached.
	Includes []string `json:"includes"`
	// Loop is set when an include or redirect chain comes back to a
	// domain already on it.
	Loop bool `json:"loop"`
	// OverLimit is set when Lookups is over 10.
	OverLimit bool `json:"over_limit"`
	// VoidOverLimit is set when VoidLookups is over 2.
	VoidOverLimit bool `json:"void_over_limit"`
	// All is the qualifier that ends evaluation for mail from servers the
	// records do not list: the all of the record a redirect chain ends
	// at, "" when that record has none (a neutral result).
	All string `json:"all"`
	// Problems are those of the records reached through includes and
	// redirects, and of the limits; the domain's own record's are
	// ParseSPF's.
	Problems []Problem `json:"problems"`
}

// Permerror reports whether receivers evaluating the records stop with a
// permanent error, failing SPF for all mail.
func (e SPFEvaluation) Permerror() bool {
	return e.OverLimit || e.VoidOverLimit || e.Loop || slices.ContainsFunc(e.Problems, isPermerror)
}

// EvaluateSPF follows domain's SPF record through its includes and
// redirects, counting DNS lookups and void lookups against their limits
// (RFC 7208, 4.6.4) and detecting loops. A DNS failure on the way is
// returned along with what was counted until then: the count is then a
// lower bound. A domain without an SPF record evaluates to nothing.
func EvaluateSPF(ctx context.Context, r Resolver, domain string) (SPFEvaluation, error) {
	rec, err := r.SPF(ctx, domain)
	if errors.Is(err, cloud.ErrMultipleRecords) {
		return SPFEvaluation{Problems: []Problem{multipleSPF(domain)}}, nil
	}
	if err != nil || rec == "" {
		return SPFEvaluation{}, err
	}
	parsed, _ := ParseSPF(rec)
	return evaluate(ctx, r, domain, parsed)
}

// evaluate follows a domain's parsed SPF record.
func evaluate(ctx context.Context, r Resolver, domain string, rec SPFRecord) (SPFEvaluation, error) {
	w := &spfWalk{r: r, cache: map[string]spfFetch{}}
	w.record(ctx, normalize(domain), rec, []string{normalize(domain)}, true)
	if w.ev.Lookups > spfLookupLimit {
		w.ev.OverLimit = true
		w.ev.Problems = append(w.ev.Problems, Problem{Code: "spf_over_limit", Severity: SeverityCritical, Message: fmt.Sprintf(
			"SPF needs %s DNS lookups, more than the %d receivers allow: they treat the record as an error (permerror) and SPF fails for all mail.", lookupCount(w.ev.Lookups), spfLookupLimit)})
	}
	if w.ev.VoidLookups > spfVoidLimit {
		w.ev.VoidOverLimit = true
		w.ev.Problems = append(w.ev.Problems, Problem{Code: "spf_void_lookups", Severity: SeverityHigh, Message: fmt.Sprintf(
			"SPF has %d lookups that find nothing, more than the %d receivers allow: they may treat the record as an error (permerror).", w.ev.VoidLookups, spfVoidLimit)})
	}
	return w.ev, w.err
}

func lookupCount(n int) string {
	if n > spfWalkLimit {
		return fmt.Sprintf("at least %d", n)
	}
	return strconv.Itoa(n)
}

func multipleSPF(domain string) Problem {
	return Problem{Code: "spf_multiple_records", Severity: SeverityCritical, Message: fmt.Sprintf("%s has more than one SPF record: receivers treat that as an error (permerror) and SPF fails for all mail.", domain)}
}

// isPermerror reports whether a problem makes receivers stop SPF with a
// permanent error.
func isPermerror(p Problem) bool {
	switch p.Code {
	case "spf_syntax", "spf_duplicate_modifier", "spf_multiple_records", "spf_include_missing", "spf_redirect_missing", "spf_mx_too_many", "spf_loop":
		return true
	}
	return false
}

// spfFetch is one lookup of a domain's SPF record: the record, whether
// the lookup found nothing at all, and its error.
type spfFetch struct {
	record string
	void   bool
	err    error
}

// spfWalk is one evaluation's state.
type spfWalk struct {
	r     Resolver
	ev    SPFEvaluation
	err   error
	cache map[string]spfFetch
}

// record counts one record's terms, following includes and its redirect.
// path holds the domains from the evaluated one down to this one; top
// says whether the record is the one whose all ends evaluation.
func (w *spfWalk) record(ctx context.Context, domain string, rec SPFRecord, path []string, top bool) {
	for _, t := range rec.Terms {
		if t.Mechanism == "all" {
			break
		}
		if !lookupTerms[t.Mechanism] || t.Mechanism == "redirect" {
			continue
		}
		w.ev.Lookups++
		switch t.Mechanism {
		case "include":
			w.follow(ctx, domain, t.Value, path, "include", false)
		case "a":
			target, _ := splitDualCIDR(t.Value)
			w.addresses(ctx, or(target, domain))
		case "exists":
			w.addresses(ctx, t.Value)
		case "mx":
			target, _ := splitDualCIDR(t.Value)
			w.mx(ctx, or(target, domain))
		}
	}
	if top {
		w.ev.All = rec.All
	}
	if rec.Redirect != "" && rec.All == "" {
		w.ev.Lookups++
		w.follow(ctx, domain, rec.Redirect, path, "redirect", top)
	}
}

// follow evaluates the record an include or redirect names. A redirect
// from the top record (or from a record it redirected to) makes its
// target the top record: its all ends evaluation and its weaknesses are
// the domain's.
func (w *spfWalk) follow(ctx context.Context, from, target string, path []string, kind string, top bool) {
	missing := "spf_" + kind + "_missing"
	if hasMacro(target) || w.exhausted(ctx) {
		return
	}
	target = normalize(target)
	if !slices.Contains(w.ev.Includes, target) {
		w.ev.Includes = append(w.ev.Includes, target)
	}
	if slices.Contains(path, target) {
		if !w.ev.Loop {
			w.ev.Problems = append(w.ev.Problems, Problem{Code: "spf_loop", Severity: SeverityCritical, Message: fmt.Sprintf(
				"SPF loops: %s %s %s, which is already on the chain %s; receivers stop with an error (permerror).", from, verb(kind), target, strings.Join(path, " -> "))})
		}
		w.ev.Loop = true
		return
	}
	f := w.fetch(ctx, target)
	switch {
	case errors.Is(f.err, cloud.ErrMultipleRecords):
		w.ev.Problems = append(w.ev.Problems, multipleSPF(target))
		return
	case f.err != nil:
		w.fail(fmt.Errorf("SPF %s %s: %w", kind, target, f.err))
		return
	case f.record == "":
		if f.void {
			w.ev.VoidLookups++
		}
		w.ev.Problems = append(w.ev.Problems, Problem{Code: missing, Severity: SeverityCritical, Message: fmt.Sprintf(
			"%s %s %s, which has no SPF record: receivers treat that as an error (permerror) and SPF fails for all mail.", from, verb(kind), target)})
		return
	}
	parsed, problems := ParseSPF(f.record)
	for _, p := range problems {
		// The included record's own all and weaknesses do not end the
		// evaluation; its errors do.
		if isPermerror(p) || top {
			p.Message = fmt.Sprintf("In the SPF record of %s, which %s %s: %s", target, from, verb(kind), p.Message)
			w.ev.Problems = append(w.ev.Problems, p)
		}
	}
	w.record(ctx, target, parsed, append(slices.Clip(path), target), top)
}

func verb(kind string) string {
	if kind == "redirect" {
		return "redirects to"
	}
	return "includes"
}

// fetch looks up a domain's SPF record once per evaluation: a record
// included from several places is counted each time but asked once.
func (w *spfWalk) fetch(ctx context.Context, domain string) spfFetch {
	if f, ok := w.cache[domain]; ok {
		return f
	}
	var f spfFetch
	records, err := w.r.LookupTXT(ctx, domain)
	switch {
	case errors.Is(err, cloud.ErrNoSuchName):
		f.void = true
	case err != nil:
		f.err = err
	default:
		f.void = len(records) == 0
		var found []string
		for _, rec := range records {
			if isSPFRecord(rec) {
				found = append(found, rec)
			}
		}
		if len(found) > 1 {
			f.err = fmt.Errorf("%s: %w", domain, cloud.ErrMultipleRecords)
		} else if len(found) == 1 {
			f.record = found[0]
		}
	}
	w.cache[domain] = f
	return f
}

// addresses looks up a name an a or exists mechanism asks about.
func (w *spfWalk) addresses(ctx context.Context, name string) {
	if hasMacro(name) || w.exhausted(ctx) {
		return
	}
	addrs, err := w.r.LookupA(ctx, name)
	switch {
	case errors.Is(err, cloud.ErrNoSuchName) || err == nil && len(addrs) == 0:
		w.ev.VoidLookups++
	case err != nil:
		w.fail(fmt.Errorf("SPF a %s: %w", name, err))
	}
}

// mx looks up the mail hosts an mx mechanism names and their addresses.
func (w *spfWalk) mx(ctx context.Context, name string) {
	if hasMacro(name) || w.exhausted(ctx) {
		return
	}
	hosts, err := w.r.LookupMX(ctx, name)
	switch {
	case errors.Is(err, cloud.ErrNoSuchName) || err == nil && len(hosts) == 0:
		w.ev.VoidLookups++
		return
	case err != nil:
		w.fail(fmt.Errorf("SPF mx %s: %w", name, err))
		return
	}
	if len(hosts) > spfMXLimit {
		w.ev.Problems = append(w.ev.Problems, Problem{Code: "spf_mx_too_many", Severity: SeverityCritical, Message: fmt.Sprintf(
			"SPF's mx for %s names %d mail hosts, more than the %d receivers look up: they treat the record as an error (permerror).", name, len(hosts), spfMXLimit)})
		return
	}
	for _, h := range hosts {
		if h == "" {
			continue // a null MX has no host to look up
		}
		addrs, err := w.r.LookupA(ctx, h)
		switch {
		case errors.Is(err, cloud.ErrNoSuchName) || err == nil && len(addrs) == 0:
			w.ev.Problems = append(w.ev.Problems, Problem{Code: "spf_mx_host_without_address", Severity: SeverityLow, Message: fmt.Sprintf(
				"SPF's mx for %s names the mail host %s, which has no address.", name, h)})
		case err != nil:
			w.fail(fmt.Errorf("SPF mx %s host %s: %w", name, h, err))
		}
	}
}

// exhausted reports whether the walk should ask no more: past the
// walk's limit, or the context done, which fails the evaluation.
func (w *spfWalk) exhausted(ctx context.Context) bool {
	if err := ctx.Err(); err != nil {
		w.fail(err)
		return true
	}
	return w.ev.Lookups > spfWalkLimit
}

// fail keeps the evaluation's first DNS failure.
func (w *spfWalk) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// isSPFRecord reports whether a TXT record is an SPF record: v=spf1
// followed by a space or nothing (RFC 7208, 4.5).
func isSPFRecord(rec string) bool {
	const version = "v=spf1"
	return len(rec) >= len(version) && strings.EqualFold(rec[:len(version)], version) &&
		(len(rec) == len(version) || rec[len(version)] == ' ')
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// normalize is a domain lower-case without its trailing dot.
func normalize(d string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
}
