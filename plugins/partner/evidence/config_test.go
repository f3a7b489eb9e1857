package evidence_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/partner/evidence"
)

// TestConfigDir: files go where evidence_dir says, else in the plugin's
// data directory; with neither there is nowhere to keep them.
func TestConfigDir(t *testing.T) {
	if dir, err := (evidence.Config{EvidenceDir: "/srv/evidence"}).Dir("/var/lib/steward/plugins/partner"); err != nil || dir != "/srv/evidence" {
		t.Errorf("configured dir: %s, %v", dir, err)
	}
	if dir, err := (evidence.Config{}).Dir("/var/lib/steward/plugins/partner"); err != nil || dir != "/var/lib/steward/plugins/partner/evidence" {
		t.Errorf("default dir: %s, %v", dir, err)
	}
	if _, err := (evidence.Config{}).Dir(""); err == nil || !strings.Contains(err.Error(), "evidence_dir") {
		t.Errorf("no dir at all: %v", err)
	}
}

// TestConfigDirMovesEarlierFiles: the files an earlier version kept in
// partner-evidence under the host's data directory move into the plugin's
// own, once; a folder already there is never overwritten.
func TestConfigDirMovesEarlierFiles(t *testing.T) {
	hostDir := t.TempDir()
	earlier := filepath.Join(hostDir, "partner-evidence", "ab", "abcdef")
	if err := os.MkdirAll(filepath.Dir(earlier), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(earlier, []byte("signed policy"), 0o600); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(hostDir, "plugins", "partner")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := (evidence.Config{}).Dir(own)
	if err != nil || dir != filepath.Join(own, "evidence") {
		t.Fatalf("Dir = %s, %v", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ab", "abcdef")); err != nil || string(b) != "signed policy" {
		t.Errorf("moved file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "partner-evidence")); !os.IsNotExist(err) {
		t.Errorf("the earlier folder is still there: %v", err)
	}

	// A second earlier folder appearing later is left alone.
	if err := os.MkdirAll(filepath.Join(hostDir, "partner-evidence"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := (evidence.Config{}).Dir(own); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ab", "abcdef")); err != nil {
		t.Errorf("the plugin's folder was replaced: %v", err)
	}
}
