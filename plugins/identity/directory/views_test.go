package directory_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/sdk"
)

// TestStatsFragment: the dashboard card's gauge reads the caller's MFA
// coverage, with its admins without MFA, stale accounts and guests; a
// caller of one tenant sees that tenant's figures; before a sync the card
// says the data is coming.
func TestStatsFragment(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		card := func(target string) string {
			t.Helper()
			code, body := f.do(t, target, contosoer)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", target, code, body)
			}
			return string(body)
		}
		if got := card(directory.StatsFragmentPath); !strings.Contains(got, "No identity data yet") {
			t.Fatalf("card before a sync: %s", got)
		}
		f.mustRun(t)
		got := card(directory.StatsFragmentPath)
		for _, want := range []string{"MFA coverage, 3 of 5 enabled members: 60%", "Admins without MFA", ">1<", "3 accounts hold a directory role", "Stale accounts", "Guests"} {
			if !strings.Contains(got, want) {
				t.Errorf("contoso's card lacks %q: %s", want, got)
			}
		}
		if code, _ := f.do(t, directory.StatsFragmentPath+"?tenant_id="+fabrikam.ID, contosoer); code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("contoso's user asking for fabrikam's card: %d", code)
		}
		code, body := f.do(t, directory.StatsFragmentPath+"?tenant_id="+fabrikam.ID, admin)
		if code != http.StatusOK || !strings.Contains(string(body), "MFA coverage, 2 of 3 enabled members: 66.7%") {
			t.Errorf("fabrikam's card for an admin: %d %s", code, body)
		}
	})
}

// TestPage: the identity page shows the caller's MFA coverage as gauges,
// the daily trend and the hygiene lists — accounts without MFA with the
// admins first, privileged, stale, guests, disabled accounts holding
// roles — each with a link to the whole list on the API; a caller of one
// tenant sees nothing of another's, and is refused the page scoped to it;
// an admin sees each tenant's figures; before a sync the page says the
// data is coming.
func TestPage(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := identityWorld()
		f := start(t, dialect, w, nil)
		// Cal never signed in, and is stale when created before the
		// cut-off.
		stale := []string{"Bea Old"}
		if simgraph.CreatedDateTime(w.Users[3], simNow).Before(simNow.AddDate(0, 0, -90)) {
			stale = append(stale, "Cal Never")
		}
		page := func(target string, p sdk.Principal) string {
			t.Helper()
			code, body := f.do(t, target, p)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", target, code, body)
			}
			return string(body)
		}
		if got := page(directory.PagePath, contosoer); !strings.Contains(got, "No identity data yet") {
			t.Fatalf("page before a sync: %s", got)
		}
		f.mustRun(t)
		got := page(directory.PagePath, contosoer)
		for _, want := range []string{
			"MFA coverage, 3 of 5 enabled members: 60%", "Admin MFA, 2 of 3 admins: 66.7%",
			"MFA coverage in percent", "Enabled members ends at 60", "Admins ends at 66.67",
			"3 of 3 accounts without MFA", `href="/api/v1/identity/users/without-mfa?limit=500"`,
			"3 of 3 role assignments.", "1 of 1 role assignments of disabled accounts", fmt.Sprintf("%d of %[1]d stale accounts", len(stale)), "1 of 1 guests",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("contoso's page lacks %q", want)
			}
		}
		for _, other := range []string{"Fabrikam", "Fay Admin", "Gil Member", "Hal Nomfa", "fabrikam.example"} {
			if strings.Contains(got, other) {
				t.Errorf("contoso's page shows %q", other)
			}
		}
		// Accounts without MFA: the admin Rory before Cal and Gus.
		section := between(t, got, "Accounts without MFA, admins first", "Privileged accounts")
		if r, c, g := strings.Index(section, "Rory Root"), strings.Index(section, "Cal Never"), strings.Index(section, "Gus Guest"); r < 0 || !(r < c && c < g) {
			t.Errorf("accounts without MFA not admins first: %s", section)
		}
		section = between(t, got, "Stale accounts", "Guests")
		for _, name := range stale {
			if !strings.Contains(section, name) {
				t.Errorf("stale accounts lack %s: %s", name, section)
			}
		}
		if strings.Contains(section, "Dee Gone") || strings.Contains(section, "Eve Member") {
			t.Errorf("stale accounts: %s", section)
		}
		if section := between(t, got, "Disabled accounts holding roles", "Device compliance"); !strings.Contains(section, "Dee Gone") ||
			!strings.Contains(section, "Global Administrator") || strings.Contains(section, "Ada Admin") {
			t.Errorf("disabled accounts holding roles: %s", section)
		}
		// Contoso's review, in progress, ended on 1 November.
		if section := between(t, got, "Overdue access reviews", "Users at risk"); !strings.Contains(section, "Quarterly review") ||
			!strings.Contains(section, "2026-11-01") || !strings.Contains(section, "overdue by 44 days") || !strings.Contains(section, "1 of 1 overdue access reviews") ||
			!strings.Contains(section, `href="/api/v1/identity/access-reviews?limit=500&amp;overdue=true&amp;sort_by=ends_at"`) {
			t.Errorf("overdue access reviews: %s", section)
		}
		// Contoso's Conditional Access: MFA enforced for all and for
		// admins, legacy authentication in report-only, and its policies.
		section = between(t, got, "Conditional Access", "MFA coverage, last")
		if strings.Count(section, ">Enforced<") != 2 || strings.Count(section, ">Report-only<") != 2 || !strings.Contains(section, "MFA for everyone") ||
			!strings.Contains(section, "Admins: MFA or a compliant device") || !strings.Contains(section, "mfa or compliantDevice") ||
			strings.Contains(section, `health-ok">Security defaults<`) {
			t.Errorf("contoso's Conditional Access: %s", section)
		}
		if code, body := f.do(t, directory.PagePath+"?tenant_id="+fabrikam.ID, contosoer); code != http.StatusForbidden || strings.Contains(string(body), "Hal Nomfa") {
			t.Errorf("contoso's user asking for fabrikam's page: %d %s", code, body)
		}

		// An admin sees both tenants, each named, and the lists name the
		// tenant of each row; scoped to Fabrikam, Fabrikam's alone.
		all := page(directory.PagePath, admin)
		for _, want := range []string{"MFA coverage, 5 of 8 enabled members: 62.5%", "MFA coverage of each tenant", "Contoso", "Fabrikam", "60 %", "66.67 %", "Hal Nomfa"} {
			if !strings.Contains(all, want) {
				t.Errorf("the admin's page lacks %q", want)
			}
		}
		section = between(t, all, "Conditional Access controls of each tenant", "</table>")
		if c, fb := strings.Index(section, "Contoso"), strings.Index(section, "Fabrikam"); c < 0 || c > fb || strings.Count(section, `health-ok">Security defaults<`) != 3 ||
			strings.Contains(section, "MFA for everyone") {
			t.Errorf("the tenants' Conditional Access: %s", section)
		}
		if c, fb := strings.Index(all, "<td>Contoso</td>"), strings.Index(all, "<td>Fabrikam</td>"); c < 0 || c > fb {
			t.Errorf("the tenants' figures are not by name: %s", between(t, all, "MFA coverage of each tenant", "</table>"))
		}
		fab := page(directory.PagePath+"?tenant_id="+fabrikam.ID, admin)
		if !strings.Contains(fab, "MFA coverage, 2 of 3 enabled members: 66.7%") || strings.Contains(fab, "Rory Root") ||
			!strings.Contains(fab, "tenant_ids="+fabrikam.ID) || !strings.Contains(fab, "No role assignments of disabled accounts.") {
			t.Errorf("fabrikam's page for an admin: %s", fab)
		}
	})
}

// between is the part of s from the first from to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		t.Fatalf("no %q in %s", from, s)
	}
	part, _, _ := strings.Cut(rest, to)
	return part
}

// TestPageOfALargeTenant: a list longer than the API's largest page shows
// its first rows, the exact count, and links the API's pages of it.
func TestPageOfALargeTenant(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		// 1,700 users besides the fixture's, three in ten without MFA.
		f := start(t, dialect, bulkWorld(1700), nil)
		f.mustRun(t)
		code, body := f.do(t, directory.PagePath+"?tenant_id="+contoso.ID, contosoer)
		got := string(body)
		if code != http.StatusOK {
			t.Fatalf("page: %d %s", code, got)
		}
		section := between(t, got, "Accounts without MFA, admins first", "Privileged accounts")
		for _, want := range []string{"10 of 513 accounts without MFA.",
			`href="/api/v1/identity/users/without-mfa?limit=500&amp;tenant_ids=` + contoso.ID + `">The 513 accounts without MFA as JSON</a>, 500 a page`} {
			if !strings.Contains(section, want) {
				t.Errorf("accounts without MFA lack %q: %s", want, section)
			}
		}
		if n := strings.Count(section, "<tr>"); n != 11 {
			t.Errorf("accounts without MFA show %d rows with the header, want 11", n)
		}
		if !strings.Contains(between(t, section, "<tbody>", "</tr>"), "Rory Root") {
			t.Errorf("the first account without MFA is not the admin Rory: %s", section)
		}
	})
}
