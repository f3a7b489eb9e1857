package budgets

import (
	"time"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// View is a budget as the API shows it.
type View struct {
	ID                 string        `json:"id" format:"uuid"`
	TenantID           string        `json:"tenant_id"`
	SubscriptionID     *string       `json:"subscription_id" doc:"null for a budget of the whole tenant"`
	Name               string        `json:"name"`
	Amount             ledger.Amount `json:"amount"`
	Currency           string        `json:"currency"`
	TimeGrain          string        `json:"time_grain" enum:"Monthly,Quarterly,Annually"`
	StartDate          ledger.Day    `json:"start_date" format:"date"`
	EndDate            *ledger.Day   `json:"end_date" format:"date" doc:"null when the budget has no end"`
	Thresholds         []Threshold   `json:"thresholds"`
	Notifications      Notifications `json:"notifications"`
	Source             string        `json:"source" enum:"steward,provider" doc:"steward: created here, spend from Steward's cost data; provider: pulled from the cloud provider, spend as it reports"`
	ProviderName       string        `json:"provider_name" doc:"The budget's name at the provider; empty for a budget of a whole tenant"`
	CurrentSpend       ledger.Amount `json:"current_spend" doc:"Spend of the current period so far, in the budget's currency"`
	ForecastSpend      ledger.Amount `json:"forecast_spend" doc:"Spend of the whole current period: the spend so far plus each remaining day forecast with weekly seasonality (Holt-Winters) from the budget's last 90 days of costs, or at the daily average so far with under 21 days of costs (for a provider budget, the provider's forecast, 0 when it computes none)"`
	UtilizationPercent float64       `json:"utilization_percent" doc:"current_spend / amount in percent, cut to two decimals"`
	Status             string        `json:"status" enum:"active,warning,critical,exceeded"`
	PeriodStart        ledger.Day    `json:"period_start" format:"date"`
	PeriodEnd          ledger.Day    `json:"period_end" format:"date"`
	CreatedBy          string        `json:"created_by"`
	CreatedAt          time.Time     `json:"created_at"`
	UpdatedAt          time.Time     `json:"updated_at"`
	EvaluatedAt        *time.Time    `json:"evaluated_at"`
	SyncedAt           *time.Time    `json:"synced_at" doc:"When the budget was last exchanged with the provider; null if never"`
}

// Detail is a budget with its most recent alerts.
type Detail struct {
	View
	RecentAlerts []AlertView `json:"recent_alerts" doc:"The budget's ten newest alerts"`
}

// AlertView is an alert as the API shows it.
type AlertView struct {
	ID                  int64         `json:"id"`
	BudgetID            string        `json:"budget_id" format:"uuid"`
	BudgetName          string        `json:"budget_name"`
	TenantID            string        `json:"tenant_id"`
	SubscriptionID      *string       `json:"subscription_id"`
	AlertType           string        `json:"alert_type" enum:"threshold,forecast" doc:"threshold: the spend reached the threshold; forecast: the forecast did"`
	Status              string        `json:"status" enum:"pending,acknowledged,resolved,dismissed"`
	ThresholdPercentage int           `json:"threshold_percentage"`
	Spend               ledger.Amount `json:"spend" doc:"The spend (or forecast) when the threshold was reached"`
	Amount              ledger.Amount `json:"amount" doc:"The budget's amount then"`
	Currency            string        `json:"currency"`
	UtilizationPercent  float64       `json:"utilization_percent"`
	PeriodStart         ledger.Day    `json:"period_start" format:"date"`
	Message             string        `json:"message"`
	ContactEmails       []string      `json:"contact_emails"`
	CreatedAt           time.Time     `json:"created_at"`
	AcknowledgedAt      *time.Time    `json:"acknowledged_at"`
	AcknowledgedBy      *string       `json:"acknowledged_by"`
	ResolutionNote      *string       `json:"resolution_note"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewOf(b *Budget) View {
	period := b.PeriodOn(b.PeriodStart)
	thresholds := b.Thresholds
	if thresholds == nil {
		thresholds = []Threshold{}
	}
	return View{
		ID: b.ID, TenantID: b.TenantID, SubscriptionID: optional(b.SubscriptionID), Name: b.Name, Amount: b.Amount, Currency: b.Currency,
		TimeGrain: b.TimeGrain, StartDate: b.StartDay, EndDate: b.EndDay, Thresholds: thresholds, Notifications: notificationsOf(b),
		Source: b.Source, ProviderName: b.ProviderName, CurrentSpend: b.CurrentSpend, ForecastSpend: b.ForecastSpend,
		UtilizationPercent: b.Utilization, Status: b.Status, PeriodStart: period.Start, PeriodEnd: period.End,
		CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, EvaluatedAt: b.EvaluatedAt, SyncedAt: b.SyncedAt,
	}
}

func alertViewOf(a AlertRow) AlertView {
	emails := a.ContactEmails
	if emails == nil {
		emails = []string{}
	}
	return AlertView{
		ID: a.ID, BudgetID: a.BudgetID, BudgetName: a.BudgetName, TenantID: a.TenantID, SubscriptionID: optional(a.SubscriptionID),
		AlertType: a.AlertType, Status: a.Status, ThresholdPercentage: a.Threshold, Spend: a.Spend, Amount: a.Amount, Currency: a.Currency,
		UtilizationPercent: a.Utilization, PeriodStart: a.PeriodStart, Message: a.Message, ContactEmails: emails, CreatedAt: a.CreatedAt,
		AcknowledgedAt: a.AcknowledgedAt, AcknowledgedBy: a.AcknowledgedBy, ResolutionNote: a.ResolutionNote,
	}
}

func alertViews(rows []AlertRow) []AlertView {
	out := make([]AlertView, len(rows))
	for i, r := range rows {
		out[i] = alertViewOf(r)
	}
	return out
}
