package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
)

// tcpCut forwards connections to a server until Cut, which breaks every
// open one and refuses new ones until Restore: the network between Steward
// and its database going away and coming back.
type tcpCut struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func newTCPCut(t *testing.T, target string) *tcpCut {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpCut{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	go p.serve()
	return p
}

func (p *tcpCut) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *tcpCut) forward(c net.Conn) {
	if !p.track(c) {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// track records an open connection, unless the link is cut.
func (p *tcpCut) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *tcpCut) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *tcpCut) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// TestDatabaseOutage: PostgreSQL unreachable for 30 seconds. Liveness
// holds, health and readiness say unhealthy, every request needing the
// database — the host's and a plugin's — answers 503 with Retry-After and
// never 500, nothing crashes, and service resumes without a restart.
func TestDatabaseOutage(t *testing.T) {
	// Most of its time is the outage's 30 seconds, waited out.
	t.Parallel()
	u, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	link := newTCPCut(t, u.Host)
	u.Host = link.ln.Addr().String()
	h := startHost(t, hostOpts{databaseURL: u.String(), env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
	admin := h.login()
	pid := h.cmd.Process.Pid
	reads := []string{"/api/v1/tenants", "/api/v1/testplugin/items", "/api/v1/audit-logs?limit=1"}
	for _, path := range reads {
		if r := h.get(path, admin); r.status != http.StatusOK {
			t.Fatalf("%s before the outage: %d %s", path, r.status, r.body)
		}
	}

	link.Cut()
	outage := time.Now()
	seen := map[string]bool{}
	for time.Since(outage) < 30*time.Second {
		for _, path := range reads {
			r := h.get(path, admin)
			switch {
			case r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != "":
				seen[path] = true
			case r.status == http.StatusOK:
				// Answered from a cache: allowed.
			default:
				t.Fatalf("%s %s into the outage: %d %s; want 503 with Retry-After", path, time.Since(outage).Round(time.Second), r.status, r.body)
			}
		}
		if r := h.get("/health", ""); r.status != http.StatusOK {
			t.Fatalf("liveness during the outage: %d", r.status)
		}
		if r := h.get("/api/v1/health", ""); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"unhealthy"`) {
			t.Fatalf("health during the outage: %d %s", r.status, r.body)
		}
		if r := h.get("/api/v1/health/ready", ""); r.status != http.StatusServiceUnavailable {
			t.Fatalf("readiness during the outage: %d %s", r.status, r.body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, path := range reads {
		if !seen[path] {
			t.Errorf("%s never answered 503 during the outage", path)
		}
	}

	link.Restore()
	h.waitFor("service to resume", 20*time.Second, func() bool {
		for _, path := range reads {
			if h.get(path, admin).status != http.StatusOK {
				return false
			}
		}
		return h.get("/api/v1/health/ready", "").status == http.StatusOK
	})
	select {
	case <-h.exited:
		t.Fatal("the host exited")
	default:
	}
	if h.cmd.Process.Pid != pid {
		t.Fatal("the host was restarted")
	}
	if strings.Contains(h.logs.String(), "panic") {
		t.Fatalf("a panic during the outage:\n%s", h.logs.String())
	}
}

// TestPluginKilledMidSync: the plugin process killed while a request and
// a sync's tenants are under way. The request answers 503; each tenant it
// was syncing is run again once the supervisor has restarted it, and the
// run completes with every tenant.
func TestPluginKilledMidSync(t *testing.T) {
	const tenants = 4
	h := startHost(t, hostOpts{pluginsHCL: holdPlugins(1500 * time.Millisecond),
		env: map[string]string{"STEWARD_SIM_WORLD": spreadWorld(t, tenants), "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
	admin := h.login()
	db := h.db()
	id := (&fixture{h: h, admin: admin}).trigger(t, "testplugin-hold-tenants")
	h.waitFor("every tenant under way", 10*time.Second, func() bool {
		n, err := db.NewSelect().Table("job_run_tenants").Where("run_id = ? AND status = 'running'", id).Count(context.Background())
		return err == nil && n == tenants
	})
	slow := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, h.url+"/api/v1/testplugin/slow?ms=5000", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Kill(h.pluginPID(admin, "testplugin"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := <-slow; code != http.StatusServiceUnavailable && code != http.StatusBadGateway {
		t.Errorf("the request under way when the plugin died answered %d; want 503 or 502", code)
	}
	r := (&fixture{h: h, admin: admin}).waitRunWithin(t, id, 30*time.Second)
	if r.Status != "completed" || r.RecordsProcessed != tenants {
		t.Fatalf("the run after its plugin died: %+v (%s); want completed with every tenant", r, deref(r.ErrorMessage))
	}
	var retried int
	if err := db.NewSelect().Table("job_run_tenants").ColumnExpr("count(*)").Where("run_id = ? AND attempts > 1", id).Scan(context.Background(), &retried); err != nil {
		t.Fatal(err)
	}
	if retried != tenants {
		t.Fatalf("%d of %d tenants run again after the plugin died; want every one", retried, tenants)
	}
}
