package anomalies

import (
	"math"
	"slices"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// The method's constants; the package documentation explains each.
const (
	// Weeks is how many weeks of history a baseline reads.
	Weeks = 4
	// HistoryDays is the history a day is judged against: the Weeks·7
	// days before it.
	HistoryDays = 7 * Weeks
	// K is the robust z-score a rise must exceed.
	K = 4.0
	// madToSigma scales a median absolute deviation to the standard
	// deviation it estimates for normally distributed noise.
	madToSigma = 1.4826
	// medianSpread widens that estimate to the spread of a new day about
	// its weekday's median of Weeks days: the residuals are taken from
	// the medians they helped make, so they are smaller than a new day's,
	// and the median itself is uncertain. 1.56 is the ratio of the two
	// for normally distributed noise, found by simulating four weeks;
	// without it, a small service whose cost is mostly noise is flagged
	// several times a year.
	medianSpread = 1.56
	// ScaleFloor is the least spread assumed, as a share of the expected
	// cost, so a flat series does not make every small rise anomalous.
	ScaleFloor = 0.03
	// AbsoluteScaleFloor is the least spread assumed, in cents: the
	// resolution costs are stored at, so a series that never changed by a
	// cent still has a spread to divide by.
	AbsoluteScaleFloor = 1
	// DefaultMinImpact is the least rise flagged in a currency the
	// configuration gives no floor for, in cents (1.00).
	DefaultMinImpact ledger.Amount = 100
	// MinRise is the least rise flagged, as a share of the expected cost.
	MinRise = 0.25
)

// MinImpacts is the least rise flagged per currency (an ISO 4217 code),
// in cents of that currency: a rise of 1.00 matters in USD or EUR, not in
// JPY or INR, whose units are worth a hundredth as much.
type MinImpacts map[string]ledger.Amount

// For is the least rise flagged in currency: its configured floor, or
// DefaultMinImpact.
func (m MinImpacts) For(currency string) ledger.Amount {
	if v, ok := m[currency]; ok {
		return v
	}
	return DefaultMinImpact
}

// Verdict is one day of one series judged against its history.
type Verdict struct {
	Expected ledger.Amount
	Actual   ledger.Amount
	// Impact is Actual − Expected.
	Impact ledger.Amount
	// DeviationPercent is Impact as a percentage of Expected (0 when
	// nothing was expected).
	DeviationPercent float64
	// Score is the rise in units of the series' robust spread.
	Score     float64
	Anomalous bool
}

// Judge judges actual, a day's cost in cents, against history: the costs
// of the HistoryDays days before it, oldest first, so that history[i] falls
// on the judged day's weekday when i is a multiple of 7. The expected cost
// is the median of those same-weekday costs; the spread is 1.56 × 1.4826
// times the median absolute deviation of every history day's residual
// from its own weekday's median, floored at ScaleFloor of the expected cost and at
// AbsoluteScaleFloor. The day is anomalous when something was expected and
// the rise is more than K spreads, at least MinRise of the expected cost
// and at least minImpact, the currency's floor. It panics unless history
// holds HistoryDays costs.
func Judge(history []ledger.Amount, actual, minImpact ledger.Amount) Verdict {
	if len(history) != HistoryDays {
		panic("anomalies: history must hold HistoryDays days")
	}
	var medians [7]float64
	for w := range 7 {
		same := make([]float64, 0, Weeks)
		for i := w; i < HistoryDays; i += 7 {
			same = append(same, float64(history[i]))
		}
		medians[w] = median(same)
	}
	residuals := make([]float64, HistoryDays)
	for i, c := range history {
		residuals[i] = float64(c) - medians[i%7]
	}
	expected := medians[0]
	sigma := max(medianSpread*madToSigma*mad(residuals), ScaleFloor*expected, AbsoluteScaleFloor)
	v := Verdict{Expected: ledger.Amount(math.Round(expected)), Actual: actual}
	v.Impact = v.Actual - v.Expected
	v.Score = round2((float64(actual) - expected) / sigma)
	if v.Expected > 0 {
		v.DeviationPercent = round2(100 * float64(v.Impact) / float64(v.Expected))
	}
	v.Anomalous = v.Expected > 0 && v.Score > K && v.Impact >= minImpact && float64(v.Impact) >= MinRise*float64(v.Expected)
	return v
}

// median returns the median of xs, reordering them; the mean of the
// middle two when there are an even number.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// mad returns the median absolute deviation of xs from their median.
func mad(xs []float64) float64 {
	m := median(slices.Clone(xs))
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return median(dev)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
