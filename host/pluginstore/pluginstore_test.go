package pluginstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/pluginstore"
	"github.com/stewardhq/steward/migrations"
)

// host is a host's migrated database and the stores it hands out.
type host struct {
	db     *bun.DB
	url    string
	dir    string
	stores *pluginstore.Stores
}

func newHost(t *testing.T, dialect string) *host {
	t.Helper()
	ctx := context.Background()
	h := &host{dir: t.TempDir()}
	if dialect == store.DialectSQLite {
		h.url = "sqlite://" + filepath.Join(h.dir, "steward.db")
	} else {
		h.url = storetest.PostgresURL(t)
	}
	db, err := store.Open(ctx, h.url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatal(err)
	}
	h.db = db
	if h.stores, err = pluginstore.New(ctx, pluginstore.Options{DB: db, URL: h.url, DataDir: h.dir, Secret: []byte("a test signing secret of 32 bytes")}); err != nil {
		t.Fatal(err)
	}
	return h
}

// name is plugin's role and schema on PostgreSQL, dropped when t ends.
func (h *host) name(t *testing.T, plugin string) string {
	t.Helper()
	var database, schema string
	if err := h.db.NewRaw("SELECT current_database(), current_schema()").Scan(context.Background(), &database, &schema); err != nil {
		t.Fatal(err)
	}
	name := pluginstore.Name(database, schema, plugin)
	t.Cleanup(func() { dropRole(t, h.db, name) })
	return name
}

// dropRole removes a plugin's schema and role, which outlive a test's
// schema since roles are the cluster's.
func dropRole(t *testing.T, db *bun.DB, name string) {
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS ? CASCADE", bun.Ident(name)); err != nil {
		t.Errorf("drop schema %s: %v", name, err)
	}
	var exists bool
	if err := db.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?)", name).Scan(ctx, &exists); err != nil || !exists {
		return
	}
	for _, q := range []string{"DROP OWNED BY ?", "DROP ROLE ?"} {
		if _, err := db.ExecContext(ctx, q, bun.Ident(name)); err != nil {
			t.Errorf("%s %s: %v", q, name, err)
		}
	}
}

func open(t *testing.T, url string) *bun.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestName(t *testing.T) {
	if got := pluginstore.Name("steward", "public", "cost"); got != "steward_p_cost" {
		t.Errorf("default installation: %s", got)
	}
	a, b, c := pluginstore.Name("steward", "tenant_a", "cost"), pluginstore.Name("other", "public", "cost"), pluginstore.Name("test", "steward_test_1", "cost")
	if a == b || b == c || a == c || !strings.HasPrefix(a, "steward_p_cost_") || len(c) > 63 {
		t.Errorf("installations must not share names: %s %s %s", a, b, c)
	}
}

func TestSQLiteFilePerPlugin(t *testing.T) {
	h := newHost(t, store.DialectSQLite)
	ctx := context.Background()
	cost, err := h.stores.Prepare(ctx, "cost", "")
	if err != nil {
		t.Fatal(err)
	}
	identity, err := h.stores.Prepare(ctx, "identity", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "sqlite://" + filepath.Join(h.dir, "plugins", "cost.db"); cost != want || identity == cost || identity == h.url {
		t.Errorf("cost's file %s (want %s), identity's %s, the host's %s", cost, want, identity, h.url)
	}

	for name, declared := range map[string]string{
		"the host's file":        h.url,
		"the host's file again":  "sqlite://" + filepath.Join(h.dir, ".", "steward.db"),
		"the host's file capped": "sqlite://" + filepath.Join(h.dir, "steward.db") + "?_pragma=max_page_count(1000)",
		"another kind":           "postgres://steward@127.0.0.1/steward",
		"a typo":                 "sqlite://",
	} {
		_, err := h.stores.Prepare(ctx, "cost", declared)
		if !errors.Is(err, pluginstore.ErrRefused) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line refusal", name, err)
		}
	}
	own := "sqlite://" + filepath.Join(t.TempDir(), "cost.db")
	if got, err := h.stores.Prepare(ctx, "cost", own); err != nil || got != own {
		t.Errorf("a file of its own: %q, %v", got, err)
	}
	capped := own + "?_pragma=max_page_count(1000)"
	if got, err := h.stores.Prepare(ctx, "cost", capped); err != nil || got != capped {
		t.Errorf("a file of its own with a size cap: %q, %v", got, err)
	}
	if _, err := h.stores.Prepare(ctx, "Cost;", ""); !errors.Is(err, pluginstore.ErrRefused) {
		t.Errorf("a name no role can carry: %v", err)
	}
}

func TestPostgresRolePerPlugin(t *testing.T) {
	h := newHost(t, store.DialectPostgres)
	ctx := context.Background()
	names := map[string]string{"cost": h.name(t, "cost"), "identity": h.name(t, "identity")}
	fsys := fstest.MapFS{"0001_t.up.sql": {Data: []byte("CREATE TABLE things (id BIGINT PRIMARY KEY)")}}
	for plugin, name := range names {
		url, err := h.stores.Prepare(ctx, plugin, "")
		if err != nil {
			t.Fatal(err)
		}
		// Again, as the next start does: the same URL, nothing fails.
		again, err := h.stores.Prepare(ctx, plugin, "")
		if err != nil || again != url {
			t.Fatalf("second start: %v (same URL: %t)", err, again == url)
		}
		if err := h.stores.Migrate(ctx, plugin, url, fsys); err != nil {
			t.Fatal(err)
		}
		var user, schema string
		if err := open(t, url).NewRaw("SELECT current_user, current_schema()").Scan(ctx, &user, &schema); err != nil {
			t.Fatal(err)
		}
		if user != name || schema != name {
			t.Errorf("%s signs in as %s in schema %s, want %s", plugin, user, schema, name)
		}
		var verifier string
		if err := h.db.NewRaw("SELECT rolpassword FROM pg_authid WHERE rolname = ?", name).Scan(ctx, &verifier); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(verifier, "SCRAM-SHA-256$4096:") || strings.Contains(url, verifier) {
			t.Errorf("%s's password is kept as %q", plugin, verifier)
		}
	}
	var reachable []string
	err := h.db.NewRaw(`SELECT r.rolname || ' ' || n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, pg_roles r
		WHERE r.rolname IN (?) AND c.relkind = 'r' AND (n.nspname = current_schema() OR n.nspname IN (?)) AND n.nspname <> r.rolname
		  AND (has_table_privilege(r.rolname, c.oid, 'SELECT') OR has_table_privilege(r.rolname, c.oid, 'INSERT'))`,
		bun.List([]string{names["cost"], names["identity"]}), bun.List([]string{names["cost"], names["identity"]})).Scan(ctx, &reachable)
	if err != nil {
		t.Fatal(err)
	}
	if len(reachable) > 0 {
		t.Errorf("plugin roles reach tables not theirs: %v", reachable)
	}
	// A plugin cannot make itself at home in the host's schema either.
	url, err := h.stores.Prepare(ctx, "cost", "")
	if err != nil {
		t.Fatal(err)
	}
	var hostSchema string
	if err := h.db.NewRaw("SELECT current_schema()").Scan(ctx, &hostSchema); err != nil {
		t.Fatal(err)
	}
	db := open(t, strings.Replace(url, "search_path="+names["cost"], "search_path="+hostSchema, 1))
	for _, q := range []string{"SELECT count(*) FROM users", "CREATE TABLE squat (id INT)"} {
		if _, err := db.ExecContext(ctx, q); err == nil {
			t.Errorf("the cost plugin's role ran %q in the host's schema", q)
		}
	}
	db.Close()

	if err := pluginstore.Drop(ctx, h.db); err != nil {
		t.Fatal(err)
	}
	var left []string
	if err := h.db.NewRaw("SELECT rolname FROM pg_roles WHERE rolname IN (?) UNION ALL SELECT nspname FROM pg_namespace WHERE nspname IN (?)",
		bun.List([]string{names["cost"], names["identity"]}), bun.List([]string{names["cost"], names["identity"]})).Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("Drop left %v", left)
	}
}

func TestPostgresDeclaredURL(t *testing.T) {
	h := newHost(t, store.DialectPostgres)
	ctx := context.Background()
	name := h.name(t, "declared")
	// A role the operator made, as a deployment without CREATEROLE has.
	if _, err := h.db.ExecContext(ctx, "CREATE ROLE ? LOGIN", bun.Ident(name)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.ExecContext(ctx, "CREATE SCHEMA ? AUTHORIZATION ?", bun.Ident(name), bun.Ident(name)); err != nil {
		t.Fatal(err)
	}
	managed, err := h.stores.Prepare(ctx, "declared", "")
	if err != nil {
		t.Fatal(err)
	}
	// The managed URL signs in as the same role: as the operator's, it
	// holds no right on the host's tables yet.
	declared := managed
	if got, err := h.stores.Prepare(ctx, "declared", declared); err != nil || got != declared {
		t.Fatalf("a role with rights on its schema only: %v", err)
	}
	if _, err := h.db.ExecContext(ctx, "GRANT SELECT ON audit_logs TO ?", bun.Ident(name)); err != nil {
		t.Fatal(err)
	}
	_, err = h.stores.Prepare(ctx, "declared", declared)
	if !errors.Is(err, pluginstore.ErrRefused) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `"audit_logs"`) {
		t.Errorf("a role that reads the audit log: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "://") {
		t.Errorf("the refusal quotes the URL: %v", err)
	}
	if _, err := h.stores.Prepare(ctx, "declared", "sqlite:///tmp/declared.db"); !errors.Is(err, pluginstore.ErrRefused) {
		t.Errorf("a SQLite file beside a PostgreSQL host: %v", err)
	}
}

// TestPostgresPluginPoolFromHostURL: the host URL's pool_max_conns reaches
// each plugin's URL, so one setting sizes every process's pool.
func TestPostgresPluginPoolFromHostURL(t *testing.T) {
	h := newHost(t, store.DialectPostgres)
	ctx := context.Background()
	h.name(t, "cost")
	sized := h.url + "&pool_max_conns=4"
	if !strings.Contains(h.url, "?") {
		sized = h.url + "?pool_max_conns=4"
	}
	stores, err := pluginstore.New(ctx, pluginstore.Options{DB: h.db, URL: sized, DataDir: h.dir, Secret: []byte("a test signing secret of 32 bytes")})
	if err != nil {
		t.Fatal(err)
	}
	url, err := stores.Prepare(ctx, "cost", "")
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, url)
	if got := db.Stats().MaxOpenConnections; got != 4 {
		t.Errorf("the plugin's pool holds %d connections, want the host URL's 4", got)
	}
}
