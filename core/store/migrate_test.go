package store_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// baseMigrations exercises a shared migration, a dialect-specific one with
// a shared down file, and a transactional one.
func baseMigrations() fstest.MapFS {
	return fstest.MapFS{
		"0001_widgets.up.sql":   {Data: []byte("CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")},
		"0001_widgets.down.sql": {Data: []byte("DROP TABLE widgets")},
		"0002_marker.sqlite.up.sql": {Data: []byte(
			"CREATE TABLE marker (dialect TEXT NOT NULL)\n--bun:split\nINSERT INTO marker VALUES ('sqlite')")},
		"0002_marker.postgres.up.sql": {Data: []byte(
			"CREATE TABLE marker (dialect TEXT NOT NULL)\n--bun:split\nINSERT INTO marker VALUES ('postgres')")},
		"0002_marker.down.sql": {Data: []byte("DROP TABLE marker")},
		"README.md":            {Data: []byte("not a migration")},
	}
}

func withMigration(fsys fstest.MapFS, name, sql string) fstest.MapFS {
	out := maps.Clone(fsys)
	out[name] = &fstest.MapFile{Data: []byte(sql)}
	return out
}

func tableExists(t *testing.T, db *bun.DB, table string) bool {
	t.Helper()
	var q string
	switch store.DialectName(db) {
	case store.DialectSQLite:
		q = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	default:
		q = "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
	}
	var n int
	if err := db.NewRaw(q, table).Scan(context.Background(), &n); err != nil {
		t.Fatalf("check table %s: %v", table, err)
	}
	return n > 0
}

func statusMap(t *testing.T, db *bun.DB, fsys fstest.MapFS, table string) map[string]store.MigrationStatus {
	t.Helper()
	sts, err := store.Status(context.Background(), db, fsys, table)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	out := map[string]store.MigrationStatus{}
	for _, s := range sts {
		out[s.Name] = s
	}
	return out
}

func TestMigrateLifecycle(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			ctx := context.Background()
			const table = "test_migrations"
			fsys := baseMigrations()

			sts, err := store.Status(ctx, db, fsys, table)
			if err != nil {
				t.Fatalf("Status before migrating: %v", err)
			}
			if len(sts) != 2 || sts[0].Name != "0001_widgets" || sts[1].Name != "0002_marker" {
				t.Fatalf("Status = %+v, want 0001_widgets and 0002_marker in order", sts)
			}
			for _, s := range sts {
				if s.Applied || !s.AppliedAt.IsZero() {
					t.Errorf("%s reported applied before Migrate: %+v", s.Name, s)
				}
			}

			before := time.Now().Add(-time.Minute)
			applied, err := store.Migrate(ctx, db, fsys, table)
			if err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if want := []string{"0001_widgets", "0002_marker"}; !slices.Equal(applied, want) {
				t.Errorf("Migrate applied %v, want %v", applied, want)
			}

			var marker string
			if err := db.NewRaw("SELECT dialect FROM marker").Scan(ctx, &marker); err != nil {
				t.Fatalf("read marker: %v", err)
			}
			if marker != dialect {
				t.Errorf("dialect-specific migration wrote %q, want %q", marker, dialect)
			}

			for name, s := range statusMap(t, db, fsys, table) {
				if !s.Applied || s.AppliedAt.Before(before) || s.AppliedAt.After(time.Now().Add(time.Minute)) {
					t.Errorf("%s after Migrate: %+v, want applied just now", name, s)
				}
			}

			again, err := store.Migrate(ctx, db, fsys, table)
			if err != nil || len(again) != 0 {
				t.Fatalf("second Migrate = %v, %v; want nothing applied", again, err)
			}

			fsys3 := withMigration(fsys, "0003_gadgets.up.sql", "CREATE TABLE gadgets (id INTEGER PRIMARY KEY)")
			fsys3["0003_gadgets.down.sql"] = &fstest.MapFile{Data: []byte("DROP TABLE gadgets")}
			applied, err = store.Migrate(ctx, db, fsys3, table)
			if err != nil || !slices.Equal(applied, []string{"0003_gadgets"}) {
				t.Fatalf("Migrate with a new file = %v, %v; want [0003_gadgets]", applied, err)
			}

			// Rollback reverts only the last group, newest first.
			reverted, err := store.Rollback(ctx, db, fsys3, table)
			if err != nil || !slices.Equal(reverted, []string{"0003_gadgets"}) {
				t.Fatalf("first Rollback = %v, %v; want [0003_gadgets]", reverted, err)
			}
			if tableExists(t, db, "gadgets") || !tableExists(t, db, "widgets") {
				t.Fatal("first Rollback should drop gadgets and keep widgets")
			}

			reverted, err = store.Rollback(ctx, db, fsys3, table)
			if err != nil || !slices.Equal(reverted, []string{"0002_marker", "0001_widgets"}) {
				t.Fatalf("second Rollback = %v, %v; want [0002_marker 0001_widgets]", reverted, err)
			}
			if tableExists(t, db, "widgets") || tableExists(t, db, "marker") {
				t.Fatal("second Rollback left tables behind")
			}
			for name, s := range statusMap(t, db, fsys3, table) {
				if s.Applied {
					t.Errorf("%s still applied after rolling everything back", name)
				}
			}

			reverted, err = store.Rollback(ctx, db, fsys3, table)
			if err != nil || len(reverted) != 0 {
				t.Fatalf("Rollback with nothing applied = %v, %v; want nothing", reverted, err)
			}
		})
	}
}

func TestMigrateOwnersAreIndependent(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			ctx := context.Background()
			host := fstest.MapFS{"0001_host.up.sql": {Data: []byte("CREATE TABLE host_things (id INTEGER)")}}
			plugin := fstest.MapFS{"0001_plugin.up.sql": {Data: []byte("CREATE TABLE plugin_things (id INTEGER)")}}

			if got, err := store.Migrate(ctx, db, host, "host_migrations"); err != nil || !slices.Equal(got, []string{"0001_host"}) {
				t.Fatalf("host Migrate = %v, %v", got, err)
			}
			// Same migration number, different owner: must still apply.
			if got, err := store.Migrate(ctx, db, plugin, "plugin_migrations"); err != nil || !slices.Equal(got, []string{"0001_plugin"}) {
				t.Fatalf("plugin Migrate = %v, %v", got, err)
			}
			if got, err := store.Rollback(ctx, db, plugin, "plugin_migrations"); err != nil || !slices.Equal(got, []string{"0001_plugin"}) {
				t.Fatalf("plugin Rollback = %v, %v", got, err)
			}
			if !tableExists(t, db, "host_things") {
				t.Error("rolling back the plugin touched the host's schema")
			}
		})
	}
}

func TestMigrateFailureIsNotRecorded(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			ctx := context.Background()
			const table = "test_migrations"
			good := fstest.MapFS{"0001_ok.up.sql": {Data: []byte("CREATE TABLE ok_table (id INTEGER)")}}
			// The ".tx" file runs in one transaction, so its first statement
			// must not survive the second one failing.
			broken := withMigration(good, "0002_broken.tx.up.sql",
				"CREATE TABLE half_done (id INTEGER)\n--bun:split\nTHIS IS NOT SQL")

			_, err := store.Migrate(ctx, db, broken, table)
			if err == nil {
				t.Fatal("Migrate with broken SQL succeeded")
			}
			if !strings.Contains(err.Error(), "0002") {
				t.Errorf("error %q does not name the failing migration", err)
			}
			sts := statusMap(t, db, broken, table)
			if !sts["0001_ok"].Applied || sts["0002_broken"].Applied {
				t.Errorf("status after failure = %+v, want 0001 applied and 0002 pending", sts)
			}
			if tableExists(t, db, "half_done") {
				t.Error("transactional migration left a partial change behind")
			}

			fixed := withMigration(good, "0002_broken.tx.up.sql", "CREATE TABLE half_done (id INTEGER)")
			got, err := store.Migrate(ctx, db, fixed, table)
			if err != nil || !slices.Equal(got, []string{"0002_broken"}) {
				t.Fatalf("Migrate after fixing = %v, %v; want [0002_broken]", got, err)
			}
		})
	}
}

func TestMigrateConcurrentCallersApplyOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const table = "race_migrations"
			// CREATE TABLE without IF NOT EXISTS fails if run twice; the
			// PostgreSQL sleep widens the window in which callers overlap.
			fsys := fstest.MapFS{
				"0001_a.up.sql":          {Data: []byte("CREATE TABLE race_a (id INTEGER)")},
				"0002_b.sqlite.up.sql":   {Data: []byte("CREATE TABLE race_b (id INTEGER)")},
				"0002_b.postgres.up.sql": {Data: []byte("SELECT pg_sleep(0.3)\n--bun:split\nCREATE TABLE race_b (id INTEGER)")},
				"0003_c.up.sql":          {Data: []byte("CREATE TABLE race_c (id INTEGER)")},
			}

			const callers = 3
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				applied []string
				errs    []error
			)
			for range callers {
				wg.Go(func() {
					names, err := store.Migrate(ctx, db, fsys, table)
					mu.Lock()
					defer mu.Unlock()
					applied = append(applied, names...)
					if err != nil {
						errs = append(errs, err)
					}
				})
			}
			wg.Wait()

			if err := errors.Join(errs...); err != nil {
				t.Fatalf("concurrent Migrate failed: %v", err)
			}
			slices.Sort(applied)
			if want := []string{"0001_a", "0002_b", "0003_c"}; !slices.Equal(applied, want) {
				t.Errorf("migrations applied across callers = %v, want each once: %v", applied, want)
			}
			var rows int
			if err := db.NewRaw("SELECT count(*) FROM ?", bun.Ident(table)).Scan(ctx, &rows); err != nil {
				t.Fatalf("count bookkeeping rows: %v", err)
			}
			if rows != 3 {
				t.Errorf("bookkeeping table has %d rows, want 3", rows)
			}
		})
	}
}

func TestMigrateWaitsForHeldLock(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			ctx := context.Background()
			const table = "locked_migrations"
			fsys := fstest.MapFS{"0001_a.up.sql": {Data: []byte("CREATE TABLE locked_a (id INTEGER)")}}

			if _, err := store.Status(ctx, db, fsys, table); err != nil {
				t.Fatalf("Status: %v", err)
			}
			// Simulates a replica that is migrating (or died doing so).
			if _, err := db.NewRaw("INSERT INTO ? (table_name) VALUES (?)", bun.Ident(table+"_lock"), table).Exec(ctx); err != nil {
				t.Fatalf("plant lock: %v", err)
			}

			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if _, err := store.Migrate(short, db, fsys, table); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Migrate under a held lock = %v, want it to wait until the context ends", err)
			}
			if tableExists(t, db, "locked_a") {
				t.Fatal("Migrate ran a migration without holding the lock")
			}

			done := make(chan error, 1)
			go func() {
				_, err := store.Migrate(ctx, db, fsys, table)
				done <- err
			}()
			time.Sleep(100 * time.Millisecond)
			if _, err := db.NewRaw("DELETE FROM ?", bun.Ident(table+"_lock")).Exec(ctx); err != nil {
				t.Fatalf("release lock: %v", err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Migrate after the lock was released: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Migrate did not proceed after the lock was released")
			}
			if !tableExists(t, db, "locked_a") {
				t.Error("migration not applied once the lock was free")
			}
		})
	}
}

func TestMigrateRejectsBadInput(t *testing.T) {
	db := storetest.Open(t, store.DialectSQLite)
	ctx := context.Background()
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		table   string
		wantErr string
	}{
		{
			name:    "table name needing quotes",
			fsys:    baseMigrations(),
			table:   "bad-table; DROP TABLE x",
			wantErr: "invalid migration table name",
		},
		{
			name:    "unknown dialect tag",
			fsys:    fstest.MapFS{"0001_a.mysql.up.sql": {}},
			table:   "t_migrations",
			wantErr: `unknown dialect tag "mysql"`,
		},
		{
			name: "dialect missing without fallback",
			fsys: fstest.MapFS{
				"0001_a.postgres.up.sql": {Data: []byte("SELECT 1")},
			},
			table:   "t_migrations",
			wantErr: "none for sqlite",
		},
		{
			name: "two untagged files for one migration",
			fsys: fstest.MapFS{
				"0001_a.up.sql":    {Data: []byte("SELECT 1")},
				"0001_a.tx.up.sql": {Data: []byte("SELECT 1")},
			},
			table:   "t_migrations",
			wantErr: "define the same migration",
		},
		{
			name:    "name outside bun's pattern",
			fsys:    fstest.MapFS{"0001_Bad.up.sql": {Data: []byte("SELECT 1")}},
			table:   "t_migrations",
			wantErr: "unsupported migration name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for op, run := range map[string]func() error{
				"Migrate":  func() error { _, err := store.Migrate(ctx, db, tt.fsys, tt.table); return err },
				"Rollback": func() error { _, err := store.Rollback(ctx, db, tt.fsys, tt.table); return err },
				"Status":   func() error { _, err := store.Status(ctx, db, tt.fsys, tt.table); return err },
			} {
				if err := run(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s error = %v, want it to contain %q", op, err, tt.wantErr)
				}
			}
		})
	}
}

func TestMigrateWithoutMigrations(t *testing.T) {
	db := storetest.Open(t, store.DialectSQLite)
	ctx := context.Background()
	empty := fstest.MapFS{"README.md": {}}

	if _, err := store.Migrate(ctx, db, empty, "empty_migrations"); err == nil {
		t.Error("Migrate with no migration files succeeded; an owner with nothing to apply is a packaging mistake")
	}
	sts, err := store.Status(ctx, db, empty, "empty_migrations")
	if err != nil || len(sts) != 0 {
		t.Errorf("Status with no migration files = %v, %v; want empty", sts, err)
	}
}
