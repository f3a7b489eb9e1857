package budgets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	tenantA   = "aaaaaaaa-0000-4000-8000-00000000000a"
	tenantB   = "bbbbbbbb-0000-4000-8000-00000000000b"
	dirA      = "11111111-1111-4111-8111-111111111111"
	dirB      = "22222222-2222-4222-8222-222222222222"
	subA      = "00000000-0000-4000-8000-0000000000a1"
	subA2     = "00000000-0000-4000-8000-0000000000a2"
	subB      = "00000000-0000-4000-8000-0000000000b1"
	clientID  = "steward-test-app"
	secret    = "s3cret"
	budgetsAt = "/api/v1/budgets"
)

var (
	// simNow is the clock both the simulator and the evaluator read.
	simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)
	admin  = sdk.Principal{ID: "admin-1", Email: "admin@example.com", IsAdmin: true, Kind: "user", TenantIDs: []string{tenantA, tenantB}}
	userA  = sdk.Principal{ID: "user-a", Email: "a@brand-a.example", Kind: "user", TenantIDs: []string{tenantA}}
)

// fixture is the budget routes served through the plugin protocol on a
// real database of one dialect, with the simulated cloud behind them.
type fixture struct {
	t       *testing.T
	h       *plugintest.Harness
	ledger  *ledger.Store
	clock   *simtest.Clock
	clients *cloud.Clients
	sim     *cloudsim.Sim
	eval    *budgets.Evaluator
	world   *world.World
}

// testWorld has tenant A (two subscriptions) and tenant B (one,
// delegated), and USD costs of 10.00 a day in December for subA.
func testWorld() *world.World {
	w := &world.World{Tenants: []world.Tenant{
		{Name: "Brand A", DirectoryTenantID: dirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}, {ID: subA2, Name: "A dev"}}},
		{Name: "Brand B", DirectoryTenantID: dirB, Delegated: true, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}},
	}}
	for d := 1; d <= 15; d++ {
		w.Costs = append(w.Costs, world.Cost{SubscriptionID: subA, Date: fmt.Sprintf("2026-12-%02d", d), Service: "VM", ResourceGroup: "rg", Cost: 10, Currency: "USD"})
	}
	return w
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, ledger.Migrations(), "cost_migrations"); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ledger: &ledger.Store{DB: db}, clock: simtest.NewClock(simNow), world: testWorld()}
	s, p := simtest.Start(t, f.world, cloudsim.Options{Now: f.clock.Now}, simtest.Client(clientID, secret))
	arm.Register(s, p)
	clients, err := cloud.New(cloud.Config{Provider: cloud.ProviderSim, TenantID: dirA, ClientID: clientID, ClientSecret: secret,
		Credential: cloud.CredentialClientSecret, CAPEM: s.CAPEM,
		Endpoints: cloud.Endpoints{Authority: s.URLs[cloudsim.IdP], ResourceManager: s.URLs[cloudsim.ARM], Graph: s.URLs[cloudsim.Graph]},
		Retry:     cloud.Retry{MaxRetries: 1, Delay: 10 * time.Millisecond, MaxDelay: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	f.clients, f.sim = clients, s
	st := budgets.NewStore(db)
	f.eval = &budgets.Evaluator{Store: st, Now: f.clock.Now}
	handlers := &budgets.Handlers{}
	plugin := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.eval.Host, f.eval.Logger = env.Host, env.Logger
		*handlers = budgets.Handlers{Store: st, Evaluator: f.eval, Host: env.Host, Logger: env.Logger,
			Syncer: &budgets.Syncer{Store: st, Cloud: clients, Host: env.Host, Evaluator: f.eval}}
		return &sdk.Plugin{Routes: handlers.Routes(), Events: []sdk.EventType{budgets.EventType}}, nil
	}
	f.h = plugintest.New(t, sdk.Definition{Name: "cost"}, plugin, plugintest.Options{Tenants: []sdk.Tenant{
		{ID: tenantA, Name: "Brand A", DirectoryTenantID: dirA, SubscriptionID: subA, IsActive: true},
		{ID: tenantB, Name: "Brand B", DirectoryTenantID: dirB, SubscriptionID: subB, IsActive: true},
	}})
	return f
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %d %s: %v", r.status, r.body, err)
	}
}

func (f *fixture) do(p sdk.Principal, method, path string, body any) response {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = strings.NewReader(string(raw))
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := f.h.Do(req, p)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

// want fails the test unless the response has the status.
func (r response) want(t *testing.T, what string, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
	return r
}

// wantInvalid fails the test unless the response is a 422 naming loc.
func (r response) wantInvalid(t *testing.T, what, loc string) {
	t.Helper()
	if r.status != http.StatusUnprocessableEntity {
		t.Errorf("%s: %d %s, want 422 naming %s", what, r.status, r.body, loc)
		return
	}
	var p sdk.Problem
	r.decode(t, &p)
	for _, e := range p.Errors {
		if e.Location == loc {
			return
		}
	}
	t.Errorf("%s: 422 does not name %s: %s", what, loc, r.body)
}

// budgetBody is a valid create body for tenant A, changed by the options.
func budgetBody(name string, change ...func(map[string]any)) map[string]any {
	b := map[string]any{
		"tenant_id": tenantA, "name": name, "amount": 1000, "time_grain": "Monthly", "start_date": "2026-01-01",
		"thresholds": []any{map[string]any{"percentage": 80, "contact_emails": []string{"finops@brand-a.example"}}},
	}
	for _, c := range change {
		c(b)
	}
	return b
}

// create creates a budget a minute after the last, so that creation
// orders them.
func (f *fixture) create(p sdk.Principal, body map[string]any) budgets.Detail {
	f.t.Helper()
	f.clock.Advance(time.Minute)
	var d budgets.Detail
	f.do(p, http.MethodPost, budgetsAt, body).want(f.t, "create", http.StatusCreated).decode(f.t, &d)
	return d
}

// costs writes a day's cost of a subscription of a tenant to the ledger,
// with its rollups, and evaluates the tenant's budgets as a sync would.
func (f *fixture) costs(tenant, sub, date string, cost float64, currency string) {
	f.t.Helper()
	ctx := context.Background()
	day, err := ledger.ParseDay(date)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.ledger.Upsert(ctx, []ledger.Cost{{SubscriptionID: sub, Day: day, Service: "VM", ResourceGroup: "rg", Currency: currency, TenantID: tenant, Cost: ledger.AmountOf(cost)}}); err != nil {
		f.t.Fatal(err)
	}
	if err := f.ledger.Rollup(ctx, tenant, day, day); err != nil {
		f.t.Fatal(err)
	}
	if err := f.eval.Evaluate(ctx, sdk.Tenant{ID: tenant}, day, day); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(p sdk.Principal, id string) budgets.Detail {
	f.t.Helper()
	var d budgets.Detail
	f.do(p, http.MethodGet, budgetsAt+"/"+id, nil).want(f.t, "get "+id, http.StatusOK).decode(f.t, &d)
	return d
}

// audited returns the actions audited so far.
func (f *fixture) audited() []string {
	var out []string
	for _, e := range f.h.AuditEntries() {
		out = append(out, e.Action+" "+e.TenantID+" "+e.ResourceID)
	}
	return out
}

func eachDialect(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, newFixture(t, dialect)) })
	}
}
