package pluginenv

import (
	"context"
	"errors"
	"fmt"

	"github.com/stewardhq/steward/sdk"
)

// TenantWork is one tenant's part of a sync run: the tenant and the
// subscriptions its directory reports.
type TenantWork struct {
	Tenant        sdk.Tenant
	Subscriptions []string
}

// Plan lists the active tenants of tenantIDs (every active tenant when
// empty), in the host's order, each with the subscriptions the cloud
// reports in its directory (TenantSubscriptions). A tenant none of whose
// subscriptions is visible is listed with none.
func Plan(ctx context.Context, host *sdk.Host, list Subscriptions, tenantIDs []string) ([]TenantWork, error) {
	tenants, err := host.Tenants(ctx, tenantIDs...)
	if err != nil {
		return nil, fmt.Errorf("tenant directory: %w", err)
	}
	var work []TenantWork
	for _, t := range tenants {
		if t.IsActive {
			work = append(work, TenantWork{Tenant: t})
		}
	}
	active := make([]sdk.Tenant, len(work))
	for i, tw := range work {
		active[i] = tw.Tenant
	}
	err = TenantSubscriptions(ctx, list, active, func(i int, sub string) {
		work[i].Subscriptions = append(work[i].Subscriptions, sub)
	})
	if err != nil {
		return nil, err
	}
	return work, nil
}

// SyncTenants calls sync for each tenant of work, in order, and joins the
// errors, each named by its tenant; a failing tenant does not stop the
// others. A tenant without subscriptions — not delegated yet, or
// delegated to another tenant, which onboarding reports — is skipped with
// a warning on run's logger: its data stays as it was.
func SyncTenants(run *sdk.JobRun, work []TenantWork, sync func(TenantWork) error) error {
	var failures []error
	for _, tw := range work {
		if len(tw.Subscriptions) == 0 {
			if run.Logger != nil {
				run.Logger.Warn("tenant skipped: none of its subscriptions is visible", "tenant", tw.Tenant.Name, "tenant_id", tw.Tenant.ID)
			}
			continue
		}
		if err := sync(tw); err != nil {
			failures = append(failures, fmt.Errorf("tenant %s (%s): %w", tw.Tenant.Name, tw.Tenant.ID, err))
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
