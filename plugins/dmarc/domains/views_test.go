package domains_test

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
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

		mine := f.html(t, domains.PostureFragmentPath, contosoer)
		avg := sdkui.FormatNumber(math.Round(float64(*strong.Score+*weak.Score)*100/2) / 100)
		for _, want := range []string{"Average score by day", "Average score ends at " + avg, "Average score</p><strong class=\"stat-value\">" + avg} {
			if !strings.Contains(mine, want) {
				t.Errorf("contoso's posture lacks %q: %s", want, mine)
			}
		}
		if strings.Contains(mine, "Posture of each tenant") {
			t.Errorf("contoso's posture has a table of tenants: %s", mine)
		}
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
		for _, want := range []string{"Fabrikam", "missing.example", "broken.example", "DNS failed some lookups", "dmarc missing", "and 1 more"} {
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

// TestDataset: dmarc_posture emits the latest check of each domain of
// the tenants asked for, by tenant and domain, and nothing of another.
func TestDataset(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		f.mustRun(t)
		read := func(tenants ...string) []domains.PostureRecord {
			t.Helper()
			raw, err := f.harness.ReadDataset(t.Context(), domains.DatasetName, tenants, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]domains.PostureRecord, len(raw))
			for i, r := range raw {
				if err := json.Unmarshal(r, &out[i]); err != nil {
					t.Fatal(err)
				}
			}
			return out
		}
		got := read(contoso.ID)
		if len(got) != 2 || got[0].Domain != "strong.example" || got[1].Domain != "weak.example" || got[0].TenantID != contoso.ID ||
			*got[0].DMARCPolicy != "reject" || got[0].Score == nil || got[0].CheckedAt == nil {
			t.Errorf("contoso's records %+v", got)
		}
		all := read(fabrikam.ID, contoso.ID)
		var names []string
		for _, r := range all {
			names = append(names, r.TenantID+"/"+r.Domain)
		}
		want := []string{"t-contoso/strong.example", "t-contoso/weak.example", "t-fabrikam/broken.example", "t-fabrikam/missing.example"}
		if !slices.Equal(names, want) {
			t.Errorf("records %v, want %v", names, want)
		}
		if broken := all[2]; broken.DNSError == "" || broken.DMARCPolicy != nil {
			t.Errorf("broken.example's record %+v", broken)
		}
	})
}

// TestDomainFragment: a domain's name in the table opens its detail, each
// part's state and every finding with its fix; another tenant's domain
// is 404, also to an admin naming another tenant.
func TestDomainFragment(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		f.mustRun(t)
		weak, missing := f.domain(t, "weak.example"), f.domain(t, "missing.example")
		at := strings.Replace(domains.DomainFragmentPath, "{domain_id}", weak.ID, 1)
		if table := f.html(t, domains.DomainsFragmentPath, contosoer); !strings.Contains(table, `hx-get="`+at+`"`) || !strings.Contains(table, `id="dmarc-domain-detail"`) {
			t.Errorf("the table opens no detail: %s", table)
		}
		got := f.html(t, at, contosoer)
		for _, want := range []string{"weak.example", "MTA-STS", "TLS-RPT", "BIMI", "DNSSEC", "not validated", "p=none", "v=DMARC1; p=none",
			"dnssec unsigned", "Sign the zone at its DNS host", "dmarc policy none"} {
			if !strings.Contains(got, want) {
				t.Errorf("the detail lacks %q: %s", want, got)
			}
		}
		other := strings.Replace(domains.DomainFragmentPath, "{domain_id}", missing.ID, 1)
		if code, body := f.call(t, http.MethodGet, other, "", contosoer); code != http.StatusNotFound || strings.Contains(string(body), "missing.example") {
			t.Errorf("fabrikam's domain for contoso's user: %d %s", code, body)
		}
		if code, body := f.call(t, http.MethodGet, at+"?tenant_id="+fabrikam.ID, "", admin); code != http.StatusNotFound || strings.Contains(string(body), "weak.example") {
			t.Errorf("contoso's domain under fabrikam for the admin: %d %s", code, body)
		}
	})
}
