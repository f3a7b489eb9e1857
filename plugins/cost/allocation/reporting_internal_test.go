package allocation

import (
	"testing"

	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestConvertCentres: a credit's charge shares the converted total as its
// negative part (the tie of remainders to the first name), and a credit
// that cancels its cost in the currency while their conversions do not
// leaves the difference to Unallocated.
func TestConvertCentres(t *testing.T) {
	amount := func(a ledger.Amount) *ledger.Amount { return &a }
	for _, c := range []struct {
		what    string
		centres []CentreCost
		rep     exchange.Reporting
		want    map[string]ledger.Amount
	}{
		{"a credit among costs",
			[]CentreCost{{CostCentre: "B", Currency: "EUR", TotalCost: -100}, {CostCentre: "A", Currency: "EUR", TotalCost: 300}, {CostCentre: "A", Currency: "USD", TotalCost: 7}},
			exchange.Reporting{Currency: "USD", TotalCost: amount(226), Rates: []exchange.RateUse{{Currency: "EUR", TotalCost: 200, ConvertedCost: 219}}},
			map[string]ledger.Amount{"A": 336, "B": -110}},
		{"a credit cancelling its cost",
			[]CentreCost{{CostCentre: "A", Currency: "EUR", TotalCost: 100}, {CostCentre: "B", Currency: "EUR", TotalCost: -100}},
			exchange.Reporting{Currency: "USD", TotalCost: amount(5), Rates: []exchange.RateUse{{Currency: "EUR", TotalCost: 0, ConvertedCost: 5}}},
			map[string]ledger.Amount{"A": 0, "B": 0, Unallocated: 5}},
	} {
		got := convertCentres(c.centres, c.rep)
		if len(got) != len(c.want) {
			t.Errorf("%s: %+v", c.what, got)
			continue
		}
		var sum ledger.Amount
		for _, g := range got {
			if g.TotalCost == nil || *g.TotalCost != c.want[g.CostCentre] {
				t.Errorf("%s: %s gets %v, want %s", c.what, g.CostCentre, g.TotalCost, c.want[g.CostCentre])
				continue
			}
			sum += *g.TotalCost
		}
		if sum != *c.rep.TotalCost {
			t.Errorf("%s: the parts add up to %s, not %s", c.what, sum, *c.rep.TotalCost)
		}
	}
}
