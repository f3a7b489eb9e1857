package pluginenv

import (
	"context"
	"slices"
	"sync"

	"github.com/stewardhq/steward/sdk"
)

// TenantNames maps the ids (repeats allowed) to the tenants' names in the
// host's directory; an id the directory does not list is left out. No ids
// ask the host nothing. Under a context from OneAsk, an id already asked
// about is answered from what the host said then.
func TenantNames(ctx context.Context, host *sdk.Host, ids []string) (map[string]string, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make(map[string]string, len(ids))
	memo, _ := ctx.Value(askedKey{}).(*asked)
	if memo != nil {
		memo.mu.Lock()
		defer memo.mu.Unlock()
		ids = slices.DeleteFunc(ids, func(id string) bool {
			name, ok := memo.names[id]
			if ok && name != "" {
				out[id] = name
			}
			return ok
		})
	}
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
	if memo != nil {
		for _, id := range ids {
			memo.names[id] = out[id]
		}
	}
	return out, nil
}

type askedKey struct{}

// asked is what the host said of each tenant asked about under one
// context: its name, or "" for one its directory does not list.
type asked struct {
	mu    sync.Mutex
	names map[string]string
}

// OneAsk returns a context under which TenantNames asks the host about a
// tenant once: a page whose parts each name the tenants they show (the
// inventory and the quotas of the resources page) then costs one round
// trip to the host, not one a part.
func OneAsk(ctx context.Context) context.Context {
	return context.WithValue(ctx, askedKey{}, &asked{names: map[string]string{}})
}
