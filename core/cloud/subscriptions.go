package cloud

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armsubscriptions"
)

// Subscription is an Azure subscription the credential can see.
type Subscription struct {
	// ID is the subscription id, a GUID (not the /subscriptions/… path).
	ID          string
	DisplayName string
	// State is Enabled, Warned, PastDue, Disabled or Deleted.
	State    string
	TenantID string
}

// Subscriptions calls fn for each subscription the credential can see,
// page by page. An error from fn stops the listing and is returned as is.
func (c *ResourceManager) Subscriptions(ctx context.Context, fn func(Subscription) error) error {
	return walk(ctx, c.subscriptions.NewListPager(nil),
		func(p armsubscriptions.ClientListResponse) []*armsubscriptions.Subscription { return p.Value },
		func(s *armsubscriptions.Subscription) error { return fn(subscriptionOf(s)) },
		failAs("list subscriptions"))
}

// Subscription gets one subscription; an unknown id is ErrNotFound.
func (c *ResourceManager) Subscription(ctx context.Context, id string) (Subscription, error) {
	resp, err := c.subscriptions.Get(ctx, id, nil)
	if err != nil {
		return Subscription{}, wrap("get subscription "+id, err)
	}
	return subscriptionOf(&resp.Subscription), nil
}

func subscriptionOf(s *armsubscriptions.Subscription) Subscription {
	out := Subscription{ID: deref(s.SubscriptionID), DisplayName: deref(s.DisplayName), TenantID: deref(s.TenantID)}
	if s.State != nil {
		out.State = string(*s.State)
	}
	return out
}
