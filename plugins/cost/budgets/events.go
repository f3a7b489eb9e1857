package budgets

import (
	"context"
	"fmt"
	"net/mail"
	"net/url"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// EventThreshold is the event a budget alert raises.
const EventThreshold = "cost.budget_threshold"

// EventType declares EventThreshold.
var EventType = sdk.EventType{Name: EventThreshold,
	Description: "A budget's spend, or its forecast spend, reached one of its thresholds in the current period; delivered also to the threshold's contact e-mails."}

// raise raises EventThreshold for each alert the evaluation found, to the
// threshold's contacts: once per budget, period, alert type and threshold,
// as the alert itself is kept, so evaluating again raises nothing new
// while a raise that failed is made again. A failure is logged, never
// returned: the evaluation stands.
func (e *Evaluator) raise(ctx context.Context, b *Budget, alerts []Alert) {
	if e.Host == nil {
		return
	}
	for _, a := range alerts {
		severity, what := "warning", "spend"
		switch {
		case a.AlertType == AlertForecast:
			what = "forecast spend"
		case a.Threshold >= 100:
			severity = "error"
		}
		_, err := e.Host.RaiseEvent(ctx, sdk.Event{
			Kind: EventThreshold, Severity: severity, TenantID: a.TenantID,
			Title:   truncate(fmt.Sprintf("Budget %q: %s reached %d%%", b.Name, what, a.Threshold), 200),
			Message: a.Message, Link: "/costs?tenant_id=" + url.QueryEscape(a.TenantID),
			Details: map[string]any{"budget_id": b.ID, "budget_name": b.Name, "alert_type": a.AlertType, "threshold": a.Threshold,
				"period_start": a.PeriodStart.String(), "spend": a.Spend.String(), "amount": a.Amount.String(), "currency": a.Currency,
				"utilization_percent": a.Utilization},
			Recipients: recipients(a.ContactEmails),
			DedupeKey:  fmt.Sprintf("%s/%s/%d/%s", b.ID, a.AlertType, a.Threshold, a.PeriodStart),
			OccurredAt: a.CreatedAt,
		})
		if err != nil {
			e.logger().Error("raise budget threshold event", "budget_id", b.ID, "threshold", a.Threshold, "alert_type", a.AlertType, "error", err)
		}
	}
}

func (e *Evaluator) logger() hclog.Logger {
	if e.Logger == nil {
		return hclog.NewNullLogger()
	}
	return e.Logger
}

// recipients are the contact e-mails the host delivers to: bare
// addresses (a provider's budget may hold others), at most
// protocol.MaxEventRecipients.
func recipients(emails []string) []string {
	var out []string
	for _, m := range emails {
		if a, err := mail.ParseAddress(m); err == nil && a.Address == m && len(out) < protocol.MaxEventRecipients {
			out = append(out, m)
		}
	}
	return out
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
