package evidence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Config is the evidence part of the plugin's config {} block, which the
// plugin's config embeds.
type Config struct {
	EvidenceDir string `json:"evidence_dir,omitempty" doc:"Where uploaded evidence files are kept; default evidence in the plugin's own data directory"`
	// MaxFileBytes bounds an uploaded file; 0 is DefaultMaxFileBytes.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty" minimum:"1024" maximum:"1073741824" doc:"Largest uploaded file, in bytes; keep it below STEWARD_MAX_BODY_BYTES, which bounds the whole request first"`
}

// Dir is the blob directory: EvidenceDir, or evidence in the plugin's data
// directory, the plugins/partner folder of the host's.
//
// Hosts before gave plugins their own data directory itself, where the
// default was partner-evidence: Dir moves that folder into the plugin's
// data directory the first time, so the files stored keep their keys.
func (c Config) Dir(dataDir string) (string, error) {
	switch {
	case c.EvidenceDir != "":
		return c.EvidenceDir, nil
	case dataDir == "":
		return "", errors.New("config: evidence_dir is required when the host names no data directory")
	}
	dir := filepath.Join(dataDir, "evidence")
	parent := filepath.Dir(dataDir)
	if filepath.Base(parent) != "plugins" {
		return dir, nil
	}
	earlier := filepath.Join(filepath.Dir(parent), "partner-evidence")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return dir, nil
	}
	if _, err := os.Stat(earlier); err != nil {
		return dir, nil
	}
	if err := os.Rename(earlier, dir); err != nil {
		return "", fmt.Errorf("move the evidence files of %s to %s: %w", earlier, dir, err)
	}
	return dir, nil
}
