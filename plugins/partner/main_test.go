package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// The plugin starts as the host starts it from the example catalogue:
// described, its config block checked against its schema, built by its
// factory and checked by Validate. The schema reaches into an inline
// catalogue, so a mistyped member is named where it is.
func TestDefinition(t *testing.T) {
	dir := t.TempDir()
	h := plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(dir, "partner.db"), DataDir: dir,
		Config: json.RawMessage(`{"catalogue_file": "catalogue.example.hcl"}`)})
	desc := h.Describe()
	if len(desc.Routes) == 0 || len(desc.Jobs) != 2 || len(desc.Pages) == 0 {
		t.Errorf("described %d routes, %d jobs, %d pages", len(desc.Routes), len(desc.Jobs), len(desc.Pages))
	}
	for block, want := range map[string]string{
		`{"catalogue_file": "c.hcl", "evidence_dir": "/srv/evidence", "max_file_bytes": 2048}`: "",
		`{"max_file_bytes": 1023}`:                                       "max_file_bytes: must be >= 1024 but found 1023",
		`{"max_file_bytes": "5MiB"}`:                                     "max_file_bytes: expected integer, but got string",
		`{"programme": {"parnter": "Northwind"}}`:                        "programme.parnter: unknown key; the keys are deadline, description, partner, target_maturity",
		`{"requirements": [{"id": "A-1", "check": {"target": "high"}}]}`: "requirements[0].check.target: expected number, but got string",
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
}

// TestNoCatalogue: a block without a catalogue stops the plugin with an
// error naming the config block, before it opens the database; files go
// under the data directory, 5 MiB at most, unless the block says
// otherwise.
func TestNoCatalogue(t *testing.T) {
	dir := t.TempDir()
	env := &sdk.Env{DataDir: dir, DatabaseURL: "sqlite://" + filepath.Join(dir, "partner.db")}
	_, err := New(context.Background(), config{}.Defaults(), env)
	if err == nil || !strings.Contains(err.Error(), "catalogue: plugins.hcl config: catalogue_file: is required") {
		t.Fatalf("no catalogue: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partner.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the database was opened: %v", err)
	}
	if d := (config{}).Defaults(); d.MaxFileBytes != evidence.DefaultMaxFileBytes || d.EvidenceDir != "" || d.CatalogueFile != "" {
		t.Errorf("defaults %+v", d)
	}
}
