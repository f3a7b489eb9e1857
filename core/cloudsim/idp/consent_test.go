package idp_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestAdminConsent: a directory that has not consented refuses the
// application a token until its administrator grants consent at the admin
// consent endpoint, which then sends the browser back as Entra ID does; a
// user who may not consent, a request it cannot send back and an unknown
// directory change nothing.
func TestAdminConsent(t *testing.T) {
	const redirect = "http://localhost:8400/onboarding/consent/callback"
	no := false
	w := &world.World{
		Tenants: []world.Tenant{
			{Name: "Contoso", DirectoryTenantID: contosoID, Domains: []string{"contoso.example"}, Consented: &no},
			{Name: "Fabrikam", DirectoryTenantID: fabrikamID, Consented: &no},
		},
		Users: []world.User{
			{Email: "carol@fabrikam.example", Name: "Carol Reader", DirectoryTenantID: fabrikamID},
			{Email: "dana@fabrikam.example", Name: "Dana Admin", DirectoryTenantID: fabrikamID, IsPrivileged: true},
		},
	}
	opts := idp.Options{Clients: map[string]idp.Client{
		simtest.ClientID: {Secret: simtest.ClientSecret, RedirectURIs: []string{redirect}},
	}}
	s, _ := simtest.Start(t, w, cloudsim.Options{Now: simtest.Fixed(time.Now())}, opts)
	browser := s.HTTPClient()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	consent := func(tenant string, overrides ...string) (int, string, *url.URL) {
		t.Helper()
		q := url.Values{"client_id": {simtest.ClientID}, "redirect_uri": {redirect}, "state": {"st"}}
		for i := 0; i < len(overrides); i += 2 {
			q.Set(overrides[i], overrides[i+1])
		}
		resp, err := browser.Get(s.URLs[cloudsim.IdP] + "/" + tenant + "/adminconsent?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return resp.StatusCode, string(b), loc
	}
	tokenStatus := func(tenant string) (int, map[string]any) {
		return simtest.PostToken(t, s, tenant, url.Values{"grant_type": {"client_credentials"}, "client_id": {simtest.ClientID},
			"client_secret": {simtest.ClientSecret}, "scope": {armAPI + "/.default"}})
	}

	if status, body := tokenStatus(fabrikamID); !isError(status, body, 400, "unauthorized_client", 700016) {
		t.Fatalf("token before consent: %d %v", status, body)
	}

	// Requests that cannot go back to the application are answered with a
	// page, never a redirect.
	for name, c := range map[string]struct {
		tenant    string
		overrides []string
		aadsts    string
	}{
		"unknown directory":     {"nowhere.example", nil, "AADSTS90002"},
		"no client id":          {fabrikamID, []string{"client_id", ""}, "AADSTS900144"},
		"unregistered redirect": {fabrikamID, []string{"redirect_uri", "http://localhost:8400/elsewhere"}, "AADSTS50011"},
		"organizations alone":   {"organizations", nil, "AADSTS9002313"},
	} {
		if status, body, _ := consent(c.tenant, c.overrides...); status != http.StatusBadRequest || !strings.Contains(body, c.aadsts) {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	// A user who may not consent for the organisation is sent back with
	// Entra ID's error.
	status, _, loc := consent(fabrikamID, "login_hint", "carol@fabrikam.example")
	if q := loc.Query(); status != http.StatusFound || q.Get("error") != "access_denied" || !strings.HasPrefix(q.Get("error_description"), "AADSTS90094: ") ||
		q.Get("state") != "st" || q.Get("admin_consent") != "" {
		t.Errorf("a user who may not consent: %d %s", status, loc)
	}
	if s.Consents(fabrikamID) {
		t.Fatal("refused consents were granted")
	}

	status, _, loc = consent("organizations", "login_hint", "dana@fabrikam.example")
	if q := loc.Query(); status != http.StatusFound || loc.Host != "localhost:8400" || loc.Path != "/onboarding/consent/callback" ||
		q.Get("admin_consent") != "True" || q.Get("tenant") != fabrikamID || q.Get("state") != "st" || q.Get("error") != "" {
		t.Fatalf("consent by Fabrikam's administrator: %d %s", status, loc)
	}
	if status, body := tokenStatus(fabrikamID); status != http.StatusOK || body["access_token"] == nil {
		t.Fatalf("token after consent: %d %v", status, body)
	}
	if s.Consents(contosoID) {
		t.Fatal("Fabrikam's consent was granted in Contoso too")
	}
	// A directory named in the path, by its domain, consents at once.
	status, _, loc = consent("contoso.example")
	if status != http.StatusFound || loc.Query().Get("admin_consent") != "True" || loc.Query().Get("tenant") != contosoID || !s.Consents(contosoID) {
		t.Fatalf("consent in Contoso: %d %s", status, loc)
	}

	// Consent is kept at run time: a replaced world (as the demo world is
	// each day) keeps it, and withdrawing it refuses tokens again.
	s.SetWorld(&world.World{Tenants: w.Tenants, Users: w.Users})
	if !s.Consents(fabrikamID) {
		t.Error("the consent did not outlive the world")
	}
	s.SetConsent(fabrikamID, false)
	if status, body := tokenStatus(fabrikamID); !isError(status, body, 400, "unauthorized_client", 700016) {
		t.Errorf("token after consent was withdrawn: %d %v", status, body)
	}
	if s.Consents("44444444-4444-4444-4444-444444444444") {
		t.Error("a directory not in the world consents")
	}
}
