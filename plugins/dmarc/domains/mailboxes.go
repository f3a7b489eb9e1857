package domains

import (
	"context"
	"encoding/json"
	"net/mail"
	"slices"
	"strings"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// ReportMailboxes are the mailboxes the tenant's aggregate reports go to:
// the mailto addresses of the rua tags of its domains' DMARC records, as
// last checked, that lie at one of the tenant's own domains — the
// mailboxes its directory holds. An address at another domain (a
// reporting service's) is not the tenant's to read. They are lower-case
// and sorted, each once.
func (s *Store) ReportMailboxes(ctx context.Context, tenantID string) ([]string, error) {
	domains, err := s.OfTenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	own := make(map[string]bool, len(domains))
	for _, d := range domains {
		own[strings.ToLower(d.Domain)] = true
	}
	var out []string
	for _, d := range domains {
		if d.Result == nil {
			continue
		}
		var res posture.Result
		if err := json.Unmarshal([]byte(*d.Result), &res); err != nil || res.DMARC.Record == nil {
			continue
		}
		for _, uri := range res.DMARC.Record.RUA {
			if addr, ok := mailtoAddress(uri); ok && own[addr[strings.LastIndexByte(addr, '@')+1:]] {
				out = append(out, addr)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// mailtoAddress is the address of a DMARC report URI of the mailto
// scheme, its size limit (!10m) left out, in lower case.
func mailtoAddress(uri string) (string, bool) {
	scheme, rest, ok := strings.Cut(uri, ":")
	if !ok || !strings.EqualFold(scheme, "mailto") {
		return "", false
	}
	if i := strings.LastIndexByte(rest, '!'); i >= 0 {
		rest = rest[:i]
	}
	a, err := mail.ParseAddress(rest)
	if err != nil || !strings.Contains(a.Address, "@") {
		return "", false
	}
	return strings.ToLower(a.Address), true
}
