package store_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// TestMergeMigrations: two packages' migrations read as one set, in the
// order of their numbers whichever set holds them, and apply as one.
func TestMergeMigrations(t *testing.T) {
	later := fstest.MapFS{
		"0100_gadgets.up.sql":   {Data: []byte("CREATE TABLE gadgets (id INTEGER PRIMARY KEY)")},
		"0100_gadgets.down.sql": {Data: []byte("DROP TABLE gadgets")},
	}
	merged := store.MergeMigrations(later, baseMigrations())
	var names []string
	err := fs.WalkDir(merged, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0001_widgets.down.sql", "0001_widgets.up.sql", "0002_marker.down.sql", "0002_marker.postgres.up.sql",
		"0002_marker.sqlite.up.sql", "0100_gadgets.down.sql", "0100_gadgets.up.sql", "README.md"}
	if !slices.Equal(names, want) {
		t.Fatalf("merged %v, want %v", names, want)
	}
	f, err := merged.Open("0001_widgets.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != string(baseMigrations()["0001_widgets.up.sql"].Data) {
		t.Fatalf("0001_widgets.up.sql reads %q, %v", b, err)
	}
	if _, err := merged.Open("0004_missing.up.sql"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file opens with %v", err)
	}
	for _, dialect := range storetest.Dialects() {
		db := storetest.Open(t, dialect)
		applied, err := store.Migrate(context.Background(), db, merged, "merged_migrations")
		if err != nil || !slices.Equal(applied, []string{"0001_widgets", "0002_marker", "0100_gadgets"}) {
			t.Fatalf("%s: migrated %v, %v", dialect, applied, err)
		}
	}
}
