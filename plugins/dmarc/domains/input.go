package domains

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/idna"

	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Bounds of the admin's input.
const (
	// MaxSelectors is how many selectors of its own a domain may have.
	MaxSelectors = 10
	// maxSelectorLen bounds a selector; DNS bounds its name at 253 with
	// the domain.
	maxSelectorLen = 63
	// maxDomainInput bounds the domain as sent, before IDNA, which maps
	// a Unicode name to its longer ASCII form.
	maxDomainInput = 253
)

// hostnames maps a domain as a browser does before a lookup (UTS #46:
// case folded, Unicode to its A-labels) and holds it to DNS's rules:
// letters, digits and hyphens, labels of 1-63 octets, 253 in all. The
// x/net implementation is the one net/http and the Go tools use, kept
// current with Unicode.
var hostnames = idna.New(idna.MapForLookup(), idna.StrictDomainName(true), idna.VerifyDNSLength(true), idna.BidiRule(), idna.Transitional(false))

// numeric is a label of digits only, which no top-level domain is: a
// name ending in one is an address.
var numeric = regexp.MustCompile(`^[0-9]+$`)

// NormalizeDomain is name in the form the store keeps: lower-case
// A-labels without a trailing dot, at least two labels, the last not
// numeric. A name that cannot be a mail domain is an error saying why.
func NormalizeDomain(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("is required")
	}
	if len(name) > maxDomainInput {
		return "", fmt.Errorf("must be at most %d characters", maxDomainInput)
	}
	ascii, err := hostnames.ToASCII(strings.TrimSuffix(name, "."))
	if err != nil {
		return "", fmt.Errorf("must be a domain name such as example.com: %v", err)
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return "", fmt.Errorf("must have a top-level domain, such as example.com")
	}
	if numeric.MatchString(labels[len(labels)-1]) {
		return "", fmt.Errorf("must be a domain name, not an address")
	}
	return ascii, nil
}

// selectorRE is a DKIM selector: dot-separated labels of letters,
// digits, hyphens and underscores, neither end a hyphen (RFC 6376, 3.1).
var selectorRE = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$`)

// normalizeSelectors checks a list of selectors, lower-cased, repeats
// dropped, and reports each bad one at loc[i].
func normalizeSelectors(loc string, list []string, p *jsonbody.Problems) []string {
	out := []string{}
	for i, s := range list {
		s, err := NormalizeSelector(s)
		switch {
		case err != nil:
			p.Add(fmt.Sprintf("%s[%d]", loc, i), "%v", err)
		case !slices.Contains(out, s):
			out = append(out, s)
		}
	}
	return out
}

// NormalizeSelector is a DKIM selector lower-cased, or an error saying
// why it cannot be one.
func NormalizeSelector(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case s == "":
		return "", fmt.Errorf("must not be empty")
	case len(s) > maxSelectorLen:
		return "", fmt.Errorf("must be at most %d characters", maxSelectorLen)
	case !selectorRE.MatchString(s):
		return "", fmt.Errorf("must be a selector such as selector1: letters, digits, hyphens, underscores and dots")
	}
	return s, nil
}
