package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/valyala/fasthttp"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// dataPlane is how HTTP reaches a running plugin: its private unix socket
// when the plugin accepted one, else the HandleHTTP gRPC stream.
type dataPlane struct {
	socketPath string
	token      string
	socket     *fasthttp.HostClient
}

func newSocketClient(path string) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr: "plugin",
		Dial: func(string) (net.Conn, error) {
			conn, err := net.DialTimeout("unix", path, time.Second)
			if err != nil {
				return nil, err
			}
			return &eofConn{Conn: conn}, nil
		},
		MaxConns: 1024,
		// A body sent whole of up to 64 KiB is read in one system call
		// rather than a 4 KiB buffer's worth at a time: at 15 kB, four
		// reads fewer per request. Each connection holds this buffer, so
		// it is not inlineBody's size.
		ReadBufferSize:      64<<10 + 4<<10,
		MaxIdleConnDuration: 30 * time.Second,
		// No ReadTimeout or WriteTimeout: each exchange has the plugin's
		// request_timeout until its head, then bodyTimeout for its body.
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
		// The path goes as the proxy sets it (protocol.PluginPath), in the
		// segments the host matched the route on. Normalized — encoded
		// slashes and dots decoded, dot segments resolved — it would reach
		// another route than the one whose auth and tenants the host
		// checked: /items/..%2Fadmin, matched as /items/{id}, would reach
		// /admin.
		DisablePathNormalizing: true,
		// A response body streams (the proxy asks for StreamBody) unless
		// its declared length is this small; without a limit fasthttp
		// reads a body of known length whole before handing it over.
		MaxResponseBodySize: inlineBody,
		// A plugin restart leaves dead idle connections; retry idempotent
		// requests once on a fresh one.
		MaxIdemponentCallAttempts: 2,
	}
}

// bodyTimeout bounds a response body's streaming once its head has
// arrived within the plugin's request_timeout.
const bodyTimeout = 5 * time.Minute

// inlineBody is the largest body the socket client reads whole: such a
// body is relayed like a host route's, with its length, and a plugin that
// fails to deliver it gets the caller a 503 rather than a cut-off body.
const inlineBody = protocol.InlineBody

// copyBuffers hold the buffer a small body is copied through: the client's
// body stream hides the reader's WriteTo, so io.Copy would allocate 32 KiB
// for every proxied request, and the collector would pay for it.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// eofConn remembers whether a read met the end of the connection.
// fasthttp's streamed chunked body reports a connection closed between two
// chunks as the end of the body; this tells a body cut short (the plugin
// crashed or its handler panicked) from one that ended.
type eofConn struct {
	net.Conn
	eof atomic.Bool
}

func (c *eofConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.eof.Store(true)
	}
	return n, err
}

// RemoteAddr is how a response leads back to its connection: fasthttp
// keeps the connection's remote address in the response.
func (c *eofConn) RemoteAddr() net.Addr { return connAddr{Addr: c.Conn.RemoteAddr(), conn: c} }

type connAddr struct {
	net.Addr
	conn *eofConn
}

// UnavailableError says a plugin cannot serve now and when to try again,
// or, when Down is set, that it is down until the host restarts.
type UnavailableError struct {
	Plugin     string
	RetryAfter time.Duration
	// Down says why the supervisor gave up on the plugin; no retry helps.
	Down string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("plugin %s is unavailable: %v", e.Plugin, e.Err)
}

func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// TimeoutError says a plugin did not answer a request within its
// request_timeout; the host gave up on it and closed the exchange, which
// ends the handler's context in the plugin.
type TimeoutError struct {
	Plugin  string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("plugin %s did not answer within %s", e.Plugin, e.Timeout)
}

// Proxy forwards the request in c to the route's plugin with the verified
// principal, and streams the plugin's response into c: its status and
// headers before Proxy returns, its body as fasthttp writes the response,
// cut off at the plugin's max_response_bytes.
func (s *Supervisor) Proxy(c *fiber.Ctx, r *Route, pathParams map[string]string, principal *pluginv1.Principal, requestID string) error {
	inst, ok := s.instance(r.Plugin)
	if !ok {
		// Matched just before plugins.hcl stopped declaring the plugin.
		return unavailable(r.Plugin, time.Now(), fmt.Errorf("%w: %s is no longer declared", ErrUnavailable, r.Plugin))
	}
	l, err := inst.acquire()
	if err != nil {
		return err
	}
	t0 := time.Now()
	defer func() { s.metrics.rpc.WithLabelValues(r.Plugin, "http").Observe(time.Since(t0).Seconds()) }()
	// Until its response is done, streamed body included, the request's
	// dataset reads see its caller's tenants only.
	endCall := s.calls.Begin(requestID, principal)
	release := func() {
		endCall()
		l.release()
	}
	// A streamed body is still the process's work after Proxy returns.
	limit := bodyLimit{plugin: r.Plugin, max: l.decl.MaxResponseBytes, log: inst.log, release: release}
	timeout := l.decl.RequestTimeout
	if l.plane.socket != nil {
		err = proxySocket(c, l.plane, r, principal, requestID, timeout, limit)
	} else {
		err = proxyStream(c, l.rpc, r, pathParams, principal, requestID, timeout, limit)
	}
	if err != nil || !c.Response().IsBodyStream() {
		release()
	}
	if err == nil {
		return nil
	}
	s.metrics.rpcErrors.WithLabelValues(r.Plugin, "http").Inc()
	var refused *fiber.Error
	var timedOut *TimeoutError
	switch {
	case errors.As(err, &timedOut):
		s.metrics.timeouts.WithLabelValues(r.Plugin).Inc()
		return err
	case errors.As(err, &refused):
		return err
	}
	return unavailable(r.Plugin, time.Now().Add(time.Second), err)
}

func unavailable(plugin string, retryAt time.Time, err error) error {
	wait := time.Until(retryAt).Round(time.Second)
	if wait < time.Second {
		wait = time.Second
	}
	return &UnavailableError{Plugin: plugin, RetryAfter: wait, Err: err}
}

// isTimeout reports whether err is a deadline the socket client met.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func proxySocket(c *fiber.Ctx, plane dataPlane, r *Route, principal *pluginv1.Principal, requestID string, timeout time.Duration, limit bodyLimit) error {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	c.Request().CopyTo(req)
	req.URI().SetPath(protocol.PluginPath(c.Path()))
	for _, h := range protocol.StrippedHeaders {
		req.Header.Del(h)
	}
	if err := protocol.SetSocketHeaders(req.Header.Set, plane.token, requestID, r.Pattern, principal); err != nil {
		return err
	}
	req.SetHost("plugin")
	limit = limit.forRequest(c, requestID)
	resp := fasthttp.AcquireResponse()
	resp.StreamBody = true
	// A timeout closes the connection, which ends the handler's context.
	if err := plane.socket.DoTimeout(req, resp, timeout); err != nil {
		fasthttp.ReleaseResponse(resp)
		if isTimeout(err) {
			return &TimeoutError{Plugin: r.Plugin, Timeout: timeout}
		}
		return err
	}
	release := func(finished bool) {
		if !finished {
			// The rest of the body is still on the connection.
			resp.SetConnectionClose()
		}
		_ = resp.CloseBodyStream()
		fasthttp.ReleaseResponse(resp)
	}
	declared := int64(resp.Header.ContentLength())
	if err := limit.check(declared); err != nil {
		release(false)
		return err
	}
	out := c.Response()
	src := resp.BodyStream()
	// No body (a 204, say), or one small enough to have been read already.
	whole := src == nil
	if !whole && declared >= 0 && declared <= inlineBody {
		// Taken before the head is: a plugin that fails to deliver it gets
		// the caller a plain 503.
		buf := copyBuffers.Get().(*[]byte)
		_, err := io.CopyBuffer(out.BodyWriter(), src, *buf)
		copyBuffers.Put(buf)
		if err != nil {
			release(false)
			return err
		}
		whole = true
	}
	out.SetStatusCode(resp.StatusCode())
	// Only the Content-Type the plugin sent: fasthttp reports its default
	// for an answer without one, which would give a 204 a Content-Type.
	resp.Header.SetNoDefaultContentType(true)
	for k, v := range resp.Header.All() {
		switch string(k) {
		case fiber.HeaderContentLength, fiber.HeaderConnection, fiber.HeaderTransferEncoding, fiber.HeaderServer, fiber.HeaderDate:
		default:
			out.Header.AddBytesKV(k, v)
		}
	}
	if whole {
		release(true)
		return nil
	}
	size := -1
	if declared >= 0 {
		size = int(declared)
	}
	body := limit.body(src, release)
	body.declared = declared
	if addr, ok := resp.RemoteAddr().(connAddr); ok {
		body.cutShort = addr.conn.eof.Load
		// The head came within the request timeout; a streamed body has
		// its own bound.
		_ = addr.conn.SetReadDeadline(time.Now().Add(bodyTimeout))
	}
	out.SetBodyStream(body, size)
	return nil
}

// proxyStream carries the exchange over the HandleHTTP stream, as the
// protocol's stream client functions do; the request is sent from its own
// goroutine while the response is read. The exchange ends when fasthttp has written the response body; until
// then the request body the sender reads from is fasthttp's still.
func proxyStream(c *fiber.Ctx, rpc *protocol.Client, r *Route, pathParams map[string]string, principal *pluginv1.Principal, requestID string, timeout time.Duration, limit bodyLimit) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), timeout+bodyTimeout)
	// Cancelling the stream when the head is late ends the handler's
	// context in the plugin.
	var late atomic.Bool
	headTimer := time.AfterFunc(timeout, func() {
		late.Store(true)
		cancel()
	})
	stream, err := rpc.HandleHTTP(ctx)
	if err != nil {
		headTimer.Stop()
		cancel()
		if late.Load() {
			return &TimeoutError{Plugin: r.Plugin, Timeout: timeout}
		}
		return err
	}
	headers := map[string]*pluginv1.HeaderValues{}
	for k, v := range c.Request().Header.All() {
		key := string(k)
		if h, ok := headers[key]; ok {
			h.Values = append(h.Values, string(v))
			continue
		}
		headers[key] = &pluginv1.HeaderValues{Values: []string{string(v)}}
	}
	for _, h := range protocol.StrippedHeaders {
		delete(headers, h)
	}
	head := &pluginv1.HTTPRequestHead{
		Method: c.Method(), Path: protocol.PluginPath(c.Path()), RawQuery: string(c.Request().URI().QueryString()),
		Headers: headers, Principal: principal, RemoteAddr: c.Context().RemoteAddr().String(),
		RequestId: requestID, Route: r.Pattern, PathParams: pathParams,
	}
	body := c.Body()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		// A failed send ends the sending and nothing else: the stream has
		// ended, and the receiving side learns how — with the plugin's
		// whole answer when it answered without reading the rest of the
		// body, else with the error.
		_ = protocol.SendRequest(stream, head, body)
	}()
	limit = limit.forRequest(c, requestID)
	// Ending the exchange stops a send the plugin no longer reads.
	end := func(bool) {
		cancel()
		<-sent
	}
	rh, err := protocol.RecvResponseHead(stream)
	if !headTimer.Stop() {
		end(false)
		return &TimeoutError{Plugin: r.Plugin, Timeout: timeout}
	}
	if err != nil {
		end(false)
		return err
	}
	declared := int64(-1)
	if v := rh.Headers[fiber.HeaderContentLength]; v != nil && len(v.Values) == 1 {
		if n, err := strconv.ParseInt(v.Values[0], 10, 64); err == nil && n >= 0 {
			declared = n
		}
	}
	if err := limit.check(declared); err != nil {
		end(false)
		return err
	}
	out := c.Response()
	out.SetStatusCode(int(rh.Status))
	for k, v := range rh.Headers {
		if k == fiber.HeaderContentLength {
			continue
		}
		for _, val := range v.Values {
			out.Header.Add(k, val)
		}
	}
	out.SetBodyStream(limit.body(protocol.NewResponseBody(stream), end), -1)
	return nil
}

// errBodyCapped ends a response whose body went past max_response_bytes.
var errBodyCapped = errors.New("plugin response body exceeds max_response_bytes")

// bodyLimit is the cap on one plugin's response bodies, and the log (with
// the request id) of what ended one early.
type bodyLimit struct {
	plugin string
	max    int64
	log    hclog.Logger
	// abort drops the caller's connection. A body cut off must not look
	// whole, and a read error alone does not show: fasthttp's compression
	// ends its stream as if the body had ended. Dropping the connection
	// is what net/http's ErrAbortHandler does.
	abort     func()
	requestID string
	// release ends the exchange's count as work in flight on its process.
	release func()
}

// forRequest is the limit of one exchange: it logs with the request id
// and aborts c's connection.
func (l bodyLimit) forRequest(c *fiber.Ctx, requestID string) bodyLimit {
	l.requestID = requestID
	conn := c.Context().Conn()
	l.abort = func() { _ = conn.Close() }
	return l
}

// logError logs what ended an exchange, with its request id.
func (l bodyLimit) logError(msg string, args ...any) {
	l.log.Error(msg, append([]any{"request_id", l.requestID}, args...)...)
}

// check refuses, before any byte is sent, a body the plugin declared
// larger than the cap.
func (l bodyLimit) check(declared int64) error {
	if declared <= l.max {
		return nil
	}
	l.logError("plugin response larger than max_response_bytes; answered 502", "content_length", declared, "max_response_bytes", l.max)
	return fiber.NewError(fiber.StatusBadGateway, fmt.Sprintf("plugin %s answered with a body larger than the host passes on", l.plugin))
}

// body wraps a plugin's response body for fasthttp's SetBodyStream; done
// is called once the body has been written or abandoned, and is told
// whether the plugin's body was read to its end.
func (l bodyLimit) body(src io.Reader, done func(finished bool)) *pluginBody {
	return &pluginBody{src: src, limit: l, left: l.max, declared: -1, done: done}
}

// errBodyCutShort is a body whose source ended before the body did.
var errBodyCutShort = errors.New("the plugin's response ended before its body did")

// pluginBody is a plugin's response body on its way to the caller.
type pluginBody struct {
	src   io.Reader
	limit bodyLimit
	left  int64
	// declared is the body's declared length, -1 when unknown.
	declared int64
	// cutShort, when set, reports at the source's io.EOF whether the body
	// was cut short all the same.
	cutShort func() bool
	eof      bool
	readErr  error
	closed   bool
	done     func(finished bool)
}

func (b *pluginBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, b.atCap()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.src.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.short() {
		err = errBodyCutShort
	}
	b.note(err)
	return n, err
}

// short reports whether a body whose source says it ended is whole.
func (b *pluginBody) short() bool {
	if b.declared >= 0 {
		return b.limit.max-b.left != b.declared
	}
	return b.cutShort != nil && b.cutShort()
}

// atCap reads one byte past the cap: a body that ends exactly there is
// whole, one that goes on is cut off.
func (b *pluginBody) atCap() error {
	var one [1]byte
	for {
		n, err := b.src.Read(one[:])
		if n > 0 {
			b.readErr = errBodyCapped
			b.limit.logError("plugin response body exceeds max_response_bytes; response cut off", "max_response_bytes", b.limit.max)
			b.limit.abort()
			return errBodyCapped
		}
		if err == io.EOF && b.short() {
			err = errBodyCutShort
		}
		if err != nil {
			b.note(err)
			return err
		}
	}
}

func (b *pluginBody) note(err error) {
	switch {
	case err == nil:
	case err == io.EOF:
		b.eof = true
	case b.readErr == nil:
		b.readErr = err
		b.limit.logError("plugin response body broke off; response cut off", "error", err)
		b.limit.abort()
	}
}

// CloseWithError is how fasthttp ends a body stream, with the error that
// stopped it writing, if any. (pluginBody is no io.Closer: fasthttp would
// call both.)
func (b *pluginBody) CloseWithError(err error) error {
	if b.closed {
		return nil
	}
	b.closed = true
	if err != nil && b.readErr == nil {
		b.limit.log.Info("caller went away before the plugin's response ended", "request_id", b.limit.requestID, "error", err)
	}
	b.done(b.eof)
	if b.limit.release != nil {
		b.limit.release()
	}
	return nil
}
