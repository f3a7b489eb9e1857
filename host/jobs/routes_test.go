package jobs_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/jobs"
)

func TestSyncRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	admin := h.Login()
	_, user := h.User("user@example.com")
	// A job of a plugin the host does not run: triggering it queues a run
	// that fails, which raises an alert.
	if err := h.Jobs.SetSpecs([]jobs.Spec{{Plugin: "absent", Name: "costs", JobType: "costs"}}); err != nil {
		t.Fatal(err)
	}

	t.Run("an admin triggers a sync", func(t *testing.T) {
		a := h.Do(http.MethodPost, "/api/v1/sync/costs", admin, "", "")
		if !a.Expect(t, "trigger", http.StatusAccepted) {
			t.FailNow()
		}
		var out struct {
			JobID   string   `json:"job_id"`
			JobType string   `json:"job_type"`
			Status  string   `json:"status"`
			JobIDs  []string `json:"job_ids"`
		}
		a.Decode(t, &out)
		if out.JobID == "" || out.JobType != "costs" || out.Status != "queued" || len(out.JobIDs) != 1 || out.JobIDs[0] != out.JobID {
			t.Errorf("trigger: %s", a.Body)
		}
		if es := h.Audit("sync.trigger.success"); len(es) != 1 || es[0].ResourceID != out.JobID || es[0].ActorEmail != apptest.AdminEmail || es[0].Details["job_type"] != "costs" {
			t.Errorf("trigger audit: %+v", es)
		}
		waitFailed(t, h, out.JobID)
	})

	t.Run("a standard user sees runs and alerts without their free text", func(t *testing.T) {
		var adminView, userView struct {
			Logs []jobs.Run `json:"logs"`
		}
		h.Do(http.MethodGet, "/api/v1/sync/history", admin, "", "").Decode(t, &adminView)
		h.Do(http.MethodGet, "/api/v1/sync/history", user, "", "").Decode(t, &userView)
		if len(adminView.Logs) != 1 || len(userView.Logs) != 1 {
			t.Fatalf("history: admin %+v, user %+v", adminView, userView)
		}
		if r := adminView.Logs[0]; r.ErrorMessage == nil || *r.ErrorMessage == jobs.RedactedText || r.TriggeredBy == nil {
			t.Errorf("admin's history: %+v", r)
		}
		if r := userView.Logs[0]; r.ErrorMessage == nil || *r.ErrorMessage != jobs.RedactedText || r.TriggeredBy != nil {
			t.Errorf("user's history: %+v", r)
		}

		var adminAlerts, userAlerts jobs.AlertsResponse
		h.Do(http.MethodGet, "/api/v1/sync/alerts", admin, "", "").Decode(t, &adminAlerts)
		h.Do(http.MethodGet, "/api/v1/sync/alerts", user, "", "").Decode(t, &userAlerts)
		if len(adminAlerts.Alerts) != 1 || len(userAlerts.Alerts) != 1 {
			t.Fatalf("alerts: admin %+v, user %+v", adminAlerts, userAlerts)
		}
		if al := adminAlerts.Alerts[0]; al.Message == jobs.RedactedText || al.Title != "costs sync failed: absent/costs" {
			t.Errorf("admin's alert: %+v", al)
		}
		if al := userAlerts.Alerts[0]; al.Message != jobs.RedactedText || al.Title != "costs sync failed" {
			t.Errorf("user's alert: %+v", al)
		}

		var status jobs.StatusResponse
		h.Do(http.MethodGet, "/api/v1/sync/status", user, "", "").Decode(t, &status)
		if len(status.Jobs) != 1 || status.Jobs[0].LastRun == nil || status.Jobs[0].LastRun.ErrorMessage == nil || *status.Jobs[0].LastRun.ErrorMessage != jobs.RedactedText {
			t.Errorf("user's status: %+v", status)
		}
		var metrics jobs.MetricsResponse
		if a := h.Do(http.MethodGet, "/api/v1/sync/metrics", user, "", ""); a.Expect(t, "metrics", http.StatusOK) {
			a.Decode(t, &metrics)
		}
	})

	t.Run("an admin resolves an alert once", func(t *testing.T) {
		var alerts jobs.AlertsResponse
		h.Do(http.MethodGet, "/api/v1/sync/alerts", admin, "", "").Decode(t, &alerts)
		if len(alerts.Alerts) != 1 {
			t.Fatalf("alerts: %+v", alerts)
		}
		path := "/api/v1/sync/alerts/" + strconv.FormatInt(alerts.Alerts[0].ID, 10) + "/resolve"
		body := `{"resolved_by":"ops","resolution_notes":"plugin removed"}`
		h.JSON(http.MethodPost, path, user, body).Expect(t, "resolve as a standard user", http.StatusForbidden)
		if a := h.JSON(http.MethodPost, path, admin, `{"resolved_by":""}`); a.Expect(t, "resolve with an empty resolved_by", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.resolved_by") {
			t.Errorf("resolve with an empty resolved_by: %s", a.Body)
		}
		a := h.JSON(http.MethodPost, path, admin, body)
		var resolved jobs.Alert
		if a.Expect(t, "resolve", http.StatusOK) {
			a.Decode(t, &resolved)
			if !resolved.Resolved || resolved.ResolvedBy == nil || *resolved.ResolvedBy != "ops" {
				t.Errorf("resolved alert: %s", a.Body)
			}
		}
		if es := h.Audit("sync.alert_resolve.success"); len(es) != 1 || es[0].ResourceID != strconv.FormatInt(alerts.Alerts[0].ID, 10) {
			t.Errorf("resolve audit: %+v", es)
		}
		if a := h.JSON(http.MethodPost, path, admin, body); a.Expect(t, "resolve again", http.StatusConflict) && a.Problem(t).Detail != "the alert is already resolved" {
			t.Errorf("resolve again: %s", a.Body)
		}
		h.JSON(http.MethodPost, "/api/v1/sync/alerts/999999/resolve", admin, body).Expect(t, "resolve an unknown alert", http.StatusNotFound)
		if a := h.JSON(http.MethodPost, "/api/v1/sync/alerts/0/resolve", admin, body); a.Expect(t, "alert id 0", http.StatusUnprocessableEntity) && !a.Problem(t).Names("path.alert_id") {
			t.Errorf("alert id 0: %s", a.Body)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		a := h.Do(http.MethodPost, "/api/v1/sync/dmarc", admin, "", "")
		if a.Expect(t, "a job type no plugin provides", http.StatusNotFound) && a.Problem(t).Detail != "no enabled plugin provides the dmarc sync" {
			t.Errorf("unknown job type: %s", a.Body)
		}
		if es := h.Audit("sync.trigger.failure"); len(es) != 1 || es[0].Details["job_type"] != "dmarc" {
			t.Errorf("failed trigger audit: %+v", es)
		}
		if a := h.Do(http.MethodPost, "/api/v1/sync/Costs!", admin, "", ""); a.Expect(t, "a malformed job type", http.StatusUnprocessableEntity) && !a.Problem(t).Names("path.job_type") {
			t.Errorf("malformed job type: %s", a.Body)
		}
		for _, path := range []string{"/api/v1/sync/costs", "/api/v1/preflight/clear-cache"} {
			h.Do(http.MethodPost, path, user, "", "").Expect(t, path+" as a standard user", http.StatusForbidden)
			h.Do(http.MethodPost, path, "", "", "").Expect(t, path+" anonymous", http.StatusUnauthorized)
		}
		h.Do(http.MethodGet, "/api/v1/sync/history?limit=501", admin, "", "").Expect(t, "history over its limit", http.StatusUnprocessableEntity)
		h.Do(http.MethodGet, "/api/v1/sync/status", "", "", "").Expect(t, "status anonymous", http.StatusUnauthorized)
	})

	t.Run("an admin clears the preflight cache", func(t *testing.T) {
		a := h.Do(http.MethodPost, "/api/v1/preflight/clear-cache", admin, "", "")
		if a.Expect(t, "clear", http.StatusOK) {
			var out struct {
				Success bool `json:"success"`
			}
			if a.Decode(t, &out); !out.Success {
				t.Errorf("clear: %s", a.Body)
			}
		}
		if es := h.Audit("cache.clear.success"); len(es) != 1 || es[0].ResourceID != "preflight" {
			t.Errorf("clear audit: %+v", es)
		}
	})
}

// waitFailed waits for a run to fail, as a run of a plugin the host does
// not run does.
func waitFailed(t *testing.T, h *apptest.Host, runID string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := h.Jobs.Get(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == jobs.StatusFailed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want failed", runID, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
