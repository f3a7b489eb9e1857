package cloud_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestAdminConsentURL: the admin consent endpoint of the directory on the
// configured authority, with the application and the redirect URI; a
// credential without a client id has none.
func TestAdminConsentURL(t *testing.T) {
	s, c := startSim(t, baseWorld())
	got, err := c.AdminConsentURL(strings.ToUpper(brandTenant), "http://127.0.0.1:8000/onboarding/consent/callback")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil || u.Scheme+"://"+u.Host != s.URLs[cloudsim.IdP] || u.Path != "/"+brandTenant+"/adminconsent" ||
		u.Query().Get("client_id") != clientID || u.Query().Get("redirect_uri") != "http://127.0.0.1:8000/onboarding/consent/callback" {
		t.Errorf("consent URL %s (%v)", got, err)
	}
	public, err := cloud.New(cloud.Config{Provider: cloud.ProviderAzure, TenantID: managingTenant, Credential: cloud.CredentialManagedIdentity})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := public.AdminConsentURL(brandTenant, "https://steward.example/onboarding/consent/callback"); !errors.Is(err, cloud.ErrNoClientID) {
		t.Errorf("system-assigned managed identity: %v", err)
	}
}

// TestCheckGraph: Graph answers the application in a consented directory;
// a directory without consent refuses its token, and Graph's 403 is
// refused access too.
func TestCheckGraph(t *testing.T) {
	w := graphWorld()
	w.Tenants = append(w.Tenants, world.Tenant{Name: "Tailspin", DirectoryTenantID: directTenant, Consented: new(false)})
	s, c := startGraphSim(t, w)
	ctx := context.Background()
	if err := c.CheckGraph(ctx, brandTenant); err != nil {
		t.Fatalf("consented directory: %v", err)
	}
	err := c.CheckGraph(ctx, directTenant)
	if !errors.Is(err, cloud.ErrNoAccess) || !strings.Contains(err.Error(), "directory "+directTenant+" refused Steward's application a token: AADSTS700016") {
		t.Errorf("directory without consent: %v", err)
	}
	s.Faults.Set(cloudsim.Graph, "/v1.0/users", cloudsim.Fault{Status: 403})
	if err := c.CheckGraph(ctx, brandTenant); !errors.Is(err, cloud.ErrNoAccess) || !errors.Is(err, cloud.ErrForbidden) {
		t.Errorf("Graph's 403: %v", err)
	}
	s.Faults.Set(cloudsim.Graph, "/v1.0/users", cloudsim.Fault{Status: 503})
	if err := c.CheckGraph(ctx, brandTenant); errors.Is(err, cloud.ErrNoAccess) || !errors.Is(err, cloud.ErrUnavailable) {
		t.Errorf("Graph down: %v", err)
	}
}
