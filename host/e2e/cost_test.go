package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
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
		// A job type may be several jobs (the resources plugin's quotas
		// and inventory): each must have completed a run.
		var status struct {
			Jobs []struct {
				Plugin  string `json:"plugin"`
				Name    string `json:"name"`
				JobType string `json:"job_type"`
			} `json:"jobs"`
		}
		h.get("/api/v1/sync/status", admin).json(t, &status)
		var hist struct {
			Logs []struct {
				run
				Plugin  string `json:"plugin"`
				JobName string `json:"job_name"`
			} `json:"logs"`
		}
		h.get("/api/v1/sync/history?limit=100", admin).json(t, &hist)
		completed := map[string]bool{}
		for _, r := range hist.Logs {
			if r.JobType == jobType && r.Status == "failed" {
				t.Fatalf("start-up %s sync failed: %+v", jobType, r)
			}
			if r.JobType == jobType && r.Status == "completed" {
				completed[r.Plugin+"/"+r.JobName] = true
			}
		}
		jobs := 0
		for _, j := range status.Jobs {
			if j.JobType != jobType {
				continue
			}
			jobs++
			if !completed[j.Plugin+"/"+j.Name] {
				return false
			}
		}
		return jobs > 0
	})
}

// startDemoCosts starts a host on the dialect's database with the cost
// plugin over the demo world, signs the admin in and waits for the
// start-up costs sync; it returns the host, the admin's token and the
// registered tenants' ids by name, Contoso Retail's among them.
func startDemoCosts(t *testing.T, dialect string) (*host, string, map[string]string) {
	t.Helper()
	o := hostOpts{pluginsHCL: costPlugins(""), env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	idOf := h.tenantIDs(t, admin)
	if idOf["Contoso Retail"] == "" {
		t.Fatalf("the demo world's tenants are not registered: %v", idOf)
	}
	waitStartupSync(t, h, admin, "costs")
	return h, admin, idOf
}
