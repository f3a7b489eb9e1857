package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/tenancy"
)

// diskFullPages caps the host's and the cost plugin's SQLite files at
// 10 MiB, far above what the test's host writes before it fills them.
const diskFullPages = 2560

// diskFiller fills a SQLite file up to its size cap from the test, as other
// files growing on the disk would, and frees the space again.
type diskFiller struct {
	t  *testing.T
	db *bun.DB
}

// fillDisk opens url (with the cap the host has) and fills it: every write
// that needs a new page fails from then on, with SQLITE_FULL as on a full
// disk.
func fillDisk(t *testing.T, url string) *diskFiller {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, url, store.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, "CREATE TABLE disk_filler (b BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for size := 1 << 20; size >= 16; size /= 4 {
		for {
			_, err := db.ExecContext(ctx, "INSERT INTO disk_filler (b) VALUES (zeroblob(?))", size)
			if store.Full(err) {
				break
			}
			if err != nil {
				t.Fatalf("filling %s: %v", url, err)
			}
		}
	}
	return &diskFiller{t: t, db: db}
}

// free deletes the filler: its pages go to the file's free list, where
// the host's next writes find them.
func (d *diskFiller) free() {
	d.t.Helper()
	if _, err := d.db.ExecContext(context.Background(), "DROP TABLE disk_filler"); err != nil {
		d.t.Fatal(err)
	}
}

// integrity runs SQLite's integrity check.
func (d *diskFiller) integrity() string {
	d.t.Helper()
	var check string
	if err := d.db.NewRaw("PRAGMA integrity_check").Scan(context.Background(), &check); err != nil {
		d.t.Fatal(err)
	}
	return check
}

// expectStorageFull checks the answer to a write that met a full database.
func expectStorageFull(t *testing.T, what string, r response) {
	t.Helper()
	expectStatus(t, what, r, http.StatusServiceUnavailable)
	var p struct {
		Detail string `json:"detail"`
	}
	r.json(t, &p)
	if !strings.Contains(p.Detail, "storage is full") || r.header.Get("Retry-After") != store.FullRetryAfter {
		t.Fatalf("%s: detail %q, Retry-After %q; want the full storage named and Retry-After %s", what, p.Detail, r.header.Get("Retry-After"), store.FullRetryAfter)
	}
}

// TestDiskFull: the host's SQLite file and then the cost plugin's fill up
// (each capped by its URL's max_page_count, which SQLite enforces with the
// error of a full disk). A tenant create on the host and a budget create
// in the plugin answer 503 saying storage is full, write nothing, and
// leave reads, the running host and the files sound; once space is freed
// the same writes succeed, without a restart.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	hostURL := fmt.Sprintf("sqlite://%s?_pragma=max_page_count(%d)", filepath.Join(dir, "steward.db"), diskFullPages)
	costURL := fmt.Sprintf("sqlite://%s?_pragma=max_page_count(%d)", filepath.Join(dir, "cost.db"), diskFullPages)
	plugins := strings.Replace(costPlugins(""), "cloud_credential = true", fmt.Sprintf("cloud_credential = true\n  database_url = %q", costURL), 1)
	h := startHost(t, hostOpts{dataDir: dir, databaseURL: hostURL, pluginsHCL: plugins, env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}})
	admin := h.login()
	f := &fixture{h: h, admin: admin}
	tenant := tenancy.Tenant{Name: "Brand A", DirectoryTenantID: uuid.NewString(), SubscriptionID: uuid.NewString(), IsActive: true}
	if err := tenancy.New(h.db()).CreateTenant(context.Background(), &tenant); err != nil {
		t.Fatal(err)
	}
	// Each write is larger than a page, so it needs new pages wherever it
	// goes: a small row may still fit in a page's free space on a full
	// disk.
	groups := make([]string, 100)
	for i := range groups {
		groups[i] = fmt.Sprintf("grp-%03d-%s", i, strings.Repeat("g", 200))
	}
	newTenant := map[string]any{"name": "Brand B", "directory_tenant_id": uuid.NewString(), "subscription_id": uuid.NewString(),
		"description": strings.Repeat("d", 2000), "access_groups": groups}
	emails := make([]string, 50)
	for i := range emails {
		emails[i] = fmt.Sprintf("finops-%02d-%s@brand-a.example", i, strings.Repeat("f", 40))
	}
	thresholds := make([]any, 5)
	for i := range thresholds {
		thresholds[i] = map[string]any{"percentage": 50 + 10*i, "contact_emails": emails}
	}
	now := time.Now().UTC()
	budget := map[string]any{"tenant_id": tenant.ID, "name": "A monthly", "amount": 1000, "time_grain": "Monthly",
		"start_date": time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly), "thresholds": thresholds}
	tenantNames := func() []string {
		t.Helper()
		var ts []struct {
			Name string `json:"name"`
		}
		h.get("/api/v1/tenants", admin).json(t, &ts)
		names := make([]string, len(ts))
		for i, tn := range ts {
			names[i] = tn.Name
		}
		return names
	}
	budgets := func() int {
		t.Helper()
		var list []json.RawMessage
		r := h.get("/api/v1/budgets", admin)
		expectStatus(t, "list budgets", r, http.StatusOK)
		r.json(t, &list)
		return len(list)
	}

	// The host's file is full.
	hostDisk := fillDisk(t, hostURL)
	expectStorageFull(t, "a tenant create on a full disk", f.sendJSON(http.MethodPost, "/api/v1/tenants", admin, newTenant))
	if names := tenantNames(); len(names) != 1 || names[0] != "Brand A" {
		t.Fatalf("tenants after the refused create: %v, want Brand A alone", names)
	}
	if r := h.get("/health", ""); r.status != http.StatusOK {
		t.Fatalf("/health on a full disk: %d %s", r.status, r.body)
	}

	// The plugin's file is full too: its write is refused the same way.
	costDisk := fillDisk(t, costURL)
	expectStorageFull(t, "a budget create on a full disk", f.sendJSON(http.MethodPost, "/api/v1/budgets", admin, budget))
	if n := budgets(); n != 0 {
		t.Fatalf("%d budgets after the refused create, want none", n)
	}
	for name, d := range map[string]*diskFiller{"host": hostDisk, "cost": costDisk} {
		if check := d.integrity(); check != "ok" {
			t.Fatalf("the %s database's integrity_check: %q", name, check)
		}
	}

	// Space is freed: the same host takes the same writes.
	hostDisk.free()
	costDisk.free()
	expectStatus(t, "a tenant create once space is freed", f.sendJSON(http.MethodPost, "/api/v1/tenants", admin, newTenant), http.StatusCreated)
	expectStatus(t, "a budget create once space is freed", f.sendJSON(http.MethodPost, "/api/v1/budgets", admin, budget), http.StatusCreated)
	if names, n := tenantNames(), budgets(); len(names) != 2 || n != 1 {
		t.Fatalf("after the writes succeeded: tenants %v, %d budgets", names, n)
	}
	select {
	case <-h.exited:
		t.Fatal("the host exited")
	default:
	}
}
