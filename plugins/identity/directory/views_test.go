package directory_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/identity/directory"
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
		for _, want := range []string{"MFA coverage, 4 of 7 accounts: 57.1%", "Admins without MFA", ">1<", "3 accounts hold a directory role", "Stale accounts", "Guests"} {
			if !strings.Contains(got, want) {
				t.Errorf("contoso's card lacks %q: %s", want, got)
			}
		}
		if code, _ := f.do(t, directory.StatsFragmentPath+"?tenant_id="+fabrikam.ID, contosoer); code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("contoso's user asking for fabrikam's card: %d", code)
		}
		code, body := f.do(t, directory.StatsFragmentPath+"?tenant_id="+fabrikam.ID, admin)
		if code != http.StatusOK || !strings.Contains(string(body), "MFA coverage, 2 of 3 accounts: 66.7%") {
			t.Errorf("fabrikam's card for an admin: %d %s", code, body)
		}
	})
}
