package onboarding_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/onboarding"
	"github.com/stewardhq/steward/host/tenancy"
)

const (
	managing     = "22222222-2222-2222-2222-222222222222"
	delegated    = "11111111-1111-1111-1111-111111111111"
	notDelegated = "33333333-3333-3333-3333-333333333333"
	delegatedSub = "aaaaaaaa-0000-0000-0000-000000000001"
	plainSub     = "cccccccc-0000-0000-0000-000000000001"
)

type verification struct {
	Success bool               `json:"success"`
	Tenant  *tenancy.Tenant    `json:"tenant"`
	Checks  []onboarding.Check `json:"checks"`
	Error   *string            `json:"error"`
}

// start starts a host on a simulated cloud of Steward's managing tenant, a
// customer that delegated its subscription and one that did not.
func start(t *testing.T) *apptest.Host {
	w := world.World{Tenants: []world.Tenant{
		{Name: "Steward", DirectoryTenantID: managing, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "Steward"}}},
		{Name: "Contoso", DirectoryTenantID: delegated, Subscriptions: []world.Subscription{{ID: delegatedSub, Name: "Contoso prod"}}, Delegated: true},
		{Name: "Fabrikam", DirectoryTenantID: notDelegated, Subscriptions: []world.Subscription{{ID: plainSub, Name: "Fabrikam prod"}}},
	}}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "world.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return apptest.Start(t, apptest.Options{Env: map[string]string{"STEWARD_SIM_WORLD": path}})
}

func TestOnboardingRoutes(t *testing.T) {
	h := start(t)
	admin := h.Login()
	html := func(t *testing.T, what string, a apptest.Answer, status int, contains ...string) {
		t.Helper()
		if !a.Expect(t, what, status) {
			return
		}
		if !strings.HasPrefix(a.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %s, want a page", what, a.Header.Get("Content-Type"))
		}
		for _, s := range contains {
			if !strings.Contains(string(a.Body), s) {
				t.Errorf("%s: the page lacks %q: %s", what, s, a.Body)
			}
		}
	}

	t.Run("the deployment template", func(t *testing.T) {
		html(t, "landing page", h.Do(http.MethodGet, "/onboarding/", "", "", ""), http.StatusOK,
			`action="/onboarding/generate-template"`, `action="/onboarding/verify"`)
		a := h.Do(http.MethodGet, "/onboarding/api/template?org_name="+url.QueryEscape("Contoso <Ltd>"), "", "", "")
		var tpl struct {
			Parameters map[string]struct {
				DefaultValue any `json:"defaultValue"`
			} `json:"parameters"`
		}
		if a.Expect(t, "JSON template", http.StatusOK) {
			a.Decode(t, &tpl)
			if a.Header.Get("Content-Type") != "application/json" || tpl.Parameters["managedByTenantId"].DefaultValue != managing ||
				tpl.Parameters["mspOfferName"].DefaultValue != "Steward governance — Contoso <Ltd>" {
				t.Errorf("JSON template: %s", a.Body)
			}
		}
		long := strings.Repeat("x", 101)
		if a := h.Do(http.MethodGet, "/onboarding/api/template?org_name="+long, "", "", ""); a.Expect(t, "JSON template of a long name", http.StatusUnprocessableEntity) && !a.Problem(t).Names("query.org_name") {
			t.Errorf("JSON template of a long name: %s", a.Body)
		}
		html(t, "template page", h.Form("/onboarding/generate-template", "", url.Values{"org_name": {"<script>x</script>"}}), http.StatusOK,
			"az deployment sub create", "&lt;script&gt;x&lt;/script&gt;", managing)
		html(t, "template page of a long name", h.Form("/onboarding/generate-template", "", url.Values{"org_name": {long}}), http.StatusUnprocessableEntity,
			"Please correct the form", "org_name")
		var formats []string
		for _, e := range h.Audit("onboarding.template.success") {
			formats = append(formats, e.Details["format"].(string))
		}
		if strings.Join(formats, ",") != "html,json" {
			t.Errorf("template audit formats %v, want html after json", formats)
		}
	})

	var created tenancy.Tenant
	t.Run("a delegated subscription creates its tenant once", func(t *testing.T) {
		form := url.Values{"tenant_name": {"  Contoso  "}, "tenant_id": {delegated}, "subscription_id": {delegatedSub}, "description": {"Brand C"}}
		a := h.Form("/onboarding/api/verify", "", form)
		var v verification
		if !a.Expect(t, "verify", http.StatusCreated) {
			t.FailNow()
		}
		a.Decode(t, &v)
		if !v.Success || v.Tenant == nil || v.Tenant.Name != "Contoso" || !v.Tenant.UseDelegation || v.Tenant.SubscriptionID != delegatedSub || v.Error != nil || len(v.Checks) == 0 {
			t.Fatalf("verify: %s", a.Body)
		}
		created = *v.Tenant
		if es := h.Audit("tenant.create.success"); len(es) != 1 || es[0].ResourceID != created.ID || es[0].Details["source"] != "onboarding" {
			t.Errorf("create audit: %+v", es)
		}
		if es := h.Audit("onboarding.verify.success"); len(es) != 1 || es[0].ResourceID != created.ID {
			t.Errorf("verify audit: %+v", es)
		}

		// Again: an admin is told why, anyone else only that it failed.
		a = h.Form("/onboarding/api/verify", admin, form)
		v = verification{}
		if a.Expect(t, "verify again as an admin", http.StatusConflict) {
			a.Decode(t, &v)
			if v.Success || v.Tenant != nil || v.Error == nil || !strings.Contains(*v.Error, "already managed") {
				t.Errorf("verify again as an admin: %s", a.Body)
			}
		}
		// Anyone else is told each check and whether it passed, in words
		// that name no subscription or directory.
		a = h.Form("/onboarding/api/verify", "", form)
		v = verification{}
		if a.Expect(t, "verify again anonymously", http.StatusConflict) {
			a.Decode(t, &v)
			if v.Error == nil || *v.Error != "the directory tenant is already managed by Steward" || len(v.Checks) != 5 || v.Checks[4].Passed ||
				strings.Contains(string(a.Body), delegated) || strings.Contains(string(a.Body), delegatedSub) {
				t.Errorf("verify again anonymously: %s", a.Body)
			}
		}
		html(t, "verify page again anonymously", h.Form("/onboarding/verify", "", form), http.StatusConflict,
			"Verification failed", "already managed by Steward", "Failed — <strong>tenant_not_already_managed</strong>")
		html(t, "verify page again as an admin", h.Form("/onboarding/verify", admin, form), http.StatusConflict, "Verification failed", "already managed")
	})

	t.Run("what is not delegated creates nothing", func(t *testing.T) {
		form := url.Values{"tenant_name": {"Fabrikam"}, "tenant_id": {notDelegated}, "subscription_id": {plainSub}}
		a := h.Form("/onboarding/api/verify", admin, form)
		var v verification
		if a.Expect(t, "verify undelegated", http.StatusUnprocessableEntity) {
			a.Decode(t, &v)
			failed := false
			for _, c := range v.Checks {
				failed = failed || !c.Passed
			}
			if v.Success || v.Tenant != nil || v.Error == nil || !failed {
				t.Errorf("verify undelegated: %s", a.Body)
			}
		}
		html(t, "verify page undelegated", h.Form("/onboarding/verify", "", form), http.StatusUnprocessableEntity, "Verification failed", "Nothing was registered")
		if ts, err := tenancy.New(h.DB).Tenants(t.Context(), nil, true); err != nil || len(ts) != 1 {
			t.Errorf("tenants %v (%v), want only the delegated one", ts, err)
		}
		if es := h.Audit("onboarding.verify.failure"); len(es) < 3 {
			t.Errorf("failed verifications audited %d times, want every one", len(es))
		}
	})

	t.Run("invalid input", func(t *testing.T) {
		a := h.Form("/onboarding/api/verify", "", url.Values{"tenant_name": {"X"}, "tenant_id": {"not-a-guid"}, "subscription_id": {plainSub}})
		if a.Expect(t, "a malformed directory id", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.tenant_id") {
			t.Errorf("a malformed directory id: %s", a.Body)
		}
		html(t, "an empty page form", h.Do(http.MethodPost, "/onboarding/verify", "", "", ""), http.StatusUnprocessableEntity,
			"Please correct the form", "tenant_name", "subscription_id")
	})

	t.Run("status for those who may see the tenant", func(t *testing.T) {
		path := "/onboarding/status/" + created.ID
		var st struct {
			TenantID   string `json:"tenant_id"`
			Delegation struct {
				Reachable bool   `json:"reachable"`
				Detail    string `json:"detail"`
			} `json:"delegation"`
		}
		if a := h.Do(http.MethodGet, path, admin, "", ""); a.Expect(t, "status as an admin", http.StatusOK) {
			a.Decode(t, &st)
			if st.TenantID != created.ID || !st.Delegation.Reachable {
				t.Errorf("status: %s", a.Body)
			}
		}
		other := h.Tenant("Other", "dir-other")
		_, user := h.User("user@other.example", other)
		for what, token := range map[string]string{"anonymous": "", "a user of another tenant": user} {
			if a := h.Do(http.MethodGet, path, token, "", ""); a.Expect(t, "status "+what, http.StatusNotFound) && a.Problem(t).Detail != "no tenant with that id" {
				t.Errorf("status %s: %s", what, a.Body)
			}
		}
		h.Do(http.MethodGet, "/onboarding/status/00000000-0000-4000-8000-00000000dead", admin, "", "").Expect(t, "status of an unknown tenant", http.StatusNotFound)
	})
	t.Run("onboarding without delegation", func(t *testing.T) {
		var link struct {
			TenantID    string `json:"tenant_id"`
			ConsentURL  string `json:"consent_url"`
			RedirectURI string `json:"redirect_uri"`
		}
		a := h.Do(http.MethodGet, "/onboarding/api/consent?tenant_id="+strings.ToUpper(notDelegated), "", "", "")
		if a.Expect(t, "consent URL", http.StatusOK) {
			a.Decode(t, &link)
			u, err := url.Parse(link.ConsentURL)
			if err != nil || link.TenantID != notDelegated || u.Path != "/"+notDelegated+"/adminconsent" || u.Query().Get("client_id") == "" ||
				u.Query().Get("redirect_uri") != link.RedirectURI || !strings.HasSuffix(link.RedirectURI, "/onboarding/consent/callback") {
				t.Errorf("consent URL: %s", a.Body)
			}
		}
		for _, q := range []string{"", "?tenant_id=nope"} {
			if a := h.Do(http.MethodGet, "/onboarding/api/consent"+q, "", "", ""); a.Expect(t, "consent URL of "+q, http.StatusUnprocessableEntity) && !a.Problem(t).Names("query.tenant_id") {
				t.Errorf("consent URL of %q: %s", q, a.Body)
			}
		}
		if a := h.Do(http.MethodGet, "/onboarding/consent?tenant_id="+notDelegated, "", "", ""); a.Status != http.StatusSeeOther || a.Header.Get("Location") != link.ConsentURL {
			t.Errorf("consent page: %d %s %s", a.Status, a.Header.Get("Location"), a.Body)
		}
		html(t, "consent page of a malformed id", h.Do(http.MethodGet, "/onboarding/consent?tenant_id=nope", "", "", ""), http.StatusUnprocessableEntity,
			"Please correct the form", "tenant_id must be the directory tenant id")

		html(t, "consent granted", h.Do(http.MethodGet, "/onboarding/consent/callback?admin_consent=True&tenant="+notDelegated+"&state=x", "", "", ""), http.StatusOK,
			"Admin consent granted", `name="use_delegation" value="false"`, `value="`+notDelegated+`"`)
		html(t, "consent refused", h.Do(http.MethodGet, "/onboarding/consent/callback?error=access_denied&error_description="+
			url.QueryEscape("AADSTS90094: The grant requires admin permission.")+"&tenant="+notDelegated, "", "", ""), http.StatusUnprocessableEntity,
			"Admin consent was not granted", "access_denied", "AADSTS90094: The grant requires admin permission.", `action="/onboarding/consent"`)
		html(t, "not a consent answer", h.Do(http.MethodGet, "/onboarding/consent/callback?admin_consent=True&tenant=<b>", "", "", ""), http.StatusUnprocessableEntity,
			"Admin consent was not granted", "not an admin consent answer")

		form := url.Values{"tenant_name": {"Fabrikam"}, "tenant_id": {notDelegated}, "subscription_id": {plainSub}, "use_delegation": {"false"}}
		a = h.Form("/onboarding/api/verify", "", form)
		var v verification
		if !a.Expect(t, "verify without delegation", http.StatusCreated) {
			t.FailNow()
		}
		a.Decode(t, &v)
		if !v.Success || v.Tenant == nil || v.Tenant.UseDelegation || v.Tenant.SubscriptionID != plainSub || len(v.Checks) != 5 || v.Checks[0].Name != onboarding.CheckConsent {
			t.Fatalf("verify without delegation: %s", a.Body)
		}
		if es := h.Audit("tenant.create.success"); len(es) != 2 || es[0].Details["use_delegation"] != false {
			t.Errorf("create audit: %+v", es)
		}
		if a := h.Form("/onboarding/api/verify", "", url.Values{"tenant_name": {"X"}, "tenant_id": {notDelegated}, "subscription_id": {plainSub}, "use_delegation": {"maybe"}}); a.Expect(t, "use_delegation maybe", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.use_delegation") {
			t.Errorf("use_delegation maybe: %s", a.Body)
		}

		// Its status reports consent and readability, not delegation.
		path := "/onboarding/status/" + v.Tenant.ID
		var st struct {
			Delegation *struct{} `json:"delegation"`
			Access     *struct {
				Consented     bool     `json:"consented"`
				Readable      bool     `json:"readable"`
				Subscriptions []string `json:"subscriptions"`
				Detail        string   `json:"detail"`
			} `json:"access"`
		}
		if a := h.Do(http.MethodGet, path, admin, "", ""); a.Expect(t, "status without delegation", http.StatusOK) {
			a.Decode(t, &st)
			if st.Delegation != nil || st.Access == nil || !st.Access.Consented || !st.Access.Readable || strings.Join(st.Access.Subscriptions, ",") != plainSub {
				t.Errorf("status without delegation: %s", a.Body)
			}
		}
		other := h.Tenant("Another", "dir-another")
		_, user := h.User("user@another.example", other)
		for what, token := range map[string]string{"anonymous": "", "a user of another tenant": user} {
			if a := h.Do(http.MethodGet, path, token, "", ""); a.Expect(t, "status without delegation "+what, http.StatusNotFound) && strings.Contains(string(a.Body), notDelegated) {
				t.Errorf("status without delegation %s: %s", what, a.Body)
			}
		}
	})
}
