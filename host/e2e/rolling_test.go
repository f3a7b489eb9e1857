package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
)

// balancer is the load balancer a platform team puts in front of the
// replicas, reduced to what this test needs of one: it sends each request
// to the next ready replica in turn, checks every replica's readiness
// every 100 ms, and tries the next replica when one refuses the
// connection (the request never reached it, so trying again is safe).
// With retryIdempotent set it also tries the next replica when the
// connection fails before an idempotent request's answer arrives, as
// nginx does by default (proxy_next_upstream error): a request sent on a
// kept-alive connection to a replica killed a moment before, which the
// readiness checks have not noticed yet, fails that way. Once an answer
// has arrived nothing is retried.
type balancer struct {
	mu       sync.Mutex
	backends []*backend
	// retryIdempotent is off for the rolling restart, so that a replica
	// whose drain dropped a request shows it, and on for the kill.
	retryIdempotent atomic.Bool
	next            int
	client          *http.Client
	srv             *httptest.Server
	stop            chan struct{}
	checks          sync.WaitGroup
}

type backend struct {
	url      string
	ready    atomic.Bool
	inFlight atomic.Int64
}

func newBalancer(t *testing.T) *balancer {
	b := &balancer{
		// Keep-alive connections as a real balancer keeps them; no
		// timeout beyond the test's, so a held request is seen to end.
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		stop:   make(chan struct{}),
	}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(func() {
		close(b.stop)
		b.checks.Wait()
		b.srv.Close()
	})
	return b
}

// add puts a replica behind the balancer and checks its readiness until
// the test ends.
func (b *balancer) add(url string) *backend {
	be := &backend{url: url}
	b.mu.Lock()
	b.backends = append(b.backends, be)
	b.mu.Unlock()
	b.checks.Add(1)
	go func() {
		defer b.checks.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			be.ready.Store(b.readyCheck(be))
			select {
			case <-b.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return be
}

func (b *balancer) readyCheck(be *backend) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, be.url+"/api/v1/health/ready", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// pick returns the ready replicas, starting with the next in turn.
func (b *balancer) pick() []*backend {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ready []*backend
	for i := range b.backends {
		be := b.backends[(b.next+i)%len(b.backends)]
		if be.ready.Load() {
			ready = append(ready, be)
		}
	}
	b.next++
	return ready
}

// forwarded is the header that names the replica that answered.
const forwarded = "X-Test-Replica"

func (b *balancer) serve(w http.ResponseWriter, r *http.Request) {
	for _, be := range b.pick() {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, be.url+r.URL.RequestURI(), nil)
		req.Header = r.Header.Clone()
		be.inFlight.Add(1)
		resp, err := b.client.Do(req)
		be.inFlight.Add(-1)
		if err != nil {
			var op *net.OpError
			idempotent := r.Method == http.MethodGet || r.Method == http.MethodHead
			if (errors.As(err, &op) && op.Op == "dial") || (idempotent && b.retryIdempotent.Load()) {
				// Refused, or no answer to a request that can be sent
				// again: the replica is gone or going.
				be.ready.Store(false)
				continue
			}
			w.Header().Set(forwarded, be.url)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		maps.Copy(w.Header(), resp.Header)
		w.Header().Set(forwarded, be.url)
		w.WriteHeader(resp.StatusCode)
		_, err = io.Copy(w, resp.Body)
		resp.Body.Close()
		if err != nil {
			// The replica died while sending the body: the client sees a
			// short answer, which it counts as failed.
			panic(http.ErrAbortHandler)
		}
		return
	}
	http.Error(w, "no replica is ready", http.StatusServiceUnavailable)
}

// outcome is one request of the load as its client saw it.
type outcome struct {
	start, end time.Time
	status     int
	replica    string
	err        error
}

func (o outcome) failed() bool { return o.err != nil || o.status != http.StatusOK }

// loadThrough keeps workers sending authenticated reads through the
// balancer, a fifth of them held 200 ms by the plugin, until stop closes.
func loadThrough(url, token string, workers int, stop <-chan struct{}) <-chan []outcome {
	paths := []string{"/api/v1/auth/me", "/api/v1/testplugin/items", "/api/v1/testplugin/items", "/api/v1/auth/me", "/api/v1/testplugin/slow?ms=200"}
	done := make(chan []outcome, 1)
	var mu sync.Mutex
	var all []outcome
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, url+paths[i%len(paths)], nil)
				req.Header.Set("Authorization", "Bearer "+token)
				o := outcome{start: time.Now()}
				resp, err := client.Do(req)
				if err == nil {
					o.status, o.replica = resp.StatusCode, resp.Header.Get(forwarded)
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				o.err, o.end = err, time.Now()
				mu.Lock()
				all = append(all, o)
				mu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		done <- all
	}()
	return done
}

// TestRollingRestartUnderLoad: two replicas on one PostgreSQL and one
// Redis behind a load balancer that follows their readiness, under a
// steady load of authenticated reads. A rolling restart (each replica
// sent SIGTERM, drained and replaced by a new one in turn) fails no
// request, through a balancer that retries nothing the replicas received.
// A replica then killed outright fails only answers it was sending when it
// died, through a balancer that retries idempotent requests as nginx does
// by default: every failure was sent to it before the kill.
func TestRollingRestartUnderLoad(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	redisURL := storetest.RedisURL(t)
	env := tokenEnv()
	env["STEWARD_RATE_LIMIT_PER_MINUTE"] = "1000000"
	env["STEWARD_DRAIN_DELAY"] = "1s"
	env["STEWARD_SHUTDOWN_GRACE"] = "10s"
	o := hostOpts{databaseURL: dbURL, redisURL: redisURL, redisPrefix: storetest.RedisPrefix(t, redisURL), env: env}
	replica := func() *host { return startHost(t, o) }
	lb := newBalancer(t)
	a, b := replica(), replica()
	backends := map[*host]*backend{a: lb.add(a.url), b: lb.add(b.url)}
	admin := a.login()
	a.waitFor("the balancer to see both replicas ready", 10*time.Second, func() bool {
		return backends[a].ready.Load() && backends[b].ready.Load()
	})

	stop := make(chan struct{})
	results := loadThrough(lb.srv.URL, admin, 8, stop)
	time.Sleep(time.Second)

	// The rolling restart: each replica in turn drains and is replaced.
	restartStarted := time.Now()
	for _, old := range []*host{a, b} {
		old.stop(syscall.SIGTERM)
		if code := old.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("replica %s exited %d after SIGTERM\n%s", old.url, code, old.logs.String())
		}
		h := replica()
		backends[h] = lb.add(h.url)
		a.waitFor("the balancer to see the new replica ready", 10*time.Second, func() bool { return backends[h].ready.Load() })
		time.Sleep(500 * time.Millisecond)
	}
	restartEnded := time.Now()
	var live []*host
	for h := range backends {
		if h.cmd.ProcessState == nil {
			live = append(live, h)
		}
	}
	if len(live) != 2 {
		t.Fatalf("%d replicas running after the rolling restart, want 2", len(live))
	}

	// One replica killed outright, holding requests, behind a balancer
	// that now retries what nginx would.
	lb.retryIdempotent.Store(true)
	victim := live[0]
	doomed := backends[victim]
	a.waitFor("the victim to hold a request", 5*time.Second, func() bool { return doomed.inFlight.Load() > 0 })
	killed := time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	all := <-results

	var duringRestart, afterKill, failedRestart, failedKill int
	var wrong []string
	for _, o := range all {
		switch {
		case o.start.After(restartStarted) && o.end.Before(restartEnded):
			duringRestart++
			if o.failed() {
				failedRestart++
				wrong = append(wrong, fmt.Sprintf("during the rolling restart: %d %v via %s", o.status, o.err, o.replica))
			}
		case o.end.After(killed):
			afterKill++
			if o.failed() {
				failedKill++
				if o.replica != victim.url || o.start.After(killed) {
					wrong = append(wrong, fmt.Sprintf("after the kill: %d %v via %s, sent %s after it", o.status, o.err, o.replica, o.start.Sub(killed)))
				}
			}
		case o.failed():
			wrong = append(wrong, fmt.Sprintf("%d %v via %s", o.status, o.err, o.replica))
		}
	}
	t.Logf("%d requests in all; %d during the rolling restart (%s), %d failed; %d ending after the kill, %d failed (held by the killed replica)",
		len(all), duringRestart, restartEnded.Sub(restartStarted).Round(time.Millisecond), failedRestart, afterKill, failedKill)
	if duringRestart < 100 || afterKill < 20 {
		t.Errorf("too little load to judge: %d requests during the restart, %d after the kill", duringRestart, afterKill)
	}
	if len(wrong) > 0 {
		t.Errorf("%d requests failed that should not have; the first: %v", len(wrong), wrong[:min(len(wrong), 10)])
	}
	if failedKill > 8 {
		t.Errorf("%d requests failed after the kill; at most the 8 workers' requests in flight may", failedKill)
	}
}
