package quotas

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

// Syncer copies compute and network usages from the cloud into the store.
type Syncer struct {
	// Cloud resolves each tenant's clients and subscriptions;
	// *cloud.Clients is one.
	Cloud     pluginenv.Resolver
	Store     *Store
	Host      *sdk.Host
	Locations []string
	Now       func() time.Time
}

// Run syncs every subscription of every active tenant (those of
// run.TenantIDs when it names any), each tenant read as
// registered: through delegation or in its own directory. A tenant Steward
// cannot read fails the run, naming it and the fix. A subscription that
// fails does not stop the others; the run then fails naming each failure,
// so the host raises a sync alert while the rest of the data is current.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	var steps, done int64
	for _, tw := range work {
		steps += int64(len(tw.Subscriptions) * len(s.Locations) * 2)
	}
	var records int64
	var synced []string
	failures := []error{pluginenv.SyncTenants(ctx, s.Host, "resources", work, func(tw pluginenv.TenantWork) error {
		var failed []error
		for _, sub := range tw.Subscriptions {
			for _, loc := range s.Locations {
				for _, provider := range []string{cloud.UsageCompute, cloud.UsageNetwork} {
					n, err := s.syncOne(ctx, tw.Cloud, tw.Tenant.ID, sub, tw.SubscriptionNames[sub], loc, provider)
					records += n
					done++
					if err != nil {
						failed = append(failed, fmt.Errorf("%s %s %s: %w", sub, loc, provider, err))
					}
					run.Progress(done, steps, fmt.Sprintf("subscription %s %s %s", sub, loc, provider))
				}
			}
		}
		if len(failed) == 0 {
			synced = append(synced, tw.Tenant.ID)
		}
		return errors.Join(failed...)
	})}
	now := s.now()
	for _, id := range synced {
		if err := s.Host.MarkFresh(ctx, id, "resources", now); err != nil {
			failures = append(failures, fmt.Errorf("mark %s fresh: %w", id, err))
		}
	}
	return records, errors.Join(failures...)
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Syncer) syncOne(ctx context.Context, rm *cloud.ResourceManager, tenantID, subscriptionID, subscriptionName, location, provider string) (int64, error) {
	now := s.now().UTC()
	var usages []Usage
	err := rm.Usages(ctx, subscriptionID, location, provider, func(u cloud.Usage) error {
		usages = append(usages, Usage{TenantID: tenantID, SubscriptionID: subscriptionID, SubscriptionName: subscriptionName, Location: location, Provider: provider,
			Name: u.Name, LocalizedName: u.LocalizedName, CurrentValue: u.CurrentValue, Limit: u.Limit, Unit: u.Unit, SyncedAt: now})
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := s.Store.Replace(ctx, subscriptionID, location, provider, usages); err != nil {
		return 0, err
	}
	return int64(len(usages)), nil
}
