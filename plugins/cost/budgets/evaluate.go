package budgets

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/plugins/cost/forecast"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
)

// Evaluator brings budgets' spend, status and alerts up to date, and
// raises an event (EventThreshold) for each alert.
type Evaluator struct {
	Store *Store
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Host takes the events; nil raises none.
	Host *sdk.Host
	// Logger logs the events that could not be raised.
	Logger hclog.Logger
}

func (e *Evaluator) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

// Evaluate re-evaluates the tenant's budgets whose current period overlaps
// the days from through to (inclusive), which a cost sync has just
// written: their spend, status and alerts. A budget that fails does not
// stop the others; the error names each failure.
func (e *Evaluator) Evaluate(ctx context.Context, tenant sdk.Tenant, from, to ledger.Day) error {
	budgets, err := e.Store.TenantBudgets(ctx, tenant.ID)
	if err != nil {
		return fmt.Errorf("budgets of tenant %s: %w", tenant.ID, err)
	}
	today := ledger.DayOf(e.now())
	var failures []error
	for i := range budgets {
		b := &budgets[i]
		if p := b.PeriodOn(today); p.End < from || p.Start > to {
			continue
		}
		if _, err := e.EvaluateBudget(ctx, b); err != nil {
			failures = append(failures, fmt.Errorf("budget %s: %w", b.ID, err))
		}
	}
	return errors.Join(failures...)
}

// EvaluateBudget evaluates one budget now, stores the result, and updates
// b to it. It returns how many alerts it raised.
func (e *Evaluator) EvaluateBudget(ctx context.Context, b *Budget) (int, error) {
	now := e.now()
	period, counted := b.SpendDays(ledger.DayOf(now))
	spend, forecast := b.CurrentSpend, b.ForecastSpend
	if b.Source == SourceSteward {
		var err error
		if spend, err = e.Store.Spend(ctx, b, counted); err != nil {
			return 0, err
		}
		if forecast, err = e.forecast(ctx, b, spend, period, counted); err != nil {
			return 0, err
		}
	} else if b.PeriodStart != period.Start {
		// The provider's figures are of an earlier period: until the next
		// sync, the new period has spent nothing known.
		spend, forecast = 0, 0
	}
	ev := Evaluation{Period: period, Spend: spend, Forecast: forecast, At: now,
		Status: StatusOf(spend, b.Amount, b.Thresholds), Utilization: Utilization(spend, b.Amount)}
	for _, t := range b.Thresholds {
		typ, value := AlertThreshold, spend
		if thresholdType(t) == Forecasted {
			typ, value = AlertForecast, forecast
		}
		if !reached(value, b.Amount, t.Percentage) {
			continue
		}
		if typ == AlertThreshold {
			ev.ReachedActual = append(ev.ReachedActual, t.Percentage)
		} else {
			ev.ReachedForecast = append(ev.ReachedForecast, t.Percentage)
		}
		ev.Alerts = append(ev.Alerts, Alert{
			BudgetID: b.ID, TenantID: b.TenantID, AlertType: typ, Threshold: t.Percentage, PeriodStart: period.Start,
			Spend: value, Amount: b.Amount, Currency: b.Currency, Utilization: Utilization(value, b.Amount),
			ContactEmails: t.ContactEmails, Message: alertMessage(b, typ, t.Percentage, value, period), Status: AlertPending, CreatedAt: now,
		})
	}
	raised, err := e.Store.SaveEvaluation(ctx, b, ev)
	if err != nil {
		return 0, err
	}
	e.raise(ctx, b, ev.Alerts)
	b.PeriodStart, b.CurrentSpend, b.ForecastSpend, b.Status, b.Utilization, b.EvaluatedAt = period.Start, spend, forecast, ev.Status, ev.Utilization, &now
	return raised, nil
}

// forecast is the spend of the whole period: the spend of the counted
// days plus the seasonal forecast (forecast.HoltWinters) of each day from
// the latest with costs to the period's end, fitted to the budget's daily
// costs of the reports' history (reports.HistoryDays) up to that day. A
// history too short for the season extends the spend at its daily
// average instead (Forecast); before the budget starts it is zero.
func (e *Evaluator) forecast(ctx context.Context, b *Budget, spend ledger.Amount, period, counted Period) (ledger.Amount, error) {
	if counted.End < counted.Start {
		return 0, nil
	}
	history := Period{Start: counted.End - reports.HistoryDays + 1, End: counted.End}
	days, err := e.Store.DailySpend(ctx, b, history)
	if err != nil {
		return 0, err
	}
	// The history runs from the first day with costs to the last: the
	// days after it are not yet reported, and are forecast.
	lo, hi := 0, len(days)-1
	for lo <= hi && days[lo] == 0 {
		lo++
	}
	for hi >= lo && days[hi] == 0 {
		hi--
	}
	if hi-lo+1 < forecast.MinSeasonalDays {
		return Forecast(spend, period, counted), nil
	}
	y := make([]float64, hi-lo+1)
	for i, c := range days[lo : hi+1] {
		y[i] = float64(c)
	}
	last := history.Start + ledger.Day(hi)
	rest := int(period.End - last)
	if rest <= 0 {
		return spend, nil
	}
	p, _ := forecast.Project(y, history.Start+ledger.Day(lo), rest, forecast.HoltWinters)
	return spend + ledger.Amount(math.Round(p.Total(rest))), nil
}

func alertMessage(b *Budget, typ string, pct int, value ledger.Amount, period Period) string {
	what := "Spend"
	if typ == AlertForecast {
		what = "Forecast spend"
	}
	return fmt.Sprintf("%s of %s %s for %s to %s reached %d%% of budget %q (%s %s)",
		what, value, b.Currency, period.Start, period.End, pct, b.Name, b.Amount, b.Currency)
}
