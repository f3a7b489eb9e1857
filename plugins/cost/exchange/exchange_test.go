package exchange_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

func day(t *testing.T, s string) ledger.Day {
	t.Helper()
	d, err := ledger.ParseDay(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestParseRate: a rate is read exactly at 1e-10 and written back as the
// decimal it was; zero, negative and non-numbers are refused.
func TestParseRate(t *testing.T) {
	for in, want := range map[string]string{
		"0.9123": "0.9123", "1": "1", "151.23": "151.23", "1.2e-3": "0.0012", "16250.5": "16250.5",
		"0.12345678905": "0.123456789", "0.12345678915": "0.1234567892", "0.00000000005": "", "0": "", "-0.9": "", "abc": "",
	} {
		r, err := exchange.ParseRate(in)
		if want == "" {
			if err == nil {
				t.Errorf("ParseRate(%q) = %s, want an error", in, r)
			}
			continue
		}
		if err != nil || r.String() != want {
			t.Errorf("ParseRate(%q) = %s, %v; want %s", in, r, err, want)
		}
	}
}

// TestConvert: amount ÷ rate to the cent, half to even, for costs and
// credits alike.
func TestConvert(t *testing.T) {
	rate := func(s string) exchange.Rate {
		r, err := exchange.ParseRate(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		amount ledger.Amount
		rate   string
		want   ledger.Amount
	}{
		{100_00, "0.8", 125_00},
		{100_00, "0.9123", 109_61},         // 10961.3066…
		{1, "0.4", 2},                      // 2.5 rounds to even 2
		{3, "0.4", 8},                      // 7.5 rounds to even 8
		{-1, "0.4", -2},                    // -2.5 rounds to even -2
		{-3, "0.4", -8},                    // -7.5 rounds to even -8
		{15_000_00, "150", 100_00},         // JPY
		{1 << 62, "1", 1 << 62},            // no overflow on the way
		{920_000_00, "0.92", 1_000_000_00}, // exact
	} {
		if got := exchange.Convert(c.amount, rate(c.rate)); got != c.want {
			t.Errorf("Convert(%s, %s) = %s, want %s", c.amount, c.rate, got, c.want)
		}
	}
}

// TestParse reads a Frankfurter time series document and refuses, naming
// the place, what is not one.
func TestParse(t *testing.T) {
	quotes, err := exchange.Parse([]byte(`{"amount":1.0,"base":"USD","start_date":"2026-11-02","end_date":"2026-11-03",
		"rates":{"2026-11-02":{"EUR":0.9123,"GBP":0.79},"2026-11-03":{"EUR":0.9201,"USD":1}}}`), "USD")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range quotes {
		if q.Base != "USD" {
			t.Errorf("base %s", q.Base)
		}
		got[q.Day.String()+" "+q.Quote] = q.Rate.String()
	}
	want := map[string]string{"2026-11-02 EUR": "0.9123", "2026-11-02 GBP": "0.79", "2026-11-03 EUR": "0.9201"}
	if len(got) != len(want) {
		t.Errorf("quotes %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}

	for doc, msg := range map[string]string{
		`{"amount":1.0,"base":"USD","rates":`:                           "not a time series document of exchange rates",
		`[1,2]`:                                                         "not a time series document of exchange rates",
		`{"amount":1.0,"base":"EUR","rates":{}}`:                        `base: the rates are against "EUR", not the reporting currency USD`,
		`{"amount":100,"base":"USD","rates":{}}`:                        `amount: "100"; rates per 1 USD expected`,
		`{"amount":1,"base":"USD"}`:                                     "rates: missing",
		`{"amount":1,"base":"USD","rates":{"02/11/2026":{"EUR":0.9}}}`:  `rates: "02/11/2026" is not a date (YYYY-MM-DD)`,
		`{"amount":1,"base":"USD","rates":{"2026-13-01":{"EUR":0.9}}}`:  `rates: "2026-13-01" is not a date (YYYY-MM-DD)`,
		`{"amount":1,"base":"USD","rates":{"2026-11-02":{"eur":0.9}}}`:  `rates.2026-11-02: "eur" is not an ISO 4217 currency code such as EUR`,
		`{"amount":1,"base":"USD","rates":{"2026-11-02":{"EUR":0}}}`:    "rates.2026-11-02.EUR: 0 is not a positive rate",
		`{"amount":1,"base":"USD","rates":{"2026-11-02":{"EUR":-0.9}}}`: "rates.2026-11-02.EUR: -0.9 is not a positive rate",
		`{"amount":1,"base":"USD","rates":{"2026-11-02":{"EUR":"x"}}}`:  "not a time series document of exchange rates",
	} {
		if _, err := exchange.Parse([]byte(doc), "USD"); err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", doc, err, msg)
		}
	}
}

// TestFile reads the range's rates from a file on each fetch, and names
// the file in its errors.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rates.json")
	if err := os.WriteFile(path, []byte(`{"amount":1,"base":"USD","rates":{"2026-11-01":{"EUR":0.9},"2026-11-02":{"EUR":0.91},"2026-11-05":{"EUR":0.92}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	src := exchange.File{Path: path}
	quotes, err := src.Fetch(t.Context(), "USD", day(t, "2026-11-02"), day(t, "2026-11-04"))
	if err != nil || len(quotes) != 1 || quotes[0].Day != day(t, "2026-11-02") || quotes[0].Rate.String() != "0.91" {
		t.Errorf("Fetch = %+v, %v", quotes, err)
	}
	if src.String() != path {
		t.Errorf("String = %s", src)
	}
	if err := os.WriteFile(path, []byte(`{"amount":1,"base":"USD","rates":{"2026-11-02":{"EUR":-1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Fetch(t.Context(), "USD", 0, day(t, "2026-12-01")); err == nil || !strings.Contains(err.Error(), path+": rates.2026-11-02.EUR") {
		t.Errorf("Fetch of a bad file: %v", err)
	}
	if _, err := (exchange.File{Path: path + ".missing"}).Fetch(t.Context(), "USD", 0, 1); err == nil {
		t.Error("Fetch of a missing file: no error")
	}
}
