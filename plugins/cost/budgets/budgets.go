// Package budgets is the cost plugin's budgets: spending limits of a tenant
// or of one of its subscriptions per period, their status and alerts, the
// /api/v1/budgets routes, and their sync with the cloud provider's budgets.
//
// # Spend and periods
//
// A budget's periods are its time grain's months, quarters or years counted
// from its start date (the first day of a month, as Azure requires). Its
// current period is the one holding today; before the start date it is the
// first period, after the end date the last. The current spend of a budget
// created in Steward is the ledger's cost of the period from its first day
// through today, in the budget's currency only (costs in other currencies
// are not converted, and not counted): cost_tenant_daily for a budget of a
// whole tenant, cost_daily of the subscription for a subscription budget,
// summed in SQL. A budget pulled from the provider takes the provider's
// current spend. The forecast of a budget created in Steward is its spend
// so far plus the forecast of each day left in the period by the cost
// reads' seasonal method (forecast.HoltWinters: weekly season, damped
// trend), fitted to the budget's own daily costs of the last 90 days; with
// fewer than three weeks of costs it extends the spend so far at its daily
// average. A pulled budget's forecast is the provider's.
//
// # Status
//
// Utilisation is current spend / amount, in percent. The status is
//   - exceeded from 100 %,
//   - critical from 90 %,
//   - warning from the lowest Actual threshold of the budget,
//   - active below all of these.
//
// The 90 % and 100 % bands hold whatever the thresholds; a budget whose
// lowest Actual threshold is 90 % or more goes from active to critical.
// Comparisons are made in integer cents, so 80 % of 100.00 is reached at
// exactly 80.00.
//
// # Alerts
//
// An alert is raised, pending, the first time in a period that the spend
// (alert type "threshold", for an Actual threshold) or the forecast
// ("forecast", for a Forecasted threshold) reaches a threshold: one per
// budget, period, type and threshold, however often the budget is
// evaluated. A new period raises them afresh. A pending alert of an earlier
// period is resolved when the budget enters a new one; a pending alert of
// the current period whose threshold is no longer reached (the amount was
// raised, the costs restated) is dismissed. Acknowledging moves a pending
// alert to acknowledged, with an optional resolution note; acknowledging an
// acknowledged alert again changes nothing.
//
// Budgets are evaluated after every cost sync (Evaluator.Evaluate) and
// after a budget is created, changed or synced.
package budgets

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Budget statuses.
const (
	StatusActive   = "active"
	StatusWarning  = "warning"
	StatusCritical = "critical"
	StatusExceeded = "exceeded"
)

// Statuses are the budget statuses, in order of severity.
var Statuses = []string{StatusActive, StatusWarning, StatusCritical, StatusExceeded}

// Time grains.
const (
	Monthly   = "Monthly"
	Quarterly = "Quarterly"
	Annually  = "Annually"
)

var grainMonths = map[string]int{Monthly: 1, Quarterly: 3, Annually: 12}

// Threshold types, as Azure names them.
const (
	Actual     = "Actual"
	Forecasted = "Forecasted"
)

// Sources of a budget.
const (
	// SourceSteward is a budget created in Steward: its spend comes from the
	// ledger, and sync pushes it to the provider.
	SourceSteward = "steward"
	// SourceProvider is a budget pulled from the provider, which owns it.
	SourceProvider = "provider"
)

// Alert types and statuses.
const (
	AlertThreshold = "threshold"
	AlertForecast  = "forecast"

	AlertPending      = "pending"
	AlertAcknowledged = "acknowledged"
	AlertResolved     = "resolved"
	AlertDismissed    = "dismissed"
)

// AlertStatuses are the alert statuses.
var AlertStatuses = []string{AlertPending, AlertAcknowledged, AlertResolved, AlertDismissed}

// Threshold is a percentage of the amount at which the budget alerts its
// contacts.
type Threshold struct {
	Percentage    int      `json:"percentage" minimum:"1" maximum:"1000" doc:"Percent of the amount, 1 to 1000"`
	ContactEmails []string `json:"contact_emails" maxItems:"50" doc:"Whom the provider e-mails when the threshold is reached; may be empty, as the alert is recorded in Steward either way"`
	ThresholdType string   `json:"threshold_type" enum:"Actual,Forecasted" doc:"Actual compares the spend, Forecasted the forecast; Actual when omitted"`
}

// Notifications are settings shared by a budget's thresholds when it is
// pushed to the provider.
type Notifications struct {
	Enabled       bool     `json:"enabled" doc:"Whether the provider sends the thresholds' e-mails; true when omitted"`
	ContactRoles  []string `json:"contact_roles" doc:"Roles on the subscription also told: Owner, Contributor, Reader"`
	ContactGroups []string `json:"contact_groups" doc:"Action group resource ids also told"`
}

// Budget is a row of cost_budgets.
type Budget struct {
	bun.BaseModel  `bun:"table:cost_budgets"`
	ID             string         `bun:"id,pk"`
	TenantID       string         `bun:"tenant_id"`
	SubscriptionID string         `bun:"subscription_id"`
	Name           string         `bun:"name"`
	NameKey        string         `bun:"name_key"`
	Amount         ledger.Amount  `bun:"amount_cents"`
	Currency       string         `bun:"currency"`
	TimeGrain      string         `bun:"time_grain"`
	StartDay       ledger.Day     `bun:"start_day"`
	EndDay         *ledger.Day    `bun:"end_day"`
	Thresholds     []Threshold    `bun:"thresholds,type:text"`
	Notifications  *Notifications `bun:"notifications,type:text"`
	Source         string         `bun:"source"`
	ProviderName   string         `bun:"provider_name"`
	ProviderETag   string         `bun:"provider_etag"`
	PeriodStart    ledger.Day     `bun:"period_start"`
	CurrentSpend   ledger.Amount  `bun:"current_spend_cents"`
	ForecastSpend  ledger.Amount  `bun:"forecast_spend_cents"`
	Utilization    float64        `bun:"utilization_percent"`
	Status         string         `bun:"status"`
	CreatedBy      string         `bun:"created_by"`
	CreatedAt      time.Time      `bun:"created_at"`
	UpdatedAt      time.Time      `bun:"updated_at"`
	EvaluatedAt    *time.Time     `bun:"evaluated_at"`
	SyncedAt       *time.Time     `bun:"synced_at"`
}

// Alert is a row of cost_budget_alerts.
type Alert struct {
	bun.BaseModel  `bun:"table:cost_budget_alerts,alias:a"`
	ID             int64         `bun:"id,pk,autoincrement"`
	BudgetID       string        `bun:"budget_id"`
	TenantID       string        `bun:"tenant_id"`
	AlertType      string        `bun:"alert_type"`
	Threshold      int           `bun:"threshold"`
	PeriodStart    ledger.Day    `bun:"period_start"`
	Spend          ledger.Amount `bun:"spend_cents"`
	Amount         ledger.Amount `bun:"amount_cents"`
	Currency       string        `bun:"currency"`
	Utilization    float64       `bun:"utilization_percent"`
	ContactEmails  []string      `bun:"contact_emails,type:text"`
	Message        string        `bun:"message"`
	Status         string        `bun:"status"`
	CreatedAt      time.Time     `bun:"created_at"`
	AcknowledgedAt *time.Time    `bun:"acknowledged_at"`
	AcknowledgedBy *string       `bun:"acknowledged_by"`
	ResolutionNote *string       `bun:"resolution_note"`
}

// Period is a span of days, both ends included.
type Period struct{ Start, End ledger.Day }

// Days is how many days the period has.
func (p Period) Days() int { return int(p.End-p.Start) + 1 }

func addMonths(d ledger.Day, months int) ledger.Day {
	return ledger.DayOf(d.Time().AddDate(0, months, 0))
}

// PeriodOn returns the budget's period holding the day: the first period
// before the budget starts, the last after it ends. A period is cut short
// by the end date.
func (b *Budget) PeriodOn(day ledger.Day) Period {
	months := grainMonths[b.TimeGrain]
	if months == 0 {
		months = 1
	}
	ref := max(day, b.StartDay)
	if b.EndDay != nil && ref > *b.EndDay {
		ref = *b.EndDay
	}
	sy, sm, _ := b.StartDay.Time().Date()
	ry, rm, _ := ref.Time().Date()
	elapsed := (ry-sy)*12 + int(rm-sm)
	start := addMonths(b.StartDay, elapsed/months*months)
	end := addMonths(start, months) - 1
	if b.EndDay != nil && end > *b.EndDay {
		end = *b.EndDay
	}
	return Period{Start: start, End: end}
}

// SpendDays returns the current period on day today and the part of it
// whose costs count: from its first day through today, or through its
// last if it has ended. The part is empty (End < Start) before the budget
// starts.
func (b *Budget) SpendDays(today ledger.Day) (period, counted Period) {
	period = b.PeriodOn(today)
	return period, Period{Start: period.Start, End: min(today, period.End)}
}

// reached reports whether spend is at least pct percent of amount, exactly.
func reached(spend, amount ledger.Amount, pct int) bool {
	return int64(spend)*100 >= int64(amount)*int64(pct)
}

// StatusOf is the status of a budget of the amount and thresholds at the
// spend; see the package documentation.
func StatusOf(spend, amount ledger.Amount, thresholds []Threshold) string {
	switch {
	case reached(spend, amount, 100):
		return StatusExceeded
	case reached(spend, amount, 90):
		return StatusCritical
	}
	for _, t := range thresholds {
		if thresholdType(t) == Actual && reached(spend, amount, t.Percentage) {
			return StatusWarning
		}
	}
	return StatusActive
}

// Utilization is spend / amount in percent, cut to two decimals, so it
// shows 100 only once the budget is exceeded.
func Utilization(spend, amount ledger.Amount) float64 {
	if amount <= 0 {
		return 0
	}
	return float64(int64(spend)*10000/int64(amount)) / 100
}

// Forecast extends the spend of the counted days at their daily average to
// the whole period; before the budget starts it is zero.
func Forecast(spend ledger.Amount, period, counted Period) ledger.Amount {
	if counted.End < counted.Start {
		return 0
	}
	return ledger.Amount(int64(spend) * int64(period.Days()) / int64(counted.Days()))
}

func thresholdType(t Threshold) string {
	if t.ThresholdType == "" {
		return Actual
	}
	return t.ThresholdType
}
