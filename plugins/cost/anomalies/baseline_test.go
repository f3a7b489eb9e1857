package anomalies

import (
	"testing"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// weeks builds a history from one week's pattern (the judged weekday
// first), repeated Weeks times.
func weeks(pattern [7]ledger.Amount) []ledger.Amount {
	h := make([]ledger.Amount, 0, HistoryDays)
	for range Weeks {
		h = append(h, pattern[:]...)
	}
	return h
}

func TestMedianAndMAD(t *testing.T) {
	for _, c := range []struct {
		xs          []float64
		median, mad float64
	}{
		{[]float64{5}, 5, 0},
		{[]float64{4, 1, 3, 2}, 2.5, 1},
		{[]float64{1, 2, 3, 4, 100}, 3, 1},
		{[]float64{7, 7, 7, 7}, 7, 0},
	} {
		if got := median(append([]float64(nil), c.xs...)); got != c.median {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.median)
		}
		if got := mad(c.xs); got != c.mad {
			t.Errorf("mad(%v) = %v, want %v", c.xs, got, c.mad)
		}
	}
}

// TestJudge works the method through by hand.
func TestJudge(t *testing.T) {
	// Mondays cost 1000.00, other weekdays 900.00, weekends 400.00.
	flat := weeks([7]ledger.Amount{1000_00, 900_00, 900_00, 900_00, 900_00, 400_00, 400_00})
	noisy := weeks([7]ledger.Amount{1000_00, 900_00, 900_00, 900_00, 900_00, 400_00, 400_00})
	// Each weekday has two days 100.00 up and two down: the medians stay
	// 1000, 900 and 400, every residual is ±100.00, so the MAD is 100.00
	// and the spread 1.56 × 148.26 = 231.29.
	for i := 0; i < HistoryDays; i += 2 {
		noisy[i] += 100_00
		if i+1 < HistoryDays {
			noisy[i+1] -= 100_00
		}
	}
	spiked := weeks([7]ledger.Amount{1000_00, 900_00, 900_00, 900_00, 900_00, 400_00, 400_00})
	spiked[7] = 9000_00 // one earlier Monday spiked
	for _, c := range []struct {
		name      string
		history   []ledger.Amount
		actual    ledger.Amount
		expected  ledger.Amount
		score     float64
		deviation float64
		anomalous bool
	}{
		// Flat: the spread is the 3 % floor, 30.00.
		{"flat, same as usual", flat, 1000_00, 1000_00, 0, 0, false},
		{"flat, +24.99 %: below the relative minimum", flat, 1249_90, 1000_00, 8.33, 24.99, false},
		{"flat, +25 %", flat, 1250_00, 1000_00, 8.33, 25, true},
		{"flat, a fall is never anomalous", flat, 10_00, 1000_00, -33, -99, false},
		{"noisy, +30 % is 1.30 spreads", noisy, 1300_00, 1000_00, 1.3, 30, false},
		{"noisy, +92 % is 3.98 spreads", noisy, 1920_00, 1000_00, 3.98, 92, false},
		{"noisy, +93 % is 4.02 spreads", noisy, 1930_00, 1000_00, 4.02, 93, true},
		{"an earlier spike moves neither the median nor the spread", spiked, 1300_00, 1000_00, 10, 30, true},
	} {
		v := Judge(c.history, c.actual, DefaultMinImpact)
		if v.Expected != c.expected || v.Actual != c.actual || v.Impact != c.actual-c.expected || v.Score != c.score || v.DeviationPercent != c.deviation || v.Anomalous != c.anomalous {
			t.Errorf("%s: %+v; want expected %s, score %v, deviation %v, anomalous %v", c.name, v, c.expected, c.score, c.deviation, c.anomalous)
		}
	}
}

// TestJudgeMinimumImpact: on a small service a large relative rise below
// the currency's floor is not flagged; the same rise at the floor is. The
// floor is the caller's: 1.00 by default, 100.00 where a currency is
// configured so.
func TestJudgeMinimumImpact(t *testing.T) {
	small := weeks([7]ledger.Amount{2_00, 2_00, 2_00, 2_00, 2_00, 2_00, 2_00})
	if v := Judge(small, 2_00+DefaultMinImpact-1, DefaultMinImpact); v.Anomalous || v.Score != 16.5 {
		t.Errorf("a rise of 0.99 (16.5 spreads of the 3 %% floor) on a 2.00 service: %+v", v)
	}
	if v := Judge(small, 2_00+DefaultMinImpact, DefaultMinImpact); !v.Anomalous {
		t.Errorf("a rise of 1.00 on a 2.00 service not flagged: %+v", v)
	}
	yen := weeks([7]ledger.Amount{300_00, 300_00, 300_00, 300_00, 300_00, 300_00, 300_00})
	floors := MinImpacts{"JPY": 100_00}
	if v := Judge(yen, 399_99, floors.For("JPY")); v.Anomalous {
		t.Errorf("a rise of 99.99 JPY under a floor of 100.00 flagged: %+v", v)
	}
	if v := Judge(yen, 400_00, floors.For("JPY")); !v.Anomalous {
		t.Errorf("a rise of 100.00 JPY at its floor not flagged: %+v", v)
	}
	if floors.For("USD") != DefaultMinImpact {
		t.Errorf("a currency without a floor has %s", floors.For("USD"))
	}
	// A series that costs nothing on this weekday has no baseline: the
	// spread is the absolute floor, one cent, and nothing is expected.
	none := weeks([7]ledger.Amount{0, 20_00, 20_00, 20_00, 20_00, 20_00, 20_00})
	if v := Judge(none, 900_00, DefaultMinImpact); v.Anomalous || v.Expected != 0 || v.DeviationPercent != 0 || v.Score != 90000 {
		t.Errorf("a first cost on a weekday that costs nothing: %+v", v)
	}
}
