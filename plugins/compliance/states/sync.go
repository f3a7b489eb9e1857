package states

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

// Cloud is what the sync reads; *cloud.Clients provides it.
type Cloud interface {
	Subscriptions(ctx context.Context, fn func(cloud.Subscription) error) error
	PolicyStates(ctx context.Context, subscriptionID, filter string, fn func(cloud.PolicyState) error) error
	PolicySummary(ctx context.Context, subscriptionID string) (cloud.PolicySummary, error)
}

// Hook runs for a tenant after all its states were stored and its
// snapshot taken — the custom rules' evaluation runs here. An error fails
// the run, naming the tenant, which is then not marked fresh; the states
// stored stay.
type Hook func(ctx context.Context, tenant sdk.Tenant) error

// progressRows is how often, in states, a subscription's progress is
// reported while it streams.
const progressRows = 5000

// Syncer runs the compliance job.
type Syncer struct {
	Cloud Cloud
	Store *Store
	Host  *sdk.Host
	// AfterTenant run in order for each tenant whose states were all
	// stored.
	AfterTenant []Hook
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// mu makes runs take turns: a manual run may start while a scheduled
	// one is under way, and both would snapshot the same tenants.
	mu sync.Mutex
}

// tenantWork is one tenant's part of a run.
type tenantWork struct {
	tenant        sdk.Tenant
	subscriptions []string
}

// Run syncs every active tenant, or those of run.TenantIDs: each
// subscription's latest policy states replace those stored for it. A
// tenant none of whose subscriptions the credential sees is skipped. A
// failing subscription changes nothing of its stored states and does not
// stop the others; its tenant then gets no snapshot, no hooks and no
// freshness mark, and the run fails naming each failure, which raises the
// host's sync alert. A listing is checked against the subscription's
// policy summary (Target.Resources), so one cut short fails too.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	work, err := s.plan(ctx, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	p := &progress{run: run}
	for _, tw := range work {
		p.total += int64(len(tw.subscriptions))
	}
	var failures []error
	for _, tw := range work {
		if len(tw.subscriptions) == 0 {
			if run.Logger != nil {
				run.Logger.Warn("tenant skipped: none of its subscriptions is visible", "tenant", tw.tenant.Name, "tenant_id", tw.tenant.ID)
			}
			continue
		}
		if err := s.syncTenant(ctx, tw, p); err != nil {
			failures = append(failures, fmt.Errorf("tenant %s (%s): %w", tw.tenant.Name, tw.tenant.ID, err))
		}
	}
	return p.records, errors.Join(failures...)
}

// plan lists the tenants to sync and each one's subscriptions, found by
// the directory tenant the cloud reports them in.
func (s *Syncer) plan(ctx context.Context, tenantIDs []string) ([]*tenantWork, error) {
	tenants, err := s.Host.Tenants(ctx, tenantIDs...)
	if err != nil {
		return nil, fmt.Errorf("tenant directory: %w", err)
	}
	var work []*tenantWork
	var active []sdk.Tenant
	for _, t := range tenants {
		if t.IsActive {
			work = append(work, &tenantWork{tenant: t})
			active = append(active, t)
		}
	}
	err = pluginenv.TenantSubscriptions(ctx, s.Cloud.Subscriptions, active, func(i int, sub string) {
		work[i].subscriptions = append(work[i].subscriptions, sub)
	})
	if err != nil {
		return nil, err
	}
	return work, nil
}

// syncTenant replaces the states of each of the tenant's subscriptions;
// once all succeeded it takes the snapshot, runs the hooks and marks the
// tenant fresh.
func (s *Syncer) syncTenant(ctx context.Context, tw *tenantWork, p *progress) error {
	var failures []error
	for _, sub := range tw.subscriptions {
		if err := s.syncSubscription(ctx, tw.tenant, sub, p); err != nil {
			failures = append(failures, fmt.Errorf("subscription %s: %w", sub, err))
		}
	}
	if len(failures) > 0 {
		return errors.Join(failures...)
	}
	at := s.now().UTC()
	snap, err := s.Store.Finish(ctx, tw.tenant.ID, tw.subscriptions, at)
	if err != nil {
		return err
	}
	p.report(fmt.Sprintf("tenant %s: %d policy states, %d of %d resources non-compliant", tw.tenant.Name, snap.PolicyStates,
		snap.NonCompliantResources, snap.TotalResources))
	for _, hook := range s.AfterTenant {
		if err := hook(ctx, tw.tenant); err != nil {
			failures = append(failures, err)
		}
	}
	if len(failures) > 0 {
		return errors.Join(failures...)
	}
	if err := s.Host.MarkFresh(ctx, tw.tenant.ID, Domain, at); err != nil {
		return fmt.Errorf("mark fresh: %w", err)
	}
	return nil
}

func (s *Syncer) syncSubscription(ctx context.Context, tenant sdk.Tenant, sub string, p *progress) error {
	label := fmt.Sprintf("tenant %s subscription %s", tenant.Name, sub)
	// The summary counts the subscription's resources, against which
	// Replace checks that the listing was not cut short.
	summary, err := s.Cloud.PolicySummary(ctx, sub)
	if err != nil {
		p.step(label + ": failed")
		return err
	}
	resources := 0
	for _, n := range summary.Resources {
		resources += n
	}
	target := Target{TenantID: tenant.ID, SubscriptionID: sub, SyncedAt: s.now(), Resources: resources}
	written, err := s.Store.Replace(ctx, target, func(emit func(State) error) error {
		var n int64
		return s.Cloud.PolicyStates(ctx, sub, "", func(c cloud.PolicyState) error {
			n++
			if n%progressRows == 0 {
				p.report(fmt.Sprintf("%s: %d states", label, n))
			}
			return emit(State{ResourceID: c.ResourceID, ResourceType: c.ResourceType, PolicyAssignmentID: c.PolicyAssignmentID,
				PolicyDefinitionID: c.PolicyDefinitionID, PolicyDefinitionName: c.PolicyDefinitionName, PolicyName: c.DisplayName,
				Category: c.DefinitionCategory, GroupNames: c.GroupNames, ComplianceState: c.ComplianceState, Severity: c.Severity,
				EvaluatedAt: c.Timestamp})
		})
	})
	if err != nil {
		p.step(label + ": failed")
		return err
	}
	p.records += written.Rows
	p.step(fmt.Sprintf("%s: %d states in %d batches", label, written.Rows, written.Batches))
	return nil
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// progress counts a run's steps (a subscription's states) and records,
// and reports them to the host.
type progress struct {
	run         *sdk.JobRun
	done, total int64
	records     int64
}

func (p *progress) step(message string) {
	p.done++
	p.report(message)
}

func (p *progress) report(message string) { p.run.Progress(p.done, p.total, message) }
