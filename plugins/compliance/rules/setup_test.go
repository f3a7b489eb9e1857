package rules_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/rules"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	tenantA = "aaaaaaaa-0000-4000-8000-00000000000a"
	tenantB = "bbbbbbbb-0000-4000-8000-00000000000b"
	rulesAt = "/api/v1/compliance/rules"
	diskArm = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/disks/"
)

var (
	admin = sdk.Principal{ID: "admin-1", Email: "admin@example.com", IsAdmin: true, Kind: "user", TenantIDs: []string{tenantA, tenantB}}
	userA = sdk.Principal{ID: "user-a", Email: "a@brand-a.example", Kind: "user", TenantIDs: []string{tenantA}}
	userB = sdk.Principal{ID: "user-b", Email: "b@brand-b.example", Kind: "user", TenantIDs: []string{tenantB}}
)

// clock is a settable time the handlers read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is the rule routes served through the plugin protocol on a
// real database of one dialect, reading the other plugins' datasets
// through the harness's host.
type fixture struct {
	t     *testing.T
	h     *plugintest.Harness
	db    *bun.DB
	store *rules.Store
	eval  *rules.Evaluator
	clock *clock
}

// disk is a record of the resources dataset, as the inventory publishes it.
func disk(tenant, name, encryption string, tags map[string]string) json.RawMessage {
	tagJSON, _ := json.Marshal(tags)
	props, _ := json.Marshal(map[string]any{"encryption": map[string]any{"type": encryption}, "diskSizeGB": 128})
	raw, err := json.Marshal(inventory.Record{TenantID: tenant, SubscriptionID: "s1", ID: inventory.UID(diskArm + name), ResourceID: diskArm + name,
		Name: name, Type: "microsoft.compute/disks", Location: "westeurope", ResourceGroup: "rg", SKU: "Premium_LRS",
		Tags: tagJSON, Properties: props, FirstSeen: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), LastSeen: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		panic(err)
	}
	return raw
}

func pct(v float64) *float64 { return &v }

// datasets are tenant A's three disks (one compliant) and a VM, tenant
// B's disk, and both tenants' MFA figures.
func datasets() map[string][]json.RawMessage {
	vm, _ := json.Marshal(inventory.Record{TenantID: tenantA, ResourceID: "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1",
		Name: "vm1", Type: "microsoft.compute/virtualmachines", Tags: json.RawMessage(`{}`), Properties: json.RawMessage(`{}`)})
	mfa := func(tenant string, coverage, admin float64) json.RawMessage {
		raw, _ := json.Marshal(directory.MFARecord{TenantID: tenant, Date: "2026-11-25", TotalUsers: 10, AdminUsers: 2, MFACoverage: pct(coverage), AdminMFA: pct(admin)})
		return raw
	}
	return map[string][]json.RawMessage{
		rules.ResourcesDataset: {
			disk(tenantA, "disk-ok", "EncryptionAtRestWithCustomerKey", map[string]string{"owner": "ops", "env": "prod"}),
			disk(tenantA, "disk-bad", "EncryptionAtRestWithPlatformKey", map[string]string{"env": "lab"}),
			disk(tenantA, "disk-untagged", "EncryptionAtRestWithPlatformKey", map[string]string{}),
			vm,
			disk(tenantB, "disk-b", "EncryptionAtRestWithPlatformKey", map[string]string{}),
		},
		rules.MFADataset: {mfa(tenantA, 72.5, 100), mfa(tenantB, 99, 50)},
	}
}

// scores is the compliance snapshot source of the tests: tenant A has
// one, tenant B none.
func scores(_ context.Context, tenantID string) (*rules.Score, error) {
	if tenantID != tenantA {
		return nil, nil
	}
	return &rules.Score{TenantID: tenantA, Date: "2026-11-25", OverallCompliancePercent: 81.25, CompliantResources: 13, NonCompliantResources: 3,
		CompliantPolicies: 40, NonCompliantPolicies: 2}, nil
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	return newFixtureWith(t, dialect, datasets())
}

// newFixtureWith serves the given datasets of the other plugins; one
// that is absent is, as on the host, a dataset no plugin publishes.
func newFixtureWith(t *testing.T, dialect string, sets map[string][]json.RawMessage) *fixture {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, rules.Migrations(), "compliance_migrations"); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, store: rules.NewStore(db), clock: &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}}
	f.eval = &rules.Evaluator{Store: f.store, Now: f.clock.Now}
	handlers := &rules.Handlers{}
	plugin := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		f.eval.Sources = &rules.Sources{Datasets: env.Host, Scores: rules.ScoreFunc(scores)}
		*handlers = rules.Handlers{Store: f.store, Evaluator: f.eval, Host: env.Host, Logger: env.Logger}
		return &sdk.Plugin{Routes: handlers.Routes()}, nil
	}
	f.h = plugintest.New(t, sdk.Definition{Name: "compliance"}, plugin, plugintest.Options{Datasets: sets, Tenants: []sdk.Tenant{
		{ID: tenantA, Name: "Brand A", IsActive: true},
		{ID: tenantB, Name: "Brand B", IsActive: true},
	}})
	return f
}

func eachDialect(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, newFixture(t, dialect)) })
	}
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

// want fails the test unless the response has the status.
func (r response) want(t *testing.T, what string, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
	return r
}

// wantInvalid fails the test unless the response is a 422 naming loc
// with a message holding each of words. The body binding names a missing
// member in its message, at body.
func (r response) wantInvalid(t *testing.T, what, loc string, words ...string) {
	t.Helper()
	if r.status != http.StatusUnprocessableEntity {
		t.Errorf("%s: %d %.300s, want 422 naming %s", what, r.status, r.body, loc)
		return
	}
	var p sdk.Problem
	r.decode(t, &p)
	member, _ := strings.CutPrefix(loc, "body.")
	for _, e := range p.Errors {
		if e.Location != loc && (e.Location != "body" || !strings.Contains(e.Message, "property "+member+" ")) {
			continue
		}
		for _, w := range words {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: the error at %s says %q, not %q", what, loc, e.Message, w)
			}
		}
		return
	}
	t.Errorf("%s: 422 does not name %s: %.500s", what, loc, r.body)
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

// diskRule is a valid create body: tenant A's disks must be encrypted
// with a customer key and carry an owner tag.
func diskRule(name string, change ...func(map[string]any)) map[string]any {
	b := map[string]any{
		"tenant_id": tenantA, "rule_name": name, "category": "resource_property", "resource_type": "Microsoft.Compute/disks",
		"severity": "High",
		"schema": map[string]any{
			"type":     "object",
			"required": []string{"tags", "properties"},
			"properties": map[string]any{
				"tags": map[string]any{"type": "object", "required": []string{"owner"}},
				"properties": map[string]any{"type": "object", "properties": map[string]any{
					"encryption": map[string]any{"type": "object", "properties": map[string]any{
						"type": map[string]any{"const": "EncryptionAtRestWithCustomerKey"}}}}},
			},
		},
	}
	for _, c := range change {
		c(b)
	}
	return b
}

func (f *fixture) create(p sdk.Principal, body map[string]any) rules.View {
	f.t.Helper()
	f.clock.Advance(time.Minute)
	var v rules.View
	f.do(p, http.MethodPost, rulesAt, body).want(f.t, "create", http.StatusCreated).decode(f.t, &v)
	return v
}

func (f *fixture) get(p sdk.Principal, id int64) rules.View {
	f.t.Helper()
	var v rules.View
	f.do(p, http.MethodGet, ruleAt(id), nil).want(f.t, "get", http.StatusOK).decode(f.t, &v)
	return v
}

func ruleAt(id int64) string { return rulesAt + "/" + strconv.FormatInt(id, 10) }
