package cloud

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/consumption/armconsumption"
)

// Budget is a cost budget of a subscription. Budget filters (resource
// groups, meters, tags) are neither read nor written: Steward budgets a
// whole subscription.
type Budget struct {
	Name string
	// ETag is the version read. SetBudget with it set fails if the budget
	// changed since; empty overwrites.
	ETag   string
	Amount float64
	// TimeGrain is the period the spend resets on: Monthly, Quarterly or
	// Annually (BillingMonth, BillingQuarter and BillingAnnual on
	// Enterprise Agreements).
	TimeGrain string
	// StartDate is the first day of a month. EndDate, when zero, is left
	// to Azure, which ends budgets ten years on.
	StartDate time.Time
	EndDate   time.Time
	// CurrentSpend is the cost so far in the current period, and
	// ForecastSpend its forecast for the whole period, which Azure only
	// computes for budgets with a Forecasted notification (zero
	// otherwise); both are in Currency. Set by the service.
	CurrentSpend  float64
	ForecastSpend float64
	Currency      string
	// Notifications by name; a budget has at most five.
	Notifications map[string]BudgetNotification
}

// BudgetNotification alerts contacts when spend crosses a threshold.
type BudgetNotification struct {
	Enabled bool
	// Operator is EqualTo, GreaterThan or GreaterThanOrEqualTo.
	Operator string
	// Threshold is a percentage of the amount, up to 1000.
	Threshold float64
	// ThresholdType is Actual (the default) or Forecasted.
	ThresholdType string
	ContactEmails []string
	ContactRoles  []string
	// ContactGroups are action group resource ids.
	ContactGroups []string
}

func budgetScope(subscriptionID string) string { return "subscriptions/" + subscriptionID }

// Budgets calls fn for each budget of a subscription. An error from fn
// stops the listing and is returned as is.
func (c *ResourceManager) Budgets(ctx context.Context, subscriptionID string, fn func(Budget) error) error {
	return walk(ctx, c.budgets.NewListPager(budgetScope(subscriptionID), nil),
		func(p armconsumption.BudgetsClientListResponse) []*armconsumption.Budget { return p.Value },
		func(b *armconsumption.Budget) error { return fn(budgetOf(b)) },
		failAs("list budgets of subscription "+subscriptionID))
}

// Budget gets one budget; an unknown name is ErrNotFound.
func (c *ResourceManager) Budget(ctx context.Context, subscriptionID, name string) (Budget, error) {
	resp, err := c.budgets.Get(ctx, budgetScope(subscriptionID), name, nil)
	if err != nil {
		return Budget{}, wrap("get budget "+name+" of subscription "+subscriptionID, err)
	}
	return budgetOf(&resp.Budget), nil
}

// SetBudget creates the budget b.Name or replaces it, and returns it as
// stored, with its new ETag and current spend.
func (c *ResourceManager) SetBudget(ctx context.Context, subscriptionID string, b Budget) (Budget, error) {
	props := &armconsumption.BudgetProperties{
		Amount:     to.Ptr(b.Amount),
		Category:   to.Ptr(armconsumption.CategoryTypeCost),
		TimeGrain:  to.Ptr(armconsumption.TimeGrainType(b.TimeGrain)),
		TimePeriod: &armconsumption.BudgetTimePeriod{StartDate: to.Ptr(b.StartDate.UTC())},
	}
	if !b.EndDate.IsZero() {
		props.TimePeriod.EndDate = to.Ptr(b.EndDate.UTC())
	}
	if len(b.Notifications) > 0 {
		props.Notifications = map[string]*armconsumption.Notification{}
		for name, n := range b.Notifications {
			an := &armconsumption.Notification{
				Enabled:       to.Ptr(n.Enabled),
				Operator:      to.Ptr(armconsumption.OperatorType(n.Operator)),
				Threshold:     to.Ptr(n.Threshold),
				ContactEmails: to.SliceOfPtrs(n.ContactEmails...),
				ContactRoles:  to.SliceOfPtrs(n.ContactRoles...),
				ContactGroups: to.SliceOfPtrs(n.ContactGroups...),
			}
			if n.ThresholdType != "" {
				an.ThresholdType = to.Ptr(armconsumption.ThresholdType(n.ThresholdType))
			}
			props.Notifications[name] = an
		}
	}
	in := armconsumption.Budget{Properties: props}
	if b.ETag != "" {
		in.ETag = to.Ptr(b.ETag)
	}
	resp, err := c.budgets.CreateOrUpdate(ctx, budgetScope(subscriptionID), b.Name, in, nil)
	if err != nil {
		return Budget{}, wrap("set budget "+b.Name+" of subscription "+subscriptionID, err)
	}
	return budgetOf(&resp.Budget), nil
}

// DeleteBudget deletes a budget; an unknown name is ErrNotFound.
func (c *ResourceManager) DeleteBudget(ctx context.Context, subscriptionID, name string) error {
	if _, err := c.budgets.Delete(ctx, budgetScope(subscriptionID), name, nil); err != nil {
		return wrap("delete budget "+name+" of subscription "+subscriptionID, err)
	}
	return nil
}

func budgetOf(b *armconsumption.Budget) Budget {
	out := Budget{Name: deref(b.Name), ETag: deref(b.ETag)}
	p := b.Properties
	if p == nil {
		return out
	}
	out.Amount = deref(p.Amount)
	out.TimeGrain = string(deref(p.TimeGrain))
	if p.TimePeriod != nil {
		out.StartDate, out.EndDate = deref(p.TimePeriod.StartDate).UTC(), deref(p.TimePeriod.EndDate).UTC()
	}
	if s := p.CurrentSpend; s != nil {
		out.CurrentSpend, out.Currency = deref(s.Amount), deref(s.Unit)
	}
	if s := p.ForecastSpend; s != nil {
		out.ForecastSpend = deref(s.Amount)
		if out.Currency == "" {
			out.Currency = deref(s.Unit)
		}
	}
	if len(p.Notifications) > 0 {
		out.Notifications = map[string]BudgetNotification{}
		for name, n := range p.Notifications {
			if n == nil {
				continue
			}
			out.Notifications[name] = BudgetNotification{
				Enabled:       deref(n.Enabled),
				Operator:      string(deref(n.Operator)),
				Threshold:     deref(n.Threshold),
				ThresholdType: string(deref(n.ThresholdType)),
				ContactEmails: derefAll(n.ContactEmails),
				ContactRoles:  derefAll(n.ContactRoles),
				ContactGroups: derefAll(n.ContactGroups),
			}
		}
	}
	return out
}

// derefAll reads an optional list of the SDK's models.
func derefAll(ps []*string) []string {
	var out []string
	for _, p := range ps {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}
