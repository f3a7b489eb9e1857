package pluginenv

import (
	"context"
	"slices"

	"github.com/stewardhq/steward/sdk"
)

// TenantNames maps the ids (repeats allowed) to the tenants' names in the
// host's directory; an id the directory does not list is left out. No ids
// ask the host nothing.
func TenantNames(ctx context.Context, host *sdk.Host, ids []string) (map[string]string, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	tenants, err := host.Tenants(ctx, ids...)
	if err != nil {
		return nil, err
	}
	for _, t := range tenants {
		out[t.ID] = t.Name
	}
	return out, nil
}
