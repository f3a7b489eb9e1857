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

// Cloud is what the sync reads; *cloud.Clients provides it.
type Cloud interface {
	Subscriptions(ctx context.Context, fn func(cloud.Subscription) error) error
	Usages(ctx context.Context, subscriptionID, location, provider string, fn func(cloud.Usage) error) error
}

// Syncer copies compute and network usages from the cloud into the store.
type Syncer struct {
	Cloud     Cloud
	Store     *Store
	Host      *sdk.Host
	Locations []string
	Now       func() time.Time
}

// Run syncs every subscription of every active tenant. A subscription that
// fails does not stop the others; the run then fails naming each failure,
// so the host raises a sync alert while the rest of the data is current.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := s.Host.Tenants(ctx)
	if err != nil {
		return 0, fmt.Errorf("tenant directory: %w", err)
	}
	type target struct{ tenantID, subscriptionID string }
	var targets []target
	err = pluginenv.TenantSubscriptions(ctx, s.Cloud.Subscriptions, tenants, func(i int, sub string) {
		targets = append(targets, target{tenants[i].ID, sub})
	})
	if err != nil {
		return 0, err
	}
	var records int64
	var failures []error
	failedTenants := map[string]bool{}
	steps := int64(len(targets) * len(s.Locations) * 2)
	done := int64(0)
	for _, t := range targets {
		for _, loc := range s.Locations {
			for _, provider := range []string{cloud.UsageCompute, cloud.UsageNetwork} {
				n, err := s.syncOne(ctx, t.tenantID, t.subscriptionID, loc, provider)
				records += n
				done++
				if err != nil {
					failures = append(failures, fmt.Errorf("%s %s %s: %w", t.subscriptionID, loc, provider, err))
					failedTenants[t.tenantID] = true
				}
				run.Progress(done, steps, fmt.Sprintf("subscription %s %s %s", t.subscriptionID, loc, provider))
			}
		}
	}
	now := s.now()
	marked := map[string]bool{}
	for _, t := range targets {
		if failedTenants[t.tenantID] || marked[t.tenantID] {
			continue
		}
		marked[t.tenantID] = true
		if err := s.Host.MarkFresh(ctx, t.tenantID, "resources", now); err != nil {
			failures = append(failures, fmt.Errorf("mark %s fresh: %w", t.tenantID, err))
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

func (s *Syncer) syncOne(ctx context.Context, tenantID, subscriptionID, location, provider string) (int64, error) {
	now := s.now().UTC()
	var usages []Usage
	err := s.Cloud.Usages(ctx, subscriptionID, location, provider, func(u cloud.Usage) error {
		usages = append(usages, Usage{TenantID: tenantID, SubscriptionID: subscriptionID, Location: location, Provider: provider,
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
