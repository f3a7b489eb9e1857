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
	// Cloud resolves each tenant's clients and subscriptions;
	// *cloud.Clients is one.
	Cloud pluginenv.Resolver
	Store *Store
	Host  *sdk.Host
	// AfterTenant run in order for each tenant whose states were all
	// stored.
	AfterTenant []Hook
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// tenants holds a *sync.Mutex per tenant id, which makes runs take
	// turns on a tenant: a manual run may start while a scheduled one is
	// under way, and both would snapshot the same tenant. A run never
	// waits for another's work on other tenants, so a tenant whose sync
	// is long (its data, its rules) holds up no one else's.
	tenants sync.Map
}

// Run syncs every active tenant, or those of run.TenantIDs: each
// subscription's latest policy states replace those stored for it. Each
// tenant is read as registered, through delegation or in its own
// directory; one Steward cannot read fails the run, naming it and the
// fix. A failing subscription changes nothing of its stored states and does not
// stop the others; its tenant then gets no snapshot, no hooks and no
// freshness mark, and the run fails naming each failure, which raises the
// host's sync alert. A listing is checked against the subscription's
// policy summary (Target.Resources), so one cut short fails too.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	p := &pluginenv.Progress{Run: run}
	for _, tw := range work {
		p.Total += int64(len(tw.Subscriptions))
	}
	err = pluginenv.SyncTenants(ctx, s.Host, Domain, work, func(tw pluginenv.TenantWork) error {
		l, _ := s.tenants.LoadOrStore(tw.Tenant.ID, &sync.Mutex{})
		l.(*sync.Mutex).Lock()
		defer l.(*sync.Mutex).Unlock()
		return s.syncTenant(ctx, tw, p)
	})
	return p.Records, err
}

// syncTenant replaces the states of each of the tenant's subscriptions;
// once all succeeded it takes the snapshot, runs the hooks and marks the
// tenant fresh.
func (s *Syncer) syncTenant(ctx context.Context, tw pluginenv.TenantWork, p *pluginenv.Progress) error {
	var failures []error
	for _, sub := range tw.Subscriptions {
		if err := s.syncSubscription(ctx, tw, sub, p); err != nil {
			failures = append(failures, fmt.Errorf("subscription %s: %w", sub, err))
		}
	}
	if len(failures) > 0 {
		return errors.Join(failures...)
	}
	at := s.now().UTC()
	snap, err := s.Store.Finish(ctx, tw.Tenant.ID, tw.Subscriptions, at)
	if err != nil {
		return err
	}
	p.Report(fmt.Sprintf("tenant %s: %d policy states, %d of %d resources non-compliant", tw.Tenant.Name, snap.PolicyStates,
		snap.NonCompliantResources, snap.TotalResources))
	if err := s.syncGuidance(ctx, tw, p); err != nil {
		failures = append(failures, err)
	}
	for _, hook := range s.AfterTenant {
		if err := hook(ctx, tw.Tenant); err != nil {
			failures = append(failures, err)
		}
	}
	if len(failures) > 0 {
		return errors.Join(failures...)
	}
	if err := s.Host.MarkFresh(ctx, tw.Tenant.ID, Domain, at); err != nil {
		return fmt.Errorf("mark fresh: %w", err)
	}
	return nil
}

// syncGuidance reads each policy definition the tenant's states name, one
// call each (the definition's scope decides which), and stores their
// guidance in one transaction. A definition that no longer exists keeps
// what was stored for it; any other failure stores nothing and fails the
// tenant, whose states stay stored.
func (s *Syncer) syncGuidance(ctx context.Context, tw pluginenv.TenantWork, p *pluginenv.Progress) error {
	ids, err := s.Store.ReferencedDefinitions(ctx, tw.Tenant.ID)
	if err != nil {
		return err
	}
	list := make([]Guidance, 0, len(ids))
	for _, id := range ids {
		d, err := tw.Cloud.PolicyDefinition(ctx, id)
		if errors.Is(err, cloud.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		list = append(list, Guidance{PolicyDefinitionID: id, DisplayName: d.DisplayName, Description: d.Description, Category: d.Category,
			Remediation: d.Remediation})
	}
	if err := s.Store.PutGuidance(ctx, list, s.now()); err != nil {
		return err
	}
	p.Report(fmt.Sprintf("tenant %s: %d of %d policy definitions read", tw.Tenant.Name, len(list), len(ids)))
	return nil
}

func (s *Syncer) syncSubscription(ctx context.Context, tw pluginenv.TenantWork, sub string, p *pluginenv.Progress) error {
	tenant := tw.Tenant
	label := fmt.Sprintf("tenant %s subscription %s", tenant.Name, sub)
	// The summary counts the subscription's resources, against which
	// Replace checks that the listing was not cut short.
	summary, err := tw.Cloud.PolicySummary(ctx, sub)
	if err != nil {
		p.Step(label + ": failed")
		return err
	}
	resources := 0
	for _, n := range summary.Resources {
		resources += n
	}
	target := Target{TenantID: tenant.ID, SubscriptionID: sub, SyncedAt: s.now(), Resources: resources}
	written, err := s.Store.Replace(ctx, target, func(emit func(State) error) error {
		var n int64
		return tw.Cloud.PolicyStates(ctx, sub, "", func(c cloud.PolicyState) error {
			n++
			if n%progressRows == 0 {
				p.Report(fmt.Sprintf("%s: %d states", label, n))
			}
			return emit(State{ResourceID: c.ResourceID, ResourceType: c.ResourceType, PolicyAssignmentID: c.PolicyAssignmentID,
				PolicyDefinitionID: c.PolicyDefinitionID, PolicyDefinitionName: c.PolicyDefinitionName, PolicyName: c.DisplayName,
				Category: c.DefinitionCategory, GroupNames: c.GroupNames, ComplianceState: c.ComplianceState, Severity: c.Severity,
				EvaluatedAt: c.Timestamp})
		})
	})
	if err != nil {
		p.Step(label + ": failed")
		return err
	}
	p.Records += written.Rows
	p.Step(fmt.Sprintf("%s: %d states in %d batches", label, written.Rows, written.Batches))
	return nil
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
