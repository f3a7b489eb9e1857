package posture

import (
	"fmt"
	"net/mail"
	"net/url"
	"strings"
)

// TLSRPTRecord is a parsed _smtp._tls TXT record (RFC 8460, 3).
type TLSRPTRecord struct {
	Raw string `json:"raw"`
	// RUA are the addresses reports go to, mailto: or https: URIs.
	RUA []string `json:"rua"`
}

// ParseTLSRPT parses a TLS-RPT record: v=TLSRPTv1 first, then rua, one
// or more mailto: or https: URIs separated by commas.
func ParseTLSRPT(record string) (TLSRPTRecord, []Problem) {
	rec := TLSRPTRecord{Raw: record}
	var ps problems
	tags, order := parseTags(record, "tls_rpt", "TLS-RPT record", true, &ps)
	if len(order) == 0 || order[0] != "v" || tags["v"] != "TLSRPTv1" {
		ps.add("tls_rpt_version", SeverityMedium, "The TLS-RPT record does not start with v=TLSRPTv1: senders ignore it.")
	}
	v, ok := tags["rua"]
	if !ok || strings.TrimSpace(v) == "" {
		ps.add("tls_rpt_no_rua", SeverityMedium, "The TLS-RPT record has no rua: senders have nowhere to send reports.")
		return rec, ps.list
	}
	for _, u := range strings.Split(v, ",") {
		u = strings.TrimSpace(u)
		if !isReportURI(u) {
			ps.add("tls_rpt_rua_invalid", SeverityMedium, fmt.Sprintf("The TLS-RPT rua %q is not a mailto: address or an https: URL: senders skip it.", u))
			continue
		}
		rec.RUA = append(rec.RUA, u)
	}
	return rec, ps.list
}

// isReportURI reports whether u is a mailto: URI of one address or an
// https: URL with a host.
func isReportURI(u string) bool {
	scheme, rest, ok := strings.Cut(u, ":")
	switch {
	case !ok:
		return false
	case strings.EqualFold(scheme, "mailto"):
		addr, err := url.PathUnescape(rest)
		if err != nil {
			return false
		}
		a, err := mail.ParseAddress(addr)
		return err == nil && a.Name == "" && strings.Contains(a.Address, "@")
	case strings.EqualFold(scheme, "https"):
		p, err := url.Parse(u)
		return err == nil && p.Host != ""
	}
	return false
}
