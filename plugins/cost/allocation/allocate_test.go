package allocation_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

func TestSplitToTheCent(t *testing.T) {
	for _, c := range []struct {
		what    string
		amount  ledger.Amount
		names   []string
		weights []int64
		want    []ledger.Amount
	}{
		// 100.01 in three: 33.33 each and two cents over, to the first
		// two names in byte order whatever the order given.
		{"even, a tie broken by name", 10001, []string{"Ops", "Marketing", "Sales"}, []int64{1, 1, 1}, []ledger.Amount{3334, 3334, 3333}},
		{"even, names in order", 10001, []string{"A", "B", "C"}, []int64{1, 1, 1}, []ledger.Amount{3334, 3334, 3333}},
		{"a credit split as its cost", -10001, []string{"Ops", "Marketing", "Sales"}, []int64{1, 1, 1}, []ledger.Amount{-3334, -3334, -3333}},
		{"fixed 50/50 of an odd cent", 12345, []string{"B", "A"}, []int64{5000, 5000}, []ledger.Amount{6172, 6173}},
		// 100.00 at 33.33/33.33/33.34: 33.33, 33.33, 33.34 exactly.
		{"fixed with decimals", 10000, []string{"A", "B", "C"}, []int64{3333, 3333, 3334}, []ledger.Amount{3333, 3333, 3334}},
		// 0.10 at 12.5/87.5 (1250/8750 bp): 1.25 and 8.75 cents; the
		// larger remainder (.75) takes the cent.
		{"the largest remainder first", 10, []string{"A", "B"}, []int64{1250, 8750}, []ledger.Amount{1, 9}},
		{"proportional", 1000, []string{"A", "B"}, []int64{300, 100}, []ledger.Amount{750, 250}},
		{"no weight is even", 1001, []string{"B", "A"}, []int64{0, 0}, []ledger.Amount{500, 501}},
		{"one cost centre", 999, []string{"A"}, []int64{7}, []ledger.Amount{999}},
		{"nothing", 0, []string{"A", "B"}, []int64{1, 1}, []ledger.Amount{0, 0}},
		{"no overflow", math.MaxInt64, []string{"A", "B"}, []int64{math.MaxInt64 / 2, math.MaxInt64 / 2}, []ledger.Amount{math.MaxInt64/2 + 1, math.MaxInt64 / 2}},
	} {
		got := allocation.Split(c.amount, c.names, c.weights)
		var sum ledger.Amount
		for _, p := range got {
			sum += p
		}
		if !slices.Equal(got, c.want) || sum != c.amount {
			t.Errorf("%s: %v, want %v (sum %d of %d)", c.what, got, c.want, sum, c.amount)
		}
	}
}

func percent(p float64) *float64 { return &p }

// byCentre indexes a chargeback by cost centre and currency.
func byCentre(cs []allocation.CentreCost) map[string]allocation.CentreCost {
	out := map[string]allocation.CentreCost{}
	for _, c := range cs {
		out[c.CostCentre+"/"+c.Currency] = c
	}
	return out
}

func TestAllocateByTheFirstMatchingRule(t *testing.T) {
	rules := []allocation.Rule{
		{Kind: allocation.KindTag, TagKey: "costcenter", TagValue: "marketing", CostCentre: "Marketing"},
		{Kind: allocation.KindResourceGroup, SubscriptionID: "S1", ResourceGroup: "RG-Web", CostCentre: "Web"},
		{Kind: allocation.KindCostCentreTag, TagKey: "team"},
		{Kind: allocation.KindSubscription, SubscriptionID: "s1", CostCentre: "Platform"},
		{Kind: allocation.KindSubscription, SubscriptionID: "s2", Shared: &allocation.Shared{Split: allocation.SplitEven,
			CostCentres: []allocation.Share{{Name: "Sales"}, {Name: "Ops"}, {Name: "Marketing"}}}},
		{Kind: allocation.KindSubscription, SubscriptionID: "s3", Shared: &allocation.Shared{Split: allocation.SplitFixed,
			CostCentres: []allocation.Share{{Name: "Web", Percent: percent(50)}, {Name: "Platform", Percent: percent(50)}}}},
		{Kind: allocation.KindSubscription, SubscriptionID: "s3", CostCentre: "Never"},
		{Kind: allocation.KindSubscription, SubscriptionID: "s4", Shared: &allocation.Shared{Split: allocation.SplitProportional,
			CostCentres: []allocation.Share{{Name: "Web", Percent: nil}, {Name: "Platform"}, {Name: "Nobody"}}}},
	}
	rows := []allocation.CostRow{
		// The tag rule comes first: the resource group's rule never sees it.
		{SubscriptionID: "s1", ResourceGroup: "rg-web", ResourceID: "r1", Currency: "USD", Cost: 1000, Tags: map[string]string{"costcenter": "marketing"}},
		{SubscriptionID: "s1", ResourceGroup: "rg-web", ResourceID: "r2", Currency: "USD", Cost: 2000, Tags: map[string]string{"costcenter": "Marketing"}},
		{SubscriptionID: "s1", ResourceGroup: "rg-data", ResourceID: "r3", Currency: "USD", Cost: 300, Tags: map[string]string{"team": "Data"}},
		{SubscriptionID: "s1", ResourceGroup: "rg-data", ResourceID: "r4", Currency: "USD", Cost: 5},
		{SubscriptionID: "s1", Currency: "USD", Cost: 7},
		{SubscriptionID: "s2", ResourceGroup: "rg", ResourceID: "r5", Currency: "USD", Cost: 10001},
		{SubscriptionID: "s3", ResourceGroup: "rg", ResourceID: "r6", Currency: "USD", Cost: 12345},
		{SubscriptionID: "s3", ResourceGroup: "rg", ResourceID: "r7", Currency: "EUR", Cost: 101},
		{SubscriptionID: "s4", ResourceGroup: "rg", ResourceID: "r8", Currency: "USD", Cost: 1001},
		{SubscriptionID: "s5", ResourceGroup: "rg", ResourceID: "r9", Currency: "USD", Cost: 42, Tags: map[string]string{"team": ""}},
	}
	// The ledger holds 0.50 USD more than the resources account for.
	got := allocation.Allocate(rules, rows, map[string]ledger.Amount{"USD": 26701 + 50, "EUR": 101})
	// s3's 123.45 USD is 61.725 each: the cent over goes to Platform,
	// first by name, as does its 1.01 EUR's. s4's 10.01 goes by direct
	// USD cost, Web 20.00 and Platform 0.12 (0.05 + 0.07), Nobody none:
	// 1001 × 2000/2012 = 995.03 and 1001 × 12/2012 = 5.97 cents, the
	// cent over to Platform's larger remainder.
	want := []allocation.CentreCost{
		{CostCentre: "Platform", Currency: "EUR", SharedCost: 51, TotalCost: 51},
		{CostCentre: "Web", Currency: "EUR", SharedCost: 50, TotalCost: 50},
		{CostCentre: "Data", Currency: "USD", DirectCost: 300, TotalCost: 300},
		{CostCentre: "Marketing", Currency: "USD", DirectCost: 1000, SharedCost: 3334, TotalCost: 4334},
		{CostCentre: "Nobody", Currency: "USD", TotalCost: 0},
		{CostCentre: "Ops", Currency: "USD", SharedCost: 3334, TotalCost: 3334},
		{CostCentre: "Platform", Currency: "USD", DirectCost: 12, SharedCost: 6173 + 6, TotalCost: 6191},
		{CostCentre: "Sales", Currency: "USD", SharedCost: 3333, TotalCost: 3333},
		{CostCentre: "Web", Currency: "USD", DirectCost: 2000, SharedCost: 6172 + 995, TotalCost: 9167},
		{CostCentre: allocation.Unallocated, Currency: "USD", DirectCost: 42 + 50, TotalCost: 92},
	}
	if !slices.Equal(got, want) {
		t.Errorf("allocated\n %+v\nwant\n %+v", got, want)
	}
	sums := map[string]ledger.Amount{}
	for _, c := range got {
		sums[c.Currency] += c.TotalCost
	}
	if sums["USD"] != 26751 || sums["EUR"] != 101 {
		t.Errorf("totals %v, want the ledger's", sums)
	}
}

func TestAllocateProportionalWithoutDirectCostIsEven(t *testing.T) {
	rules := []allocation.Rule{{Kind: allocation.KindSubscription, SubscriptionID: "s1", Shared: &allocation.Shared{Split: allocation.SplitProportional,
		CostCentres: []allocation.Share{{Name: "B"}, {Name: "A"}}}}}
	got := byCentre(allocation.Allocate(rules, []allocation.CostRow{{SubscriptionID: "s1", Currency: "USD", Cost: 101}}, map[string]ledger.Amount{"USD": 101}))
	if got["A/USD"].SharedCost != 51 || got["B/USD"].SharedCost != 50 || len(got) != 2 {
		t.Errorf("%+v, want 0.51 to A and 0.50 to B", got)
	}
}

func TestAllocateWithoutRules(t *testing.T) {
	got := allocation.Allocate(nil, []allocation.CostRow{{SubscriptionID: "s1", Currency: "USD", Cost: 101}, {SubscriptionID: "s2", Currency: "USD", Cost: -1}},
		map[string]ledger.Amount{"USD": 100})
	if len(got) != 1 || got[0] != (allocation.CentreCost{CostCentre: allocation.Unallocated, Currency: "USD", DirectCost: 100, TotalCost: 100}) {
		t.Errorf("%+v, want everything Unallocated", got)
	}
}

func TestValidate(t *testing.T) {
	sub := func(r allocation.Rule) allocation.Rule {
		r.Kind, r.SubscriptionID = allocation.KindSubscription, "s1"
		return r
	}
	fixed := func(shares ...allocation.Share) *allocation.Shared {
		return &allocation.Shared{Split: allocation.SplitFixed, CostCentres: shares}
	}
	for _, c := range []struct {
		what  string
		rules []allocation.Rule
		want  []string
	}{
		{"an unknown kind", []allocation.Rule{{Kind: "region", CostCentre: "A"}}, []string{"body.rules[0].kind"}},
		{"a tag rule without its key", []allocation.Rule{sub(allocation.Rule{CostCentre: "A"}), {Kind: allocation.KindTag, TagValue: "x", CostCentre: "A"}},
			[]string{"body.rules[1].tag_key"}},
		{"a resource group rule without its subscription", []allocation.Rule{{Kind: allocation.KindResourceGroup, ResourceGroup: "rg", CostCentre: "A"}},
			[]string{"body.rules[0].subscription_id"}},
		{"a field of another kind", []allocation.Rule{sub(allocation.Rule{TagKey: "env", CostCentre: "A"})}, []string{"body.rules[0].tag_key"}},
		{"no target", []allocation.Rule{sub(allocation.Rule{})}, []string{"body.rules[0].cost_centre"}},
		{"two targets", []allocation.Rule{sub(allocation.Rule{CostCentre: "A", Shared: fixed(allocation.Share{Name: "B", Percent: percent(100)})})},
			[]string{"body.rules[0].shared"}},
		{"a cost centre tag rule with a target", []allocation.Rule{{Kind: allocation.KindCostCentreTag, TagKey: "cc", CostCentre: "A"}},
			[]string{"body.rules[0].cost_centre"}},
		{"percentages not adding up to 100", []allocation.Rule{sub(allocation.Rule{Shared: fixed(allocation.Share{Name: "A", Percent: percent(50)},
			allocation.Share{Name: "B", Percent: percent(49.99)})})}, []string{"body.rules[0].shared.cost_centres"}},
		{"three decimals", []allocation.Rule{sub(allocation.Rule{Shared: fixed(allocation.Share{Name: "A", Percent: percent(50.005)},
			allocation.Share{Name: "B", Percent: percent(49.995)})})}, []string{"body.rules[0].shared.cost_centres[0].percent", "body.rules[0].shared.cost_centres[1].percent"}},
		{"a fixed split without a percentage", []allocation.Rule{sub(allocation.Rule{Shared: fixed(allocation.Share{Name: "A", Percent: percent(100)},
			allocation.Share{Name: "B"})})}, []string{"body.rules[0].shared.cost_centres[1].percent"}},
		{"a percentage of an even split", []allocation.Rule{sub(allocation.Rule{Shared: &allocation.Shared{Split: allocation.SplitEven,
			CostCentres: []allocation.Share{{Name: "A", Percent: percent(50)}, {Name: "B"}}}})}, []string{"body.rules[0].shared.cost_centres[0].percent"}},
		{"a cost centre twice", []allocation.Rule{sub(allocation.Rule{Shared: &allocation.Shared{Split: allocation.SplitEven,
			CostCentres: []allocation.Share{{Name: "A"}, {Name: "B"}, {Name: " A "}}}})}, []string{"body.rules[0].shared.cost_centres[2].name"}},
		{"Unallocated as a target", []allocation.Rule{sub(allocation.Rule{CostCentre: "unallocated"})}, []string{"body.rules[0].cost_centre"}},
		{"Unallocated in a split", []allocation.Rule{sub(allocation.Rule{Shared: &allocation.Shared{Split: allocation.SplitProportional,
			CostCentres: []allocation.Share{{Name: "A"}, {Name: "Unallocated"}}}})}, []string{"body.rules[0].shared.cost_centres[1].name"}},
		{"every problem at once", []allocation.Rule{{Kind: "region"}, sub(allocation.Rule{}), {Kind: allocation.KindTag, CostCentre: "A"}},
			[]string{"body.rules[0].kind", "body.rules[1].cost_centre", "body.rules[2].tag_key", "body.rules[2].tag_value"}},
	} {
		var got []string
		for _, e := range allocation.Validate(c.rules) {
			got = append(got, e.Location)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: errors at %v, want %v", c.what, got, c.want)
		}
	}
	rules := []allocation.Rule{{Kind: allocation.KindTag, TagKey: " CostCenter ", TagValue: "Marketing", CostCentre: " Marketing "},
		sub(allocation.Rule{Shared: fixed(allocation.Share{Name: "A", Percent: percent(33.33)}, allocation.Share{Name: "B", Percent: percent(66.67)})})}
	if errs := allocation.Validate(rules); len(errs) != 0 {
		t.Fatalf("valid rules refused: %+v", errs)
	}
	if rules[0].TagKey != "costcenter" || rules[0].CostCentre != "Marketing" || rules[0].TagValue != "Marketing" {
		t.Errorf("normalised %+v: want the key in lower case, names trimmed, the value as written", rules[0])
	}
	if errs := allocation.Validate(rules[:1]); len(errs) != 0 || !strings.EqualFold(allocation.TagKeys(rules)[0], "costcenter") {
		t.Errorf("tag keys %v", allocation.TagKeys(rules))
	}
}
