package views

import (
	"testing"

	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestReportingNote: the page's total of several currencies names the
// reporting currency and the rates' source, or says why it is not shown.
func TestReportingNote(t *testing.T) {
	end, _ := ledger.ParseDay("2026-11-28")
	total, source := ledger.Amount(1234567_89), "https://api.frankfurter.dev/v1"
	first, _ := ledger.ParseDay("2026-09-01")
	for _, c := range []struct {
		r    exchange.Reporting
		want string
	}{
		{exchange.Reporting{Currency: "USD", TotalCost: &total, Converted: true, Source: &source},
			"Total of the 90 days to 2026-11-28 in all currencies: 1,234,567.89 USD, converted at daily exchange rates from https://api.frankfurter.dev/v1."},
		{exchange.Reporting{Currency: "USD", Missing: []exchange.MissingRate{{Currency: "EUR", FirstDate: first, Days: 90}}},
			"Total of the 90 days to 2026-11-28 in all currencies is not shown: no exchange rates are configured to convert them into USD."},
		{exchange.Reporting{Currency: "EUR", Source: &source, Missing: []exchange.MissingRate{{Currency: "JPY", FirstDate: first, Days: 3}}},
			"Total of the 90 days to 2026-11-28 in all currencies is not shown: no exchange rate into EUR for JPY from 2026-09-01."},
	} {
		if got := reportingNote(c.r, 90, end); got != c.want {
			t.Errorf("note %q\nwant %q", got, c.want)
		}
	}
}
