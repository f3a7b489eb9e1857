package allocation

import (
	"cmp"
	"slices"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// CostRow is the cost of one resource (or of no resource, ResourceID
// empty) over a range in one currency, with the resource's values of the
// tag keys the rules read.
type CostRow struct {
	SubscriptionID string        `bun:"subscription_id"`
	ResourceGroup  string        `bun:"resource_group"`
	ResourceID     string        `bun:"resource_id"`
	Currency       string        `bun:"currency"`
	Cost           ledger.Amount `bun:"cost"`
	// Tags are the resource's values of the rules' tag keys (lower case).
	Tags map[string]string `bun:"-"`
}

// CentreCost is what a cost centre is charged in one currency.
type CentreCost struct {
	CostCentre string        `json:"cost_centre" doc:"The cost centre; Unallocated for the costs no rule matches"`
	Currency   string        `json:"currency"`
	DirectCost ledger.Amount `json:"direct_cost" doc:"The costs allocated to the cost centre whole"`
	SharedCost ledger.Amount `json:"shared_cost" doc:"Its parts of the shared costs"`
	TotalCost  ledger.Amount `json:"total_cost" doc:"direct_cost plus shared_cost"`
}

// matches reports whether r matches row, and the cost centre a rule of
// kind cost_centre_tag names for it.
func (r *Rule) matches(row *CostRow) (bool, string) {
	switch r.Kind {
	case KindSubscription:
		return strings.EqualFold(row.SubscriptionID, r.SubscriptionID), ""
	case KindResourceGroup:
		return row.ResourceGroup != "" && strings.EqualFold(row.SubscriptionID, r.SubscriptionID) && strings.EqualFold(row.ResourceGroup, r.ResourceGroup), ""
	case KindTag:
		v, ok := row.Tags[r.TagKey]
		return ok && v == r.TagValue, ""
	case KindCostCentreTag:
		v := strings.TrimSpace(row.Tags[r.TagKey])
		if reserved(v) {
			v = Unallocated
		}
		return v != "", v
	}
	return false, ""
}

// TagKeys are the tag keys rules read, sorted.
func TagKeys(rules []Rule) []string {
	var keys []string
	for _, r := range rules {
		if r.TagKey != "" && !slices.Contains(keys, r.TagKey) {
			keys = append(keys, r.TagKey)
		}
	}
	slices.Sort(keys)
	return keys
}

// Allocate charges rows to cost centres by rules, tried in order: a row
// goes to the first rule it matches — whole to its cost centre, or to
// its shared pool — or, matching none, to Unallocated. Each shared rule's
// pool is then split per currency over the whole range (see Split):
// evenly, by its fixed percentages, or in proportion to each of its cost
// centres' direct cost in that currency (a negative direct cost weighing
// nothing, and the split even when none weighs anything). ledgerTotals
// are the ledger's totals of the same tenants and range per currency;
// what rows do not account for of them (costs the ledger holds without
// their resources) is Unallocated, so that the cost centres of a currency
// add up to its ledger total exactly. The result is ordered by currency,
// then cost centre, Unallocated last.
func Allocate(rules []Rule, rows []CostRow, ledgerTotals map[string]ledger.Amount) []CentreCost {
	type key struct{ centre, currency string }
	charged := map[key]*CentreCost{}
	at := func(centre, currency string) *CentreCost {
		k := key{centre, currency}
		if charged[k] == nil {
			charged[k] = &CentreCost{CostCentre: centre, Currency: currency}
		}
		return charged[k]
	}
	pools := make([]map[string]ledger.Amount, len(rules))
	counted := map[string]ledger.Amount{}
	for i := range rows {
		row := &rows[i]
		counted[row.Currency] += row.Cost
		centre := Unallocated
		for j := range rules {
			ok, named := rules[j].matches(row)
			if !ok {
				continue
			}
			switch {
			case named != "":
				centre = named
			case rules[j].Shared != nil:
				if pools[j] == nil {
					pools[j] = map[string]ledger.Amount{}
				}
				pools[j][row.Currency] += row.Cost
				centre = ""
			default:
				centre = rules[j].CostCentre
			}
			break
		}
		if centre != "" {
			at(centre, row.Currency).DirectCost += row.Cost
		}
	}
	for currency, total := range ledgerTotals {
		if diff := total - counted[currency]; diff != 0 {
			at(Unallocated, currency).DirectCost += diff
		}
	}
	// Proportional splits weigh direct costs only, so the order the pools
	// are split in does not matter.
	direct := map[key]ledger.Amount{}
	for k, c := range charged {
		direct[k] = c.DirectCost
	}
	for j, pool := range pools {
		if pool == nil {
			continue
		}
		s := rules[j].Shared
		names := make([]string, len(s.CostCentres))
		for i, c := range s.CostCentres {
			names[i] = c.Name
		}
		for currency, amount := range pool {
			weights := make([]int64, len(names))
			for i, c := range s.CostCentres {
				switch s.Split {
				case SplitEven:
					weights[i] = 1
				case SplitFixed:
					weights[i], _ = basisPoints(*c.Percent)
				case SplitProportional:
					weights[i] = int64(max(0, direct[key{c.Name, currency}]))
				}
			}
			for i, part := range Split(amount, names, weights) {
				at(names[i], currency).SharedCost += part
			}
		}
	}
	out := make([]CentreCost, 0, len(charged))
	for _, c := range charged {
		c.TotalCost = c.DirectCost + c.SharedCost
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CentreCost) int {
		if c := cmp.Compare(a.Currency, b.Currency); c != 0 {
			return c
		}
		if (a.CostCentre == Unallocated) != (b.CostCentre == Unallocated) {
			if a.CostCentre == Unallocated {
				return 1
			}
			return -1
		}
		return strings.Compare(a.CostCentre, b.CostCentre)
	})
	return out
}
