package views

import (
	"context"
	"html/template"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// costCentres is the cost page's chargeback by cost centre of the brand
// the picker names (brandID), by the brand's allocation rules: the month
// to date of the tenants in scope as a table, and the form that downloads
// the CSV of any range. Without a brand, a word to pick one.
func (h *Handlers) costCentres(ctx context.Context, brandID string, tenants []string, today ledger.Day) (template.HTML, error) {
	if brandID == "" {
		return sdkui.Empty("Pick a brand with the tenant picker to see its costs by cost centre, allocated by the brand's rules."), nil
	}
	start := monthStart(today)
	cb, err := h.Allocation.Chargeback(ctx, brandID, tenants, reports.Range{From: start, To: today}, reports.Actual)
	if err != nil {
		return "", err
	}
	form := render("allocation", struct{ BrandID, Start, End string }{brandID, start.String(), today.String()})
	if len(cb.CostCentres) == 0 {
		return stack(sdkui.Empty("No costs of the brand this month yet."), form), nil
	}
	rows := make([][]any, 0, len(cb.CostCentres))
	for _, c := range cb.CostCentres {
		rows = append(rows, []any{c.CostCentre, money(c.DirectCost, c.Currency), money(c.SharedCost, c.Currency), money(c.TotalCost, c.Currency)})
	}
	totals := make([]string, len(cb.Totals))
	for i, t := range cb.Totals {
		totals[i] = money(t.TotalCost, t.Currency)
	}
	return stack(
		sdkui.Table([]string{"Cost centre", "Direct", "Shared", "Total"}, rows, "Costs by cost centre, "+start.String()+" to "+today.String()),
		render("note", "In all "+strings.Join(totals, ", ")+": the ledger's total, to the cent. Shared costs are split by the rules' percentages, evenly or in proportion to direct costs, the odd cents by the largest remainder."),
		form,
	), nil
}
