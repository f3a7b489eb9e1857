package reports

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// SavingsPlans is the utilisation of a tenant's savings plans over the
// range of the reservations beside it, weighted by cost: the money each
// plan committed, the part the usage used and the part left unused.
type SavingsPlans struct {
	Summary SavingsPlanTotals  `json:"summary"`
	Items   []SavingsPlanUsage `json:"items" doc:"One entry per savings plan and day or month, in period order"`
}

// SavingsPlanTotals add up every savings plan over the whole range.
type SavingsPlanTotals struct {
	SavingsPlans int `json:"savings_plans" doc:"Distinct savings plans with data in the range"`
	// Costs are per currency: amounts are never converted.
	Costs []SavingsPlanCost `json:"costs" doc:"The plans' commitment, used and unused money per currency"`
}

// SavingsPlanCost is what savings plans committed in one currency over a
// range, and how much of it was used and left unused.
type SavingsPlanCost struct {
	Currency               string        `json:"currency"`
	Committed              ledger.Amount `json:"committed" doc:"Each day's commitment (the hourly commitment times 24, rounded to the cent), summed"`
	Used                   ledger.Amount `json:"used" doc:"Each day's commitment times its mean utilisation, rounded to the cent, summed"`
	UnusedCost             ledger.Amount `json:"unused_cost" doc:"committed less used: the money the plans left unused"`
	CostUtilizationPercent float64       `json:"cost_utilization_percent" doc:"used over committed, in percent: utilisation weighted by cost"`
}

// SavingsPlanUsage is one savings plan's use in one period.
type SavingsPlanUsage struct {
	SavingsPlanID          string        `json:"savings_plan_id"`
	SavingsPlanOrderID     string        `json:"savings_plan_order_id"`
	Period                 string        `json:"period" doc:"The day (YYYY-MM-DD) or month (YYYY-MM)"`
	Currency               string        `json:"currency"`
	Committed              ledger.Amount `json:"committed" doc:"The period's commitment, exact to the cent"`
	Used                   ledger.Amount `json:"used"`
	UnusedCost             ledger.Amount `json:"unused_cost" doc:"The unused money of the day or month: committed less used"`
	CostUtilizationPercent float64       `json:"cost_utilization_percent" doc:"used over committed, in percent"`
	MinUtilization         float64       `json:"min_utilization" doc:"Lowest hourly utilisation the provider reported, in percent"`
	AvgUtilization         float64       `json:"avg_utilization" doc:"Mean of the daily average utilisations, in percent"`
	MaxUtilization         float64       `json:"max_utilization" doc:"Highest hourly utilisation the provider reported, in percent"`
}

// SavingsPlanUse is a savings plan's utilisation and money over a day or
// a month, summed by the store.
type SavingsPlanUse struct {
	SavingsPlanID      string `bun:"savings_plan_id"`
	SavingsPlanOrderID string `bun:"savings_plan_order_id"`
	// Period is the day (days since 1970-01-01) or the month (yyyymm).
	Period         int           `bun:"period"`
	MinUtilization float64       `bun:"min_utilization"`
	AvgUtilization float64       `bun:"avg_utilization"`
	MaxUtilization float64       `bun:"max_utilization"`
	Currency       string        `bun:"currency"`
	Committed      ledger.Amount `bun:"committed"`
	Used           ledger.Amount `bun:"used"`
	Unused         ledger.Amount `bun:"unused"`
}

// SavingsPlanUses sums a tenant's savings plan days over r per plan and
// day or month (grain), in period and plan order.
func (s *Store) SavingsPlanUses(ctx context.Context, tenantID string, r Range, grain string) ([]SavingsPlanUse, error) {
	period := s.period(grain)
	out := []SavingsPlanUse{}
	err := s.DB.NewRaw(`SELECT savings_plan_id, MAX(savings_plan_order_id) AS savings_plan_order_id, `+period+` AS period,
		MIN(min_utilization) AS min_utilization, AVG(avg_utilization) AS avg_utilization, MAX(max_utilization) AS max_utilization,
		MAX(currency) AS currency, CAST(SUM(committed_cents) AS BIGINT) AS committed,
		CAST(SUM(used_cents) AS BIGINT) AS used, CAST(SUM(unused_cents) AS BIGINT) AS unused
		FROM cost_savings_plan_days
		WHERE tenant_id = ? AND day BETWEEN ? AND ?
		GROUP BY savings_plan_id, period
		ORDER BY period, savings_plan_id`,
		tenantID, r.From, r.To).Scan(ctx, &out)
	return out, err
}

// SavingsPlanTotal is the tenants' savings plan money over a range in one
// currency.
type SavingsPlanTotal struct {
	Currency  string        `bun:"currency"`
	Plans     int           `bun:"plans"`
	Committed ledger.Amount `bun:"committed"`
	Used      ledger.Amount `bun:"used"`
	Unused    ledger.Amount `bun:"unused"`
}

// SavingsPlanTotals sums the tenants' savings plan days over r per
// currency, in currency order.
func (s *Store) SavingsPlanTotals(ctx context.Context, tenants []string, r Range) ([]SavingsPlanTotal, error) {
	out := []SavingsPlanTotal{}
	err := s.DB.NewRaw(`SELECT currency, COUNT(DISTINCT tenant_id || '/' || savings_plan_id) AS plans,
		CAST(SUM(committed_cents) AS BIGINT) AS committed, CAST(SUM(used_cents) AS BIGINT) AS used, CAST(SUM(unused_cents) AS BIGINT) AS unused
		FROM cost_savings_plan_days
		WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY currency
		ORDER BY currency`,
		bun.List(tenants), r.From, r.To).Scan(ctx, &out)
	return out, err
}

// savingsPlans reads a tenant's savings plan utilisation over rng per
// grain.
func (h *Handlers) savingsPlans(ctx context.Context, tenantID string, rng Range, grain string) (SavingsPlans, error) {
	uses, err := h.Store.SavingsPlanUses(ctx, tenantID, rng, grain)
	if err != nil {
		return SavingsPlans{}, err
	}
	out := SavingsPlans{Items: make([]SavingsPlanUsage, 0, len(uses))}
	seen := map[string]bool{}
	for _, u := range uses {
		seen[u.SavingsPlanID] = true
		period := ledger.Day(u.Period).String()
		if grain == GrainMonthly {
			period = fmt.Sprintf("%04d-%02d", u.Period/100, u.Period%100)
		}
		out.Items = append(out.Items, SavingsPlanUsage{SavingsPlanID: u.SavingsPlanID, SavingsPlanOrderID: u.SavingsPlanOrderID, Period: period,
			Currency: u.Currency, Committed: u.Committed, Used: u.Used, UnusedCost: u.Unused, CostUtilizationPercent: costUtilisation(u.Committed, u.Unused),
			MinUtilization: round2(u.MinUtilization), AvgUtilization: round2(u.AvgUtilization), MaxUtilization: round2(u.MaxUtilization)})
	}
	totals, err := h.Store.SavingsPlanTotals(ctx, []string{tenantID}, rng)
	if err != nil {
		return SavingsPlans{}, err
	}
	out.Summary = SummariseSavingsPlans(totals)
	out.Summary.SavingsPlans = len(seen)
	return out, nil
}

// SummariseSavingsPlans is the per-currency money of the range's savings
// plans, with the distinct plans of every currency together.
func SummariseSavingsPlans(totals []SavingsPlanTotal) SavingsPlanTotals {
	out := SavingsPlanTotals{Costs: []SavingsPlanCost{}}
	for _, t := range totals {
		out.SavingsPlans += t.Plans
		out.Costs = append(out.Costs, SavingsPlanCost{Currency: t.Currency, Committed: t.Committed, Used: t.Used, UnusedCost: t.Unused,
			CostUtilizationPercent: costUtilisation(t.Committed, t.Unused)})
	}
	return out
}
