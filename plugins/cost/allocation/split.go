package allocation

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Split divides amount between names in proportion to weights, to the
// cent, by the largest remainder: each name first gets its exact share
// rounded down, and the cents those roundings leave over go one each to
// the names whose shares lost the most, ties going to the name first in
// alphabetical order (byte order). The parts add up to amount exactly. A
// negative amount (a credit) is split as its opposite and each part
// negated, so a refund of a cost is split as the cost was. Weights are
// not negative; when they add up to 0, the split is even. names and
// weights have the same length, at least 1, and names are distinct.
func Split(amount ledger.Amount, names []string, weights []int64) []ledger.Amount {
	if amount < 0 {
		parts := Split(-amount, names, weights)
		for i := range parts {
			parts[i] = -parts[i]
		}
		return parts
	}
	var total uint64
	for _, w := range weights {
		total += uint64(w)
	}
	if total == 0 {
		weights = slices.Repeat([]int64{1}, len(names))
		total = uint64(len(names))
	}
	parts := make([]ledger.Amount, len(names))
	remainders := make([]uint64, len(names))
	left := amount
	for i, w := range weights {
		// amount × w / total in 128 bits: the high word is below total,
		// since amount < 2⁶³ and w ≤ total, so the division fits.
		hi, lo := bits.Mul64(uint64(amount), uint64(w))
		q, r := bits.Div64(hi, lo, total)
		parts[i], remainders[i] = ledger.Amount(q), r
		left -= ledger.Amount(q)
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if remainders[a] != remainders[b] {
			if remainders[a] > remainders[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(names[a], names[b])
	})
	for _, i := range order[:left] {
		parts[i]++
	}
	return parts
}
