package cloud_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/mtasts"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const stsPolicy = "version: STSv1\r\nmode: enforce\r\nmx: mail.brand.example\r\nmax_age: 604800\r\n"

// startPolicies serves w's MTA-STS policies from a simulator and returns
// its server.
func startPolicies(t *testing.T, w *world.World) (*cloudsim.Sim, *mtasts.Server) {
	t.Helper()
	s, _ := simtest.Start(t, w, cloudsim.Options{}, simtest.Client(clientID, clientSecret))
	p, err := mtasts.Start(t.Context(), s, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return s, p
}

// TestMTASTSPolicy fetches the world's policies through the client the
// cloud settings build, over TLS verified against each policy host's
// name: a policy, a host failing, a redirect, a wrong media type, a
// domain without a policy, and one outside the world, whose host has no
// certificate.
func TestMTASTSPolicy(t *testing.T) {
	w := baseWorld()
	w.Tenants[1].Domains = []string{"brand.example", "failing.example", "moved.example", "html.example", "bare.example"}
	w.MTASTS = []world.MTASTSPolicy{
		{Domain: "Brand.example", Policy: stsPolicy},
		{Domain: "failing.example", Policy: "oops", Status: 500},
		{Domain: "moved.example", Status: 301},
		{Domain: "html.example", Policy: stsPolicy, ContentType: "text/html"},
	}
	s, p := startPolicies(t, w)
	cfg := simConfig(s)
	cfg.Endpoints.MTASTS = p.Addr()
	clients, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := clients.MTASTS()
	got, err := c.MTASTSPolicy(t.Context(), "brand.example")
	if err != nil || got != stsPolicy {
		t.Fatalf("policy %q, %v", got, err)
	}
	for domain, want := range map[string]string{
		"failing.example": "HTTP 500",
		"moved.example":   "HTTP 301",
		"html.example":    `media type "text/html"`,
		"bare.example":    "HTTP 404",
	} {
		if _, err := c.MTASTSPolicy(t.Context(), domain); !errors.Is(err, cloud.ErrPolicy) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", domain, err, want)
		}
	}
	if _, err := c.MTASTSPolicy(t.Context(), "elsewhere.example"); err == nil || errors.Is(err, cloud.ErrPolicy) {
		t.Errorf("a host outside the world: %v, want a TLS failure", err)
	}

	// Without the simulator's CA the policy host is not trusted.
	untrusted, err := cloud.NewPolicyClient(p.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusted.MTASTSPolicy(t.Context(), "brand.example"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the simulator's CA: %v", err)
	}
	if _, err := cloud.NewPolicyClient("", []byte("not a certificate")); err == nil {
		t.Error("a CA that is not PEM was accepted")
	}
}
