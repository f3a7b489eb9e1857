package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MigrationStatus describes one migration known to an owner's file set.
type MigrationStatus struct {
	// Name is the migration's number and name, e.g. "0001_core".
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
	// AppliedAt is zero while the migration is pending.
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// lockWait bounds how long Migrate and Rollback wait for another process's
// migration lock. A lock still held after that long most likely belongs to a
// process that died mid-migration and needs an operator.
const lockWait = 2 * time.Minute

var tableNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Migrate applies the pending migrations from fsys, recording them in table,
// and returns the names of those it applied, in order. Concurrent callers on
// the same database (replicas starting together) are serialized by a lock, so
// each migration runs once; the later caller finds nothing left to apply.
// On error nothing is returned besides the error, which names the failing
// migration; [Status] tells what was applied.
func Migrate(ctx context.Context, db *bun.DB, fsys fs.FS, table string) (names []string, err error) {
	m, err := newMigrator(db, fsys, table)
	if err != nil {
		return nil, err
	}
	release, err := acquireLock(ctx, m, table)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, release()) }()

	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate %s: %w", table, err)
	}
	names = make([]string, 0, len(group.Migrations))
	for _, mig := range group.Migrations {
		names = append(names, mig.String())
	}
	return names, nil
}

// Rollback reverts the most recently applied group of migrations (those one
// Migrate call applied) and returns their names in the order reverted. It
// takes the same lock as [Migrate].
func Rollback(ctx context.Context, db *bun.DB, fsys fs.FS, table string) (names []string, err error) {
	m, err := newMigrator(db, fsys, table)
	if err != nil {
		return nil, err
	}
	release, err := acquireLock(ctx, m, table)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, release()) }()

	group, err := m.Rollback(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: roll back %s: %w", table, err)
	}
	names = make([]string, 0, len(group.Migrations))
	for i := len(group.Migrations) - 1; i >= 0; i-- {
		names = append(names, group.Migrations[i].String())
	}
	return names, nil
}

// Status lists every migration in fsys, oldest first, with whether it is
// applied. It creates the bookkeeping tables if they do not exist yet.
func Status(ctx context.Context, db *bun.DB, fsys fs.FS, table string) ([]MigrationStatus, error) {
	m, err := newMigrator(db, fsys, table)
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("store: init %s: %w", table, err)
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: status of %s: %w", table, err)
	}
	out := make([]MigrationStatus, 0, len(ms))
	for _, mig := range ms {
		st := MigrationStatus{Name: mig.String(), Applied: mig.IsApplied()}
		if st.Applied {
			st.AppliedAt = mig.MigratedAt
		}
		out = append(out, st)
	}
	return out, nil
}

func newMigrator(db *bun.DB, fsys fs.FS, table string) (*migrate.Migrator, error) {
	// The name is spliced into SQL unquoted by bun.
	if !tableNameRE.MatchString(table) {
		return nil, fmt.Errorf("store: invalid migration table name %q", table)
	}
	filtered, err := filterDialect(fsys, DialectName(db))
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(filtered); err != nil {
		return nil, fmt.Errorf("store: discover migrations for %s: %w", table, err)
	}
	return migrate.NewMigrator(db, ms,
		migrate.WithTableName(table),
		migrate.WithLocksTableName(table+"_lock"),
		// By default bun records a migration before running it, so a failed
		// migration would look applied and never be retried.
		migrate.WithMarkAppliedOnSuccess(true),
	), nil
}

// acquireLock takes bun's migration lock, waiting while another process holds
// it. bun's lock is a row insert that fails at once when the row exists, so
// waiting means retrying; only conflict errors are retried, anything else is
// returned. The returned release function must be called to unlock.
func acquireLock(ctx context.Context, m *migrate.Migrator, table string) (func() error, error) {
	deadline := time.Now().Add(lockWait)
	delay := 25 * time.Millisecond
	for {
		// Init runs inside the loop because concurrent CREATE TABLE IF NOT
		// EXISTS on PostgreSQL can itself fail with a conflict.
		err := m.Init(ctx)
		if err == nil {
			err = m.Lock(ctx)
		}
		if err == nil {
			break
		}
		if !isConflict(err) {
			return nil, fmt.Errorf("store: lock %s: %w", table, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("store: %s is still locked after %s; if no migration is running, delete its row from %s_lock: %w",
				table, lockWait, table, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("store: waiting for lock on %s: %w", table, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}

	release := func() error {
		// Unlocking must survive the caller's context being cancelled,
		// otherwise the lock would stay behind and block every later run.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := m.Unlock(uctx); err != nil {
			return fmt.Errorf("store: unlock %s: %w", table, err)
		}
		return nil
	}
	return release, nil
}

// isConflict reports whether err means another process created the same
// row or object first.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505", // unique_violation
			"42P07", // duplicate_table
			"42710": // duplicate_object
			return true
		}
		return false
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	return false
}

// knownDialects are the tags a migration file name may carry.
var knownDialects = []string{DialectSQLite, DialectPostgres}

// migrationVariants collects, for one migration and direction, the untagged
// file and the dialect-tagged ones.
type migrationVariants struct {
	generic string
	tagged  map[string]string
}

// filterDialect returns a view of fsys in which each migration direction is
// represented by exactly the one file meant for dialect, as described in the
// package documentation, so that bun's Discover sees a plain file set.
func filterDialect(fsys fs.FS, dialect string) (fs.FS, error) {
	groups := map[string]*migrationVariants{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		key, tag, ok, err := parseMigrationFile(path.Base(p))
		if err != nil || !ok {
			return err
		}
		g := groups[key]
		if g == nil {
			g = &migrationVariants{tagged: map[string]string{}}
			groups[key] = g
		}
		prev := g.generic
		if tag == "" {
			g.generic = p
		} else {
			prev = g.tagged[tag]
			g.tagged[tag] = p
		}
		if prev != "" {
			return fmt.Errorf("store: migration files %s and %s define the same migration", prev, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	hidden := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		if g.generic == "" {
			for _, d := range knownDialects {
				if g.tagged[d] == "" {
					return nil, fmt.Errorf("store: migration %s has dialect-specific files but none for %s and no untagged fallback", key, d)
				}
			}
		}
		keep, ok := g.tagged[dialect]
		if !ok {
			keep = g.generic
		}
		if g.generic != keep {
			hidden[g.generic] = true
		}
		for _, p := range g.tagged {
			if p != keep {
				hidden[p] = true
			}
		}
	}
	return filteredFS{fsys: fsys, hidden: hidden}, nil
}

// parseMigrationFile splits a migration file name into a key identifying the
// migration and direction ("0001_core.up") and its dialect tag, if any. ok is
// false for files that are not migrations.
func parseMigrationFile(base string) (key, tag string, ok bool, err error) {
	var stem, dir string
	switch {
	case strings.HasSuffix(base, ".up.sql"):
		stem, dir = strings.TrimSuffix(base, ".up.sql"), "up"
	case strings.HasSuffix(base, ".down.sql"):
		stem, dir = strings.TrimSuffix(base, ".down.sql"), "down"
	default:
		return "", "", false, nil
	}
	stem = strings.TrimSuffix(stem, ".tx")
	id, tag, _ := strings.Cut(stem, ".")
	if tag != "" && !slices.Contains(knownDialects, tag) {
		return "", "", false, fmt.Errorf("store: migration file %s: unknown dialect tag %q; want one of %s",
			base, tag, strings.Join(knownDialects, ", "))
	}
	return id + "." + dir, tag, true, nil
}

// filteredFS hides the files of other dialects. It implements fs.ReadDirFS
// because directory walks list entries through ReadDir, not Open.
type filteredFS struct {
	fsys   fs.FS
	hidden map[string]bool
}

func (f filteredFS) Open(name string) (fs.File, error) {
	if f.hidden[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f.fsys.Open(name)
}

func (f filteredFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(f.fsys, name)
	if err != nil {
		return nil, err
	}
	kept := entries[:0]
	for _, e := range entries {
		if !f.hidden[path.Join(name, e.Name())] {
			kept = append(kept, e)
		}
	}
	return kept, nil
}
