package exemptions_test

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
	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	tenantA      = "aaaaaaaa-0000-4000-8000-00000000000a"
	tenantB      = "bbbbbbbb-0000-4000-8000-00000000000b"
	exemptionsAt = "/api/v1/compliance/exemptions"
	vault        = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv01"
	purge        = "/providers/Microsoft.Authorization/policyDefinitions/kv-purge"
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

// fixture is the exemption routes and expiry job served through the
// plugin protocol on a real database of one dialect.
type fixture struct {
	t     *testing.T
	h     *plugintest.Harness
	db    *bun.DB
	store *exemptions.Store
	clock *clock
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, exemptions.Migrations(), "compliance_migrations"); err != nil {
		t.Fatal(err)
	}
	set, err := frameworks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, store: &exemptions.Store{DB: db}, clock: &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}}
	plugin := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		h := &exemptions.Handlers{Store: f.store, Frameworks: set, Host: env.Host, Logger: env.Logger, Now: f.clock.Now}
		return &sdk.Plugin{Routes: h.Routes(), Jobs: []sdk.Job{h.ExpiryJob()}}, nil
	}
	f.h = plugintest.New(t, sdk.Definition{Name: "compliance"}, plugin, plugintest.Options{Tenants: []sdk.Tenant{
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

// wantInvalid fails the test unless the response is a 422 naming loc. The
// body binding names a missing member in its message, at body.
func (r response) wantInvalid(t *testing.T, what, loc string) {
	t.Helper()
	if r.status != http.StatusUnprocessableEntity {
		t.Errorf("%s: %d %.300s, want 422 naming %s", what, r.status, r.body, loc)
		return
	}
	var p sdk.Problem
	r.decode(t, &p)
	member, _ := strings.CutPrefix(loc, "body.")
	for _, e := range p.Errors {
		if e.Location == loc || e.Location == "body" && strings.Contains(e.Message, "property "+member+" ") {
			return
		}
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
	return response{status: resp.StatusCode, body: raw}
}

// findingBody is a valid create body: tenant A's kv01 under kv-purge,
// for a day.
func (f *fixture) findingBody(change ...func(map[string]any)) map[string]any {
	b := map[string]any{"tenant_id": tenantA, "scope": "finding", "resource_id": vault, "policy_definition_id": purge,
		"reason": "Purge protection is enforced by the vault's management group", "owner": "secops@brand-a.example",
		"expires_at": f.clock.Now().Add(24 * time.Hour).Format(time.RFC3339)}
	for _, c := range change {
		c(b)
	}
	return b
}

func (f *fixture) create(p sdk.Principal, body map[string]any) exemptions.View {
	f.t.Helper()
	var v exemptions.View
	f.do(p, http.MethodPost, exemptionsAt, body).want(f.t, "create", http.StatusCreated).decode(f.t, &v)
	return v
}

func exemptionAt(id int64) string { return exemptionsAt + "/" + strconv.FormatInt(id, 10) }
