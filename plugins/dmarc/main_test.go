package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// The plugin starts as the host starts it: described, its config block
// checked against its schema, built by its factory and checked by
// Validate. The posture publishes its dataset, and its fragments lead the
// DMARC page's slot.
func TestDefinition(t *testing.T) {
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "dmarc.db"), Cloud: settings,
		Config: json.RawMessage(`{"dkim_selectors": ["Google"], "check_timeout": "10s"}`)})
	desc := h.Describe()
	if len(desc.Datasets) != 1 || desc.Datasets[0].Name != domains.DatasetName {
		t.Errorf("datasets %+v, want %s", desc.Datasets, domains.DatasetName)
	}
	if desc.Fragments[1].Path != domains.PostureFragmentPath || desc.Fragments[1].Slot != domains.PageSlot {
		t.Errorf("fragments %+v", desc.Fragments)
	}
	for block, want := range map[string]string{
		`{}`:                                  "",
		`{"concurrency": 0}`:                  "concurrency: must be >= 1 but found 0",
		`{"concurrency": 65}`:                 "concurrency: must be <= 64 but found 65",
		`{"check_timeout": "soon"}`:           "check_timeout: must be a duration such as 30s, 5m or 1h30m",
		`{"check_timeout": "-1s"}`:            "check_timeout: must be a duration such as 30s, 5m or 1h30m",
		`{"dkim_selectors": ["a", 1]}`:        "dkim_selectors[1]: expected string, but got number",
		`{"reports_directory": "/var/dmarc"}`: "reports_directory: unknown key; the keys are check_timeout, concurrency, dkim_selectors, reports_dir, resolver",
	} {
		problems, err := protocol.CheckConfig(desc.ConfigSchema, []byte(block))
		got := ""
		if len(problems) > 0 {
			got = problems[0].Key + ": " + problems[0].Message
		}
		if err != nil || len(problems) > 1 || got != want {
			t.Errorf("%s: %+v, %v; want %q", block, problems, err, want)
		}
	}
	var schema struct {
		Properties map[string]struct {
			MaxItems int `json:"maxItems"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(desc.ConfigSchema, &schema); err != nil || schema.Properties["dkim_selectors"].MaxItems != domains.MaxSelectors {
		t.Errorf("dkim_selectors holds at most %d, the domains' bound is %d (%v)", schema.Properties["dkim_selectors"].MaxItems, domains.MaxSelectors, err)
	}
}

// TestMigrations: the posture's and the reports' migration sets merge
// into one that applies on both databases.
func TestMigrations(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(context.Background(), db, definition.Migrations, "plugin_dmarc_migrations"); err != nil {
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

// TestConfigCheck: selectors are lower-cased, and what the schema cannot
// say of a setting stops the plugin with the setting named.
func TestConfigCheck(t *testing.T) {
	c := config{DKIMSelectors: []string{"Selector1", "google"}, CheckTimeout: sdk.Duration(5 * time.Second)}
	if err := c.check(); err != nil || !slices.Equal(c.DKIMSelectors, []string{"selector1", "google"}) {
		t.Errorf("check: %v, selectors %v", err, c.DKIMSelectors)
	}
	if d := (config{}).Defaults(); time.Duration(d.CheckTimeout) != 30*time.Second || d.Concurrency != 8 || !slices.Equal(d.DKIMSelectors, []string{"selector1", "selector2"}) {
		t.Errorf("defaults %+v", d)
	}
	for name, bad := range map[string]config{
		"dkim_selectors[1]": {DKIMSelectors: []string{"ok", "not ok"}, CheckTimeout: sdk.Duration(time.Second)},
		"check_timeout":     {CheckTimeout: 0},
	} {
		if err := bad.check(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
