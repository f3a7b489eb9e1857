package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/internal/testbin"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// reloadHost runs a supervisor for the test plugin behind a fiber app that
// dispatches as the host does, and returns both and the app's address.
func reloadHost(t *testing.T, dataPlane string, reserved func(method, path string) bool, drainTimeout time.Duration) (*Supervisor, string) {
	t.Helper()
	decl := testDecl(testpluginBinary(t), dataPlane)
	decl.RequestTimeout = DefaultRequestTimeout
	decl.DrainTimeout = drainTimeout
	sup, err := New([]Decl{decl}, Options{
		Storage: sqliteStorage(t), Reserved: reserved,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/*", func(c *fiber.Ctx) error {
		r, params := sup.Routes().Match(c.Method(), c.Path())
		if r == nil {
			return fiber.ErrNotFound
		}
		return sup.Proxy(c, r, params, &pluginv1.Principal{}, "req-1")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return sup, "http://" + ln.Addr().String()
}

// TestReloadDrainsStreams starts a large streamed response, reloads the
// plugin while the caller has read only its start, and shows the reload
// waits for the stream: the caller gets the whole body from the old
// process, which is stopped only after, and the route is then served by
// the new process.
func TestReloadDrainsStreams(t *testing.T) {
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			sup, url := reloadHost(t, plane, nil, DefaultDrainTimeout)
			inst, _ := sup.Instance("testplugin")
			oldPID := inst.PID()
			resp, err := http.Get(url + "/api/v1/testplugin/large?size=32554432")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(resp.Body, head); err != nil {
				t.Fatal(err)
			}
			var reloaded atomic.Bool
			done := make(chan error, 1)
			var res Reloaded
			go func() {
				var err error
				res, err = sup.Reload(context.Background(), "testplugin")
				reloaded.Store(true)
				done <- err
			}()
			waitFor(t, "the new process serving", 20*time.Second, func() bool { return inst.PID() != oldPID })
			time.Sleep(200 * time.Millisecond)
			if reloaded.Load() {
				t.Fatal("the reload finished while a stream of the old process was still being read")
			}
			if !testbin.Alive(oldPID) {
				t.Fatal("the old process was stopped during its stream")
			}
			rest, err := io.ReadAll(resp.Body)
			if err != nil || len(head)+len(rest) != 32554432 {
				t.Fatalf("stream across the reload: %d bytes, %v", len(head)+len(rest), err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !res.Drained || res.OldPID != oldPID || res.NewPID != inst.PID() {
				t.Fatalf("reload answered %+v", res)
			}
			waitFor(t, "the old process stopped", 5*time.Second, func() bool { return !testbin.Alive(oldPID) })
			r, err := http.Get(url + "/api/v1/testplugin/large?size=10")
			if err != nil || r.StatusCode != http.StatusOK {
				t.Fatalf("after the reload: %v %v", r, err)
			}
			r.Body.Close()
		})
	}
}

// TestReloadRefusalsKeepTheOldProcess: a checksum that no longer matches
// and a route the host now serves each refuse the reload as a conflict,
// and the running process goes on serving.
func TestReloadRefusalsKeepTheOldProcess(t *testing.T) {
	var hostTakesWhoami atomic.Bool
	sup, url := reloadHost(t, "socket", func(method, path string) bool {
		return hostTakesWhoami.Load() && path == "/api/v1/testplugin/echo"
	}, DefaultDrainTimeout)
	inst, _ := sup.Instance("testplugin")
	pid := inst.PID()
	serving := func() {
		t.Helper()
		r, err := http.Get(url + "/api/v1/testplugin/ping")
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("the old process does not serve: %v %v", r, err)
		}
		r.Body.Close()
		if inst.PID() != pid || inst.Status().State != StateRunning {
			t.Fatalf("after a refused reload: %+v (pid was %d)", inst.Status(), pid)
		}
	}

	b, err := os.ReadFile(inst.Decl().Binary)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(b, 0))
	amend(inst, func(d *Decl) { d.SHA256 = hex.EncodeToString(sum[:]) })
	_, err = sup.Reload(context.Background(), "testplugin")
	var refused *ReloadError
	if !errors.As(err, &refused) || !refused.Conflict || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("reload with a wrong checksum: %v", err)
	}
	serving()
	amend(inst, func(d *Decl) { d.SHA256 = "" })

	hostTakesWhoami.Store(true)
	_, err = sup.Reload(context.Background(), "testplugin")
	var conflict *ConflictError
	if !errors.As(err, &refused) || !refused.Conflict || !errors.As(err, &conflict) || conflict.Other != "a route of the host" {
		t.Fatalf("reload with a conflicting route: %v", err)
	}
	serving()

	if _, err := sup.Reload(context.Background(), "nosuch"); !errors.Is(err, ErrUnknownPlugin) {
		t.Fatalf("reload of an undeclared plugin: %v", err)
	}
}

// TestReloadWaitsForJobsUpToTheDrainTimeout: work a job holds on the old
// process (counted as RunJob counts it) delays the stop of that process
// until it ends, or until drain_timeout, when the process is stopped
// under it and the reload says it did not drain.
func TestReloadWaitsForJobsUpToTheDrainTimeout(t *testing.T) {
	sup, _ := reloadHost(t, "socket", nil, 500*time.Millisecond)
	inst, _ := sup.Instance("testplugin")

	oldPID := inst.PID()
	held, err := inst.acquire()
	if err != nil {
		t.Fatal(err)
	}
	amend(inst, func(d *Decl) { d.DrainTimeout = DefaultDrainTimeout })
	done := make(chan Reloaded, 1)
	go func() {
		res, err := sup.Reload(context.Background(), "testplugin")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitFor(t, "the new process serving", 20*time.Second, func() bool { return inst.PID() != oldPID })
	time.Sleep(300 * time.Millisecond)
	select {
	case res := <-done:
		t.Fatalf("the reload ended while a job held the old process: %+v", res)
	default:
	}
	held.release()
	if res := <-done; !res.Drained || testbin.Alive(oldPID) && !waitGone(oldPID) {
		t.Fatalf("after the job ended: %+v, old process alive %t", res, testbin.Alive(oldPID))
	}

	amend(inst, func(d *Decl) { d.DrainTimeout = 500 * time.Millisecond })
	oldPID = inst.PID()
	held, err = inst.acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	t0 := time.Now()
	res, err := sup.Reload(context.Background(), "testplugin")
	if err != nil {
		t.Fatal(err)
	}
	if res.Drained || time.Since(t0) < 500*time.Millisecond || !waitGone(oldPID) {
		t.Fatalf("a job past drain_timeout: %+v after %s, old process alive %t", res, time.Since(t0), testbin.Alive(oldPID))
	}
}

// waitGone reports whether pid exits within five seconds.
func waitGone(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for testbin.Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestReloadRevivesAFailedPlugin: a plugin refused at start (here for its
// checksum) is failed and not retried; once its declaration and binary
// agree, a reload starts it, and a reload that still cannot start it
// leaves it failed and says why.
func TestReloadRevivesAFailedPlugin(t *testing.T) {
	decl := testDecl(testpluginBinary(t), "socket")
	decl.RequestTimeout, decl.DrainTimeout = DefaultRequestTimeout, DefaultDrainTimeout
	decl.SHA256 = strings.Repeat("0", 64)
	sup := startOnSQLite(t, decl)
	inst, _ := sup.Instance("testplugin")
	if st := inst.Status(); st.State != StateFailed {
		t.Fatalf("with a wrong checksum: %+v", st)
	}

	_, err := sup.Reload(context.Background(), "testplugin")
	var refused *ReloadError
	if !errors.As(err, &refused) || !refused.Conflict || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("reload with the checksum still wrong: %v", err)
	}
	if st := inst.Status(); st.State != StateFailed || !strings.Contains(st.LastError, "checksum mismatch") {
		t.Fatalf("after a failed reload of a failed plugin: %+v", st)
	}

	amend(inst, func(d *Decl) { d.SHA256 = "" })
	res, err := sup.Reload(context.Background(), "testplugin")
	if err != nil {
		t.Fatal(err)
	}
	if st := inst.Status(); st.State != StateRunning || st.PID == 0 || res.NewPID != st.PID || res.NewVersion != "1.0.0" {
		t.Fatalf("after the reload: %+v answered %+v", st, res)
	}
	if r, _ := sup.Routes().Match(http.MethodGet, "/api/v1/testplugin/whoami"); r == nil {
		t.Fatal("the revived plugin's routes are not in the table")
	}
}
