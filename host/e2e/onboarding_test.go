package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/host/tenancy"
)

const (
	obManaging     = "22222222-2222-2222-2222-222222222222"
	obDelegated    = "11111111-1111-1111-1111-111111111111"
	obNotDelegated = "33333333-3333-3333-3333-333333333333"
	obDelegatedSub = "aaaaaaaa-0000-0000-0000-000000000001"
	obPlainSub     = "cccccccc-0000-0000-0000-000000000001"
)

// onboardingWorld: Steward's managing tenant first, a customer that
// delegated its subscription and one that did not.
func onboardingWorld(t *testing.T) string {
	w := world.World{Tenants: []world.Tenant{
		{Name: "Steward", DirectoryTenantID: obManaging, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "Steward"}}},
		{Name: "Contoso", DirectoryTenantID: obDelegated, Subscriptions: []world.Subscription{{ID: obDelegatedSub, Name: "Contoso prod"}}, Delegated: true},
		{Name: "Fabrikam", DirectoryTenantID: obNotDelegated, Subscriptions: []world.Subscription{{ID: obPlainSub, Name: "Fabrikam prod"}}},
	}}
	return writeWorld(t, w)
}

func (h *host) postForm(path string, form url.Values) response {
	h.t.Helper()
	return h.postFormAs(path, "", form)
}

func (h *host) postFormAs(path, token string, form url.Values) response {
	h.t.Helper()
	return h.do(http.MethodPost, path, token, strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
}

type verification struct {
	Success bool            `json:"success"`
	Tenant  *tenancy.Tenant `json:"tenant"`
	Checks  []struct {
		Name   string `json:"name"`
		Passed bool   `json:"passed"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Error *string `json:"error"`
}

func TestOnboarding(t *testing.T) {
	// The auth budget is raised for the test's volume, and kept apart from
	// the default one so the header shows which one onboarding draws on.
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_SIM_WORLD": onboardingWorld(t),
		"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE": "300", "STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	// Only an admin is told why a verification created nothing (see
	// TestAnonymousSeesNoTenant for what the anonymous are told).
	admin := h.login()

	page := h.get("/onboarding/", "")
	if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.body), `action="/onboarding/generate-template"`) || !strings.Contains(string(page.body), `action="/onboarding/verify"`) {
		t.Fatalf("landing page: %d %s", page.status, page.body)
	}
	if got := page.header.Get("X-RateLimit-Limit"); got != "300" {
		t.Errorf("onboarding rate limit %q, want the auth budget", got)
	}

	// The JSON template: a subscription deployment of the two Lighthouse
	// resources, naming the managing tenant.
	r := h.get("/onboarding/api/template?org_name="+url.QueryEscape("Contoso <Ltd>"), "")
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("template: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var tpl struct {
		Schema     string `json:"$schema"`
		Parameters map[string]struct {
			DefaultValue any `json:"defaultValue"`
		} `json:"parameters"`
		Resources []struct {
			Type       string `json:"type"`
			APIVersion string `json:"apiVersion"`
		} `json:"resources"`
	}
	r.json(t, &tpl)
	if !strings.Contains(tpl.Schema, "subscriptionDeploymentTemplate.json") || len(tpl.Resources) != 2 ||
		tpl.Resources[0].Type != "Microsoft.ManagedServices/registrationDefinitions" || tpl.Resources[1].Type != "Microsoft.ManagedServices/registrationAssignments" ||
		tpl.Parameters["managedByTenantId"].DefaultValue != obManaging || tpl.Parameters["mspOfferName"].DefaultValue != "Steward governance — Contoso <Ltd>" {
		t.Errorf("template %s", r.body)
	}
	expectInvalid(t, h.get("/onboarding/api/template?org_name="+url.QueryEscape("a\nb"), ""), "query.org_name")

	// The page variant escapes the organisation name inside the template.
	r = h.postForm("/onboarding/generate-template", url.Values{"org_name": {"<script>x</script>"}})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "az deployment sub create") ||
		!strings.Contains(string(r.body), "&lt;script&gt;x&lt;/script&gt;") || strings.Contains(string(r.body), "<script>") {
		t.Errorf("template page: %d %s", r.status, r.body)
	}
	if r = h.do(http.MethodPost, "/onboarding/generate-template", "", nil); r.status != http.StatusOK {
		t.Errorf("template page without a form: %d %s", r.status, r.body)
	}

	// A delegated subscription: the tenant is created once.
	form := url.Values{"tenant_name": {"  Contoso  "}, "tenant_id": {obDelegated}, "subscription_id": {obDelegatedSub}, "description": {"Brand C"}}
	r = h.postForm("/onboarding/api/verify", form)
	var v verification
	r.json(t, &v)
	if r.status != http.StatusCreated || !v.Success || v.Tenant == nil || !v.Tenant.UseDelegation || v.Tenant.Name != "Contoso" ||
		v.Tenant.DirectoryTenantID != obDelegated || v.Tenant.SubscriptionID != obDelegatedSub || v.Error != nil || len(v.Checks) == 0 {
		t.Fatalf("verify delegated: %d %s", r.status, r.body)
	}
	created := v.Tenant.ID
	r = h.postFormAs("/onboarding/api/verify", admin, form)
	if r.status != http.StatusConflict {
		t.Errorf("repeat (JSON): %d %s", r.status, r.body)
	}
	r.json(t, &v)
	if v.Success || v.Tenant != nil || v.Error == nil || !strings.Contains(*v.Error, "already managed") {
		t.Errorf("repeat body %s", r.body)
	}
	if r = h.postFormAs("/onboarding/verify", admin, form); r.status != http.StatusConflict || !strings.Contains(string(r.body), "already managed") {
		t.Errorf("repeat (page): %d %s", r.status, r.body)
	}

	var st struct {
		TenantID          string `json:"tenant_id"`
		DirectoryTenantID string `json:"directory_tenant_id"`
		UseDelegation     bool   `json:"use_delegation"`
		IsActive          bool   `json:"is_active"`
		Delegation        struct {
			Reachable bool   `json:"reachable"`
			CheckedAt string `json:"checked_at"`
		} `json:"delegation"`
	}
	h.get("/onboarding/status/"+created, admin).json(t, &st)
	if st.TenantID != created || st.DirectoryTenantID != obDelegated || !st.UseDelegation || !st.IsActive || !st.Delegation.Reachable || st.Delegation.CheckedAt == "" {
		t.Errorf("status %+v", st)
	}
	if r = h.get("/onboarding/status/00000000-0000-0000-0000-000000000000", admin); r.status != http.StatusNotFound {
		t.Errorf("unknown tenant status: %d", r.status)
	}

	// A subscription not delegated: the reason, and nothing created.
	bad := url.Values{"tenant_name": {"Fabrikam"}, "tenant_id": {obNotDelegated}, "subscription_id": {obPlainSub}}
	r = h.postFormAs("/onboarding/api/verify", admin, bad)
	r.json(t, &v)
	if r.status != http.StatusUnprocessableEntity || v.Success || v.Tenant != nil || v.Error == nil || !strings.Contains(*v.Error, "not delegated") {
		t.Errorf("verify not delegated: %d %s", r.status, r.body)
	}
	if r = h.postFormAs("/onboarding/verify", admin, bad); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "Verification failed") || !strings.Contains(string(r.body), "not delegated") {
		t.Errorf("verify page not delegated: %d %s", r.status, r.body)
	}
	// A delegated subscription named under another directory tenant.
	r = h.postFormAs("/onboarding/api/verify", admin, url.Values{"tenant_name": {"Contoso again"}, "tenant_id": {obNotDelegated}, "subscription_id": {obDelegatedSub}})
	if r.json(t, &v); r.status != http.StatusUnprocessableEntity || v.Error == nil || !strings.Contains(*v.Error, "belongs to directory tenant "+obDelegated) {
		t.Errorf("subscription of another directory: %d %s", r.status, r.body)
	}

	// Invalid input names the field.
	invalid := url.Values{"tenant_name": {"X"}, "tenant_id": {"not-a-guid"}, "subscription_id": {obPlainSub}}
	expectInvalid(t, h.postForm("/onboarding/api/verify", invalid), "body.tenant_id")
	if r = h.postForm("/onboarding/verify", invalid); r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "<strong>tenant_id</strong>") {
		t.Errorf("invalid page: %d %s", r.status, r.body)
	}

	var tenants []tenancy.Tenant
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	if len(tenants) != 1 || tenants[0].ID != created || !tenants[0].UseDelegation {
		t.Errorf("tenants after onboarding: %+v", tenants)
	}

	var audit auditPage
	h.get("/api/v1/audit-logs?limit=500", admin).json(t, &audit)
	count := map[string]int{}
	var reasons []string
	for _, e := range audit.Items {
		count[e.Action]++
		if e.Action == "onboarding.verify.failure" {
			reason, _ := e.Details["reason"].(string)
			reasons = append(reasons, reason)
		}
		if (e.Action == "onboarding.verify.success" || e.Action == "tenant.create.success") && (e.TenantID == nil || *e.TenantID != created) {
			t.Errorf("%s for tenant %v", e.Action, e.TenantID)
		}
	}
	if count["onboarding.template.success"] != 3 || count["onboarding.verify.success"] != 1 || count["tenant.create.success"] != 1 || count["onboarding.verify.failure"] != 7 {
		t.Errorf("audit counts %v", count)
	}
	if !strings.Contains(strings.Join(reasons, "|"), "not delegated") {
		t.Errorf("failure reasons %q", reasons)
	}
}
