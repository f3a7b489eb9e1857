package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/tenancy"
)

// TestAnonymousSeesNoTenant: the routes that answer without a token
// (freshness, onboarding status and verification) show no tenant's name,
// id or directory to an anonymous caller, and a signed-in caller only the
// tenants it may see.
func TestAnonymousSeesNoTenant(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_SIM_WORLD": onboardingWorld(t),
		"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	ts := tenancy.New(h.db())
	ctx := context.Background()
	contoso := tenancy.Tenant{Name: "Contoso", DirectoryTenantID: obDelegated, SubscriptionID: obDelegatedSub, AccessGroups: []string{"grp-contoso"}, UseDelegation: true, IsActive: true}
	fabrikam := tenancy.Tenant{Name: "Fabrikam", DirectoryTenantID: obNotDelegated, SubscriptionID: obPlainSub, AccessGroups: []string{"grp-fabrikam"}, IsActive: true}
	for _, tn := range []*tenancy.Tenant{&contoso, &fabrikam} {
		if err := ts.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	carol := tenancy.User{DirectoryTenantID: contoso.DirectoryTenantID, Subject: "oid-carol", Email: "carol@contoso.example", Name: "Carol", Groups: []string{"grp-contoso"}}
	if err := ts.UpsertUser(ctx, &carol); err != nil {
		t.Fatal(err)
	}
	user := h.tokenFor(carol)
	secrets := []string{contoso.ID, fabrikam.ID, "Contoso", "Fabrikam", obDelegated, obNotDelegated, obDelegatedSub, obPlainSub}
	revealed := func(body []byte) string {
		for _, s := range secrets {
			if strings.Contains(string(body), s) {
				return s
			}
		}
		return ""
	}

	t.Run("freshness", func(t *testing.T) {
		r := h.get("/api/v1/health/data", "")
		if s := revealed(r.body); r.status != http.StatusOK || s != "" {
			t.Fatalf("anonymous freshness reveals %q: %d %s", s, r.status, r.body)
		}
		// No plugin here keeps a data domain current, so nothing can make
		// a tenant stale: both count as fresh.
		var counts map[string]int
		if r.json(t, &counts); len(counts) != 2 || counts["fresh"] != 2 || counts["stale"] != 0 {
			t.Errorf("anonymous freshness %s, want the counts of fresh and stale tenants", r.body)
		}
		var fresh map[string]map[string]any
		if h.get("/api/v1/health/data", user).json(t, &fresh); len(fresh) != 1 || fresh["Contoso"]["stale"] != false {
			t.Errorf("a user's freshness: %v", fresh)
		}
		if h.get("/api/v1/health/data", admin).json(t, &fresh); len(fresh) != 2 || fresh["Fabrikam"] == nil {
			t.Errorf("admin freshness: %v", fresh)
		}
	})

	t.Run("onboarding status", func(t *testing.T) {
		unknown := h.get("/onboarding/status/00000000-0000-0000-0000-000000000000", user)
		if unknown.status != http.StatusNotFound {
			t.Fatalf("unknown tenant: %d %s", unknown.status, unknown.body)
		}
		// Hidden and unknown tenants answer alike, so the answer tells
		// nothing of whether the id exists.
		for _, c := range []struct{ who, token, id string }{{"anonymous", "", contoso.ID}, {"another tenant's user", user, fabrikam.ID}} {
			r := h.get("/onboarding/status/"+c.id, c.token)
			if r.status != http.StatusNotFound || string(r.body) != string(unknown.body) {
				t.Errorf("%s: %d %s, want the unknown tenant's %s", c.who, r.status, r.body, unknown.body)
			}
		}
		var st struct {
			DirectoryTenantID string `json:"directory_tenant_id"`
			Delegation        struct {
				Reachable bool `json:"reachable"`
			} `json:"delegation"`
		}
		r := h.get("/onboarding/status/"+contoso.ID, user)
		if r.json(t, &st); r.status != http.StatusOK || st.DirectoryTenantID != obDelegated || !st.Delegation.Reachable {
			t.Errorf("the tenant's own user: %d %s", r.status, r.body)
		}
		if r = h.get("/onboarding/status/"+fabrikam.ID, admin); r.status != http.StatusOK || !strings.Contains(string(r.body), obNotDelegated) {
			t.Errorf("admin: %d %s", r.status, r.body)
		}
	})

	t.Run("verification", func(t *testing.T) {
		// The anonymous are told each check and whether it passed, with
		// fixed words that name no subscription, directory or tenant and
		// repeat none of the cloud's: not which directory owns a
		// delegated subscription, nor the cloud's error text.
		probe := "44444444-4444-4444-4444-444444444444"
		for _, c := range []struct {
			what, dir, sub string
			status         int
			failed         string
		}{
			{"a delegated subscription named under another directory", probe, obDelegatedSub, http.StatusUnprocessableEntity, "subscription_in_directory_tenant"},
			{"a subscription not delegated", probe, obPlainSub, http.StatusUnprocessableEntity, "subscription_reachable_by_delegation"},
			{"an unknown subscription", probe, "dddddddd-0000-0000-0000-000000000001", http.StatusUnprocessableEntity, "subscription_reachable_by_delegation"},
			{"a tenant already managed", obDelegated, obDelegatedSub, http.StatusConflict, "tenant_not_already_managed"},
		} {
			var v verification
			r := h.postForm("/onboarding/api/verify", url.Values{"tenant_name": {"Probe"}, "tenant_id": {c.dir}, "subscription_id": {c.sub}})
			r.json(t, &v)
			last := len(v.Checks) - 1
			if r.status != c.status || v.Success || v.Tenant != nil || last < 0 || v.Checks[last].Passed || v.Checks[last].Name != c.failed ||
				v.Error == nil || *v.Error != v.Checks[last].Detail {
				t.Errorf("anonymous, %s: %d %s", c.what, r.status, r.body)
			}
			for _, secret := range []string{obDelegated, obNotDelegated, obManaging, obDelegatedSub, obPlainSub, c.sub, "Contoso", "Fabrikam", "cloud:", "Forbidden"} {
				if strings.Contains(string(r.body), secret) {
					t.Errorf("anonymous, %s: the answer tells %q: %s", c.what, secret, r.body)
				}
			}
		}
		form := url.Values{"tenant_name": {"Probe"}, "tenant_id": {probe}, "subscription_id": {obPlainSub}}
		if r := h.postForm("/onboarding/verify", form); r.status != http.StatusUnprocessableEntity || strings.Contains(string(r.body), obDelegated) || strings.Contains(string(r.body), "cloud:") ||
			!strings.Contains(string(r.body), "Failed — <strong>subscription_reachable_by_delegation</strong>") {
			t.Errorf("anonymous page: %d %s", r.status, r.body)
		}

		form.Set("subscription_id", obDelegatedSub)
		var v verification
		r := h.do(http.MethodPost, "/onboarding/api/verify", admin, strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		if r.json(t, &v); r.status != http.StatusUnprocessableEntity || v.Error == nil || !strings.Contains(*v.Error, "belongs to directory tenant "+obDelegated) {
			t.Errorf("admin, subscription of another directory: %d %s", r.status, r.body)
		}
	})
}
