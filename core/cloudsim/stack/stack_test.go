package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestDemoWorldMovesWithTime: when the date changes, the demo world
// regenerates and the next day's cost rows reach the cloud client.
func TestDemoWorldMovesWithTime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := simtest.NewClock(time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC))
	w, err := LoadWorld("", clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := Start(ctx, w, cloudsim.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Sim.Close()
	st.FollowDemo(ctx, 10*time.Millisecond)
	clients, err := cloud.New(st.CloudConfig())
	if err != nil {
		t.Fatal(err)
	}
	sub := st.Sim.World().Tenants[0].Subscriptions[0].ID
	next := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	rowsOn := func(day time.Time) int {
		n := 0
		if err := clients.DailyCosts(ctx, sub, cloud.ActualCost, day, day, func(cloud.CostRow) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rowsOn(next); n != 0 {
		t.Fatalf("%d cost rows for tomorrow before the day changed", n)
	}
	clk.Set(next.Add(time.Minute))
	deadline := time.Now().Add(5 * time.Second)
	for st.Sim.World() == w && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st.Sim.World() == w {
		t.Fatal("the demo world did not move to the new day")
	}
	if n := rowsOn(next); n == 0 {
		t.Fatal("no cost rows for the new day")
	}
	if !hasDate(st.Sim.World().Costs, next.Format(world.DateLayout)) {
		t.Fatal("new world lacks the new day")
	}
}

func hasDate(costs []world.Cost, day string) bool {
	for _, c := range costs {
		if c.Date == day {
			return true
		}
	}
	return false
}

// TestCloudConfigReachesPolicies: the stack's cloud settings reach the
// demo world's MTA-STS policies through the policy client, verified
// against the simulator's CA.
func TestCloudConfigReachesPolicies(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := LoadWorld("", time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Start(ctx, w, cloudsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Sim.Close()
	cfg := st.CloudConfig()
	if cfg.Endpoints.MTASTS != st.MTASTS.Addr() {
		t.Fatalf("MTA-STS endpoint %q, want %q", cfg.Endpoints.MTASTS, st.MTASTS.Addr())
	}
	clients, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := clients.MTASTS().MTASTSPolicy(ctx, "contoso-retail.example")
	if err != nil || !strings.Contains(policy, "mode: enforce") {
		t.Errorf("contoso-retail.example's policy %q, %v", policy, err)
	}
}
