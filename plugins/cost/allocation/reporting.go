package allocation

import (
	"cmp"
	"math/big"
	"slices"

	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Reporting is a chargeback in the reporting currency: the brand's costs
// converted as the summary converts them, and each cost centre's part of
// them.
type Reporting struct {
	exchange.Reporting
	CostCentres []CentreReporting `json:"cost_centres" doc:"Each cost centre's charge in the reporting currency, in name order, Unallocated last; they add up to total_cost exactly"`
}

// CentreReporting is what a cost centre is charged in the reporting
// currency.
type CentreReporting struct {
	CostCentre string         `json:"cost_centre"`
	TotalCost  *ledger.Amount `json:"total_cost" nullable:"true" doc:"The cost centre's charges in the reporting currency; null when total_cost is"`
}

// convertCentres gives each cost centre its part of the converted total.
// A charge in the reporting currency counts as it is. The charges of
// another currency, c, share what the brand's costs in c converted to,
// day by day at each day's rate (rep's rates), in proportion to the
// charges: each cost centre's exact part rounded down, the cents left
// over to the largest remainders, ties to the name first in byte order.
// Each cost centre's charge in c so converts at the brand's average rate
// of c over the range, weighted by its daily costs, and the parts add up
// to the converted total exactly. When the charges of c add up to zero
// while their conversion does not (a credit and the cost it refunds on
// days of different rates), the difference is Unallocated's. With a
// rate missing, every part is null.
func convertCentres(centres []CentreCost, rep exchange.Reporting) []CentreReporting {
	names := []string{}
	for _, c := range centres {
		if !slices.Contains(names, c.CostCentre) {
			names = append(names, c.CostCentre)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(boolInt(a == Unallocated), boolInt(b == Unallocated)), cmp.Compare(a, b))
	})
	out := make([]CentreReporting, len(names))
	index := map[string]int{}
	for i, n := range names {
		out[i].CostCentre = n
		index[n] = i
	}
	if rep.TotalCost == nil {
		return out
	}
	parts := make([]ledger.Amount, len(names))
	for _, c := range centres {
		if c.Currency == rep.Currency {
			parts[index[c.CostCentre]] += c.TotalCost
		}
	}
	for _, use := range rep.Rates {
		var of []CentreCost
		for _, c := range centres {
			if c.Currency == use.Currency {
				of = append(of, c)
			}
		}
		for i, p := range prorate(use.ConvertedCost, of) {
			parts[index[of[i].CostCentre]] += p
		}
		if use.TotalCost == 0 && use.ConvertedCost != 0 {
			if _, ok := index[Unallocated]; !ok {
				index[Unallocated] = len(out)
				out = append(out, CentreReporting{CostCentre: Unallocated})
				parts = append(parts, 0)
			}
			parts[index[Unallocated]] += use.ConvertedCost
		}
	}
	for i := range out {
		out[i].TotalCost = &parts[i]
	}
	return out
}

// prorate divides amount among the charges in proportion to their total
// costs, which may be negative, by the largest remainder (ties to the
// cost centre first by name); all zero when the charges add up to zero.
func prorate(amount ledger.Amount, of []CentreCost) []ledger.Amount {
	parts := make([]ledger.Amount, len(of))
	var sum int64
	for _, c := range of {
		sum += int64(c.TotalCost)
	}
	if sum == 0 {
		return parts
	}
	den := big.NewInt(sum)
	rems := make([]*big.Int, len(of))
	left := int64(amount)
	for i, c := range of {
		num := new(big.Int).Mul(big.NewInt(int64(c.TotalCost)), big.NewInt(int64(amount)))
		q, r := floorDivMod(num, den)
		parts[i] = ledger.Amount(q.Int64())
		rems[i] = r
		left -= q.Int64()
	}
	order := make([]int, len(of))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(-rems[a].Cmp(rems[b]), cmp.Compare(of[a].CostCentre, of[b].CostCentre))
	})
	for _, i := range order[:left] {
		parts[i]++
	}
	return parts
}

// floorDivMod is num ÷ den rounded down and the remainder's fraction of
// den as a non-negative numerator over |den|.
func floorDivMod(num, den *big.Int) (q, r *big.Int) {
	if den.Sign() < 0 {
		num, den = new(big.Int).Neg(num), new(big.Int).Neg(den)
	}
	q, r = new(big.Int).DivMod(num, den, new(big.Int))
	return q, r
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
