package onboarding

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/host/tenancy"
)

const (
	simManaging  = "22222222-2222-4222-8222-222222222222"
	northwind    = "33333333-3333-4333-8333-333333333333"
	northwindSub = "cccccccc-0000-0000-0000-0000000000d1"
	tailspin     = "44444444-4444-4444-8444-444444444444"
	tailspinSub  = "dddddddd-0000-0000-0000-0000000000d1"
	contoso      = "11111111-1111-4111-8111-111111111111"
	contosoSub   = "aaaaaaaa-0000-0000-0000-0000000000d1"
	callback     = "http://127.0.0.1:8000/onboarding/consent/callback"
)

// startCloud serves a simulated cloud of Steward's managing tenant,
// Northwind (not delegated, no consent yet), Tailspin (not delegated,
// consented) and Contoso (delegated, no consent in its directory), and
// returns Steward's clients of it.
func startCloud(t *testing.T) (*stack.Stack, *cloud.Clients) {
	t.Helper()
	no := false
	w := &world.World{Tenants: []world.Tenant{
		{Name: "Steward", DirectoryTenantID: simManaging, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-0000000000d1", Name: "Steward"}}},
		{Name: "Northwind", DirectoryTenantID: northwind, Consented: &no, Subscriptions: []world.Subscription{{ID: northwindSub, Name: "Northwind prod"}}},
		{Name: "Tailspin", DirectoryTenantID: tailspin, Subscriptions: []world.Subscription{{ID: tailspinSub, Name: "Tailspin prod"}}},
		{Name: "Contoso", DirectoryTenantID: contoso, Delegated: true, Consented: &no, Subscriptions: []world.Subscription{{ID: contosoSub, Name: "Contoso prod"}}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := stack.Start(ctx, w, cloudsim.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); st.Sim.Close() })
	cfg := st.CloudConfig()
	cfg.Retry = cloud.Retry{MaxRetries: -1}
	c, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, c
}

// consent has the directory's administrator open the admin consent URL
// Steward gives, and returns where the browser is sent back to.
func consent(t *testing.T, st *stack.Stack, c *cloud.Clients, dir string) *url.URL {
	t.Helper()
	u, err := c.AdminConsentURL(dir, callback)
	if err != nil {
		t.Fatal(err)
	}
	browser := st.Sim.HTTPClient()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := browser.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("consent at %s: %d %v", u, resp.StatusCode, err)
	}
	return loc
}

func checkNames(res Result) string {
	var out []string
	for _, c := range res.Checks {
		mark := "-"
		if c.Passed {
			mark = "+"
		}
		out = append(out, mark+c.Name)
	}
	return strings.Join(out, " ")
}

// TestVerifyDirect: a tenant onboarded without delegation is verified with
// the application's own token in its directory, check by check: consent
// missing fails with the admin consent URL as the fix and creates nothing;
// once consented, Resource Manager and Graph answer and the tenant is
// registered with use_delegation false. Resource Manager's 403, a
// subscription of another directory and Graph's refusal each fail their
// check.
func TestVerifyDirect(t *testing.T) {
	st, c := startCloud(t)
	store := &fakeTenants{byDirectory: map[string]*tenancy.Tenant{}}
	v := &Verifier{Cloud: c, Tenants: store, ManagingTenantID: simManaging, ConsentRedirectURI: callback}
	ctx := context.Background()
	req := Request{TenantName: "Northwind", DirectoryTenantID: northwind, SubscriptionID: northwindSub, Direct: true}

	res, err := v.Verify(ctx, req)
	if err != nil || res.Outcome != Failed || checkNames(res) != "-application_consented_in_directory" ||
		!strings.Contains(res.Reason, "directory "+northwind+" refused Steward's application a token: it has not granted the application admin consent (AADSTS700016: ") ||
		!strings.Contains(res.Reason, "grants Steward's application admin consent at "+st.Sim.URLs[cloudsim.IdP]+"/"+northwind+"/adminconsent?client_id=") {
		t.Fatalf("consent missing: %+v %v", res, err)
	}
	if len(store.byDirectory) != 0 {
		t.Fatal("a tenant without consent was recorded")
	}

	if back := consent(t, st, c, northwind); back.Query().Get("admin_consent") != "True" || back.Query().Get("tenant") != northwind {
		t.Fatalf("consent sent the browser to %s", back)
	}
	res, err = v.Verify(ctx, req)
	if err != nil || res.Outcome != Created || res.Tenant == nil || res.Tenant.UseDelegation || res.Tenant.SubscriptionID != northwindSub ||
		checkNames(res) != "+application_consented_in_directory +subscription_readable_in_directory +subscription_in_directory_tenant +graph_readable_in_directory +tenant_not_already_managed" {
		t.Fatalf("consent granted: %+v %v", res, err)
	}

	for _, c := range []struct {
		name   string
		fault  func()
		req    Request
		checks string
		reason string
	}{
		{"Resource Manager's 403", func() {
			st.Sim.Faults.Set(cloudsim.ARM, "/subscriptions", cloudsim.Fault{Status: http.StatusForbidden})
		},
			Request{TenantName: "Tailspin", DirectoryTenantID: tailspin, SubscriptionID: tailspinSub, Direct: true},
			"+application_consented_in_directory -subscription_readable_in_directory", "refused Steward's application subscription " + tailspinSub + " (403): assign the application Reader"},
		{"another directory's subscription", func() {},
			Request{TenantName: "Tailspin", DirectoryTenantID: tailspin, SubscriptionID: northwindSub, Direct: true},
			"+application_consented_in_directory -subscription_readable_in_directory", "directory " + tailspin + " lists 1 other subscriptions to Steward's application but not " + northwindSub},
		{"Graph refused", func() { st.Sim.Faults.Set(cloudsim.Graph, "/v1.0/users", cloudsim.Fault{Status: http.StatusForbidden}) },
			Request{TenantName: "Tailspin", DirectoryTenantID: tailspin, SubscriptionID: tailspinSub, Direct: true},
			"+application_consented_in_directory +subscription_readable_in_directory +subscription_in_directory_tenant -graph_readable_in_directory",
			"Microsoft Graph refused Steward's application in directory " + tailspin + ": no access to the tenant: cloud: read users in tenant " + tailspin + ": 403 Forbidden"},
		// Lighthouse does not reach Entra ID: a delegated tenant whose
		// directory has not consented fails on Graph, with the consent
		// URL as the fix.
		{"a delegated tenant without consent", func() {},
			Request{TenantName: "Contoso", DirectoryTenantID: contoso, SubscriptionID: contosoSub},
			"+not_managing_tenant +subscription_reachable_by_delegation +subscription_in_directory_tenant -graph_readable_in_directory",
			"(Azure Lighthouse delegation does not reach Entra ID, so the directory must consent to the application as well): no access to the tenant: directory " + contoso +
				" refused Steward's application a token: AADSTS700016"},
	} {
		st.Sim.Faults.Clear()
		c.fault()
		res, err := v.Verify(ctx, c.req)
		if err != nil || res.Outcome != Failed || checkNames(res) != c.checks || !strings.Contains(res.Reason, c.reason) || res.Tenant != nil {
			t.Errorf("%s: %s: %+v %v", c.name, checkNames(res), res, err)
		}
	}
	st.Sim.Faults.Clear()
	if len(store.byDirectory) != 1 {
		t.Errorf("tenants recorded: %v", store.byDirectory)
	}

	// With its directory's consent, the delegated tenant is registered with
	// delegation.
	consent(t, st, c, contoso)
	res, err = v.Verify(ctx, Request{TenantName: "Contoso", DirectoryTenantID: contoso, SubscriptionID: contosoSub})
	if err != nil || res.Outcome != Created || !res.Tenant.UseDelegation {
		t.Errorf("delegated tenant after consent: %+v %v", res, err)
	}
}
