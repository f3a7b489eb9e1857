package e2e

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/host/tenancy"
)

// TestOnboardDirect walks the onboarding of a tenant without delegation on
// SQLite: Northwind's directory has not consented to Steward's
// application, so verification fails on consent, telling the anonymous
// which check failed and nothing of the tenant; its administrator follows
// the admin consent URL, the simulated Entra ID sends the browser back to
// the callback, verification then passes check by check and registers the
// tenant with use_delegation false, and a costs sync reaches it with its
// application's token in its directory.
func TestOnboardDirect(t *testing.T) {
	today := time.Now().UTC()
	path, w := directWorld(t, today, false)
	h := startHost(t, hostOpts{pluginsHCL: costPlugins("    backfill_days = 30"),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "300", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	f := &fixture{h: h, admin: admin}
	// secrets are what the anonymous must never be told.
	secrets := []string{directDir, directSub1, directSub2, directBrand, "Northwind prod", "AADSTS"}

	// 1. The admin consent URL of Northwind's directory, on the simulated
	// identity provider.
	var link struct {
		TenantID    string `json:"tenant_id"`
		ConsentURL  string `json:"consent_url"`
		RedirectURI string `json:"redirect_uri"`
	}
	h.get("/onboarding/api/consent?tenant_id="+directDir, "").json(t, &link)
	consentURL, err := url.Parse(link.ConsentURL)
	if err != nil || consentURL.Scheme != "https" || consentURL.Path != "/"+directDir+"/adminconsent" || link.RedirectURI != h.url+"/onboarding/consent/callback" {
		t.Fatalf("consent link %+v (%v)", link, err)
	}
	// The landing page's consent form sends the browser there.
	browser := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the simulator's own CA, on loopback
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := browser.Get(h.url + "/onboarding/consent?tenant_id=" + directDir)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != link.ConsentURL {
		t.Fatalf("consent page: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	form := url.Values{"tenant_name": {directBrand}, "tenant_id": {directDir}, "subscription_id": {directSub1}, "use_delegation": {"false"}}
	var v verification
	// 2. Before consent: the anonymous are told the consent check failed
	// and how to fix it, in words naming nothing of the tenant; the admin
	// is told the identity provider's refusal and the consent URL.
	r := h.postForm("/onboarding/api/verify", form)
	r.json(t, &v)
	if r.status != http.StatusUnprocessableEntity || v.Success || v.Tenant != nil || len(v.Checks) != 1 || v.Checks[0].Name != "application_consented_in_directory" ||
		v.Checks[0].Passed || v.Error == nil || !strings.Contains(*v.Error, "admin consent") {
		t.Fatalf("anonymous verification before consent: %d %s", r.status, r.body)
	}
	for _, s := range secrets {
		if strings.Contains(string(r.body), s) {
			t.Errorf("the anonymous verification tells %q: %s", s, r.body)
		}
	}
	r = h.postFormAs("/onboarding/api/verify", admin, form)
	r.json(t, &v)
	if r.status != http.StatusUnprocessableEntity || v.Error == nil || !strings.Contains(*v.Error, "AADSTS700016") || !strings.Contains(*v.Error, link.ConsentURL) {
		t.Fatalf("admin verification before consent: %d %s", r.status, r.body)
	}

	// 3. The directory's administrator consents; Entra ID sends the
	// browser back to the callback, whose page offers the verification
	// without delegation.
	resp, err = browser.Get(link.ConsentURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || back.Scheme+"://"+back.Host+back.Path != link.RedirectURI {
		t.Fatalf("consent answered %d, to %s", resp.StatusCode, back)
	}
	r = h.get(back.Path+"?"+back.RawQuery, "")
	if page := string(r.body); r.status != http.StatusOK || !strings.Contains(page, "Admin consent granted") || !strings.Contains(page, `name="use_delegation" value="false"`) ||
		!strings.Contains(page, `value="`+directDir+`"`) {
		t.Fatalf("callback: %d %s", r.status, r.body)
	}

	// 4. Verification passes check by check, and registers the tenant
	// without delegation.
	r = h.postForm("/onboarding/api/verify", form)
	r.json(t, &v)
	var checks []string
	for _, c := range v.Checks {
		if !c.Passed {
			t.Errorf("check %+v", c)
		}
		checks = append(checks, c.Name)
	}
	if r.status != http.StatusCreated || !v.Success || v.Tenant == nil || v.Tenant.UseDelegation || v.Tenant.SubscriptionID != directSub1 ||
		strings.Join(checks, ",") != "application_consented_in_directory,subscription_readable_in_directory,subscription_in_directory_tenant,graph_readable_in_directory,tenant_not_already_managed" {
		t.Fatalf("verification after consent: %d %s", r.status, r.body)
	}
	northwind := v.Tenant.ID
	var tenants []tenancy.Tenant
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	if len(tenants) != 1 || tenants[0].ID != northwind || tenants[0].UseDelegation || tenants[0].DirectoryTenantID != directDir {
		t.Fatalf("tenants %+v", tenants)
	}
	var st struct {
		Access struct {
			Consented     bool     `json:"consented"`
			Readable      bool     `json:"readable"`
			Subscriptions []string `json:"subscriptions"`
		} `json:"access"`
	}
	h.get("/onboarding/status/"+northwind, admin).json(t, &st)
	if !st.Access.Consented || !st.Access.Readable || strings.Join(st.Access.Subscriptions, ",") != directSub1+","+directSub2 {
		t.Errorf("status %+v", st)
	}

	// Again, anonymously: each check and whether it passed, nothing of the
	// tenant.
	r = h.postForm("/onboarding/api/verify", form)
	r.json(t, &v)
	if r.status != http.StatusConflict || len(v.Checks) != 5 || !v.Checks[3].Passed || v.Checks[4].Passed || v.Checks[4].Name != "tenant_not_already_managed" {
		t.Errorf("anonymous verification of a registered tenant: %d %s", r.status, r.body)
	}
	for _, s := range append(secrets, northwind) {
		if strings.Contains(string(r.body), s) {
			t.Errorf("the anonymous verification of a registered tenant tells %q: %s", s, r.body)
		}
	}

	// 5. A costs sync reaches it: its summary is the world's, to the cent.
	if run := f.waitRun(t, f.trigger(t, "costs")); run.Status != "completed" {
		t.Fatalf("costs sync %+v", run)
	}
	expectDirectCosts(t, h, admin, northwind, w, today)
}
