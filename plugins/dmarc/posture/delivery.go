package posture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stewardhq/steward/core/cloud"
)

// PolicyFetcher fetches a domain's MTA-STS policy file;
// *cloud.PolicyClient implements it.
type PolicyFetcher interface {
	MTASTSPolicy(ctx context.Context, domain string) (string, error)
}

var _ PolicyFetcher = (*cloud.PolicyClient)(nil)

// MTASTSResult is the MTA-STS part of a check (RFC 8461).
type MTASTSResult struct {
	// Present is set when the domain publishes an _mta-sts record, or
	// several.
	Present bool          `json:"present"`
	Record  *MTASTSRecord `json:"record,omitempty"`
	// Policy is the policy file as fetched and read; nil when there is no
	// valid record or it could not be fetched.
	Policy *MTASTSPolicy `json:"policy,omitempty"`
	// PolicyError is why the policy could not be fetched, "" if it was.
	PolicyError string `json:"policy_error"`
	// UnmatchedMX are the domain's MX hosts no mx of the policy matches.
	UnmatchedMX []string  `json:"unmatched_mx"`
	Problems    []Problem `json:"problems"`
	// Error is the DNS failure that left MTA-STS unknown, "" if none.
	Error string `json:"error"`
}

// Enforced reports whether senders that support MTA-STS refuse to deliver
// the domain's mail but over TLS to its MX hosts: a valid policy in mode
// enforce that matches every MX host.
func (m MTASTSResult) Enforced() bool {
	return m.Policy != nil && m.Policy.Mode == "enforce" && len(m.UnmatchedMX) == 0 && !hasSeverityAtLeast(m.Problems, SeverityHigh)
}

// TLSRPTResult is the TLS reporting part of a check (RFC 8460).
type TLSRPTResult struct {
	// Present is set when the domain publishes an _smtp._tls record, or
	// several.
	Present  bool          `json:"present"`
	Record   *TLSRPTRecord `json:"record,omitempty"`
	Problems []Problem     `json:"problems"`
	// Error is the DNS failure that left TLS-RPT unknown, "" if none.
	Error string `json:"error"`
}

// BIMIResult is the brand indicator part of a check: the record at
// default._bimi.<domain>.
type BIMIResult struct {
	// Present is set when the domain publishes a BIMI record, or several.
	Present bool        `json:"present"`
	Record  *BIMIRecord `json:"record,omitempty"`
	// Effective is set when mailbox providers can show the logo as far as
	// DNS says: a valid record with a logo, and DMARC at enforcement.
	Effective bool      `json:"effective"`
	Problems  []Problem `json:"problems"`
	// Error is the DNS failure that left BIMI unknown, "" if none.
	Error string `json:"error"`
}

// DNSSECResult is whether the resolver authenticated the domain's records
// with DNSSEC (the AD bit of its answer for the domain's MX records).
type DNSSECResult struct {
	Validated bool `json:"validated"`
	// Error is the DNS failure that left DNSSEC unknown, "" if none.
	Error string `json:"error"`
}

// txtRecord is the one TXT record at name that starts with prefix, ""
// when there is none (the name missing included), and
// cloud.ErrMultipleRecords when there are several, which MTA-STS, TLS-RPT
// and BIMI all read as none published.
func txtRecord(ctx context.Context, r Resolver, name, prefix string) (string, error) {
	records, err := r.LookupTXT(ctx, name)
	switch {
	case errors.Is(err, cloud.ErrNoSuchName):
		return "", nil
	case err != nil:
		return "", err
	}
	var found []string
	for _, rec := range records {
		if t := strings.TrimSpace(rec); t == prefix || strings.HasPrefix(t, prefix+";") || strings.HasPrefix(t, prefix+" ") {
			found = append(found, rec)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", cloud.ErrMultipleRecords
}

// withFix gives the problems that have no fix the part's.
func withFix(ps []Problem, fix string) []Problem {
	for i := range ps {
		if ps[i].Fix == "" {
			ps[i].Fix = fix
		}
	}
	return ps
}

// checkMTASTS reads the domain's _mta-sts record and, when it is valid,
// fetches and reads its policy. The policy's mx are compared with the
// domain's MX hosts later, by matchMX, once those are known.
func checkMTASTS(ctx context.Context, r Resolver, p PolicyFetcher, domain string) MTASTSResult {
	raw, err := txtRecord(ctx, r, "_mta-sts."+domain, "v=STSv1")
	switch {
	case errors.Is(err, cloud.ErrMultipleRecords):
		return MTASTSResult{Present: true, Problems: []Problem{{Code: "mta_sts_multiple_records", Severity: SeverityHigh,
			Message: fmt.Sprintf("_mta-sts.%s has more than one v=STSv1 record: senders read that as no MTA-STS at all.", domain),
			Fix:     fmt.Sprintf("Keep one v=STSv1 TXT record at _mta-sts.%s.", domain)}}}
	case err != nil:
		return MTASTSResult{Error: failure("the MTA-STS record", err)}
	case raw == "":
		return MTASTSResult{}
	}
	rec, ps := ParseMTASTSRecord(raw)
	res := MTASTSResult{Present: true, Record: &rec, Problems: withFix(ps, fmt.Sprintf(
		`Publish _mta-sts.%s as "v=STSv1; id=<id>": v first, an id of 1 to 32 letters and digits that changes with every change of the policy.`, domain))}
	if rec.ID == "" {
		return res
	}
	url := "https://mta-sts." + domain + "/.well-known/mta-sts.txt"
	var text string
	if p == nil {
		err = errors.New("no HTTPS client to fetch it with")
	} else {
		text, err = p.MTASTSPolicy(ctx, domain)
	}
	if err != nil {
		res.PolicyError = err.Error()
		res.Problems = append(res.Problems, Problem{Code: "mta_sts_policy_unavailable", Severity: SeverityHigh,
			Message: fmt.Sprintf("The MTA-STS record is published but its policy could not be fetched from %s (%v): senders apply no policy.", url, err),
			Fix:     fmt.Sprintf("Serve the policy at %s over HTTPS with a certificate valid for mta-sts.%s, as text/plain, answering 200 without redirects; or remove the record.", url, domain)})
		return res
	}
	pol, pps := ParseMTASTSPolicy(text)
	res.Policy = &pol
	res.Problems = append(res.Problems, withFix(pps,
		"Correct the policy file: version: STSv1, mode: enforce, testing or none, an mx line per MX host, max_age in seconds (at most 31557600); then publish a new id.")...)
	switch pol.Mode {
	case "testing":
		res.Problems = append(res.Problems, Problem{Code: "mta_sts_testing", Severity: SeverityLow,
			Message: "The MTA-STS policy is in testing mode: senders report TLS failures but still deliver over connections an attacker can downgrade.",
			Fix:     "Once TLS-RPT reports show no failures, set mode: enforce in the policy and publish a new id."})
	case "none":
		res.Problems = append(res.Problems, Problem{Code: "mta_sts_mode_none", Severity: SeverityMedium,
			Message: "The MTA-STS policy's mode is none: senders apply no policy. Mode none only withdraws a policy.",
			Fix:     "Set mode: testing, then enforce, in the policy and publish a new id."})
	}
	if pol.MaxAge > 0 && pol.MaxAge < stsShortAge {
		res.Problems = append(res.Problems, Problem{Code: "mta_sts_max_age_short", Severity: SeverityLow,
			Message: fmt.Sprintf("The MTA-STS policy's max_age is %d seconds, under a day: senders forget the policy between visits, which leaves first connections unprotected.", pol.MaxAge),
			Fix:     "Set max_age to a week (604800) or more; RFC 8461 advises weeks."})
	}
	return res
}

// matchMX compares the policy's mx with the domain's MX hosts (RFC 8461,
// 4.1): a host no pattern matches gets no mail from senders that enforce
// the policy.
func matchMX(m *MTASTSResult, mx MXResult) {
	if m.Policy == nil || m.Policy.Mode == "none" || !mx.Present || mx.Error != "" || len(m.Policy.MX) == 0 {
		return
	}
	for _, h := range mx.Hosts {
		if !m.Policy.Matches(h) {
			m.UnmatchedMX = append(m.UnmatchedMX, h)
		}
	}
	if len(m.UnmatchedMX) == 0 {
		return
	}
	sev, what := SeverityMedium, "senders will refuse to deliver to them once the policy is enforced"
	if m.Policy.Mode == "enforce" {
		sev, what = SeverityHigh, "senders that enforce the policy refuse to deliver to them"
	}
	m.Problems = append(m.Problems, Problem{Code: "mta_sts_mx_mismatch", Severity: sev,
		Message: fmt.Sprintf("The MX hosts %s match no mx of the MTA-STS policy (%s): %s.", strings.Join(m.UnmatchedMX, ", "), strings.Join(m.Policy.MX, ", "), what),
		Fix:     "Add an mx line for each MX host, or a *. pattern covering them, to the policy and publish a new id."})
}

func checkTLSRPT(ctx context.Context, r Resolver, domain string) TLSRPTResult {
	name := "_smtp._tls." + domain
	raw, err := txtRecord(ctx, r, name, "v=TLSRPTv1")
	switch {
	case errors.Is(err, cloud.ErrMultipleRecords):
		return TLSRPTResult{Present: true, Problems: []Problem{{Code: "tls_rpt_multiple_records", Severity: SeverityMedium,
			Message: name + " has more than one v=TLSRPTv1 record: senders read that as none and send no reports.",
			Fix:     "Keep one v=TLSRPTv1 TXT record at " + name + "."}}}
	case err != nil:
		return TLSRPTResult{Error: failure("the TLS-RPT record", err)}
	case raw == "":
		return TLSRPTResult{}
	}
	rec, ps := ParseTLSRPT(raw)
	return TLSRPTResult{Present: true, Record: &rec, Problems: withFix(ps, fmt.Sprintf(
		`Publish %s as "v=TLSRPTv1; rua=mailto:tls-reports@%s": the addresses mailto: or https: URIs separated by commas.`, name, domain))}
}

func checkBIMI(ctx context.Context, r Resolver, domain string) BIMIResult {
	name := "default._bimi." + domain
	raw, err := txtRecord(ctx, r, name, "v=BIMI1")
	switch {
	case errors.Is(err, cloud.ErrMultipleRecords):
		return BIMIResult{Present: true, Problems: []Problem{{Code: "bimi_multiple_records", Severity: SeverityLow,
			Message: name + " has more than one v=BIMI1 record: mailbox providers show no logo.",
			Fix:     "Keep one v=BIMI1 TXT record at " + name + "."}}}
	case err != nil:
		return BIMIResult{Error: failure("the BIMI record", err)}
	case raw == "":
		return BIMIResult{}
	}
	rec, ps := ParseBIMI(raw)
	return BIMIResult{Present: true, Record: &rec, Problems: withFix(ps, fmt.Sprintf(
		`Publish %s as "v=BIMI1; l=https://…/logo.svg; a=https://…/certificate.pem": the logo an SVG Tiny PS file, the mark certificate a PEM file, both over https.`, name))}
}

// enforcing reports whether DMARC is at enforcement as BIMI requires it:
// quarantine or reject on all mail.
func enforcing(d DMARCResult) bool {
	return d.Record != nil && policyRank[d.Policy()] >= policyRank["quarantine"] && d.Record.Percent == 100
}

// judgeBIMI says whether the record can take effect, which needs DMARC at
// enforcement, and flags a record that cannot.
func judgeBIMI(b *BIMIResult, d DMARCResult) {
	if b.Record == nil || b.Record.Declined {
		return
	}
	if d.Error != "" {
		return
	}
	if !enforcing(d) {
		policy := "missing"
		if d.Record != nil {
			policy = "p=" + or(d.Policy(), "(none valid)")
			if d.Record.Percent < 100 {
				policy += fmt.Sprintf(" on %d%% of mail", d.Record.Percent)
			}
		}
		b.Problems = append(b.Problems, Problem{Code: "bimi_dmarc_not_enforced", Severity: SeverityMedium,
			Message: fmt.Sprintf("The domain publishes a BIMI record, but its DMARC policy is %s: mailbox providers show BIMI logos only for domains whose DMARC policy is quarantine or reject on all mail.", policy),
			Fix:     "Move DMARC to p=quarantine or p=reject with pct=100; until then the logo is not shown."})
		return
	}
	b.Effective = b.Record.Logo != "" && !hasSeverityAtLeast(b.Problems, SeverityLow)
}

// hasSeverityAtLeast reports whether a problem is of severity or worse.
func hasSeverityAtLeast(ps []Problem, severity string) bool {
	for _, p := range ps {
		if SeverityRank(p.Severity) <= SeverityRank(severity) {
			return true
		}
	}
	return false
}

func checkDNSSEC(ctx context.Context, r Resolver, domain string) DNSSECResult {
	ok, err := r.DNSSEC(ctx, domain)
	switch {
	case errors.Is(err, cloud.ErrNoSuchName):
		return DNSSECResult{}
	case err != nil:
		return DNSSECResult{Error: failure("DNSSEC validation of the MX records", err)}
	}
	return DNSSECResult{Validated: ok}
}

// deliveryFindings are the problems of MTA-STS, TLS-RPT, BIMI and DNSSEC,
// with what is missing among them. MTA-STS and TLS-RPT protect mail the
// domain receives, so a domain that takes none (a null MX) or does not
// exist is not asked for them.
func deliveryFindings(res Result, dnsFailure func(code, part, msg string)) []Problem {
	var out []Problem
	receives := res.MX.Present || res.MX.Error != ""
	d := res.Domain
	if res.MTASTS.Error != "" {
		dnsFailure("mta_sts_dns_failure", "MTA-STS", res.MTASTS.Error)
	}
	out = append(out, res.MTASTS.Problems...)
	if receives && !res.MTASTS.Present && res.MTASTS.Error == "" {
		out = append(out, Problem{Code: "mta_sts_missing", Severity: SeverityMedium,
			Message: "The domain publishes no MTA-STS policy: senders deliver its mail over TLS only when offered, which an attacker on the path can strip.",
			Fix:     fmt.Sprintf(`Serve a policy at https://mta-sts.%s/.well-known/mta-sts.txt (version: STSv1, mode: testing, an mx line per MX host, max_age: 604800), publish the TXT record _mta-sts.%s "v=STSv1; id=<id>", and move to mode: enforce once TLS-RPT reports show no failures.`, d, d)})
	}
	if res.TLSRPT.Error != "" {
		dnsFailure("tls_rpt_dns_failure", "TLS-RPT", res.TLSRPT.Error)
	}
	out = append(out, res.TLSRPT.Problems...)
	if receives && !res.TLSRPT.Present && res.TLSRPT.Error == "" {
		sev, why := SeverityLow, "nobody is told when senders fail to reach the domain over TLS."
		if res.MTASTS.Present {
			sev, why = SeverityMedium, "nobody is told when senders fail the MTA-STS policy, so it cannot safely be moved to, or kept at, enforce."
		}
		out = append(out, Problem{Code: "tls_rpt_missing", Severity: sev,
			Message: "The domain publishes no TLS-RPT record: " + why,
			Fix:     fmt.Sprintf(`Publish the TXT record _smtp._tls.%s "v=TLSRPTv1; rua=mailto:tls-reports@%s".`, d, d)})
	}
	if res.BIMI.Error != "" {
		dnsFailure("bimi_dns_failure", "BIMI", res.BIMI.Error)
	}
	out = append(out, res.BIMI.Problems...)
	if res.BIMI.Record != nil && res.BIMI.Record.Declined {
		out = append(out, Problem{Code: "bimi_declined", Severity: SeverityInfo,
			Message: "The BIMI record declines to publish a logo (empty l and a).",
			Fix:     "Nothing to do unless the brand wants its logo shown; then give l and a."})
	}
	if !res.BIMI.Present && res.BIMI.Error == "" && enforcing(res.DMARC) {
		out = append(out, Problem{Code: "bimi_missing", Severity: SeverityInfo,
			Message: "The domain publishes no BIMI record: mailbox providers that support BIMI show no brand logo beside its mail, though its DMARC policy would allow one.",
			Fix:     fmt.Sprintf(`Publish the TXT record default._bimi.%s "v=BIMI1; l=https://…/logo.svg; a=https://…/certificate.pem" with an SVG Tiny PS logo and a mark certificate.`, d)})
	}
	switch {
	case res.DNSSEC.Error != "":
		dnsFailure("dnssec_dns_failure", "DNSSEC", res.DNSSEC.Error)
	case !res.DNSSEC.Validated && !slices.ContainsFunc(res.MX.Problems, func(p Problem) bool { return p.Code == "domain_not_found" }):
		out = append(out, Problem{Code: "dnssec_unsigned", Severity: SeverityLow,
			Message: "The resolver did not authenticate the domain's records with DNSSEC: a forged answer, such as another MX or MTA-STS record, cannot be told from a real one.",
			Fix:     "Sign the zone at its DNS host and publish its DS record at the registrar; the resolver Steward asks must validate."})
	}
	return out
}
