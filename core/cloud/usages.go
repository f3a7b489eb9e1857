package cloud

import (
	"context"
	"fmt"

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
func (c *Clients) Usages(ctx context.Context, subscriptionID, location, provider string, fn func(Usage) error) error {
	op := fmt.Sprintf("list %s usages of subscription %s in %s", provider, subscriptionID, location)
	switch provider {
	case UsageCompute:
		client, err := armcompute.NewUsageClient(subscriptionID, c.cred, c.armOpts)
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
		client, err := armnetwork.NewUsagesClient(subscriptionID, c.cred, c.armOpts)
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
