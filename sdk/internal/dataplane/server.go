// Package dataplane serves HTTP/1.1 on a plugin's data socket, where its
// one client is the host.
//
// net/http's server would do, and did, but it pays on every request for
// what only a public server needs: it starts a goroutine that reads the
// connection while the handler runs, to notice a client that went away,
// and wakes it again to stop it when the response is done. Between two
// processes that hand each other one request at a time, those wake-ups
// and their system calls were most of the plugin's work for a small
// request (BENCHMARKS.md, "The hop"). This server parses requests with
// net/http's own ReadRequest, runs the handler on the connection's
// goroutine, and watches the connection only for a handler still running
// after watchDelay, so a request the host gives up on (a timeout, a
// closed connection) still ends the handler's context. Handlers running
// that long are found by one sweep of the connections every watchDelay
// while requests arrive, rather than by a timer per request, whose
// setting wakes the runtime's timer thread each time.
//
// What it sends is what the SDK sent over net/http: a body of up to
// protocol.InlineBody bytes goes out whole with its Content-Length in one
// write, with the head as it stood when the status was set; a longer
// body, one the handler flushes, or one with trailers goes out in chunks
// from that point; a body of a length the handler declared goes out as
// is. A handler that panics has its connection closed without the rest of
// its response, which the host reports as a failed or cut-short answer.
package dataplane

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Tunables of the server.
const (
	// watchDelay is how long a handler runs before its connection is
	// watched for the host going away.
	watchDelay = 5 * time.Millisecond
	// maxHeaderBytes bounds a request's head.
	maxHeaderBytes = 1 << 20
	// maxDrain is how much of a request body the handler left unread is
	// read past to keep the connection; a longer rest closes it.
	maxDrain = 256 << 10
	// sweepIdle is how long the sweep goes on after the last request.
	sweepIdle = time.Second
	// lingerTime is how long a connection closed under a request body
	// still arriving reads past it, as net/http's server waits before
	// closing, so the host reads the answer rather than a failed send.
	lingerTime = 500 * time.Millisecond
)

// ErrHostGone ends a request's context when the host closed the
// connection before the response was done.
var ErrHostGone = errors.New("dataplane: the host closed the connection")

// Server serves one handler on a listener.
type Server struct {
	Handler http.Handler
	Logger  hclog.Logger

	mu     sync.Mutex
	ln     net.Listener
	conns  map[*conn]struct{}
	closed bool
	ctx    context.Context
	cancel context.CancelFunc

	// sweeping: a sweep goroutine runs; lastStart is the Unix nanosecond
	// time the latest request started.
	sweeping  atomic.Bool
	lastStart atomic.Int64
}

// Serve accepts connections until the listener fails or Close is called;
// after Close it returns http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.conns = map[*conn]struct{}{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Unlock()
	for {
		rwc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return http.ErrServerClosed
			}
			return err
		}
		c := newConn(s, rwc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = rwc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

// Close stops accepting, closes every connection and ends the contexts of
// requests in flight.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
		s.cancel()
	}
	for c := range s.conns {
		_ = c.rwc.Close()
	}
	return err
}

// started records a request's start and makes sure a sweep runs.
func (s *Server) started(c *conn) {
	now := time.Now().UnixNano()
	c.started.Store(now)
	s.lastStart.Store(now)
	if !s.sweeping.Load() && s.sweeping.CompareAndSwap(false, true) {
		go s.sweep()
	}
}

// sweep watches the connections whose handler has run for watchDelay,
// every watchDelay, until no request has started for sweepIdle and none
// is in flight.
func (s *Server) sweep() {
	t := time.NewTicker(watchDelay)
	defer t.Stop()
	for now := range t.C {
		busy := s.watchSlow(now.UnixNano())
		if busy || now.UnixNano()-s.lastStart.Load() < int64(sweepIdle) {
			continue
		}
		s.sweeping.Store(false)
		// A request that started before the flag fell is in flight and
		// seen here; one that starts after it starts a sweep itself.
		if !s.watchSlow(time.Now().UnixNano()) || !s.sweeping.CompareAndSwap(false, true) {
			return
		}
	}
}

// watchSlow watches every connection whose request started watchDelay or
// more before now, and reports whether any request is in flight.
func (s *Server) watchSlow(now int64) (busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		st := c.started.Load()
		if st == 0 {
			continue
		}
		busy = true
		if now-st >= int64(watchDelay) {
			c.r.watch()
		}
	}
	return busy
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// conn is one connection from the host.
type conn struct {
	srv  *Server
	rwc  net.Conn
	r    *connReader
	br   *bufio.Reader
	bw   *bufio.Writer
	addr string
	// started is the Unix nanosecond time the request in flight started,
	// 0 between requests.
	started atomic.Int64
}

func newConn(s *Server, rwc net.Conn) *conn {
	c := &conn{srv: s, rwc: rwc, addr: rwc.RemoteAddr().String()}
	c.r = &connReader{conn: rwc, remain: -1}
	c.r.cond = sync.NewCond(&c.r.mu)
	c.br = bufio.NewReaderSize(c.r, 4<<10)
	c.bw = bufio.NewWriterSize(rwc, 4<<10)
	return c
}

// badRequest is the answer to a request that cannot be parsed.
const badRequest = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 11\r\n\r\nbad request"

func (c *conn) serve() {
	defer func() {
		_ = c.rwc.Close()
		c.srv.forget(c)
	}()
	for {
		c.r.setLimit(maxHeaderBytes)
		req, err := http.ReadRequest(c.br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
				_, _ = io.WriteString(c.rwc, badRequest)
			}
			return
		}
		c.r.setLimit(-1)
		if !c.serveOne(req) {
			return
		}
	}
}

// serveOne runs the handler for req and reports whether the connection
// may carry another request.
func (c *conn) serveOne(req *http.Request) (keep bool) {
	ctx, cancel := context.WithCancelCause(c.srv.ctx)
	defer cancel(nil)
	req = req.WithContext(ctx)
	req.RemoteAddr = c.addr
	var body *bodyReader
	if req.Body == nil || req.Body == http.NoBody {
		c.r.begin(cancel, true)
	} else {
		body = &bodyReader{rc: req.Body, r: c.r}
		req.Body = body
		c.r.begin(cancel, false)
	}
	w := newResponse(c, req)
	w.body = body
	defer w.release()
	c.srv.started(c)
	panicked := c.run(w, req)
	c.started.Store(0)
	c.r.end()
	if panicked {
		// What was streamed goes out, cut short; nothing else does.
		_ = c.bw.Flush()
		return false
	}
	if err := w.finish(); err != nil {
		return false
	}
	if !w.bodyLeft && !drain(w.body) {
		w.bodyLeft = true
	}
	if w.bodyLeft {
		c.linger()
		return false
	}
	return !w.closeAfter && !req.Close && ctx.Err() == nil
}

// drain reads past what the handler left of a request body, up to
// maxDrain, and reports whether it reached the end; a nil body has none.
func drain(body *bodyReader) bool {
	if body == nil || body.eof {
		return true
	}
	n, err := io.CopyN(io.Discard, body, maxDrain+1)
	return n <= maxDrain && err == io.EOF
}

// linger ends a connection whose request body is still arriving after the
// answer: it stops writing, so the host sees the answer end, and reads
// past the rest of the body until the host closes or lingerTime passes,
// so the host's send is not cut off with an error before it has read the
// answer (a host that writes the whole body first would see only that).
func (c *conn) linger() {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.rwc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, c.rwc)
}

// run calls the handler and reports whether it panicked.
func (c *conn) run(w *response, req *http.Request) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			if v != http.ErrAbortHandler && c.srv.Logger != nil {
				c.srv.Logger.Error("handler panicked", "method", req.Method, "path", req.URL.Path, "panic", v, "stack", string(debug.Stack()))
			}
		}
	}()
	c.srv.Handler.ServeHTTP(w, req)
	return false
}

// bodyReader tells the connection reader when the handler has read the
// whole request body: from then on the connection is idle until the
// response is done, and may be watched.
type bodyReader struct {
	rc  io.ReadCloser
	r   *connReader
	eof bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
		b.r.bodyRead()
	}
	return n, err
}

func (b *bodyReader) Close() error { return b.rc.Close() }

// connReader is the connection as the request parser reads it. While a
// handler runs past watchDelay with its request body read, one read of a
// byte waits on the connection: the host closing it ends the request's
// context; a byte that arrives is kept for the next request.
type connReader struct {
	conn net.Conn
	mu   sync.Mutex
	cond *sync.Cond
	// remain bounds the bytes a request's head may take; -1 is no bound.
	remain int64

	active, bodyDone, wanted, watching, aborting bool
	cancel                                       context.CancelCauseFunc
	hasByte                                      bool
	byteBuf                                      [1]byte
}

func (r *connReader) setLimit(n int64) {
	r.mu.Lock()
	r.remain = n
	r.mu.Unlock()
}

func (r *connReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	if r.hasByte {
		p[0] = r.byteBuf[0]
		r.hasByte = false
		r.mu.Unlock()
		return 1, nil
	}
	if r.remain == 0 {
		r.mu.Unlock()
		return 0, errors.New("dataplane: request head too large")
	}
	if r.remain > 0 && int64(len(p)) > r.remain {
		p = p[:r.remain]
	}
	limited := r.remain > 0
	r.mu.Unlock()
	n, err := r.conn.Read(p)
	if limited {
		r.mu.Lock()
		r.remain -= int64(n)
		r.mu.Unlock()
	}
	return n, err
}

// begin marks a request in flight; bodyDone when it has no body.
func (r *connReader) begin(cancel context.CancelCauseFunc, bodyDone bool) {
	r.mu.Lock()
	r.active, r.bodyDone, r.wanted, r.cancel = true, bodyDone, false, cancel
	r.mu.Unlock()
}

// watch is called after watchDelay: the handler is still running.
func (r *connReader) watch() {
	r.mu.Lock()
	if r.active {
		r.wanted = true
		r.startLocked()
	}
	r.mu.Unlock()
}

func (r *connReader) bodyRead() {
	r.mu.Lock()
	r.bodyDone = true
	r.startLocked()
	r.mu.Unlock()
}

func (r *connReader) startLocked() {
	if r.watching || !r.active || !r.wanted || !r.bodyDone || r.hasByte {
		return
	}
	r.watching = true
	go r.background()
}

func (r *connReader) background() {
	n, err := r.conn.Read(r.byteBuf[:])
	r.mu.Lock()
	if n == 1 {
		r.hasByte = true
	}
	if err != nil && !r.aborting {
		r.cancel(ErrHostGone)
	}
	r.watching = false
	r.cond.Broadcast()
	r.mu.Unlock()
}

// end marks the handler done and stops a watch in progress.
func (r *connReader) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active = false
	if !r.watching {
		return
	}
	r.aborting = true
	_ = r.conn.SetReadDeadline(time.Unix(1, 0))
	for r.watching {
		r.cond.Wait()
	}
	r.aborting = false
	_ = r.conn.SetReadDeadline(time.Time{})
}
