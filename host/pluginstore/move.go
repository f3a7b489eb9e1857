package pluginstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

// MigrationsTable records plugin's migrations in its database. Hosts before
// per-plugin storage kept a table of that name, and the plugin's tables,
// in their own database.
func MigrationsTable(plugin string) string { return "plugin_" + plugin + "_migrations" }

// Migrate applies plugin's migrations to its database at databaseURL (from
// Prepare). When the host's database still holds the plugin's tables, as
// hosts before per-plugin storage left them, it first moves them there:
// it replays the migrations the host's bookkeeping says were applied, copies
// every row (and each sequence's position) in one transaction, then drops
// them from the host's database. A move cut short is redone whole at the
// next start, since the host's copy goes only once the plugin's is
// committed.
func (s *Stores) Migrate(ctx context.Context, plugin, databaseURL string, fsys fs.FS) error {
	db, err := store.Open(ctx, databaseURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return fmt.Errorf("plugin %q: open its database: %w", plugin, err)
	}
	defer db.Close()
	if err := s.move(ctx, plugin, db, fsys); err != nil {
		return fmt.Errorf("plugin %q: move its tables out of the host's database: %w", plugin, err)
	}
	if _, err := store.Migrate(ctx, db, fsys, MigrationsTable(plugin)); err != nil {
		return fmt.Errorf("plugin %q: %w", plugin, err)
	}
	return nil
}

func (s *Stores) move(ctx context.Context, plugin string, target *bun.DB, fsys fs.FS) error {
	table := MigrationsTable(plugin)
	host, err := s.opts.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer host.Close()
	if s.dialect == store.DialectSQLite {
		s.moving.Lock()
		defer s.moving.Unlock()
	} else {
		// Another replica may be moving the same tables.
		key := "steward plugin move " + s.schema + "." + plugin
		if _, err := host.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext(?))", key); err != nil {
			return err
		}
		defer func() {
			_, _ = host.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext(?))", key)
		}()
	}
	legacy, err := s.hasTable(ctx, host, table)
	if err != nil || !legacy {
		return err
	}
	var applied []string
	if err := host.NewSelect().Table(table).Column("name").Scan(ctx, &applied); err != nil {
		return err
	}
	replay, err := onlyMigrations(fsys, applied)
	if err != nil {
		return err
	}
	if _, err := store.Migrate(ctx, target, replay, table); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	tables, err := tablesOf(ctx, target, table+"_lock")
	if err != nil {
		return err
	}
	for _, t := range tables {
		ok, err := s.hasTable(ctx, host, t)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("its migrations make table %s, which the host's database lacks", t)
		}
	}
	if s.dialect == store.DialectPostgres {
		err = copyPostgres(ctx, host, target, tables)
	} else {
		err = s.copySQLite(ctx, target, tables)
	}
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	err = s.opts.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, t := range slices.Concat(reversed(tables), []string{table + "_lock"}) {
			if _, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS ?", bun.Ident(t)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop the host's copy: %w", err)
	}
	s.opts.Logger.Info("plugin's tables moved out of the host's database", "plugin", plugin, "tables", len(tables))
	return nil
}

// hasTable reports whether the host's schema (or file) has table.
func (s *Stores) hasTable(ctx context.Context, db bun.Conn, table string) (bool, error) {
	q := "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)"
	if s.dialect == store.DialectPostgres {
		q = "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?)"
	}
	var exists bool
	err := db.NewRaw(q, table).Scan(ctx, &exists)
	return exists, err
}

// onlyMigrations is the files of fsys that belong to the applied
// migrations, named by number as bun records them.
func onlyMigrations(fsys fs.FS, applied []string) (fs.FS, error) {
	want := map[string]bool{}
	for _, a := range applied {
		want[a] = true
	}
	out := fstest.MapFS{}
	found := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") {
			return err
		}
		number, _, _ := strings.Cut(path.Base(p), "_")
		if !want[number] {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = &fstest.MapFile{Data: data}
		found[number] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range slices.Sorted(maps.Keys(want)) {
		if !found[a] {
			return nil, fmt.Errorf("migration %s was applied but the plugin no longer ships it", a)
		}
	}
	return out, nil
}

// tablesOf lists db's tables, but skip, parents before the tables whose
// foreign keys reference them.
func tablesOf(ctx context.Context, db *bun.DB, skip string) ([]string, error) {
	var names []string
	var edges []struct {
		Child  string `bun:"child"`
		Parent string `bun:"parent"`
	}
	if store.DialectName(db) == store.DialectPostgres {
		if err := db.NewRaw(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`).Scan(ctx, &names); err != nil {
			return nil, err
		}
		err := db.NewRaw(`SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k
			JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
			WHERE k.contype = 'f' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`).Scan(ctx, &edges)
		if err != nil {
			return nil, err
		}
	} else {
		if err := db.NewRaw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`).Scan(ctx, &names); err != nil {
			return nil, err
		}
		err := db.NewRaw(`SELECT m.name AS child, f."table" AS parent FROM sqlite_master m, pragma_foreign_key_list(m.name) f
			WHERE m.type = 'table'`).Scan(ctx, &edges)
		if err != nil {
			return nil, err
		}
	}
	parents := map[string][]string{}
	for _, e := range edges {
		if e.Child != e.Parent {
			parents[e.Child] = append(parents[e.Child], e.Parent)
		}
	}
	var order []string
	placed := map[string]bool{}
	var place func(t string, depth int)
	place = func(t string, depth int) {
		// The depth bound ends a cycle of foreign keys, which only a
		// deferred constraint would let any order satisfy.
		if placed[t] || t == skip || depth > len(names) {
			return
		}
		for _, p := range parents[t] {
			place(p, depth+1)
		}
		if !placed[t] {
			placed[t] = true
			order = append(order, t)
		}
	}
	for _, n := range names {
		if n != skip {
			place(n, 0)
		}
	}
	return order, nil
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// copyPostgres copies every row of tables from the host's connection to
// target in one transaction of target's, COPY piped to COPY so that each
// value arrives exactly as stored, then sets each column's sequence where
// the host's was.
func copyPostgres(ctx context.Context, host bun.Conn, target *bun.DB, tables []string) error {
	tconn, err := target.Conn(ctx)
	if err != nil {
		return err
	}
	defer tconn.Close()
	return tconn.Raw(func(tc any) error {
		tpg := tc.(*stdlib.Conn).Conn()
		return host.Raw(func(hc any) error {
			hpg := hc.(*stdlib.Conn).Conn()
			tx, err := tpg.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
			for _, t := range reversed(tables) {
				if _, err := tx.Exec(ctx, "DELETE FROM "+pgx.Identifier{t}.Sanitize()); err != nil {
					return err
				}
			}
			for _, t := range tables {
				if err := copyTable(ctx, hpg, tx, t); err != nil {
					return fmt.Errorf("%s: %w", t, err)
				}
				if err := copySequences(ctx, hpg, tx, t); err != nil {
					return fmt.Errorf("%s: %w", t, err)
				}
			}
			return tx.Commit(ctx)
		})
	})
}

func copyTable(ctx context.Context, host *pgx.Conn, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`, table)
	if err != nil {
		return err
	}
	columns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	target := pgx.Identifier{table}.Sanitize() + " (" + strings.Join(quoted, ", ") + ")"
	r, w := io.Pipe()
	sent := make(chan error, 1)
	go func() {
		_, err := host.PgConn().CopyTo(ctx, w, "COPY "+target+" TO STDOUT")
		w.CloseWithError(err)
		sent <- err
	}()
	_, err = tx.Conn().PgConn().CopyFrom(ctx, r, "COPY "+target+" FROM STDIN")
	r.CloseWithError(errors.Join(err, io.ErrClosedPipe))
	return errors.Join(err, <-sent)
}

// copySequences sets the sequences of table's columns (serial and identity)
// where the host's stand, so that no id is handed out twice.
func copySequences(ctx context.Context, host *pgx.Conn, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `SELECT a.attname, pg_get_serial_sequence(format('%I.%I', current_schema(), $1::text), a.attname)
		FROM pg_attribute a
		WHERE a.attrelid = format('%I.%I', current_schema(), $1::text)::regclass AND a.attnum > 0 AND NOT a.attisdropped
		  AND pg_get_serial_sequence(format('%I.%I', current_schema(), $1::text), a.attname) IS NOT NULL`, table)
	if err != nil {
		return err
	}
	type sequence struct{ Column, Name string }
	seqs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[sequence])
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		var hostSeq sql.NullString
		if err := host.QueryRow(ctx, `SELECT pg_get_serial_sequence(format('%I.%I', current_schema(), $1::text), $2)`, table, seq.Column).Scan(&hostSeq); err != nil {
			return err
		}
		if !hostSeq.Valid {
			continue
		}
		var last int64
		var called bool
		if err := host.QueryRow(ctx, "SELECT last_value, is_called FROM "+hostSeq.String).Scan(&last, &called); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT setval($1::regclass, $2, $3)", seq.Name, last, called); err != nil {
			return err
		}
	}
	return nil
}

// copySQLite copies every row of tables from the host's file, attached to
// one of target's connections, in one transaction of target's, with
// AUTOINCREMENT's counters.
func (s *Stores) copySQLite(ctx context.Context, target *bun.DB, tables []string) error {
	conn, err := target.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS steward_host", s.sqlitePath); err != nil {
		return err
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "DETACH DATABASE steward_host") }()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, t := range reversed(tables) {
		if _, err := tx.ExecContext(ctx, "DELETE FROM main.?", bun.Ident(t)); err != nil {
			return err
		}
	}
	for _, t := range tables {
		var columns []string
		if err := tx.NewRaw("SELECT name FROM pragma_table_info(?) ORDER BY cid", t).Scan(ctx, &columns); err != nil {
			return err
		}
		cols := make([]bun.Ident, len(columns))
		for i, c := range columns {
			cols[i] = bun.Ident(c)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO main.? (?) SELECT ? FROM steward_host.?", bun.Ident(t), bun.List(cols), bun.List(cols), bun.Ident(t)); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	var counters bool
	if err := tx.NewRaw("SELECT EXISTS (SELECT 1 FROM main.sqlite_master WHERE name = 'sqlite_sequence')").Scan(ctx, &counters); err != nil {
		return err
	}
	if counters {
		if _, err := tx.ExecContext(ctx, "DELETE FROM main.sqlite_sequence WHERE name IN (?)", bun.List(tables)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq FROM steward_host.sqlite_sequence WHERE name IN (?)",
			bun.List(tables)); err != nil {
			return err
		}
	}
	return tx.Commit()
}
