package cloud_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	managingTenant = "11111111-1111-4111-8111-111111111111"
	brandTenant    = "22222222-2222-4222-8222-222222222222"
	clientID       = "steward-test-app"
	clientSecret   = "s3cret"
	billingAccount = "12345678"
)

// simNow is the simulator's clock in tests: the world's data is in 2026.
var simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// testRetry retries quickly, so fault tests run in milliseconds unless the
// service asks for a pause.
var testRetry = cloud.Retry{MaxRetries: 3, Delay: 10 * time.Millisecond, MaxDelay: 5 * time.Second}

// startSim serves w on a simulated cloud with the real identity provider
// and the ARM routes, and builds clients against it as Steward would.
func startSim(t testing.TB, w *world.World, opts ...arm.Option) (*cloudsim.Sim, *cloud.Clients) {
	t.Helper()
	s, p := simtest.Start(t, w, cloudsim.Options{Now: simtest.Fixed(simNow)}, simtest.Client(clientID, clientSecret))
	arm.Register(s, p, opts...)
	c, err := cloud.New(simConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func simConfig(s *cloudsim.Sim) cloud.Config {
	return cloud.Config{
		Provider: cloud.ProviderSim,
		TenantID: managingTenant, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints: cloud.Endpoints{
			Authority:       s.URLs[cloudsim.IdP],
			ResourceManager: s.URLs[cloudsim.ARM],
			Graph:           s.URLs[cloudsim.Graph],
		},
		CAPEM: s.CAPEM,
		Retry: testRetry,
	}
}

// baseWorld has two tenants, one subscription each, and a billing account.
// The brand tenant delegates to the managing one, so Steward reaches both.
func baseWorld() *world.World {
	ba := billingAccount
	return &world.World{Tenants: []world.Tenant{
		{Name: "Managing", DirectoryTenantID: managingTenant, BillingAccountID: &ba,
			Subscriptions: []world.Subscription{{ID: subID(0), Name: "Platform"}}},
		{Name: "Brand", DirectoryTenantID: brandTenant, Delegated: true,
			Subscriptions: []world.Subscription{{ID: subID(1), Name: "Brand Production"}}},
	}}
}

func subID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// addCosts gives a subscription a cost for each day from start and each
// service/resource group pair: pairs services across ten resource groups.
func addCosts(w *world.World, sub string, start time.Time, days, pairs int) {
	for d := 0; d < days; d++ {
		date := start.AddDate(0, 0, d).Format(time.DateOnly)
		for p := 0; p < pairs; p++ {
			w.Costs = append(w.Costs, world.Cost{
				SubscriptionID: sub, Date: date,
				Service:       fmt.Sprintf("Service %03d", p/10),
				ResourceGroup: fmt.Sprintf("rg-%02d", p%10),
				Cost:          float64(d*1000+p) / 100,
				Currency:      "EUR",
			})
		}
	}
}
