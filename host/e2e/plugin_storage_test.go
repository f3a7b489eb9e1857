package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/pluginstore"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
	"github.com/stewardhq/steward/plugins/testplugin/testplugin"
)

// storagePlugins declares the test plugin and the identity plugin, two
// plugins with tables of their own.
func storagePlugins(extra string) string {
	return fmt.Sprintf(`plugin "testplugin" {
  binary = %q
%s}
plugin "identity" {
  binary = %q
  cloud_credential = true
}
`, filepath.Join(binDir, "plugins", "testplugin"), extra, filepath.Join(binDir, "plugins", "identity"))
}

// hostTables are the host's tables no plugin may read or write.
var hostTables = []string{"users", "refresh_tokens", "api_keys", "audit_logs"}

// TestPluginStorage runs two plugins and looks at what each holds open:
// on PostgreSQL every connection of a plugin's process signs in as its
// own role, which has no right on the host's tables or the other plugin's;
// on SQLite no plugin process has the host's file open.
func TestPluginStorage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			o := hostOpts{pluginsHCL: storagePlugins("")}
			if dialect == store.DialectPostgres {
				o.databaseURL = storetest.PostgresURL(t)
			}
			h := startHost(t, o)
			admin := h.login()
			// A read, so that the plugin surely holds a connection.
			if r := h.get("/api/v1/testplugin/items", admin); r.status != http.StatusOK {
				t.Fatalf("items: %d %s", r.status, r.body)
			}
			pids := map[string]int{"testplugin": h.pluginPID(admin, "testplugin"), "identity": h.pluginPID(admin, "identity")}
			if dialect == store.DialectSQLite {
				hostFile, err := filepath.EvalSymlinks(filepath.Join(h.dataDir, "steward.db"))
				if err != nil {
					t.Fatal(err)
				}
				for plugin, pid := range pids {
					files := openFiles(t, pid)
					own := filepath.Join(h.dataDir, "plugins", plugin+".db")
					var holdsOwn bool
					for _, f := range files {
						if strings.HasPrefix(f, hostFile) {
							t.Errorf("%s (pid %d) holds the host's database open: %s", plugin, pid, f)
						}
						holdsOwn = holdsOwn || f == own
					}
					if !holdsOwn {
						t.Errorf("%s (pid %d) does not hold its own file %s open: %v", plugin, pid, own, files)
					}
					if st, err := os.Stat(own); err != nil || st.Mode().Perm() != 0o600 {
						t.Errorf("%s's file: %v, %v", own, st, err)
					}
				}
				return
			}

			db := h.db()
			ctx := context.Background()
			var database, schema string
			if err := db.NewRaw("SELECT current_database(), current_schema()").Scan(ctx, &database, &schema); err != nil {
				t.Fatal(err)
			}
			roles := map[string]string{}
			for plugin := range pids {
				roles[plugin] = pluginstore.Name(database, schema, plugin)
			}
			for plugin, pid := range pids {
				ports := clientPorts(t, pid)
				var users []string
				if err := db.NewRaw("SELECT usename FROM pg_stat_activity WHERE client_port IN (?)", bun.List(ports)).Scan(ctx, &users); err != nil {
					t.Fatal(err)
				}
				if len(users) == 0 {
					t.Errorf("%s (pid %d) holds no connection to PostgreSQL (ports %v)", plugin, pid, ports)
				}
				for _, u := range users {
					if u != roles[plugin] {
						t.Errorf("%s (pid %d) is connected as %s, want %s", plugin, pid, u, roles[plugin])
					}
				}
			}
			for plugin, role := range roles {
				var others []string
				for other, r := range roles {
					if other == plugin {
						continue
					}
					var tables []string
					if err := db.NewRaw("SELECT ? || '.' || tablename FROM pg_tables WHERE schemaname = ?", r, r).Scan(ctx, &tables); err != nil {
						t.Fatal(err)
					}
					if len(tables) == 0 {
						t.Fatalf("%s has no tables in its schema %s", other, r)
					}
					others = append(others, tables...)
				}
				for _, table := range append(others, hostTables...) {
					var reach bool
					err := db.NewRaw("SELECT has_table_privilege(?, ?, 'SELECT') OR has_table_privilege(?, ?, 'INSERT')", role, table, role, table).Scan(ctx, &reach)
					if err != nil {
						t.Fatal(err)
					}
					if reach {
						t.Errorf("%s's role %s may read or write %s", plugin, role, table)
					}
				}
			}
		})
	}
}

// TestPluginStorageUpgrade starts the host on a database in the layout of
// hosts before per-plugin storage, the test plugin's table and its
// migrations' bookkeeping beside the host's, with rows in it: the first
// start moves them into the plugin's own database, and the plugin serves
// them from there.
func TestPluginStorageUpgrade(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			url := "sqlite://" + filepath.Join(dataDir, "steward.db")
			if dialect == store.DialectPostgres {
				url = storetest.PostgresURL(t)
			}
			ctx := context.Background()
			db, err := store.Open(ctx, url, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Migrate(ctx, db, testplugin.Definition().Migrations, "plugin_testplugin_migrations"); err != nil {
				t.Fatal(err)
			}
			upgraded := tenancy.Tenant{Name: "Upgraded", DirectoryTenantID: "dir-upgraded", IsActive: true}
			if err := tenancy.New(db).CreateTenant(ctx, &upgraded); err != nil {
				t.Fatal(err)
			}
			tenant := upgraded.ID
			for i := range 3 {
				if _, err := db.ExecContext(ctx, "INSERT INTO testplugin_items (tenant_id, name, kind, cost, created_at) VALUES (?, ?, 'vm', ?, ?)",
					tenant, fmt.Sprintf("item-%d", i), 1.25*float64(i+1), time.Now()); err != nil {
					t.Fatal(err)
				}
			}

			h := startHost(t, hostOpts{databaseURL: url, dataDir: dataDir})
			admin := h.login()
			var page struct {
				Items []struct {
					Name string  `json:"name"`
					Cost float64 `json:"cost"`
				} `json:"items"`
				Total int `json:"total"`
			}
			h.get("/api/v1/testplugin/items?tenant_ids="+tenant, admin).json(t, &page)
			if page.Total != 3 || len(page.Items) != 3 || page.Items[2].Name != "item-2" || page.Items[2].Cost != 3.75 {
				t.Errorf("items after the upgrade: %+v", page)
			}
			var n int
			if err := h.pluginDB("testplugin").NewRaw("SELECT count(*) FROM testplugin_items WHERE tenant_id = ?", tenant).Scan(ctx, &n); err != nil || n != 3 {
				t.Errorf("rows in the plugin's own database: %d, %v", n, err)
			}
			for _, table := range []string{"testplugin_items", "plugin_testplugin_migrations"} {
				q := "SELECT count(*) FROM sqlite_master WHERE name = ?"
				if dialect == store.DialectPostgres {
					q = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?"
				}
				if err := db.NewRaw(q, table).Scan(ctx, &n); err != nil || n != 0 {
					t.Errorf("the host's database still has %s (%v)", table, err)
				}
			}
		})
	}
}

// TestPluginStorageRefused names a database_url the plugin may not have:
// on PostgreSQL a role that can read the host's users, on SQLite the
// host's own file. That plugin does not start, and says why in one line;
// the host and the other plugin serve.
func TestPluginStorageRefused(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			url := "sqlite://" + filepath.Join(dataDir, "steward.db")
			declared, reason := url, "database_url names the host's own database file"
			if dialect == store.DialectPostgres {
				url = storetest.PostgresURL(t)
				declared = readerRole(t, url)
				reason = `has rights on the host's table "users"`
			}
			h := startHost(t, hostOpts{databaseURL: url, dataDir: dataDir, pluginsHCL: storagePlugins(fmt.Sprintf("  database_url = %q\n", declared))})
			admin := h.login()
			var list []struct {
				Name      string `json:"name"`
				State     string `json:"state"`
				LastError string `json:"last_error"`
			}
			h.get("/api/v1/plugins", admin).json(t, &list)
			for _, p := range list {
				switch p.Name {
				case "testplugin":
					if p.State != "failed" || !strings.Contains(p.LastError, reason) || strings.Contains(p.LastError, "\n") {
						t.Errorf("testplugin: %s, %q; want failed, saying %q", p.State, p.LastError, reason)
					}
					if strings.Contains(p.LastError, "://") {
						t.Errorf("the reason quotes the URL: %s", p.LastError)
					}
				case "identity":
					if p.State != "running" {
						t.Errorf("identity: %s %s", p.State, p.LastError)
					}
				}
			}
			// The log quotes the error, escaping its quotes.
			if line := h.logs.String(); !strings.Contains(line, strings.ReplaceAll(reason, `"`, `\"`)) {
				t.Errorf("the log does not say why: %s", line)
			}
		})
	}
}

// readerRole makes a login role that may read the users table of the host
// whose database is at hostURL (migrating it first), and returns a URL
// signing in as it; the role is dropped when t ends.
func readerRole(t *testing.T, hostURL string) string {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, hostURL, store.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := db.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
		t.Fatal(err)
	}
	role := schema + "_reader"
	for _, q := range []string{"CREATE ROLE ? LOGIN", "GRANT USAGE ON SCHEMA " + schema + " TO ?", "GRANT SELECT ON users TO ?"} {
		if _, err := db.ExecContext(ctx, q, bun.Ident(role)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		defer db.Close()
		for _, q := range []string{"DROP OWNED BY ?", "DROP ROLE ?"} {
			if _, err := db.ExecContext(context.Background(), q, bun.Ident(role)); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return strings.Replace(strings.Replace(hostURL, "postgres@", role+"@", 1), "postgres://postgres@", "postgres://"+role+"@", 1)
}

// openFiles lists the files process pid holds open.
func openFiles(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no %s: %v", dir, err)
	}
	var files []string
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "/") {
			files = append(files, target)
		}
	}
	return files
}

// clientPorts lists the local TCP ports of process pid's sockets, read
// from /proc: the client_port PostgreSQL shows for each of its
// connections.
func clientPorts(t *testing.T, pid int) []int {
	t.Helper()
	inodes := map[string]bool{}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no %s: %v", dir, err)
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if port, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports = append(ports, int(port))
			}
		}
		f.Close()
	}
	if len(ports) == 0 {
		ports = append(ports, -1)
	}
	return ports
}
