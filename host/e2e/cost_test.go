package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// costPlugins declares the cost plugin, with config (HCL attributes, may
// be empty) in its config block.
func costPlugins(config string) string {
	return fmt.Sprintf("plugin \"cost\" {\n  binary = %q\n  cloud_credential = true\n  config {\n%s\n  }\n}\n", filepath.Join(binDir, "plugins", "cost"), config)
}

// waitStartupSync waits for the host's start-up run of the job type to
// complete, and fails the test if it failed.
func waitStartupSync(t *testing.T, h *host, admin, jobType string) {
	t.Helper()
	h.waitFor("the start-up "+jobType+" sync", time.Minute, func() bool {
		var hist struct {
			Logs []run `json:"logs"`
		}
		h.get("/api/v1/sync/history?limit=50", admin).json(t, &hist)
		for _, r := range hist.Logs {
			if r.JobType == jobType && r.Status == "failed" {
				t.Fatalf("start-up %s sync failed: %+v", jobType, r)
			}
			if r.JobType == jobType && r.Status == "completed" {
				return true
			}
		}
		return false
	})
}
