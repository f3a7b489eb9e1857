package posture

import (
	"fmt"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
)

// DMARCRecord is a parsed DMARC record (RFC 7489, 6.3). Tags the record
// leaves out hold their defaults: sp is p, pct 100, adkim and aspf
// relaxed, fo 0, rf afrf and ri a day.
type DMARCRecord struct {
	Raw string `json:"raw"`
	// Policy is p: "none", "quarantine" or "reject"; "none" too when p is
	// missing or invalid but a valid rua lets receivers fall back to it
	// (RFC 7489, 6.6.3), and "" when receivers apply no DMARC at all.
	Policy          string `json:"policy"`
	SubdomainPolicy string `json:"subdomain_policy"`
	Percent         int    `json:"percent"`
	// RUA and RUF are the report URIs as written, size limits included.
	RUA   []string `json:"rua"`
	RUF   []string `json:"ruf"`
	ADKIM string   `json:"adkim"`
	ASPF  string   `json:"aspf"`
	// FailureOptions is fo, its options joined with ":".
	FailureOptions string `json:"failure_options"`
	// ReportFormat is rf, its formats joined with ":".
	ReportFormat string `json:"report_format"`
	// ReportInterval is ri, seconds between aggregate reports.
	ReportInterval int64 `json:"report_interval"`
	// Tags are the record's tags as written, by name (lower case).
	Tags map[string]string `json:"tags"`
}

// policyRank orders DMARC policies by strength, "" (no DMARC) lowest.
var policyRank = map[string]int{"": 0, "none": 1, "quarantine": 2, "reject": 3}

// ParseDMARC parses a DMARC record (RFC 7489, 6.3 and 6.4): its syntax,
// its values, and the settings that leave a domain open to spoofing.
func ParseDMARC(record string) (DMARCRecord, []Problem) {
	rec := DMARCRecord{
		Raw: record, Percent: 100, ADKIM: "r", ASPF: "r",
		FailureOptions: "0", ReportFormat: "afrf", ReportInterval: 86400,
		Tags: map[string]string{},
	}
	var ps problems
	tags, order := parseTags(record, "dmarc", "DMARC record", false, &ps)
	rec.Tags = tags
	if len(order) == 0 || order[0] != "v" || tags["v"] != "DMARC1" {
		ps.add("dmarc_version", SeverityCritical, "The DMARC record does not start with v=DMARC1: receivers ignore it.")
	}
	if len(order) > 1 && order[1] != "p" && tags["p"] != "" {
		ps.add("dmarc_policy_not_second", SeverityLow, "The p tag should directly follow v=DMARC1; some receivers reject a record where it does not.")
	}

	if v, ok := tags["rua"]; ok {
		rec.RUA = reportURIs("rua", v, &ps)
	}
	if v, ok := tags["ruf"]; ok {
		rec.RUF = reportURIs("ruf", v, &ps)
	}

	policyValid := false
	switch v, ok := tags["p"]; {
	case !ok:
		ps.add("dmarc_policy_missing", SeverityCritical, "The DMARC record has no p tag"+fallback(rec.RUA))
	case !isPolicy(v):
		ps.add("dmarc_policy_invalid", SeverityCritical, fmt.Sprintf("The DMARC policy p=%s is not none, quarantine or reject", v)+fallback(rec.RUA))
	default:
		rec.Policy = strings.ToLower(v)
		policyValid = true
	}
	if !policyValid && len(rec.RUA) > 0 {
		rec.Policy = "none"
	}
	rec.SubdomainPolicy = rec.Policy
	if v, ok := tags["sp"]; ok {
		if isPolicy(v) {
			rec.SubdomainPolicy = strings.ToLower(v)
		} else {
			ps.add("dmarc_subdomain_policy_invalid", SeverityHigh, fmt.Sprintf("The subdomain policy sp=%s is not none, quarantine or reject: receivers may ignore the whole record.", v))
		}
	}
	if v, ok := tags["pct"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			ps.add("dmarc_pct_invalid", SeverityHigh, fmt.Sprintf("pct=%s is not a whole number from 0 to 100: receivers may ignore the record or apply the policy to all mail.", v))
		} else {
			rec.Percent = n
		}
	}
	for _, a := range []struct {
		tag string
		dst *string
	}{{"adkim", &rec.ADKIM}, {"aspf", &rec.ASPF}} {
		if v, ok := tags[a.tag]; ok {
			if lv := strings.ToLower(v); lv == "r" || lv == "s" {
				*a.dst = lv
			} else {
				ps.add("dmarc_alignment_invalid", SeverityMedium, fmt.Sprintf("%s=%s is neither r (relaxed) nor s (strict).", a.tag, v))
			}
		}
	}
	if v, ok := tags["fo"]; ok {
		if opts, ok := colonList(v, func(o string) bool { return o == "0" || o == "1" || o == "d" || o == "s" }); ok {
			rec.FailureOptions = opts
		} else {
			ps.add("dmarc_fo_invalid", SeverityLow, fmt.Sprintf("fo=%s is not a list of the failure options 0, 1, d and s.", v))
		}
	}
	if v, ok := tags["rf"]; ok {
		if formats, ok := colonList(v, func(f string) bool { return f == "afrf" }); ok {
			rec.ReportFormat = formats
		} else {
			ps.add("dmarc_rf_invalid", SeverityLow, fmt.Sprintf("rf=%s names a failure report format other than afrf, the only one defined.", v))
		}
	}
	if v, ok := tags["ri"]; ok {
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			rec.ReportInterval = int64(n)
		} else {
			ps.add("dmarc_ri_invalid", SeverityLow, fmt.Sprintf("ri=%s is not a number of seconds.", v))
		}
	}
	for _, name := range order {
		if !knownDMARCTags[name] {
			ps.add("dmarc_unknown_tag", SeverityInfo, fmt.Sprintf("The DMARC record has a tag %q that DMARC does not define; receivers ignore it.", name))
		}
	}
	weakDMARC(rec, &ps)
	return rec, ps.list
}

// weakDMARC adds the problems of a valid record that still leaves the
// domain open to spoofing.
func weakDMARC(rec DMARCRecord, ps *problems) {
	switch rec.Policy {
	case "none":
		ps.add("dmarc_policy_none", SeverityHigh, "DMARC policy is none: receivers take no action on mail that fails authentication.")
	case "quarantine":
		ps.add("dmarc_policy_quarantine", SeverityLow, "DMARC policy is quarantine: mail that fails authentication goes to spam folders instead of being rejected.")
	}
	if rec.Percent < 100 && policyRank[rec.Policy] > policyRank["none"] {
		ps.add("dmarc_pct_partial", SeverityMedium, fmt.Sprintf("DMARC policy applies to %d%% of failing mail only (pct=%d): receivers treat the rest as if the policy were a step weaker.", rec.Percent, rec.Percent))
	}
	if policyRank[rec.SubdomainPolicy] < policyRank[rec.Policy] {
		ps.add("dmarc_subdomain_policy_weaker", SeverityMedium, fmt.Sprintf("The subdomain policy sp=%s is weaker than p=%s: mail from made-up subdomains is treated more leniently than the domain's own.", rec.SubdomainPolicy, rec.Policy))
	}
	if len(rec.RUA) == 0 && rec.Policy != "" {
		ps.add("dmarc_no_rua", SeverityMedium, "DMARC has no aggregate report address (rua): nobody learns which servers send mail as the domain or how much fails.")
	}
}

var knownDMARCTags = map[string]bool{"v": true, "p": true, "sp": true, "pct": true, "rua": true, "ruf": true, "adkim": true, "aspf": true, "fo": true, "rf": true, "ri": true}

func isPolicy(v string) bool {
	switch strings.ToLower(v) {
	case "none", "quarantine", "reject":
		return true
	}
	return false
}

// fallback finishes the message about a missing or invalid p: with a
// valid rua, receivers act as if p were none (RFC 7489, 6.6.3).
func fallback(rua []string) string {
	if len(rua) > 0 {
		return ": receivers act as if it were p=none and take no action on failing mail."
	}
	return ": receivers ignore the record and apply no DMARC policy."
}

// reportURIs checks a rua or ruf list: comma-separated URIs, each with an
// optional size limit such as !10m (RFC 7489, 6.2 and 6.4). It returns the
// valid ones. Receivers only send reports to mailto: URIs.
func reportURIs(tag, value string, ps *problems) []string {
	var out []string
	for _, u := range strings.Split(value, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			ps.add("dmarc_report_uri_invalid", SeverityMedium, fmt.Sprintf("%s has an empty entry.", tag))
			continue
		}
		if err := checkReportURI(u); err != "" {
			ps.add("dmarc_report_uri_invalid", SeverityMedium, fmt.Sprintf("%s entry %q %s: no reports go there.", tag, u, err))
			continue
		}
		out = append(out, u)
	}
	return out
}

// checkReportURI says what is wrong with one report URI, or "".
func checkReportURI(u string) string {
	if i := strings.LastIndexByte(u, '!'); i >= 0 {
		size := strings.ToLower(u[i+1:])
		if size != "" && strings.ContainsRune("kmgt", rune(size[len(size)-1])) {
			size = size[:len(size)-1]
		}
		if _, err := strconv.ParseUint(size, 10, 64); err != nil {
			return "has a size limit that is not a number with an optional k, m, g or t"
		}
		u = u[:i]
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme == "" {
		return "is not a URI"
	}
	if !strings.EqualFold(parsed.Scheme, "mailto") {
		return "is not a mailto: address, the only kind receivers send reports to"
	}
	if _, err := mail.ParseAddress(parsed.Opaque); err != nil {
		return "is not a valid e-mail address"
	}
	return ""
}

// colonList checks a colon-separated list, each item lower-cased, and
// returns it joined again without spaces.
func colonList(v string, valid func(string) bool) (string, bool) {
	var items []string
	for _, it := range strings.Split(v, ":") {
		it = strings.ToLower(strings.TrimSpace(it))
		if !valid(it) {
			return "", false
		}
		items = append(items, it)
	}
	return strings.Join(items, ":"), true
}

// parseTags splits a tag=value list (RFC 7489, 6.4; RFC 6376, 3.2) into
// its tags and their order. Whitespace around tags, names and values is
// dropped and an empty last tag allowed. A tag without "=" or written
// twice is reported, the first value kept. DMARC's tag names compare
// without regard to case (its ABNF literals do); DKIM's with it.
func parseTags(record, prefix, what string, caseSensitive bool, ps *problems) (map[string]string, []string) {
	tags := map[string]string{}
	var order []string
	for _, part := range strings.Split(record, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !caseSensitive {
			name = strings.ToLower(name)
		}
		switch {
		case !ok:
			ps.add(prefix+"_syntax", SeverityHigh, fmt.Sprintf("The %s has %q, which is not a tag=value pair: receivers may ignore the whole record.", what, part))
			continue
		case !isTagName(name):
			ps.add(prefix+"_syntax", SeverityHigh, fmt.Sprintf("The %s has a tag named %q, which is not a valid tag name: receivers may ignore the whole record.", what, name))
			continue
		}
		if _, dup := tags[name]; dup {
			ps.add(prefix+"_duplicate_tag", SeverityHigh, fmt.Sprintf("The %s has the tag %s more than once: receivers may ignore the whole record.", what, name))
			continue
		}
		tags[name] = value
		order = append(order, name)
	}
	return tags, order
}

// isTagName reports whether s is ALPHA *(ALPHA / DIGIT / "_").
func isTagName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return s != ""
}
