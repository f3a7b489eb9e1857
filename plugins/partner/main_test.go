package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/sdk"
)

// The definition is checked at test time, not only when the host starts
// the plugin and sdk.Serve refuses it.
func TestDefinition(t *testing.T) {
	if err := New().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigure: the example catalogue configures the plugin; no
// catalogue stops it with an error naming the config block, before it
// opens the database.
func TestConfigure(t *testing.T) {
	example, _ := json.Marshal(map[string]string{"catalogue_file": "catalogue.example.hcl"})
	dir := t.TempDir()
	env := &sdk.Env{Config: example, DataDir: dir, DatabaseURL: "sqlite://" + filepath.Join(dir, "partner.db")}
	if err := New().Configure(context.Background(), env); err != nil {
		t.Fatalf("the example catalogue: %v", err)
	}
	env.Config = json.RawMessage(`{}`)
	err := New().Configure(context.Background(), env)
	if err == nil || !strings.Contains(err.Error(), "catalogue: plugins.hcl config: catalogue_file: is required") {
		t.Fatalf("no catalogue: %v", err)
	}
}
