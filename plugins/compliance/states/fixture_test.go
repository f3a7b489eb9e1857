package states_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	contosoDir   = "11111111-1111-4111-8111-111111111111"
	fabrikamDir  = "22222222-2222-4222-8222-222222222222"
	clientID     = "steward-test"
	clientSecret = "s3cret"

	subC1 = "c0000000-0000-4000-8000-000000000001"
	subC2 = "c0000000-0000-4000-8000-000000000002"
	subF1 = "f0000000-0000-4000-8000-000000000001"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", DirectoryTenantID: fabrikamDir, UseDelegation: true, IsActive: true}

	admin     = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}
)

// simNow is the simulator's clock at the start of a test.
var simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// The world's four policies.
var (
	p1 = policy{id: def(1), name: "Storage accounts should use private link", category: "Storage", severity: "High", groups: []string{"SOC_2_CC6.1"}}
	// p2 has no severity in its metadata: Key Vault makes it High.
	p2 = policy{id: def(2), name: "Key vaults should have soft delete enabled", category: "Key Vault"}
	// p3 has none either: Tags makes it Low.
	p3 = policy{id: def(3), name: "Require a tag on resources", category: "Tags"}
	p4 = policy{id: def(4), name: "Audit VMs without disaster recovery", category: "Compute", severity: "medium"}
)

type policy struct {
	id, name, category, severity string
	groups                       []string
}

func def(n int) string {
	return fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/00000000-0000-4000-8000-%012d", n)
}

func resource(sub, typ, name string) string {
	return "/subscriptions/" + sub + "/resourceGroups/rg/providers/" + typ + "/" + name
}

var (
	r1 = resource(subC1, "Microsoft.Storage/storageAccounts", "sa1")
	r2 = resource(subC1, "Microsoft.KeyVault/vaults", "kv1")
	r3 = resource(subC1, "Microsoft.Compute/virtualMachines", "vm1")
	r4 = resource(subC2, "Microsoft.Storage/storageAccounts", "sa2")
	r5 = resource(subC2, "Microsoft.Compute/virtualMachines", "vm2")
	r6 = resource(subF1, "Microsoft.Storage/storageAccounts", "sa3")
	r7 = resource(subF1, "Microsoft.Compute/virtualMachines", "vm3")
	r8 = resource(subF1, "Microsoft.Storage/storageAccounts", "sa4")
)

func state(sub string, p policy, res, compliance string) world.PolicyState {
	return world.PolicyState{SubscriptionID: sub, PolicyDefinitionID: p.id, PolicyName: p.name, Category: p.category, GroupNames: p.groups,
		ComplianceState: compliance, ResourceID: res, Severity: p.severity, Timestamp: simNow.Add(-time.Hour).Format(time.RFC3339)}
}

// complianceWorld has known figures:
//
//	Contoso (two subscriptions): r1 and r2 non-compliant, r3 and r4
//	compliant (r4 by exemption), r5 only Unknown: 2 of 4, 50 %; policies
//	p1, p2 and p3 non-compliant, p4 compliant; 9 states.
//	Fabrikam: r6 non-compliant, r7 and r8 compliant: 66.67 %; p1
//	non-compliant, p4 compliant; 3 states.
//	Both: 4 of 7 resources, 57.14 %; p1 (2 resources, High), p2 (1, High)
//	and p3 (1, Low) non-compliant, p4 compliant.
func complianceWorld() *world.World {
	return &world.World{
		Tenants: []world.Tenant{
			{Name: "Contoso", DirectoryTenantID: contosoDir, Subscriptions: []world.Subscription{{ID: subC1, Name: "Contoso prod"}, {ID: subC2, Name: "Contoso dev"}}},
			{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Delegated: true, Subscriptions: []world.Subscription{{ID: subF1, Name: "Fabrikam prod"}}},
		},
		PolicyStates: []world.PolicyState{
			state(subC1, p1, r1, "NonCompliant"), state(subC1, p3, r1, "Compliant"),
			state(subC1, p2, r2, "NonCompliant"), state(subC1, p3, r2, "noncompliant"),
			state(subC1, p4, r3, "Compliant"), state(subC1, p3, r3, "Compliant"),
			state(subC2, p1, r4, "Compliant"), state(subC2, p3, r4, "Exempt"),
			state(subC2, p4, r5, "Unknown"),
			state(subF1, p1, r6, "NonCompliant"), state(subF1, p4, r7, "Compliant"), state(subF1, p1, r8, "Compliant"),
		},
	}
}

// withStates copies a world with fn applied to the copy's policy states.
func withStates(w *world.World, fn func([]world.PolicyState) []world.PolicyState) *world.World {
	c := *w
	c.PolicyStates = fn(slices.Clone(w.PolicyStates))
	return &c
}

// fixture is a simulated cloud serving a world, a migrated store on a
// real database, and the sync and reads as a plugin under the test
// harness.
type fixture struct {
	sim      *cloudsim.Sim
	clock    *simtest.Clock
	clients  *cloud.Clients
	store    *states.Store
	syncer   *states.Syncer
	handlers *states.Handlers
	harness  *plugintest.Harness
}

func start(tb testing.TB, dialect string, w *world.World) *fixture {
	tb.Helper()
	clock := simtest.NewClock(simNow)
	s, p := simtest.Start(tb, w, cloudsim.Options{Now: clock.Now}, simtest.Client(clientID, clientSecret))
	arm.Register(s, p)
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(context.Background(), db, states.Migrations(), "compliance_migrations"); err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: s, clock: clock, store: &states.Store{DB: db}}
	f.syncer = &states.Syncer{Store: f.store, Now: clock.Now}
	f.handlers = &states.Handlers{Store: f.store, Now: clock.Now}
	f.connect(tb)
	pl := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.syncer.Host, f.handlers.Host = env.Host, env.Host
		return &sdk.Plugin{Routes: f.handlers.Routes(), Datasets: []sdk.Dataset{f.handlers.Dataset(), f.handlers.ResourceStatesDataset()},
			Jobs: []sdk.Job{{Name: "compliance", JobType: states.Domain, DataDomain: states.Domain, Run: f.syncer.Run}}}, nil
	}
	f.harness = plugintest.New(tb, sdk.Definition{Name: "compliance"}, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}})
	return f
}

// connect builds the cloud clients, as the plugin does when configured;
// after the clock moves on, the cached tokens would be expired on the
// simulator's clock, so they are built again.
func (f *fixture) connect(tb testing.TB) {
	tb.Helper()
	clients, err := cloud.New(cloud.Config{
		Provider: cloud.ProviderSim, TenantID: contosoDir, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints:  cloud.Endpoints{Authority: f.sim.URLs[cloudsim.IdP], ResourceManager: f.sim.URLs[cloudsim.ARM], Graph: f.sim.URLs[cloudsim.Graph]},
		CAPEM:      f.sim.CAPEM,
		Retry:      cloud.Retry{MaxRetries: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second},
	})
	if err != nil {
		tb.Fatal(err)
	}
	f.clients = clients
	f.syncer.Cloud = clients
}

// advance moves the simulator's clock on.
func (f *fixture) advance(tb testing.TB, d time.Duration) {
	tb.Helper()
	f.clock.Advance(d)
	f.connect(tb)
}

func (f *fixture) run(tb testing.TB) (int64, error) {
	tb.Helper()
	n, _, err := f.harness.RunJob(context.Background(), "compliance")
	return n, err
}

func (f *fixture) mustRun(tb testing.TB) int64 {
	tb.Helper()
	n, err := f.run(tb)
	if err != nil {
		tb.Fatalf("compliance job: %v", err)
	}
	return n
}

// freshTenants lists the tenants marked fresh, not failed, from the mark
// at index from on.
func (f *fixture) freshTenants(from int) []string {
	var out []string
	for _, m := range f.harness.FreshMarks()[from:] {
		if m.Domain == states.Domain && m.Failure == "" {
			out = append(out, m.TenantID)
		}
	}
	return out
}

// storedRow is a stored state with its subscription and tenant.
type storedRow struct {
	TenantID        string `bun:"tenant_id"`
	SubscriptionID  string `bun:"subscription_id"`
	ResourceID      string `bun:"resource_id"`
	ResourceType    string `bun:"resource_type"`
	AssignmentID    string `bun:"policy_assignment_id"`
	DefinitionID    string `bun:"policy_definition_id"`
	PolicyName      string `bun:"policy_name"`
	Category        string `bun:"category"`
	GroupNames      string `bun:"group_names"`
	ComplianceState string `bun:"compliance_state"`
	Severity        string `bun:"severity"`
	EvaluatedUnix   int64  `bun:"evaluated_unix"`
}

// stored is every stored state, in a fixed order.
func (f *fixture) stored(tb testing.TB) []storedRow {
	tb.Helper()
	var rows []storedRow
	err := f.store.DB.NewSelect().Table("compliance_policy_states").
		Column("tenant_id", "subscription_id", "resource_id", "resource_type", "policy_assignment_id", "policy_definition_id",
			"policy_name", "category", "group_names", "compliance_state", "severity", "evaluated_unix").
		Order("subscription_id", "resource_id", "policy_definition_id").Scan(context.Background(), &rows)
	if err != nil {
		tb.Fatal(err)
	}
	return rows
}

func (f *fixture) do(t *testing.T, target string, p sdk.Principal) (*http.Response, []byte) {
	t.Helper()
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// get reads a 200 answer into v and returns its headers.
func (f *fixture) get(t *testing.T, target string, p sdk.Principal, v any) http.Header {
	t.Helper()
	resp, body := f.do(t, target, p)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
	return resp.Header
}

func each(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}

// putStates replaces the states of the tenant's subscription in s with
// list, synced at simNow, failing the test on an error.
func putStates(t *testing.T, s *states.Store, tenant, sub string, list ...states.State) {
	t.Helper()
	_, err := s.Replace(context.Background(), states.Target{TenantID: tenant, SubscriptionID: sub, SyncedAt: simNow}, func(emit func(states.State) error) error {
		for _, v := range list {
			if err := emit(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
