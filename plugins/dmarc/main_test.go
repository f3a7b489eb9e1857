package main

import (
	"context"
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

// TestMigrations: the posture's and the reports' migration sets merge
// into one that applies on both databases.
func TestMigrations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(context.Background(), db, New().Migrations, "plugin_dmarc_migrations"); err != nil {
				t.Fatal(err)
			}
			for _, table := range []string{"dmarc_domains", "dmarc_reports", "dmarc_report_records", "dmarc_report_files"} {
				if _, err := db.NewSelect().TableExpr(table).Count(context.Background()); err != nil {
					t.Errorf("table %s: %v", table, err)
				}
			}
		})
	}
}
