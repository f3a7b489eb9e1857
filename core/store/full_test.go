package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

func TestSQLiteURLParameters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, query := range []string{"_pragma=journal_mode(DELETE)", "_foreign_keys=off", "_pragma=max_page_count(0)",
		"_pragma=max_page_count(x)", "_pragma=max_page_count(10)&_pragma=max_page_count(20)", "_pragma=max_page_count(10);PRAGMA foreign_keys=off"} {
		db, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "x.db")+"?"+query, store.Options{})
		if err == nil {
			db.Close()
			t.Errorf("?%s: accepted, want refused", query)
		} else if !strings.Contains(err.Error(), "max_page_count(N)") {
			t.Errorf("?%s: %v, want an error naming the one parameter", query, err)
		}
	}
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "capped.db")+"?_pragma=max_page_count(123)", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pages int
	if err := db.NewRaw("PRAGMA max_page_count").Scan(ctx, &pages); err != nil || pages != 123 {
		t.Fatalf("max_page_count %d (%v), want 123", pages, err)
	}
	// The parameter does not replace the store's own settings.
	var mode string
	var fk int
	if err := db.NewRaw("PRAGMA journal_mode").Scan(ctx, &mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (%v), want wal", mode, err)
	}
	if err := db.NewRaw("PRAGMA foreign_keys").Scan(ctx, &fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d (%v), want on", fk, err)
	}
}

// fillUp inserts ever smaller rows into filler until the database is full,
// and returns how many it inserted.
func fillUp(t *testing.T, db *bun.DB) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for size := 64 << 10; size >= 16; size /= 4 {
		for {
			_, err := db.ExecContext(ctx, "INSERT INTO filler (b) VALUES (zeroblob(?))", size)
			if store.Full(err) {
				break
			}
			if err != nil {
				t.Fatalf("filling: %v", err)
			}
			n++
		}
	}
	return n
}

// TestSQLiteFull: a database at its size cap — SQLite answers as on a full
// disk — refuses a multi-row transaction whole, with an error Full and
// Unavailable report; reads go on, the file stays sound, and once rows are
// deleted writes succeed again on the same connections.
func TestSQLiteFull(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "full.db")+"?_pragma=max_page_count(64)", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{"CREATE TABLE filler (b BLOB NOT NULL)", "CREATE TABLE items (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}

	// 64 pages of 4 KiB cannot hold 400 rows of 1 KiB: the transaction
	// fails part way and none of its rows stays.
	body := strings.Repeat("x", 1024)
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for i := range 400 {
			if _, err := tx.ExecContext(ctx, "INSERT INTO items (id, body) VALUES (?, ?)", i, body); err != nil {
				return err
			}
		}
		return nil
	})
	if !store.Full(err) || !store.Unavailable(err) {
		t.Fatalf("a transaction past the cap: %v, want an error Full and Unavailable report", err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM items").Scan(ctx, &n); err != nil {
			t.Fatalf("reading a full database: %v", err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("%d rows of the failed transaction were kept, want none", n)
	}

	if _, err := db.ExecContext(ctx, "INSERT INTO items (id, body) VALUES (1, 'before')"); err != nil {
		t.Fatal(err)
	}
	if fillUp(t, db) == 0 {
		t.Fatal("nothing fitted before the cap")
	}
	// A row larger than a page needs new pages, wherever it goes; a small
	// one may still fit in a page's free space.
	large := strings.Repeat("y", 8192)
	_, err = db.ExecContext(ctx, "INSERT INTO items (id, body) VALUES (2, ?)", large)
	if !store.Full(err) {
		t.Fatalf("a write to a full database: %v, want Full", err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d rows after the refused write, want 1", n)
	}
	var check string
	if err := db.NewRaw("PRAGMA integrity_check").Scan(ctx, &check); err != nil || check != "ok" {
		t.Fatalf("integrity_check %q (%v)", check, err)
	}

	// Space freed inside the file is used again: no reopening needed.
	if _, err := db.ExecContext(ctx, "DELETE FROM filler"); err != nil {
		t.Fatalf("deleting from a full database: %v", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO items (id, body) VALUES (2, ?)", large); err != nil {
		t.Fatalf("a write once space is freed: %v", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
}

func TestFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"other error", errors.New("database or disk is full"), false},
		{"postgres disk full", &pgconn.PgError{Code: "53100"}, true},
		{"postgres out of memory", &pgconn.PgError{Code: "53200"}, false},
	} {
		if got := store.Full(tc.err); got != tc.want {
			t.Errorf("%s: Full(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
		if tc.want && !store.Unavailable(tc.err) {
			t.Errorf("%s: Full but not Unavailable", tc.name)
		}
	}
}
