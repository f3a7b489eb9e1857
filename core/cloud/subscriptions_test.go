package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// manySubscriptions gives the brand tenant 249 more subscriptions: 251 in
// all, three pages.
func manySubscriptions() *world.World {
	w := baseWorld()
	for i := 2; i <= 250; i++ {
		w.Tenants[1].Subscriptions = append(w.Tenants[1].Subscriptions, world.Subscription{ID: subID(i), Name: fmt.Sprintf("Brand %d", i)})
	}
	return w
}

func listSubscriptions(c *cloud.Clients) ([]cloud.Subscription, error) {
	var subs []cloud.Subscription
	err := c.Subscriptions(context.Background(), func(s cloud.Subscription) error {
		subs = append(subs, s)
		return nil
	})
	return subs, err
}

func TestSubscriptionsPagesFieldByField(t *testing.T) {
	w := manySubscriptions()
	s, c := startSim(t, w)
	subs, err := listSubscriptions(c)
	if err != nil {
		t.Fatal(err)
	}
	var want []cloud.Subscription
	for _, tn := range w.Tenants {
		for _, sub := range tn.Subscriptions {
			want = append(want, cloud.Subscription{ID: sub.ID, DisplayName: sub.Name, State: "Enabled", TenantID: tn.DirectoryTenantID})
		}
	}
	if len(subs) != len(want) {
		t.Fatalf("%d subscriptions, want %d", len(subs), len(want))
	}
	for i := range want {
		if subs[i] != want[i] {
			t.Fatalf("subscription %d: %+v, want %+v", i, subs[i], want[i])
		}
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/subscriptions"); hits != 3 {
		t.Fatalf("%d requests, want 3 pages", hits)
	}

	got, err := c.Subscription(context.Background(), subID(7))
	if err != nil || got != want[7] {
		t.Fatalf("get: %+v, %v; want %+v", got, err, want[7])
	}
	_, err = c.Subscription(context.Background(), "99999999-0000-4000-8000-000000000000")
	var e *cloud.Error
	if !errors.Is(err, cloud.ErrNotFound) || !errors.As(err, &e) || e.StatusCode != 404 || e.Code != "SubscriptionNotFound" {
		t.Fatalf("unknown subscription: %v, want ErrNotFound (SubscriptionNotFound)", err)
	}
}

func TestSubscriptionsFaults(t *testing.T) {
	s, c := startSim(t, manySubscriptions())

	s.Faults.Set(cloudsim.ARM, "/subscriptions", cloudsim.Fault{TruncatePages: true})
	subs, err := listSubscriptions(c)
	if err != nil || len(subs) != cloudsim.DefaultPageSize {
		t.Fatalf("truncated listing: %d subscriptions, %v; want the first page alone", len(subs), err)
	}

	s.Faults.Set(cloudsim.ARM, "/subscriptions", cloudsim.Fault{Status: 502, Times: 2})
	subs, err = listSubscriptions(c)
	if err != nil || len(subs) != 251 {
		t.Fatalf("after a 502 burst: %d subscriptions, %v", len(subs), err)
	}

	s.Faults.Set(cloudsim.ARM, "/subscriptions", cloudsim.Fault{Status: 504})
	if _, err = listSubscriptions(c); !errors.Is(err, cloud.ErrUnavailable) {
		t.Fatalf("persistent 504: %v, want ErrUnavailable", err)
	}

	s.Faults.Set(cloudsim.ARM, "/subscriptions", cloudsim.Fault{ExpireTokens: true})
	if _, err = listSubscriptions(c); !errors.Is(err, cloud.ErrUnauthorized) {
		t.Fatalf("expired token: %v, want ErrUnauthorized", err)
	}
}
