package posture

import (
	"fmt"
	"net/url"
	"strings"
)

// BIMIRecord is a parsed BIMI assertion record at default._bimi.<domain>
// (draft-brand-indicators-for-message-identification).
type BIMIRecord struct {
	Raw string `json:"raw"`
	// Logo is l: the https URL of the brand's SVG logo.
	Logo string `json:"logo"`
	// Authority is a: the https URL of the mark certificate (a PEM file)
	// that proves the brand owns the logo; "" when the record has none.
	Authority string `json:"authority"`
	// Declined is set for a record that declines to publish a logo: l
	// and a empty.
	Declined bool `json:"declined"`
}

// ParseBIMI parses a BIMI record: v=BIMI1 first, l an https URL of an SVG
// file, a, when given, an https URL of a PEM file. Mailbox providers that
// show logos (Gmail, Apple Mail) want the mark certificate too.
func ParseBIMI(record string) (BIMIRecord, []Problem) {
	rec := BIMIRecord{Raw: record}
	var ps problems
	tags, order := parseTags(record, "bimi", "BIMI record", false, &ps)
	if len(order) == 0 || order[0] != "v" || tags["v"] != "BIMI1" {
		ps.add("bimi_version", SeverityLow, "The BIMI record does not start with v=BIMI1: mailbox providers ignore it.")
	}
	rec.Logo, rec.Authority = tags["l"], tags["a"]
	if rec.Logo == "" && rec.Authority == "" {
		rec.Declined = true
		return rec, ps.list
	}
	switch {
	case rec.Logo == "":
		ps.add("bimi_no_logo", SeverityLow, "The BIMI record has no l: there is no logo to show.")
	case !isHTTPSURL(rec.Logo):
		ps.add("bimi_logo_invalid", SeverityLow, fmt.Sprintf("The BIMI logo %q is not an https URL: mailbox providers do not show it.", rec.Logo))
	case !strings.HasSuffix(strings.ToLower(urlPath(rec.Logo)), ".svg"):
		ps.add("bimi_logo_not_svg", SeverityLow, fmt.Sprintf("The BIMI logo %q is not an SVG file: BIMI logos are SVG Tiny PS.", rec.Logo))
	}
	switch {
	case rec.Authority == "":
		ps.add("bimi_no_certificate", SeverityInfo, "The BIMI record names no mark certificate (a=): Gmail and Apple Mail show no logo without one.")
	case !isHTTPSURL(rec.Authority):
		ps.add("bimi_certificate_invalid", SeverityLow, fmt.Sprintf("The BIMI mark certificate %q is not an https URL.", rec.Authority))
	case !strings.HasSuffix(strings.ToLower(urlPath(rec.Authority)), ".pem"):
		ps.add("bimi_certificate_not_pem", SeverityLow, fmt.Sprintf("The BIMI mark certificate %q is not a .pem file.", rec.Authority))
	}
	return rec, ps.list
}

func isHTTPSURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "https" && p.Host != ""
}

func urlPath(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Path
}
