package plugins

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testbin"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// TestApplyFollowsPluginsFile walks one plugin through what an edited
// plugins.hcl can say of it, each applied to the running supervisor, and
// checks its process, routes and state after each.
func TestApplyFollowsPluginsFile(t *testing.T) {
	sup, url := reloadHost(t, "socket", nil, DefaultDrainTimeout)
	ctx := context.Background()
	inst, _ := sup.Instance("testplugin")
	decl := inst.Decl()
	get := func(path string) int {
		t.Helper()
		r, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	applied := func(decls []Decl, want Action) {
		t.Helper()
		changes := sup.Apply(ctx, decls)
		if len(changes) != 1 || changes[0].Plugin != "testplugin" || changes[0].Action != want || changes[0].Err != nil {
			t.Fatalf("apply: %+v, want one %s", changes, want)
		}
	}

	if changes := sup.Apply(ctx, []Decl{decl}); len(changes) != 0 {
		t.Fatalf("an unchanged file changed %+v", changes)
	}

	pid := inst.PID()
	rescheduled := decl
	rescheduled.Schedules = map[string]string{"sync": "*/5 * * * *"}
	applied([]Decl{rescheduled}, ActionRescheduled)
	if inst.PID() != pid || inst.Decl().Schedules["sync"] != "*/5 * * * *" {
		t.Fatalf("a schedule change restarted the process or was lost: pid %d→%d, %+v", pid, inst.PID(), inst.Decl().Schedules)
	}

	changed := rescheduled
	changed.RequestTimeout = 7 * time.Second
	applied([]Decl{changed}, ActionChanged)
	if inst.PID() == pid || inst.Status().State != StateRunning || inst.Decl().RequestTimeout != 7*time.Second || !waitGone(pid) {
		t.Fatalf("a changed declaration: %+v (pid was %d)", inst.Status(), pid)
	}
	if code := get("/api/v1/testplugin/ping"); code != http.StatusOK {
		t.Fatalf("after the change: %d", code)
	}

	broken := changed
	broken.SHA256 = strings.Repeat("0", 64)
	pid = inst.PID()
	changes := sup.Apply(ctx, []Decl{broken})
	if len(changes) != 1 || changes[0].Action != ActionChanged || changes[0].Err == nil || !strings.Contains(changes[0].Err.Error(), "checksum mismatch") {
		t.Fatalf("a declaration the binary does not match: %+v", changes)
	}
	if inst.PID() != pid || get("/api/v1/testplugin/ping") != http.StatusOK {
		t.Fatalf("a refused change stopped the running process: %+v", inst.Status())
	}

	disabled := changed
	disabled.Enabled = false
	pid = inst.PID()
	applied([]Decl{disabled}, ActionDisabled)
	if st := inst.Status(); st.State != StateDisabled || !waitGone(pid) {
		t.Fatalf("disabled: %+v, process alive %t", st, testbin.Alive(pid))
	}
	if r, _ := sup.Routes().Match(http.MethodGet, "/api/v1/testplugin/ping"); r != nil || get("/api/v1/testplugin/ping") != http.StatusNotFound {
		t.Fatal("a disabled plugin's routes are still served")
	}

	applied([]Decl{changed}, ActionEnabled)
	if st := inst.Status(); st.State != StateRunning || get("/api/v1/testplugin/ping") != http.StatusOK {
		t.Fatalf("enabled again: %+v", st)
	}

	pid = inst.PID()
	applied(nil, ActionRemoved)
	if _, ok := sup.Instance("testplugin"); ok || len(sup.Statuses()) != 0 || !waitGone(pid) {
		t.Fatalf("removed: still declared or running: %+v", sup.Statuses())
	}
	if get("/api/v1/testplugin/ping") != http.StatusNotFound {
		t.Fatal("a removed plugin's routes are still served")
	}
	if _, err := sup.Reload(ctx, "testplugin"); !errors.Is(err, ErrUnknownPlugin) {
		t.Fatalf("reload of a removed plugin: %v", err)
	}

	applied([]Decl{decl}, ActionAdded)
	added, ok := sup.Instance("testplugin")
	if !ok || added.Status().State != StateRunning || get("/api/v1/testplugin/ping") != http.StatusOK {
		t.Fatalf("added again: %+v", sup.Statuses())
	}
}

// TestReloadPastTheDrainTimeoutInterruptsJobs: a job still running when a
// reload stops its process past drain_timeout ends with
// ErrProcessReplaced, which the host takes as "run it again"; a job that
// fails on its own does not.
func TestReloadPastTheDrainTimeoutInterruptsJobs(t *testing.T) {
	sup, _ := reloadHost(t, "socket", nil, 300*time.Millisecond)
	inst, _ := sup.Instance("testplugin")
	amend(inst, func(d *Decl) { d.Config = []byte(`{"hold_job_seconds": 60}`) })
	if _, err := sup.Reload(context.Background(), "testplugin"); err != nil {
		t.Fatal(err)
	}
	holding := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once bool
		_, err := sup.RunJob(context.Background(), "testplugin", "hold", "run-1", nil, protocol.JobEvents{Progress: func(*pluginv1.JobProgress) {
			if !once {
				once = true
				close(holding)
			}
		}})
		done <- err
	}()
	<-holding
	res, err := sup.Reload(context.Background(), "testplugin")
	if err != nil || res.Drained {
		t.Fatalf("reload over a held job: %+v, %v", res, err)
	}
	if err := <-done; !errors.Is(err, ErrProcessReplaced) {
		t.Fatalf("the held job ended with %v, want ErrProcessReplaced", err)
	}
	if _, err := sup.RunJob(context.Background(), "testplugin", "fail", "run-2", nil, protocol.JobEvents{}); err == nil || errors.Is(err, ErrProcessReplaced) {
		t.Fatalf("a job failing on its own: %v", err)
	}
}
