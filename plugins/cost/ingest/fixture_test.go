package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ingest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The world's two directories: Contoso's is the managing tenant Steward
// signs in to, with a billing account; Fabrikam delegates to it.
const (
	contosoDir     = "11111111-1111-4111-8111-111111111111"
	fabrikamDir    = "22222222-2222-4222-8222-222222222222"
	billingAccount = "BA-100"
	clientID       = "steward-test"
	clientSecret   = "s3cret"
)

// Three subscriptions: Contoso's two bill in USD, Fabrikam's in EUR.
const (
	subC1 = "c0000000-0000-4000-8000-000000000001"
	subC2 = "c0000000-0000-4000-8000-000000000002"
	subF1 = "f0000000-0000-4000-8000-000000000001"
)

// The Steward tenants of the two directories.
var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, BillingAccountID: billingAccount, IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", DirectoryTenantID: fabrikamDir, UseDelegation: true, IsActive: true}
)

// simNow is the simulator's clock at the start of a test.
var simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// backfillDays is the tests' backfill: long enough to cross a month.
const backfillDays = 60

func day(t time.Time) ledger.Day { return ledger.DayOf(t) }

// currencyOf is the currency a subscription bills in.
func currencyOf(sub string) string {
	if sub == subF1 {
		return "EUR"
	}
	return "USD"
}

// costWorld gives each subscription a cost for every day from 70 days
// before the clock's day to the day after it, for four services in two
// resource groups (8 rows a day), with amounts in fractions of a cent so
// that rounding to cents shows. Contoso's billing account has one
// reservation used on each of the last 100 days.
func costWorld() *world.World {
	ba := billingAccount
	w := &world.World{Tenants: []world.Tenant{
		{Name: "Contoso", DirectoryTenantID: contosoDir, BillingAccountID: &ba,
			Subscriptions: []world.Subscription{{ID: subC1, Name: "Contoso prod"}, {ID: subC2, Name: "Contoso dev"}}},
		{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Delegated: true,
			Subscriptions: []world.Subscription{{ID: subF1, Name: "Fabrikam prod"}}},
	}}
	for i, sub := range []string{subC1, subC2, subF1} {
		for d := -70; d <= 1; d++ {
			date := simNow.AddDate(0, 0, d).Format(time.DateOnly)
			for s := 0; s < 4; s++ {
				for rg := 0; rg < 2; rg++ {
					w.Costs = append(w.Costs, world.Cost{SubscriptionID: sub, Date: date,
						Service: fmt.Sprintf("Service %d", s), ResourceGroup: fmt.Sprintf("rg-%d", rg),
						Cost: float64((d+71)*(s+1)*7+rg*13+i) / 9, Currency: currencyOf(sub)})
				}
			}
		}
	}
	for d := -99; d <= 0; d++ {
		w.Reservations = append(w.Reservations, world.Reservation{BillingAccountID: billingAccount, ReservationID: "res-1", SKU: "Standard_D2s_v5",
			Date: simNow.AddDate(0, 0, d).Format(time.DateOnly), ReservedHours: 24, UsedHours: float64(12 + (d+99)%12)})
	}
	return w
}

// restate copies a world with fn applied to the copy's costs, as a
// provider that restates days serves different figures for them.
func restate(w *world.World, fn func(costs []world.Cost) []world.Cost) *world.World {
	c := *w
	c.Costs = fn(slices.Clone(w.Costs))
	return &c
}

// fixture is a simulated cloud serving a world, the cloud clients against
// it, a migrated ledger on a real database and a syncer whose host is the
// plugin test harness's Host service; the harness's plugin publishes the
// resource_costs dataset from the ledger.
type fixture struct {
	sim     *cloudsim.Sim
	clock   *simtest.Clock
	clients *cloud.Clients
	ledger  *ledger.Store
	syncer  *ingest.Syncer
	harness *plugintest.Harness
}

func start(tb testing.TB, dialect string, w *world.World, opts ...arm.Option) *fixture {
	tb.Helper()
	clock := simtest.NewClock(simNow)
	s, p := simtest.Start(tb, w, cloudsim.Options{Now: clock.Now}, simtest.Client(clientID, clientSecret))
	arm.Register(s, p, opts...)
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(context.Background(), db, ledger.Migrations(), "cost_migrations"); err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: s, clock: clock, ledger: &ledger.Store{DB: db}}
	f.syncer = &ingest.Syncer{Ledger: f.ledger, BackfillDays: backfillDays, Now: clock.Now}
	f.connect(tb)
	var tenants []sdk.Tenant
	for _, wt := range w.Tenants {
		for _, t := range []sdk.Tenant{contoso, fabrikam} {
			if t.DirectoryTenantID == wt.DirectoryTenantID {
				t.BillingAccountID = ""
				if wt.BillingAccountID != nil {
					t.BillingAccountID = *wt.BillingAccountID
				}
				tenants = append(tenants, t)
			}
		}
	}
	reads := &reports.Handlers{Store: &reports.Store{DB: db}}
	f.harness = plugintest.New(tb, sdk.Definition{Name: "cost"}, func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.syncer.Host = env.Host
		return &sdk.Plugin{
			Jobs:     []sdk.Job{{Name: "costs", JobType: "costs", DataDomain: "costs", Run: f.syncer.Run}},
			Datasets: []sdk.Dataset{reads.ResourceDataset()},
		}, nil
	}, plugintest.Options{Tenants: tenants})
	return f
}

// connect builds the cloud clients the syncer uses, as the plugin does
// when it is configured.
func (f *fixture) connect(tb testing.TB) {
	tb.Helper()
	clients, err := cloud.New(cloudConfig(f.sim))
	if err != nil {
		tb.Fatal(err)
	}
	f.clients = clients
	f.syncer.Cloud = clients
}

// cloudConfig reaches the simulator as the world's first tenant, retrying
// quickly.
func cloudConfig(sim *cloudsim.Sim) cloud.Config {
	return cloud.Config{
		Provider: cloud.ProviderSim, TenantID: sim.World().Tenants[0].DirectoryTenantID, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints:  cloud.Endpoints{Authority: sim.URLs[cloudsim.IdP], ResourceManager: sim.URLs[cloudsim.ARM], Graph: sim.URLs[cloudsim.Graph]},
		CAPEM:      sim.CAPEM,
		Retry:      cloud.Retry{MaxRetries: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second},
	}
}

// nextDay moves the simulator's clock on a day. The clients' cached
// tokens would be expired on the simulator's clock but not on the
// process's, so the clients are built again, as a plugin restarted the
// next day would be.
func (f *fixture) nextDay(tb testing.TB) {
	tb.Helper()
	f.clock.Advance(24 * time.Hour)
	f.connect(tb)
}

// run runs the costs job as the scheduler does.
func (f *fixture) run(tb testing.TB) (int64, []plugintest.Progress, error) {
	tb.Helper()
	return f.harness.RunJob(context.Background(), "costs")
}

// mustRun runs the job and fails the test if it fails.
func (f *fixture) mustRun(tb testing.TB) (int64, []plugintest.Progress) {
	tb.Helper()
	n, progress, err := f.run(tb)
	if err != nil {
		tb.Fatalf("costs job: %v", err)
	}
	return n, progress
}

// costQueries counts the Cost Management requests made for a
// subscription so far, every page and retry included.
func (f *fixture) costQueries(sub string) int {
	return f.sim.Faults.Hits(cloudsim.ARM, costPath(sub))
}

func costPath(sub string) string {
	return "/subscriptions/" + sub + "/providers/Microsoft.CostManagement/query"
}

// key is a cost row's natural key.
type key struct {
	Sub           string     `bun:"subscription_id"`
	Day           ledger.Day `bun:"day"`
	Service       string     `bun:"service"`
	ResourceGroup string     `bun:"resource_group"`
	Currency      string     `bun:"currency"`
}

// worldCosts is what the ledger should hold for the world's costs of the
// subscriptions from through to, computed from the world alone: each
// cost rounded to cents.
func worldCosts(w *world.World, from, to ledger.Day, subs ...string) map[key]ledger.Amount {
	out := map[key]ledger.Amount{}
	for _, c := range w.Costs {
		d, err := ledger.ParseDay(c.Date)
		if err != nil || d < from || d > to || !slices.Contains(subs, c.SubscriptionID) {
			continue
		}
		out[key{c.SubscriptionID, d, c.Service, c.ResourceGroup, c.Currency}] += ledger.AmountOf(c.Cost)
	}
	return out
}

// resourceKey is a cost_resource_daily row's natural key.
type resourceKey struct {
	Sub        string     `bun:"subscription_id"`
	Day        ledger.Day `bun:"day"`
	ResourceID string     `bun:"resource_id"`
	Service    string     `bun:"service"`
	Currency   string     `bun:"currency"`
}

// worldResourceDays is what the ledger should hold by resource for the
// world's costs of the subscriptions from through to: the costs of a
// resource (its id in lower case) and service on a day, summed, each cost
// rounded to cents as the cloud's query sums them.
func worldResourceDays(w *world.World, from, to ledger.Day, subs ...string) map[resourceKey]ledger.Amount {
	sums := map[resourceKey]float64{}
	for _, c := range w.Costs {
		d, err := ledger.ParseDay(c.Date)
		if err != nil || d < from || d > to || !slices.Contains(subs, c.SubscriptionID) {
			continue
		}
		sums[resourceKey{c.SubscriptionID, d, strings.ToLower(c.ResourceID), c.Service, c.Currency}] += c.Cost
	}
	out := make(map[resourceKey]ledger.Amount, len(sums))
	for k, v := range sums {
		out[k] = ledger.AmountOf(v)
	}
	return out
}

// storedResourceDays is cost_resource_daily, by natural key.
func (f *fixture) storedResourceDays(tb testing.TB) map[resourceKey]ledger.Amount {
	tb.Helper()
	var rows []struct {
		resourceKey
		Cost ledger.Amount `bun:"cost_cents"`
	}
	if err := f.ledger.DB.NewRaw(`SELECT subscription_id, day, resource_id, service, currency, cost_cents FROM cost_resource_daily`).
		Scan(context.Background(), &rows); err != nil {
		tb.Fatal(err)
	}
	out := make(map[resourceKey]ledger.Amount, len(rows))
	for _, r := range rows {
		out[r.resourceKey] = r.Cost
	}
	return out
}

// stored is cost_daily, by natural key.
func (f *fixture) stored(tb testing.TB) map[key]ledger.Amount {
	tb.Helper()
	var rows []struct {
		key
		Cost ledger.Amount `bun:"cost_cents"`
	}
	if err := f.ledger.DB.NewRaw(`SELECT subscription_id, day, service, resource_group, currency, cost_cents FROM cost_daily`).
		Scan(context.Background(), &rows); err != nil {
		tb.Fatal(err)
	}
	out := make(map[key]ledger.Amount, len(rows))
	for _, r := range rows {
		out[r.key] = r.Cost
	}
	return out
}

// sameCosts fails the test unless the ledger holds exactly want.
func sameCosts(tb testing.TB, got, want map[key]ledger.Amount) {
	tb.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			tb.Fatalf("%+v: stored %v (%v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		tb.Fatalf("ledger holds %d rows, want %d", len(got), len(want))
	}
}

// totals sums cents per tenant and currency three ways — the raw rows,
// the service rollup and the tenant rollup — and fails the test unless
// they agree.
func (f *fixture) totals(tb testing.TB) map[string]ledger.Amount {
	tb.Helper()
	var out map[string]ledger.Amount
	for _, table := range []string{"cost_daily", "cost_service_daily", "cost_tenant_daily"} {
		var rows []struct {
			TenantID string        `bun:"tenant_id"`
			Currency string        `bun:"currency"`
			Cost     ledger.Amount `bun:"cost_cents"`
		}
		if err := f.ledger.DB.NewRaw(`SELECT tenant_id, currency, SUM(cost_cents) AS cost_cents FROM `+table+` GROUP BY tenant_id, currency`).
			Scan(context.Background(), &rows); err != nil {
			tb.Fatal(err)
		}
		m := map[string]ledger.Amount{}
		for _, r := range rows {
			m[r.TenantID+" "+r.Currency] = r.Cost
		}
		if out == nil {
			out = m
			continue
		}
		if fmt.Sprint(m) != fmt.Sprint(out) {
			tb.Fatalf("%s sums to %v, cost_daily to %v", table, m, out)
		}
	}
	return out
}

// sumByTenant sums a ledger's expected rows per tenant and currency.
func sumByTenant(rows map[key]ledger.Amount) map[string]ledger.Amount {
	out := map[string]ledger.Amount{}
	for k, v := range rows {
		tenant := contoso.ID
		if k.Sub == subF1 {
			tenant = fabrikam.ID
		}
		out[tenant+" "+k.Currency] += v
	}
	return out
}

// freshTenants lists the tenants marked fresh for costs, in order, from
// the mark at index from on.
func (f *fixture) freshTenants(from int) []string { return f.costMarks(from, false) }

// failedTenants lists the tenants whose costs sync was reported failed.
func (f *fixture) failedTenants(from int) []string { return f.costMarks(from, true) }

func (f *fixture) costMarks(from int, failed bool) []string {
	var out []string
	for _, m := range f.harness.FreshMarks()[from:] {
		if m.Domain == "costs" && (m.Failure != "") == failed {
			out = append(out, m.TenantID)
		}
	}
	return out
}
