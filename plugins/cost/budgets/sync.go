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
// subscription. A budget of a whole tenant has no provider counterpart and
// is never pushed. A Steward budget of a subscription is pushed under the
// name "steward-<id>", replacing what the provider holds under it (Steward
// owns it); a provider budget under any other name is pulled in as a
// budget of source "provider", which the provider owns.
type Syncer struct {
	Store *Store
	// Cloud resolves the clients that reach a tenant's subscriptions, where
	// its provider budgets live; *cloud.Clients is one.
	Cloud pluginenv.Resolver
	// Host lists the tenant of a budget synced on its own.
	Host      *sdk.Host
	Evaluator *Evaluator
}

// tenantCloud is the clients that reach a tenant's subscriptions.
func (s *Syncer) tenantCloud(ctx context.Context, tenantID string) (*cloud.ResourceManager, error) {
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, []string{tenantID})
	switch {
	case err != nil:
		return nil, err
	case len(work) == 0:
		return nil, fmt.Errorf("tenant %s is not active", tenantID)
	}
	return work[0].Cloud, work[0].Err
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

// toCloud is b as the provider stores it: a notification per threshold,
// named for its type and percentage, sent when spend (or the forecast)
// reaches it, with the notification settings' roles and groups.
func toCloud(b *Budget) cloud.Budget {
	out := cloud.Budget{Name: b.ProviderName, Amount: b.Amount.Float(), TimeGrain: b.TimeGrain, StartDate: b.StartDay.Time()}
	if b.EndDay != nil {
		out.EndDate = b.EndDay.Time()
	}
	n := notificationsOf(b)
	out.Notifications = map[string]cloud.BudgetNotification{}
	for _, t := range b.Thresholds {
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

// ErrNoCounterpart is a budget of a whole tenant, which the provider has
// no place for.
var ErrNoCounterpart = errors.New("a budget of a whole tenant has no provider counterpart: only subscription budgets sync")

// BudgetSync is what syncing one budget did.
type BudgetSync struct {
	Action string `json:"action" enum:"pushed,pulled,missing" doc:"pushed: the Steward budget was written to the provider; pulled: the provider budget was read into Steward; missing: the provider no longer has the budget"`
	// ProviderName is the budget's name at the provider.
	ProviderName string `json:"provider_name"`
	// ProviderSpend and ProviderForecast are the provider's figures for
	// the current period, in ProviderCurrency.
	ProviderSpend    ledger.Amount `json:"provider_current_spend"`
	ProviderForecast ledger.Amount `json:"provider_forecast_spend" doc:"0 when the provider computes no forecast"`
	ProviderCurrency string        `json:"provider_currency"`
	SyncedAt         time.Time     `json:"synced_at"`
}

// SyncBudget pushes a Steward budget to the provider, or pulls a provider
// budget from it, and re-evaluates it; b is updated in place.
func (s *Syncer) SyncBudget(ctx context.Context, b *Budget) (BudgetSync, error) {
	if b.SubscriptionID == "" {
		return BudgetSync{}, ErrNoCounterpart
	}
	rm, err := s.tenantCloud(ctx, b.TenantID)
	if err != nil {
		return BudgetSync{}, err
	}
	return s.syncBudget(ctx, rm, b)
}

// syncBudget is SyncBudget with the clients of the budget's tenant.
func (s *Syncer) syncBudget(ctx context.Context, rm *cloud.ResourceManager, b *Budget) (BudgetSync, error) {
	now := s.Evaluator.now()
	out := BudgetSync{ProviderName: b.ProviderName, SyncedAt: now}
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
	b.SyncedAt = &now
	b.UpdatedAt = now
	if err := s.Store.Update(ctx, b); err != nil {
		return out, err
	}
	_, err = s.Evaluator.EvaluateBudget(ctx, b)
	return out, err
}

// SyncResult is what a sync of tenants' budgets did.
type SyncResult struct {
	Tenants       int         `json:"tenants" doc:"Tenants synced"`
	Subscriptions int         `json:"subscriptions" doc:"Their subscriptions the provider reported"`
	Created       int         `json:"created" doc:"Provider budgets new to Steward, pulled in"`
	Updated       int         `json:"updated" doc:"Provider budgets Steward had, refreshed"`
	Removed       int         `json:"removed" doc:"Provider budgets the provider no longer has, removed from Steward"`
	Pushed        int         `json:"pushed" doc:"Steward budgets written to the provider"`
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
// Steward and pushes their Steward subscription budgets to the provider,
// each tenant read as registered (pluginenv.Resolve). A tenant that cannot
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
			if b.Source == SourceSteward && b.SubscriptionID != "" && !slices.ContainsFunc(tw.Subscriptions, func(s string) bool { return strings.EqualFold(s, b.SubscriptionID) }) {
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
	rm, err := s.tenantCloud(ctx, b.TenantID)
	if err != nil {
		return err
	}
	err = rm.DeleteBudget(ctx, b.SubscriptionID, b.ProviderName)
	if errors.Is(err, cloud.ErrNotFound) {
		return nil
	}
	return err
}
