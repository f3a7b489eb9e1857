// Package posture checks a domain's e-mail security posture from DNS:
// its DMARC policy (RFC 7489), its SPF record followed through includes
// and redirects (RFC 7208), the DKIM keys of its selectors (RFC 6376,
// RFC 8301, RFC 8463), its MX records (RFC 7505 for the null MX), its
// MTA-STS record and policy (RFC 8461), its TLS reporting record (RFC
// 8460), its BIMI record and whether DNSSEC authenticated its records.
// It parses and evaluates; it does not store or schedule.
//
// # Score
//
// A part's record (and MTA-STS's policy, a selector's key) is left out of
// the JSON when there is none.
//
// Check scores a domain from 0 to 100 in eight parts:
//
//	DMARC, 35   the policy that applies to the domain (its own record's
//	            p, or the organizational domain's sp):
//	            reject 35, quarantine 25, none 10; no record, several
//	            records or a DNS failure 0. A missing or invalid p counts
//	            as none when a valid rua makes receivers fall back to it
//	            (RFC 7489, 6.6.3), and 0 otherwise.
//	            Below pct=100, reject and quarantine earn none's 10 plus
//	            their points above it times pct/100 (reject at pct=50:
//	            22). A subdomain policy weaker than p costs 5.
//	SPF, 20     the all that ends evaluation (the redirect target's when
//	            the record redirects): -all 20, ~all 15, ?all 5, none
//	            (a neutral result) 5, +all 0; no record, several records,
//	            or a permanent error (a syntax error, more than 10
//	            lookups, more than 2 void lookups, a loop, an include
//	            without a record) or a DNS failure 0.
//	DKIM, 20    the best usable key among the selectors checked: RSA of
//	            2048 bits or more, or Ed25519, 20; RSA of 1024 to 2047
//	            bits 12; a key in testing mode (t=y) half of that; no
//	            usable key (absent, revoked, under 1024 bits, unreadable)
//	            0.
//	Reporting   5 for a DMARC aggregate report address (rua), and 5 for
//	and MX, 10  MX records or a null MX, which say where the domain's
//	            mail goes or that it takes none.
//	MTA-STS, 6  (RFC 8461) a valid _mta-sts record and policy file in
//	            mode enforce whose mx match every MX host 6, in mode
//	            testing 3; a max_age under a day costs 1. No record, a
//	            policy that cannot be fetched or is invalid, mode none,
//	            or enforce with MX hosts it does not match, 0.
//	TLS-RPT, 3  (RFC 8460) a valid _smtp._tls record with a report
//	            address 3.
//	DNSSEC, 4   the resolver authenticated the domain's MX answer (the
//	            AD bit) 4.
//	BIMI, 2     a valid default._bimi record with an https SVG logo, which
//	            counts only while DMARC is at enforcement (quarantine or
//	            reject on all mail) 2.
//
// MTA-STS and TLS-RPT protect the mail a domain receives: a domain with a
// null MX takes none and earns their points without them.
//
// The grade follows the score: A from 90, B from 75, C from 60, D from
// 40, F below. A part that could not be looked up scores 0 and sets
// Result.Incomplete: the score is then a lower bound, and the findings
// say which lookup failed. A DNS failure is never reported as a missing
// record.
//
// The MTA-STS policy is fetched over HTTPS (PolicyFetcher) and must
// list every MX host; BIMI is flagged when DMARC is not at enforcement;
// DNSSEC is the resolver's word, to be trusted only from a validating
// resolver on a trusted path.
//
// Weakened compares two checks of a domain and names what weakened: a
// DMARC policy relaxed or removed, an SPF record removed, broken or made
// more permissive, a DKIM key removed, revoked or shortened.
package posture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/stewardhq/steward/core/cloud"
)

// Resolver is what the checks ask; *cloud.Resolver implements it. A name
// that does not exist is an error matching cloud.ErrNoSuchName; DMARC,
// SPF and DKIM return cloud.ErrMultipleRecords for several records and
// "" with no error for none. Any other error is a failure to find out.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]string, error)
	LookupA(ctx context.Context, name string) ([]string, error)
	DMARC(ctx context.Context, domain string) (string, error)
	SPF(ctx context.Context, domain string) (string, error)
	DKIM(ctx context.Context, selector, domain string) (cloud.DKIMRecord, error)
	DNSSEC(ctx context.Context, domain string) (bool, error)
}

var _ Resolver = (*cloud.Resolver)(nil)

// Severities of a problem, most severe first.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	SeverityInfo     = "info"
)

// SeverityRank orders severities: critical 0 to info 4, anything else 5.
func SeverityRank(s string) int {
	switch s {
	case SeverityCritical:
		return 0
	case SeverityHigh:
		return 1
	case SeverityMedium:
		return 2
	case SeverityLow:
		return 3
	case SeverityInfo:
		return 4
	}
	return 5
}

// Problem is one thing wrong with, or worth knowing about, a domain's
// records. Code is stable for programs; Message is for people, and Fix,
// when set, says what to change.
type Problem struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Fix      string `json:"fix,omitempty"`
}

// problems collects a parser's problems.
type problems struct{ list []Problem }

func (ps *problems) add(code, severity, message string) {
	ps.list = append(ps.list, Problem{Code: code, Severity: severity, Message: message})
}

// DefaultSelectors are the DKIM selectors Check looks at when given none:
// Microsoft 365's.
var DefaultSelectors = []string{"selector1", "selector2"}

// DMARCResult is the DMARC part of a check.
type DMARCResult struct {
	// Present is set when the domain publishes a DMARC record of its own,
	// or several (which receivers ignore).
	Present bool `json:"present"`
	// Record is the record that applies to the domain: its own, or the
	// organizational domain's when it has none (RFC 7489, 6.6.3).
	Record *DMARCRecord `json:"record,omitempty"`
	// OrgDomain names the organizational domain when Record is its.
	OrgDomain string    `json:"org_domain"`
	Problems  []Problem `json:"problems"`
	// Error is the DNS failure that left DMARC unknown, "" if none.
	Error string `json:"error"`
}

// Policy is the DMARC policy receivers apply to the domain's mail: the
// record's p, or its sp when the record is the organizational domain's;
// "" when none applies.
func (d DMARCResult) Policy() string {
	switch {
	case d.Record == nil:
		return ""
	case d.OrgDomain != "":
		return d.Record.SubdomainPolicy
	}
	return d.Record.Policy
}

// SPFResult is the SPF part of a check.
type SPFResult struct {
	// Present is set when the domain publishes an SPF record, or several.
	Present    bool          `json:"present"`
	Record     *SPFRecord    `json:"record,omitempty"`
	Evaluation SPFEvaluation `json:"evaluation"`
	// Problems are the record's own; the evaluation's are in Evaluation.
	Problems []Problem `json:"problems"`
	// Error is the DNS failure that left SPF unknown or its evaluation
	// incomplete, "" if none.
	Error string `json:"error"`
}

// DKIMResult is one selector's part of a check.
type DKIMResult struct {
	Selector string `json:"selector"`
	// Key is nil when the lookup failed.
	Key *DKIMKey `json:"key,omitempty"`
	// CNAME is where the selector delegates its key, "" when it holds
	// the record itself.
	CNAME string `json:"cname"`
	// Error is the DNS failure that left the key unknown, "" if none.
	Error string `json:"error"`
}

// MXResult is the MX part of a check.
type MXResult struct {
	// Present is set when the domain has MX records naming mail hosts.
	Present bool `json:"present"`
	// Hosts are the mail hosts, most preferred first.
	Hosts []string `json:"hosts"`
	// Null is set for a null MX (RFC 7505): the domain takes no mail.
	Null     bool      `json:"null"`
	Problems []Problem `json:"problems"`
	// Error is the DNS failure that left MX unknown, "" if none.
	Error string `json:"error"`
}

// Result is one check of a domain's posture.
type Result struct {
	Domain    string       `json:"domain"`
	CheckedAt time.Time    `json:"checked_at"`
	DMARC     DMARCResult  `json:"dmarc"`
	SPF       SPFResult    `json:"spf"`
	DKIM      []DKIMResult `json:"dkim"`
	MX        MXResult     `json:"mx"`
	MTASTS    MTASTSResult `json:"mta_sts"`
	TLSRPT    TLSRPTResult `json:"tls_rpt"`
	BIMI      BIMIResult   `json:"bimi"`
	DNSSEC    DNSSECResult `json:"dnssec"`
	// Score is 0-100 and Grade "A" to "F", as the package documents.
	Score int    `json:"score"`
	Grade string `json:"grade"`
	// Incomplete is set when a DNS failure left part of the posture
	// unknown: Score is then a lower bound.
	Incomplete bool `json:"incomplete"`
	// Findings are the problems of every part, most severe first.
	Findings []Problem `json:"findings"`
}

// Check looks up and assesses domain's posture: DMARC, SPF, the DKIM
// selectors given (DefaultSelectors when none), MX, MTA-STS with its
// policy fetched through p, TLS-RPT, BIMI and DNSSEC. The parts are
// looked up concurrently; a part whose lookup fails carries its Error,
// and the rest are still checked. A nil p fetches no MTA-STS policy, which
// is then reported unavailable.
func Check(ctx context.Context, r Resolver, p PolicyFetcher, domain string, selectors []string) Result {
	domain = normalize(domain)
	res := Result{Domain: domain, CheckedAt: time.Now().UTC()}
	var seen []string
	for _, s := range selectors {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	if len(seen) == 0 {
		seen = DefaultSelectors
	}
	res.DKIM = make([]DKIMResult, len(seen))
	var wg sync.WaitGroup
	wg.Go(func() { res.DMARC = checkDMARC(ctx, r, domain) })
	wg.Go(func() { res.SPF = checkSPF(ctx, r, domain) })
	wg.Go(func() { res.MX = checkMX(ctx, r, domain) })
	wg.Go(func() { res.MTASTS = checkMTASTS(ctx, r, p, domain) })
	wg.Go(func() { res.TLSRPT = checkTLSRPT(ctx, r, domain) })
	wg.Go(func() { res.BIMI = checkBIMI(ctx, r, domain) })
	wg.Go(func() { res.DNSSEC = checkDNSSEC(ctx, r, domain) })
	for i, s := range seen {
		wg.Go(func() { res.DKIM[i] = checkDKIM(ctx, r, s, domain) })
	}
	wg.Wait()
	matchMX(&res.MTASTS, res.MX)
	judgeBIMI(&res.BIMI, res.DMARC)
	res.Incomplete = res.DMARC.Error != "" || res.SPF.Error != "" || res.MX.Error != "" ||
		res.MTASTS.Error != "" || res.TLSRPT.Error != "" || res.BIMI.Error != "" || res.DNSSEC.Error != "" ||
		slices.ContainsFunc(res.DKIM, func(d DKIMResult) bool { return d.Error != "" })
	res.Findings = findings(res)
	res.Score = score(res)
	res.Grade = grade(res.Score)
	return res
}

func checkDMARC(ctx context.Context, r Resolver, domain string) DMARCResult {
	raw, err := r.DMARC(ctx, domain)
	var res DMARCResult
	policyDomain := domain
	switch {
	case errors.Is(err, cloud.ErrMultipleRecords):
		return DMARCResult{Present: true, Problems: []Problem{multipleDMARC(domain)}}
	case err != nil:
		return DMARCResult{Error: failure("the DMARC record", err)}
	case raw != "":
		res.Present = true
	default:
		org := orgDomain(domain)
		if org == domain {
			return DMARCResult{Problems: []Problem{missingDMARC}}
		}
		raw, err = r.DMARC(ctx, org)
		switch {
		case errors.Is(err, cloud.ErrMultipleRecords):
			return DMARCResult{OrgDomain: org, Problems: []Problem{multipleDMARC(org)}}
		case err != nil:
			return DMARCResult{Error: failure("the organizational domain's DMARC record", err)}
		case raw == "":
			return DMARCResult{Problems: []Problem{missingDMARC}}
		}
		res.OrgDomain, policyDomain = org, org
	}
	rec, ps := ParseDMARC(raw)
	res.Record = &rec
	if res.OrgDomain != "" {
		// The organizational domain's record is that domain's to fix; what
		// matters here is how its subdomain policy treats this domain.
		inherited := problems{}
		inherited.add("dmarc_inherited", SeverityInfo, fmt.Sprintf(
			"The domain has no DMARC record of its own: %s's applies, with its subdomain policy %s.", res.OrgDomain, or(rec.SubdomainPolicy, "(none valid)")))
		effective := rec
		effective.Policy = rec.SubdomainPolicy
		weakDMARC(effective, &inherited)
		ps = inherited.list
	}
	res.Problems = append(ps, reportAuthorization(ctx, r, policyDomain, rec)...)
	return res
}

var missingDMARC = Problem{Code: "dmarc_missing", Severity: SeverityCritical,
	Message: "The domain has no DMARC record: receivers have no policy for mail that fails authentication, and nobody is told who sends mail as the domain."}

func multipleDMARC(domain string) Problem {
	return Problem{Code: "dmarc_multiple_records", Severity: SeverityCritical, Message: fmt.Sprintf(
		"%s has more than one DMARC record: receivers ignore them all and apply no policy.", domain)}
}

// reportAuthorization checks that the domains receiving another domain's
// reports agree to (RFC 7489, 7.1): <domain>._report._dmarc.<receiver>
// holds a v=DMARC1 record. Receivers of reports under the same
// organizational domain need no such record. A lookup that fails says
// nothing either way and is left out.
func reportAuthorization(ctx context.Context, r Resolver, domain string, rec DMARCRecord) []Problem {
	const maxDestinations = 4
	org := orgDomain(domain)
	var out []Problem
	var checked []string
	for _, uri := range slices.Concat(rec.RUA, rec.RUF) {
		dest := reportDomain(uri)
		if dest == "" || orgDomain(dest) == org || slices.Contains(checked, dest) || len(checked) == maxDestinations {
			continue
		}
		checked = append(checked, dest)
		records, err := r.LookupTXT(ctx, domain+"._report._dmarc."+dest)
		if err != nil && !errors.Is(err, cloud.ErrNoSuchName) {
			continue
		}
		if !slices.ContainsFunc(records, func(t string) bool { return strings.HasPrefix(strings.TrimSpace(t), "v=DMARC1") }) {
			out = append(out, Problem{Code: "dmarc_report_destination_unauthorized", Severity: SeverityMedium, Message: fmt.Sprintf(
				"Reports go to %s, which has not agreed to receive %s's (no %s._report._dmarc.%s record): receivers will not send them.", dest, domain, domain, dest)})
		}
	}
	return out
}

// reportDomain is the domain of a mailto: report URI, "" when it has none.
func reportDomain(uri string) string {
	if i := strings.LastIndexByte(uri, '!'); i >= 0 {
		uri = uri[:i]
	}
	_, addr, _ := strings.Cut(uri, ":")
	a, err := mail.ParseAddress(addr)
	if err != nil {
		return ""
	}
	_, d, _ := strings.Cut(a.Address, "@")
	return normalize(d)
}

// orgDomain is a domain's organizational domain: its public suffix and
// one label more.
func orgDomain(d string) string {
	if org, err := publicsuffix.EffectiveTLDPlusOne(d); err == nil {
		return org
	}
	return d
}

func checkSPF(ctx context.Context, r Resolver, domain string) SPFResult {
	raw, err := r.SPF(ctx, domain)
	switch {
	case errors.Is(err, cloud.ErrMultipleRecords):
		return SPFResult{Present: true, Problems: []Problem{multipleSPF(domain)}}
	case err != nil:
		return SPFResult{Error: failure("the SPF record", err)}
	case raw == "":
		return SPFResult{Problems: []Problem{{Code: "spf_missing", Severity: SeverityHigh,
			Message: "The domain has no SPF record: receivers cannot tell its mail servers from anyone else's."}}}
	}
	rec, ps := ParseSPF(raw)
	res := SPFResult{Present: true, Record: &rec, Problems: ps}
	res.Evaluation, err = evaluate(ctx, r, domain, rec)
	if err != nil {
		res.Error = failure("the names the SPF record refers to", err)
	}
	return res
}

// permerror reports whether receivers stop SPF with a permanent error:
// the record's own or one met following it.
func (s SPFResult) permerror() bool {
	return s.Record == nil && s.Present || s.Evaluation.Permerror() || slices.ContainsFunc(s.Problems, isPermerror)
}

func checkMX(ctx context.Context, r Resolver, domain string) MXResult {
	hosts, err := r.LookupMX(ctx, domain)
	switch {
	case errors.Is(err, cloud.ErrNoSuchName):
		return MXResult{Problems: []Problem{{Code: "domain_not_found", Severity: SeverityHigh,
			Message: "The domain does not exist in DNS: mail to it bounces, and nothing stops others from sending as it unless its parent's DMARC policy covers it."}}}
	case err != nil:
		return MXResult{Error: failure("the MX records", err)}
	case len(hosts) == 1 && hosts[0] == "":
		return MXResult{Null: true, Problems: []Problem{{Code: "mx_null", Severity: SeverityInfo,
			Message: "The domain has a null MX: it states that it accepts no mail."}}}
	case slices.Contains(hosts, ""):
		return MXResult{Present: true, Hosts: slices.DeleteFunc(hosts, func(h string) bool { return h == "" }), Problems: []Problem{{Code: "mx_null_mixed", Severity: SeverityLow,
			Message: "The domain has a null MX beside other MX records: senders ignore the null MX (RFC 7505 says it must stand alone)."}}}
	case len(hosts) == 0:
		return MXResult{Problems: []Problem{{Code: "mx_missing", Severity: SeverityLow,
			Message: "The domain has no MX records: mail to it goes to its own address, if it has one. A domain that takes no mail should say so with a null MX (RFC 7505)."}}}
	}
	return MXResult{Present: true, Hosts: hosts}
}

func checkDKIM(ctx context.Context, r Resolver, selector, domain string) DKIMResult {
	rec, err := r.DKIM(ctx, selector, domain)
	res := DKIMResult{Selector: selector, CNAME: rec.CNAME}
	switch {
	case errors.Is(err, cloud.ErrMultipleRecords):
		res.Key = &DKIMKey{Selector: selector, Present: true, Problems: []Problem{{Code: "dkim_multiple_records", Severity: SeverityHigh, Message: fmt.Sprintf(
			"Selector %s has more than one key record: receivers may take either, and signatures fail with the wrong one.", selector)}}}
	case err != nil:
		res.Error = failure("the DKIM key of selector "+selector, err)
	default:
		key, _ := ParseDKIMKey(rec.TXT)
		key.Selector = selector
		res.Key = &key
	}
	return res
}

// failure is a DNS failure's text: what could not be looked up and why.
func failure(what string, err error) string {
	return fmt.Sprintf("Looking up %s failed (%v).", what, err)
}

// findings gathers every part's problems, most severe first, DNS
// failures among them.
func findings(res Result) []Problem {
	var out []Problem
	dnsFailure := func(code, part, msg string) {
		out = append(out, Problem{Code: code, Severity: SeverityHigh, Message: msg + " " + part + " is unknown until it resolves, not missing."})
	}
	if res.DMARC.Error != "" {
		dnsFailure("dmarc_dns_failure", "DMARC", res.DMARC.Error)
	}
	out = append(out, res.DMARC.Problems...)
	if res.SPF.Error != "" {
		dnsFailure("spf_dns_failure", "SPF", res.SPF.Error)
	}
	out = append(out, res.SPF.Problems...)
	out = append(out, res.SPF.Evaluation.Problems...)
	out = append(out, dkimFindings(res.DKIM, dnsFailure)...)
	if res.MX.Error != "" {
		dnsFailure("mx_dns_failure", "MX", res.MX.Error)
	}
	out = append(out, res.MX.Problems...)
	out = append(out, deliveryFindings(res, dnsFailure)...)
	slices.SortStableFunc(out, func(a, b Problem) int { return cmp.Compare(SeverityRank(a.Severity), SeverityRank(b.Severity)) })
	return out
}

func dkimFindings(results []DKIMResult, dnsFailure func(code, part, msg string)) []Problem {
	var out []Problem
	var absent, usable []string
	failed := false
	for _, d := range results {
		switch {
		case d.Error != "":
			failed = true
			dnsFailure("dkim_dns_failure", "The key of selector "+d.Selector, d.Error)
		case !d.Key.Present:
			absent = append(absent, d.Selector)
		default:
			if d.Key.Usable() {
				usable = append(usable, d.Selector)
			}
			for _, p := range d.Key.Problems {
				p.Message = fmt.Sprintf("Selector %s: %s", d.Selector, p.Message)
				out = append(out, p)
			}
		}
	}
	switch {
	case len(usable) == 0 && !failed:
		names := make([]string, 0, len(results))
		for _, d := range results {
			names = append(names, d.Selector)
		}
		out = append(out, Problem{Code: "dkim_missing", Severity: SeverityHigh, Message: fmt.Sprintf(
			"No usable DKIM key at the selectors %s: receivers cannot verify the domain's signatures, so DMARC rests on SPF alone, which forwarding breaks.", strings.Join(names, ", "))})
	case len(usable) > 0:
		for _, s := range absent {
			out = append(out, Problem{Code: "dkim_selector_missing", Severity: SeverityInfo, Message: fmt.Sprintf("Selector %s publishes no DKIM key; %s does.", s, strings.Join(usable, ", "))})
		}
	}
	return out
}

// Points of each part, as the package documents.
var (
	dmarcPoints = map[string]int{"reject": 35, "quarantine": 25, "none": 10}
	spfPoints   = map[string]int{"-": 20, "~": 15, "?": 5, "": 5, "+": 0}
)

// Points of the delivery parts, as the package documents.
const (
	mtaSTSPoints  = 6
	tlsRPTPoints  = 3
	dnssecPoints  = 4
	bimiPoints    = 2
	dkimBest      = 20
	dkimShortKeys = 12
)

func score(res Result) int {
	total := 0
	if d := res.DMARC; d.Record != nil {
		policy := d.Policy()
		pts := dmarcPoints[policy]
		if pts > dmarcPoints["none"] {
			pts = dmarcPoints["none"] + (pts-dmarcPoints["none"])*d.Record.Percent/100
		}
		if d.OrgDomain == "" && policyRank[d.Record.SubdomainPolicy] < policyRank[policy] {
			pts = max(pts-5, 0)
		}
		total += pts
		if len(d.Record.RUA) > 0 {
			total += 5
		}
	}
	if s := res.SPF; s.Record != nil && s.Error == "" && !s.permerror() {
		total += spfPoints[s.Evaluation.All]
	}
	best := 0
	for _, d := range res.DKIM {
		if d.Key == nil || !d.Key.Usable() {
			continue
		}
		pts := 0
		switch {
		case d.Key.KeyType == "ed25519" || d.Key.Bits >= dkimGoodBits:
			pts = dkimBest
		case d.Key.Bits >= dkimMinBits:
			pts = dkimShortKeys
		}
		if d.Key.Testing {
			pts /= 2
		}
		best = max(best, pts)
	}
	total += best
	if res.MX.Present || res.MX.Null {
		total += 5
	}
	return total + deliveryScore(res)
}

// deliveryScore is the points of MTA-STS, TLS-RPT, DNSSEC and BIMI.
func deliveryScore(res Result) int {
	total := 0
	switch m := res.MTASTS; {
	case res.MX.Null:
		total += mtaSTSPoints
	case m.Error != "" || m.Policy == nil || hasSeverityAtLeast(m.Problems, SeverityHigh):
	case m.Policy.Mode == "enforce" || m.Policy.Mode == "testing":
		pts := mtaSTSPoints
		if m.Policy.Mode == "testing" {
			pts /= 2
		}
		if m.Policy.MaxAge < stsShortAge {
			pts--
		}
		total += pts
	}
	if t := res.TLSRPT; res.MX.Null || t.Record != nil && len(t.Record.RUA) > 0 && !hasSeverityAtLeast(t.Problems, SeverityMedium) {
		total += tlsRPTPoints
	}
	if res.DNSSEC.Validated {
		total += dnssecPoints
	}
	if res.BIMI.Effective {
		total += bimiPoints
	}
	return total
}

func grade(score int) string {
	switch {
	case score >= 90:
		return "A"
	case score >= 75:
		return "B"
	case score >= 60:
		return "C"
	case score >= 40:
		return "D"
	}
	return "F"
}

func sortChanges(cs []Change) {
	slices.SortStableFunc(cs, func(a, b Change) int { return cmp.Compare(SeverityRank(a.Severity), SeverityRank(b.Severity)) })
}
