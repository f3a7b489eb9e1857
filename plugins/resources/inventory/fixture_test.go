package inventory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
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
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The world's two directories: Contoso's is the managing tenant Steward
// signs in to; Fabrikam delegates to it.
const (
	contosoDir   = "11111111-1111-4111-8111-111111111111"
	fabrikamDir  = "22222222-2222-4222-8222-222222222222"
	clientID     = "steward-test"
	clientSecret = "s3cret"
)

const (
	subC1 = "c0000000-0000-4000-8000-000000000001"
	subC2 = "c0000000-0000-4000-8000-000000000002"
	subF1 = "f0000000-0000-4000-8000-000000000001"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", DirectoryTenantID: fabrikamDir, UseDelegation: true, IsActive: true}
)

var simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// requiredTags are the plugin's required_tags in the tests.
var requiredTags = []string{"env", "owner"}

// armID is a resource's ARM id.
func armID(sub, group, typ, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", sub, group, typ, name)
}

func res(sub, group, typ, name, location string, tags map[string]string, props map[string]any) world.Resource {
	return world.Resource{SubscriptionID: sub, ID: armID(sub, group, typ, name), Name: name, Type: typ, Location: location, Tags: tags, Properties: props}
}

// The known resources of inventoryWorld.
var (
	vm1   = res(subC1, "rg-app", "Microsoft.Compute/virtualMachines", "vm-1", "eastus", map[string]string{"env": "prod", "owner": "alice"}, map[string]any{"hardwareProfile": map[string]any{"vmSize": "Standard_D2s_v5"}})
	disk1 = res(subC1, "rg-app", "Microsoft.Compute/disks", "disk-1", "eastus", map[string]string{"env": "prod"}, map[string]any{"diskState": "Attached", "diskSizeGB": 64.0})
	disk2 = res(subC1, "rg-app", "Microsoft.Compute/disks", "disk-2", "eastus", nil, map[string]any{"diskState": "Unattached", "diskSizeGB": 128.0})
	pip1  = res(subC1, "rg-app", "Microsoft.Network/publicIPAddresses", "pip-1", "eastus", map[string]string{"env": "prod"}, map[string]any{"ipAddress": "20.1.2.3"})
	nic1  = res(subC1, "rg-app", "Microsoft.Network/networkInterfaces", "nic-1", "eastus", map[string]string{"env": "prod", "owner": "alice"},
		map[string]any{"virtualMachine": map[string]any{"id": armID(subC1, "rg-app", "Microsoft.Compute/virtualMachines", "vm-1")}})
	nic2 = res(subC1, "rg-app", "Microsoft.Network/networkInterfaces", "nic-2", "eastus", nil, map[string]any{})
	st1  = res(subC2, "rg-data", "Microsoft.Storage/storageAccounts", "st1", "westeurope", map[string]string{"env": "dev"}, map[string]any{"sku": map[string]any{"name": "Standard_LRS"}})
	vmF  = res(subF1, "rg-f", "Microsoft.Compute/virtualMachines", "vm-f", "westeurope", map[string]string{"env": "prod", "owner": "fabrikam"}, map[string]any{})
	// Resource groups, as Resource Graph lists them beside resources.
	rgApp   = group(subC1, "rg-app", "eastus", map[string]string{"env": "prod", "owner": "ops"})
	rgEmpty = group(subC2, "rg-empty", "westeurope", nil)
)

func group(sub, name, location string, tags map[string]string) world.Resource {
	return world.Resource{SubscriptionID: sub, ID: fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", sub, name), Name: name,
		Type: "Microsoft.Resources/subscriptions/resourceGroups", Location: location, Tags: tags, Properties: map[string]any{"provisioningState": "Succeeded"}}
}

// inventoryWorld holds ten known resources: seven in Contoso's first
// subscription (its resource group among them), a storage account and an
// empty resource group in its second, and a VM of Fabrikam's. Contoso's
// orphans are disk-2 (unattached), pip-1 (no IP configuration), nic-2 (no
// VM) and rg-empty.
func inventoryWorld() *world.World {
	return &world.World{
		Tenants: []world.Tenant{
			{Name: "Contoso", DirectoryTenantID: contosoDir,
				Subscriptions: []world.Subscription{{ID: subC1, Name: "Contoso prod"}, {ID: subC2, Name: "Contoso dev"}}},
			{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Delegated: true,
				Subscriptions: []world.Subscription{{ID: subF1, Name: "Fabrikam prod"}}},
		},
		Resources: []world.Resource{vm1, disk1, disk2, pip1, nic1, nic2, rgApp, st1, rgEmpty, vmF},
	}
}

// withResources copies a world with other resources.
func withResources(w *world.World, rs []world.Resource) *world.World {
	c := *w
	c.Resources = rs
	return &c
}

// clone copies a resource with its own tags and properties.
func clone(r world.Resource) world.Resource {
	r.Tags = maps.Clone(r.Tags)
	r.Properties = maps.Clone(r.Properties)
	return r
}

type fixture struct {
	sim     *cloudsim.Sim
	clock   *simtest.Clock
	clients *cloud.Clients
	store   *inventory.Store
	syncer  *inventory.Syncer
	harness *plugintest.Harness
	// host is the harness's Host service as the plugin sees it.
	host *sdk.Host
}

func start(tb testing.TB, dialect string, w *world.World) *fixture {
	tb.Helper()
	return startWith(tb, dialect, w, nil)
}

// startWith starts the fixture with the datasets other plugins publish
// (none when nil).
func startWith(tb testing.TB, dialect string, w *world.World, datasets map[string][]json.RawMessage) *fixture {
	tb.Helper()
	clock := simtest.NewClock(simNow)
	s, p := simtest.Start(tb, w, cloudsim.Options{Now: clock.Now}, simtest.Client(clientID, clientSecret))
	arm.Register(s, p)
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(context.Background(), db, inventory.Migrations(), "resources_migrations"); err != nil {
		tb.Fatal(err)
	}
	clients, err := cloud.New(cloud.Config{
		Provider: cloud.ProviderSim, TenantID: contosoDir, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints:  cloud.Endpoints{Authority: s.URLs[cloudsim.IdP], ResourceManager: s.URLs[cloudsim.ARM], Graph: s.URLs[cloudsim.Graph]},
		CAPEM:      s.CAPEM,
		Retry:      cloud.Retry{MaxRetries: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second},
	})
	if err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: s, clock: clock, clients: clients, store: &inventory.Store{DB: db}}
	f.syncer = &inventory.Syncer{Cloud: clients, Store: f.store, Now: clock.Now}
	handlers := &inventory.Handlers{Store: f.store, RequiredTags: requiredTags}
	f.harness = plugintest.New(tb, sdk.Definition{Name: "resources"}, func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.syncer.Host = env.Host
		handlers.Host, f.host = env.Host, env.Host
		return &sdk.Plugin{
			Routes:   handlers.Routes(),
			Pages:    handlers.Pages(),
			Datasets: []sdk.Dataset{f.store.Dataset()},
			Jobs:     []sdk.Job{{Name: "inventory", JobType: "resources", DataDomain: "resources", Run: f.syncer.Run}},
		}, nil
	}, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}, Datasets: datasets})
	return f
}

func (f *fixture) run(tb testing.TB) (int64, error) {
	tb.Helper()
	n, _, err := f.harness.RunJob(context.Background(), "inventory")
	return n, err
}

func (f *fixture) mustRun(tb testing.TB) int64 {
	tb.Helper()
	n, err := f.run(tb)
	if err != nil {
		tb.Fatalf("inventory job: %v", err)
	}
	return n
}

// event is a lifecycle event as the tests compare them.
type event struct {
	Tenant, Name, Kind string
	Fields             []string
}

// eventsSince returns the events recorded after the first skip ones.
func (f *fixture) eventsSince(tb testing.TB, skip int) []event {
	tb.Helper()
	all, _, err := f.store.EventFeed(context.Background(), inventory.EventQuery{TenantIDs: allTenants, Limit: 100_000})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Reverse(all)
	var out []event
	for _, e := range all[skip:] {
		out = append(out, event{e.TenantID, e.Name, e.Kind, e.ChangedFields()})
	}
	slices.SortFunc(out, func(a, b event) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// stored returns the tenants' stored resources.
func (f *fixture) stored(tb testing.TB, tenants ...string) []inventory.Resource {
	tb.Helper()
	out, _, err := f.store.List(context.Background(), inventory.ListQuery{TenantIDs: tenants, Limit: 100_000})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// allTenants are both tenants' ids.
var allTenants = []string{contoso.ID, fabrikam.ID}

// section renders the inventory's part of the resources page for target,
// its parameters bound by the SDK's view binding as the page binds them;
// a parameter the binding refuses comes back as its problem.
func section(h *inventory.Handlers, target string, tenants ...string) (string, error) {
	var html template.HTML
	var err error
	view := sdk.View(func(_ http.ResponseWriter, r *http.Request, in *inventory.PageQuery) {
		html, err = h.Section(r, tenants, in, "/resources")
	})
	rec := httptest.NewRecorder()
	view(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != http.StatusOK {
		var p sdk.Problem
		if jerr := json.Unmarshal(rec.Body.Bytes(), &p); jerr != nil {
			return "", jerr
		}
		return "", &p
	}
	return string(html), err
}
