package views

import (
	"context"
	"html/template"
	"strconv"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// commitmentDays is the span of the commitments card's utilisation.
const commitmentDays = 30

// commitments is the cost page's card of reservations and savings plans:
// the reservations' utilisation over the last commitmentDays days by
// hours, by normalised size and by cost with the money their unused hours
// wasted, the savings plans' by cost with the commitment they left unused
// (each currency apart), the commitments that expire within the widest
// alert threshold with the narrowest crossed, and the provider's
// recommendations to buy.
func (h *Handlers) commitments(ctx context.Context, tenants []string, today ledger.Day) (template.HTML, error) {
	span := reports.Range{From: today - commitmentDays + 1, To: today}
	totals, err := h.Reports.ReservationTotals(ctx, tenants, span)
	if err != nil {
		return "", err
	}
	plans, err := h.Reports.SavingsPlanTotals(ctx, tenants, span)
	if err != nil {
		return "", err
	}
	expiring, err := h.Reports.Expiring(ctx, tenants, today, today+ledger.Day(reports.ExpiryThresholds[0]))
	if err != nil {
		return "", err
	}
	recs, err := h.Reports.Recommendations(ctx, tenants)
	if err != nil {
		return "", err
	}
	if len(totals) == 0 && len(plans) == 0 && len(expiring) == 0 && len(recs) == 0 {
		return sdkui.Empty("No reservations or savings plans. They are read from a tenant's billing account at each costs sync."), nil
	}
	ids := make([]string, 0, len(expiring)+len(recs))
	for _, c := range expiring {
		ids = append(ids, c.TenantID)
	}
	for _, r := range recs {
		ids = append(ids, r.TenantID)
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	if err != nil {
		return "", err
	}
	var parts []template.HTML
	last := "last " + strconv.Itoa(commitmentDays) + " days"
	if len(totals) > 0 {
		s := reports.Summarise(totals, 0)
		stats := []template.HTML{
			sdkui.Stat("Utilisation by hours", percent(s.UtilizationPercent), "every reserved hour alike, "+last, sdkui.AtLeast(s.UtilizationPercent, 90, 70)),
			sdkui.Stat("Utilisation by normalised size", percent(s.NormalizedUtilizationPercent), "hours weighted by each SKU's size", sdkui.AtLeast(s.NormalizedUtilizationPercent, 90, 70)),
		}
		for _, c := range s.Costs {
			stats = append(stats,
				sdkui.Stat("Utilisation by cost ("+c.Currency+")", percent(c.CostUtilizationPercent), "of "+money(c.Cost, c.Currency)+" over the "+last, sdkui.AtLeast(c.CostUtilizationPercent, 90, 70)),
				sdkui.Stat("Unused ("+c.Currency+")", money(c.UnusedCost, c.Currency), "the cost of the unused hours, "+last, ""))
		}
		parts = append(parts, sdkui.Grid(stats...))
	}
	if len(plans) > 0 {
		var stats []template.HTML
		for _, c := range reports.SummariseSavingsPlans(plans).Costs {
			stats = append(stats,
				sdkui.Stat("Savings plans by cost ("+c.Currency+")", percent(c.CostUtilizationPercent), "of "+money(c.Committed, c.Currency)+" committed over the "+last, sdkui.AtLeast(c.CostUtilizationPercent, 90, 70)),
				sdkui.Stat("Savings plans unused ("+c.Currency+")", money(c.UnusedCost, c.Currency), "the commitment left unused, "+last, ""))
		}
		parts = append(parts, sdkui.Grid(stats...))
	}
	rows := make([][]any, 0, len(expiring))
	for _, c := range expiring {
		left := int(c.ExpiryDay - today)
		th, _ := reports.AlertThreshold(left)
		rows = append(rows, []any{c.Name, kindName[c.Kind], names[c.TenantID], c.SKU, c.Term, c.ExpiryDay.String(), left,
			sdkui.Badge("Within "+strconv.Itoa(th)+" days", expiryHealth(th))})
	}
	parts = append(parts, sdkui.Table([]string{"Commitment", "Kind", "Tenant", "SKU", "Term", "Expires", "Days left", "Alert"}, rows,
		"Reservations and savings plans expiring within "+strconv.Itoa(reports.ExpiryThresholds[0])+" days, soonest first"))
	rows = make([][]any, 0, len(recs))
	for _, r := range recs {
		buy := sdkui.FormatNumber(r.RecommendedQuantity)
		if r.Kind == ledger.KindSavingsPlan {
			buy = sdkui.FormatNumber(r.CommitmentAmount) + " " + r.Currency + " an hour"
		}
		rows = append(rows, []any{names[r.TenantID], kindName[r.Kind], r.SKU, r.Location, r.Term, buy,
			money(r.NetSavings, r.Currency), money(r.CostWithout, r.Currency)})
	}
	parts = append(parts, sdkui.Table([]string{"Tenant", "Kind", "SKU", "Location", "Term", "Buy", "Net savings", "Cost without"}, rows,
		"Recommended purchases, from the last 30 days of usage, largest savings first"))
	return stack(parts...), nil
}

// kindName is how the card names each kind of commitment.
var kindName = map[string]string{ledger.KindReservation: "Reservation", ledger.KindSavingsPlan: "Savings plan"}

// expiryHealth is the colour of a threshold crossed: Critical within 7
// days, Warning within 30, OK within 90 (an early notice).
func expiryHealth(threshold int) sdkui.Health {
	switch {
	case threshold <= 7:
		return sdkui.Critical
	case threshold <= 30:
		return sdkui.Warning
	}
	return sdkui.OK
}

// percent is a utilisation as the page writes it.
func percent(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " %" }
