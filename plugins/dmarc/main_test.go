package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
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
		`{"reports_directory": "/var/dmarc"}`: "reports_directory: unknown key; the keys are check_timeout, concurrency, dkim_selectors, mailbox_folder, mailbox_sync, reports_dir, resolver",
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

// TestReportsFreshness: the reports' job keeps the dmarc_reports domain
// only when a folder is configured, and a run that read it marks every
// active tenant fresh; without a folder no tenant is judged on reports.
func TestReportsFreshness(t *testing.T) {
	tenants := []sdk.Tenant{{ID: "t1", Name: "Contoso", IsActive: true}, {ID: "t2", Name: "Fabrikam", IsActive: true}}
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, config string) *plugintest.Harness {
		return plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "dmarc.db"),
			Cloud: settings, Config: json.RawMessage(config), Tenants: tenants})
	}
	domainOf := func(h *plugintest.Harness) string {
		for _, j := range h.Describe().Jobs {
			if j.Name == "dmarc_reports" {
				return j.DataDomain
			}
		}
		t.Fatal("no dmarc_reports job")
		return ""
	}

	without := start(t, `{}`)
	if d := domainOf(without); d != "" {
		t.Errorf("without reports_dir the job keeps domain %q", d)
	}
	if _, _, err := without.RunJob(context.Background(), "dmarc_reports"); err != nil || len(without.FreshMarks()) != 0 {
		t.Errorf("a run without a folder: %v, marks %+v", err, without.FreshMarks())
	}

	with := start(t, `{"reports_dir": `+strconv.Quote(t.TempDir())+`}`)
	if d := domainOf(with); d != "dmarc_reports" {
		t.Errorf("with reports_dir the job keeps domain %q", d)
	}
	before := time.Now().Add(-time.Second)
	if _, _, err := with.RunJob(context.Background(), "dmarc_reports"); err != nil {
		t.Fatal(err)
	}
	marks := with.FreshMarks()
	if len(marks) != 2 || marks[0].TenantID != "t1" || marks[1].TenantID != "t2" || marks[0].Domain != "dmarc_reports" || marks[0].SyncedAt.Before(before) {
		t.Errorf("marks after reading the folder: %+v, want both tenants fresh", marks)
	}
}
