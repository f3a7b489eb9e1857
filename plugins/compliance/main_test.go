package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/rules"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// The plugin starts as the host starts it: described, its config block
// checked against its schema, built by its factory and checked by
// Validate.
func TestDefinition(t *testing.T) {
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "compliance.db"), Cloud: settings})
	desc := h.Describe()
	if len(desc.Routes) == 0 || len(desc.Jobs) != 3 || len(desc.Datasets) != 3 || len(desc.Pages) == 0 {
		t.Errorf("described %d routes, %d jobs, %d datasets, %d pages", len(desc.Routes), len(desc.Jobs), len(desc.Datasets), len(desc.Pages))
	}
	problems, err := protocol.CheckConfig(desc.ConfigSchema, []byte(`{"frameworks_dir": 7, "framework_dir": "x"}`))
	if err != nil || len(problems) != 2 || problems[0].Key != "framework_dir" || problems[1].Message != "expected string, but got number" {
		t.Errorf("problems %+v, %v", problems, err)
	}
}

// TestFrameworksDir: a deployment's folder adds its frameworks to the
// built-in ones; a bad file in it stops the plugin with an error naming
// the file and the field.
func TestFrameworksDir(t *testing.T) {
	ctx := context.Background()
	m, err := newMapper(ctx, config{})
	if err != nil {
		t.Fatal(err)
	}
	builtin := len(m.Frameworks().All())

	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("coverage", "testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = newMapper(ctx, config{FrameworksDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Frameworks().Get("acme"); !ok || len(m.Frameworks().All()) != builtin+1 {
		t.Errorf("frameworks %d, want the %d built-in and acme", len(m.Frameworks().All()), builtin)
	}

	bad := strings.Replace(string(raw), `"version": "2026.1"`, `"version": 2026`, 1)
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = newMapper(ctx, config{FrameworksDir: dir})
	if err == nil || !strings.Contains(err.Error(), "broken.json") || !strings.Contains(err.Error(), "version") {
		t.Errorf("a bad framework file: %v, want an error naming broken.json and version", err)
	}
	if _, err := newMapper(ctx, config{FrameworksDir: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing folder: %v", err)
	}
}

// TestMigrations: the policy states', the custom rules', the defender
// tables' and the exemptions' migrations are one set, which applies on both databases; the rules' compliance_score
// record is the tenant's latest snapshot, none before its first or while
// it has no percent.
func TestMigrations(t *testing.T) {
	var names []string
	err := fs.WalkDir(definition.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0001_policy_states.postgres.tx.up.sql", "0001_policy_states.sqlite.tx.up.sql", "0001_policy_states.tx.down.sql",
		"0002_definition_counts.postgres.tx.up.sql", "0002_definition_counts.sqlite.tx.up.sql", "0002_definition_counts.tx.down.sql",
		"0003_resource_states_lookup.tx.down.sql", "0003_resource_states_lookup.tx.up.sql",
		"0004_findings.tx.down.sql", "0004_findings.tx.up.sql",
		"0005_policy_definitions.tx.down.sql", "0005_policy_definitions.tx.up.sql",
		"0006_control_results.tx.down.sql", "0006_control_results.tx.up.sql",
		"0100_rules.postgres.tx.up.sql", "0100_rules.sqlite.tx.up.sql", "0100_rules.tx.down.sql",
		"0200_defender.postgres.tx.up.sql", "0200_defender.sqlite.tx.up.sql", "0200_defender.tx.down.sql",
		"0300_exemptions.postgres.tx.up.sql", "0300_exemptions.sqlite.tx.up.sql", "0300_exemptions.tx.down.sql"}
	if !slices.Equal(names, want) {
		t.Fatalf("migrations %v, want %v", names, want)
	}
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			applied, err := store.Migrate(ctx, db, definition.Migrations, "compliance_migrations")
			if err != nil || !slices.Equal(applied, []string{"0001_policy_states", "0002_definition_counts", "0003_resource_states_lookup", "0004_findings", "0005_policy_definitions", "0006_control_results", "0100_rules", "0200_defender", "0300_exemptions"}) {
				t.Fatalf("migrated %v, %v", applied, err)
			}
			scores := latestScore(&states.Store{DB: db})
			taken := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
			snaps := []states.Snapshot{
				{TenantID: "t-a", Day: "2026-11-24", CompliantResources: 1, NonCompliantResources: 1, TakenAt: taken.AddDate(0, 0, -1)},
				{TenantID: "t-a", Day: "2026-11-25", CompliantResources: 3, NonCompliantResources: 1, TotalResources: 5,
					CompliantPolicies: 7, NonCompliantPolicies: 2, TakenAt: taken},
				{TenantID: "t-empty", Day: "2026-11-25", TotalResources: 2, TakenAt: taken},
			}
			if _, err := db.NewInsert().Model(&snaps).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := scores.LatestScore(ctx, "t-a")
			want := rules.Score{TenantID: "t-a", Date: "2026-11-25", OverallCompliancePercent: 75, CompliantResources: 3,
				NonCompliantResources: 1, CompliantPolicies: 7, NonCompliantPolicies: 2, SyncedAt: taken}
			if err != nil || got == nil || *got != want {
				t.Errorf("t-a's score %+v, %v; want %+v", got, err, want)
			}
			for _, tenant := range []string{"t-empty", "t-never"} {
				if got, err := scores.LatestScore(ctx, tenant); got != nil || err != nil {
					t.Errorf("%s's score %+v, %v; want none", tenant, got, err)
				}
			}
		})
	}
}
