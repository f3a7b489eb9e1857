package reports_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestReportingCurrency: with a EUR rate on each weekday (from 0.8 to
// 1.2375 by steps of 0.0625, one step a day), the summary's and each tenant's costs in USD
// are each day's EUR sum converted at that day's rate, or at Friday's on a
// weekend, plus the USD costs, while the per-currency figures stay as
// they were; a EUR day with no rate in the week before leaves the EUR
// totals null and names EUR; with conversion off, only USD has a total.
func TestReportingCurrency(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, dialect)
			rates := &exchange.Store{DB: w.db}
			rateOn := map[ledger.Day]exchange.Rate{}
			var quotes []exchange.Quote
			for d := today - 60; d <= today; d++ {
				if wd := d.Time().Weekday(); wd == time.Saturday || wd == time.Sunday {
					continue
				}
				r, err := exchange.ParseRate(fmt.Sprintf("%.4f", float64(8000+625*(int(d)%8))/10000))
				if err != nil {
					t.Fatal(err)
				}
				rateOn[d] = r
				quotes = append(quotes, exchange.Quote{Day: d, Base: "USD", Quote: "EUR", Rate: r})
			}
			if err := rates.Upsert(ctx, quotes, "test", time.Now()); err != nil {
				t.Fatal(err)
			}
			w.store.Exchange = &exchange.Converter{Store: rates, Currency: "USD", Source: "https://rates.example/v1"}
			defer func() { w.store.Exchange = nil }()

			// In Go from the raw rows: each day's EUR sum of the tenants at
			// the day's rate, or the latest weekday's.
			inUSD := func(tenants map[string]bool, from, to ledger.Day) ledger.Amount {
				eur := map[ledger.Day]ledger.Amount{}
				var total ledger.Amount
				for _, c := range w.rows {
					if tenants[c.TenantID] && c.Day >= from && c.Day <= to {
						if c.Currency == "USD" {
							total += c.Cost
						} else {
							eur[c.Day] += c.Cost
						}
					}
				}
				for d, cents := range eur {
					r := d
					for rateOn[r] == 0 {
						r--
					}
					total += exchange.Convert(cents, rateOn[r])
				}
				return total
			}
			type reporting struct {
				TotalCost *ledger.Amount `json:"total_cost"`
				Converted bool           `json:"converted"`
				Rates     []struct {
					Currency          string `json:"currency"`
					Days              int    `json:"days"`
					DaysOnEarlierRate int    `json:"days_on_earlier_rate"`
				} `json:"rates"`
				Missing []struct {
					Currency string `json:"currency"`
				} `json:"missing_rates"`
			}
			var s struct {
				Totals    []totalJSON `json:"totals"`
				Reporting reporting   `json:"reporting"`
			}
			from := today - 29
			w.json(t, fmt.Sprintf("/api/v1/costs/summary?start_date=%s&end_date=%s", from, today), admin, &s)
			everyone := map[string]bool{"t1": true, "t2": true, "t3": true, "t4": true}
			sameTotals(t, "summary", totalsOf(s.Totals), expected(w.rows, admin.TenantIDs, from, today, all)[""])
			if want := inUSD(everyone, from, today); s.Reporting.TotalCost == nil || *s.Reporting.TotalCost != want || !s.Reporting.Converted ||
				len(s.Reporting.Rates) != 1 || s.Reporting.Rates[0].Days != 30 || s.Reporting.Rates[0].DaysOnEarlierRate != 8 {
				t.Errorf("summary in USD: %+v; want %s", s.Reporting, want)
			}

			var byTenant []struct {
				TenantID           string         `json:"tenant_id"`
				Currency           *string        `json:"currency"`
				TotalCost          ledger.Amount  `json:"total_cost"`
				ReportingTotalCost *ledger.Amount `json:"reporting_total_cost"`
			}
			w.json(t, "/api/v1/costs/by-tenant?period_days=30", admin, &byTenant)
			for _, b := range byTenant {
				want := inUSD(map[string]bool{b.TenantID: true}, from, today)
				if b.Currency != nil && *b.Currency == "USD" {
					want = b.TotalCost
				} else if b.TenantID == "t1" {
					want -= expected(w.rows, []string{"t1"}, from, today, all)[""]["USD"]
				}
				if b.ReportingTotalCost == nil || *b.ReportingTotalCost != want {
					t.Errorf("tenant %s in %v: %v USD, want %s", b.TenantID, b.Currency, b.ReportingTotalCost, want)
				}
			}

			// The chargeback's reports: every tenant's currencies together,
			// t1's EUR and USD among them.
			var reportsJSON []struct {
				TenantID           string         `json:"tenant_id"`
				ReportingCurrency  string         `json:"reporting_currency"`
				ReportingTotalCost *ledger.Amount `json:"reporting_total_cost"`
			}
			w.json(t, fmt.Sprintf("/api/v1/costs/chargeback?start_date=%s&end_date=%s", from, today), admin, &reportsJSON)
			if len(reportsJSON) != len(admin.TenantIDs) {
				t.Fatalf("chargeback of %d tenants: %+v", len(admin.TenantIDs), reportsJSON)
			}
			for _, r := range reportsJSON {
				if want := inUSD(map[string]bool{r.TenantID: true}, from, today); r.ReportingCurrency != "USD" || r.ReportingTotalCost == nil || *r.ReportingTotalCost != want {
					t.Errorf("chargeback of %s: %v %s, want %s USD", r.TenantID, r.ReportingTotalCost, r.ReportingCurrency, want)
				}
			}

			// Before the first rate by more than a week: no EUR total.
			w.json(t, fmt.Sprintf("/api/v1/costs/summary?start_date=%s&end_date=%s", today-75, today), admin, &s)
			if s.Reporting.TotalCost != nil || len(s.Reporting.Missing) != 1 || s.Reporting.Missing[0].Currency != "EUR" {
				t.Errorf("summary with EUR days without a rate: %+v", s.Reporting)
			}
			w.json(t, "/api/v1/costs/by-tenant?period_days=75", admin, &byTenant)
			for _, b := range byTenant {
				if eur := b.Currency != nil && *b.Currency == "EUR"; eur != (b.ReportingTotalCost == nil) {
					t.Errorf("tenant %s in %v without EUR rates: %v USD", b.TenantID, b.Currency, b.ReportingTotalCost)
				}
			}

			w.json(t, fmt.Sprintf("/api/v1/costs/chargeback?start_date=%s&end_date=%s", today-75, today), admin, &reportsJSON)
			for _, r := range reportsJSON {
				if eur := r.TenantID == "t1" || r.TenantID == "t2"; eur != (r.ReportingTotalCost == nil) {
					t.Errorf("chargeback of %s with EUR days without a rate: %v USD", r.TenantID, r.ReportingTotalCost)
				}
			}

			w.store.Exchange = &exchange.Converter{Store: rates, Currency: "USD"}
			w.json(t, fmt.Sprintf("/api/v1/costs/summary?start_date=%s&end_date=%s&tenant_ids=t4", from, today), admin, &s)
			if want := expected(w.rows, []string{"t4"}, from, today, all)[""]["USD"]; s.Reporting.TotalCost == nil || *s.Reporting.TotalCost != want || s.Reporting.Converted {
				t.Errorf("off, a USD tenant: %+v; want %s", s.Reporting, want)
			}
			w.json(t, fmt.Sprintf("/api/v1/costs/summary?start_date=%s&end_date=%s", from, today), admin, &s)
			if s.Reporting.TotalCost != nil || len(s.Reporting.Missing) != 1 || s.Reporting.Converted {
				t.Errorf("off, with EUR costs: %+v", s.Reporting)
			}
		})
	}
}
