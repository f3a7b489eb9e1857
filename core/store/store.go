// Package store opens Steward's relational database and runs schema
// migrations against it.
//
// Steward runs on SQLite (single node, pure Go driver) or PostgreSQL (several
// replicas). Both are reached through a *bun.DB obtained from [Open], so the
// query code above this package is written once.
//
// # Migrations
//
// Every owner of tables (the host and each plugin) ships its own migrations
// as an fs.FS, usually embedded, and records them in its own bookkeeping
// table (lower-case letters, digits and underscores) passed to [Migrate],
// [Rollback] and [Status]. Owners therefore never see or block on each
// other's migrations, and the lock taken while migrating lives in a
// companion table named "<table>_lock".
//
// Migration files follow bun's naming:
//
//	0001_core.up.sql
//	0001_core.down.sql
//
// The number orders migrations and identifies them; the name after the
// underscore is descriptive and may use [0-9a-z_-]. Statements inside one
// file are separated by a line holding only "--bun:split". A ".tx" before
// ".up.sql" or ".down.sql" runs the whole file in one transaction.
//
// One set of files serves both databases. Where the DDL has to differ, a file
// may carry a dialect tag between the name and the direction:
//
//	0001_core.sqlite.up.sql     used only on SQLite
//	0001_core.postgres.up.sql   used only on PostgreSQL
//	0001_core.down.sql          used on both
//
// The tag goes before ".tx" when both are present, as in
// "0001_core.sqlite.tx.up.sql". A tagged file takes precedence over an
// untagged one for the same migration and direction. If a migration has
// tagged files for a direction but no untagged fallback, every dialect must
// have its own file, so that forgetting one dialect fails loudly instead of
// silently skipping the migration there.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	// Registers the pure-Go "sqlite" database/sql driver, which keeps the
	// binaries free of cgo.
	_ "modernc.org/sqlite"
)

// Dialect names returned by [DialectName] and used in migration file tags.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// Options tunes the connection pool. Zero values select defaults suited to
// the dialect.
type Options struct {
	// MaxOpenConns caps open connections. SQLite defaults to 4: writers
	// serialize on the database file anyway, and a few connections let WAL
	// readers proceed alongside one writer. PostgreSQL defaults to 10.
	MaxOpenConns int
	// MaxIdleConns caps idle connections kept for reuse. Defaults to
	// MaxOpenConns: below it, every burst past the idle cap closes
	// connections only to open them again, which on PostgreSQL forks a
	// server backend each time. Idle connections still close after five
	// minutes unused on PostgreSQL.
	MaxIdleConns int
	// SearchPath, when set, becomes the PostgreSQL search_path of every
	// connection, so unqualified table names resolve to that schema. It is
	// passed verbatim and ignored on SQLite.
	SearchPath string
}

// Open connects to the database named by url and verifies the connection.
//
// Accepted forms are "sqlite://<path>" (relative or absolute file path; the
// parent directory is created), optionally with "?_pragma=max_page_count(N)"
// to cap the file's size (see sqliteSizeCap), and "postgres://…" or "postgresql://…"
// (libpq-style URL). The caller owns the returned DB and must Close it.
func Open(ctx context.Context, url string, opts Options) (*bun.DB, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("store: database URL has no scheme; want sqlite:// or postgres://")
	}

	var (
		db      *bun.DB
		initial int
		err     error
	)
	switch strings.ToLower(scheme) {
	case "sqlite":
		db, err = openSQLite(rest, opts)
	case "postgres", "postgresql":
		db, initial, err = openPostgres(url, opts)
	default:
		return nil, fmt.Errorf("store: unsupported database scheme %q; want sqlite or postgres", scheme)
	}
	if err != nil {
		return nil, err
	}

	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", DialectName(db), err)
	}
	if err := prefill(ctx, db, initial); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

func openSQLite(rest string, opts Options) (*bun.DB, error) {
	// What follows '?' are parameters, so a file name cannot hold one.
	path, query, _ := strings.Cut(rest, "?")
	if path == "" {
		return nil, fmt.Errorf("store: sqlite URL has no file path")
	}
	sizeCap, err := sqliteSizeCap(query)
	if err != nil {
		return nil, err
	}
	// The database holds tokens' hashes, audit history and every tenant's
	// data: only the service's user may read it. SQLite gives its WAL and
	// shared-memory files the main file's mode, so creating that one
	// private is enough.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create sqlite directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create sqlite file: %w", err)
	}
	_ = f.Close()

	// _txlock=immediate takes the write lock at BEGIN: a deferred
	// transaction that reads and then writes would otherwise fail with
	// SQLITE_BUSY without waiting, because busy_timeout cannot resolve a
	// read-to-write upgrade.
	dsn := path + "?_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate" + sizeCap
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}

	maxOpen := orDefault(opts.MaxOpenConns, 4)
	sqldb.SetMaxOpenConns(maxOpen)
	sqldb.SetMaxIdleConns(orDefault(opts.MaxIdleConns, maxOpen))

	return bun.NewDB(sqldb, sqlitedialect.New(), bun.WithDiscardUnknownColumns()), nil
}

// maxPageCountRE is the one parameter a sqlite:// URL may carry.
var maxPageCountRE = regexp.MustCompile(`^max_page_count\([1-9][0-9]{0,9}\)$`)

// sqliteSizeCap checks a sqlite:// URL's query and returns the driver
// parameter it adds to the DSN. The only parameter is
// _pragma=max_page_count(N), which caps the file at N pages (4096 bytes
// each): past it writes fail with SQLITE_FULL, as on a full disk, and
// succeed again once rows are deleted. Other parameters are refused, so
// none can undo the journal mode, locking or foreign keys the store
// relies on.
func sqliteSizeCap(query string) (string, error) {
	if query == "" {
		return "", nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("store: sqlite URL parameters: %w; the one parameter is _pragma=max_page_count(N)", err)
	}
	for key, values := range q {
		if key != "_pragma" || len(values) != 1 || !maxPageCountRE.MatchString(values[0]) {
			return "", fmt.Errorf("store: sqlite URL parameter %s=%s is not supported; the one parameter is _pragma=max_page_count(N)", key, strings.Join(values, ","))
		}
	}
	return "&_pragma=" + url.QueryEscape(q.Get("_pragma")), nil
}

// The postgres URL's parameters that size each process's pool: the
// host's and, as their URLs derive from the host's, every plugin's. They
// are pgxpool's names; the server never sees them. pool_max_conns caps
// the pool. pool_min_conns opens that many connections at start and keeps
// the pool's connections open while idle, instead of closing each after
// five minutes unused: a steady load then never forks a backend, not even
// while the pool grows.
const (
	poolMaxConns = "pool_max_conns"
	poolMinConns = "pool_min_conns"
)

// poolParam removes the pool parameter name from params and returns its
// value, def when absent; a value outside [least, 1000] is an error.
func poolParam(params map[string]string, name string, least, def int) (int, error) {
	v, ok := params[name]
	if !ok {
		return def, nil
	}
	delete(params, name)
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > 1000 {
		return 0, fmt.Errorf("store: the postgres URL's %s must be a number of connections from %d to 1000, not %q", name, least, v)
	}
	return n, nil
}

// openPostgres opens the pool and answers how many connections to open
// at start (pool_min_conns, at most the pool's size).
func openPostgres(url string, opts Options) (*bun.DB, int, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// Parse errors quote the URL, and redaction of the password there
		// is only best effort.
		return nil, 0, fmt.Errorf("store: invalid postgres URL")
	}
	if opts.SearchPath != "" {
		// A startup parameter applies to every pooled connection, including
		// those opened after a reconnect, which a one-off SET would not.
		cfg.RuntimeParams["search_path"] = opts.SearchPath
	}
	// pool_max_conns sizes the pool of a caller that asks for no size of
	// its own.
	poolMax, err := poolParam(cfg.RuntimeParams, poolMaxConns, 1, 10)
	if err != nil {
		return nil, 0, err
	}
	poolMin, err := poolParam(cfg.RuntimeParams, poolMinConns, 0, 0)
	if err != nil {
		return nil, 0, err
	}

	sqldb := stdlib.OpenDB(*cfg)
	maxOpen := orDefault(opts.MaxOpenConns, poolMax)
	sqldb.SetMaxOpenConns(maxOpen)
	sqldb.SetMaxIdleConns(orDefault(opts.MaxIdleConns, maxOpen))
	if poolMin == 0 {
		// Lets idle connections drain after a burst instead of pinning
		// server slots on every replica.
		sqldb.SetConnMaxIdleTime(5 * time.Minute)
	}
	return bun.NewDB(sqldb, pgdialect.New(), bun.WithDiscardUnknownColumns()), min(poolMin, maxOpen), nil
}

// prefill opens n connections at once and leaves them idle in db's pool.
func prefill(ctx context.Context, db *bun.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := db.DB.Conn(ctx)
		if err != nil {
			return fmt.Errorf("store: open the pool's first %d connections: %w", n, err)
		}
		conns = append(conns, c)
	}
	return nil
}

// DialectName reports which database db talks to: [DialectSQLite] or
// [DialectPostgres]. Any other bun dialect is reported by its own name.
func DialectName(db *bun.DB) string {
	switch name := db.Dialect().Name(); name {
	case dialect.SQLite:
		return DialectSQLite
	case dialect.PG:
		return DialectPostgres
	default:
		return name.String()
	}
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
