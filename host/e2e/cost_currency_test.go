package e2e

import (
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// TestCurrenciesThroughTheHost: a EUR tenant and a USD tenant over ten
// days, with a USD-based EUR rate that differs every day but two, which
// have none (as a weekend has none) and take the day before's. Through the
// host, with the rates synced from the simulated cloud by the rates' job, the summary of
// both tenants in USD is each day's EUR cost divided by that day's rate,
// rounded half to even to the cent per day (the first day is a tie,
// 12502.5 cents, which rounds down to even), plus the USD cost; it says
// it converted, with which rates; the per-currency totals are as they
// were; the per-tenant totals and the analysis agree. A range that
// reaches a day of EUR costs with no rate in the week before has no
// converted total and names EUR, and so does the cost page.
func TestCurrenciesThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCurrencies(t, dialect) })
	}
}

func testCurrencies(t *testing.T, dialect string) {
	const eurSub, usdSub = "aaaaaaaa-0000-0000-0000-00000000e001", "aaaaaaaa-0000-0000-0000-00000000d001"
	today := time.Now().UTC()
	date := func(d int) string { return today.AddDate(0, 0, d).Format(time.DateOnly) }
	var costs []world.Cost
	rates := map[string]map[string]float64{}
	eurCents := map[int]int64{}
	rateOf := map[int]*big.Rat{}
	for d := -9; d <= 0; d++ {
		// 100.02 EUR and 7.77 more each day; the rate 0.8 and 0.0125
		// more each day, none on days -5 and -4.
		eurCents[d] = 100_02 + 7_77*int64(d+9)
		costs = append(costs,
			world.Cost{SubscriptionID: eurSub, Date: date(d), Service: "Storage", ResourceGroup: "rg-data", Cost: float64(eurCents[d]) / 100, Currency: "EUR"},
			world.Cost{SubscriptionID: usdSub, Date: date(d), Service: "Storage", ResourceGroup: "rg-data", Cost: 50, Currency: "USD"})
		if d == -5 || d == -4 {
			rateOf[d] = rateOf[-6]
			continue
		}
		rateOf[d] = new(big.Rat).Add(big.NewRat(8, 10), new(big.Rat).Mul(big.NewRat(125, 10000), big.NewRat(int64(d+9), 1)))
		f, _ := rateOf[d].Float64()
		rates[date(d)] = map[string]float64{"EUR": f, "GBP": 0.75}
	}
	// A day of EUR costs three days before the first rate.
	costs = append(costs, world.Cost{SubscriptionID: eurSub, Date: date(-12), Service: "Storage", ResourceGroup: "rg-data", Cost: 10, Currency: "EUR"})
	path := writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Euro Brand", DirectoryTenantID: "11111111-1111-1111-1111-11111111e001", Delegated: true,
				Subscriptions: []world.Subscription{{ID: eurSub, Name: "EU prod"}}, AccessGroups: []string{"grp-eu"}},
			{Name: "Dollar Brand", DirectoryTenantID: "11111111-1111-1111-1111-11111111d001", Delegated: true,
				Subscriptions: []world.Subscription{{ID: usdSub, Name: "US prod"}}, AccessGroups: []string{"grp-us"}},
		},
		Costs:         costs,
		ExchangeRates: &world.ExchangeRates{Base: "USD", Rates: rates},
	})
	o := hostOpts{pluginsHCL: costPlugins("    backfill_days = 13\n    reporting_currency = \"USD\""),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "costs")
	// The rates' job keeps no tenant's data domain, so the first sync
	// leaves it to its schedule; an admin triggers it as any job.
	if r := h.do(http.MethodPost, "/api/v1/sync/exchange_rates", admin, nil); r.status != http.StatusAccepted {
		t.Fatalf("POST /api/v1/sync/exchange_rates: %d %s", r.status, r.body)
	}
	waitStartupSync(t, h, admin, "exchange_rates")
	ids := h.tenantIDs(t, admin)
	eu, us := ids["Euro Brand"], ids["Dollar Brand"]

	// The expected figures, by hand: each day's EUR cents ÷ its rate,
	// rounded half to even, summed, plus 10 days of 50.00 USD.
	var eurTotal, eurInUSD int64
	for d := -9; d <= 0; d++ {
		eurTotal += eurCents[d]
		exact := new(big.Rat).Quo(new(big.Rat).SetInt64(eurCents[d]), rateOf[d])
		eurInUSD += halfEven(exact)
	}
	if first := halfEven(new(big.Rat).Quo(big.NewRat(100_02, 1), rateOf[-9])); first != 12502 {
		t.Fatalf("the first day converts to %d cents, want the tie 12502.5 rounded to 12502", first)
	}
	wantUSD := ledger.Amount(eurInUSD + 10*50_00)
	t.Logf("EUR %s converted to %s USD, plus 500.00 USD: %s USD", ledger.Amount(eurTotal), ledger.Amount(eurInUSD), wantUSD)

	first, last := ledger.DayOf(today)-9, ledger.DayOf(today)
	type reporting struct {
		Currency  string         `json:"currency"`
		TotalCost *ledger.Amount `json:"total_cost"`
		Converted bool           `json:"converted"`
		Source    *string        `json:"source"`
		Rates     []struct {
			Currency          string        `json:"currency"`
			FirstRateDate     ledger.Day    `json:"first_rate_date"`
			LastRateDate      ledger.Day    `json:"last_rate_date"`
			Days              int           `json:"days"`
			DaysOnEarlierRate int           `json:"days_on_earlier_rate"`
			TotalCost         ledger.Amount `json:"total_cost"`
			ConvertedCost     ledger.Amount `json:"converted_cost"`
		} `json:"rates"`
		Missing []struct {
			Currency  string     `json:"currency"`
			FirstDate ledger.Day `json:"first_date"`
			Days      int        `json:"days"`
		} `json:"missing_rates"`
	}
	var s struct {
		Currency  *string        `json:"currency"`
		TotalCost *ledger.Amount `json:"total_cost"`
		Totals    []struct {
			Currency  string        `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		} `json:"totals"`
		Reporting reporting `json:"reporting"`
	}
	h.get(fmt.Sprintf("/api/v1/costs/summary?start_date=%s&end_date=%s&tenant_ids=%s,%s", first, last, eu, us), admin).json(t, &s)
	r := s.Reporting
	if s.Currency != nil || s.TotalCost != nil || len(s.Totals) != 2 || s.Totals[0].Currency != "EUR" || s.Totals[0].TotalCost != ledger.Amount(eurTotal) ||
		s.Totals[1].Currency != "USD" || s.Totals[1].TotalCost != 500_00 {
		t.Errorf("the per-currency figures changed: %+v", s)
	}
	if r.Currency != "USD" || r.TotalCost == nil || *r.TotalCost != wantUSD || !r.Converted || r.Source == nil || !strings.HasSuffix(*r.Source, "/exchange-rates") ||
		len(r.Missing) != 0 || len(r.Rates) != 1 {
		t.Fatalf("summary in USD: %+v; want %s", r, wantUSD)
	}
	if u := r.Rates[0]; u.Currency != "EUR" || u.FirstRateDate != first || u.LastRateDate != last || u.Days != 10 || u.DaysOnEarlierRate != 2 ||
		u.TotalCost != ledger.Amount(eurTotal) || u.ConvertedCost != ledger.Amount(eurInUSD) {
		t.Errorf("the EUR rates used: %+v", u)
	}

	var byTenant []struct {
		TenantID           string         `json:"tenant_id"`
		Currency           *string        `json:"currency"`
		TotalCost          ledger.Amount  `json:"total_cost"`
		ReportingCurrency  string         `json:"reporting_currency"`
		ReportingTotalCost *ledger.Amount `json:"reporting_total_cost"`
	}
	h.get(fmt.Sprintf("/api/v1/costs/by-tenant?period_days=10&tenant_ids=%s,%s", eu, us), admin).json(t, &byTenant)
	want := map[string][2]ledger.Amount{eu: {ledger.Amount(eurTotal), ledger.Amount(eurInUSD)}, us: {500_00, 500_00}}
	if len(byTenant) != 2 {
		t.Fatalf("by tenant: %+v", byTenant)
	}
	for _, b := range byTenant {
		if w := want[b.TenantID]; b.TotalCost != w[0] || b.ReportingCurrency != "USD" || b.ReportingTotalCost == nil || *b.ReportingTotalCost != w[1] {
			t.Errorf("tenant %s: %+v; want %s in its currency, %s USD", b.TenantID, b, w[0], w[1])
		}
	}

	var a struct {
		Totals []struct {
			Currency  string        `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		} `json:"totals"`
		Reporting reporting `json:"reporting"`
	}
	h.get(fmt.Sprintf("/api/v1/costs/analysis?group_by=tenant&start_date=%s&end_date=%s&tenant_ids=%s,%s", first, last, eu, us), admin).json(t, &a)
	if len(a.Totals) != 2 || a.Reporting.TotalCost == nil || *a.Reporting.TotalCost != wantUSD || len(a.Reporting.Rates) != 1 || a.Reporting.Rates[0].DaysOnEarlierRate != 2 {
		t.Errorf("analysis: %+v; want %s USD", a, wantUSD)
	}

	h.get(fmt.Sprintf("/api/v1/costs/summary?start_date=%s&end_date=%s&tenant_ids=%s,%s", first-3, last, eu, us), admin).json(t, &s)
	if m := s.Reporting.Missing; s.Reporting.TotalCost != nil || len(m) != 1 || m[0].Currency != "EUR" || m[0].FirstDate != first-3 || m[0].Days != 1 {
		t.Errorf("a EUR day without a rate: %+v", s.Reporting)
	}
	// The cost page's 90 days reach that day too, and say why they have
	// no total in USD.
	page := h.do(http.MethodGet, "/costs", admin, nil, "HX-Request", "true")
	if want := "in all currencies is not shown: no exchange rate into USD for EUR from " + date(-12) + "."; page.status != http.StatusOK || !strings.Contains(string(page.body), want) {
		t.Errorf("the cost page lacks %q:\n%s", want, page.body)
	}
}

// halfEven rounds v to the nearest integer, a tie to the even one.
func halfEven(v *big.Rat) int64 {
	n := new(big.Int).Quo(v.Num(), v.Denom())
	rest := new(big.Rat).Sub(v, new(big.Rat).SetInt(n))
	switch c := rest.Abs(rest).Cmp(big.NewRat(1, 2)); {
	case c > 0, c == 0 && n.Bit(0) == 1:
		if v.Sign() < 0 {
			return n.Int64() - 1
		}
		return n.Int64() + 1
	}
	return n.Int64()
}
