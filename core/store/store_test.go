package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

func TestOpenRejectsBadURLs(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{"unknown scheme", "mysql://root@localhost/steward", `"mysql"`},
		{"no scheme", "steward.db", "no scheme"},
		{"empty sqlite path", "sqlite://", "no file path"},
		{"sqlite parameter other than the cap", "sqlite://steward.db?mode=ro", "mode=ro is not supported"},
		{"sqlite cap without a path", "sqlite://?_pragma=max_page_count(10)", "no file path"},
		{"unparseable postgres", "postgres://admin:hunter2@db:notaport/steward", "invalid postgres URL"},
		{"pool size not a number", "postgres://admin:hunter2@127.0.0.1:1/steward?pool_max_conns=many", `pool_max_conns must be a number of connections from 1 to 1000, not "many"`},
		{"empty pool", "postgres://admin:hunter2@127.0.0.1:1/steward?pool_max_conns=0", "pool_max_conns must be"},
		{"negative floor", "postgres://admin:hunter2@127.0.0.1:1/steward?pool_min_conns=-1", `pool_min_conns must be a number of connections from 0 to 1000, not "-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := store.Open(ctx, tt.url, store.Options{})
			if err == nil {
				_ = db.Close()
				t.Fatalf("Open(%q) succeeded, want error", tt.url)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Open(%q) error = %q, want it to contain %q", tt.url, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the password: %q", err)
			}
		})
	}
}

func TestOpenPostgresUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback refuses at once, so this needs no server.
	db, err := store.Open(ctx, "postgres://postgres@127.0.0.1:1/steward?sslmode=disable&connect_timeout=2", store.Options{})
	if err == nil {
		_ = db.Close()
		t.Fatal("Open succeeded against a closed port")
	}
	if !strings.Contains(err.Error(), "connect to postgres") {
		t.Errorf("error = %q, want it to say the connection failed", err)
	}
}

func TestOpenSQLiteConfiguresConnections(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "steward.db")
	db, err := store.Open(ctx, "sqlite://"+path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()

	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not created: %v", err)
	}
	if got := store.DialectName(db); got != store.DialectSQLite {
		t.Errorf("DialectName = %q, want %q", got, store.DialectSQLite)
	}
	if got := db.Stats().MaxOpenConnections; got != 4 {
		t.Errorf("MaxOpenConnections = %d, want the SQLite default 4", got)
	}

	pragmas := []struct {
		name string
		want string
	}{
		{"journal_mode", "wal"},
		{"busy_timeout", "5000"},
		{"foreign_keys", "1"},
		{"synchronous", "1"}, // NORMAL
	}
	// Pinning one connection would prove nothing about the others, so hold
	// several at once and check each.
	for range 3 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("Conn: %v", err)
		}
		defer conn.Close()
		for _, p := range pragmas {
			var got string
			if err := conn.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(&got); err != nil {
				t.Fatalf("PRAGMA %s: %v", p.name, err)
			}
			if got != p.want {
				t.Errorf("PRAGMA %s = %q, want %q", p.name, got, p.want)
			}
		}
	}
}

func TestOpenHonoursPoolOptions(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "s.db"), store.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	if got := db.Stats().MaxOpenConnections; got != 2 {
		t.Errorf("MaxOpenConnections = %d, want 2", got)
	}
}

func TestOpenPostgresSearchPath(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := context.Background()

	if got := store.DialectName(db); got != store.DialectPostgres {
		t.Errorf("DialectName = %q, want %q", got, store.DialectPostgres)
	}

	// Each pooled connection must land in the test schema, not just the first.
	var schemas []string
	for range 3 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("Conn: %v", err)
		}
		defer conn.Close()
		var schema string
		if err := conn.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			t.Fatalf("current_schema: %v", err)
		}
		schemas = append(schemas, schema)
	}
	for _, s := range schemas {
		if !strings.HasPrefix(s, "steward_test_") || s != schemas[0] {
			t.Fatalf("connections use schemas %v, want one steward_test_ schema", schemas)
		}
	}

	if _, err := db.ExecContext(ctx, "CREATE TABLE probe (id int)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	var where string
	if err := db.QueryRowContext(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'probe'").Scan(&where); err != nil {
		t.Fatalf("locate table: %v", err)
	}
	if where != schemas[0] {
		t.Errorf("table created in %q, want %q", where, schemas[0])
	}
}

// TestOpenSQLiteCreatesPrivateFiles: a new database, its directory and its
// WAL are readable by the service's user only, whatever the umask.
func TestOpenSQLiteCreatesPrivateFiles(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data", "plugins")
	path := filepath.Join(dir, "steward.db")
	db, err := store.Open(context.Background(), "sqlite://"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{
		filepath.Dir(dir): 0o700, dir: 0o700, path: 0o600, path + "-wal": 0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
}

// TestPostgresKeepsABurstsConnections: after a burst that opened every
// connection the pool allows, all of them stay idle for the next one, so a
// steady load does not fork a PostgreSQL backend per request.
func TestPostgresKeepsABurstsConnections(t *testing.T) {
	db := storetest.Open(t, store.DialectPostgres)
	ctx := context.Background()
	const max = 10
	conns := make([]bun.Conn, 0, max)
	for range max {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("Conn: %v", err)
		}
		conns = append(conns, conn)
	}
	if got := db.Stats().MaxOpenConnections; got != max {
		t.Fatalf("MaxOpenConnections = %d, want the PostgreSQL default %d", got, max)
	}
	for _, c := range conns {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st := db.Stats()
	if st.Idle != max || st.MaxIdleClosed != 0 {
		t.Errorf("after the burst: %d idle, %d closed for exceeding the idle cap; want %d idle, none closed", st.Idle, st.MaxIdleClosed, max)
	}
}

// withParams is the URL raw with params added to its query.
func withParams(raw, params string) string {
	if strings.Contains(raw, "?") {
		return raw + "&" + params
	}
	return raw + "?" + params
}

// TestPostgresPoolSizeFromURL: the URL's pool_max_conns sizes the pool of
// a caller that sets none, and never reaches the server (which would
// refuse an unknown parameter); a caller's own size wins.
func TestPostgresPoolSizeFromURL(t *testing.T) {
	raw := storetest.PostgresURL(t)
	ctx := context.Background()
	for _, tc := range []struct {
		opts store.Options
		want int
	}{{store.Options{}, 3}, {store.Options{MaxOpenConns: 1}, 1}} {
		db, err := store.Open(ctx, withParams(raw, "pool_max_conns=3"), tc.opts)
		if err != nil {
			t.Fatalf("Open with pool_max_conns: %v", err)
		}
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("a query on a pool sized by the URL: %v", err)
		}
		if got := db.Stats().MaxOpenConnections; got != tc.want {
			t.Errorf("options %+v: MaxOpenConnections = %d, want %d", tc.opts, got, tc.want)
		}
		_ = db.Close()
	}
}

// TestPostgresPoolMinConns: pool_min_conns opens that many connections
// before Open returns, at most the pool's size, and never reaches the
// server; without it the pool starts with the one Open pinged on.
func TestPostgresPoolMinConns(t *testing.T) {
	raw := storetest.PostgresURL(t)
	ctx := context.Background()
	for _, tc := range []struct {
		params string
		want   int
	}{{"pool_min_conns=4", 4}, {"pool_max_conns=3&pool_min_conns=5", 3}, {"pool_min_conns=0", 1}, {"", 1}} {
		db, err := store.Open(ctx, withParams(raw, tc.params), store.Options{})
		if err != nil {
			t.Fatalf("%s: Open: %v", tc.params, err)
		}
		if st := db.Stats(); st.OpenConnections != tc.want || st.Idle != tc.want {
			t.Errorf("%s: %d open, %d idle after Open; want %d of each", tc.params, st.OpenConnections, st.Idle, tc.want)
		}
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Errorf("%s: a query: %v", tc.params, err)
		}
		_ = db.Close()
	}
}
