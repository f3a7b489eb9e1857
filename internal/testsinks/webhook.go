package testsinks

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Webhook is a running webhook receiver on 127.0.0.1. It answers 200
// while up; taken down it answers a status of the test's choosing, or
// closes connections without an answer.
type Webhook struct {
	// URL is where to post.
	URL string

	mu     sync.Mutex
	status int
	delay  time.Duration
	reqs   []Request
}

// Request is a request the receiver got, and the status it answered.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
	Status int
	At     time.Time
}

// NewWebhook starts a receiver, stopped when t ends.
func NewWebhook(t testing.TB) *Webhook {
	t.Helper()
	w := &Webhook{status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	w.URL = srv.URL
	t.Cleanup(srv.Close)
	return w
}

func (w *Webhook) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	status, delay := w.status, w.delay
	w.reqs = append(w.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Status: status, At: time.Now()})
	w.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	if status == 0 {
		if hj, ok := rw.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		status = http.StatusServiceUnavailable
	}
	rw.WriteHeader(status)
}

// Down makes the receiver answer status to every request; 0 closes the
// connection without an answer.
func (w *Webhook) Down(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status = status
}

// Delay makes the receiver wait d before it answers, as a slow or hung
// receiver does.
func (w *Webhook) Delay(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.delay = d
}

// Up makes the receiver answer 200 again.
func (w *Webhook) Up() { w.Down(http.StatusOK) }

// Requests are every request so far, answered or not.
func (w *Webhook) Requests() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Request(nil), w.reqs...)
}

// Delivered are the requests answered with a 2xx status.
func (w *Webhook) Delivered() []Request {
	var out []Request
	for _, r := range w.Requests() {
		if r.Status >= 200 && r.Status < 300 {
			out = append(out, r)
		}
	}
	return out
}
