package budgets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Syncer exchanges budgets with the provider, where budgets live per
// subscription. A Steward budget of a subscription is pushed under the
// name "steward-<id>", replacing what the provider holds under it (Steward
// owns it), with a notification for each threshold that has someone to
// tell (an e-mail address, or the notifications' action groups): a
// threshold without is still evaluated and alerted on in Steward, and the
// provider refuses a notification that tells no one. A provider budget
// under any other name is pulled in as a budget of source "provider",
// which the provider owns. A budget of a whole tenant has no place at the
// provider, whose budgets are per subscription (a tenant's root management
// group is not delegated through Lighthouse): it syncs by reading the
// provider's cost of its current period from each of the tenant's
// subscriptions and summing it.
type Syncer struct {
	Store *Store
	// Cloud resolves the clients that reach a tenant's subscriptions, where
	// its provider budgets live; *cloud.Clients is one.
	Cloud pluginenv.Resolver
	// Host lists the tenant of a budget synced on its own.
	Host      *sdk.Host
	Evaluator *Evaluator
}

// tenantWork is the clients that reach a tenant and its subscriptions.
func (s *Syncer) tenantWork(ctx context.Context, tenantID string) (pluginenv.TenantWork, error) {
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, []string{tenantID})
	switch {
	case err != nil:
		return pluginenv.TenantWork{}, err
	case len(work) == 0:
		return pluginenv.TenantWork{}, fmt.Errorf("tenant %s is not active", tenantID)
	}
	return work[0], work[0].Err
}

// providerName is the name a Steward budget has at the provider.
func providerName(id string) string { return "steward-" + id }

// grainOf reads a provider time grain as one of ours: the billing grains
// of Enterprise Agreements as the calendar ones.
func grainOf(g string) string {
	switch g {
	case "BillingMonth":
		return Monthly
	case "BillingQuarter":
		return Quarterly
	case "BillingAnnual":
		return Annually
	}
	if grainMonths[g] == 0 {
		return Monthly
	}
	return g
}

// toCloud is b as the provider stores it: a notification per threshold
// that has someone to tell, named for its type and percentage, sent when
// spend (or the forecast) reaches it, with the notification settings'
// roles and groups.
func toCloud(b *Budget) cloud.Budget {
	out := cloud.Budget{Name: b.ProviderName, Amount: b.Amount.Float(), TimeGrain: b.TimeGrain, StartDate: b.StartDay.Time()}
	if b.EndDay != nil {
		out.EndDate = b.EndDay.Time()
	}
	n := notificationsOf(b)
	out.Notifications = map[string]cloud.BudgetNotification{}
	for _, t := range b.Thresholds {
		if len(t.ContactEmails) == 0 && len(n.ContactGroups) == 0 {
			continue
		}
		typ := thresholdType(t)
		out.Notifications[fmt.Sprintf("%s-%d", strings.ToLower(typ), t.Percentage)] = cloud.BudgetNotification{
			Enabled: n.Enabled, Operator: "GreaterThanOrEqualTo", Threshold: float64(t.Percentage), ThresholdType: typ,
			ContactEmails: t.ContactEmails, ContactRoles: n.ContactRoles, ContactGroups: n.ContactGroups,
		}
	}
	return out
}

// fromCloud sets b's definition and spend to the provider budget's.
func fromCloud(b *Budget, cb cloud.Budget, today ledger.Day) {
	b.Name, b.ProviderName, b.ProviderETag = cb.Name, cb.Name, cb.ETag
	b.Amount, b.TimeGrain = ledger.AmountOf(cb.Amount), grainOf(cb.TimeGrain)
	if cb.Currency != "" {
		b.Currency = cb.Currency
	} else if b.Currency == "" {
		b.Currency = defaultCurrency
	}
	b.StartDay, b.EndDay = ledger.DayOf(cb.StartDate), nil
	if !cb.EndDate.IsZero() {
		end := ledger.DayOf(cb.EndDate)
		b.EndDay = &end
	}
	b.Thresholds = []Threshold{}
	n := Notifications{ContactRoles: []string{}, ContactGroups: []string{}}
	for _, key := range slices.Sorted(maps.Keys(cb.Notifications)) {
		pn := cb.Notifications[key]
		typ := Actual
		if pn.ThresholdType == Forecasted {
			typ = Forecasted
		}
		emails := pn.ContactEmails
		if emails == nil {
			emails = []string{}
		}
		b.Thresholds = append(b.Thresholds, Threshold{Percentage: min(max(int(math.Round(pn.Threshold)), minPercentage), maxPercentage),
			ContactEmails: emails, ThresholdType: typ})
		n.Enabled = n.Enabled || pn.Enabled
		for _, r := range pn.ContactRoles {
			if !slices.Contains(n.ContactRoles, r) {
				n.ContactRoles = append(n.ContactRoles, r)
			}
		}
		for _, g := range pn.ContactGroups {
			if !slices.Contains(n.ContactGroups, g) {
				n.ContactGroups = append(n.ContactGroups, g)
			}
		}
	}
	b.Notifications = &n
	b.CurrentSpend, b.PeriodStart = ledger.AmountOf(cb.CurrentSpend), b.PeriodOn(today).Start
	b.ForecastSpend = ledger.AmountOf(cb.ForecastSpend)
}

// notificationsOf is b's notification settings, the defaults when it has
// none.
func notificationsOf(b *Budget) Notifications {
	if b.Notifications == nil {
		return Notifications{Enabled: true, ContactRoles: []string{}, ContactGroups: []string{}}
	}
	n := *b.Notifications
	if n.ContactRoles == nil {
		n.ContactRoles = []string{}
	}
	if n.ContactGroups == nil {
		n.ContactGroups = []string{}
	}
	return n
}

// BudgetSync is what syncing one budget did.
type BudgetSync struct {
	Action string `json:"action" enum:"pushed,pulled,missing,summed" doc:"pushed: the Steward budget was written to the provider; pulled: the provider budget was read into Steward; missing: the provider no longer has the budget; summed: the budget is of a whole tenant, and the provider's cost of its current period was summed over the tenant's subscriptions"`
	// ProviderName is the budget's name at the provider.
	ProviderName string `json:"provider_name" doc:"Empty for a budget of a whole tenant, which has none"`
	// Subscriptions are those the provider's figures are of.
	Subscriptions []string `json:"subscriptions" doc:"The subscriptions the provider's figures are of: the budget's own, or for a budget of a whole tenant every subscription of the tenant the provider reports"`
	// ProviderSpend and ProviderForecast are the provider's figures for
	// the current period, in ProviderCurrency.
	ProviderSpend    ledger.Amount `json:"provider_current_spend"`
	ProviderForecast ledger.Amount `json:"provider_forecast_spend" doc:"0 when the provider computes no forecast"`
	ProviderCurrency string        `json:"provider_currency"`
	SyncedAt         time.Time     `json:"synced_at"`
}

// SyncBudget pushes a Steward budget of a subscription to the provider,
// pulls a provider budget from it, or sums the provider's costs of a
// budget of a whole tenant, and re-evaluates the budget; b is updated in
// place.
func (s *Syncer) SyncBudget(ctx context.Context, b *Budget) (BudgetSync, error) {
	tw, err := s.tenantWork(ctx, b.TenantID)
	if err != nil {
		return BudgetSync{}, err
	}
	if b.SubscriptionID == "" {
		return s.sumBudget(ctx, tw, b)
	}
	return s.syncBudget(ctx, tw.Cloud, b)
}

// sumBudget syncs a budget of a whole tenant: the provider's actual cost
// of the budget's current period so far, in the budget's currency, summed
// over the tenant's subscriptions, with the forecast Steward makes of it.
// The budget's own spend stays that of Steward's cost data, as a pushed
// budget's does.
func (s *Syncer) sumBudget(ctx context.Context, tw pluginenv.TenantWork, b *Budget) (BudgetSync, error) {
	now := s.Evaluator.now()
	out := BudgetSync{Action: "summed", Subscriptions: slices.Clone(tw.Subscriptions), ProviderCurrency: b.Currency, SyncedAt: now}
	period, counted := b.SpendDays(ledger.DayOf(now))
	if counted.End >= counted.Start {
		for _, sub := range tw.Subscriptions {
			err := tw.Cloud.DailyCosts(ctx, sub, cloud.ActualCost, counted.Start.Time(), counted.End.Time(), func(r cloud.CostRow) error {
				if r.Currency == b.Currency {
					out.ProviderSpend += ledger.AmountOf(r.Cost)
				}
				return nil
			})
			if err != nil {
				return out, tw.Failed(err)
			}
		}
	}
	out.ProviderForecast = Forecast(out.ProviderSpend, period, counted)
	return out, s.saveSynced(ctx, b, now)
}

// saveSynced stores b as synced now and re-evaluates it.
func (s *Syncer) saveSynced(ctx context.Context, b *Budget, now time.Time) error {
	b.SyncedAt = &now
	b.UpdatedAt = now
	if err := s.Store.Update(ctx, b); err != nil {
		return err
	}
	_, err := s.Evaluator.EvaluateBudget(ctx, b)
	return err
}

// syncBudget syncs a budget of a subscription with the clients of its
// tenant.
func (s *Syncer) syncBudget(ctx context.Context, rm *cloud.ResourceManager, b *Budget) (BudgetSync, error) {
	now := s.Evaluator.now()
	out := BudgetSync{ProviderName: b.ProviderName, Subscriptions: []string{b.SubscriptionID}, SyncedAt: now}
	var cb cloud.Budget
	var err error
	if b.Source == SourceSteward {
		cb, err = rm.SetBudget(ctx, b.SubscriptionID, toCloud(b))
		out.Action = "pushed"
		b.ProviderETag = cb.ETag
	} else {
		cb, err = rm.Budget(ctx, b.SubscriptionID, b.ProviderName)
		out.Action = "pulled"
		if errors.Is(err, cloud.ErrNotFound) {
			out.Action = "missing"
			return out, nil
		}
		if err == nil {
			fromCloud(b, cb, ledger.DayOf(now))
		}
	}
	if err != nil {
		return out, err
	}
	out.ProviderSpend, out.ProviderForecast, out.ProviderCurrency = ledger.AmountOf(cb.CurrentSpend), ledger.AmountOf(cb.ForecastSpend), cb.Currency
	return out, s.saveSynced(ctx, b, now)
}

// SyncResult is what a sync of tenants' budgets did.
type SyncResult struct {
	Tenants       int         `json:"tenants" doc:"Tenants synced"`
	Subscriptions int         `json:"subscriptions" doc:"Their subscriptions the provider reported"`
	Created       int         `json:"created" doc:"Provider budgets new to Steward, pulled in"`
	Updated       int         `json:"updated" doc:"Provider budgets Steward had, refreshed"`
	Removed       int         `json:"removed" doc:"Provider budgets the provider no longer has, removed from Steward"`
	Pushed        int         `json:"pushed" doc:"Steward budgets written to the provider"`
	Summed        int         `json:"summed" doc:"Budgets of a whole tenant whose provider cost was summed over the tenant's subscriptions"`
	Failed        int         `json:"failed" doc:"Subscriptions or budgets that could not be synced; see errors"`
	Errors        []SyncError `json:"errors"`
	SyncedAt      time.Time   `json:"synced_at"`
}

// SyncError is one failure of a sync.
type SyncError struct {
	TenantID       string `json:"tenant_id"`
	SubscriptionID string `json:"subscription_id"`
	BudgetID       string `json:"budget_id,omitempty"`
	Message        string `json:"message"`
}

func (r *SyncResult) fail(tenantID, subID, budgetID string, err error) {
	r.Failed++
	r.Errors = append(r.Errors, SyncError{TenantID: tenantID, SubscriptionID: subID, BudgetID: budgetID, Message: err.Error()})
}

// SyncTenants pulls the provider budgets of the tenants' subscriptions into
// Steward, pushes their Steward subscription budgets to the provider and
// sums the provider's costs for their budgets of a whole tenant, each
// tenant read as registered (pluginenv.Resolve). A tenant that cannot
// be read, a subscription or a budget that fails does not stop the others;
// the result names each failure.
func (s *Syncer) SyncTenants(ctx context.Context, tenants []sdk.Tenant) (SyncResult, error) {
	now := s.Evaluator.now()
	res := SyncResult{Tenants: len(tenants), Errors: []SyncError{}, SyncedAt: now}
	for _, tw := range pluginenv.Resolve(ctx, s.Cloud, tenants) {
		t := tw.Tenant
		if tw.Err != nil {
			res.fail(t.ID, "", "", tw.Err)
			continue
		}
		own, err := s.Store.TenantBudgets(ctx, t.ID)
		if err != nil {
			return res, err
		}
		for _, sub := range tw.Subscriptions {
			res.Subscriptions++
			s.syncSubscription(ctx, tw.Cloud, t.ID, sub, &res)
		}
		for i := range own {
			b := &own[i]
			switch {
			case b.SubscriptionID == "":
				if _, err := s.sumBudget(ctx, tw, b); err != nil {
					res.fail(t.ID, "", b.ID, err)
					continue
				}
				res.Summed++
			case b.Source == SourceSteward && !slices.ContainsFunc(tw.Subscriptions, func(s string) bool { return strings.EqualFold(s, b.SubscriptionID) }):
				res.fail(t.ID, b.SubscriptionID, b.ID, errors.New("the provider reports no such subscription of the tenant; the budget was not pushed"))
			}
		}
	}
	return res, nil
}

// syncSubscription pulls one subscription's provider budgets and pushes
// its Steward budgets.
func (s *Syncer) syncSubscription(ctx context.Context, rm *cloud.ResourceManager, tenantID, subID string, res *SyncResult) {
	local, err := s.Store.ProviderBudgets(ctx, tenantID, subID)
	if err != nil {
		res.fail(tenantID, subID, "", err)
		return
	}
	var remote []cloud.Budget
	if err := rm.Budgets(ctx, subID, func(b cloud.Budget) error { remote = append(remote, b); return nil }); err != nil {
		res.fail(tenantID, subID, "", err)
		return
	}
	now := s.Evaluator.now()
	today := ledger.DayOf(now)
	seen := map[string]bool{}
	for _, cb := range remote {
		key := strings.ToLower(cb.Name)
		seen[key] = true
		b, known := local[key]
		if known && b.Source == SourceSteward {
			continue // pushed below
		}
		if !known {
			b = &Budget{ID: uuid.NewString(), TenantID: tenantID, SubscriptionID: subID, Source: SourceProvider, CreatedBy: "provider sync", CreatedAt: now}
		}
		fromCloud(b, cb, today)
		b.SyncedAt, b.UpdatedAt = &now, now
		if known {
			err = s.Store.Update(ctx, b)
		} else {
			b.Status = StatusActive
			err = s.Store.Create(ctx, b)
		}
		if errors.Is(err, ErrDuplicate) {
			err = fmt.Errorf("provider budget %q: another budget of the subscription already has that name", cb.Name)
		}
		if err != nil {
			res.fail(tenantID, subID, b.ID, err)
			continue
		}
		if known {
			res.Updated++
		} else {
			res.Created++
		}
		if _, err := s.Evaluator.EvaluateBudget(ctx, b); err != nil {
			res.fail(tenantID, subID, b.ID, err)
		}
	}
	for key, b := range local {
		switch {
		case b.Source == SourceProvider && !seen[key]:
			if err := s.Store.Delete(ctx, b.ID); err != nil {
				res.fail(tenantID, subID, b.ID, err)
				continue
			}
			res.Removed++
		case b.Source == SourceSteward:
			if _, err := s.syncBudget(ctx, rm, b); err != nil {
				res.fail(tenantID, subID, b.ID, err)
				continue
			}
			res.Pushed++
		}
	}
}

// DeleteRemote deletes the budget's provider counterpart, if it has one
// and the provider still holds it.
func (s *Syncer) DeleteRemote(ctx context.Context, b *Budget) error {
	if b.SubscriptionID == "" || b.SyncedAt == nil {
		return nil
	}
	tw, err := s.tenantWork(ctx, b.TenantID)
	if err != nil {
		return err
	}
	err = tw.Cloud.DeleteBudget(ctx, b.SubscriptionID, b.ProviderName)
	if errors.Is(err, cloud.ErrNotFound) {
		return nil
	}
	return err
}
