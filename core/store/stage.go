package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Stage is a temporary table private to one connection, into which a sync
// streams rows a batch at a time before moving them into its own tables
// in one short transaction: with COPY on PostgreSQL, or with prepared
// multi-row inserts, whose values go to the database as parameters.
type Stage struct {
	// Conn is the connection the stage lives on; the move reads it there.
	Conn    bun.Conn
	table   string
	columns []string
	useCopy bool
	batch   int
	// insert is the prepared statement of a full batch.
	insert *sql.Stmt
	args   []any
}

// OpenStage creates the temporary table (columns is its column
// definitions, names the columns in the order rows are written), or
// empties one a connection whose drop failed left behind. useCopy writes
// with COPY, which needs a PostgreSQL connection; otherwise each INSERT
// carries up to batch rows. Drop the stage when done.
func OpenStage(ctx context.Context, conn bun.Conn, table, columns string, names []string, useCopy bool, batch int) (*Stage, error) {
	st := &Stage{Conn: conn, table: table, columns: names, useCopy: useCopy, batch: batch}
	for _, q := range []string{
		"CREATE TEMPORARY TABLE IF NOT EXISTS " + table + " (" + columns + ")",
		"DELETE FROM " + table,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	if !useCopy {
		stmt, err := conn.PrepareContext(ctx, st.insertSQL(batch))
		if err != nil {
			st.Drop()
			return nil, err
		}
		st.insert = stmt
		st.args = make([]any, 0, batch*len(names))
	}
	return st, nil
}

// Drop removes the stage, even when the sync's context has ended, so the
// pooled connection goes back clean.
func (st *Stage) Drop() {
	if st.insert != nil {
		_ = st.insert.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = st.Conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+st.table)
}

// Write adds n rows; row(i) is the values of row i in the columns' order.
func (st *Stage) Write(ctx context.Context, n int, row func(i int) []any) error {
	if st.useCopy {
		return st.Conn.Raw(func(dc any) error {
			c, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("COPY needs a pgx connection, not %T", dc)
			}
			_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{st.table}, st.columns,
				pgx.CopyFromSlice(n, func(i int) ([]any, error) { return row(i), nil }))
			return err
		})
	}
	for start := 0; start < n; start += st.batch {
		end := min(start+st.batch, n)
		st.args = st.args[:0]
		for i := start; i < end; i++ {
			st.args = append(st.args, row(i)...)
		}
		var err error
		if end-start == st.batch {
			_, err = st.insert.ExecContext(ctx, st.args...)
		} else {
			_, err = st.Conn.Conn.ExecContext(ctx, st.insertSQL(end-start), st.args...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// insertSQL is a multi-row insert of n rows into the stage, with the
// driver's own placeholders ($1… on PostgreSQL, ? on SQLite).
func (st *Stage) insertSQL(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + st.table + " (" + strings.Join(st.columns, ", ") + ") VALUES ")
	pg := st.Conn.Dialect().Name() == dialect.PG
	p := 0
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for j := range st.columns {
			if j > 0 {
				b.WriteByte(',')
			}
			p++
			if pg {
				fmt.Fprintf(&b, "$%d", p)
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}
