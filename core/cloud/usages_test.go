package cloud_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// usageWorld has 250 compute quotas in West Europe (three pages), a few
// network ones, and quotas elsewhere that must not show.
func usageWorld() *world.World {
	w := baseWorld()
	w.Quotas = append(w.Quotas,
		world.Quota{SubscriptionID: subID(0), Location: "westeurope", Provider: "compute", Name: "cores", CurrentValue: 52, Limit: 100},
		world.Quota{SubscriptionID: subID(0), Location: "westeurope", Provider: "network", Name: "VirtualNetworks", CurrentValue: 8, Limit: 50},
		world.Quota{SubscriptionID: subID(0), Location: "westeurope", Provider: "network", Name: "PublicIPAddresses", CurrentValue: 3, Limit: 1000},
		world.Quota{SubscriptionID: subID(0), Location: "northeurope", Provider: "compute", Name: "cores", CurrentValue: 1, Limit: 10},
		world.Quota{SubscriptionID: subID(1), Location: "westeurope", Provider: "compute", Name: "cores", CurrentValue: 2, Limit: 20},
	)
	for i := 1; i < 250; i++ {
		w.Quotas = append(w.Quotas, world.Quota{SubscriptionID: subID(0), Location: "westeurope", Provider: "compute",
			Name: fmt.Sprintf("standardFamily%03d", i), CurrentValue: float64(i), Limit: float64(10 * i)})
	}
	return w
}

func listUsages(c *cloud.Clients, sub, location, provider string) ([]cloud.Usage, error) {
	var us []cloud.Usage
	err := c.Usages(context.Background(), sub, location, provider, func(u cloud.Usage) error {
		us = append(us, u)
		return nil
	})
	return us, err
}

func TestUsagesPagesFieldByField(t *testing.T) {
	w := usageWorld()
	s, c := startSim(t, w)
	for _, provider := range []string{cloud.UsageCompute, cloud.UsageNetwork} {
		var want []world.Quota
		for _, q := range w.Quotas {
			if q.SubscriptionID == subID(0) && q.Location == "westeurope" && q.Provider == provider {
				want = append(want, q)
			}
		}
		got, err := listUsages(c, subID(0), "westeurope", provider)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d usages, want %d", provider, len(got), len(want))
		}
		for i, q := range want {
			u := got[i]
			if u.Name != q.Name || u.CurrentValue != q.CurrentValue || u.Limit != q.Limit || u.Unit != "Count" || u.LocalizedName == "" {
				t.Fatalf("%s usage %d: %+v, want %+v", provider, i, u, q)
			}
		}
	}
	compute, _ := listUsages(c, subID(0), "westeurope", cloud.UsageCompute)
	if compute[0].LocalizedName != "Total Regional vCPUs" {
		t.Fatalf("cores shown as %q", compute[0].LocalizedName)
	}
	network, _ := listUsages(c, subID(0), "westeurope", cloud.UsageNetwork)
	if network[0].LocalizedName != "Virtual Networks" {
		t.Fatalf("virtual networks shown as %q", network[0].LocalizedName)
	}
	// 250 compute usages are three pages; the network ones one page.
	if hits := s.Faults.Hits(cloudsim.ARM, "/subscriptions/"+subID(0)+"/providers/Microsoft.Compute/locations/westeurope/usages"); hits != 6 {
		t.Fatalf("%d compute requests for two listings, want 3 pages each", hits)
	}
	if _, err := listUsages(c, subID(0), "westeurope", "storage"); err == nil {
		t.Fatal("an unknown provider was listed")
	}
}

func TestUsagesRetryAfter(t *testing.T) {
	s, c := startSim(t, usageWorld())
	path := "/subscriptions/" + subID(0) + "/providers/Microsoft.Network/"
	s.Faults.Set(cloudsim.ARM, path, cloudsim.Fault{Status: 503, RetryAfter: time.Second, Times: 1})
	start := time.Now()
	got, err := listUsages(c, subID(0), "westeurope", cloud.UsageNetwork)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d usages, %v", len(got), err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("retried after %v, before the Retry-After of 1s", elapsed)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, path); hits != 2 {
		t.Fatalf("%d requests, want the unavailable one and its retry", hits)
	}
}
