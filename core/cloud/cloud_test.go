package cloud_test

import (
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
)

func TestNewValidatesConfig(t *testing.T) {
	s, _ := startSim(t, baseWorld())
	for name, mutate := range map[string]func(*cloud.Config){
		"unknown provider":     func(c *cloud.Config) { c.Provider = "aws" },
		"sim without endpoint": func(c *cloud.Config) { c.Endpoints.ResourceManager = "" },
		"plain http endpoint":  func(c *cloud.Config) { c.Endpoints.ResourceManager = "http://127.0.0.1:1" },
		"CA that is not PEM":   func(c *cloud.Config) { c.CAPEM = []byte("not a certificate") },
		"secret missing":       func(c *cloud.Config) { c.ClientSecret = "" },
	} {
		cfg := simConfig(s)
		mutate(&cfg)
		if _, err := cloud.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	cfg := simConfig(s)
	cfg.Credential = "kerberos"
	if _, err := cloud.New(cfg); !errors.Is(err, cloud.ErrUnsupportedCredential) {
		t.Errorf("credential %q: %v, want ErrUnsupportedCredential", cfg.Credential, err)
	}
}

func TestNewBuildsEveryCredentialKind(t *testing.T) {
	for _, kind := range []cloud.CredentialKind{"", cloud.CredentialClientSecret, cloud.CredentialManagedIdentity} {
		c, err := cloud.New(cloud.Config{Provider: cloud.ProviderAzure, TenantID: managingTenant, ClientID: clientID, ClientSecret: clientSecret, Credential: kind})
		if err != nil {
			t.Fatalf("credential %q: %v", kind, err)
		}
		if ep := c.Endpoints(); ep.Authority != cloud.PublicAuthority || ep.ResourceManager != cloud.PublicResourceManager || ep.Graph != cloud.PublicGraph {
			t.Fatalf("azure defaults: %+v", ep)
		}
	}
}

func TestCredentialFailureKeepsItsType(t *testing.T) {
	s, _ := startSim(t, baseWorld())
	cfg := simConfig(s)
	cfg.ClientSecret = "wrong"
	c, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscriptions(context.Background(), func(cloud.Subscription) error { return nil })
	var authErr *azidentity.AuthenticationFailedError
	if !errors.As(err, &authErr) {
		t.Fatalf("err %v, want the credential's AuthenticationFailedError", err)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/"); hits != 0 {
		t.Fatalf("%d requests reached ARM without a token", hits)
	}
}
