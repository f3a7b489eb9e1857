package domains_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/sdk"
)

func (f *fixture) html(t *testing.T, target string, p sdk.Principal) string {
	t.Helper()
	code, body := f.call(t, http.MethodGet, target, "", p)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	return string(body)
}

// TestFragments: before a sync every view says the data is coming; after
// it the dashboard card and the DMARC page's fragments show the caller's
// tenants only — the figures, the domains weakest first with their
// grades and findings, a DNS failure said as such — an admin sees each
// tenant named, a caller naming another tenant is refused, and the
// weakenings appear once a check finds them.
func TestFragments(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := postureWorld()
		f := start(t, dialect, w)
		for _, path := range []string{domains.StatsFragmentPath, domains.PostureFragmentPath, domains.DomainsFragmentPath} {
			if got := f.html(t, path, contosoer); !strings.Contains(got, "No mail domains checked yet") {
				t.Errorf("%s before a sync: %s", path, got)
			}
		}
		f.mustRun(t)
		strong, weak := f.domain(t, "strong.example"), f.domain(t, "weak.example")

		card := f.html(t, domains.StatsFragmentPath, contosoer)
		for _, want := range []string{"Average score", "DMARC p=reject", "1 of 2", "DKIM coverage", "50 %", "Checked domains by grade"} {
			if !strings.Contains(card, want) {
				t.Errorf("contoso's card lacks %q: %s", want, card)
			}
		}
		table := f.html(t, domains.DomainsFragmentPath, contosoer)
		ws, ss := strings.Index(table, "weak.example"), strings.Index(table, "strong.example")
		if ws < 0 || ss < ws || strings.Contains(table, "missing.example") || strings.Contains(table, "Fabrikam") {
			t.Errorf("contoso's domains, weakest first: %s", table)
		}
		for _, want := range []string{"Grade " + *strong.Grade, "Grade " + *weak.Grade, "p=reject", "p=none", "default domain", "dmarc policy none",
			`href="/api/v1/dmarc/domains?limit=500&amp;sort_by=score"`} {
			if !strings.Contains(table, want) {
				t.Errorf("contoso's domains lack %q: %s", want, table)
			}
		}
		if code, body := f.call(t, http.MethodGet, domains.DomainsFragmentPath+"?tenant_id="+fabrikam.ID, "", contosoer); code != http.StatusForbidden ||
			strings.Contains(string(body), "missing.example") {
			t.Errorf("contoso's user asking for fabrikam's domains: %d %s", code, body)
		}

		all := f.html(t, domains.DomainsFragmentPath, admin)
		for _, want := range []string{"Fabrikam", "missing.example", "broken.example", "latest check: DNS failed", "dmarc missing", "and 1 more"} {
			if !strings.Contains(all, want) {
				t.Errorf("the admin's domains lack %q", want)
			}
		}
		posture := f.html(t, domains.PostureFragmentPath, admin)
		for _, want := range []string{"Posture of each tenant", "Contoso", "Fabrikam", "1 whose latest check DNS failed"} {
			if !strings.Contains(posture, want) {
				t.Errorf("the admin's posture lacks %q: %s", want, posture)
			}
		}
		fab := f.html(t, domains.DomainsFragmentPath+"?tenant_id="+fabrikam.ID, admin)
		if strings.Contains(fab, "strong.example") || !strings.Contains(fab, "tenant_ids="+fabrikam.ID) {
			t.Errorf("fabrikam's domains for an admin: %s", fab)
		}

		if got := f.html(t, domains.EventsFragmentPath, contosoer); !strings.Contains(got, "No weakening found") {
			t.Errorf("events before a weakening: %s", got)
		}
		f.serveDNS(t, weakened(w))
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		events := f.html(t, domains.EventsFragmentPath, contosoer)
		for _, want := range []string{"The DMARC policy was relaxed from reject to none.", "strong.example", "3 of 3 weakenings"} {
			if !strings.Contains(events, want) {
				t.Errorf("contoso's weakenings lack %q: %s", want, events)
			}
		}
		if got := f.html(t, domains.EventsFragmentPath, fabrikamer); !strings.Contains(got, "No weakening found") {
			t.Errorf("fabrikam's user sees contoso's weakenings: %s", got)
		}
	})
}
