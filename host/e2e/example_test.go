package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// buildExample builds examples/acme-evidence the way a brand builds its
// plugin: go build in the plugin's own module, outside the Steward tree's
// build. The build must be answered from the module's go.sum and the module
// cache the tree's own build filled, so it never reaches the network.
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "acme_evidence")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", "examples", "acme-evidence")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", cmd.Dir, err, out)
	}
	return bin
}

// exampleHCL is the default plugins and the example, built, reading the
// inventory dataset named.
func exampleHCL(t *testing.T, inventory string) string {
	return defaultPlugins() + fmt.Sprintf("plugin \"acme_evidence\" {\n  binary = %q\n  config {\n    inventory = %q\n  }\n}\n", buildExample(t), inventory)
}

// TestExamplePlugin serves the out-of-tree example beside the test plugin,
// whose items are the inventory the example's job reads, and uses its route
// and its job through the host's API.
func TestExamplePlugin(t *testing.T) {
	hcl := exampleHCL(t, "testplugin.items")
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, hostOpts{pluginsHCL: hcl})
			testExamplePlugin(t, f)
		})
	}
}

type evidenceBody struct {
	Items []struct {
		TenantID  string `json:"tenant_id"`
		Control   string `json:"control"`
		Resources int64  `json:"resources"`
	} `json:"items"`
}

func testExamplePlugin(t *testing.T, f *fixture) {
	h := f.h
	ctx := context.Background()
	db := h.db()
	userB := tenancy.User{DirectoryTenantID: f.tenantB.DirectoryTenantID, Subject: "oid-bob", Email: "bob@brand-b.example", Name: "Bob", Groups: []string{"grp-b"}}
	if err := tenancy.New(db).UpsertUser(ctx, &userB); err != nil {
		t.Fatal(err)
	}
	tokenB := h.tokenFor(userB)

	// The host applied the example's migration to its own database
	// before configuring it.
	var migrated int
	if err := h.pluginDB("acme_evidence").NewSelect().Table("plugin_acme_evidence_migrations").ColumnExpr("COUNT(*)").Scan(ctx, &migrated); err != nil || migrated != 1 {
		t.Fatalf("recorded migrations of acme_evidence: %d, %v", migrated, err)
	}
	// The example tags its route with nothing; the host tags it with the
	// plugin's name.
	var doc struct {
		Paths map[string]map[string]struct {
			Tags []string `json:"tags"`
		} `json:"paths"`
	}
	h.get("/openapi.json", "").json(t, &doc)
	if tags := doc.Paths["/api/v1/acme/evidence"]["get"].Tags; len(tags) != 1 || tags[0] != "acme_evidence" {
		t.Errorf("tags of the example's route = %q, want the plugin's name", tags)
	}
	var before evidenceBody
	h.get("/api/v1/acme/evidence", f.admin).json(t, &before)
	if len(before.Items) != 0 {
		t.Fatalf("evidence before the first run: %+v", before)
	}

	// The test plugin's sync fills the inventory: 100 items per tenant.
	if run := f.waitRun(t, f.trigger(t, "testplugin")); run.Status != "completed" {
		t.Fatalf("inventory sync: %+v", run)
	}
	if r := h.do(http.MethodPost, "/api/v1/sync/acme-evidence", f.tokenA, nil); r.status != http.StatusForbidden {
		t.Errorf("a standard user triggers the example's job: %d", r.status)
	}
	run := f.waitRun(t, f.trigger(t, "acme-evidence"))
	if run.Status != "completed" || run.JobType != "acme-evidence" || run.RecordsProcessed != 2 {
		t.Fatalf("collect run %+v, want completed for 2 tenants", run)
	}

	// The job wrote one row per tenant into the example's own table, with
	// the count it read from the test plugin's dataset through the host.
	var rows []struct {
		TenantID  string `bun:"tenant_id"`
		Resources int64  `bun:"resources"`
	}
	if err := h.pluginDB("acme_evidence").NewSelect().Table("acme_evidence").Column("tenant_id", "resources").Order("tenant_id").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Resources != 100 || rows[1].Resources != 100 {
		t.Fatalf("acme_evidence rows: %+v, want 100 resources for each of 2 tenants", rows)
	}

	for _, c := range []struct {
		who, token, tenant string
	}{{"user of tenant A", f.tokenA, f.tenantA.ID}, {"user of tenant B", tokenB, f.tenantB.ID}} {
		var got evidenceBody
		h.get("/api/v1/acme/evidence", c.token).json(t, &got)
		if len(got.Items) != 1 || got.Items[0].TenantID != c.tenant || got.Items[0].Resources != 100 || got.Items[0].Control != "inventory-complete" {
			t.Errorf("%s sees %+v, want its own tenant's evidence only", c.who, got)
		}
	}
	if r := h.get("/api/v1/acme/evidence?tenant_ids="+f.tenantB.ID, f.tokenA); r.status != http.StatusForbidden {
		t.Errorf("user of tenant A asks for tenant B's evidence: %d %s", r.status, r.body)
	}
	var all evidenceBody
	h.get("/api/v1/acme/evidence", f.admin).json(t, &all)
	if len(all.Items) != 2 {
		t.Errorf("admin sees %+v, want both tenants' evidence", all)
	}
	h.get("/api/v1/acme/evidence?limit=1&tenant_ids="+f.tenantB.ID, f.admin).json(t, &all)
	if len(all.Items) != 1 || all.Items[0].TenantID != f.tenantB.ID {
		t.Errorf("admin asks for one item of tenant B: %+v", all)
	}
	expectInvalid(t, h.get("/api/v1/acme/evidence?limit=0", f.tokenA), "query.limit")
	expectInvalid(t, h.get("/api/v1/acme/evidence?limit=201", f.tokenA), "query.limit")
	if r := h.get("/api/v1/acme/evidence", ""); r.status != http.StatusUnauthorized {
		t.Errorf("anonymous list: %d", r.status)
	}

	// The job marked each tenant fresh, and the brand's domain is judged
	// like the host's own: it is the only domain a plugin here keeps.
	var fresh map[string]map[string]any
	h.get("/api/v1/health/data", f.admin).json(t, &fresh)
	for _, tenant := range []string{f.tenantA.Name, f.tenantB.Name} {
		if got := fresh[tenant]; len(got) != 2 || got["acme_evidence"] == nil || got["stale"] != false {
			t.Errorf("freshness of %s: %v, want acme_evidence marked and nothing else judged", tenant, got)
		}
	}
}

// TestExamplePluginFailure: a job that cannot do its work for a tenant
// (the example reading a dataset no plugin publishes) fails the run naming
// each tenant, and the host keeps each tenant's reason: an admin reads it
// in /api/v1/health/data, a tenant's user reads only that it is stale.
func TestExamplePluginFailure(t *testing.T) {
	hcl := exampleHCL(t, "nobody.items")
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, hostOpts{pluginsHCL: hcl})
			h := f.h
			run := f.waitRun(t, f.trigger(t, "acme-evidence"))
			if run.Status != "failed" || run.ErrorMessage == nil ||
				!strings.Contains(*run.ErrorMessage, "tenant "+f.tenantA.Name+" ("+f.tenantA.ID+"): dataset nobody.items") ||
				!strings.Contains(*run.ErrorMessage, "tenant "+f.tenantB.Name) {
				t.Fatalf("run = %+v, want it failed naming both tenants", run)
			}
			var fresh map[string]struct {
				Stale    bool              `json:"stale"`
				Problems map[string]string `json:"problems"`
			}
			h.get("/api/v1/health/data", f.admin).json(t, &fresh)
			for _, tenant := range []string{f.tenantA.Name, f.tenantB.Name} {
				got := fresh[tenant]
				if p := got.Problems["acme_evidence"]; !got.Stale || !strings.HasPrefix(p, "never synced; the last sync failed at ") ||
					!strings.Contains(p, "dataset nobody.items: dataset unavailable") {
					t.Errorf("%s for an admin: %+v, want stale with the failure's reason", tenant, got)
				}
			}
			fresh = nil
			h.get("/api/v1/health/data", f.tokenA).json(t, &fresh)
			if got := fresh[f.tenantA.Name]; len(fresh) != 1 || !got.Stale || got.Problems != nil {
				t.Errorf("health/data for a tenant's user: %+v, want its tenant stale without the reasons", fresh)
			}
		})
	}
}
