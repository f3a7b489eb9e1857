package dataplane

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// serve starts a server for h on a fresh socket and returns a dialer.
func serve(t *testing.T, h http.Handler) func() net.Conn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Logger: hclog.NewNullLogger()}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v after Close", err)
		}
	})
	return func() net.Conn {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}

func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, raw string, method string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestKeepAliveAndBodies: requests follow each other on one connection,
// with bodies read, left unread or sent in chunks; a HEAD gets the length
// without the body.
func TestKeepAliveAndBodies(t *testing.T) {
	dial := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(b)
		case "/ignore":
			_, _ = io.WriteString(w, "ignored")
		default:
			_, _ = io.WriteString(w, "<html>hello</html>")
		}
	}))
	c := dial()
	br := bufio.NewReader(c)
	resp, body := roundTrip(t, c, br, "POST /echo HTTP/1.1\r\nHost: p\r\nContent-Length: 5\r\n\r\nhello", "POST")
	if body != "hello" || resp.ContentLength != 5 {
		t.Errorf("echo: %q, length %d", body, resp.ContentLength)
	}
	_, body = roundTrip(t, c, br, "POST /ignore HTTP/1.1\r\nHost: p\r\nContent-Length: 3\r\n\r\nabc", "POST")
	if body != "ignored" {
		t.Errorf("ignore: %q", body)
	}
	_, body = roundTrip(t, c, br, "POST /echo HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", "POST")
	if body != "abcde" {
		t.Errorf("chunked echo: %q", body)
	}
	resp, body = roundTrip(t, c, br, "HEAD /page HTTP/1.1\r\nHost: p\r\n\r\n", "HEAD")
	if body != "" || resp.ContentLength != 18 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("head: %q, length %d, type %q", body, resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	resp, body = roundTrip(t, c, br, "GET /page HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n", "GET")
	if body != "<html>hello</html>" || !resp.Close {
		t.Errorf("last: %q, close %v", body, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Connection: close the server kept the connection (%v)", err)
	}
}

// TestEarlyAnswerSurvivesTheSend: a host that writes a whole large body
// before it reads (as fasthttp does) to a handler that refuses it unread
// finishes its send and reads the answer, which closes the connection, in
// one answer the handler streamed and one it returned whole.
func TestEarlyAnswerSurvivesTheSend(t *testing.T) {
	dial := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/flushed" {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "too large")
			return
		}
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	body := strings.Repeat("x", 8<<20)
	for _, path := range []string{"/whole", "/flushed"} {
		c := dial()
		raw := "POST " + path + " HTTP/1.1\r\nHost: p\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatalf("%s: the send failed: %v", path, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(string(got), "too large") {
			t.Errorf("%s: %d %q", path, resp.StatusCode, got)
		}
		if path == "/whole" && !resp.Close {
			t.Errorf("%s: the answer does not say the connection closes", path)
		}
	}
}

// TestHostGoneEndsTheContext: a handler still running when the host closes
// the connection sees its context end with ErrHostGone.
func TestHostGoneEndsTheContext(t *testing.T) {
	cause := make(chan error, 1)
	started := make(chan struct{})
	dial := serve(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cause <- context.Cause(r.Context())
		case <-time.After(5 * time.Second):
			cause <- nil
		}
	}))
	c := dial()
	if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: p\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	time.Sleep(2 * watchDelay)
	_ = c.Close()
	if err := <-cause; !errors.Is(err, ErrHostGone) {
		t.Errorf("context ended with %v, want ErrHostGone", err)
	}
}

// TestWatchKeepsTheNextRequest: a byte that arrives while a slow handler's
// connection is watched belongs to the next request, which is served.
func TestWatchKeepsTheNextRequest(t *testing.T) {
	dial := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(10 * watchDelay)
		}
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	c := dial()
	br := bufio.NewReader(c)
	// Both requests at once: the second's first byte reaches the watch.
	if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: p\r\n\r\nGET /next HTTP/1.1\r\nHost: p\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/slow", "/next"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want {
			t.Errorf("got %q, want %q", b, want)
		}
	}
}

// TestPanicClosesTheConnection: nothing of a panicking handler's held-back
// answer goes out, and the connection ends; the server serves on.
func TestPanicClosesTheConnection(t *testing.T) {
	dial := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			_, _ = io.WriteString(w, "partial")
			panic("boom")
		}
		_, _ = io.WriteString(w, "fine")
	}))
	c := dial()
	if _, err := io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: p\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Errorf("a panicking handler sent %q (%v)", b, err)
	}
	c = dial()
	if _, body := roundTrip(t, c, bufio.NewReader(c), "GET /ok HTTP/1.1\r\nHost: p\r\n\r\n", "GET"); body != "fine" {
		t.Errorf("after a panic: %q", body)
	}
}

// TestMalformedRequests: a head that cannot be parsed, or one too large,
// gets a 400 and the connection closed.
func TestMalformedRequests(t *testing.T) {
	dial := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "x") }))
	for name, raw := range map[string]string{
		"garbage":   "NOT HTTP\r\n\r\n",
		"huge head": "GET / HTTP/1.1\r\nHost: p\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes+10) + "\r\n\r\n",
	} {
		c := dial()
		go func() { _, _ = io.WriteString(c, raw) }()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.StatusCode != http.StatusBadRequest || !resp.Close {
			t.Errorf("%s: %d, close %v", name, resp.StatusCode, resp.Close)
		}
	}
}

// TestHeadFields: values with line breaks cannot split the head, invalid
// names are left out, a 204 carries no length, and a body longer than its
// declared length is refused.
func TestHeadFields(t *testing.T) {
	overrun := make(chan error, 1)
	dial := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/inject":
			w.Header().Set("X-Value", "a\r\nX-Injected: 1")
			w.Header()["Bad Name"] = []string{"v"}
			_, _ = io.WriteString(w, "ok")
		case "/none":
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "body")
			overrun <- err
		case "/declared":
			w.Header().Set("Content-Length", "2")
			_, err := io.WriteString(w, "abc")
			overrun <- err
			_, _ = io.WriteString(w, "ab")
		}
	}))
	c := dial()
	br := bufio.NewReader(c)
	resp, _ := roundTrip(t, c, br, "GET /inject HTTP/1.1\r\nHost: p\r\n\r\n", "GET")
	if resp.Header.Get("X-Injected") != "" || resp.Header.Get("X-Value") != "a X-Injected: 1" || resp.Header.Get("Bad Name") != "" {
		t.Errorf("head: %v", resp.Header)
	}
	resp, _ = roundTrip(t, c, br, "GET /none HTTP/1.1\r\nHost: p\r\n\r\n", "GET")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Content-Length") != "" {
		t.Errorf("204: %d %v", resp.StatusCode, resp.Header)
	}
	if err := <-overrun; !errors.Is(err, http.ErrBodyNotAllowed) {
		t.Errorf("a 204's body: %v", err)
	}
	_, body := roundTrip(t, c, br, "GET /declared HTTP/1.1\r\nHost: p\r\n\r\n", "GET")
	if err := <-overrun; !errors.Is(err, errTooLong) || body != "ab" {
		t.Errorf("overrun: %v, body %q", err, body)
	}
}
