// Package exchange converts the cost plugin's totals into the
// installation's reporting currency at daily exchange rates: the rates'
// format and sources, their table, the job that syncs them, and the
// conversion the reads apply.
//
// Rates arrive as the Frankfurter API's time series document (the
// European Central Bank's reference rates): {"amount":1.0,"base":"USD",
// "start_date":…,"end_date":…,"rates":{"2026-11-02":{"EUR":0.9123,…}}},
// a rate being units of the quoted currency per 1 of the base, which is
// the reporting currency. They come from an HTTP endpoint answering
// GET <url>/<start>..<end>?from=<base>, or from a file holding the same
// document. Each rate is kept exactly, as an integer of 1e-10 units (Rate),
// in cost_exchange_rates by base, quoted currency and day.
//
// A day's cost in another currency converts at that day's rate or, on a
// day without one (weekends and holidays, when the ECB publishes none, and
// today until it does), at the latest earlier day's, at most MaxCarryDays
// before. The reads sum cents per day and currency in the database; each
// day's sum converts on its own, amount ÷ rate rounded half to even to the
// cent, and the converted days are summed, so a total is exact and the
// same on every read. A currency with no usable rate on a day of costs
// leaves the converted total null and is named; it is never guessed.
package exchange

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Rate is an exchange rate in units of 1e-10: units of the quoted
// currency per 1 of the base, times 10^10. Central banks quote at most six
// significant digits, so every published rate is exact at that scale.
type Rate int64

// rateScale is 1 as a Rate.
const rateScale = 10_000_000_000

// ParseRate reads a decimal rate, as "0.9123", "151.2" or "1.2e-3",
// exactly, rounding half to even beyond ten decimals; it must be above 0.
func ParseRate(s string) (Rate, error) {
	v, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v.Sign() <= 0 {
		return 0, fmt.Errorf("%s is not a positive rate", s)
	}
	scaled := v.Mul(v, new(big.Rat).SetInt64(rateScale))
	n := roundHalfEven(scaled.Num(), scaled.Denom())
	if n.Sign() <= 0 || !n.IsInt64() {
		return 0, fmt.Errorf("%s is out of range", s)
	}
	return Rate(n.Int64()), nil
}

// String is the rate as a decimal, without trailing zeros.
func (r Rate) String() string {
	s := fmt.Sprintf("%d.%010d", r/rateScale, r%rateScale)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// Convert turns cents of a currency into cents of the base at rate (units
// of the currency per 1 of the base): amount ÷ rate, rounded half to even
// to the cent.
func Convert(amount ledger.Amount, rate Rate) ledger.Amount {
	num := new(big.Int).Mul(big.NewInt(int64(amount)), big.NewInt(rateScale))
	return ledger.Amount(roundHalfEven(num, big.NewInt(int64(rate))).Int64())
}

// roundHalfEven is num ÷ den (den > 0) rounded to the nearest integer, a
// tie to the even one.
func roundHalfEven(num, den *big.Int) *big.Int {
	q, m := new(big.Int).DivMod(num, den, new(big.Int))
	// DivMod floors: 0 <= m < den. Round up when m is over half of den,
	// or exactly half and q odd.
	switch c := new(big.Int).Lsh(m, 1).Cmp(den); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return q
}

// Quote is one day's rate of a currency against the base.
type Quote struct {
	Day   ledger.Day
	Base  string
	Quote string
	Rate  Rate
}

// currencyCode is an ISO 4217 code's form.
var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// ValidCode reports whether code has an ISO 4217 code's form, as USD.
func ValidCode(code string) bool { return currencyCode.MatchString(code) }

// document is the Frankfurter time series document.
type document struct {
	Amount json.Number                       `json:"amount"`
	Base   string                            `json:"base"`
	Rates  map[string]map[string]json.Number `json:"rates"`
}

// Parse reads a time series document of rates against base, every rate
// of every day in it but base's own, by day and currency. A document that
// is not one, of another base or amount, or with a date, code or rate that
// is not one, is an error naming where.
func Parse(b []byte, base string) ([]Quote, error) {
	var doc document
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a time series document of exchange rates: %w", err)
	}
	if doc.Base != base {
		return nil, fmt.Errorf("base: the rates are against %q, not the reporting currency %s", doc.Base, base)
	}
	if a, err := ParseRate(doc.Amount.String()); err != nil || a != rateScale {
		return nil, fmt.Errorf("amount: %q; rates per 1 %s expected", doc.Amount, base)
	}
	if doc.Rates == nil {
		return nil, errors.New("rates: missing")
	}
	var out []Quote
	for date, day := range doc.Rates {
		d, err := ledger.ParseDay(date)
		if err != nil {
			return nil, fmt.Errorf("rates: %q is not a date (YYYY-MM-DD)", date)
		}
		for code, v := range day {
			if !ValidCode(code) {
				return nil, fmt.Errorf("rates.%s: %q is not an ISO 4217 currency code such as EUR", date, code)
			}
			if code == base {
				continue
			}
			r, err := ParseRate(v.String())
			if err != nil {
				return nil, fmt.Errorf("rates.%s.%s: %w", date, code, err)
			}
			out = append(out, Quote{Day: d, Base: base, Quote: code, Rate: r})
		}
	}
	return out, nil
}
