package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/dmarc/domains"
)

// The definition is checked at test time, not only when the host starts
// the plugin and sdk.Serve refuses it.
func TestDefinition(t *testing.T) {
	p := New()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	// The posture publishes its dataset, and its fragments lead the DMARC
	// page's slot.
	if len(p.Datasets) != 1 || p.Datasets[0].Name != domains.DatasetName {
		t.Errorf("datasets %+v, want %s", p.Datasets, domains.DatasetName)
	}
	if p.Fragments[1].Path != domains.PostureFragmentPath || p.Fragments[1].Slot != domains.PageSlot {
		t.Errorf("fragments %+v", p.Fragments)
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

// TestConfigCheck: selectors are lower-cased, and each setting out of
// its bounds stops the plugin with the setting named.
func TestConfigCheck(t *testing.T) {
	c := config{DKIMSelectors: []string{"Selector1", "google"}, Concurrency: 8, CheckTimeout: "5s"}
	if timeout, err := c.check(); err != nil || timeout != 5*time.Second || !slices.Equal(c.DKIMSelectors, []string{"selector1", "google"}) {
		t.Errorf("check: %v, %v, selectors %v", timeout, err, c.DKIMSelectors)
	}
	if timeout, err := (&config{Concurrency: 1}).check(); err != nil || timeout != 30*time.Second {
		t.Errorf("default timeout: %v, %v", timeout, err)
	}
	for name, bad := range map[string]config{
		"dkim_selectors[1]": {DKIMSelectors: []string{"ok", "not ok"}, Concurrency: 8},
		"dkim_selectors":    {DKIMSelectors: strings.Split("a,b,c,d,e,f,g,h,i,j,k", ","), Concurrency: 8},
		"concurrency 0":     {Concurrency: 0},
		"concurrency 65":    {Concurrency: 65},
		"check_timeout":     {Concurrency: 8, CheckTimeout: "-1s"},
	} {
		if _, err := bad.check(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
