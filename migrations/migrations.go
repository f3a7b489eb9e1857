// Package migrations holds the host's own database schema as SQL migration
// files, embedded so the binary carries its schema with it.
//
// The files follow the naming convention of the store package, including its
// dialect tags for DDL that differs between SQLite and PostgreSQL, and are
// applied with
//
//	store.Migrate(ctx, db, migrations.FS, migrations.Table)
//
// Plugins keep their own migrations and tables; nothing here is shared with
// them.
//
// # Expand, then contract
//
// A rolling upgrade runs the new version's replicas beside the previous
// version's on one database: the first new replica to start migrates, and
// old replicas keep serving on the migrated schema until they are
// replaced. So a migration only expands the schema — new tables, new
// columns that are nullable or have a default, new indexes — and never
// removes or renames what the previous release reads or writes, nor
// tightens it (NOT NULL on an existing column, a narrower type). What a
// release stops using is removed by a later release's migration, once no
// replica of a version that used it can still be serving; such a file is
// named with "contract" (0012_contract_drop_x.tx.up.sql, say), the one
// place TestMigrationsOnlyExpand allows removing. Down migrations may
// remove anything: they undo their own up migration.
package migrations

import "embed"

// Table is the bookkeeping table recording which host migrations are applied.
const Table = "steward_migrations"

// FS holds the host migration files.
//
//go:embed *.sql
var FS embed.FS
