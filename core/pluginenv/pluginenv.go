// Package pluginenv opens what a domain plugin built on core needs from the
// environment the host configures it with: the cloud clients and its
// database. It also holds what the plugins' sync jobs
// share: which tenants and subscriptions a run syncs (Plan), the loop over
// them (SyncTenants) and the progress a run reports (Progress); and the
// tenants' names the plugins' routes and pages show (TenantNames).
package pluginenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk"
)

// Open builds the cloud clients from the host's cloud settings and returns
// them with the plugin's database, which the SDK opened. The plugin's
// config block reaches its factory already decoded (see sdk.Serve).
func Open(env *sdk.Env) (*cloud.Clients, *bun.DB, error) {
	if env.DB == nil {
		return nil, nil, errors.New("the host gave the plugin no database")
	}
	var cc cloud.Config
	if err := json.Unmarshal(env.Cloud, &cc); err != nil {
		return nil, nil, fmt.Errorf("cloud settings: %w", err)
	}
	clients, err := cloud.New(cc)
	if err != nil {
		return nil, nil, err
	}
	return clients, env.DB, nil
}

// Subscriptions is how the cloud lists subscriptions;
// (*cloud.Clients).Subscriptions is one.
type Subscriptions func(ctx context.Context, fn func(cloud.Subscription) error) error

// TenantSubscriptions lists the subscriptions the cloud reports in the
// tenants' directories (matched without regard to case), leaving out
// disabled and deleted ones, and calls fn with the index in tenants of
// each one's tenant.
func TenantSubscriptions(ctx context.Context, list Subscriptions, tenants []sdk.Tenant, fn func(tenant int, subscriptionID string)) error {
	byDirectory := make(map[string]int, len(tenants))
	for i, t := range tenants {
		byDirectory[strings.ToLower(t.DirectoryTenantID)] = i
	}
	err := list(ctx, func(sub cloud.Subscription) error {
		if i, ok := byDirectory[strings.ToLower(sub.TenantID)]; ok && sub.State != "Disabled" && sub.State != "Deleted" {
			fn(i, sub.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list subscriptions: %w", err)
	}
	return nil
}
