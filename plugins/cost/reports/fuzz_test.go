package reports

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// FuzzChargebackCSV writes one chargeback row as the CSV export does and
// reads the file back. Every cell reads back as written (encoding/csv
// reads a line break inside a cell as "\n"); a text cell is the text,
// or, when a spreadsheet would read the text as a formula, the text after
// an apostrophe; the date and the cost read back as the row's.
func FuzzChargebackCSV(f *testing.F) {
	for _, seed := range []struct {
		tenant, name, service, currency string
		day                             int32
		cost                            int64
	}{
		{"8c1e-4a", "Contoso Retail", "Virtual Machines", "USD", 20725, 123456},
		{"t-2", "=HYPERLINK(\"http://evil.example\",\"x\")", "+cmd|' /C calc'!A0", "@SUM(1)", 0, -5},
		{"t-3", "-2+3", "\tTab", "\rCR", -719528, -9223372036854775808},
		{"t,4", "Brand \"A\", Inc.\r\nLine", "a\nb", "", 2932896, 9223372036854775807},
		{"", "'quoted", " =not a formula", "EUR", 1, 1},
	} {
		f.Add(seed.tenant, seed.name, seed.service, seed.currency, seed.day, seed.cost)
	}
	first, _ := ledger.ParseDay("0000-01-01")
	last, _ := ledger.ParseDay("9999-12-31")
	f.Fuzz(func(t *testing.T, tenant, name, service, currency string, day int32, cost int64) {
		// The days a ledger holds: those a date names (ParseDay, DayOf).
		if ledger.Day(day) < first || ledger.Day(day) > last {
			return
		}
		row := ServiceDay{TenantID: tenant, Day: ledger.Day(day), Service: service, Currency: currency, Cost: ledger.Amount(cost)}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		rec := csvRecord(row, name)
		if err := w.WriteAll([][]string{csvHeader, rec}); err != nil {
			t.Fatal(err)
		}
		got, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatalf("the CSV does not read back: %v\n%q", err, buf.String())
		}
		crlf := strings.NewReplacer("\r\n", "\n")
		want := make([]string, len(rec))
		for i, c := range rec {
			want[i] = crlf.Replace(c)
		}
		if len(got) != 2 || !slices.Equal(got[0], csvHeader) || !slices.Equal(got[1], want) {
			t.Fatalf("wrote %q, read back %q", rec, got)
		}
		for i, text := range map[int]string{1: name, 3: service, 4: currency} {
			c := rec[i]
			formula := text != "" && strings.ContainsAny(text[:1], "=+-@\t\r")
			if c != text && !(formula && c == "'"+text) || c != "" && strings.ContainsAny(c[:1], "=+-@\t\r") {
				t.Fatalf("text %q written as %q", text, c)
			}
		}
		if d, err := ledger.ParseDay(rec[2]); rec[0] != tenant || err != nil || d != row.Day {
			t.Fatalf("day %d written as %q: %v", day, rec[2], err)
		}
		if cents, ok := centsOf(rec[5]); !ok || cents.Cmp(big.NewInt(cost)) != 0 {
			t.Fatalf("cost %d cents written as %q", cost, rec[5])
		}
	})
}

// centsOf reads a decimal with exactly two decimals as cents.
func centsOf(s string) (*big.Int, bool) {
	units, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 2 || strings.HasPrefix(units, "+") || strings.HasPrefix(frac, "-") || strings.HasPrefix(frac, "+") {
		return nil, false
	}
	n, ok := new(big.Int).SetString(units+frac, 10)
	return n, ok
}

// FuzzDateRange reads a read's start_date and end_date as the routes do:
// a range they accept starts and ends on the days given, ends no earlier
// than it starts and spans at most MaxRangeDays; one they refuse is a 422
// naming the parameter.
func FuzzDateRange(f *testing.F) {
	for _, seed := range []struct {
		start, end string
		count      int
	}{
		{"2026-10-01", "2026-10-31", 30}, {"", "", 7}, {"", "2026-02-28", 365}, {"2026-02-29", "2026-03-01", 30},
		{"2025-01-01", "2026-01-02", 30}, {"2026-11-30", "2026-11-01", 30}, {"0000-01-01", "9999-12-31", 90},
		{"2026-1-01", "20261001", 30}, {"2026-10-01T00:00:00Z", " 2026-10-01", 30},
	} {
		f.Add(seed.start, seed.end, seed.count)
	}
	today := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	h := &Handlers{Now: func() time.Time { return today }}
	f.Fuzz(func(t *testing.T, start, end string, count int) {
		// The routes' count (days, period_days) is bounded by its declaration.
		if count < 1 || count > 365 {
			return
		}
		check := func(what string, r Range, err error, start, end string) {
			if err != nil {
				var p *sdk.Problem
				if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 ||
					(p.Errors[0].Location != "query.start_date" && p.Errors[0].Location != "query.end_date") {
					t.Fatalf("%s(%q, %q): %v", what, start, end, err)
				}
				return
			}
			if r.From > r.To || r.Days() < 1 || r.Days() > MaxRangeDays ||
				(start != "" && r.From.String() != start) || (end != "" && r.To.String() != end) {
				t.Fatalf("%s(%q, %q) = %s to %s, %d days", what, start, end, r.From, r.To, r.Days())
			}
		}
		r, err := h.dateRange(RangeParams{StartDate: start, EndDate: end}, count)
		check("dateRange", r, err, start, end)
		if err == nil && start == "" && r.Days() != count {
			t.Fatalf("dateRange(%q) of %d days spans %d", end, count, r.Days())
		}
		r, err = chargebackRange(ChargebackParams{StartDate: start, EndDate: end})
		check("chargebackRange", r, err, start, end)
	})
}
