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

// commitments is the cost page's card of reservations: their utilisation
// over the last commitmentDays days by hours, by normalised size and by
// cost with the money their unused hours wasted (each currency apart),
// the reservations that expire within the widest alert threshold with the
// narrowest crossed, and the provider's recommendations to buy.
func (h *Handlers) commitments(ctx context.Context, tenants []string, today ledger.Day) (template.HTML, error) {
	totals, err := h.Reports.ReservationTotals(ctx, tenants, reports.Range{From: today - commitmentDays + 1, To: today})
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
	if len(totals) == 0 && len(expiring) == 0 && len(recs) == 0 {
		return sdkui.Empty("No reservations. They are read from a tenant's billing account at each costs sync."), nil
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
	if len(totals) > 0 {
		s := reports.Summarise(totals, 0)
		span := "last " + strconv.Itoa(commitmentDays) + " days"
		stats := []template.HTML{
			sdkui.Stat("Utilisation by hours", percent(s.UtilizationPercent), "every reserved hour alike, "+span, sdkui.AtLeast(s.UtilizationPercent, 90, 70)),
			sdkui.Stat("Utilisation by normalised size", percent(s.NormalizedUtilizationPercent), "hours weighted by each SKU's size", sdkui.AtLeast(s.NormalizedUtilizationPercent, 90, 70)),
		}
		for _, c := range s.Costs {
			stats = append(stats,
				sdkui.Stat("Utilisation by cost ("+c.Currency+")", percent(c.CostUtilizationPercent), "of "+money(c.Cost, c.Currency)+" over the "+span, sdkui.AtLeast(c.CostUtilizationPercent, 90, 70)),
				sdkui.Stat("Unused ("+c.Currency+")", money(c.UnusedCost, c.Currency), "the cost of the unused hours, "+span, ""))
		}
		parts = append(parts, sdkui.Grid(stats...))
	}
	rows := make([][]any, 0, len(expiring))
	for _, c := range expiring {
		left := int(c.ExpiryDay - today)
		th, _ := reports.AlertThreshold(left)
		rows = append(rows, []any{c.Name, names[c.TenantID], c.SKU, c.Term, c.ExpiryDay.String(), left,
			sdkui.Badge("Within "+strconv.Itoa(th)+" days", expiryHealth(th))})
	}
	parts = append(parts, sdkui.Table([]string{"Reservation", "Tenant", "SKU", "Term", "Expires", "Days left", "Alert"}, rows,
		"Reservations expiring within "+strconv.Itoa(reports.ExpiryThresholds[0])+" days, soonest first"))
	rows = make([][]any, 0, len(recs))
	for _, r := range recs {
		rows = append(rows, []any{names[r.TenantID], r.SKU, r.Location, r.Term, sdkui.FormatNumber(r.RecommendedQuantity),
			money(r.NetSavings, r.Currency), money(r.CostWithout, r.Currency)})
	}
	parts = append(parts, sdkui.Table([]string{"Tenant", "SKU", "Location", "Term", "Quantity", "Net savings", "Cost without"}, rows,
		"Recommended purchases, from the last 30 days of usage, largest savings first"))
	return stack(parts...), nil
}

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
