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
package migrations

import "embed"

// Table is the bookkeeping table recording which host migrations are applied.
const Table = "steward_migrations"

// FS holds the host migration files.
//
//go:embed *.sql
var FS embed.FS
