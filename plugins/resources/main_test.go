package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// The plugin starts as the host starts it: described, its config block
// checked against its schema, built by its factory and checked by
// Validate. The schema holds the settings to what the plugin can use.
func TestDefinition(t *testing.T) {
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "resources.db"), Cloud: settings,
		Config: json.RawMessage(`{"locations": ["northeurope"], "required_tags": ["env"]}`)})
	desc := h.Describe()
	if len(desc.Routes) == 0 || len(desc.Jobs) != 2 || len(desc.Datasets) != 1 {
		t.Errorf("described %d routes, %d jobs, %d datasets", len(desc.Routes), len(desc.Jobs), len(desc.Datasets))
	}
	for block, want := range map[string]string{
		`{}`:                                "",
		`{"locations": []}`:                 "locations: minimum 1 items required, but found 0 items",
		`{"locations": ["East US"]}`:        "locations[0]: does not match pattern",
		`{"required_tags": ["env", "env"]}`: "required_tags: items at index 0 and 1 are equal",
		`{"required_tags": [""]}`:           "required_tags[0]: length must be >= 1, but got 0",
		`{"location": ["eastus"]}`:          "location: unknown key",
	} {
		problems, err := protocol.CheckConfig(desc.ConfigSchema, []byte(block))
		got := ""
		if len(problems) > 0 {
			got = problems[0].Key + ": " + problems[0].Message
		}
		if err != nil || len(problems) > 1 || !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: %+v, %v; want %q", block, problems, err, want)
		}
	}
	if d := (config{}).Defaults(); !slices.Equal(d.Locations, []string{"eastus", "westeurope"}) || d.RequiredTags != nil {
		t.Errorf("defaults %+v", d)
	}
}

// The quota and inventory migrations form one set, read from its top as
// the SDK sends them to the host.
func TestMigrationSet(t *testing.T) {
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
	want := []string{
		"0001_quota_usages.down.sql", "0001_quota_usages.postgres.up.sql", "0001_quota_usages.sqlite.up.sql",
		"0002_inventory.postgres.tx.up.sql", "0002_inventory.sqlite.tx.up.sql", "0002_inventory.tx.down.sql",
		"0003_inventory_filters.postgres.tx.down.sql", "0003_inventory_filters.postgres.tx.up.sql",
		"0003_inventory_filters.sqlite.tx.down.sql", "0003_inventory_filters.sqlite.tx.up.sql",
		"0004_inventory_revisions.tx.down.sql", "0004_inventory_revisions.tx.up.sql",
		"0005_quota_revisions.tx.down.sql", "0005_quota_revisions.tx.up.sql",
		"0006_quota_subscription_names.tx.down.sql", "0006_quota_subscription_names.tx.up.sql",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("migrations %v, want %v", names, want)
	}
	for _, dialect := range storetest.Dialects() {
		db := storetest.Open(t, dialect)
		applied, err := store.Migrate(context.Background(), db, definition.Migrations, "resources_migrations")
		if err != nil || len(applied) != 6 {
			t.Fatalf("%s: migrated %v, %v", dialect, applied, err)
		}
	}
}
