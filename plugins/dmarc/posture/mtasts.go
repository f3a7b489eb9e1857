package posture

import (
	"fmt"
	"strconv"
	"strings"
)

// MTA-STS bounds (RFC 8461).
const (
	// stsMaxAge is the longest max_age a policy may give: a year.
	stsMaxAge = 31557600
	// stsShortAge is the shortest max_age worth having: a policy cached
	// for less than a day leaves senders without one between visits. The
	// RFC advises weeks.
	stsShortAge = 86400
	// stsMaxID is the longest id of a record.
	stsMaxID = 32
)

// MTASTSRecord is a parsed _mta-sts TXT record (RFC 8461, 3.1).
type MTASTSRecord struct {
	Raw string `json:"raw"`
	// ID names the policy's version: senders fetch the policy again when
	// it changes.
	ID string `json:"id"`
}

// ParseMTASTSRecord parses an MTA-STS TXT record: v=STSv1 first, then an
// id of 1 to 32 letters and digits; other fields are extensions, allowed.
func ParseMTASTSRecord(record string) (MTASTSRecord, []Problem) {
	rec := MTASTSRecord{Raw: record}
	var ps problems
	tags, order := parseTags(record, "mta_sts_record", "MTA-STS record", true, &ps)
	if len(order) == 0 || order[0] != "v" || tags["v"] != "STSv1" {
		ps.add("mta_sts_record_version", SeverityHigh, "The MTA-STS record does not start with v=STSv1: senders ignore it.")
	}
	switch id, ok := tags["id"]; {
	case !ok:
		ps.add("mta_sts_record_id", SeverityHigh, "The MTA-STS record has no id: senders ignore it.")
	case !isSTSID(id):
		ps.add("mta_sts_record_id", SeverityHigh, fmt.Sprintf("The MTA-STS record's id %q is not 1 to 32 letters and digits: senders ignore the record.", id))
	default:
		rec.ID = id
	}
	return rec, ps.list
}

func isSTSID(s string) bool {
	if s == "" || len(s) > stsMaxID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// MTASTSPolicy is a parsed MTA-STS policy file (RFC 8461, 3.2).
type MTASTSPolicy struct {
	Version string `json:"version"`
	// Mode is enforce, testing or none; "" when the policy gives no valid
	// mode.
	Mode string `json:"mode"`
	// MX are the patterns of the hosts that may receive the domain's
	// mail: a host name, or *. and a name for one label more.
	MX []string `json:"mx"`
	// MaxAge is how long senders may cache the policy, in seconds.
	MaxAge int64 `json:"max_age"`
}

// ParseMTASTSPolicy parses a policy file: lines of key: value, ended by
// LF or CRLF, with version STSv1, mode, max_age (at most a year) and,
// unless the mode is none, at least one mx. Unknown keys are extensions;
// a repeated key other than mx counts once, its first value.
func ParseMTASTSPolicy(text string) (MTASTSPolicy, []Problem) {
	var pol MTASTSPolicy
	var ps problems
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimRight(text, "\r\n"), "\n") {
		line = strings.TrimRight(strings.TrimSuffix(line, "\r"), " \t")
		key, value, ok := strings.Cut(line, ":")
		value = strings.TrimLeft(value, " \t")
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			ps.add("mta_sts_policy_syntax", SeverityHigh, fmt.Sprintf("Line %d of the MTA-STS policy, %q, is not a key: value pair: senders reject the policy.", i+1, line))
			continue
		}
		if key != "mx" && seen[key] {
			ps.add("mta_sts_policy_duplicate", SeverityLow, fmt.Sprintf("The MTA-STS policy gives %s more than once; senders read the first.", key))
			continue
		}
		seen[key] = true
		switch key {
		case "version":
			pol.Version = value
		case "mode":
			pol.Mode = value
		case "mx":
			pol.MX = append(pol.MX, strings.ToLower(strings.TrimSuffix(value, ".")))
		case "max_age":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || len(value) > 10 || n < 0 || strings.TrimLeft(value, "0123456789") != "" {
				ps.add("mta_sts_policy_max_age", SeverityHigh, fmt.Sprintf("The MTA-STS policy's max_age %q is not a number of seconds: senders reject the policy.", value))
				continue
			}
			pol.MaxAge = n
		}
	}
	if pol.Version != "STSv1" {
		ps.add("mta_sts_policy_version", SeverityHigh, "The MTA-STS policy does not say version: STSv1: senders reject it.")
	}
	switch pol.Mode {
	case "enforce", "testing", "none":
	case "":
		ps.add("mta_sts_policy_mode", SeverityHigh, "The MTA-STS policy has no mode: senders reject it.")
	default:
		ps.add("mta_sts_policy_mode", SeverityHigh, fmt.Sprintf("The MTA-STS policy's mode %q is not enforce, testing or none: senders reject the policy.", pol.Mode))
		pol.Mode = ""
	}
	if !seen["max_age"] {
		ps.add("mta_sts_policy_max_age", SeverityHigh, "The MTA-STS policy has no max_age: senders reject it.")
	} else if pol.MaxAge > stsMaxAge {
		ps.add("mta_sts_policy_max_age", SeverityHigh, fmt.Sprintf("The MTA-STS policy's max_age %d is over a year (%d seconds), the most the RFC allows.", pol.MaxAge, stsMaxAge))
	}
	if len(pol.MX) == 0 && pol.Mode != "none" && pol.Mode != "" {
		ps.add("mta_sts_policy_no_mx", SeverityHigh, "The MTA-STS policy names no mx: in mode "+pol.Mode+" no host may receive the domain's mail.")
	}
	for _, p := range pol.MX {
		if !isMXPattern(p) {
			ps.add("mta_sts_policy_mx", SeverityHigh, fmt.Sprintf("The MTA-STS policy's mx %q is not a host name or *. and a host name.", p))
		}
	}
	return pol, ps.list
}

func isMXPattern(p string) bool {
	name := strings.TrimPrefix(p, "*.")
	if name == "" || strings.Contains(name, "*") || !strings.Contains(name, ".") {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Matches reports whether host matches one of the policy's mx patterns
// (RFC 8461, 4.1): the same name, or for *.name any name one label
// longer.
func (p MTASTSPolicy) Matches(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, pat := range p.MX {
		if rest, ok := strings.CutPrefix(pat, "*."); ok {
			label, parent, found := strings.Cut(host, ".")
			if found && label != "" && parent == rest {
				return true
			}
		} else if host == pat {
			return true
		}
	}
	return false
}
