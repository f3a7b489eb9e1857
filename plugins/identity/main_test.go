package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// The plugin starts as the host starts it: described, its config block
// checked against its schema, built by its factory and checked by
// Validate. It has no settings, so any key is refused.
func TestDefinition(t *testing.T) {
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "identity.db"), Cloud: settings})
	desc := h.Describe()
	if len(desc.Routes) == 0 || len(desc.Jobs) != 1 || len(desc.Datasets) != 1 {
		t.Errorf("described %d routes, %d jobs, %d datasets", len(desc.Routes), len(desc.Jobs), len(desc.Datasets))
	}
	if problems, err := protocol.CheckConfig(desc.ConfigSchema, []byte(`{"graph_url": "x"}`)); err != nil || len(problems) != 1 || problems[0].Key != "graph_url" {
		t.Errorf("a key of a plugin without settings: %+v, %v", problems, err)
	}
}
