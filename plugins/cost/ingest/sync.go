// Package ingest is the cost plugin's sync: the costs job copies daily
// actual cost per subscription, service, resource group and currency, and
// per resource and service, from the cloud into the ledger for every
// active tenant, with the tags of each subscription's resources, and each
// tenant's reservations (their utilisation, purchases and the provider's
// recommendations) when it has a billing account.
//
// A subscription's first sync backfills BackfillDays ending today; later
// syncs fetch again from RestateDays before the last day synced, because
// providers restate recent days. Each subscription's window streams from
// the cloud into the ledger a batch at a time and replaces what the
// ledger held for those days in one transaction (ledger.Store.Replace), so
// a re-run never doubles a cost and a cloud call failing midway leaves the
// previous data as it was. The two grains of a window are two queries
// (Cost Management groups a query by two dimensions at most) replaced in
// one transaction. A subscription's tags are read from Resource Graph on
// every run and replace those held (tags as they are now, not as they
// were on the day of a cost). Once a tenant's costs are written and rolled
// up, the AfterTenant hooks (anomaly detection, budget evaluation) run for
// the days written.
//
// Beside the daily series, each subscription's cost per resource over the
// last ResourceCostDays full days (ending yesterday: today's costs are
// still arriving) is fetched with one query grouped by ResourceId and
// replaces what the ledger held for the subscription
// (ledger.Store.ReplaceResourceCosts). That sum over 30 days is the
// estimated monthly cost the resource_costs dataset publishes. It is
// fetched once a day, by the first run after midnight, not on every run:
// the period only moves on daily, and a Cost Management query is a
// throttled call.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Hook runs for a tenant after its costs for the days from through to
// were written and rolled up. An error fails the run, naming the tenant;
// the costs written stay.
type Hook func(ctx context.Context, tenant sdk.Tenant, from, to ledger.Day) error

// Defaults of the plugin's config.
const (
	DefaultBackfillDays = 365
	DefaultRestateDays  = 5
	// ResourceCostDays is how many full days, ending yesterday, a
	// resource's cost sums.
	ResourceCostDays = 30
)

// progressRows is how often, in rows, a subscription's progress is
// reported while it streams.
const progressRows = 5000

// Syncer runs the costs job.
type Syncer struct {
	// Cloud resolves each tenant's clients and subscriptions;
	// *cloud.Clients is one.
	Cloud  pluginenv.Resolver
	Ledger *ledger.Store
	Host   *sdk.Host
	// BackfillDays is how many days, ending today, a subscription's first
	// sync fetches (DefaultBackfillDays when zero).
	BackfillDays int
	// RestateDays is how many days before and including the last day
	// synced a later sync fetches again (DefaultRestateDays when zero).
	RestateDays int
	// AfterTenant run in order for each tenant whose costs were all
	// written.
	AfterTenant []Hook
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// mu makes runs take turns: a manual run may start while a scheduled
	// one is under way, and both would rebuild the same rollups.
	mu sync.Mutex
}

// Run syncs every active tenant, or those of run.TenantIDs, each read as
// registered: through delegation or in its own directory. A tenant Steward
// cannot read fails the run, naming it and the fix. A failing
// subscription or tenant does not stop the others: the run then fails
// naming each failure, which raises the host's sync alert, while the
// previous data of what failed stays and the rest is current. A tenant is
// marked fresh only when all of its sync succeeded.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	states, err := s.Ledger.SyncStates(ctx)
	if err != nil {
		return 0, fmt.Errorf("read sync state: %w", err)
	}
	periods, err := s.Ledger.ResourcePeriods(ctx)
	if err != nil {
		return 0, fmt.Errorf("read resource cost periods: %w", err)
	}
	p := &pluginenv.Progress{Run: run}
	for _, tw := range work {
		p.Total += int64(len(tw.Subscriptions))
		if tw.Tenant.BillingAccountID != "" && tw.Err == nil {
			p.Total++
		}
	}
	// A tenant that cannot be read keeps its costs as they were and is not
	// marked fresh.
	err = pluginenv.SyncTenants(ctx, s.Host, "costs", work, func(tw pluginenv.TenantWork) error {
		if err := s.syncTenant(ctx, tw, states, periods, p); err != nil {
			return err
		}
		if err := s.Host.MarkFresh(ctx, tw.Tenant.ID, "costs", s.now()); err != nil {
			return fmt.Errorf("mark fresh: %w", err)
		}
		return nil
	})
	return p.Records, err
}

// syncTenant writes a tenant's costs subscription by subscription, runs
// the hooks over the days written, then syncs its reservations.
func (s *Syncer) syncTenant(ctx context.Context, tw pluginenv.TenantWork, states map[string]ledger.SyncState, periods map[string]ledger.ResourcePeriod, p *pluginenv.Progress) error {
	today := ledger.DayOf(s.now().UTC())
	var failures []error
	var from, to ledger.Day
	for i, sub := range tw.Subscriptions {
		w := s.window(tw.Tenant.ID, sub, today, states)
		if i == 0 || w.From < from {
			from = w.From
		}
		to = max(to, w.To)
		if err := s.syncSubscription(ctx, tw, w, p); err != nil {
			failures = append(failures, fmt.Errorf("subscription %s: %w", sub, err))
			continue
		}
		if err := s.syncResourceCosts(ctx, tw, sub, today, periods[sub], p); err != nil {
			failures = append(failures, fmt.Errorf("subscription %s: resource costs: %w", sub, err))
		}
		if err := s.syncTags(ctx, tw, sub, p); err != nil {
			failures = append(failures, fmt.Errorf("subscription %s: resource tags: %w", sub, err))
		}
	}
	if len(failures) > 0 {
		return errors.Join(failures...)
	}
	for _, hook := range s.AfterTenant {
		if err := hook(ctx, tw.Tenant, from, to); err != nil {
			failures = append(failures, err)
		}
	}
	if tw.Tenant.BillingAccountID != "" {
		if err := s.syncReservations(ctx, tw, today, p); err != nil {
			failures = append(failures, fmt.Errorf("reservations of billing account %s: %w", tw.Tenant.BillingAccountID, err))
		}
	}
	return errors.Join(failures...)
}

// window is the days a subscription's sync fetches: a backfill ending
// today on its first sync, then from RestateDays before its last day, never
// before the backfill's first day.
func (s *Syncer) window(tenantID, sub string, today ledger.Day, states map[string]ledger.SyncState) ledger.Window {
	backfill, restate := s.BackfillDays, s.RestateDays
	if backfill <= 0 {
		backfill = DefaultBackfillDays
	}
	if restate <= 0 {
		restate = DefaultRestateDays
	}
	earliest := today - ledger.Day(backfill) + 1
	from := earliest
	// A subscription synced before the ledger kept costs by resource and
	// amortised is fetched from the backfill's first day again, once.
	if st, ok := states[sub]; ok && st.GrainsComplete {
		from = min(max(st.LastDay-ledger.Day(restate)+1, earliest), today)
	}
	return ledger.Window{TenantID: tenantID, SubscriptionID: sub, From: from, To: today}
}

func (s *Syncer) syncSubscription(ctx context.Context, tw pluginenv.TenantWork, w ledger.Window, p *pluginenv.Progress) error {
	label := fmt.Sprintf("tenant %s subscription %s %s..%s", tw.Tenant.Name, w.SubscriptionID, w.From, w.To)
	var n int64
	progress := func() {
		n++
		if n%progressRows == 0 {
			p.Report(fmt.Sprintf("%s: %d rows", label, n))
		}
	}
	// Each grain is queried as billed, then amortised: the ledger sums a
	// key's two rows into its actual and amortised cost.
	written, err := s.Ledger.Replace(ctx, w, s.now(), ledger.Streams{
		Costs: func(emit func(ledger.Cost) error) error {
			for _, typ := range []cloud.CostType{cloud.ActualCost, cloud.AmortizedCost} {
				err := tw.Cloud.DailyCosts(ctx, w.SubscriptionID, typ, w.From.Time(), w.To.Time(), func(r cloud.CostRow) error {
					progress()
					c := ledger.Cost{Day: ledger.DayOf(r.Date), Service: r.Service, ResourceGroup: r.ResourceGroup, Currency: r.Currency}
					*costOf(typ, &c.Cost, &c.Amortized) = ledger.AmountOf(r.Cost)
					return emit(c)
				})
				if err != nil {
					return err
				}
			}
			return nil
		},
		Resources: func(emit func(ledger.ResourceDay) error) error {
			for _, typ := range []cloud.CostType{cloud.ActualCost, cloud.AmortizedCost} {
				err := tw.Cloud.DailyResourceCosts(ctx, w.SubscriptionID, typ, w.From.Time(), w.To.Time(), func(r cloud.ResourceCostRow) error {
					progress()
					c := ledger.ResourceDay{Day: ledger.DayOf(r.Date), ResourceID: r.ResourceID, Service: r.Service, Currency: r.Currency}
					*costOf(typ, &c.Cost, &c.Amortized) = ledger.AmountOf(r.Cost)
					return emit(c)
				})
				if err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		p.Step(label + ": failed")
		return err
	}
	p.Records += written.Rows + written.ResourceRows
	p.Step(fmt.Sprintf("%s: %d rows and %d by resource, actual and amortised, in %d batches, %d changed", label, written.Rows, written.ResourceRows, written.Batches, written.Changed))
	return nil
}

// costOf is the field of a row a cost of the type goes to: actual or
// amortised.
func costOf(typ cloud.CostType, actual, amortized *ledger.Amount) *ledger.Amount {
	if typ == cloud.AmortizedCost {
		return amortized
	}
	return actual
}

// syncTags replaces the tags the ledger holds for a subscription's
// resources with those Resource Graph lists now.
func (s *Syncer) syncTags(ctx context.Context, tw pluginenv.TenantWork, sub string, p *pluginenv.Progress) error {
	var tags []ledger.ResourceTag
	err := tw.Cloud.QueryResources(ctx, []string{sub}, "Resources | project id, tags", func(r cloud.Resource) error {
		for k, v := range r.Tags {
			tags = append(tags, ledger.ResourceTag{ResourceID: r.ID, Key: k, Value: v})
		}
		return nil
	})
	if err != nil {
		return err
	}
	n, err := s.Ledger.ReplaceResourceTags(ctx, tw.Tenant.ID, sub, tags)
	if err != nil {
		return err
	}
	p.Report(fmt.Sprintf("tenant %s subscription %s: %d resource tags", tw.Tenant.Name, sub, n))
	return nil
}

// syncResourceCosts replaces a subscription's cost per resource over the
// ResourceCostDays ending yesterday, unless the ledger already holds that
// period for the same tenant.
func (s *Syncer) syncResourceCosts(ctx context.Context, tw pluginenv.TenantWork, sub string, today ledger.Day, held ledger.ResourcePeriod, p *pluginenv.Progress) error {
	tenant := tw.Tenant
	period := ledger.ResourcePeriod{SubscriptionID: sub, TenantID: tenant.ID, From: today - ResourceCostDays, To: today - 1, SyncedAt: s.now()}
	if held.From == period.From && held.To == period.To && held.TenantID == tenant.ID {
		return nil
	}
	var rows []ledger.ResourceCost
	err := tw.Cloud.ResourceCosts(ctx, sub, period.From.Time(), period.To.Time(), func(r cloud.ResourceCost) error {
		rows = append(rows, ledger.ResourceCost{ResourceID: r.ResourceID, Currency: r.Currency, Cost: ledger.AmountOf(r.Cost)})
		return nil
	})
	if err != nil {
		return err
	}
	n, err := s.Ledger.ReplaceResourceCosts(ctx, period, rows)
	if err != nil {
		return err
	}
	p.Report(fmt.Sprintf("tenant %s subscription %s resources %s..%s: %d costed", tenant.Name, sub, period.From, period.To, n))
	return nil
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
