package posture

import "fmt"

// Change is one way a domain's posture weakened between two checks.
type Change struct {
	// Code is one of dmarc_removed, dmarc_policy_relaxed, dmarc_pct_lowered,
	// dmarc_subdomain_policy_relaxed, dmarc_reporting_removed, spf_removed,
	// spf_invalid, spf_all_relaxed, spf_over_limit, spf_loop,
	// dkim_key_removed, dkim_key_shortened, mta_sts_removed,
	// mta_sts_weakened, tls_rpt_removed, dnssec_lost and bimi_lost.
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// allRank orders SPF's all qualifiers by strictness; no all (a neutral
// result) counts as ?all.
var allRank = map[string]int{"+": 0, "?": 1, "": 1, "~": 2, "-": 3}

// Weakened lists how posture weakened from prev to cur, most severe
// first: a DMARC policy relaxed or removed, an SPF record removed, broken
// or made more permissive, a DKIM key removed, revoked or shortened,
// MTA-STS removed or no longer enforced, TLS-RPT removed, DNSSEC
// validation lost, a BIMI logo no longer shown. A
// part that either check failed to look up is unknown there and yields
// no change: a DNS failure is not a removal.
func Weakened(prev, cur Result) []Change {
	var out []Change
	add := func(code, severity, format string, args ...any) {
		out = append(out, Change{Code: code, Severity: severity, Message: fmt.Sprintf(format, args...)})
	}
	if prev.DMARC.Error == "" && cur.DMARC.Error == "" {
		weakenedDMARC(prev.DMARC, cur.DMARC, add)
	}
	if prev.SPF.Error == "" && cur.SPF.Error == "" {
		weakenedSPF(prev.SPF, cur.SPF, add)
	}
	for _, p := range prev.DKIM {
		for _, c := range cur.DKIM {
			if c.Selector == p.Selector && p.Error == "" && c.Error == "" {
				weakenedDKIM(p, c, add)
			}
		}
	}
	weakenedDelivery(prev, cur, add)
	sortChanges(out)
	return out
}

// weakenedDelivery compares MTA-STS, TLS-RPT, DNSSEC and BIMI. A check
// stored before these parts were checked knows none of them, and so
// yields no change.
func weakenedDelivery(prev, cur Result, add addFunc) {
	if pm, cm := prev.MTASTS, cur.MTASTS; pm.Error == "" && cm.Error == "" && pm.Record != nil {
		switch {
		case !cm.Present && pm.Enforced():
			add("mta_sts_removed", SeverityHigh, "The MTA-STS record was removed: the policy was enforced, and now senders apply none.")
		case !cm.Present:
			add("mta_sts_removed", SeverityMedium, "The MTA-STS record was removed.")
		case pm.Enforced() && !cm.Enforced():
			add("mta_sts_weakened", SeverityHigh, "MTA-STS is no longer enforced: %s.", notEnforced(cm))
		}
	}
	if pt, ct := prev.TLSRPT, cur.TLSRPT; pt.Error == "" && ct.Error == "" && pt.Record != nil && len(pt.Record.RUA) > 0 && !ct.Present {
		add("tls_rpt_removed", SeverityLow, "The TLS-RPT record was removed: nobody receives TLS reports any more.")
	}
	if prev.DNSSEC.Validated && !cur.DNSSEC.Validated && cur.DNSSEC.Error == "" {
		add("dnssec_lost", SeverityMedium, "The resolver no longer authenticates the domain's records with DNSSEC.")
	}
	if prev.BIMI.Effective && !cur.BIMI.Effective && cur.BIMI.Error == "" && cur.DMARC.Error == "" {
		add("bimi_lost", SeverityLow, "The BIMI logo can no longer be shown: the record changed or DMARC left enforcement.")
	}
}

// notEnforced says why an MTA-STS policy is not enforced.
func notEnforced(m MTASTSResult) string {
	switch {
	case m.Policy == nil && m.PolicyError != "":
		return "its policy can no longer be fetched"
	case m.Policy == nil:
		return "the record is no longer valid"
	case m.Policy.Mode != "enforce":
		return "the policy's mode is now " + or(m.Policy.Mode, "invalid")
	case len(m.UnmatchedMX) > 0:
		return fmt.Sprintf("the MX hosts %v match no mx of the policy", m.UnmatchedMX)
	}
	return "the policy is no longer valid"
}

type addFunc func(code, severity, format string, args ...any)

func weakenedDMARC(prev, cur DMARCResult, add addFunc) {
	pp, cp := prev.Policy(), cur.Policy()
	switch {
	case prev.Record == nil:
		return
	case cur.Record == nil && !cur.Present:
		add("dmarc_removed", SeverityCritical, "The DMARC record was removed: it had policy %s, and now receivers apply none.", pp)
		return
	case cur.Record == nil:
		add("dmarc_policy_relaxed", SeverityCritical, "The DMARC policy %s no longer applies: the domain now has several DMARC records, which receivers ignore.", pp)
		return
	}
	relaxed := policyRank[cp] < policyRank[pp]
	if relaxed {
		add("dmarc_policy_relaxed", SeverityHigh, "The DMARC policy was relaxed from %s to %s.", pp, or(cp, "no valid policy"))
	}
	if cur.Record.Percent < prev.Record.Percent && policyRank[cp] > policyRank["none"] {
		add("dmarc_pct_lowered", SeverityMedium, "The DMARC policy now applies to %d%% of failing mail instead of %d%%.", cur.Record.Percent, prev.Record.Percent)
	}
	// A subdomain policy that follows p relaxed with it: that is one change.
	spFollows := relaxed && cur.Record.SubdomainPolicy == cur.Record.Policy
	if cur.OrgDomain == "" && prev.OrgDomain == "" && !spFollows && policyRank[cur.Record.SubdomainPolicy] < policyRank[prev.Record.SubdomainPolicy] {
		add("dmarc_subdomain_policy_relaxed", SeverityMedium, "The DMARC subdomain policy was relaxed from %s to %s.", prev.Record.SubdomainPolicy, or(cur.Record.SubdomainPolicy, "no valid policy"))
	}
	if len(prev.Record.RUA) > 0 && len(cur.Record.RUA) == 0 {
		add("dmarc_reporting_removed", SeverityLow, "The DMARC aggregate report address (rua) was removed: nobody receives reports any more.")
	}
}

func weakenedSPF(prev, cur SPFResult, add addFunc) {
	switch {
	case prev.Record == nil:
		return
	case cur.Record == nil && !cur.Present:
		add("spf_removed", SeverityHigh, "The SPF record was removed.")
		return
	case cur.Record == nil:
		add("spf_invalid", SeverityCritical, "The domain now has several SPF records: receivers treat that as an error and SPF fails for all mail.")
		return
	}
	if pa, ca := prev.Evaluation.All, cur.Evaluation.All; allRank[ca] < allRank[pa] {
		add("spf_all_relaxed", allSeverity(ca), "SPF's all was relaxed from %s to %s.", allName(pa), allName(ca))
	}
	// A record that already failed with a permanent error cannot fail worse.
	switch {
	case prev.permerror() || !cur.permerror():
	case cur.Evaluation.OverLimit:
		add("spf_over_limit", SeverityCritical, "SPF now needs %s DNS lookups, more than the %d receivers allow (it needed %d): SPF fails for all mail.",
			lookupCount(cur.Evaluation.Lookups), spfLookupLimit, prev.Evaluation.Lookups)
	case cur.Evaluation.Loop:
		add("spf_loop", SeverityCritical, "SPF's includes now loop: SPF fails for all mail.")
	default:
		add("spf_invalid", SeverityCritical, "The SPF record is now broken: receivers treat it as an error (permerror) and SPF fails for all mail.")
	}
}

func allSeverity(q string) string {
	if q == "+" {
		return SeverityCritical
	}
	return SeverityHigh
}

func allName(q string) string {
	if q == "" {
		return "no all"
	}
	return q + "all"
}

func weakenedDKIM(prev, cur DKIMResult, add addFunc) {
	if prev.Key == nil || cur.Key == nil || !prev.Key.Usable() {
		return
	}
	switch {
	case !cur.Key.Present:
		add("dkim_key_removed", SeverityHigh, "The DKIM key of selector %s was removed.", cur.Selector)
	case cur.Key.Revoked:
		add("dkim_key_removed", SeverityHigh, "The DKIM key of selector %s was revoked.", cur.Selector)
	case cur.Key.Bits > 0 && cur.Key.KeyType == prev.Key.KeyType && cur.Key.Bits < prev.Key.Bits:
		add("dkim_key_shortened", SeverityHigh, "The DKIM key of selector %s was shortened from %d to %d bits.", cur.Selector, prev.Key.Bits, cur.Key.Bits)
	}
}
