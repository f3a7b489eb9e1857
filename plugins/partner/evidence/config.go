package evidence

import (
	"errors"
	"path/filepath"
)

// Config is the evidence part of the plugin's config {} block, which the
// plugin's config embeds.
type Config struct {
	EvidenceDir string `json:"evidence_dir,omitempty" doc:"Where uploaded evidence files are kept; default partner-evidence under the host's data directory"`
	// MaxFileBytes bounds an uploaded file; 0 is DefaultMaxFileBytes.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty" minimum:"1024" maximum:"1073741824" doc:"Largest uploaded file, in bytes; keep it below STEWARD_MAX_BODY_BYTES, which bounds the whole request first"`
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
