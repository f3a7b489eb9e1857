package domains_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	contosoDir   = "11111111-1111-4111-8111-111111111111"
	fabrikamDir  = "22222222-2222-4222-8222-222222222222"
	clientID     = "steward-test"
	clientSecret = "s3cret"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", DirectoryTenantID: fabrikamDir, IsActive: true}
)

// simNow is the simulator's clock at the start of a test.
var simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// dkimKey is a DKIM key record of a real 2048-bit RSA key.
var dkimKey = sync.OnceValue(func() string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		panic(err)
	}
	return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
})

func txt(name, value string) world.DNSRecord {
	return world.DNSRecord{Name: name, Type: "TXT", Value: value}
}
func cname(name, value string) world.DNSRecord {
	return world.DNSRecord{Name: name, Type: "CNAME", Value: value}
}

// strongDNS is strong.example's records: DMARC p=reject with reports,
// SPF ending -all with one include, DKIM keys at both selectors and at
// k1, which no domain is checked for unless it is given.
func strongDNS() []world.DNSRecord {
	return []world.DNSRecord{
		txt("_dmarc.strong.example", "v=DMARC1; p=reject; rua=mailto:dmarc@strong.example"),
		txt("strong.example", "v=spf1 include:_spf.strong.example -all"),
		txt("_spf.strong.example", "v=spf1 ip4:192.0.2.0/24 -all"),
		txt("selector1._domainkey.strong.example", dkimKey()),
		txt("selector2._domainkey.strong.example", dkimKey()),
		txt("k1._domainkey.strong.example", dkimKey()),
	}
}

// postureWorld: Contoso has strong.example (DMARC p=reject, SPF -all,
// DKIM at both selectors) and weak.example (p=none, SPF ~all, no DKIM);
// Fabrikam has missing.example (no records at all) and broken.example,
// whose DMARC name is a CNAME loop the server answers SERVFAIL.
func postureWorld() *world.World {
	w := &world.World{Tenants: []world.Tenant{
		{Name: "Contoso", DirectoryTenantID: contosoDir, Domains: []string{"strong.example", "weak.example"}},
		{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Domains: []string{"missing.example", "broken.example"}},
	}}
	w.DNS = append(strongDNS(),
		txt("_dmarc.weak.example", "v=DMARC1; p=none"),
		txt("weak.example", "v=spf1 ip4:192.0.2.10 ~all"),
		txt("broken.example", "v=spf1 -all"),
		cname("_dmarc.broken.example", "loop._dmarc.broken.example"),
		cname("loop._dmarc.broken.example", "_dmarc.broken.example"),
	)
	return w
}

// weakened is the world after strong.example's DMARC policy is relaxed to
// none (its subdomains' kept at reject), its selector2 key removed and its SPF grown past ten lookups.
func weakened(w *world.World) *world.World {
	out := *w
	out.DNS = nil
	for _, r := range w.DNS {
		switch r.Name {
		case "_dmarc.strong.example":
			r.Value = "v=DMARC1; p=none; sp=reject; rua=mailto:dmarc@strong.example"
		case "selector2._domainkey.strong.example":
			continue
		case "strong.example":
			var includes []string
			for i := range 11 {
				includes = append(includes, fmt.Sprintf("include:_spf%d.strong.example", i))
				out.DNS = append(out.DNS, txt(fmt.Sprintf("_spf%d.strong.example", i), "v=spf1 ip4:192.0.2.0/24 -all"))
			}
			r.Value = "v=spf1 " + strings.Join(includes, " ") + " -all"
		}
		out.DNS = append(out.DNS, r)
	}
	return &out
}

// fixture is a simulated cloud and DNS serving a world, a migrated store
// on a real database and the plugin's sync and routes in the plugin test
// harness.
type fixture struct {
	sim      *cloudsim.Sim
	clock    *simtest.Clock
	store    *domains.Store
	syncer   *domains.Syncer
	handlers *domains.Handlers
	harness  *plugintest.Harness
}

func start(tb testing.TB, dialect string, w *world.World) *fixture {
	tb.Helper()
	clock := simtest.NewClock(simNow)
	s, p := simtest.Start(tb, w, cloudsim.Options{Now: clock.Now}, simtest.Client(clientID, clientSecret))
	simgraph.Register(s, p)
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(context.Background(), db, domains.Migrations(), "dmarc_migrations"); err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: s, clock: clock, store: &domains.Store{DB: db}}
	selectors := []string{"selector1", "selector2"}
	f.syncer = &domains.Syncer{Store: f.store, Now: clock.Now, Selectors: selectors, Concurrency: 2, CheckTimeout: 10 * time.Second}
	f.handlers = &domains.Handlers{Store: f.store, Now: clock.Now, Selectors: selectors}
	f.serveDNS(tb, w)
	f.connect(tb)
	pl := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.syncer.Host, f.handlers.Host = env.Host, env.Host
		return &sdk.Plugin{Routes: slices.Concat(f.handlers.Routes(), f.handlers.DetailRoutes()), Fragments: f.handlers.Fragments(), Datasets: []sdk.Dataset{f.handlers.Dataset()},
			Events: []sdk.EventType{domains.EventType},
			Jobs:   []sdk.Job{{Name: "dmarc", JobType: "dmarc", DataDomain: "dmarc", Run: f.syncer.Run}}}, nil
	}
	f.harness = plugintest.New(tb, sdk.Definition{Name: "dmarc"}, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}})
	return f
}

// connect builds the Graph clients, as the plugin does when configured;
// once the clock has moved past the tokens' lifetime they are built
// again, as the cached tokens are expired on the simulator's clock.
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
	f.syncer.Graph = func(dir string) domains.Graph { return clients.Graph(dir) }
}

// advance moves the clock on, past the tokens' lifetime.
func (f *fixture) advance(tb testing.TB, d time.Duration) {
	tb.Helper()
	f.clock.Advance(d)
	f.connect(tb)
}

// serveDNS points the sync's resolver at a simulated DNS server of w;
// the server reads its records once, so a changed world gets a new one.
func (f *fixture) serveDNS(tb testing.TB, w *world.World) {
	tb.Helper()
	srv, err := simdns.Start(w, "", nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	f.syncer.Resolver = cloud.NewResolver(srv.Addr())
}

func (f *fixture) mustRun(tb testing.TB) (int64, []plugintest.Progress) {
	tb.Helper()
	n, progress, err := f.harness.RunJob(context.Background(), "dmarc")
	if err != nil {
		tb.Fatalf("dmarc job: %v", err)
	}
	return n, progress
}

func (f *fixture) domain(tb testing.TB, name string) domains.Domain {
	tb.Helper()
	var d domains.Domain
	if err := f.store.DB.NewSelect().Model(&d).Where("domain = ?", name).Scan(context.Background()); err != nil {
		tb.Fatalf("domain %s: %v", name, err)
	}
	return d
}

func each(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}
