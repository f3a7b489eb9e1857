package evidence_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/partner/evidence"
)

// TestConfigDir: files go where evidence_dir says, else under the host's data
// directory; with neither there is nowhere to keep them.
func TestConfigDir(t *testing.T) {
	if dir, err := (evidence.Config{EvidenceDir: "/srv/evidence"}).Dir("/var/lib/steward"); err != nil || dir != "/srv/evidence" {
		t.Errorf("configured dir: %s, %v", dir, err)
	}
	if dir, err := (evidence.Config{}).Dir("/var/lib/steward"); err != nil || dir != filepath.Join("/var/lib/steward", "partner-evidence") {
		t.Errorf("default dir: %s, %v", dir, err)
	}
	if _, err := (evidence.Config{}).Dir(""); err == nil || !strings.Contains(err.Error(), "evidence_dir") {
		t.Errorf("no dir at all: %v", err)
	}
}
