package cloud

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// Usage is a resource's usage in a region against its quota.
type Usage struct {
	// Name is the quota's name, e.g. "cores" or "VirtualNetworks".
	Name string
	// LocalizedName is its display name, e.g. "Total Regional vCPUs".
	LocalizedName string
	CurrentValue  float64
	Limit         float64
	// Unit is e.g. "Count".
	Unit string
}

// The resource providers Usages reads.
const (
	UsageCompute = "compute"
	UsageNetwork = "network"
)

// Usages calls fn for each quota usage of a resource provider (UsageCompute
// or UsageNetwork) in a subscription's region, page by page. An error from
// fn stops the listing and is returned as is.
func (c *ResourceManager) Usages(ctx context.Context, subscriptionID, location, provider string, fn func(Usage) error) error {
	op := fmt.Sprintf("list %s usages of subscription %s in %s", provider, subscriptionID, location)
	switch provider {
	case UsageCompute:
		client, err := usageClient(c, provider, subscriptionID, armcompute.NewUsageClient)
		if err != nil {
			return wrap(op, err)
		}
		return walk(ctx, client.NewListPager(location, nil),
			func(p armcompute.UsageClientListResponse) []*armcompute.Usage { return p.Value },
			func(u *armcompute.Usage) error {
				out := Usage{CurrentValue: float64(deref(u.CurrentValue)), Limit: float64(deref(u.Limit)), Unit: deref(u.Unit)}
				if u.Name != nil {
					out.Name, out.LocalizedName = deref(u.Name.Value), deref(u.Name.LocalizedValue)
				}
				return fn(out)
			}, failAs(op))
	case UsageNetwork:
		client, err := usageClient(c, provider, subscriptionID, armnetwork.NewUsagesClient)
		if err != nil {
			return wrap(op, err)
		}
		return walk(ctx, client.NewListPager(location, nil),
			func(p armnetwork.UsagesClientListResponse) []*armnetwork.Usage { return p.Value },
			func(u *armnetwork.Usage) error {
				out := Usage{CurrentValue: float64(deref(u.CurrentValue)), Limit: float64(deref(u.Limit)), Unit: string(deref(u.Unit))}
				if u.Name != nil {
					out.Name, out.LocalizedName = deref(u.Name.Value), deref(u.Name.LocalizedValue)
				}
				return fn(out)
			}, failAs(op))
	default:
		return fmt.Errorf("cloud: usages: provider must be %q or %q, not %q", UsageCompute, UsageNetwork, provider)
	}
}

// usageClient is the provider's usage client of a subscription, built on
// first use with newClient and kept: the SDK binds these clients to one
// subscription, and every sync reads the same ones again.
func usageClient[T any](c *ResourceManager, provider, subscriptionID string,
	newClient func(string, azcore.TokenCredential, *arm.ClientOptions) (*T, error)) (*T, error) {
	key := provider + "/" + strings.ToLower(subscriptionID)
	if client, ok := c.usages.Load(key); ok {
		return client.(*T), nil
	}
	client, err := newClient(subscriptionID, c.cred, c.armOpts)
	if err != nil {
		return nil, err
	}
	stored, _ := c.usages.LoadOrStore(key, client)
	return stored.(*T), nil
}
