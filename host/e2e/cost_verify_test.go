package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// The verification world: Brand B manages the others and pays in USD;
// Brand A (delegated) pays in USD on one subscription and in EUR on
// another; Brand C (delegated) pays in EUR. Seventy days of costs up to
// today in amounts of ten-thousandths of a unit, so every row rounds to
// whole cents, some are credits and some round to nothing.
const (
	verifyDirB = "22222222-2222-2222-2222-222222222222"
	verifyDirA = "11111111-1111-1111-1111-111111111111"
	verifyDirC = "33333333-3333-3333-3333-333333333333"
	verifySubB = "bbbbbbbb-0000-0000-0000-0000000000f1"
	verifySubA = "aaaaaaaa-0000-0000-0000-0000000000f1"
	verifyEurA = "aaaaaaaa-0000-0000-0000-0000000000f2"
	verifySubC = "cccccccc-0000-0000-0000-0000000000f1"
	verifyDays = 70
	// The day, before today, on which Brand C's virtual machines cost ten
	// times their usual.
	verifySpikeAgo = 9
)

// verifyCost is a world cost as the test knows it: the ten-thousandths
// it was written as, beside where it belongs.
type verifyCost struct {
	tenant   string // the tenant's name
	day      ledger.Day
	service  string
	currency string
	// units are ten-thousandths of the currency.
	units int64
}

// cents rounds ten-thousandths to cents half away from zero in integers,
// apart from the floating point the cloud and the sync go through; no
// amount ends in exactly half a cent.
func (c verifyCost) cents() ledger.Amount {
	if c.units < 0 {
		return -ledger.Amount((-c.units + 50) / 100)
	}
	return ledger.Amount((c.units + 50) / 100)
}

// verifyWorld writes the world file and returns the costs in it.
func verifyWorld(t *testing.T, today ledger.Day) (string, []verifyCost) {
	w := world.World{Tenants: []world.Tenant{
		{Name: "Brand B", DirectoryTenantID: verifyDirB, Subscriptions: []world.Subscription{{ID: verifySubB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
		{Name: "Brand A", DirectoryTenantID: verifyDirA, Delegated: true, AccessGroups: []string{"grp-a"},
			Subscriptions: []world.Subscription{{ID: verifySubA, Name: "A prod"}, {ID: verifyEurA, Name: "A eu"}}},
		{Name: "Brand C", DirectoryTenantID: verifyDirC, Delegated: true, AccessGroups: []string{"grp-c"},
			Subscriptions: []world.Subscription{{ID: verifySubC, Name: "C prod"}}},
	}}
	subs := []struct{ id, tenant, currency string }{
		{verifySubB, "Brand B", "USD"}, {verifySubA, "Brand A", "USD"}, {verifyEurA, "Brand A", "EUR"}, {verifySubC, "Brand C", "EUR"},
	}
	services := []string{"Virtual Machines", "Storage", "SQL Database", "Bandwidth"}
	var costs []verifyCost
	for si, s := range subs {
		for day := today - verifyDays + 1; day <= today; day++ {
			for vi, svc := range services {
				for rg := range 2 {
					// About 40.00 to 400.00 a day, moving by under a tenth
					// with the day, so no day is an anomaly but the spike.
					base := int64(400000 * (vi + 1) / (rg + 1) / (si + 1))
					units := base + (int64(day)*7919+int64(vi)*104729+int64(rg)*31+int64(si)*13)%(base/12)
					switch {
					case vi == 3 && rg == 1 && int(day)%5 == 0:
						units = -(units % 100000) // a credit
					case vi == 3 && rg == 1 && int(day)%7 == 0:
						units %= 49 // under half a cent: nothing
					}
					if units%100 == 50 || units%100 == -50 {
						units++
					}
					if s.id == verifySubC && vi == 0 && day == today-verifySpikeAgo {
						units *= 10
					}
					costs = append(costs, verifyCost{tenant: s.tenant, day: day, service: svc, currency: s.currency, units: units})
					w.Costs = append(w.Costs, world.Cost{SubscriptionID: s.id, Date: day.String(), Service: svc, ResourceGroup: fmt.Sprintf("rg-%d", rg),
						Cost: float64(units) / 10000, Currency: s.currency})
				}
			}
		}
	}
	return writeWorld(t, w), costs
}

// verifyRange is a range of days, both ends included.
type verifyRange struct{ from, to ledger.Day }

func (r verifyRange) query() string {
	return "start_date=" + r.from.String() + "&end_date=" + r.to.String()
}

// figures is every amount the reads answer, by what it is: the test builds
// the same keys from the world file, so a figure missing, extra or off by
// a cent fails.
type figures map[string]ledger.Amount

// expectedFigures sums the world's costs as each read must answer them for
// a caller who sees tenants (names → ids).
func expectedFigures(costs []verifyCost, who string, tenants map[string]string, ranges []verifyRange, periods []int, today ledger.Day) figures {
	out := figures{}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range tenants {
			if !yield(n) {
				return
			}
		}
	})
	in := func(c verifyCost, from, to ledger.Day) bool {
		_, ok := tenants[c.tenant]
		return ok && c.day >= from && c.day <= to
	}
	for _, r := range ranges {
		q := who + " " + r.query()
		prev := verifyRange{r.from - (r.to - r.from + 1), r.from - 1}
		currencies := map[string]bool{}
		for _, c := range costs {
			if in(c, r.from, r.to) {
				currencies[c.currency] = true
				out["summary "+q+" previous "+c.currency] += 0
			}
		}
		for _, c := range costs {
			id := tenants[c.tenant]
			if in(c, prev.from, prev.to) && currencies[c.currency] {
				out["summary "+q+" previous "+c.currency] += c.cents()
			}
			if !in(c, r.from, r.to) {
				continue
			}
			for _, k := range []string{
				"summary " + q + " total " + c.currency,
				"summary " + q + " service " + c.service + " " + c.currency,
				"trends " + q + " " + c.day.String() + " " + c.currency,
				"chargeback " + q + " " + id + " " + c.currency,
				"chargeback " + q + " " + id + " service " + c.service + " " + c.currency,
				"chargeback-of-one " + q + " " + id + " " + c.currency,
				"chargeback-of-one " + q + " " + id + " service " + c.service + " " + c.currency,
				"csv " + q + " " + id + " " + c.day.String() + " " + c.service + " " + c.currency,
				"csv-of-one " + q + " " + id + " " + c.day.String() + " " + c.service + " " + c.currency,
			} {
				out[k] += c.cents()
			}
		}
		// Every currency of the range on every day, 0 where it has none.
		for day := r.from; day <= r.to; day++ {
			for cur := range currencies {
				out["trends "+q+" "+day.String()+" "+cur] += 0
			}
		}
		// A tenant without costs still has its report.
		for _, n := range names {
			out["chargeback "+q+" "+tenants[n]+" reports"] = 1
			out["chargeback-of-one "+q+" "+tenants[n]+" reports"] = 1
		}
	}
	for _, days := range periods {
		for _, c := range costs {
			if in(c, today-ledger.Day(days)+1, today) {
				out[fmt.Sprintf("by-tenant %s %d %s %s", who, days, tenants[c.tenant], c.currency)] += c.cents()
			}
		}
	}
	return out
}

// readFigures reads every figure through the API as the caller.
func readFigures(t *testing.T, h *host, token, who string, tenants []string, ranges []verifyRange, periods []int) figures {
	t.Helper()
	out := figures{}
	for _, r := range ranges {
		q := who + " " + r.query()
		var sum struct {
			Days   int `json:"days"`
			Totals []struct {
				Currency          string        `json:"currency"`
				TotalCost         ledger.Amount `json:"total_cost"`
				PreviousTotalCost ledger.Amount `json:"previous_total_cost"`
			} `json:"totals"`
			TopServices []struct {
				Service   string        `json:"service"`
				Currency  string        `json:"currency"`
				TotalCost ledger.Amount `json:"total_cost"`
			} `json:"top_services"`
		}
		h.get("/api/v1/costs/summary?"+r.query(), token).json(t, &sum)
		if sum.Days != int(r.to-r.from)+1 {
			t.Errorf("summary %s: %d days", q, sum.Days)
		}
		for _, tot := range sum.Totals {
			out["summary "+q+" total "+tot.Currency] += tot.TotalCost
			out["summary "+q+" previous "+tot.Currency] += tot.PreviousTotalCost
		}
		for _, s := range sum.TopServices {
			out["summary "+q+" service "+s.Service+" "+s.Currency] += s.TotalCost
		}

		var trends []struct {
			Date      string        `json:"date"`
			Currency  *string       `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		}
		h.get("/api/v1/costs/trends?"+r.query(), token).json(t, &trends)
		for _, d := range trends {
			cur := "null"
			if d.Currency != nil {
				cur = *d.Currency
			}
			out["trends "+q+" "+d.Date+" "+cur] += d.TotalCost
		}

		type report struct {
			TenantID string `json:"tenant_id"`
			Totals   []struct {
				Currency  string        `json:"currency"`
				TotalCost ledger.Amount `json:"total_cost"`
			} `json:"totals"`
			Services []struct {
				Service   string        `json:"service"`
				Currency  string        `json:"currency"`
				TotalCost ledger.Amount `json:"total_cost"`
			} `json:"services"`
		}
		add := func(kind string, rep report) {
			out[kind+" "+q+" "+rep.TenantID+" reports"]++
			for _, tot := range rep.Totals {
				out[kind+" "+q+" "+rep.TenantID+" "+tot.Currency] += tot.TotalCost
			}
			for _, s := range rep.Services {
				out[kind+" "+q+" "+rep.TenantID+" service "+s.Service+" "+s.Currency] += s.TotalCost
			}
		}
		var reports []report
		h.get("/api/v1/costs/chargeback?"+r.query(), token).json(t, &reports)
		for _, rep := range reports {
			add("chargeback", rep)
		}
		readCSV := func(kind, path, filename string) {
			t.Helper()
			resp := h.get(path, token)
			if resp.status != http.StatusOK || !strings.HasPrefix(resp.header.Get("Content-Type"), "text/csv") ||
				resp.header.Get("Content-Disposition") != `attachment; filename="`+filename+`"` {
				t.Fatalf("%s: %d %s %q %s", path, resp.status, resp.header.Get("Content-Type"), resp.header.Get("Content-Disposition"), resp.body)
			}
			records, err := csv.NewReader(bytes.NewReader(resp.body)).ReadAll()
			if err != nil || len(records) == 0 || strings.Join(records[0], ",") != "tenant_id,tenant_name,date,service,currency,cost" {
				t.Fatalf("%s: %v %q", path, err, records)
			}
			for _, rec := range records[1:] {
				var c ledger.Amount
				if err := json.Unmarshal([]byte(rec[5]), &c); err != nil || !slices.Contains(tenants, rec[0]) {
					t.Fatalf("%s: row %q: %v", path, rec, err)
				}
				key := kind + " " + q + " " + rec[0] + " " + rec[2] + " " + rec[3] + " " + rec[4]
				if _, dup := out[key]; dup {
					t.Errorf("%s: two rows for %s", path, key)
				}
				out[key] += c
			}
		}
		readCSV("csv", "/api/v1/costs/chargeback?format=csv&"+r.query(), fmt.Sprintf("chargeback-all-%s-%s.csv", r.from, r.to))
		for _, id := range tenants {
			var rep report
			h.get("/api/v1/costs/chargeback/"+id+"?"+r.query(), token).json(t, &rep)
			add("chargeback-of-one", rep)
			readCSV("csv-of-one", "/api/v1/costs/chargeback/"+id+"?format=csv&"+r.query(), fmt.Sprintf("chargeback-%s-%s-%s.csv", id, r.from, r.to))
		}
	}
	for _, days := range periods {
		var byTenant []struct {
			TenantID  string        `json:"tenant_id"`
			Currency  *string       `json:"currency"`
			TotalCost ledger.Amount `json:"total_cost"`
		}
		h.get(fmt.Sprintf("/api/v1/costs/by-tenant?period_days=%d", days), token).json(t, &byTenant)
		for _, b := range byTenant {
			cur := "null"
			if b.Currency != nil {
				cur = *b.Currency
			}
			out[fmt.Sprintf("by-tenant %s %d %s %s", who, days, b.TenantID, cur)] += b.TotalCost
		}
	}
	return out
}

// sameFigures fails the test for every figure read that differs from the
// one expected, or that only one of them has.
func sameFigures(t *testing.T, when string, got, want figures) {
	t.Helper()
	bad := 0
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !yield(k) {
				return
			}
		}
	}) {
		g, gok := got[k]
		w, wok := want[k]
		if g != w || gok != wok {
			if bad++; bad <= 20 {
				t.Errorf("%s: %s: read %s (%v), want %s (%v)", when, k, g, gok, w, wok)
			}
		}
	}
	if bad > 20 {
		t.Errorf("%s: %d figures differ in all", when, bad)
	}
}

// TestCostVerify: a world of three tenants, four subscriptions, two
// currencies and seventy days of costs in awkward amounts, synced by the
// real costs job at the host's start-up; the summary, by-tenant, trends
// and chargeback (JSON and CSV, of each tenant and of all) answer, for
// ranges that start and end mid-month, to an admin and to a standard user
// of one tenant, exactly the sums the test makes from the world file, to
// the cent, and the very same after a second sync. That second sync
// brings in a budget made at the provider in the meantime, and the day on
// which the world's costs spike is the one anomaly listed.
func TestCostVerify(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testCostVerify(t, dialect) })
	}
}

func testCostVerify(t *testing.T, dialect string) {
	now := time.Now().UTC()
	today := ledger.DayOf(now)
	path, costs := verifyWorld(t, today)
	o := hostOpts{pluginsHCL: costPlugins(""),
		env: map[string]string{"STEWARD_SIM_WORLD": path, "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	f := &fixture{h: h, admin: admin}
	ids := map[string]string{"Brand A": tenantID(t, h, verifyDirA), "Brand B": tenantID(t, h, verifyDirB), "Brand C": tenantID(t, h, verifyDirC)}
	h.waitFor("the start-up costs sync", 60*time.Second, func() bool {
		var hist struct {
			Logs []run `json:"logs"`
		}
		h.get("/api/v1/sync/history?limit=50", admin).json(t, &hist)
		for _, r := range hist.Logs {
			if r.JobType == "costs" && r.Status == "failed" {
				t.Fatalf("start-up costs sync failed: %+v", r)
			}
			if r.JobType == "costs" && r.Status == "completed" {
				return true
			}
		}
		return false
	})

	u := tenancy.User{DirectoryTenantID: verifyDirA, Subject: "oid-verify-a", Email: "verify@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)

	// Ranges that start and end mid-month: across the start of last month,
	// across the start of this one, and the whole world.
	y, m, _ := now.Date()
	thisMonth := ledger.DayOf(time.Date(y, m, 1, 0, 0, 0, 0, time.UTC))
	lastMonth := ledger.DayOf(time.Date(y, m-1, 1, 0, 0, 0, 0, time.UTC))
	ranges := []verifyRange{{lastMonth - 9, lastMonth + 13}, {thisMonth - 12, max(thisMonth+6, today-1)}, {today - verifyDays + 1, today}}
	periods := []int{20, 45}
	callers := []struct {
		who, token string
		tenants    map[string]string
	}{
		{"admin", admin, ids},
		{"user of Brand A", tokA, map[string]string{"Brand A": ids["Brand A"]}},
	}
	want := map[string]figures{}
	for _, c := range callers {
		want[c.who] = expectedFigures(costs, c.who, c.tenants, ranges, periods, today)
		var own []string
		for _, id := range c.tenants {
			own = append(own, id)
		}
		sameFigures(t, c.who+" after the start-up sync", readFigures(t, h, c.token, c.who, own, ranges, periods), want[c.who])
	}

	// The spike of Brand C's virtual machines is the one anomaly.
	var anomalies anomalyList
	h.get("/api/v1/costs/anomalies?limit=100", admin).json(t, &anomalies)
	spike := (today - verifySpikeAgo).String()
	if anomalies.Total != 1 || len(anomalies.Items) != 1 || anomalies.Items[0].TenantID != ids["Brand C"] ||
		anomalies.Items[0].Service != "Virtual Machines" || anomalies.Items[0].Date != spike {
		t.Errorf("anomalies %+v, want Brand C's Virtual Machines on %s alone", anomalies, spike)
	}
	h.get("/api/v1/costs/anomalies?limit=100", tokA).json(t, &anomalies)
	if anomalies.Total != 0 {
		t.Errorf("Brand A's user sees anomalies %+v", anomalies)
	}

	// A budget made at the provider, on Brand A's USD subscription.
	var budgets []budgetView
	h.get("/api/v1/budgets", admin).json(t, &budgets)
	if len(budgets) != 0 {
		t.Fatalf("budgets before any was made: %+v", budgets)
	}
	providerBudget(t, h, verifySubA, "finops-monthly", thisMonth)

	// A second sync: the five restated days of the four subscriptions'
	// eight rows a day, and four by resource (each service's costs, which
	// name no resource), fetched and written again, and the budgets
	// pulled.
	r := f.waitRun(t, f.trigger(t, "costs"))
	if r.Status != "completed" || r.RecordsProcessed != 5*4*(8+4) {
		t.Fatalf("second costs sync %+v, want completed with 240 records", r)
	}
	for _, c := range callers {
		var own []string
		for _, id := range c.tenants {
			own = append(own, id)
		}
		sameFigures(t, c.who+" after a second sync", readFigures(t, h, c.token, c.who, own, ranges, periods), want[c.who])
	}

	// The provider's spend is this month's costs of the subscription: the
	// world's ten-thousandths summed, then rounded.
	var units int64
	for _, c := range costs {
		if c.tenant == "Brand A" && c.currency == "USD" && c.day >= thisMonth {
			units += c.units
		}
	}
	spend := verifyCost{units: units}.cents()
	// Half a cent exactly is rounded from the provider's floating-point
	// sum, either way.
	tie := units%100 == 50 || units%100 == -50
	for _, who := range []string{admin, tokA} {
		h.get("/api/v1/budgets", who).json(t, &budgets)
		if len(budgets) != 1 {
			t.Fatalf("budgets after the sync: %+v", budgets)
		}
		b := budgets[0]
		if b.Name != "finops-monthly" || b.TenantID != ids["Brand A"] || b.SubscriptionID == nil || *b.SubscriptionID != verifySubA ||
			b.Amount != 25000 || (b.CurrentSpend != spend.Float() && !(tie && b.CurrentSpend == (spend-1).Float())) {
			t.Errorf("the provider's budget reads %+v, want finops-monthly of Brand A's %s, 25000.00 with %s spent", b, verifySubA, spend)
		}
	}
	var others []budgetView
	h.get("/api/v1/budgets?tenant_ids="+ids["Brand C"], admin).json(t, &others)
	if len(others) != 0 {
		t.Errorf("Brand C has budgets %+v", others)
	}
}

// providerBudget creates a monthly budget of 25,000 on a subscription at
// the simulated provider, as someone would in the provider's portal: with
// a token of the simulator's identity provider, in the managing tenant.
func providerBudget(t *testing.T, h *host, sub, name string, start ledger.Day) {
	t.Helper()
	idp := regexp.MustCompile(`identity_provider=(https://\S+)`).FindStringSubmatch(h.logs.String())
	arm := regexp.MustCompile(`resource_manager=(https://\S+)`).FindStringSubmatch(h.logs.String())
	if idp == nil || arm == nil {
		t.Fatal("the host did not log the simulated cloud's addresses")
	}
	sim := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the simulator's own CA, on loopback
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {stack.ClientID}, "client_secret": {stack.ClientSecret},
		"scope": {"https://management.azure.com/.default"}}
	resp, err := sim.PostForm(idp[1]+"/"+verifyDirB+"/oauth2/v2.0/token", form)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("a token of the simulated cloud: %d %v", resp.StatusCode, err)
	}
	body := fmt.Sprintf(`{"properties": {"category": "Cost", "amount": 25000, "timeGrain": "Monthly", "timePeriod": {"startDate": "%sT00:00:00Z"},
		"notifications": {"actual-90": {"enabled": true, "operator": "GreaterThanOrEqualTo", "threshold": 90, "contactEmails": ["finops@brand-a.example"]}}}}`, start)
	req, err := http.NewRequest(http.MethodPut, arm[1]+"/subscriptions/"+sub+"/providers/Microsoft.Consumption/budgets/"+name+"?api-version=2023-11-01",
		strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err = sim.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating the provider's budget: %d", resp.StatusCode)
	}
}
