// Package reports serves the cost plugin's reads: the summary, per-tenant
// totals, daily trends and their forecast, reservation utilisation, the
// chargeback report as JSON or CSV, the FOCUS 1.2 export as CSV or
// Parquet, and the costs and resource_costs datasets other plugins read.
//
// Every figure is aggregated in the database from the ledger's rollups
// (cost_tenant_daily, cost_service_daily, and for the summary their running
// totals) as integer cents grouped by currency, so totals are exact and
// never mix currencies: a response whose costs are in several currencies
// lists a total per currency and leaves its single total_cost and currency
// null. Beside them, the summary, the per-tenant totals and the analysis
// give the costs in the reporting currency, converted from the sums per
// day and currency at each day's exchange rate (package exchange).
package reports

import (
	"math"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Range is a span of days, both ends included.
type Range struct{ From, To ledger.Day }

// Days is how many days the range spans.
func (r Range) Days() int { return int(r.To-r.From) + 1 }

// Previous is the range of the same length that ends the day before r.
func (r Range) Previous() Range {
	n := ledger.Day(r.Days())
	return Range{From: r.From - n, To: r.From - 1}
}

// MaxRangeDays is the longest date range a read accepts: a leap year.
const MaxRangeDays = 366

// divRound divides cents by n, rounding half away from zero.
func divRound(a ledger.Amount, n int) ledger.Amount {
	if n <= 0 {
		return 0
	}
	d := ledger.Amount(n)
	if a < 0 {
		return -((-a*2 + d) / (2 * d))
	}
	return (a*2 + d) / (2 * d)
}

// percent is part of whole in percent, rounded to two decimals; 0 when
// whole is zero.
func percent(part, whole ledger.Amount) float64 {
	if whole == 0 {
		return 0
	}
	return round2(100 * float64(part) / float64(whole))
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
