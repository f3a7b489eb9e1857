package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const resourceGraphPath = "/providers/Microsoft.ResourceGraph/resources"

// resourceGraphWorld has 2100 disks (three pages) and 40 virtual machines in
// subscription 0, and 30 disks in the brand subscription.
func resourceGraphWorld() *world.World {
	w := baseWorld()
	add := func(sub, typ, name string, n int) {
		provider := map[string]string{"microsoft.compute/disks": "Microsoft.Compute/disks", "microsoft.compute/virtualmachines": "Microsoft.Compute/virtualMachines"}[typ]
		w.Resources = append(w.Resources, world.Resource{
			SubscriptionID: sub, Type: typ, Name: name, Location: []string{"westeurope", "eastus"}[n%2],
			ID:         fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-%d/providers/%s/%s", sub, n%4, provider, name),
			Tags:       map[string]string{"env": "prod", "cost-center": fmt.Sprint(100 + n%3)},
			Properties: map[string]any{"diskSizeGB": float64(n), "diskState": []string{"Attached", "Unattached"}[n%2]},
		})
	}
	for i := 0; i < 2100; i++ {
		add(subID(0), "microsoft.compute/disks", fmt.Sprintf("disk-%04d", i), i)
	}
	for i := 0; i < 40; i++ {
		add(subID(0), "microsoft.compute/virtualmachines", fmt.Sprintf("vm-%02d", i), i)
	}
	for i := 0; i < 30; i++ {
		add(subID(1), "microsoft.compute/disks", fmt.Sprintf("brand-disk-%02d", i), i)
	}
	return w
}

func listResources(c *cloud.Clients, subs []string, typ string) ([]cloud.Resource, error) {
	var out []cloud.Resource
	err := c.Resources(context.Background(), subs, typ, func(r cloud.Resource) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

func TestResourcesPagesFieldByField(t *testing.T) {
	w := resourceGraphWorld()
	s, c := startSim(t, w)
	got, err := listResources(c, []string{subID(0)}, "Microsoft.Compute/disks")
	if err != nil {
		t.Fatal(err)
	}
	var want []world.Resource
	for _, r := range w.Resources {
		if r.SubscriptionID == subID(0) && r.Type == "microsoft.compute/disks" {
			want = append(want, r)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d resources, want %d", len(got), len(want))
	}
	for i, r := range want {
		g := got[i]
		if g.ID != r.ID || g.Name != r.Name || g.Type != r.Type || g.Location != r.Location || g.SubscriptionID != r.SubscriptionID ||
			g.ResourceGroup != strings.Split(r.ID, "/")[4] || g.TenantID != managingTenant || !maps.Equal(g.Tags, r.Tags) ||
			g.Properties["diskSizeGB"] != r.Properties["diskSizeGB"] || g.Properties["diskState"] != r.Properties["diskState"] {
			t.Fatalf("resource %d\n got %+v\nwant %+v", i, g, r)
		}
	}
	// 2100 rows are three pages of 1000.
	if hits := s.Faults.Hits(cloudsim.ARM, resourceGraphPath); hits != 3 {
		t.Fatalf("%d requests, want 3 pages", hits)
	}

	// No subscriptions named: every one Steward reaches, the brand's too.
	all, err := listResources(c, nil, "")
	if err != nil || len(all) != len(w.Resources) {
		t.Fatalf("every resource: %d, %v; want %d", len(all), err, len(w.Resources))
	}
	brand, err := listResources(c, []string{subID(1)}, "")
	if err != nil || len(brand) != 30 || brand[0].TenantID != brandTenant || brand[0].Name != "brand-disk-00" {
		t.Fatalf("brand subscription: %d resources, %v", len(brand), err)
	}
	if _, err := listResources(c, nil, "x' or type =~ 'y"); err == nil {
		t.Fatal("a type that breaks out of the string literal was queried")
	}
}

func TestResourceQueryRefused(t *testing.T) {
	_, c := startSim(t, resourceGraphWorld())
	err := c.QueryResources(context.Background(), nil, "Resources | where properties.diskState == 'Unattached'", func(cloud.Resource) error { return nil })
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrInvalidQuery) || !errors.As(err, &e) || e.StatusCode != 400 || e.Code != "InvalidQuery" {
		t.Fatalf("unsupported query: %v, want ErrInvalidQuery (400 InvalidQuery)", err)
	}
	n := 0
	err = c.QueryResources(context.Background(), []string{subID(0)},
		"Resources | where type =~ 'microsoft.compute/virtualmachines' | project id, name, type, location, tags", func(cloud.Resource) error { n++; return nil })
	if err != nil || n != 40 {
		t.Fatalf("projected query: %d rows, %v", n, err)
	}
}

func TestResourcesHonoursRetryAfter(t *testing.T) {
	s, c := startSim(t, resourceGraphWorld())
	s.Faults.Set(cloudsim.ARM, resourceGraphPath, cloudsim.Fault{Status: 429, RetryAfter: time.Second, Times: 1})
	start := time.Now()
	got, err := listResources(c, []string{subID(1)}, "")
	if err != nil || len(got) != 30 {
		t.Fatalf("%d resources, %v", len(got), err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Fatalf("retried after %v, before the Retry-After of 1s", elapsed)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, resourceGraphPath); hits != 2 {
		t.Fatalf("%d requests, want the throttled one and its retry", hits)
	}

	// A pause longer than the client's MaxDelay is not waited for.
	s.Faults.Set(cloudsim.ARM, resourceGraphPath, cloudsim.Fault{Status: 429, RetryAfter: time.Minute})
	var e *cloud.Error
	if _, err := listResources(c, nil, ""); !errors.Is(err, cloud.ErrThrottled) || !errors.As(err, &e) || e.RetryAfter != time.Minute {
		t.Fatalf("long throttle: %v, want ErrThrottled asking for a minute", err)
	}
}
