// Package stack starts the whole simulated cloud — the servers, the
// identity provider, Resource Manager, DNS, the MTA-STS policy hosts and
// the exchange rates — and says how Steward's cloud
// clients reach it. The host (STEWARD_CLOUD=sim) and `steward sim` use it.
package stack

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/mtasts"
	"github.com/stewardhq/steward/core/cloudsim/rates"
	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// DemoSeed makes the built-in demo world the same on every start.
const DemoSeed = 1

// ClientID and ClientSecret are the application credentials Steward uses
// against the simulator, which accepts any client in development.
const (
	ClientID     = "steward-dev"
	ClientSecret = "steward-dev-secret"
)

// Stack is a running simulated cloud.
type Stack struct {
	Sim *cloudsim.Sim
	IdP *idp.Provider
	// DNS answers the world's DNS records; its address is pinned by
	// o.Addrs[simdns.Service].
	DNS *simdns.Server
	// MTASTS answers for the world's MTA-STS policy hosts; its address
	// is pinned by o.Addrs[mtasts.Service].
	MTASTS *mtasts.Server
}

// LoadWorld reads the world file, or generates the demo world for today
// when path is empty.
func LoadWorld(path string, now time.Time) (*world.World, error) {
	if path == "" {
		return world.Demo(DemoSeed, now), nil
	}
	return world.Load(path)
}

// Start serves w on loopback.
func Start(ctx context.Context, w *world.World, o cloudsim.Options) (*Stack, error) {
	if len(w.Tenants) == 0 {
		return nil, fmt.Errorf("the world has no tenants")
	}
	s, err := cloudsim.Start(ctx, w, o)
	if err != nil {
		return nil, err
	}
	d, err := simdns.Start(w, o.Addrs[simdns.Service], s.Logger())
	if err != nil {
		s.Close()
		return nil, err
	}
	go func() {
		<-ctx.Done()
		d.Close()
	}()
	policies, err := mtasts.Start(ctx, s, o.Addrs[mtasts.Service])
	if err != nil {
		s.Close()
		d.Close()
		return nil, err
	}
	p := idp.Register(s, idp.Options{})
	arm.Register(s, p)
	graph.Register(s, p)
	rates.Register(s)
	return &Stack{Sim: s, IdP: p, DNS: d, MTASTS: policies}, nil
}

// FollowDemo regenerates the demo world whenever the simulator's date
// changes, so a long-running development host sees each new day's cost
// rows arrive as in production. Call it only when the world is the demo.
func (st *Stack) FollowDemo(ctx context.Context, check time.Duration) {
	day := st.Sim.Now().UTC().Format(world.DateLayout)
	tick := time.NewTicker(check)
	go func() {
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			now := st.Sim.Now()
			if today := now.UTC().Format(world.DateLayout); today != day {
				day = today
				st.Sim.SetWorld(world.Demo(DemoSeed, now))
				st.Sim.Logger().Info("demo world moved to a new day", "date", today)
			}
		}
	}()
}

// CloudConfig is the client configuration that reaches the simulator.
// Steward authenticates in the world's first tenant, which plays the
// managing tenant of a Lighthouse setup.
func (st *Stack) CloudConfig() cloud.Config {
	return cloud.Config{
		Provider:     cloud.ProviderSim,
		TenantID:     st.Sim.World().Tenants[0].DirectoryTenantID,
		ClientID:     ClientID,
		ClientSecret: ClientSecret,
		Credential:   cloud.CredentialClientSecret,
		Endpoints: cloud.Endpoints{
			Authority:       st.Sim.URLs[cloudsim.IdP] + "/",
			ResourceManager: st.Sim.URLs[cloudsim.ARM],
			Graph:           st.Sim.URLs[cloudsim.Graph],
			DNS:             st.DNS.Addr(),
			MTASTS:          st.MTASTS.Addr(),
			ExchangeRates:   st.Sim.URLs[cloudsim.ARM] + rates.Path,
		},
		CAPEM: st.Sim.CAPEM,
		Retry: cloud.Retry{MaxRetries: 3, Delay: 200 * time.Millisecond, MaxDelay: 10 * time.Second},
	}
}

// Log writes the addresses the simulator serves.
func (st *Stack) Log(logger hclog.Logger) {
	logger.Info("simulated cloud serving",
		"identity_provider", st.Sim.URLs[cloudsim.IdP], "resource_manager", st.Sim.URLs[cloudsim.ARM], "graph", st.Sim.URLs[cloudsim.Graph], "dns", st.DNS.Addr(), "mta_sts", st.MTASTS.Addr(),
		"exchange_rates", st.Sim.URLs[cloudsim.ARM]+rates.Path,
		"tenants", len(st.Sim.World().Tenants), "users", len(st.Sim.World().Users))
}
