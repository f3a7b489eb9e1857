package evidence_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/partner/evidence"
)

// TestReadConfig: the evidence members are taken out of the plugin's
// config block and checked; the rest is left for the catalogue.
func TestReadConfig(t *testing.T) {
	cfg, rest, err := evidence.ReadConfig(json.RawMessage(`{"catalogue_file":"c.hcl","evidence_dir":"/srv/evidence","max_file_bytes":2048}`))
	if err != nil || cfg.EvidenceDir != "/srv/evidence" || cfg.MaxFileBytes != 2048 || string(rest) != `{"catalogue_file":"c.hcl"}` {
		t.Errorf("ReadConfig = %+v, %s, %v", cfg, rest, err)
	}
	for _, bad := range []string{`{"max_file_bytes":1023}`, `{"max_file_bytes":1073741825}`, `{"max_file_bytes":"5MiB"}`, `{"evidence_dir":1}`, `[]`} {
		if _, _, err := evidence.ReadConfig(json.RawMessage(bad)); err == nil {
			t.Errorf("ReadConfig(%s) accepted", bad)
		}
	}
	if dir, err := (evidence.Config{}).Dir("/var/lib/steward"); err != nil || dir != filepath.Join("/var/lib/steward", "partner-evidence") {
		t.Errorf("default dir: %s, %v", dir, err)
	}
	if _, err := (evidence.Config{}).Dir(""); err == nil || !strings.Contains(err.Error(), "evidence_dir") {
		t.Errorf("no data directory: %v", err)
	}
}

// TestExtendConfigSchema: the evidence members join the schema's
// properties, whose other members and settings stay.
func TestExtendConfigSchema(t *testing.T) {
	raw, err := evidence.ExtendConfigSchema(`{"type":"object","additionalProperties":false,"properties":{"catalogue_file":{"type":"string"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		AdditionalProperties bool                       `json:"additionalProperties"`
		Properties           map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.AdditionalProperties || len(s.Properties) != 3 || s.Properties["max_file_bytes"] == nil {
		t.Errorf("schema %s: %v", raw, err)
	}
}
