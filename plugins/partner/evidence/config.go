package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// Config is the evidence part of the plugin's config {} block.
type Config struct {
	// EvidenceDir is where uploaded files are kept; empty is
	// partner-evidence under the host's data directory.
	EvidenceDir string `json:"evidence_dir"`
	// MaxFileBytes bounds an uploaded file; 0 is DefaultMaxFileBytes.
	// Keep it below the host's STEWARD_MAX_BODY_BYTES, which bounds the
	// whole request first.
	MaxFileBytes int64 `json:"max_file_bytes"`
}

// Bounds of max_file_bytes.
const (
	minFileLimit = 1 << 10
	maxFileLimit = 1 << 30
)

// configProperties are the members Config reads, as JSON Schema
// properties.
const configProperties = `{
  "evidence_dir": {"type": "string", "description": "Where uploaded evidence files are kept; default partner-evidence under the host's data directory"},
  "max_file_bytes": {"type": "integer", "minimum": 1024, "maximum": 1073741824, "description": "Largest uploaded file, 5 MiB by default; keep it below STEWARD_MAX_BODY_BYTES"}}`

// ReadConfig takes the evidence members out of the plugin's config block:
// it returns them, checked, and the block without them for the plugin's
// other parts to read.
func ReadConfig(raw json.RawMessage) (Config, json.RawMessage, error) {
	var cfg Config
	if len(bytes.TrimSpace(raw)) == 0 {
		return cfg, raw, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return cfg, nil, fmt.Errorf("config: %w", err)
	}
	if v, ok := members["evidence_dir"]; ok {
		if err := json.Unmarshal(v, &cfg.EvidenceDir); err != nil {
			return cfg, nil, errors.New("config: evidence_dir must be a string")
		}
		delete(members, "evidence_dir")
	}
	if v, ok := members["max_file_bytes"]; ok {
		if err := json.Unmarshal(v, &cfg.MaxFileBytes); err != nil || cfg.MaxFileBytes < minFileLimit || cfg.MaxFileBytes > maxFileLimit {
			return cfg, nil, fmt.Errorf("config: max_file_bytes must be a whole number of bytes from %d to %d", minFileLimit, maxFileLimit)
		}
		delete(members, "max_file_bytes")
	}
	rest, err := json.Marshal(members)
	return cfg, rest, err
}

// Dir is the blob directory: EvidenceDir, or partner-evidence under the
// host's data directory.
func (c Config) Dir(dataDir string) (string, error) {
	switch {
	case c.EvidenceDir != "":
		return c.EvidenceDir, nil
	case dataDir != "":
		return filepath.Join(dataDir, "partner-evidence"), nil
	}
	return "", errors.New("config: evidence_dir is required when the host names no data directory")
}

// ExtendConfigSchema adds Config's members to the properties of the
// plugin's config schema.
func ExtendConfigSchema(schema string) (json.RawMessage, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, err
	}
	props := map[string]json.RawMessage{}
	if raw, ok := s["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, err
		}
	}
	var own map[string]json.RawMessage
	if err := json.Unmarshal([]byte(configProperties), &own); err != nil {
		return nil, err
	}
	for k, v := range own {
		props[k] = v
	}
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	s["properties"] = raw
	return json.Marshal(s)
}
