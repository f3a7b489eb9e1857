package main

import (
	"context"
	"io/fs"
	"slices"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// The definition is checked at test time, not only when the host starts
// the plugin and sdk.Serve refuses it.
func TestDefinition(t *testing.T) {
	if err := New().Validate(); err != nil {
		t.Fatal(err)
	}
}

// The quota and inventory migrations form one set, read from its top as
// the SDK sends them to the host.
func TestMigrationSet(t *testing.T) {
	var names []string
	err := fs.WalkDir(New().Migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0001_quota_usages.down.sql", "0001_quota_usages.postgres.up.sql", "0001_quota_usages.sqlite.up.sql",
		"0002_inventory.postgres.tx.up.sql", "0002_inventory.sqlite.tx.up.sql", "0002_inventory.tx.down.sql",
		"0003_inventory_filters.postgres.tx.down.sql", "0003_inventory_filters.postgres.tx.up.sql",
		"0003_inventory_filters.sqlite.tx.down.sql", "0003_inventory_filters.sqlite.tx.up.sql",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("migrations %v, want %v", names, want)
	}
	for _, dialect := range storetest.Dialects() {
		db := storetest.Open(t, dialect)
		applied, err := store.Migrate(context.Background(), db, New().Migrations, "resources_migrations")
		if err != nil || len(applied) != 3 {
			t.Fatalf("%s: migrated %v, %v", dialect, applied, err)
		}
	}
}
