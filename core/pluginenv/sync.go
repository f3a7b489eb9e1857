package pluginenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk"
)

// Resolver resolves how tenants are read; *cloud.Clients is one (see
// cloud.Clients.Access).
type Resolver interface {
	Access(ctx context.Context, tenants []cloud.Tenant) []cloud.TenantAccess
}

// TenantWork is one tenant's part of a sync run: the tenant, the Resource
// Manager clients that read it and its subscriptions, or why it cannot be
// read.
type TenantWork struct {
	Tenant sdk.Tenant
	// Cloud reads the tenant: the managing credential's clients for a
	// delegated tenant, its own directory's otherwise. Nil when Err is set.
	Cloud         *cloud.ResourceManager
	Subscriptions []string
	// SubscriptionNames are the display names of Subscriptions by id.
	SubscriptionNames map[string]string
	// Err is why the tenant cannot be read; it names the tenant and, when
	// Steward lacks access to it, the fix.
	Err error

	access cloud.Tenant
}

// Failed names the tenant in err, a failure to sync it, and says how to
// grant Steward access when err shows it lacks some (a refused token, a
// 403); see cloud.Tenant.Failed.
func (tw TenantWork) Failed(err error) error { return tw.access.Failed(err) }

// Plan lists the active tenants of tenantIDs (every active tenant when
// empty), in the host's order, each resolved by Resolve.
func Plan(ctx context.Context, host *sdk.Host, r Resolver, tenantIDs []string) ([]TenantWork, error) {
	tenants, err := host.Tenants(ctx, tenantIDs...)
	if err != nil {
		return nil, fmt.Errorf("tenant directory: %w", err)
	}
	var active []sdk.Tenant
	for _, t := range tenants {
		if t.IsActive {
			active = append(active, t)
		}
	}
	return Resolve(ctx, r, active), nil
}

// Resolve resolves the tenants, in order: each with the clients that read
// it and its subscriptions, through delegation or its own directory as it
// is registered (use_delegation), or with the error that keeps it from
// being read.
func Resolve(ctx context.Context, r Resolver, tenants []sdk.Tenant) []TenantWork {
	refs := make([]cloud.Tenant, len(tenants))
	for i, t := range tenants {
		refs[i] = cloud.Tenant{ID: t.ID, Name: t.Name, DirectoryTenantID: t.DirectoryTenantID, SubscriptionID: t.SubscriptionID,
			Delegated: t.UseDelegation}
	}
	work := make([]TenantWork, len(tenants))
	for i, a := range r.Access(ctx, refs) {
		work[i] = TenantWork{Tenant: tenants[i], Cloud: a.ResourceManager, Subscriptions: a.Subscriptions, SubscriptionNames: a.SubscriptionNames, Err: a.Err, access: refs[i]}
	}
	return work
}

// SyncTenants calls sync for each tenant of work that can be read, in
// order, and joins the errors, each naming its tenant: a tenant that cannot
// be read is its Err, never skipped in silence, and a failing tenant does
// not stop the others. Each failure is also reported to host as the
// tenant's failed sync of domain (sdk.Host.MarkFailed), so its freshness
// says why; host may be nil.
func SyncTenants(ctx context.Context, host *sdk.Host, domain string, work []TenantWork, sync func(TenantWork) error) error {
	var failures []error
	for _, tw := range work {
		start := time.Now()
		err := tw.Err
		if err == nil {
			if err = sync(tw); err != nil {
				err = tw.Failed(err)
			}
		}
		if err == nil {
			continue
		}
		failures = append(failures, err)
		if host != nil {
			if markErr := host.MarkFailed(ctx, tw.Tenant.ID, domain, start, err.Error()); markErr != nil {
				failures = append(failures, fmt.Errorf("record the failed sync of tenant %s: %w", tw.Tenant.Name, markErr))
			}
		}
	}
	return errors.Join(failures...)
}

// Progress counts a sync run's steps and the records it processed, and
// reports them to the host with each message. A run's steps are what it
// counts in Total before it starts, a subscription for instance.
type Progress struct {
	Run         *sdk.JobRun
	Done, Total int64
	Records     int64
}

// Step counts a step done and reports it.
func (p *Progress) Step(message string) {
	p.Done++
	p.Report(message)
}

// Report reports message with the steps done so far.
func (p *Progress) Report(message string) { p.Run.Progress(p.Done, p.Total, message) }
